//! Link traces read from files: mahimahi delivery-opportunity traces (capacity) and
//! 10 ms-slot one-way delay traces, both wrapping; plus reconfiguration detection in a delay trace.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// Bytes one mahimahi delivery opportunity carries (mahimahi uses 1504 = MTU + TUN header;
/// we count the IP packet, so a 1500-byte MTU packet uses exactly one opportunity).
pub const OPPORTUNITY_BYTES: usize = 1500;

/// The slot length of a delay trace (one line per slot).
pub const DELAY_SLOT: Duration = Duration::from_millis(10);

/// A slot-to-slot delay increase of at least this much marks a reconfiguration.
pub const RECONFIG_JUMP_MS: u32 = 10;

/// Jumps closer than this to the previous detected one belong to the same reconfiguration.
pub const RECONFIG_MERGE: Duration = Duration::from_secs(1);

/// Errors reading a trace file; `Display` is `file:line: message`.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("read trace {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}:{line}: {msg}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        msg: String,
    },
    #[error("{}: {msg}", path.display())]
    Invalid { path: PathBuf, msg: String },
}

/// Parses one integer a line; blank lines are skipped, anything else is an error.
fn parse_lines(text: &str, path: &Path) -> Result<Vec<(usize, u32)>, TraceError> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if l.is_empty() {
            continue;
        }
        let v = l.parse::<u32>().map_err(|_| TraceError::Parse {
            path: path.to_path_buf(),
            line: i + 1,
            msg: format!("{l:?} is not a non-negative integer (milliseconds)"),
        })?;
        out.push((i + 1, v));
    }
    if out.is_empty() {
        return Err(TraceError::Invalid {
            path: path.to_path_buf(),
            msg: "empty trace".into(),
        });
    }
    Ok(out)
}

fn read(path: &Path) -> Result<String, TraceError> {
    std::fs::read_to_string(path).map_err(|source| TraceError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// A mahimahi capacity trace: line k is the ms timestamp of one [`OPPORTUNITY_BYTES`] delivery
/// opportunity. It wraps as mahimahi's does: opportunity k is at
/// `sched[k % n] + (k / n) * period` with `period` = the last timestamp.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateTrace {
    path: PathBuf,
    sched_ms: Vec<u32>,
}

impl RateTrace {
    /// Reads and checks a trace file.
    pub fn load(path: &Path) -> Result<RateTrace, TraceError> {
        RateTrace::parse(&read(path)?, path)
    }

    /// Parses trace text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<RateTrace, TraceError> {
        let lines = parse_lines(text, path)?;
        let mut prev = 0;
        for &(line, v) in &lines {
            if v < prev {
                return Err(TraceError::Parse {
                    path: path.to_path_buf(),
                    line,
                    msg: format!("timestamp {v} is before the previous one ({prev})"),
                });
            }
            prev = v;
        }
        if prev == 0 {
            return Err(TraceError::Invalid {
                path: path.to_path_buf(),
                msg: "the trace must last a nonzero time (last timestamp is 0)".into(),
            });
        }
        Ok(RateTrace {
            path: path.to_path_buf(),
            sched_ms: lines.into_iter().map(|(_, v)| v).collect(),
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Opportunities in one period.
    pub fn len(&self) -> usize {
        self.sched_ms.len()
    }

    /// Always false (an empty trace is rejected); for clippy's `len_without_is_empty`.
    pub fn is_empty(&self) -> bool {
        self.sched_ms.is_empty()
    }

    /// The wrap period (the last timestamp).
    pub fn period(&self) -> Duration {
        Duration::from_millis(u64::from(*self.sched_ms.last().expect("non-empty")))
    }

    /// The time of opportunity `k` (counting from 0 at replay start, across wraps).
    pub fn opportunity_at(&self, k: u64) -> Duration {
        let n = self.sched_ms.len() as u64;
        let ms = (k / n) * u64::from(*self.sched_ms.last().expect("non-empty"))
            + u64::from(self.sched_ms[(k % n) as usize]);
        Duration::from_millis(ms)
    }

    /// The index of the first opportunity at or after `t`.
    pub fn first_at_or_after(&self, t: Duration) -> u64 {
        let n = self.sched_ms.len() as u64;
        let p_ns = self.period().as_nanos();
        let t_ns = t.as_nanos();
        let c = (t_ns / p_ns) as u64;
        // The last opportunity of cycle c-1 is at exactly c*period, so start one cycle early.
        for cycle in c.saturating_sub(1)..=c + 1 {
            let base = u128::from(cycle) * p_ns;
            let i = self
                .sched_ms
                .partition_point(|&ms| base + u128::from(ms) * 1_000_000 < t_ns);
            if i < self.sched_ms.len() {
                return cycle * n + i as u64;
            }
        }
        unreachable!("cycle c+1 starts after t")
    }

    /// Opportunities in `[from, to)`.
    pub fn count_in(&self, from: Duration, to: Duration) -> u64 {
        if to <= from {
            return 0;
        }
        self.first_at_or_after(to) - self.first_at_or_after(from)
    }

    /// Mean offered capacity over one period, bits/s.
    pub fn mean_bps(&self) -> f64 {
        (self.len() * OPPORTUNITY_BYTES * 8) as f64 / self.period().as_secs_f64()
    }
}

/// A one-way delay trace: line i is the delay in ms during the i-th [`DELAY_SLOT`]; wraps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DelayTrace {
    path: PathBuf,
    slots_ms: Vec<u32>,
}

impl DelayTrace {
    /// Reads and checks a trace file.
    pub fn load(path: &Path) -> Result<DelayTrace, TraceError> {
        DelayTrace::parse(&read(path)?, path)
    }

    /// Parses trace text; `path` names it in errors.
    pub fn parse(text: &str, path: &Path) -> Result<DelayTrace, TraceError> {
        let lines = parse_lines(text, path)?;
        if let Some(&(line, v)) = lines.iter().find(|(_, v)| *v > 60_000) {
            return Err(TraceError::Parse {
                path: path.to_path_buf(),
                line,
                msg: format!("delay {v} ms is more than a minute"),
            });
        }
        Ok(DelayTrace {
            path: path.to_path_buf(),
            slots_ms: lines.into_iter().map(|(_, v)| v).collect(),
        })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The slot delays in ms.
    pub fn slots_ms(&self) -> &[u32] {
        &self.slots_ms
    }

    /// The wrap period (slots × 10 ms).
    pub fn period(&self) -> Duration {
        DELAY_SLOT * self.slots_ms.len() as u32
    }

    /// The one-way delay during the slot containing `t`.
    pub fn delay_at(&self, t: Duration) -> Duration {
        let slot = (t.as_nanos() / DELAY_SLOT.as_nanos()) as u64 % self.slots_ms.len() as u64;
        Duration::from_millis(u64::from(self.slots_ms[slot as usize]))
    }

    /// Reconfiguration instants within one period: the start of every slot whose delay is at
    /// least [`RECONFIG_JUMP_MS`] above the previous slot's, merging jumps within
    /// [`RECONFIG_MERGE`] of the previous instant (a reconfiguration is a short delay spike).
    pub fn reconfig_instants(&self) -> Vec<Duration> {
        let mut out: Vec<Duration> = Vec::new();
        for (i, w) in self.slots_ms.windows(2).enumerate() {
            if w[1] >= w[0] + RECONFIG_JUMP_MS {
                let t = DELAY_SLOT * (i as u32 + 1);
                if out.last().is_none_or(|&l| t - l >= RECONFIG_MERGE) {
                    out.push(t);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p() -> &'static Path {
        Path::new("t.mahimahi")
    }

    #[test]
    fn rate_trace_errors_name_file_and_line() {
        let e = RateTrace::parse("1\n2\nx3\n", p()).unwrap_err().to_string();
        assert_eq!(
            e,
            "t.mahimahi:3: \"x3\" is not a non-negative integer (milliseconds)"
        );
        let e = RateTrace::parse("1\n5\n\n4\n", p())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.mahimahi:4: timestamp 4 is before"), "{e}");
        let e = RateTrace::parse("\n\n", p()).unwrap_err().to_string();
        assert_eq!(e, "t.mahimahi: empty trace");
        assert!(RateTrace::parse("0\n0\n", p()).is_err());
        assert!(RateTrace::parse("-1\n", p()).is_err());
        let e = DelayTrace::parse("10\n1.5\n", p()).unwrap_err().to_string();
        assert!(e.starts_with("t.mahimahi:2: "), "{e}");
        let e = RateTrace::load(Path::new("/nonexistent/bw"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("read trace /nonexistent/bw: "), "{e}");
    }

    #[test]
    fn rate_trace_wraps_like_mahimahi() {
        let t = RateTrace::parse("0\n0\n4\n10\n", p()).unwrap();
        assert_eq!(t.period(), Duration::from_millis(10));
        let ms: Vec<u128> = (0..9).map(|k| t.opportunity_at(k).as_millis()).collect();
        assert_eq!(ms, [0, 0, 4, 10, 10, 10, 14, 20, 20]);
        assert_eq!(t.first_at_or_after(Duration::ZERO), 0);
        assert_eq!(t.first_at_or_after(Duration::from_micros(1)), 2);
        assert_eq!(t.first_at_or_after(Duration::from_millis(10)), 3);
        assert_eq!(t.first_at_or_after(Duration::from_micros(10_001)), 6);
        assert_eq!(t.first_at_or_after(Duration::from_millis(25)), 11);
        for k in 0..40 {
            let at = t.opportunity_at(k);
            let first = t.first_at_or_after(at);
            assert!(first <= k && t.opportunity_at(first) == at, "k={k}");
        }
        assert_eq!(t.count_in(Duration::ZERO, Duration::from_millis(20)), 7);
        assert!((t.mean_bps() - 4.0 * 12_000.0 / 0.01).abs() < 1e-6);
    }

    #[test]
    fn delay_trace_slots_wrap_and_jumps_are_found() {
        let text = "10\n10\n30\n35\n10\n10\n";
        let d = DelayTrace::parse(text, p()).unwrap();
        assert_eq!(d.period(), Duration::from_millis(60));
        assert_eq!(
            d.delay_at(Duration::from_micros(19_999)),
            Duration::from_millis(10)
        );
        assert_eq!(
            d.delay_at(Duration::from_millis(20)),
            Duration::from_millis(30)
        );
        assert_eq!(
            d.delay_at(Duration::from_millis(80)),
            Duration::from_millis(30)
        );
        assert_eq!(d.reconfig_instants(), [Duration::from_millis(20)]);
    }
}
