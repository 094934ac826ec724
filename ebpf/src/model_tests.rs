//! Unit tests of the pure rewrite model (packets built with etherparse, checksums verified).

use super::*;
use crate::flow::FlowKey;
use etherparse::{IpHeaders, IpNumber, Ipv4Extensions, Ipv4Header, PacketBuilder, VlanId};
use std::net::SocketAddr;

const SRC4: [u8; 4] = [10, 1, 0, 2];
const DST4: [u8; 4] = [10, 1, 0, 1];
const SRC6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
const DST6: [u8; 16] = [0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
const MAC_A: [u8; 6] = [2, 0, 0, 0, 0, 1];
const MAC_B: [u8; 6] = [2, 0, 0, 0, 0, 2];

/// Segment flags of the test packets.
#[derive(Clone, Copy)]
pub(super) enum Kind {
    Ack,
    Syn,
    SynAck,
    Rst,
}

pub(super) fn tcp_v4(eth: bool, kind: Kind, window: u16, payload: &[u8]) -> Vec<u8> {
    let b = if eth {
        PacketBuilder::ethernet2(MAC_A, MAC_B).ipv4(SRC4, DST4, 64)
    } else {
        PacketBuilder::ipv4(SRC4, DST4, 64)
    };
    finish(b.tcp(5001, 40000, 1000, window), kind, payload)
}

pub(super) fn tcp_v6(eth: bool, kind: Kind, window: u16, payload: &[u8]) -> Vec<u8> {
    let b = if eth {
        PacketBuilder::ethernet2(MAC_A, MAC_B).ipv6(SRC6, DST6, 64)
    } else {
        PacketBuilder::ipv6(SRC6, DST6, 64)
    };
    finish(b.tcp(5001, 40000, 1000, window), kind, payload)
}

fn finish(
    b: etherparse::PacketBuilderStep<etherparse::TcpHeader>,
    kind: Kind,
    payload: &[u8],
) -> Vec<u8> {
    let b = match kind {
        Kind::Ack => b.ack(777),
        Kind::Syn => b.syn(),
        Kind::SynAck => b.syn().ack(777),
        Kind::Rst => b.rst(),
    };
    let mut out = Vec::new();
    b.write(&mut out, payload).unwrap();
    out
}

pub(super) fn v4_key() -> FlowKey {
    let local: SocketAddr = (SRC4, 5001).into();
    let remote: SocketAddr = (DST4, 40000).into();
    FlowKey::from_socket(local, remote).unwrap()
}

pub(super) fn v6_key() -> FlowKey {
    let local: SocketAddr = (SRC6, 5001).into();
    let remote: SocketAddr = (DST6, 40000).into();
    FlowKey::from_socket(local, remote).unwrap()
}

/// A map with one entry.
pub(super) fn map(key: FlowKey, window: u32, wscale: u8) -> impl Fn(&FlowKey) -> Option<(u32, u8)> {
    move |k: &FlowKey| (*k == key).then_some((window, wscale))
}

/// Independent check: the one's-complement sum over pseudo header and segment is 0xffff.
pub(super) fn tcp_checksum_ok(frame: &[u8], l3: usize) -> bool {
    let ip = &frame[l3..];
    let mut words: Vec<u8> = Vec::new();
    let seg = if ip[0] >> 4 == 4 {
        let ihl = usize::from(ip[0] & 0xf) * 4;
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        let seg = &ip[ihl..total];
        words.extend_from_slice(&ip[12..20]);
        words.extend_from_slice(&[0, 6]);
        words.extend_from_slice(&(seg.len() as u16).to_be_bytes());
        seg
    } else {
        let len = usize::from(u16::from_be_bytes([ip[4], ip[5]]));
        let seg = &ip[40..40 + len];
        words.extend_from_slice(&ip[8..40]);
        words.extend_from_slice(&(seg.len() as u32).to_be_bytes());
        words.extend_from_slice(&[0, 0, 0, 6]);
        seg
    };
    words.extend_from_slice(seg);
    if !words.len().is_multiple_of(2) {
        words.push(0);
    }
    let mut sum: u32 = 0;
    for w in words.chunks(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

fn window_at(frame: &[u8], l4: usize) -> u16 {
    u16::from_be_bytes([frame[l4 + 14], frame[l4 + 15]])
}

/// Bytes that differ between two frames of equal length.
fn diff(a: &[u8], b: &[u8]) -> Vec<usize> {
    assert_eq!(a.len(), b.len());
    (0..a.len()).filter(|&i| a[i] != b[i]).collect()
}

#[test]
fn v4_ethernet_ack_is_lowered_and_checksum_verifies() {
    let orig = tcp_v4(true, Kind::Ack, 1000, b"hello");
    assert!(tcp_checksum_ok(&orig, 14));
    let mut f = orig.clone();
    // W = 20000 bytes, wscale 7: 20000 >> 7 = 156.
    let out = rewrite(&mut f, true, map(v4_key(), 20000, 7));
    assert_eq!(
        out,
        Outcome::Rewritten {
            old: 1000,
            new: 156
        }
    );
    assert_eq!(window_at(&f, 34), 156);
    assert!(tcp_checksum_ok(&f, 14));
    // Only the window and the checksum bytes changed.
    assert!(diff(&orig, &f)
        .iter()
        .all(|&i| (34 + 14..34 + 18).contains(&i)));
}

#[test]
fn v6_raw_ip_ack_is_lowered_and_checksum_verifies() {
    let mut f = tcp_v6(false, Kind::Ack, 40000, &[0xab; 1200]);
    assert!(tcp_checksum_ok(&f, 0));
    let out = rewrite(&mut f, false, map(v6_key(), 65536, 2));
    assert_eq!(
        out,
        Outcome::Rewritten {
            old: 40000,
            new: 16384
        }
    );
    assert_eq!(window_at(&f, 40), 16384);
    assert!(tcp_checksum_ok(&f, 0));
}

#[test]
fn v6_ethernet_and_v4_raw_ip() {
    let mut f = tcp_v6(true, Kind::Ack, 5000, b"");
    assert_eq!(
        rewrite(&mut f, true, map(v6_key(), 1000, 0)),
        Outcome::Rewritten {
            old: 5000,
            new: 1000
        }
    );
    assert!(tcp_checksum_ok(&f, 14));
    let mut f = tcp_v4(false, Kind::Ack, 5000, b"xyz");
    assert_eq!(
        rewrite(&mut f, false, map(v4_key(), 1000, 0)),
        Outcome::Rewritten {
            old: 5000,
            new: 1000
        }
    );
    assert!(tcp_checksum_ok(&f, 0));
}

#[test]
fn ipv4_options_use_ihl() {
    let mut ip = Ipv4Header::new(0, 64, IpNumber::TCP, SRC4, DST4).unwrap();
    ip.options = [1, 1, 1, 1, 1, 1, 1, 0].into(); // NOPs + EOL: ihl = 7
    let b = PacketBuilder::ip(IpHeaders::Ipv4(ip, Ipv4Extensions::default()));
    let mut f = finish(b.tcp(5001, 40000, 1, 3000), Kind::Ack, b"data");
    assert_eq!(f[0] & 0xf, 7);
    let out = rewrite(&mut f, false, map(v4_key(), 2000, 0));
    assert_eq!(
        out,
        Outcome::Rewritten {
            old: 3000,
            new: 2000
        }
    );
    assert_eq!(window_at(&f, 28), 2000);
    assert!(tcp_checksum_ok(&f, 0));
}

#[test]
fn single_vlan_tag() {
    let b = PacketBuilder::ethernet2(MAC_A, MAC_B)
        .single_vlan(VlanId::try_new(42).unwrap())
        .ipv4(SRC4, DST4, 64);
    let mut f = finish(b.tcp(5001, 40000, 1, 3000), Kind::Ack, b"v");
    assert_eq!(
        rewrite(&mut f, true, map(v4_key(), 100, 0)),
        Outcome::Rewritten {
            old: 3000,
            new: 100
        }
    );
    assert!(tcp_checksum_ok(&f, 18));
}

#[test]
fn syn_synack_and_rst_are_untouched() {
    for kind in [Kind::Syn, Kind::SynAck, Kind::Rst] {
        for eth in [true, false] {
            let orig = tcp_v4(eth, kind, 64240, b"");
            let mut f = orig.clone();
            assert_eq!(
                rewrite(&mut f, eth, map(v4_key(), 100, 0)),
                Outcome::Control
            );
            assert_eq!(f, orig);
        }
    }
}

#[test]
fn never_raises_a_window() {
    let orig = tcp_v4(true, Kind::Ack, 100, b"");
    let mut f = orig.clone();
    let out = rewrite(&mut f, true, map(v4_key(), 1 << 20, 7));
    assert_eq!(out, Outcome::Kept { window: 100 });
    assert_eq!(f, orig);
    for orig_w in [0u16, 1, 155, 156, 157, 0xffff] {
        for w in [0u32, 1, 127, 128, 20000, 1 << 24, u32::MAX] {
            for ws in [0u8, 1, 7, 14, 15, 255] {
                let new = limited_window(orig_w, w, ws);
                assert!(new <= orig_w, "raised {orig_w} to {new} (W {w}, ws {ws})");
                assert!(new != 0 || orig_w == 0, "wrote 0 over {orig_w}");
            }
        }
    }
}

#[test]
fn never_writes_zero() {
    // W below one scaling unit: the field becomes 1, not 0.
    let mut f = tcp_v4(true, Kind::Ack, 500, b"");
    assert_eq!(
        rewrite(&mut f, true, map(v4_key(), 100, 7)),
        Outcome::Rewritten { old: 500, new: 1 }
    );
    assert!(tcp_checksum_ok(&f, 14));
    // A zero window from the kernel stays zero (it is not raised).
    let mut f = tcp_v4(true, Kind::Ack, 0, b"");
    assert_eq!(
        rewrite(&mut f, true, map(v4_key(), 0, 0)),
        Outcome::Kept { window: 0 }
    );
}

#[test]
fn limit_is_clamped_to_16_bits_and_wscale_to_14() {
    assert_eq!(limited_window(0xffff, 10_000_000, 0), 0xffff);
    assert_eq!(
        limited_window(0xffff, u32::MAX, 14),
        (u32::MAX >> 14) as u16
    );
    assert_eq!(
        limited_window(0xffff, 1 << 20, 200),
        limited_window(0xffff, 1 << 20, 14)
    );
}

#[test]
fn key_matches_socket_addresses() {
    let mut f = tcp_v4(true, Kind::Ack, 1000, b"");
    let seen = std::cell::Cell::new(None);
    let out = rewrite(&mut f, true, |k: &FlowKey| {
        seen.set(Some(*k));
        None
    });
    assert_eq!(out, Outcome::NoEntry);
    assert_eq!(seen.get(), Some(v4_key()));
    let (local, remote) = seen.get().unwrap().socket_addrs().unwrap();
    assert_eq!(local, "10.1.0.2:5001".parse().unwrap());
    assert_eq!(remote, "10.1.0.1:40000".parse().unwrap());
    // The reverse direction is another flow.
    let mut f = tcp_v6(false, Kind::Ack, 1000, b"");
    assert_eq!(
        rewrite(&mut f, false, map(v4_key(), 1, 0)),
        Outcome::NoEntry
    );
}

#[test]
fn skips_fragments_other_protocols_and_ext_headers() {
    let any = |_: &FlowKey| Some((1u32, 0u8));
    let mut f = tcp_v4(false, Kind::Ack, 1000, b"");
    f[6] |= 0x20; // MF
    assert_eq!(
        rewrite(&mut f, false, any),
        Outcome::Skipped(Skip::Fragment)
    );
    let mut f = tcp_v4(false, Kind::Ack, 1000, b"");
    f[7] = 1; // offset 8
    assert_eq!(
        rewrite(&mut f, false, any),
        Outcome::Skipped(Skip::Fragment)
    );
    let mut f = Vec::new();
    PacketBuilder::ipv4(SRC4, DST4, 64)
        .udp(1, 2)
        .write(&mut f, b"u")
        .unwrap();
    assert_eq!(rewrite(&mut f, false, any), Outcome::Skipped(Skip::NotTcp));
    let mut f = tcp_v6(false, Kind::Ack, 1000, b"");
    f[6] = 0; // hop-by-hop options header first
    assert_eq!(
        rewrite(&mut f, false, any),
        Outcome::Skipped(Skip::Ipv6NotTcp)
    );
    let mut f = tcp_v4(false, Kind::Ack, 1000, b"");
    f[0] = 0x44; // ihl 4
    assert_eq!(rewrite(&mut f, false, any), Outcome::Skipped(Skip::BadIhl));
    // Ethertype says IPv4, the header says 6.
    let mut f = tcp_v6(true, Kind::Ack, 1000, b"");
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    assert_eq!(rewrite(&mut f, true, any), Outcome::Skipped(Skip::NotIp));
    let mut arp = tcp_v4(true, Kind::Ack, 1000, b"");
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    assert_eq!(rewrite(&mut arp, true, any), Outcome::Skipped(Skip::NotIp));
}

#[test]
fn partial_checksum_leaves_the_field() {
    let orig = tcp_v4(true, Kind::Ack, 1000, b"");
    let mut f = orig.clone();
    let out = rewrite_with(&mut f, true, Checksum::Partial, map(v4_key(), 200, 0));
    assert_eq!(
        out,
        Outcome::Rewritten {
            old: 1000,
            new: 200
        }
    );
    assert_eq!(diff(&orig, &f), vec![34 + 14, 34 + 15]);
}
