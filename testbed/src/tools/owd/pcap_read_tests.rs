//! Tests of the capture reader on pcap/pcapng files written here (every supported link type,
//! IPv6, snap-length truncation, a record cut short).

use super::*;
use etherparse::PacketBuilder;
use pcap_file::pcap::{PcapHeader, PcapPacket, PcapWriter};
use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::PcapNgWriter;
use std::borrow::Cow;
use std::time::Duration;

/// An IPv4 (or IPv6) TCP packet 10.0.0.1:40000 → 10.0.1.1:5001 with `len` payload bytes.
pub(crate) fn tcp_packet(v6: bool, seq: u32, len: usize, syn: bool) -> Vec<u8> {
    let b = if v6 {
        let mut a = [0u8; 16];
        a[0] = 0xfd;
        let mut d = a;
        d[15] = 2;
        PacketBuilder::ipv6(a, d, 64)
    } else {
        PacketBuilder::ipv4([10, 0, 0, 1], [10, 0, 1, 1], 64)
    };
    let mut t = b.tcp(40000, 5001, seq, 1000);
    if syn {
        t = t.syn();
    }
    let mut out = Vec::new();
    t.write(&mut out, &vec![0x5a; len]).unwrap();
    out
}

/// Wraps an IP packet in a frame of `link`.
pub(crate) fn frame(link: DataLink, ip: &[u8]) -> Vec<u8> {
    let et: [u8; 2] = if ip[0] >> 4 == 6 {
        [0x86, 0xdd]
    } else {
        [0x08, 0x00]
    };
    let mut f = match link {
        DataLink::ETHERNET => {
            let mut h = vec![2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2];
            h.extend_from_slice(&[0x81, 0x00, 0x00, 0x07]); // one VLAN tag
            h.extend_from_slice(&et);
            h
        }
        DataLink::LINUX_SLL => {
            let mut h = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
            h.extend_from_slice(&et);
            h
        }
        DataLink::LINUX_SLL2 => {
            let mut h = et.to_vec();
            h.extend_from_slice(&[0, 0, 0, 0, 0, 3, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
            h
        }
        DataLink::NULL => vec![2, 0, 0, 0],
        _ => Vec::new(),
    };
    f.extend_from_slice(ip);
    f
}

/// A classic pcap of `frames` (ts ns, frame, bytes kept).
pub(crate) fn pcap(link: DataLink, nano: bool, frames: &[(u64, Vec<u8>, usize)]) -> Vec<u8> {
    let h = PcapHeader {
        datalink: link,
        ts_resolution: if nano {
            TsResolution::NanoSecond
        } else {
            TsResolution::MicroSecond
        },
        snaplen: 65535,
        ..Default::default()
    };
    let mut w = PcapWriter::with_header(Vec::new(), h).unwrap();
    for (ts, f, keep) in frames {
        let p = PcapPacket {
            timestamp: Duration::from_nanos(*ts),
            orig_len: f.len() as u32,
            data: Cow::Borrowed(&f[..*keep.min(&f.len())]),
        };
        w.write_packet(&p).unwrap();
    }
    w.into_writer()
}

fn frames(link: DataLink, v6: bool) -> Vec<(u64, Vec<u8>, usize)> {
    let mut v = vec![(
        1_000_000_123_456_000,
        frame(link, &tcp_packet(v6, 99, 0, true)),
        9999,
    )];
    for i in 0..3u32 {
        let f = frame(link, &tcp_packet(v6, 100 + i * 1400, 1400, false));
        v.push((1_000_000_124_000_000 + i as u64 * 1_000, f, 9999));
    }
    v
}

#[test]
fn every_link_type_v4_and_v6() {
    for link in [
        DataLink::ETHERNET,
        DataLink::LINUX_SLL,
        DataLink::LINUX_SLL2,
        DataLink::RAW,
        DataLink::NULL,
    ] {
        for v6 in [false, true] {
            let segs = read_segments(&pcap(link, false, &frames(link, v6))[..], "t").unwrap();
            assert_eq!(segs.len(), 4, "{link:?} v6={v6}");
            assert!(segs[0].syn && segs[0].seq == 99 && segs[0].len == 0);
            assert_eq!(segs[0].ts_ns, 1_000_000_123_456_000);
            assert_eq!(segs[2].seq, 1500);
            assert_eq!(segs[2].len, 1400);
            assert_eq!(segs[1].src.port(), 40000);
            assert_eq!(segs[1].dst.port(), 5001);
            assert_eq!(segs[1].src.is_ipv6(), v6);
        }
    }
}

#[test]
fn snaplen_truncation_keeps_wire_length_and_ns_resolution() {
    let mut fr = frames(DataLink::ETHERNET, false);
    for f in &mut fr {
        f.2 = 14 + 4 + 20 + 20 + 10; // headers + 10 payload bytes
    }
    fr[1].0 += 789; // sub-µs part survives only with ns resolution
    let segs = read_segments(&pcap(DataLink::ETHERNET, true, &fr)[..], "t").unwrap();
    assert_eq!(segs.len(), 4);
    assert_eq!(segs[1].len, 1400);
    assert_eq!(segs[1].ts_ns, 1_000_000_124_000_789);
}

#[test]
fn cut_record_ends_the_capture_and_garbage_is_an_error() {
    let mut p = pcap(DataLink::RAW, false, &frames(DataLink::RAW, false));
    p.truncate(p.len() - 100);
    assert_eq!(read_segments(&p[..], "t").unwrap().len(), 3);
    let e = read_segments(&b"not a capture at all"[..], "x.pcap").unwrap_err();
    assert!(e.to_string().starts_with("x.pcap: "), "{e}");
    let mut h = pcap(DataLink::Unknown(147), false, &frames(DataLink::RAW, false));
    h.truncate(24 + 16 + 40);
    assert!(read_segments(&h[..], "t").is_err());
}

#[test]
fn pcapng_with_default_and_ns_resolution() {
    for resol in [None, Some(9u8)] {
        let mut w = PcapNgWriter::new(Vec::new()).unwrap();
        let mut idb = InterfaceDescriptionBlock::new(DataLink::LINUX_SLL2, 0);
        if let Some(r) = resol {
            idb.options.push(InterfaceDescriptionOption::IfTsResol(r));
        }
        w.write_pcapng_block(idb).unwrap();
        let scale = if resol.is_some() { 1 } else { 1000 };
        for (ts, f, _) in frames(DataLink::LINUX_SLL2, false) {
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: Duration::from_nanos(ts / scale),
                original_len: f.len() as u32,
                data: Cow::Owned(f),
                options: vec![],
            };
            w.write_pcapng_block(epb).unwrap();
        }
        let segs = read_segments(&w.into_inner()[..], "t").unwrap();
        assert_eq!(segs.len(), 4);
        assert_eq!(segs[0].ts_ns, 1_000_000_123_456_000, "{resol:?}");
        assert_eq!(segs[3].seq, 100 + 2 * 1400);
    }
}
