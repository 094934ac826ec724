//! Deterministic mutation tests of the engine's network ingress (the stable-toolchain stand-ins
//! for `fuzz/tunnel_decapsulate` and `fuzz/tunnel_session`): every datagram of a real handshake
//! and data exchange, mutated thousands of times, never panics `decapsulate`, and a mutated
//! datagram never delivers a packet to the TUN (WireGuard authenticates every byte); mutated
//! inner packets inside a session are delivered only from the peer's AllowedIPs.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::testing::mutate;

use super::engine::well_formed;
use super::tests::{ip_packet, pair, sa, Net, CLIENT_UDP, POP_UDP};
use super::*;

#[test]
fn mutated_datagrams_never_panic_and_never_deliver() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"up"));
    net.run();
    net.send(1, &ip_packet("10.2.0.2", "10.1.0.2", b"down"));
    net.run();
    assert_eq!(net.delivered.iter().map(Vec::len).sum::<usize>(), 2);
    let log = net.log.clone();
    // Handshake initiation, response, and data both ways.
    assert!(
        log.len() >= 3,
        "exchange too short: {} datagrams",
        log.len()
    );

    let mut rng = StdRng::seed_from_u64(0x5350_f022);
    let mut dst = vec![0u8; 4096];
    let mut tried = 0;
    for (from, to, original) in &log {
        let eng = if *to == sa(POP_UDP) {
            &p.pop
        } else {
            &p.client
        };
        for _ in 0..2000 {
            let mut d = original.clone();
            mutate(&mut rng, &mut d);
            if d == *original {
                continue;
            }
            tried += 1;
            if let Inbound::Tunnel(pkt) = eng.decapsulate(*from, &d, &mut dst) {
                panic!("mutated datagram delivered {} bytes: {d:02x?}", pkt.len());
            }
        }
    }
    assert!(tried > 1000 * log.len());
    // The tunnel still works after the storm.
    let before = net.delivered[1].len();
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"still up"));
    net.run();
    assert_eq!(net.delivered[1].len(), before + 1);
}

#[test]
fn random_bytes_from_strangers_are_dropped() {
    let p = pair();
    let mut rng = StdRng::seed_from_u64(7);
    let mut dst = vec![0u8; 4096];
    for _ in 0..20_000 {
        let len = rng.gen_range(0..300);
        let mut d: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
        if let Some(b) = d.first_mut() {
            // Half of them claim a valid WireGuard message type (1..=4).
            if rng.gen_bool(0.5) {
                *b = rng.gen_range(1..=4);
            }
        }
        let r = p.pop.decapsulate(sa("203.0.113.9:1234"), &d, &mut dst);
        assert!(!matches!(r, Inbound::Tunnel(_)));
    }
}

#[test]
fn mutated_inner_packets_are_delivered_only_from_allowed_sources() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"handshake"));
    net.run();
    let seeds = [
        ip_packet("10.1.0.2", "10.2.0.2", b"v4 payload"),
        ip_packet("fd00:1::2", "fd00:2::2", b"v6 payload"),
    ];
    let client = p.pop.route("10.1.0.2".parse().unwrap());
    assert!(client.is_some());
    let mut rng = StdRng::seed_from_u64(0x1a4e_5e55);
    let mut sent = 0;
    for seed in &seeds {
        for _ in 0..3000 {
            let mut pkt = seed.clone();
            mutate(&mut rng, &mut pkt);
            let before = net.delivered[1].len();
            net.send(0, &pkt);
            net.run();
            sent += 1;
            for d in &net.delivered[1][before..] {
                let src = source(d).expect("delivered packets parse");
                assert!(well_formed(d), "stub delivered: {d:02x?} from {pkt:02x?}");
                assert_eq!(p.pop.route(src), client, "delivered from {src}: {d:02x?}");
                assert!(d.len() <= pkt.len().div_ceil(16) * 16);
            }
        }
    }
    let delivered = net.delivered[1].len();
    assert!(
        sent == 6000 && delivered > 1000,
        "{delivered} of {sent} delivered"
    );
}

/// The source address of an IPv4 or IPv6 packet.
fn source(p: &[u8]) -> Option<std::net::IpAddr> {
    match p.first()? >> 4 {
        4 => Some(<[u8; 4]>::try_from(p.get(12..16)?).ok()?.into()),
        6 => Some(<[u8; 16]>::try_from(p.get(8..24)?).ok()?.into()),
        _ => None,
    }
}

/// Regression (found by the mutation test above): boringtun cuts a decrypted packet to its IP
/// length field even below the header's size, and checks the source on the bytes past the cut;
/// such stubs are dropped and counted, not written to the TUN.
#[test]
fn inner_packets_shorter_than_their_header_are_dropped() {
    let p = pair();
    let mut net = Net::new(vec![(sa(CLIENT_UDP), &p.client), (sa(POP_UDP), &p.pop)]);
    let good = ip_packet("10.1.0.2", "10.2.0.2", b"payload");
    net.send(0, &good);
    net.run();
    assert_eq!(net.delivered[1], vec![good.clone()]);
    let invalid = |e: &Engine| {
        e.counters
            .dropped_invalid
            .load(std::sync::atomic::Ordering::Relaxed)
    };
    let before = invalid(&p.pop);
    let mut stubs = Vec::new();
    // IPv4 total lengths 0, 6 and 19; 20 with IHL 6 (24-byte header).
    for (len, ihl) in [(0u16, 5u8), (6, 5), (19, 5), (20, 6)] {
        let mut s = good.clone();
        s[0] = 0x40 | ihl;
        s[2..4].copy_from_slice(&len.to_be_bytes());
        stubs.push(s);
    }
    for s in &stubs {
        net.send(0, s);
        net.run();
    }
    assert_eq!(net.delivered[1], vec![good], "a stub reached the TUN");
    assert_eq!(invalid(&p.pop), before + stubs.len() as u64);
    assert!(well_formed(&ip_packet("fd00:1::2", "fd00:2::2", b"")));
}
