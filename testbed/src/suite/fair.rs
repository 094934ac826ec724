//! The `fair` application's figures (pure): a download's goodput over a window of wall-clock
//! time, from owd-bulk's binned receiver series, so two competing flows are compared over the
//! interval where both run. `bench::fair` runs the flows; `quality::jain` rates the shares.

use crate::tools::owd::Report;

/// A receiver's binned series: bin *i* covers `[start + i·bin, start + (i+1)·bin)` (the last
/// one ends at `start + duration`), its goodput over that span.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Connection established, UNIX seconds.
    pub start_unix_s: f64,
    pub duration_s: f64,
    pub bin_s: f64,
    pub goodput_mbps: Vec<f64>,
}

impl Series {
    /// An owd-bulk receiver's series (`None` without its start time).
    pub fn of(r: &Report) -> Option<Series> {
        Some(Series {
            start_unix_s: r.start_unix_s?,
            duration_s: r.duration_s,
            bin_s: r.bin_ms as f64 / 1000.0,
            goodput_mbps: r.series.iter().map(|b| b.goodput_mbps).collect(),
        })
    }
}

/// Mean goodput (Mbit/s) over `[t0, t1]` (UNIX seconds), bytes assumed spread evenly within
/// a bin; time outside the transfer counts as zero. `None` for an empty window.
pub fn window_mbps(s: &Series, t0: f64, t1: f64) -> Option<f64> {
    if t1 <= t0 || s.bin_s <= 0.0 {
        return None;
    }
    let end = s.start_unix_s + s.duration_s;
    let megabits: f64 = s
        .goodput_mbps
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let a = s.start_unix_s + i as f64 * s.bin_s;
            let b = (a + s.bin_s).min(end);
            let overlap = (b.min(t1) - a.max(t0)).max(0.0);
            g * overlap
        })
        .sum();
    Some(megabits / (t1 - t0))
}

/// The interval where every flow runs: the latest start to the earliest end.
pub fn overlap(flows: &[Series]) -> Option<(f64, f64)> {
    let t0 = flows.iter().map(|s| s.start_unix_s).reduce(f64::max)?;
    let t1 = flows
        .iter()
        .map(|s| s.start_unix_s + s.duration_s)
        .reduce(f64::min)?;
    (t1 > t0).then_some((t0, t1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_goodput_weights_partial_bins_and_the_short_last_bin() {
        // 1 s bins from t = 100: 10, 20, then a last bin of 0.5 s at 40 Mbit/s.
        let s = Series {
            start_unix_s: 100.0,
            duration_s: 2.5,
            bin_s: 1.0,
            goodput_mbps: vec![10.0, 20.0, 40.0],
        };
        assert_eq!(window_mbps(&s, 100.0, 101.0), Some(10.0));
        // Half of bin 0 and half of bin 1: (5 + 10) Mbit / 1 s.
        assert_eq!(window_mbps(&s, 100.5, 101.5), Some(15.0));
        // The whole transfer: (10 + 20 + 20) Mbit / 2.5 s.
        assert_eq!(window_mbps(&s, 100.0, 102.5), Some(20.0));
        // Past the end counts as silence: 20 Mbit over 1 s of which 0.5 s had data.
        assert_eq!(window_mbps(&s, 102.0, 103.0), Some(20.0));
        assert_eq!(window_mbps(&s, 90.0, 95.0), Some(0.0));
        assert_eq!(window_mbps(&s, 101.0, 101.0), None);
    }

    #[test]
    fn overlap_is_latest_start_to_earliest_end() {
        let a = Series {
            start_unix_s: 0.0,
            duration_s: 30.0,
            bin_s: 0.1,
            goodput_mbps: vec![1.0],
        };
        let b = Series {
            start_unix_s: 10.2,
            duration_s: 20.5,
            ..a.clone()
        };
        assert_eq!(overlap(&[a.clone(), b.clone()]), Some((10.2, 30.0)));
        let late = Series {
            start_unix_s: 31.0,
            ..b
        };
        assert_eq!(overlap(&[a, late]), None);
        assert_eq!(overlap(&[]), None);
    }
}
