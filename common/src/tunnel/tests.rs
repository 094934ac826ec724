//! In-memory tests of the engine: two or three engines joined by a simulated UDP network.

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};

use boringtun::x25519::{PublicKey, StaticSecret};

use super::*;

pub(super) fn key(seed: u8) -> ([u8; 32], [u8; 32]) {
    let secret = [seed; 32];
    let public = *PublicKey::from(&StaticSecret::from(secret)).as_bytes();
    (secret, public)
}

pub(super) fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

pub(super) fn spec(public: [u8; 32], endpoint: Option<&str>, ips: &[&str]) -> PeerSpec {
    PeerSpec {
        public_key: public,
        preshared_key: None,
        endpoint: endpoint.map(sa),
        allowed_ips: ips.iter().map(|s| s.parse().unwrap()).collect(),
        persistent_keepalive: None,
    }
}

/// A UDP packet `src → dst` with `payload`, as an IP packet would come out of a TUN.
pub(super) fn ip_packet(src: &str, dst: &str, payload: &[u8]) -> Vec<u8> {
    let (src, dst): (IpAddr, IpAddr) = (src.parse().unwrap(), dst.parse().unwrap());
    let b = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            etherparse::PacketBuilder::ipv4(s.octets(), d.octets(), 64)
        }
        (IpAddr::V6(s), IpAddr::V6(d)) => {
            etherparse::PacketBuilder::ipv6(s.octets(), d.octets(), 64)
        }
        _ => panic!("mixed families"),
    }
    .udp(1000, 2000);
    let mut v = Vec::new();
    b.write(&mut v, payload).unwrap();
    v
}

/// Nodes with engines at UDP addresses; runs datagrams until the network is quiet.
pub(super) struct Net<'a> {
    nodes: Vec<(SocketAddr, &'a Engine)>,
    wire: VecDeque<(SocketAddr, SocketAddr, Vec<u8>)>,
    /// Inner packets delivered to each node's TUN.
    pub(super) delivered: Vec<Vec<Vec<u8>>>,
    /// Every datagram that crossed the wire, in order: `(from, to, bytes)`.
    pub(super) log: Vec<(SocketAddr, SocketAddr, Vec<u8>)>,
}

impl<'a> Net<'a> {
    pub(super) fn new(nodes: Vec<(SocketAddr, &'a Engine)>) -> Self {
        let n = nodes.len();
        Net {
            nodes,
            wire: VecDeque::new(),
            delivered: vec![Vec::new(); n],
            log: Vec::new(),
        }
    }

    /// Node `i` reads `packet` from its TUN.
    pub(super) fn send(&mut self, i: usize, packet: &[u8]) {
        let mut dst = vec![0u8; packet.len() + 200];
        let (me, eng) = self.nodes[i];
        if let Outbound::Send { to, datagram } = eng.encapsulate(packet, &mut dst) {
            self.wire.push_back((me, to, datagram.to_vec()));
        }
    }

    /// Delivers everything on the wire; a datagram may be re-sourced with `rewrite`.
    pub(super) fn run(&mut self) {
        let mut guard = 0;
        while let Some((from, to, d)) = self.wire.pop_front() {
            guard += 1;
            assert!(guard < 1000, "network does not settle");
            self.log.push((from, to, d.clone()));
            let Some(i) = self.nodes.iter().position(|(a, _)| *a == to) else {
                continue;
            };
            let (me, eng) = self.nodes[i];
            let mut dst = vec![0u8; 2048];
            match eng.decapsulate(from, &d, &mut dst) {
                Inbound::Tunnel(p) => self.delivered[i].push(p.to_vec()),
                Inbound::Network {
                    to,
                    datagram,
                    flush,
                } => {
                    self.wire.push_back((me, to, datagram.to_vec()));
                    if let Some(peer) = flush {
                        let mut buf = vec![0u8; 2048];
                        while let Some((to, d)) = eng.flush(peer, &mut buf) {
                            self.wire.push_back((me, to, d.to_vec()));
                        }
                    }
                }
                Inbound::Nothing => {}
            }
        }
    }
}

pub(super) struct Pair {
    pub(super) client: Engine,
    pub(super) pop: Engine,
}

pub(super) const CLIENT_UDP: &str = "10.99.0.1:40000";
pub(super) const POP_UDP: &str = "10.99.0.2:51820";

pub(super) fn pair() -> Pair {
    let (cs, cp) = key(1);
    let (ps, pp) = key(2);
    let client = Engine::new(
        cs,
        vec![spec(pp, Some(POP_UDP), &["10.2.0.0/24", "fd00:2::/64"])],
    )
    .unwrap();
    let pop = Engine::new(ps, vec![spec(cp, None, &["10.1.0.0/24", "fd00:1::/64"])]).unwrap();
    Pair { client, pop }
}

#[test]
fn handshake_then_data_both_ways_v4_and_v6() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    let up = ip_packet("10.1.0.2", "10.2.0.2", b"hello srv");
    net.send(0, &up);
    net.run();
    assert_eq!(
        net.delivered[1],
        vec![up.clone()],
        "queued packet arrives after handshake"
    );
    let down = ip_packet("10.2.0.2", "10.1.0.2", b"hello pc");
    net.send(1, &down);
    let up6 = ip_packet("fd00:1::2", "fd00:2::2", b"six");
    net.send(0, &up6);
    net.run();
    assert_eq!(net.delivered[0], vec![down]);
    assert_eq!(net.delivered[1], vec![up, up6]);
    let c = p.client.peers()[0].stats();
    let s = p.pop.peers()[0].stats();
    assert_eq!((c.tx_packets, c.rx_packets), (2, 1));
    assert_eq!((s.tx_packets, s.rx_packets), (1, 2));
    assert!(c.tx_bytes > 0 && c.tx_bytes == s.rx_bytes, "{c:?} {s:?}");
    assert_eq!(
        p.pop.peers()[0].endpoint(),
        Some(sa(CLIENT_UDP)),
        "endpoint learnt"
    );
    let (ago, _) = p.client.handshake_info(0);
    assert!(ago.is_some(), "handshake recorded");
}

#[test]
fn spoofed_inner_source_is_dropped_and_counted() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"ok"));
    net.run();
    net.send(0, &ip_packet("10.7.7.7", "10.2.0.2", b"spoofed"));
    net.send(0, &ip_packet("fd00:9::1", "fd00:2::2", b"spoofed6"));
    net.run();
    assert_eq!(
        net.delivered[1].len(),
        1,
        "only the legitimate packet passes"
    );
    assert_eq!(p.pop.peers()[0].stats().dropped_source_not_allowed, 2);
}

#[test]
fn any_authenticated_datagram_moves_the_endpoint() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"1"));
    net.run();
    // The client's NAT mapping changes: the next datagram comes from another port.
    let moved = sa("10.99.0.1:40001");
    net.nodes[0].0 = moved;
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"2"));
    net.run();
    assert_eq!(p.pop.peers()[0].endpoint(), Some(moved));
    assert_eq!(p.pop.peers()[0].stats().endpoint_changes, 1);
    net.send(1, &ip_packet("10.2.0.2", "10.1.0.2", b"back"));
    net.run();
    assert_eq!(net.delivered[0].len(), 1, "reply reaches the new address");
}

#[test]
fn a_replayed_datagram_neither_delivers_nor_moves_the_endpoint() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"1"));
    net.run();
    let mut dst = vec![0u8; 256];
    let pkt = ip_packet("10.1.0.2", "10.2.0.2", b"2");
    let Outbound::Send { datagram, .. } = p.client.encapsulate(&pkt, &mut dst) else {
        panic!("no data datagram");
    };
    let datagram = datagram.to_vec();
    let mut out = vec![0u8; 256];
    assert!(matches!(
        p.pop.decapsulate(sa(CLIENT_UDP), &datagram, &mut out),
        Inbound::Tunnel(_)
    ));
    let attacker = sa("10.99.0.66:666");
    assert!(matches!(
        p.pop.decapsulate(attacker, &datagram, &mut out),
        Inbound::Nothing
    ));
    assert_eq!(p.pop.peers()[0].endpoint(), Some(sa(CLIENT_UDP)));
    assert_eq!(p.pop.peers()[0].stats().dropped_decrypt, 1);
}

#[test]
fn pop_picks_the_peer_by_longest_prefix_and_drops_unroutable() {
    let (ps, pp) = key(2);
    let (as_, ap) = key(3);
    let (bs, bp) = key(4);
    let pop = Engine::new(
        ps,
        vec![
            spec(ap, None, &["10.1.0.0/16"]),
            spec(bp, None, &["10.1.5.0/24"]),
        ],
    )
    .unwrap();
    let a = Engine::new(as_, vec![spec(pp, Some(POP_UDP), &["0.0.0.0/0"])]).unwrap();
    let b = Engine::new(bs, vec![spec(pp, Some(POP_UDP), &["0.0.0.0/0"])]).unwrap();
    let (a_udp, b_udp) = (sa("10.99.0.10:1111"), sa("10.99.0.11:2222"));
    let mut net = Net::new(vec![(a_udp, &a), (b_udp, &b), (sa(POP_UDP), &pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"from a"));
    net.send(1, &ip_packet("10.1.5.2", "10.2.0.2", b"from b"));
    net.run();
    assert_eq!(net.delivered[2].len(), 2);
    net.send(2, &ip_packet("10.2.0.2", "10.1.5.9", b"to b"));
    net.send(2, &ip_packet("10.2.0.2", "10.1.9.9", b"to a"));
    net.send(2, &ip_packet("10.2.0.2", "192.0.2.1", b"nowhere"));
    net.run();
    assert_eq!(net.delivered[0].len(), 1);
    assert_eq!(net.delivered[1].len(), 1);
    assert_eq!(
        pop.counters
            .dropped_no_route
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    // b may not use a's addresses.
    net.send(1, &ip_packet("10.1.0.2", "10.2.0.2", b"b as a"));
    net.run();
    assert_eq!(pop.peers()[1].stats().dropped_source_not_allowed, 1);
}

#[test]
fn unknown_initiator_is_dropped() {
    let p = pair();
    let (ss, _) = key(9);
    let (_, pp) = key(2);
    let stranger = Engine::new(ss, vec![spec(pp, Some(POP_UDP), &["0.0.0.0/0"])]).unwrap();
    let mut net = Net::new(vec![(sa("10.99.0.9:9"), &stranger), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"x"));
    net.run();
    assert!(net.delivered[1].is_empty());
    let c = &p.pop.counters;
    assert_eq!(
        c.dropped_unknown_peer
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn a_handshake_flood_gets_cookie_replies() {
    let p = pair();
    let mut dst = vec![0u8; 256];
    let pkt = ip_packet("10.1.0.2", "10.2.0.2", b"x");
    let Outbound::Send { datagram, .. } = p.client.encapsulate(&pkt, &mut dst) else {
        panic!("no handshake initiation");
    };
    let init = datagram.to_vec();
    let mut out = vec![0u8; 256];
    let mut cookies = 0;
    for _ in 0..300 {
        if let Inbound::Network {
            datagram,
            flush: None,
            ..
        } = p.pop.decapsulate(sa(CLIENT_UDP), &init, &mut out)
        {
            assert_eq!(datagram[0], 3, "cookie reply message type");
            cookies += 1;
        }
    }
    assert!(cookies > 0, "no cookie replies under load");
    assert_eq!(
        p.pop
            .counters
            .cookie_replies
            .load(std::sync::atomic::Ordering::Relaxed),
        cookies
    );
}

#[test]
fn no_endpoint_yet_is_counted() {
    let p = pair();
    let mut dst = vec![0u8; 256];
    let out = p
        .pop
        .encapsulate(&ip_packet("10.2.0.2", "10.1.0.2", b"x"), &mut dst);
    assert!(matches!(out, Outbound::Nothing));
    let c = &p.pop.counters;
    assert_eq!(
        c.dropped_no_endpoint
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
}

#[test]
fn snapshot_reports_peers_and_keys() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"x"));
    net.run();
    let info = InterfaceInfo {
        interface: "pop0".into(),
        listen_port: 51820,
        fwmark: None,
    };
    let m = p.pop.snapshot(&info, 1_000_000);
    assert_eq!(m.interface, "pop0");
    assert_eq!(m.peers.len(), 1);
    let peer = &m.peers[0];
    assert_eq!(peer.endpoint.as_deref(), Some(CLIENT_UDP));
    assert_eq!(peer.allowed_ips, vec!["10.1.0.0/24", "fd00:1::/64"]);
    assert!(peer.latest_handshake_unix.unwrap() <= 1_000_000);
    assert!(peer.rx_bytes > 0);
    assert_eq!(m.schema_version, SHOW_SCHEMA_VERSION);
    let json = serde_json::to_string(&m).unwrap();
    let back: InterfaceMetrics = serde_json::from_str(&json).unwrap();
    assert_eq!(back, m);
    let doc = include_str!("../../../docs/show-json.md");
    assert!(doc.contains(&format!("schema version {SHOW_SCHEMA_VERSION}")));
    let undocumented = crate::testing::undocumented_keys(&serde_json::to_value(&m).unwrap(), doc);
    assert!(
        undocumented.is_empty(),
        "not in docs/show-json.md: {undocumented:?}"
    );
    let text = m.render();
    assert!(text.contains("interface: pop0") && text.contains("endpoint: 10.99.0.1:40000"));
}

#[test]
fn duplicate_peers_are_rejected() {
    let (s, _) = key(1);
    let (_, pp) = key(2);
    let e = Engine::new(s, vec![spec(pp, None, &[]), spec(pp, None, &[])]);
    assert!(matches!(e, Err(EngineError::DuplicatePeer(_))));
}
