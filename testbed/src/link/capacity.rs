//! The bottleneck server: when each frame's last byte leaves, for a constant rate or a
//! mahimahi opportunity trace, with no service during reconfiguration outages.

use std::sync::Arc;
use std::time::Duration;

use super::schedule::ReconfigSchedule;
use super::trace::{RateTrace, OPPORTUNITY_BYTES};

/// A direction's capacity.
#[derive(Debug, Clone, PartialEq)]
pub enum CapacitySpec {
    /// Constant rate in bits/s, byte-level serialisation.
    Rate(u64),
    /// Delivery opportunities from a mahimahi trace.
    Trace(Arc<RateTrace>),
}

/// FIFO server state. Frames are served in arrival order, so a frame's departure is known the
/// moment it arrives (later arrivals cannot change it): [`Server::serve`] computes it then.
#[derive(Debug, Clone)]
pub struct Server {
    spec: CapacitySpec,
    sched: Option<ReconfigSchedule>,
    /// Constant rate: when the previous frame's last bit left.
    busy_until: Duration,
    /// Constant rate: sub-nanosecond remainder (in bit·ns units), so the long-run rate is exact.
    carry: u128,
    /// Trace: the opportunity that carried the last byte of the previous frame ...
    last_opp: Option<u64>,
    /// ... and the bytes still unused in it.
    left: usize,
}

impl Server {
    pub fn new(spec: CapacitySpec, sched: Option<ReconfigSchedule>) -> Server {
        Server {
            spec,
            sched: sched.filter(|s| !s.outage.is_zero()),
            busy_until: Duration::ZERO,
            carry: 0,
            last_opp: None,
            left: 0,
        }
    }

    fn outage_end_at(&self, t: Duration) -> Option<Duration> {
        self.sched.as_ref().and_then(|s| s.outage_end_at(t))
    }

    /// A frame of `len` bytes joins the queue at `arrival` (non-decreasing across calls);
    /// returns the time its last byte leaves the server.
    pub fn serve(&mut self, arrival: Duration, len: usize) -> Duration {
        let len = len.max(1);
        match &self.spec {
            CapacitySpec::Rate(bps) => self.serve_rate(*bps, arrival, len),
            CapacitySpec::Trace(t) => {
                let t = Arc::clone(t);
                self.serve_trace(&t, arrival, len)
            }
        }
    }

    fn serve_rate(&mut self, bps: u64, arrival: Duration, len: usize) -> Duration {
        let mut start = arrival.max(self.busy_until);
        if let Some(end) = self.outage_end_at(start) {
            start = end;
        }
        let total = len as u128 * 8 * 1_000_000_000 + self.carry;
        self.carry = total % u128::from(bps);
        let mut finish = start + Duration::from_nanos((total / u128::from(bps)) as u64);
        // The server pauses through every outage that begins while the frame is on the wire.
        if let Some(s) = self.sched {
            let mut next = s.next_instant_after(start);
            while next < finish {
                finish += s.outage;
                next = s.next_instant_after(next);
            }
        }
        self.busy_until = finish;
        finish
    }

    /// mahimahi LinkQueue byte accounting: an opportunity carries up to 1500 bytes, taken by
    /// the frames waiting at its time in order; a frame may finish in a later opportunity, and
    /// the rest of the opportunity where a frame finishes goes to the next frame if that one
    /// had arrived by then, else it is lost (as are opportunities with an empty queue).
    fn serve_trace(&mut self, trace: &RateTrace, arrival: Duration, len: usize) -> Duration {
        let mut need = len;
        if let Some(k) = self.last_opp {
            let at = trace.opportunity_at(k);
            if self.left > 0 && at >= arrival {
                let used = need.min(self.left);
                self.left -= used;
                need -= used;
                if need == 0 {
                    return at;
                }
            }
        }
        let mut k = trace.first_at_or_after(arrival);
        if let Some(last) = self.last_opp {
            k = k.max(last + 1);
        }
        loop {
            let at = trace.opportunity_at(k);
            if let Some(end) = self.outage_end_at(at) {
                k = trace.first_at_or_after(end);
                continue;
            }
            let used = need.min(OPPORTUNITY_BYTES);
            need -= used;
            if need == 0 {
                self.last_opp = Some(k);
                self.left = OPPORTUNITY_BYTES - used;
                return at;
            }
            k += 1;
        }
    }

    /// Capacity offered over `[t, t + window)` in bits/s, outages excluded.
    pub fn capacity_bps_at(&self, t: Duration, window: Duration) -> f64 {
        if window.is_zero() {
            return 0.0;
        }
        let end = t + window;
        let down = |f: &dyn Fn(Duration, Duration) -> f64| -> f64 {
            self.sched
                .as_ref()
                .map(|s| s.outages_in(t, end).map(|(a, b)| f(a, b)).sum())
                .unwrap_or(0.0)
        };
        let bits = match &self.spec {
            CapacitySpec::Rate(bps) => {
                let up = window.as_secs_f64() - down(&|a, b| (b - a).as_secs_f64());
                *bps as f64 * up
            }
            CapacitySpec::Trace(tr) => {
                let opp = tr.count_in(t, end) as f64 - down(&|a, b| tr.count_in(a, b) as f64);
                opp * (OPPORTUNITY_BYTES * 8) as f64
            }
        };
        bits / window.as_secs_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    fn trace(text: &str) -> CapacitySpec {
        CapacitySpec::Trace(Arc::new(RateTrace::parse(text, Path::new("t")).unwrap()))
    }

    /// One opportunity per ms, forever (period 1000 ms).
    fn every_ms() -> CapacitySpec {
        let t: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        trace(&t)
    }

    #[test]
    fn full_packets_take_one_opportunity_each() {
        let mut s = Server::new(every_ms(), None);
        let d: Vec<_> = (0..5).map(|_| s.serve(Duration::ZERO, 1500)).collect();
        assert_eq!(d, [ms(1), ms(2), ms(3), ms(4), ms(5)]);
    }

    #[test]
    fn small_packets_share_an_opportunity() {
        let mut s = Server::new(every_ms(), None);
        let d: Vec<_> = (0..7).map(|_| s.serve(Duration::ZERO, 500)).collect();
        assert_eq!(d, [ms(1), ms(1), ms(1), ms(2), ms(2), ms(2), ms(3)]);
    }

    #[test]
    fn a_packet_spans_opportunities() {
        let mut s = Server::new(every_ms(), None);
        assert_eq!(s.serve(Duration::ZERO, 1000), ms(1)); // 500 left in opp 1
        assert_eq!(s.serve(Duration::ZERO, 1000), ms(2)); // 500 of opp 1 + 500 of opp 2
        assert_eq!(s.serve(Duration::ZERO, 1000), ms(2)); // the last 1000 of opp 2
        assert_eq!(s.serve(Duration::ZERO, 3100), ms(5)); // 1500 + 1500 + 100
    }

    #[test]
    fn unused_opportunities_are_lost() {
        let mut s = Server::new(every_ms(), None);
        assert_eq!(s.serve(Duration::ZERO, 100), ms(1));
        // Arrives after opportunity 1: its leftover 1400 bytes are gone.
        assert_eq!(s.serve(Duration::from_micros(1500), 100), ms(2));
        // Idle for a while: opportunities 3..=9 unused, the next frame gets 10.
        assert_eq!(s.serve(Duration::from_micros(9500), 1500), ms(10));
        // Arriving exactly at an opportunity can use it.
        assert_eq!(s.serve(ms(20), 1500), ms(20));
    }

    #[test]
    fn constant_rate_serialisation() {
        let mut s = Server::new(CapacitySpec::Rate(10_000_000), None);
        // 1500 bytes at 10 Mbit/s = 1.2 ms.
        assert_eq!(s.serve(Duration::ZERO, 1500), Duration::from_micros(1200));
        assert_eq!(s.serve(Duration::ZERO, 1500), Duration::from_micros(2400));
        assert_eq!(s.serve(ms(10), 100), ms(10) + Duration::from_micros(80));
        // 3 bits/s: 1 byte = 8/3 s; the remainder carries, so 3 bytes take exactly 8 s.
        let mut s = Server::new(CapacitySpec::Rate(3), None);
        let d: Vec<_> = (0..3).map(|_| s.serve(Duration::ZERO, 1)).collect();
        assert_eq!(d[2], Duration::from_secs(8));
        assert!(d[0] < d[1] && d[1] < d[2]);
    }

    #[test]
    fn nothing_served_inside_outages() {
        let sched = ReconfigSchedule::new(ms(10), ms(100), ms(20));
        let mut s = Server::new(every_ms(), Some(sched));
        assert_eq!(s.serve(ms(9), 1500), ms(9));
        // Arrivals in [10, 30) wait for the first opportunity after the outage.
        assert_eq!(s.serve(ms(10), 1500), ms(30));
        assert_eq!(s.serve(ms(10), 1500), ms(31));
        assert_eq!(s.serve(ms(109), 3000), ms(130));
        let mut c = Server::new(CapacitySpec::Rate(10_000_000), Some(sched));
        // On the wire at 9.5 ms, paused from 10 to 30 ms, done at 30.7 ms.
        assert_eq!(
            c.serve(Duration::from_micros(9_500), 1500),
            Duration::from_micros(30_700)
        );
        assert_eq!(c.serve(ms(15), 1500), Duration::from_micros(31_900));
        assert!((c.capacity_bps_at(ms(0), ms(100)) - 8e6).abs() < 1.0);
        assert!((s.capacity_bps_at(ms(0), ms(100)) - 79.0 * 12_000.0 / 0.1).abs() < 1.0);
    }
}
