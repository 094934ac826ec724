//! owd-bulk result (the test bed's common result format): goodput, OWD percentiles, duration,
//! bytes, sha256 and the binned series, for the sender, the receiver and the pcap mode.

use super::pcap_match::{MatchCounters, MatchResult};
use super::reasm::Sample;
use super::stats::{mbps, owd_stats, series, Bin, OwdStats, Point};
use serde::{Deserialize, Serialize};

/// One side's result. Fields that a side cannot measure are null (the sender's OWD).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// "send", "recv" or "pcap-owd".
    pub role: String,
    /// `bytes` × 8 / `duration_s`, in 10^6 bit/s.
    pub goodput_mbps: f64,
    /// Per-chunk one-way delay (receiver; per segment in pcap mode); null on the sender.
    pub owd_ms: Option<OwdStats>,
    /// Receiver: connection established → last byte read. Sender: connection established →
    /// the receiver's confirmation read. pcap: first → last data segment at the receiver.
    pub duration_s: f64,
    /// Stream bytes (chunk headers included); TCP payload bytes in pcap mode.
    pub bytes: u64,
    /// sha256 of the whole stream (hex); null in pcap mode.
    pub sha256: Option<String>,
    /// Chunks sent / verified (segments matched in pcap mode).
    pub chunks: u64,
    /// Bin width of `series`, ms.
    pub bin_ms: u64,
    /// Per-bin goodput and OWD (the sender's bins: bytes written; OWD null).
    pub series: Vec<Bin>,
    /// The other end's address (`ip:port`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Sender: the congestion control in effect on the socket.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cc: Option<String>,
    /// Sender: TCP_NOTSENT_LOWAT in effect, bytes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notsent_lowat: Option<u32>,
    /// Time the connection was established, CLOCK_REALTIME seconds (aligns the series with
    /// the emulator's trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_unix_s: Option<f64>,
    /// pcap mode: what the segment matcher saw.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap: Option<MatchCounters>,
}

impl Report {
    /// Receiver result from the verified chunks; `start_ns` = connection established,
    /// `end_ns` = last byte read (CLOCK_REALTIME ns).
    pub fn receiver(
        samples: &[Sample],
        bytes: u64,
        sha256: &[u8; 32],
        start_ns: u64,
        end_ns: u64,
        bin_ms: u64,
    ) -> Self {
        let points: Vec<Point> = samples
            .iter()
            .map(|s| Point {
                t_ns: s.recv_ns.saturating_sub(start_ns),
                bytes: s.len as u64,
                owd_ns: Some(s.owd_ns()),
            })
            .collect();
        let dur = end_ns.saturating_sub(start_ns);
        Self {
            role: "recv".into(),
            goodput_mbps: mbps(bytes, dur),
            owd_ms: owd_stats(samples.iter().map(Sample::owd_ns)),
            duration_s: dur as f64 / 1e9,
            bytes,
            sha256: Some(hex::encode(sha256)),
            chunks: samples.len() as u64,
            bin_ms,
            series: series(&points, bin_ms * 1_000_000, dur),
            peer: None,
            cc: None,
            notsent_lowat: None,
            start_unix_s: Some(start_ns as f64 / 1e9),
            pcap: None,
        }
    }

    /// Sender result from the writes (`(time ns, bytes)`); `end_ns` = confirmation read.
    #[allow(clippy::too_many_arguments)]
    pub fn sender(
        writes: &[(u64, u64)],
        bytes: u64,
        chunks: u64,
        sha256: &[u8; 32],
        start_ns: u64,
        end_ns: u64,
        bin_ms: u64,
    ) -> Self {
        let points: Vec<Point> = writes
            .iter()
            .map(|&(t, b)| Point {
                t_ns: t.saturating_sub(start_ns),
                bytes: b,
                owd_ns: None,
            })
            .collect();
        let dur = end_ns.saturating_sub(start_ns);
        Self {
            role: "send".into(),
            goodput_mbps: mbps(bytes, dur),
            owd_ms: None,
            duration_s: dur as f64 / 1e9,
            bytes,
            sha256: Some(hex::encode(sha256)),
            chunks,
            bin_ms,
            series: series(&points, bin_ms * 1_000_000, dur),
            peer: None,
            cc: None,
            notsent_lowat: None,
            start_unix_s: Some(start_ns as f64 / 1e9),
            pcap: None,
        }
    }

    /// pcap-mode result: OWD per matched segment, goodput of the unique payload bytes between
    /// the first and the last data segment at the receiver.
    pub fn pcap(m: &MatchResult, bin_ms: u64) -> Self {
        let start = m.first_ns;
        let mut points: Vec<Point> = m
            .arrivals
            .iter()
            .map(|&(t, b)| Point {
                t_ns: t.saturating_sub(start),
                bytes: b,
                owd_ns: None,
            })
            .collect();
        points.extend(m.samples.iter().map(|s| Point {
            t_ns: s.recv_ns.saturating_sub(start),
            bytes: 0,
            owd_ns: Some(s.recv_ns as i64 - s.send_ns as i64),
        }));
        let dur = m.last_ns.saturating_sub(start);
        Self {
            role: "pcap-owd".into(),
            goodput_mbps: mbps(m.bytes, dur),
            owd_ms: owd_stats(
                m.samples
                    .iter()
                    .map(|s| s.recv_ns as i64 - s.send_ns as i64),
            ),
            duration_s: dur as f64 / 1e9,
            bytes: m.bytes,
            sha256: None,
            chunks: m.samples.len() as u64,
            bin_ms,
            series: series(&points, bin_ms * 1_000_000, dur),
            peer: None,
            cc: None,
            notsent_lowat: None,
            start_unix_s: Some(start as f64 / 1e9),
            pcap: Some(m.counters.clone()),
        }
    }

    /// One-line human summary (stderr).
    pub fn summary(&self) -> String {
        let owd = self.owd_ms.as_ref().map_or(String::new(), |o| {
            format!(
                ", OWD ms p50 {:.2} p95 {:.2} p99 {:.2} max {:.2}",
                o.p50, o.p95, o.p99, o.max
            )
        });
        format!(
            "owd-bulk {}: {} bytes in {:.3} s, {:.2} Mbit/s{owd}, sha256 {}",
            self.role,
            self.bytes,
            self.duration_s,
            self.goodput_mbps,
            self.sha256.as_deref().unwrap_or("-")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receiver_report_has_every_field() {
        let ms = 1_000_000u64;
        let s0 = 1_700_000_000_000_000_000u64;
        let samples: Vec<Sample> = (0..10)
            .map(|i| Sample {
                index: i,
                len: 16384,
                stamp_ns: s0 + i * 30 * ms,
                recv_ns: s0 + i * 30 * ms + (i + 1) * ms,
            })
            .collect();
        let r = Report::receiver(&samples, 163_840, &[0xab; 32], s0, s0 + 300 * ms, 100);
        assert_eq!(r.owd_ms.as_ref().unwrap().min, 1.0);
        assert_eq!(r.owd_ms.as_ref().unwrap().max, 10.0);
        assert_eq!(r.series.len(), 3);
        assert!((r.goodput_mbps - 163_840.0 * 8.0 / 0.3 / 1e6).abs() < 1e-9);
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        for k in [
            "goodput_mbps",
            "owd_ms",
            "duration_s",
            "bytes",
            "sha256",
            "series",
        ] {
            assert!(!v[k].is_null(), "{k} missing: {v}");
        }
        for k in ["p50", "p95", "p99", "min", "max", "mean"] {
            assert!(v["owd_ms"][k].is_f64(), "owd_ms.{k}");
        }
        for k in ["t_s", "goodput_mbps", "owd_ms_p50", "owd_ms_max"] {
            assert!(!v["series"][0][k].is_null(), "series.{k}");
        }
        let back: Report = serde_json::from_value(v).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn sender_report_has_null_owd() {
        let r = Report::sender(&[(10, 100), (20, 100)], 200, 2, &[0; 32], 0, 1_000, 100);
        let v: serde_json::Value = serde_json::to_value(&r).unwrap();
        assert!(v["owd_ms"].is_null());
        assert!(v["series"][0]["owd_ms_p50"].is_null());
        assert_eq!(v["bytes"], 200);
        assert_eq!(v["sha256"].as_str().unwrap().len(), 64);
    }
}
