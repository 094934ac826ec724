//! A G.711 call's packets and figures (pure): the RTP-sized datagram the `voip` application
//! sends every 20 ms each way (encode/decode), and one direction's statistics from what was
//! sent and what arrived (one-way delay, RFC 3550 jitter, loss with the late rule, R and MOS).
//! `bench::voip` owns the sockets.

use super::cell::{CallDir, Pct3};
use super::quality::{mos, mouth_to_ear_ms, r_factor, Jitter};

/// G.711 at 8 kHz: one packet per 20 ms, 160 samples of one byte each.
pub const PERIOD_MS: u64 = 20;
pub const SAMPLES: usize = 160;
/// RTP header (RFC 3550 §5.1, no CSRC, no extension).
pub const RTP_HEADER: usize = 12;
/// UDP payload of every packet: the RTP header and 20 ms of G.711.
pub const PACKET: usize = RTP_HEADER + SAMPLES;
/// RTP payload type 0: PCMU (G.711 µ-law, RFC 3551).
const PT_PCMU: u8 = 0;
/// µ-law silence, filling the audio after the probe's own fields.
const SILENCE: u8 = 0xff;

/// How many packets back the jitter buffer looks to place its playout point (1 s of audio).
pub const PLAYOUT_WINDOW: usize = 50;

/// What one datagram carries besides audio: the RTP fields, then (in the first 12 audio bytes)
/// the packet's index (32 bit: the RTP sequence number wraps) and its send time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Probe {
    pub ssrc: u32,
    pub index: u32,
    /// Send time, ns on a clock both ends share (one host: CLOCK_REALTIME).
    pub sent_ns: u64,
}

impl Probe {
    /// The datagram: RTP v2, PT 0, sequence = index mod 2^16, timestamp = index × 160.
    pub fn encode(&self) -> [u8; PACKET] {
        let mut b = [SILENCE; PACKET];
        b[0] = 0x80;
        b[1] = PT_PCMU;
        b[2..4].copy_from_slice(&(self.index as u16).to_be_bytes());
        let ts = self.index.wrapping_mul(SAMPLES as u32);
        b[4..8].copy_from_slice(&ts.to_be_bytes());
        b[8..12].copy_from_slice(&self.ssrc.to_be_bytes());
        b[12..16].copy_from_slice(&self.index.to_be_bytes());
        b[16..24].copy_from_slice(&self.sent_ns.to_be_bytes());
        b
    }

    /// A datagram of ours (size, RTP version, payload type, sequence consistent with the
    /// index), or `None`.
    pub fn decode(b: &[u8]) -> Option<Probe> {
        if b.len() != PACKET || b[0] != 0x80 || b[1] != PT_PCMU {
            return None;
        }
        let index = u32::from_be_bytes(b[12..16].try_into().ok()?);
        let seq = u16::from_be_bytes(b[2..4].try_into().ok()?);
        if seq != index as u16 {
            return None;
        }
        Some(Probe {
            ssrc: u32::from_be_bytes(b[8..12].try_into().ok()?),
            index,
            sent_ns: u64::from_be_bytes(b[16..24].try_into().ok()?),
        })
    }
}

/// One packet as the listener got it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    pub index: u32,
    pub sent_ns: u64,
    pub recv_ns: u64,
}

impl Arrival {
    fn owd_ms(&self) -> f64 {
        (self.recv_ns as f64 - self.sent_ns as f64) / 1e6
    }
}

/// One direction of a call from the `sent` packets (indices `0..sent`) and the `arrivals` in
/// the order they arrived (duplicates count once).
///
/// - OWD percentiles (nearest rank) are over every packet that arrived, late ones included.
/// - Jitter is RFC 3550's interarrival jitter over the arrivals, in arrival order.
/// - **Loss** counts the packets that never arrived and those that arrived too late for an
///   adaptive jitter buffer: the buffer plays packet *i* out at the median OWD of the
///   [`PLAYOUT_WINDOW`] packets that arrived before it plus twice the RFC 3550 jitter as of
///   then (the same 2 × jitter allowance the E-model is charged with); a packet whose OWD
///   exceeds that playout delay is late. The first packet sets the buffer and is never late.
/// - R (G.107, G.711 with PLC) from the mouth-to-ear delay OWD p50 + 2 × jitter and that
///   loss; MOS from R.
///
/// `None` if nothing arrived (a call with no audio has no delay to report).
pub fn direction(sent: u64, arrivals: &[Arrival]) -> Option<CallDir> {
    let mut seen = std::collections::HashSet::new();
    let mut jitter = Jitter::default();
    let mut recent: std::collections::VecDeque<f64> = Default::default();
    let mut owds = Vec::with_capacity(arrivals.len());
    let mut late = 0u64;
    for a in arrivals {
        if u64::from(a.index) >= sent || !seen.insert(a.index) {
            continue;
        }
        let owd = a.owd_ms();
        if !recent.is_empty() {
            let mut w: Vec<f64> = recent.iter().copied().collect();
            w.sort_by(f64::total_cmp);
            let playout = pct(&w, 50.0) + 2.0 * jitter.value();
            if owd > playout {
                late += 1;
            }
        }
        jitter.on_packet(owd);
        if recent.len() == PLAYOUT_WINDOW {
            recent.pop_front();
        }
        recent.push_back(owd);
        owds.push(owd);
    }
    if owds.is_empty() {
        return None;
    }
    owds.sort_by(f64::total_cmp);
    let arrived = owds.len() as u64;
    let loss = (sent - arrived + late) as f64 / sent as f64;
    let owd_ms = Pct3 {
        p50: pct(&owds, 50.0),
        p95: pct(&owds, 95.0),
        p99: pct(&owds, 99.0),
    };
    let r = r_factor(mouth_to_ear_ms(owd_ms.p50, jitter.value()), loss);
    Some(CallDir {
        owd_ms,
        jitter_ms: jitter.value(),
        loss,
        packets_sent: sent,
        r,
        mos: mos(r),
    })
}

/// Nearest-rank percentile of sorted, non-empty values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Packet `i` sent at i × 20 ms, arriving `owd_ms(i)` later (None: lost), in index order.
    fn stream(n: u32, owd_ms: impl Fn(u32) -> Option<f64>) -> Vec<Arrival> {
        (0..n)
            .filter_map(|i| {
                let sent_ns = 1_000 * MS + u64::from(i) * PERIOD_MS * MS;
                owd_ms(i).map(|d| Arrival {
                    index: i,
                    sent_ns,
                    recv_ns: sent_ns + (d * 1e6) as u64,
                })
            })
            .collect()
    }

    #[test]
    fn packet_round_trips_and_foreign_datagrams_are_refused() {
        let p = Probe {
            ssrc: 0xdead_beef,
            index: 70_000,
            sent_ns: 1_700_000_000_123_456_789,
        };
        let b = p.encode();
        assert_eq!(b.len(), 172);
        assert_eq!(b[0] >> 6, 2, "RTP version 2");
        assert_eq!(
            u16::from_be_bytes([b[2], b[3]]),
            (70_000u32 % 65_536) as u16
        );
        assert_eq!(u32::from_be_bytes([b[4], b[5], b[6], b[7]]), 70_000 * 160);
        assert_eq!(Probe::decode(&b), Some(p));
        assert_eq!(Probe::decode(&b[..171]), None);
        let mut other = b;
        other[1] = 8; // PCMA
        assert_eq!(Probe::decode(&other), None);
        let mut bad_seq = b;
        bad_seq[3] ^= 1;
        assert_eq!(Probe::decode(&bad_seq), None);
    }

    #[test]
    fn constant_delay_no_loss_is_the_e_model_at_that_delay() {
        let a = stream(500, |_| Some(30.0));
        let d = direction(500, &a).unwrap();
        assert_eq!(d.packets_sent, 500);
        assert!((d.owd_ms.p50 - 30.0).abs() < 1e-6 && (d.owd_ms.p99 - 30.0).abs() < 1e-6);
        assert!(d.jitter_ms.abs() < 1e-6);
        assert_eq!(d.loss, 0.0);
        assert!((d.r - (93.2 - 0.024 * 30.0)).abs() < 1e-6, "{}", d.r);
        assert!((d.mos - mos(d.r)).abs() < 1e-12);
    }

    #[test]
    fn missing_packets_are_loss_and_duplicates_count_once() {
        // Every 10th packet lost: 10 %.
        let mut a = stream(1000, |i| (i % 10 != 0).then_some(40.0));
        a.push(a[5]);
        let d = direction(1000, &a).unwrap();
        assert!((d.loss - 0.1).abs() < 1e-12, "{}", d.loss);
        let ie_eff = 95.0 * 10.0 / (10.0 + 25.1);
        assert!(
            (d.r - (93.2 - 0.024 * 40.0 - ie_eff)).abs() < 1e-6,
            "{}",
            d.r
        );
    }

    #[test]
    fn a_delay_spike_beyond_the_buffer_is_late_and_counts_as_lost() {
        // 20 ms steady; packets 100..105 come 200 ms late: the buffer (median 20 ms + 2 J)
        // cannot play them, the rest are on time.
        let a = stream(400, |i| {
            Some(if (100..105).contains(&i) { 220.0 } else { 20.0 })
        });
        let d = direction(400, &a).unwrap();
        assert!((d.loss - 5.0 / 400.0).abs() < 1e-12, "{}", d.loss);
        assert!(d.jitter_ms > 0.0);
        assert!((d.owd_ms.p99 - 220.0).abs() < 1e-6);
        assert!((d.owd_ms.p50 - 20.0).abs() < 1e-6);
    }

    #[test]
    fn a_step_in_delay_is_late_until_the_buffer_follows() {
        // 20 ms, then 60 ms from packet 200 on: the median of the last 50 (the 25th) stays
        // 20 ms while 25 or more of them are at 20 ms, so packets 200..=225 are late (the
        // jitter allowance stays below 40 ms).
        let a = stream(400, |i| Some(if i < 200 { 20.0 } else { 60.0 }));
        let d = direction(400, &a).unwrap();
        assert!((d.loss - 26.0 / 400.0).abs() < 1e-12, "{}", d.loss);
    }

    #[test]
    fn nothing_arrived_has_no_figures_and_strays_are_ignored() {
        assert_eq!(direction(100, &[]), None);
        let stray = stream(1, |_| Some(10.0));
        assert_eq!(direction(0, &stray), None);
    }
}
