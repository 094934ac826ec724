//! owd-bulk pcap mode file shell: reads a capture (pcap or pcapng; Ethernet, Linux cooked
//! SLL/SLL2, raw IP/TUN, BSD loopback) into the TCP segments the matcher needs.

use super::pcap_match::Segment;
use etherparse::{IpNumber, LaxIpSlice, TcpSlice};
use pcap_file::pcap::PcapReader;
use pcap_file::pcapng::{Block, PcapNgReader};
use pcap_file::{DataLink, PcapError, TsResolution};
use std::io::{BufRead, BufReader, Read};
use std::net::SocketAddr;

/// A capture that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("{name}: {msg}")]
pub struct PcapReadError {
    pub name: String,
    pub msg: String,
}

/// Reads the data-carrying and SYN TCP segments of a capture file.
pub fn read_file(path: &std::path::Path) -> Result<Vec<Segment>, PcapReadError> {
    let name = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| PcapReadError {
        name: name.clone(),
        msg: format!("open: {e}"),
    })?;
    read_segments(f, &name)
}

/// Reads the data-carrying and SYN TCP segments of a capture (`name` for errors).
pub fn read_segments<R: Read>(r: R, name: &str) -> Result<Vec<Segment>, PcapReadError> {
    let err = |msg: String| PcapReadError {
        name: name.to_string(),
        msg,
    };
    let mut r = BufReader::new(r);
    let head = r.fill_buf().map_err(|e| err(format!("read: {e}")))?;
    if head.len() >= 4 && head[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
        read_pcapng(r).map_err(err)
    } else {
        read_pcap(r).map_err(err)
    }
}

/// End of a capture: a record cut short (a capture killed mid-write) ends it quietly.
fn truncated(e: &PcapError) -> bool {
    matches!(e, PcapError::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof)
        || matches!(e, PcapError::IncompleteBuffer)
}

fn read_pcap<R: Read>(r: R) -> Result<Vec<Segment>, String> {
    let mut rd = PcapReader::new(r).map_err(|e| format!("pcap header: {e}"))?;
    let h = rd.header();
    let mut out = Vec::new();
    while let Some(p) = rd.next_raw_packet() {
        let p = match p {
            Ok(p) => p,
            Err(e) if truncated(&e) => break,
            Err(e) => return Err(format!("record {}: {e}", out.len())),
        };
        let frac = match h.ts_resolution {
            TsResolution::MicroSecond => p.ts_frac as u64 * 1_000,
            TsResolution::NanoSecond => p.ts_frac as u64,
        };
        let ts = p.ts_sec as u64 * 1_000_000_000 + frac;
        if let Some(s) = frame_segment(h.datalink, &p.data, ts)? {
            out.push(s);
        }
    }
    Ok(out)
}

/// pcapng interface: link type and ns per timestamp unit (as numerator/denominator).
struct Iface {
    link: DataLink,
    tsresol: u8,
}

impl Iface {
    fn ns(&self, units: u128) -> u64 {
        let v = self.tsresol;
        let ns = if v & 0x80 == 0 {
            let exp = (v as u32).min(38);
            if exp <= 9 {
                units.saturating_mul(10u128.pow(9 - exp))
            } else {
                units / 10u128.pow(exp - 9)
            }
        } else {
            let bits = (v & 0x7f) as u32;
            units.saturating_mul(1_000_000_000) >> bits.min(127)
        };
        ns.min(u64::MAX as u128) as u64
    }
}

fn read_pcapng<R: Read>(r: R) -> Result<Vec<Segment>, String> {
    use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionOption as Opt;
    let mut rd = PcapNgReader::new(r).map_err(|e| format!("pcapng section header: {e}"))?;
    let (mut ifaces, mut out): (Vec<Iface>, Vec<Segment>) = (Vec::new(), Vec::new());
    while let Some(b) = rd.next_block() {
        let b = match b {
            Ok(b) => b,
            Err(e) if truncated(&e) => break,
            Err(e) => return Err(format!("block after {} segments: {e}", out.len())),
        };
        match b {
            Block::SectionHeader(_) => ifaces.clear(),
            Block::InterfaceDescription(idb) => {
                let tsresol = idb
                    .options
                    .iter()
                    .find_map(|o| match o {
                        Opt::IfTsResol(v) => Some(*v),
                        _ => None,
                    })
                    .unwrap_or(6);
                ifaces.push(Iface {
                    link: idb.linktype,
                    tsresol,
                });
            }
            Block::EnhancedPacket(epb) => {
                let i = ifaces.get(epb.interface_id as usize).ok_or_else(|| {
                    format!("packet on undeclared interface {}", epb.interface_id)
                })?;
                let ts = i.ns(epb.timestamp.as_nanos());
                if let Some(s) = frame_segment(i.link, &epb.data, ts)? {
                    out.push(s);
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// `rest` if `ethertype` is IPv4 or IPv6.
fn by_type(ethertype: u16, rest: &[u8]) -> Option<&[u8]> {
    matches!(ethertype, 0x0800 | 0x86dd).then_some(rest)
}

/// The IP packet inside a frame of `link`, or None if it carries something else.
fn ip_of(link: DataLink, f: &[u8]) -> Result<Option<&[u8]>, String> {
    let be16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|x| u16::from_be_bytes([x[0], x[1]]));
    Ok(match link {
        DataLink::ETHERNET => {
            let mut off = 12;
            let mut t = be16(f, off);
            while matches!(t, Some(0x8100 | 0x88a8)) {
                off += 4;
                t = be16(f, off);
            }
            t.and_then(|t| by_type(t, &f[off + 2..]))
        }
        DataLink::LINUX_SLL => be16(f, 14).and_then(|t| by_type(t, &f[16..])),
        DataLink::LINUX_SLL2 => match (be16(f, 0), f.get(20..)) {
            (Some(t), Some(rest)) => by_type(t, rest),
            _ => None,
        },
        DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => Some(f),
        DataLink::NULL | DataLink::LOOP => f.get(4..),
        other => return Err(format!("link type {other:?} not supported")),
    })
}

/// The TCP segment in a frame (data-carrying or SYN), if any.
fn frame_segment(link: DataLink, f: &[u8], ts_ns: u64) -> Result<Option<Segment>, String> {
    Ok(ip_of(link, f)?.and_then(|ip| ip_segment(ip, ts_ns)))
}

/// The TCP segment of an IP packet; the payload length is the one on the wire even if the
/// capture was cut (snap length) after the TCP header.
pub fn ip_segment(ip: &[u8], ts_ns: u64) -> Option<Segment> {
    let (sl, _) = LaxIpSlice::from_slice(ip).ok()?;
    let p = sl.payload();
    if p.ip_number != IpNumber::TCP || p.fragmented {
        return None;
    }
    let declared = match &sl {
        LaxIpSlice::Ipv4(v4) => v4.header().total_len() as usize,
        LaxIpSlice::Ipv6(v6) => 40 + v6.header().payload_length() as usize,
    };
    let missing = if p.incomplete {
        declared.saturating_sub(ip.len())
    } else {
        0
    };
    let tcp = TcpSlice::from_slice(p.payload).ok()?;
    let len = u32::try_from(tcp.payload().len() + missing).ok()?;
    if len == 0 && !tcp.syn() {
        return None;
    }
    Some(Segment {
        ts_ns,
        src: SocketAddr::new(sl.source_addr(), tcp.source_port()),
        dst: SocketAddr::new(sl.destination_addr(), tcp.destination_port()),
        seq: tcp.sequence_number(),
        len,
        syn: tcp.syn(),
    })
}

#[cfg(test)]
#[path = "pcap_read_tests.rs"]
pub(crate) mod tests;
