//! Pure model of the tc classifier's rewrite decision (for tests and fuzzing; no kernel).
//!
//! Mirrors `bpf/starpep_window.bpf.c` step for step: the same parse (one optional VLAN tag,
//! IPv4 with options, IPv6 without extension headers), the same key, the same window rule and
//! the kernel's incremental checksum update (`inet_proto_csum_replace4` -> `csum_replace4`).
//! Change both files together.

use crate::flow::{FlowKey, FAMILY_V4, FAMILY_V6};

const ETH_HLEN: usize = 14;
const VLAN_HLEN: usize = 4;
const ETH_P_IP: u16 = 0x0800;
const ETH_P_IPV6: u16 = 0x86DD;
const ETH_P_8021Q: u16 = 0x8100;
const ETH_P_8021AD: u16 = 0x88A8;
const PROTO_TCP: u8 = 6;
const TCP_FLAG_SYN: u8 = 0x02;
const TCP_FLAG_RST: u8 = 0x04;
const TCP_OFF_WINDOW: usize = 14;
const TCP_OFF_CSUM: usize = 16;
/// RFC 7323: the largest window scale; larger values from userspace are clamped to it.
pub const MAX_WSCALE: u8 = 14;

/// Why a frame was passed without a map lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Skip {
    /// Too short for the header being read.
    Truncated,
    /// Not IPv4/IPv6 (ethertype, or IP version nibble, or they disagree).
    NotIp,
    /// IPv4 header length below 5 words.
    BadIhl,
    /// An IPv4 fragment (MF set or a non-zero offset).
    Fragment,
    /// IPv4 protocol is not TCP.
    NotTcp,
    /// IPv6 next header is not TCP (extension headers are not walked).
    Ipv6NotTcp,
}

/// What the program did with one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Not looked up (see [`Skip`]).
    Skipped(Skip),
    /// A TCP segment of a flow without a map entry.
    NoEntry,
    /// SYN or RST of a controlled flow: counted as seen, never touched.
    Control,
    /// Controlled flow, the window was already at or below the limit.
    Kept { window: u16 },
    /// Controlled flow, the window field was lowered (and the checksum updated).
    Rewritten { old: u16, new: u16 },
}

/// How the checksum field is treated, as the kernel does by `skb->ip_summed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Checksum {
    /// The field holds the full checksum (forwarded, or computed in software): RFC 1624 update.
    Complete,
    /// CHECKSUM_PARTIAL (locally generated, offloaded): the field holds only the pseudo-header
    /// sum and is left alone; the final sum is computed later over the new bytes.
    Partial,
}

/// The window field to write: `min(orig, max(1, min(0xffff, window >> min(wscale, 14))))`.
pub fn limited_window(orig: u16, window: u32, rcv_wscale: u8) -> u16 {
    let ws = u32::from(rcv_wscale.min(MAX_WSCALE));
    let limit = (window >> ws).clamp(1, 0xffff);
    if u32::from(orig) <= limit {
        orig
    } else {
        limit as u16
    }
}

fn csum_add(a: u32, b: u32) -> u32 {
    let res = a.wrapping_add(b);
    res.wrapping_add(u32::from(res < b))
}

fn csum_fold(sum: u32) -> u16 {
    let s = (sum & 0xffff) + (sum >> 16);
    let s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

/// The kernel's `csum_replace4(sum, from, to)` for 16-bit `from`/`to` (as
/// `inet_proto_csum_replace2` calls it), on big-endian field values.
pub fn csum_replace2(sum: u16, from: u16, to: u16) -> u16 {
    let tmp = csum_add(!u32::from(sum), !u32::from(from));
    csum_fold(csum_add(tmp, u32::from(to)))
}

fn be16(b: &[u8], off: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(off)?, *b.get(off + 1)?]))
}

/// [`rewrite_with`] with a complete checksum (what a captured frame shows).
pub fn rewrite(
    frame: &mut [u8],
    l2: bool,
    lookup: impl Fn(&FlowKey) -> Option<(u32, u8)>,
) -> Outcome {
    rewrite_with(frame, l2, Checksum::Complete, lookup)
}

/// Runs the classifier's logic on `frame`: Ethernet framing (`starpep_window_eth`) if `l2`,
/// else raw IP (`starpep_window_l3`). `lookup` plays the map: the key's entry as
/// (window bytes, rcv_wscale). Never panics, whatever the bytes.
pub fn rewrite_with(
    frame: &mut [u8],
    l2: bool,
    csum: Checksum,
    lookup: impl Fn(&FlowKey) -> Option<(u32, u8)>,
) -> Outcome {
    if !l2 {
        return handle_ip(frame, 0, 0, csum, lookup);
    }
    let Some(mut proto) = be16(frame, 12) else {
        return Outcome::Skipped(Skip::Truncated);
    };
    let mut off = ETH_HLEN;
    if proto == ETH_P_8021Q || proto == ETH_P_8021AD {
        let Some(inner) = be16(frame, 16) else {
            return Outcome::Skipped(Skip::Truncated);
        };
        proto = inner;
        off += VLAN_HLEN;
    }
    match proto {
        ETH_P_IP => handle_ip(frame, off, 4, csum, lookup),
        ETH_P_IPV6 => handle_ip(frame, off, 6, csum, lookup),
        _ => Outcome::Skipped(Skip::NotIp),
    }
}

fn handle_ip(
    frame: &mut [u8],
    l3: usize,
    want_version: u8,
    csum: Checksum,
    lookup: impl Fn(&FlowKey) -> Option<(u32, u8)>,
) -> Outcome {
    let Some(&first) = frame.get(l3) else {
        return Outcome::Skipped(Skip::Truncated);
    };
    let version = first >> 4;
    if want_version != 0 && version != want_version {
        return Outcome::Skipped(Skip::NotIp);
    }
    let mut key = FlowKey::default();
    let l4 = match version {
        4 => {
            let Some(ip) = frame.get(l3..l3 + 20) else {
                return Outcome::Skipped(Skip::Truncated);
            };
            let ihl = usize::from(ip[0] & 0x0f);
            if ihl < 5 {
                return Outcome::Skipped(Skip::BadIhl);
            }
            if ip[6] & 0x3f != 0 || ip[7] != 0 {
                return Outcome::Skipped(Skip::Fragment);
            }
            if ip[9] != PROTO_TCP {
                return Outcome::Skipped(Skip::NotTcp);
            }
            key.family = FAMILY_V4;
            key.saddr[..4].copy_from_slice(&ip[12..16]);
            key.daddr[..4].copy_from_slice(&ip[16..20]);
            l3 + ihl * 4
        }
        6 => {
            let Some(ip6) = frame.get(l3..l3 + 40) else {
                return Outcome::Skipped(Skip::Truncated);
            };
            if ip6[6] != PROTO_TCP {
                return Outcome::Skipped(Skip::Ipv6NotTcp);
            }
            key.family = FAMILY_V6;
            key.saddr.copy_from_slice(&ip6[8..24]);
            key.daddr.copy_from_slice(&ip6[24..40]);
            l3 + 40
        }
        _ => return Outcome::Skipped(Skip::NotIp),
    };
    let Some(tcp) = frame.get(l4..l4 + 20) else {
        return Outcome::Skipped(Skip::Truncated);
    };
    key.sport.copy_from_slice(&tcp[0..2]);
    key.dport.copy_from_slice(&tcp[2..4]);
    let Some((window, rcv_wscale)) = lookup(&key) else {
        return Outcome::NoEntry;
    };
    if tcp[13] & (TCP_FLAG_SYN | TCP_FLAG_RST) != 0 {
        return Outcome::Control;
    }
    let orig = u16::from_be_bytes([tcp[TCP_OFF_WINDOW], tcp[TCP_OFF_WINDOW + 1]]);
    let new = limited_window(orig, window, rcv_wscale);
    if new == orig {
        return Outcome::Kept { window: orig };
    }
    if csum == Checksum::Complete {
        let c = l4 + TCP_OFF_CSUM;
        let sum = u16::from_be_bytes([frame[c], frame[c + 1]]);
        frame[c..c + 2].copy_from_slice(&csum_replace2(sum, orig, new).to_be_bytes());
    }
    let w = l4 + TCP_OFF_WINDOW;
    frame[w..w + 2].copy_from_slice(&new.to_be_bytes());
    Outcome::Rewritten { old: orig, new }
}

#[path = "model_check.rs"]
mod check;
pub use check::check_rewrite;

#[cfg(test)]
#[path = "model_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "model_fuzz_tests.rs"]
mod fuzz_tests;

#[cfg(test)]
#[path = "model_prop_tests.rs"]
mod prop_tests;
