//! Fuzz target: the tunnel's network ingress past authentication. Each run a POP engine and a
//! client (boringtun's `Tunn` with the peer's key) complete a real handshake; the input's first
//! byte then picks what reaches the POP's `decapsulate`:
//! - 0 mod 3: the rest is an inner packet the client encrypts in the session (any bytes): the
//!   POP delivers only an IP packet that is its prefix (or it and padding zeros, as the IP
//!   header sizes it) whose source is in the peer's AllowedIPs;
//! - 1 mod 3: the rest is XORed over the session's first data datagram: delivered only if
//!   unchanged (WireGuard authenticates every byte);
//! - 2 mod 3: the rest is XORed over a fresh handshake initiation: never a delivered packet.
#![no_main]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use boringtun::noise::{Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};
use libfuzzer_sys::fuzz_target;
use starpep_common::tunnel::engine::well_formed;
use starpep_common::tunnel::{Engine, Inbound, PeerSpec};

const V4: Ipv4Addr = Ipv4Addr::new(10, 8, 0, 2);
const V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 8, 0, 0, 0, 0, 0, 2);

fn pop() -> Engine {
    let peer = *PublicKey::from(&StaticSecret::from([7u8; 32])).as_bytes();
    let spec = PeerSpec {
        public_key: peer,
        preshared_key: Some([3u8; 32].into()),
        endpoint: None,
        allowed_ips: vec![
            "10.8.0.2/32".parse().unwrap(),
            "fd00:8::2/128".parse().unwrap(),
        ],
        persistent_keepalive: None,
    };
    Engine::new([9u8; 32], vec![spec]).unwrap()
}

fn client() -> Tunn {
    let pop = PublicKey::from(&StaticSecret::from([9u8; 32]));
    Tunn::new(
        StaticSecret::from([7u8; 32]),
        pop,
        Some([3u8; 32]),
        None,
        77,
        None,
    )
}

fn initiation(c: &mut Tunn) -> Vec<u8> {
    let mut dst = vec![0u8; 2048];
    match c.format_handshake_initiation(&mut dst, false) {
        TunnResult::WriteToNetwork(d) => d.to_vec(),
        r => panic!("no initiation: {r:?}"),
    }
}

/// Completes the handshake; the client's confirming keepalive has reached the POP.
fn session(pop: &Engine, c: &mut Tunn, from: SocketAddr) {
    let init = initiation(c);
    let mut dst = vec![0u8; 2048];
    let Inbound::Network { datagram, .. } = pop.decapsulate(from, &init, &mut dst) else {
        panic!("no handshake response");
    };
    let resp = datagram.to_vec();
    let mut cdst = vec![0u8; 2048];
    let TunnResult::WriteToNetwork(ka) = c.decapsulate(None, &resp, &mut cdst) else {
        panic!("client refused the response");
    };
    let ka = ka.to_vec();
    assert!(matches!(
        pop.decapsulate(from, &ka, &mut dst),
        Inbound::Nothing
    ));
}

fn xor(base: &[u8], mask: &[u8]) -> Vec<u8> {
    let mut v = base.to_vec();
    for (b, m) in v.iter_mut().zip(mask) {
        *b ^= m;
    }
    // Bytes past the base's end lengthen it.
    v.extend_from_slice(mask.get(base.len()..).unwrap_or(&[]));
    v
}

fn source_allowed(p: &[u8]) -> bool {
    match p.first().map(|b| b >> 4) {
        Some(4) if p.len() >= 20 => IpAddr::from(<[u8; 4]>::try_from(&p[12..16]).unwrap()) == V4,
        Some(6) if p.len() >= 40 => {
            IpAddr::from(<[u8; 16]>::try_from(&p[8..24]).unwrap()) == IpAddr::V6(V6)
        }
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let from: SocketAddr = "198.51.100.7:40000".parse().unwrap();
    let pop = pop();
    let mut c = client();
    let mut dst = vec![0u8; rest.len().max(1500) + 256];
    match mode % 3 {
        0 => {
            session(&pop, &mut c, from);
            let mut cdst = vec![0u8; rest.len() + 256];
            let TunnResult::WriteToNetwork(d) = c.encapsulate(rest, &mut cdst) else {
                panic!("no session to encrypt in");
            };
            let d = d.to_vec();
            if let Inbound::Tunnel(p) = pop.decapsulate(from, &d, &mut dst) {
                // The packet as its IP header sizes it, within what was sent and its padding.
                assert!(p.len() <= rest.len().div_ceil(16) * 16, "{} bytes", p.len());
                let n = p.len().min(rest.len());
                assert_eq!(&p[..n], &rest[..n]);
                assert!(p[n..].iter().all(|&b| b == 0), "padding is not zeros");
                assert!(
                    source_allowed(p),
                    "delivered from outside AllowedIPs: {p:02x?}"
                );
                assert!(well_formed(p), "a stub of a packet delivered: {p:02x?}");
            }
        }
        1 => {
            session(&pop, &mut c, from);
            let mut cdst = vec![0u8; 256];
            let pkt = [
                0x45, 0, 0, 20, 0, 0, 0x40, 0, 64, 17, 0, 0, 10, 8, 0, 2, 10, 9, 0, 1,
            ];
            let TunnResult::WriteToNetwork(d) = c.encapsulate(&pkt, &mut cdst) else {
                panic!("no session to encrypt in");
            };
            let mutated = xor(d, rest);
            let unchanged = mutated == d;
            if let Inbound::Tunnel(p) = pop.decapsulate(from, &mutated, &mut dst) {
                assert!(unchanged, "mutated datagram delivered {} bytes", p.len());
            }
        }
        _ => {
            let init = initiation(&mut c);
            let mutated = xor(&init, rest);
            let r = pop.decapsulate(from, &mutated, &mut dst);
            assert!(!matches!(r, Inbound::Tunnel(_)));
        }
    }
});
