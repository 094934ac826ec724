//! Fuzz target: arbitrary datagrams from the network into the tunnel engine's `decapsulate`
//! (the POP's UDP ingress), and arbitrary TUN packets into `encapsulate`: no panic, and whatever
//! the engine asks to send or write fits the buffer it was given.
#![no_main]

use std::net::SocketAddr;

use boringtun::x25519::{PublicKey, StaticSecret};
use libfuzzer_sys::fuzz_target;
use starpep_common::tunnel::{Engine, Inbound, Outbound, PeerSpec, MIN_DST};

fn engine() -> Engine {
    let peer = *PublicKey::from(&StaticSecret::from([7u8; 32])).as_bytes();
    let spec = PeerSpec {
        public_key: peer,
        preshared_key: None,
        endpoint: Some("192.0.2.1:51820".parse().unwrap()),
        allowed_ips: vec![
            "10.8.0.2/32".parse().unwrap(),
            "fd00:8::2/128".parse().unwrap(),
        ],
        persistent_keepalive: None,
    };
    Engine::new([9u8; 32], vec![spec]).unwrap()
}

fuzz_target!(|data: &[u8]| {
    let eng = engine();
    let from: SocketAddr = "198.51.100.7:40000".parse().unwrap();
    let mut dst = vec![0u8; data.len().max(MIN_DST) + 256];
    let cap = dst.len();
    match eng.decapsulate(from, data, &mut dst) {
        Inbound::Tunnel(p) => assert!(p.len() <= cap),
        Inbound::Network { datagram, .. } => assert!(datagram.len() <= cap),
        Inbound::Nothing => {}
    }
    if let Outbound::Send { datagram, .. } = eng.encapsulate(data, &mut dst) {
        assert!(datagram.len() <= cap);
    }
});
