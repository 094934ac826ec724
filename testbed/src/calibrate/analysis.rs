//! Pure arithmetic of the calibration: rates per window, FIFO-expected delays, percentiles,
//! the binomial interval. No I/O; unit-tested on synthetic records.

use std::collections::BTreeMap;
use std::time::Duration;

use super::udp::{Rx, IP_OVERHEAD};

/// The `q` quantile (0..=1, nearest rank) of `v`; NaN when empty. Sorts `v`.
pub fn percentile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    let rank = (q.clamp(0.0, 1.0) * v.len() as f64).ceil() as usize;
    v[rank.clamp(1, v.len()) - 1]
}

/// The 95 % interval (Wilson score) of the number of successes in `n` Bernoulli(p) trials,
/// as a (low, high) range of rates.
pub fn binomial_interval95(n: u64, p: f64) -> (f64, f64) {
    let z = 1.959_964_f64;
    let n = n as f64;
    // Interval for the observed rate of a true rate p: p ± z·sqrt(p(1-p)/n), Wilson-corrected.
    let denom = 1.0 + z * z / n;
    let centre = (p + z * z / (2.0 * n)) / denom;
    let half = z * ((p * (1.0 - p) / n) + z * z / (4.0 * n * n)).sqrt() / denom;
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// Bytes the link model charged for a received datagram: its IP packet (UDP payload + UDP
/// and IPv4 headers; the Ethernet header is not charged, as in mahimahi).
pub fn link_bytes(rx: &Rx) -> u64 {
    (rx.len + IP_OVERHEAD) as u64
}

/// Sums link bytes ([`link_bytes`]) per window of length `window`, keyed by window index, where each datagram
/// is placed at `at(rx)` (virtual time since the replay start; None = outside the replay).
pub fn bytes_per_window(
    rx: &[Rx],
    window: Duration,
    at: impl Fn(&Rx) -> Option<Duration>,
) -> BTreeMap<u64, u64> {
    let mut m = BTreeMap::new();
    for r in rx {
        if let Some(t) = at(r) {
            let k = (t.as_nanos() / window.as_nanos().max(1)) as u64;
            *m.entry(k).or_insert(0) += link_bytes(r);
        }
    }
    m
}

/// Virtual time (since the replay start at UNIX `start_ns`) of a UNIX instant in ns.
pub fn virt(unix_ns: u64, start_ns: u64) -> Option<Duration> {
    unix_ns.checked_sub(start_ns).map(Duration::from_nanos)
}

/// The delivery times a FIFO link with per-arrival delay `delay_at` gives to packets that
/// arrive at `arrivals` (ascending): each leaves at `arrival + delay`, but never before the
/// packet ahead of it (order kept when the delay falls).
pub fn fifo_deliveries(
    arrivals: &[Duration],
    delay_at: impl Fn(Duration) -> Duration,
) -> Vec<Duration> {
    let mut out = Vec::with_capacity(arrivals.len());
    let mut last = Duration::ZERO;
    for a in arrivals {
        let d = (*a + delay_at(*a)).max(last);
        out.push(d);
        last = d;
    }
    out
}

/// Signed difference `a - b` in milliseconds.
pub fn diff_ms(a: Duration, b: Duration) -> f64 {
    a.as_secs_f64() * 1e3 - b.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rx(seq: u64, recv_ms: u64, len: usize) -> Rx {
        Rx {
            flow: 0,
            seq,
            sent_ns: 0,
            recv_ns: recv_ms * 1_000_000,
            len,
        }
    }

    #[test]
    fn percentile_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&mut v, 0.99), 99.0);
        assert_eq!(percentile(&mut v, 0.5), 50.0);
        assert_eq!(percentile(&mut v, 1.0), 100.0);
        assert!(percentile(&mut [], 0.5).is_nan());
    }

    #[test]
    fn binomial_interval_brackets_the_rate() {
        let (lo, hi) = binomial_interval95(100_000, 0.01);
        // sqrt(0.01*0.99/1e5) = 3.15e-4, times 1.96 = 6.17e-4.
        assert!((lo - (0.01 - 6.17e-4)).abs() < 2e-5, "{lo}");
        assert!((hi - (0.01 + 6.17e-4)).abs() < 2e-5, "{hi}");
    }

    #[test]
    fn windows_sum_link_bytes() {
        let v = [rx(0, 100, 1458), rx(1, 900, 1458), rx(2, 1100, 100)];
        let m = bytes_per_window(&v, Duration::from_secs(1), |r| {
            Some(Duration::from_nanos(r.recv_ns))
        });
        assert_eq!(m[&0], 2 * 1486);
        assert_eq!(m[&1], 128);
    }

    #[test]
    fn fifo_keeps_order_when_delay_falls() {
        let ms = Duration::from_millis;
        let arr = [ms(0), ms(10), ms(20)];
        let d = fifo_deliveries(&arr, |t| if t < ms(10) { ms(50) } else { ms(20) });
        assert_eq!(d, vec![ms(50), ms(50), ms(50)]);
        let d = fifo_deliveries(&arr, |_| ms(20));
        assert_eq!(d, vec![ms(20), ms(30), ms(40)]);
    }

    #[test]
    fn virt_is_none_before_start() {
        assert_eq!(virt(5, 10), None);
        assert_eq!(virt(15, 10), Some(Duration::from_nanos(5)));
    }
}
