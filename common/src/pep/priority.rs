//! Least attained service between the flows of one satellite path (pure, part of careful
//! resume in `pep::start`): a flow is young for its first [`YOUNG_RTTS`] round trips after it
//! moved its first byte, and while a young flow of a path runs, the path's old flows (busy,
//! and with a BDP of the path carried in their current busy stretch: `pep::start::OLD_BDPS`)
//! pace at [`OLD_SHARE`] of what the path carries, together.
//!
//! Why: a fair share is not enough for a short transfer behind a long one. On GEO a running
//! BBR flow keeps half a base RTT (250 ms) queued in the satellite link and gives up its share
//! only over its gain cycles, seconds on a 500 ms path: a new megabyte then took 3.2 s where a
//! lone one takes 1.8 s. Pacing the old flows down from the new flow's first byte drains that
//! queue during the new flow's first round trip and leaves it most of the link; the old flows
//! keep a floor ([`OLD_SHARE`]), and the priority ends after a few round trips whatever the
//! young flow does, so a stream of new flows slows a bulk transfer but never stops it. A
//! connection that moves no byte (a flood of bare connects) is never young.
//!
//! Old is by bytes, not by the connection's age: a browser's kept-alive connection fetching
//! its third object is as short as a new one. When every connection that had been running
//! yielded, a GEO page load (70 objects on 24 connections) left the link at 2-5 Mbit/s of 10
//! with objects waiting.
//!
//! A new flow shares the path with the young flows that are *sending*: bytes of theirs waited
//! for the satellite segment within [`SENDING_FRESH`] (or they moved their first byte that
//! recently). A young connection that delivered its answer and waits for the next request
//! takes nothing from the link. Counting every young flow for its 4 round trips (2 s on GEO)
//! split a page load's link among connections that had finished: each later connection
//! started at the kernel's 10 segments, and the page took 5.2-5.5 s where 4.7 s was measured
//! before.
//!
//! Nothing here touches a socket or reads a clock.

use std::collections::HashMap;
use std::time::Duration;

/// Round trips of the path after its first byte during which a flow is young.
pub const YOUNG_RTTS: u32 = 4;
/// What a path's old busy flows keep together while one of its flows is young.
pub const OLD_SHARE: f64 = 0.25;
/// The least an old flow is paced at (bytes/s, 100 kbit/s): the kernel spaces each packet by
/// its length over the rate when it is sent, and a later, higher cap does not take back a gap
/// already scheduled (one segment at a few bytes/s would stall the flow for minutes).
pub const MIN_OLD_RATE: f64 = 12_500.0;

/// How long a young flow counts as sending after bytes of its were last seen waiting for the
/// satellite segment (the shell looks every 10 ms), or after its first byte.
pub const SENDING_FRESH: Duration = Duration::from_millis(50);

/// One young flow: when it stops being young, and when it last had bytes waiting.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Young {
    until: Duration,
    waiting: Duration,
}

/// The young flows of one path.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ages {
    young: HashMap<u64, Young>,
}

impl Ages {
    /// `flow` moved its first byte at `now` on a path whose round trip is `rtt`: it is young
    /// until `now + YOUNG_RTTS × rtt`. A flow is young once: a later call changes nothing.
    /// It counts as sending from then (its answer is on its way).
    pub fn on_first_byte(&mut self, flow: u64, now: Duration, rtt: Duration) {
        self.young.entry(flow).or_insert(Young {
            until: now + rtt.saturating_mul(YOUNG_RTTS),
            waiting: now,
        });
    }

    /// `flow` was looked at `now`: bytes of its wait for the satellite segment, or not
    /// (`waiting`). Returns whether it is still young (an old or unknown flow is not tracked).
    pub fn on_look(&mut self, flow: u64, now: Duration, waiting: bool) -> bool {
        match self.young.get_mut(&flow) {
            Some(y) if now < y.until => {
                if waiting {
                    y.waiting = y.waiting.max(now);
                }
                true
            }
            _ => false,
        }
    }

    /// The flow ended.
    pub fn on_end(&mut self, flow: u64) {
        self.young.remove(&flow);
    }

    /// Whether `flow` is young at `now`.
    pub fn is_young(&self, flow: u64, now: Duration) -> bool {
        self.young.get(&flow).is_some_and(|y| now < y.until)
    }

    /// How many flows are young at `now`.
    pub fn young(&self, now: Duration) -> u32 {
        self.young.values().filter(|y| now < y.until).count() as u32
    }

    /// How many young flows are sending at `now`: bytes of theirs waited within
    /// [`SENDING_FRESH`].
    pub fn sending(&self, now: Duration) -> u32 {
        let sending = |y: &&Young| now < y.until && now.saturating_sub(y.waiting) <= SENDING_FRESH;
        self.young.values().filter(sending).count() as u32
    }

    /// Forgets the flows that are no longer young.
    pub fn expire(&mut self, now: Duration) {
        self.young.retain(|_, y| now < y.until);
    }
}

/// The share of a path's rate that a new flow starts at, when `old` flows of the path are busy
/// and `sharing` flows that are not old send: most of the link beside old flows (they yield
/// to it), a fair share among the others.
pub fn new_flow_share(old: u32, sharing: u32) -> f64 {
    if old > 0 {
        (1.0 - OLD_SHARE) / (sharing as f64 + 1.0)
    } else {
        1.0 / (sharing as f64 + 1.0)
    }
}

/// The pacing cap (bytes/s) of one of `old` busy old flows of a path that carries `rate`
/// bytes/s while `young` flows are young: `None` when no flow is young.
pub fn old_flow_cap(rate: f64, old: u32, young: u32) -> Option<u64> {
    (young > 0 && rate.is_finite() && rate > 0.0)
        .then(|| (rate * OLD_SHARE / old.max(1) as f64).max(MIN_OLD_RATE) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_flow_is_young_for_its_first_round_trips_once() {
        let mut a = Ages::default();
        let rtt = 500 * MS;
        a.on_first_byte(1, 1000 * MS, rtt);
        assert!(a.is_young(1, 1000 * MS));
        assert!(a.is_young(1, 2999 * MS));
        assert!(!a.is_young(1, 3000 * MS), "young for 4 RTTs");
        // A second first byte (a keep-alive connection's next answer) does not renew it.
        a.on_first_byte(1, 5000 * MS, rtt);
        assert!(!a.is_young(1, 5000 * MS));
        assert!(!a.is_young(2, 1000 * MS), "an unknown flow is old");
    }

    #[test]
    fn counts_expiry_and_end() {
        let mut a = Ages::default();
        a.on_first_byte(1, Duration::ZERO, 40 * MS);
        a.on_first_byte(2, 100 * MS, 40 * MS);
        assert_eq!(a.young(100 * MS), 2);
        assert_eq!(a.young(160 * MS), 1, "the first is old after 160 ms");
        a.on_end(2);
        assert_eq!(a.young(100 * MS), 1);
        a.expire(160 * MS);
        assert_eq!(a, Ages::default());
    }

    #[test]
    fn a_young_flow_sends_from_its_first_byte_and_while_bytes_of_its_wait() {
        let mut a = Ages::default();
        let rtt = 500 * MS;
        a.on_first_byte(1, 1000 * MS, rtt);
        assert_eq!(a.sending(1000 * MS), 1, "its answer is on its way");
        assert_eq!(a.sending(1000 * MS + SENDING_FRESH), 1);
        assert_eq!(
            a.sending(1001 * MS + SENDING_FRESH),
            0,
            "nothing waited since: it is done or waits for a request"
        );
        assert_eq!(a.young(1001 * MS + SENDING_FRESH), 1, "still young");
        assert!(a.on_look(1, 1400 * MS, false), "young, nothing waiting");
        assert_eq!(a.sending(1400 * MS), 0);
        assert!(a.on_look(1, 1500 * MS, true), "the next answer");
        assert_eq!(a.sending(1500 * MS + SENDING_FRESH), 1);
        // A late report does not move the instant back.
        assert!(a.on_look(1, 1400 * MS, true));
        assert_eq!(a.sending(1500 * MS + SENDING_FRESH), 1);
        // Once old, waiting bytes make it neither young nor sending.
        assert!(!a.on_look(1, 3000 * MS, true));
        assert_eq!((a.young(3000 * MS), a.sending(3000 * MS)), (0, 0));
        assert!(
            !a.on_look(7, 1000 * MS, true),
            "an unknown flow is not tracked"
        );
        assert_eq!(a.young(2000 * MS), 1, "only flow 1");
    }

    #[test]
    fn a_new_flow_gets_most_of_the_link_beside_old_flows() {
        assert_eq!(new_flow_share(0, 0), 1.0);
        assert_eq!(new_flow_share(0, 1), 0.5, "fair among young flows");
        assert_eq!(new_flow_share(1, 0), 0.75);
        assert_eq!(new_flow_share(3, 2), 0.25);
    }

    #[test]
    fn old_flows_keep_a_quarter_together_while_one_is_young() {
        assert_eq!(old_flow_cap(1_250_000.0, 1, 1), Some(312_500));
        assert_eq!(old_flow_cap(1_250_000.0, 2, 5), Some(156_250));
        assert_eq!(old_flow_cap(1_250_000.0, 0, 1), Some(312_500));
        assert_eq!(old_flow_cap(1_250_000.0, 1, 0), None, "no young flow");
        assert_eq!(old_flow_cap(0.0, 1, 1), None, "nothing measured");
        assert_eq!(old_flow_cap(f64::NAN, 1, 1), None);
        assert_eq!(
            old_flow_cap(1000.0, 4, 1),
            Some(12_500),
            "never below 100 kbit/s"
        );
    }
}
