//! owd-bulk pcap mode core (pure): picks the bulk TCP flow in the sender-side and the
//! receiver-side captures, matches the receiver's data segments to the sender's first
//! transmissions by sequence range and yields one OWD sample per matched segment.

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;

/// One TCP segment of a capture (any direction; `len` = TCP payload bytes on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Capture timestamp, ns since the epoch.
    pub ts_ns: u64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub len: u32,
    pub syn: bool,
}

/// What the matcher saw and did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MatchCounters {
    /// The flow used in the sender capture, `src -> dst`.
    pub sender_flow: String,
    /// The flow used in the receiver capture.
    pub receiver_flow: String,
    /// Data segments of the flow in the sender capture.
    pub sender_segments: u64,
    /// Of those, segments repeating bytes already sent (retransmissions, whole or partial).
    pub sender_retransmissions: u64,
    /// Data segments of the flow in the receiver capture.
    pub receiver_segments: u64,
    /// Receiver segments matched to a first transmission (an OWD sample each).
    pub matched: u64,
    /// Of the matched, those whose boundaries differ from the sender's segment holding their
    /// last byte (GSO/GRO or a resegmenting middlebox).
    pub resegmented: u64,
    /// Receiver segments with retransmitted bytes (which transmission arrived is unknown:
    /// no sample, Karn's rule).
    pub ambiguous: u64,
    /// Receiver segments carrying only bytes already received.
    pub duplicates: u64,
    /// Receiver segments whose last byte the sender capture never showed.
    pub unmatched: u64,
}

/// A matched segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SegSample {
    pub send_ns: u64,
    pub recv_ns: u64,
    /// Payload bytes this segment added at the receiver.
    pub bytes: u64,
}

/// Result of a match.
#[derive(Debug, Clone, PartialEq)]
pub struct MatchResult {
    pub counters: MatchCounters,
    pub samples: Vec<SegSample>,
    /// (time ns, new bytes) of every receiver segment adding bytes, for the series.
    pub arrivals: Vec<(u64, u64)>,
    /// Unique payload bytes seen at the receiver.
    pub bytes: u64,
    /// First and last receiver data segment, ns.
    pub first_ns: u64,
    pub last_ns: u64,
}

/// Why no match could be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MatchError {
    #[error("no TCP data segments{port} in the {side} capture")]
    NoFlow { side: &'static str, port: String },
}

type Flow = (SocketAddr, SocketAddr);

/// The directional flow with the most payload bytes (ports filtered by `port`), ties broken by
/// the flow key so the choice is deterministic.
fn biggest_flow(segs: &[Segment], port: Option<u16>) -> Option<Flow> {
    let mut bytes: HashMap<Flow, u64> = HashMap::new();
    for s in segs.iter().filter(|s| s.len > 0) {
        if port.is_none_or(|p| s.src.port() == p || s.dst.port() == p) {
            *bytes.entry((s.src, s.dst)).or_default() += s.len as u64;
        }
    }
    bytes
        .into_iter()
        .max_by_key(|&(f, b)| (b, f))
        .map(|(f, _)| f)
}

/// Covered byte ranges, merged (start → end).
#[derive(Debug, Default)]
struct RangeSet(BTreeMap<u64, u64>);

impl RangeSet {
    fn overlaps(&self, s: u64, e: u64) -> bool {
        self.0
            .range(..e)
            .next_back()
            .is_some_and(|(_, &end)| end > s)
    }

    /// Adds [s, e); returns how many of its bytes were not covered before.
    fn insert(&mut self, s: u64, e: u64) -> u64 {
        let touching: Vec<(u64, u64)> = self
            .0
            .range(..=e)
            .rev()
            .take_while(|(_, &end)| end >= s)
            .map(|(&k, &end)| (k, end))
            .collect();
        let (mut ms, mut me, mut covered) = (s, e, 0);
        for (k, end) in touching {
            self.0.remove(&k);
            covered += end.min(e).saturating_sub(k.max(s));
            ms = ms.min(k);
            me = me.max(end);
        }
        self.0.insert(ms, me);
        (e - s) - covered
    }
}

/// Unwraps 32-bit sequence numbers to a 64-bit stream position near the previous one.
#[derive(Debug)]
struct Unwrap(u64);

impl Unwrap {
    fn new(base: u32) -> Self {
        Self((1u64 << 32) + base as u64)
    }
    fn at(&mut self, seq: u32) -> u64 {
        let d = seq.wrapping_sub(self.0 as u32) as i32 as i64;
        let v = (self.0 as i64 + d).max(0) as u64;
        self.0 = self.0.max(v);
        v
    }
}

/// Matches the receiver capture's data segments to the sender capture's first transmissions.
pub fn match_segments(
    sender: &[Segment],
    receiver: &[Segment],
    port: Option<u16>,
) -> Result<MatchResult, MatchError> {
    let no = |side| MatchError::NoFlow {
        side,
        port: port.map_or(String::new(), |p| format!(" with port {p}")),
    };
    let sf = biggest_flow(sender, port).ok_or(no("sender"))?;
    let in_recv = receiver.iter().any(|s| (s.src, s.dst) == sf && s.len > 0);
    let rf = if in_recv {
        sf
    } else {
        biggest_flow(receiver, port).ok_or(no("receiver"))?
    };
    let mut c = MatchCounters {
        sender_flow: format!("{} -> {}", sf.0, sf.1),
        receiver_flow: format!("{} -> {}", rf.0, rf.1),
        ..Default::default()
    };
    let sflow = sender.iter().filter(|s| (s.src, s.dst) == sf);
    let syn = sflow.clone().find(|s| s.syn).map(|s| s.seq.wrapping_add(1));
    let base = syn
        .or_else(|| sflow.clone().find(|s| s.len > 0).map(|s| s.seq))
        .expect("flow has data");
    // Sender: first transmissions by start, and every byte range sent more than once.
    let (mut sent, mut retx, mut first) =
        (RangeSet::default(), RangeSet::default(), BTreeMap::new());
    let mut uw = Unwrap::new(base);
    for s in sflow.filter(|s| s.len > 0) {
        c.sender_segments += 1;
        let a = uw.at(s.seq);
        let e = a + s.len as u64;
        if sent.insert(a, e) == s.len as u64 {
            first.insert(a, (e, s.ts_ns));
        } else {
            c.sender_retransmissions += 1;
            retx.insert(a, e);
        }
    }
    let mut got = RangeSet::default();
    let mut uw = Unwrap::new(base);
    let mut r = MatchResult {
        counters: MatchCounters::default(),
        samples: Vec::new(),
        arrivals: Vec::new(),
        bytes: 0,
        first_ns: u64::MAX,
        last_ns: 0,
    };
    for s in receiver
        .iter()
        .filter(|s| (s.src, s.dst) == rf && s.len > 0)
    {
        c.receiver_segments += 1;
        let a = uw.at(s.seq);
        let e = a + s.len as u64;
        let new = got.insert(a, e);
        r.first_ns = r.first_ns.min(s.ts_ns);
        r.last_ns = r.last_ns.max(s.ts_ns);
        if new > 0 {
            r.bytes += new;
            r.arrivals.push((s.ts_ns, new));
        }
        if retx.overlaps(a, e) {
            c.ambiguous += 1;
            continue;
        }
        if new == 0 {
            c.duplicates += 1;
            continue;
        }
        match first.range(..e).next_back() {
            Some((&fs, &(fe, ts))) if fe >= e => {
                c.matched += 1;
                if (fs, fe) != (a, e) {
                    c.resegmented += 1;
                }
                r.samples.push(SegSample {
                    send_ns: ts,
                    recv_ns: s.ts_ns,
                    bytes: new,
                });
            }
            _ => c.unmatched += 1,
        }
    }
    if r.first_ns == u64::MAX {
        r.first_ns = 0;
    }
    r.counters = c;
    Ok(r)
}

#[cfg(test)]
#[path = "pcap_match_tests.rs"]
mod tests;
