//! Map layout shared with the tc classifier: the flow key (outgoing 4-tuple) and the window entry.
//!
//! Both structs are `#[repr(C)]` mirrors of `struct flow_key` / `struct flow_window` in
//! `bpf/starpep_window.bpf.c`; their `aya::Pod` impls live in `sys.rs`.

use std::net::{IpAddr, SocketAddr};

/// Address family byte of an IPv4 key.
pub const FAMILY_V4: u8 = 4;
/// Address family byte of an IPv6 key.
pub const FAMILY_V6: u8 = 6;

/// Key of `STARPEP_WINDOWS`: the 4-tuple as it appears in an OUTGOING segment, i.e. source =
/// the PEP's local socket address, destination = the remote (data sender).
///
/// Layout (40 bytes): `family` (4 or 6), 3 zero bytes, `saddr[16]`, `daddr[16]`, `sport[2]`,
/// `dport[2]`. IPv4 addresses fill the first 4 bytes of the 16 (the rest stays 0); ports are in
/// network byte order, exactly as on the wire.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub family: u8,
    pub pad: [u8; 3],
    pub saddr: [u8; 16],
    pub daddr: [u8; 16],
    pub sport: [u8; 2],
    pub dport: [u8; 2],
}

/// Value of `STARPEP_WINDOWS` (24 bytes, no implicit padding).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowEntry {
    /// The window limit W in bytes.
    pub window: u32,
    /// The flow's receive window scale (`tcpi_rcv_wscale`); the program clamps it to 14.
    pub rcv_wscale: u8,
    pub pad: [u8; 3],
    /// Segments of the flow seen on egress (SYN and RST included), updated by the program.
    pub seen: u64,
    /// Segments whose window the program lowered.
    pub rewritten: u64,
}

const _: () = assert!(std::mem::size_of::<FlowKey>() == 40);
const _: () = assert!(std::mem::size_of::<FlowEntry>() == 24);

/// An IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) becomes IPv4: such sockets send IPv4.
fn normalise(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    }
}

fn addr_bytes(ip: IpAddr) -> [u8; 16] {
    let mut out = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => out[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => out = v6.octets(),
    }
    out
}

impl FlowKey {
    /// The key of the socket `local -> remote` (the outgoing direction). IPv4-mapped IPv6
    /// addresses are normalised to IPv4. `None` if the two addresses are of different families.
    pub fn from_socket(local: SocketAddr, remote: SocketAddr) -> Option<FlowKey> {
        let (src, dst) = (normalise(local.ip()), normalise(remote.ip()));
        let family = match (src, dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) => FAMILY_V4,
            (IpAddr::V6(_), IpAddr::V6(_)) => FAMILY_V6,
            _ => return None,
        };
        Some(FlowKey {
            family,
            pad: [0; 3],
            saddr: addr_bytes(src),
            daddr: addr_bytes(dst),
            sport: local.port().to_be_bytes(),
            dport: remote.port().to_be_bytes(),
        })
    }

    /// The (source, destination) socket addresses of this key; `None` for an unknown family.
    pub fn socket_addrs(&self) -> Option<(SocketAddr, SocketAddr)> {
        let ip = |b: &[u8; 16]| -> Option<IpAddr> {
            match self.family {
                FAMILY_V4 => Some(IpAddr::from([b[0], b[1], b[2], b[3]])),
                FAMILY_V6 => Some(IpAddr::from(*b)),
                _ => None,
            }
        };
        Some((
            SocketAddr::new(ip(&self.saddr)?, u16::from_be_bytes(self.sport)),
            SocketAddr::new(ip(&self.daddr)?, u16::from_be_bytes(self.dport)),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v4_key_layout() {
        let k = FlowKey::from_socket(
            "10.0.0.1:443".parse().unwrap(),
            "192.168.1.2:50000".parse().unwrap(),
        )
        .unwrap();
        assert_eq!(k.family, FAMILY_V4);
        assert_eq!(&k.saddr[..4], &[10, 0, 0, 1]);
        assert_eq!(&k.saddr[4..], &[0; 12]);
        assert_eq!(&k.daddr[..4], &[192, 168, 1, 2]);
        assert_eq!(k.sport, [0x01, 0xbb]);
        assert_eq!(k.dport, 50000u16.to_be_bytes());
    }

    #[test]
    fn mapped_v6_is_v4() {
        let mapped = FlowKey::from_socket(
            "[::ffff:10.0.0.1]:443".parse().unwrap(),
            "[::ffff:192.168.1.2]:50000".parse().unwrap(),
        );
        let plain = FlowKey::from_socket(
            "10.0.0.1:443".parse().unwrap(),
            "192.168.1.2:50000".parse().unwrap(),
        );
        assert_eq!(mapped, plain);
        // One side mapped, the other plain IPv4: still one family.
        let mixed = FlowKey::from_socket(
            "[::ffff:10.0.0.1]:443".parse().unwrap(),
            "192.168.1.2:50000".parse().unwrap(),
        );
        assert_eq!(mixed, plain);
    }

    #[test]
    fn v6_and_mismatch() {
        let local: SocketAddr = "[fd00::1]:80".parse().unwrap();
        let remote: SocketAddr = "[fd00::2]:1234".parse().unwrap();
        let k = FlowKey::from_socket(local, remote).unwrap();
        assert_eq!(k.family, FAMILY_V6);
        assert_eq!(k.socket_addrs(), Some((local, remote)));
        assert_eq!(
            FlowKey::from_socket(local, "1.2.3.4:5".parse().unwrap()),
            None
        );
    }
}
