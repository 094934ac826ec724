//! In-memory tests of a reload of the engine's peers (`Engine::apply`): untouched peers keep
//! their sessions, removed ones stop, added ones start, changed AllowedIPs route at once.

use std::sync::atomic::Ordering::Relaxed;

use super::tests::{ip_packet, key, sa, spec, Net, POP_UDP};
use super::*;

/// Handshake messages (type 1) among the datagrams the network carried.
fn initiations(net: &Net) -> usize {
    net.log.iter().filter(|(_, _, d)| d[0] == 1).count()
}

#[test]
fn a_reload_keeps_untouched_sessions_stops_removed_peers_and_starts_added_ones() {
    let (ps, pp) = key(2);
    let (as_, ap) = key(3);
    let (bs, bp) = key(4);
    let (cs, cp) = key(5);
    let a_spec = spec(ap, None, &["10.1.0.0/24"]);
    let b_spec = spec(bp, None, &["10.3.0.0/24"]);
    let old = vec![a_spec.clone(), b_spec];
    let pop = Engine::new(ps, old.clone()).unwrap();
    let to_pop = |s| Engine::new(s, vec![spec(pp, Some(POP_UDP), &["0.0.0.0/0"])]).unwrap();
    let (a, b, c) = (to_pop(as_), to_pop(bs), to_pop(cs));
    let (a_udp, b_udp, c_udp) = (sa("10.99.0.10:1"), sa("10.99.0.11:2"), sa("10.99.0.12:3"));
    let mut net = Net::new(vec![
        (a_udp, &a),
        (b_udp, &b),
        (sa(POP_UDP), &pop),
        (c_udp, &c),
    ]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"a1"));
    net.send(1, &ip_packet("10.3.0.2", "10.2.0.2", b"b1"));
    net.run();
    assert_eq!(net.delivered[2].len(), 2);
    // a may not send from 10.5.0.0/24 yet.
    net.send(0, &ip_packet("10.5.0.2", "10.2.0.2", b"a spoof"));
    net.run();
    assert_eq!(pop.peers()[0].stats().dropped_source_not_allowed, 1);
    let handshakes_before = initiations(&net);
    assert_eq!(pop.peers()[0].stats().handshakes, 1);

    // The new file: b removed, c added, a given 10.5.0.0/24 too.
    let new = vec![
        spec(cp, None, &["10.4.0.0/24"]),
        spec(ap, None, &["10.1.0.0/24", "10.5.0.0/24"]),
    ];
    let diff = diff_peers(&old, &new).unwrap();
    let predicted = pop.slot_allowed_ips_after(&diff);
    pop.apply(&diff, &new).unwrap();
    assert_eq!(pop.slot_allowed_ips(), predicted);
    let peers = pop.peers();
    assert_eq!(peers.len(), 2);
    assert_eq!((peers[0].index, peers[1].index), (0, 2), "slots are kept");
    assert_eq!(
        pop.slot_allowed_ips()[1],
        Vec::<ipnet::IpNet>::new(),
        "b's slot is empty"
    );

    // a keeps its session: its traffic, from the new prefix too, flows without a handshake.
    net.send(0, &ip_packet("10.5.0.2", "10.2.0.2", b"a2"));
    net.send(2, &ip_packet("10.2.0.2", "10.5.0.9", b"to a"));
    net.run();
    assert_eq!(initiations(&net), handshakes_before, "a re-handshook");
    assert_eq!(net.delivered[2].len(), 3);
    assert_eq!(net.delivered[0].len(), 1);
    assert_eq!(pop.peers()[0].stats().handshakes, 1);
    assert_eq!(pop.peers()[0].stats().rx_packets, 2);

    // b is gone: its data is dropped, nothing routes to it.
    let unknown = pop.counters.dropped_unknown_peer.load(Relaxed);
    net.send(1, &ip_packet("10.3.0.2", "10.2.0.2", b"b2"));
    net.run();
    assert_eq!(net.delivered[2].len(), 3);
    assert!(pop.counters.dropped_unknown_peer.load(Relaxed) > unknown);
    net.send(2, &ip_packet("10.2.0.2", "10.3.0.2", b"to b"));
    net.run();
    assert_eq!(pop.counters.dropped_no_route.load(Relaxed), 1);

    // c starts working.
    net.send(3, &ip_packet("10.4.0.2", "10.2.0.2", b"c1"));
    net.run();
    assert_eq!(net.delivered[2].len(), 4);
    assert_eq!(pop.peers()[1].stats().handshakes, 1);
}

#[test]
fn a_changed_keepalive_starts_a_new_session_and_keeps_the_counters() {
    let (ps, pp) = key(2);
    let (as_, ap) = key(3);
    let old = vec![spec(ap, None, &["10.1.0.0/24"])];
    let pop = Engine::new(ps, old.clone()).unwrap();
    let a = Engine::new(as_, vec![spec(pp, Some(POP_UDP), &["0.0.0.0/0"])]).unwrap();
    let a_udp = sa("10.99.0.10:1");
    let mut net = Net::new(vec![(a_udp, &a), (sa(POP_UDP), &pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"a1"));
    net.run();
    let mut changed = old[0].clone();
    changed.persistent_keepalive = Some(25);
    let new = vec![changed];
    pop.apply(&diff_peers(&old, &new).unwrap(), &new).unwrap();
    // The POP's new session knows no index of a's: a's next data is dropped, and the POP's
    // reply starts a handshake to the endpoint it learnt.
    net.send(1, &ip_packet("10.2.0.2", "10.1.0.2", b"to a"));
    net.run();
    assert_eq!(
        net.delivered[0].len(),
        1,
        "the reply arrives after a new handshake"
    );
    let st = pop.peers()[0].stats();
    assert_eq!(st.handshakes, 2);
    assert!(st.rx_bytes > 0 && st.tx_bytes > 0, "{st:?}");
    assert_eq!(pop.peers()[0].spec().persistent_keepalive, Some(25));
}

#[test]
fn replays_and_bad_tags_are_counted_apart() {
    let (ps, pp) = key(2);
    let (as_, ap) = key(3);
    let pop = Engine::new(ps, vec![spec(ap, None, &["10.1.0.0/24"])]).unwrap();
    let a = Engine::new(as_, vec![spec(pp, Some(POP_UDP), &["0.0.0.0/0"])]).unwrap();
    let a_udp = sa("10.99.0.10:1");
    let mut net = Net::new(vec![(a_udp, &a), (sa(POP_UDP), &pop)]);
    net.send(0, &ip_packet("10.1.0.2", "10.2.0.2", b"a1"));
    net.run();
    let data = net
        .log
        .iter()
        .rev()
        .find(|(_, _, d)| d[0] == 4 && d.len() > 32)
        .map(|(_, _, d)| d.clone())
        .expect("a data message");
    let mut out = vec![0u8; 2048];
    let _ = pop.decapsulate(a_udp, &data, &mut out);
    let mut bad = data.clone();
    let last = bad.len() - 1;
    bad[last] ^= 1;
    bad[8] = bad[8].wrapping_add(100); // a fresh counter, so the tag is what fails
    let _ = pop.decapsulate(a_udp, &bad, &mut out);
    let st = pop.peers()[0].stats();
    assert_eq!((st.dropped_replay, st.dropped_bad_mac), (1, 1), "{st:?}");
    assert_eq!(st.dropped_decrypt, 2);
}
