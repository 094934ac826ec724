//! Deterministic mutation test of the engine's network ingress (the stable-toolchain stand-in for
//! `fuzz/tunnel_decapsulate`): every datagram of a real handshake and data exchange, mutated
//! thousands of times, never panics `decapsulate`, and a mutated datagram never delivers a
//! packet to the TUN (WireGuard authenticates every byte).

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::testing::mutate;

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
