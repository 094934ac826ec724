//! owd-bulk statistics (pure): one-way-delay percentiles and the binned time series of the
//! common result format, from samples (completion time, bytes, optional OWD).

use serde::{Deserialize, Serialize};

/// OWD summary in milliseconds. Percentiles are nearest-rank: the `p`-th percentile is the
/// smallest sample with at least `p`% of the samples at or below it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwdStats {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// Number of samples (chunks, or matched segments in pcap mode).
    pub samples: u64,
}

/// One time-series bin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bin {
    /// Bin start, seconds since the connection was established.
    pub t_s: f64,
    /// Bytes completed in the bin × 8 / bin width (the last bin: its covered part), in 10^6 bit/s.
    pub goodput_mbps: f64,
    /// Median OWD of the samples completed in the bin (null if none or no OWD).
    pub owd_ms_p50: Option<f64>,
    /// Largest OWD of the samples completed in the bin.
    pub owd_ms_max: Option<f64>,
}

/// One event for the series: `bytes` completed at `t_ns` (relative to the start), with an OWD.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Point {
    pub t_ns: u64,
    pub bytes: u64,
    pub owd_ns: Option<i64>,
}

/// Nearest-rank percentile of sorted values (`p` in 0..=100); None if empty.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    Some(sorted[rank.clamp(1, sorted.len()) - 1])
}

/// Summary of OWD samples in ns; None if there are none.
pub fn owd_stats(owd_ns: impl IntoIterator<Item = i64>) -> Option<OwdStats> {
    let mut v: Vec<f64> = owd_ns.into_iter().map(|x| x as f64 / 1e6).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let mean = v.iter().sum::<f64>() / v.len() as f64;
    Some(OwdStats {
        p50: percentile(&v, 50.0)?,
        p95: percentile(&v, 95.0)?,
        p99: percentile(&v, 99.0)?,
        min: v[0],
        max: v[v.len() - 1],
        mean,
        samples: v.len() as u64,
    })
}

/// Mbit/s (10^6 bit/s) for `bytes` over `ns`; 0 for an empty interval.
pub fn mbps(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 * 1e3 / ns as f64
    }
}

/// Bins `points` into `bin_ns`-wide bins from 0 to `end_ns` (the last bin covers up to
/// `end_ns`); every bin is present, empty ones with 0 Mbit/s and null OWD.
pub fn series(points: &[Point], bin_ns: u64, end_ns: u64) -> Vec<Bin> {
    assert!(bin_ns > 0, "bin width must be positive");
    let end_ns = points.iter().map(|p| p.t_ns).max().unwrap_or(0).max(end_ns);
    let nbins = (end_ns / bin_ns + 1) as usize;
    let mut bytes = vec![0u64; nbins];
    let mut owd: Vec<Vec<f64>> = vec![Vec::new(); nbins];
    for p in points {
        let b = (p.t_ns / bin_ns) as usize;
        bytes[b] += p.bytes;
        if let Some(o) = p.owd_ns {
            owd[b].push(o as f64 / 1e6);
        }
    }
    // Drop an empty trailing bin that starts exactly at end_ns.
    let keep = if nbins > 1 && end_ns % bin_ns == 0 && bytes[nbins - 1] == 0 {
        nbins - 1
    } else {
        nbins
    };
    (0..keep)
        .map(|i| {
            let start = i as u64 * bin_ns;
            let width = bin_ns.min(end_ns.saturating_sub(start)).max(1);
            let o = &mut owd[i];
            o.sort_by(f64::total_cmp);
            Bin {
                t_s: start as f64 / 1e9,
                goodput_mbps: mbps(bytes[i], width),
                owd_ms_p50: percentile(o, 50.0),
                owd_ms_max: o.last().copied(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 50.0), Some(50.0));
        assert_eq!(percentile(&v, 95.0), Some(95.0));
        assert_eq!(percentile(&v, 99.0), Some(99.0));
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(100.0));
        assert_eq!(percentile(&[3.0], 99.0), Some(3.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[1.0, 2.0], 50.0), Some(1.0));
    }

    #[test]
    fn owd_summary() {
        let s = owd_stats([3_000_000i64, 1_000_000, 2_000_000, 10_000_000]).unwrap();
        assert_eq!((s.min, s.max, s.p50, s.samples), (1.0, 10.0, 2.0, 4));
        assert_eq!(s.p99, 10.0);
        assert!((s.mean - 4.0).abs() < 1e-12);
        assert!(owd_stats(std::iter::empty()).is_none());
    }

    #[test]
    fn series_bins_bytes_and_owd() {
        let ms = 1_000_000u64;
        let pts = [
            Point {
                t_ns: 10 * ms,
                bytes: 125_000,
                owd_ns: Some(5 * ms as i64),
            },
            Point {
                t_ns: 90 * ms,
                bytes: 125_000,
                owd_ns: Some(7 * ms as i64),
            },
            Point {
                t_ns: 250 * ms,
                bytes: 62_500,
                owd_ns: None,
            },
        ];
        let s = series(&pts, 100 * ms, 300 * ms);
        assert_eq!(s.len(), 3);
        assert_eq!(s[0].t_s, 0.0);
        assert!((s[0].goodput_mbps - 20.0).abs() < 1e-9);
        assert_eq!(s[0].owd_ms_p50, Some(5.0));
        assert_eq!(s[0].owd_ms_max, Some(7.0));
        assert_eq!(s[1].goodput_mbps, 0.0);
        assert_eq!(s[1].owd_ms_p50, None);
        assert!((s[2].goodput_mbps - 5.0).abs() < 1e-9);
        // A partial last bin is divided by its covered width.
        let s = series(&pts, 100 * ms, 260 * ms);
        assert!((s[2].goodput_mbps - 62_500.0 * 8.0 / 0.06 / 1e6).abs() < 1e-6);
        assert!(series(&[], 100 * ms, 0).len() == 1);
    }

    #[test]
    fn mbps_units() {
        assert_eq!(mbps(1_250_000, 1_000_000_000), 10.0);
        assert_eq!(mbps(5, 0), 0.0);
    }
}
