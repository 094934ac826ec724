//! The in-flight cap's headroom (pure): the satellite socket's in-flight cap is
//! `C × (base RTT + g)`, and the cap opens by a quarter per round trip while it binds with the
//! link's own queue below the target `g`, and closes back as the queue passes it.
//!
//! Why: a send buffer that bounds the in-flight bytes is only about 5/6 full on average (the
//! kernel wakes a writer once a third of it is free), a shortfall that grows with the base
//! RTT. On a 64 ms satellite path it ate the room BBR's probing needs to show more capacity:
//! the link 76 % used with its queue at 6-10 ms, where WireGuard used 91 %. A fixed larger
//! target (or buffer) fixed that path but cost the 44 ms one both goodput and delay, where the
//! link's queue already sits above the target. The headroom only opens where the link shows
//! spare room: a cap that binds while the queue is short.

use std::time::Duration;

/// The cap opens by this factor per round trip while it binds below the queue target ...
const OPEN: f64 = 1.25;
/// ... up to this many times the base cap ...
const MAX: f64 = 2.0;
/// ... and closes by this factor per round trip while the link's queue is above the target.
const CLOSE: f64 = 0.8;
/// The cap binds when the socket has nothing unsent and at least this fraction of it in flight.
pub const BINDS: f64 = 0.75;

/// The headroom multiplier of one flow's in-flight cap.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Headroom {
    gain: f64,
    at: Option<Duration>,
}

impl Default for Headroom {
    fn default() -> Self {
        Headroom {
            gain: 1.0,
            at: None,
        }
    }
}

impl Headroom {
    /// One look at `now`, at most once per `rtt`: whether the cap `binds`, and the link's own
    /// queue (smoothed RTT less the base) against the target `g`. Returns the multiplier.
    pub fn on_sample(
        &mut self,
        now: Duration,
        rtt: Duration,
        binds: bool,
        link_queue: Duration,
        g: Duration,
    ) -> f64 {
        if self.at.is_some_and(|at| now < at + rtt) {
            return self.gain;
        }
        self.at = Some(now);
        if link_queue > g {
            self.gain = (self.gain * CLOSE).max(1.0);
        } else if binds {
            self.gain = (self.gain * OPEN).min(MAX);
        }
        self.gain
    }

    /// Around a reconfiguration and during a drain the cap has no queue target: back to 1.
    pub fn reset(&mut self) {
        self.gain = 1.0;
    }

    pub fn gain(&self) -> f64 {
        self.gain
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn opens_while_the_cap_binds_below_the_target_and_closes_above_it() {
        let mut h = Headroom::default();
        let (rtt, g) = (64 * MS, 16 * MS);
        // Binding with 7 ms queued: a quarter more per round trip, up to twice.
        let mut t = Duration::ZERO;
        assert_eq!(h.on_sample(t, rtt, true, 7 * MS, g), 1.25);
        assert_eq!(
            h.on_sample(t + 10 * MS, rtt, true, 7 * MS, g),
            1.25,
            "once per RTT"
        );
        for _ in 0..10 {
            t += rtt;
            h.on_sample(t, rtt, true, 7 * MS, g);
        }
        assert_eq!(h.gain(), 2.0);
        // The queue passes the target: it closes, never below 1.
        t += rtt;
        assert!((h.on_sample(t, rtt, true, 20 * MS, g) - 1.6).abs() < 1e-9);
        for _ in 0..10 {
            t += rtt;
            h.on_sample(t, rtt, false, 20 * MS, g);
        }
        assert_eq!(h.gain(), 1.0);
    }

    #[test]
    fn a_cap_that_does_not_bind_or_a_queue_at_target_keeps_it() {
        let mut h = Headroom::default();
        let (rtt, g) = (44 * MS, 15 * MS);
        assert_eq!(h.on_sample(Duration::ZERO, rtt, false, 2 * MS, g), 1.0);
        assert_eq!(
            h.on_sample(rtt, rtt, true, 15 * MS, g),
            1.25,
            "at the target: still room"
        );
        assert_eq!(h.on_sample(2 * rtt, rtt, false, 10 * MS, g), 1.25);
        h.reset();
        assert_eq!(h.gain(), 1.0);
    }
}
