//! The controller's estimators (pure): `R_down` (the satellite segment's delivery rate), the
//! satellite segment's base RTT (for its in-flight cap) and `RTT_up` (sender ↔ PEP).

use std::time::Duration;

/// `R_down`: the satellite socket's delivery rate, measured as the bytes it delivered over the
/// last satellite RTT (SACKed ones included), and the kernel's own rate sample
/// (`tcpi_delivery_rate`) only until one RTT of history exists.
///
/// An average over one round trip, not a maximum of rate samples: on the bursty LEO trace the
/// kernel's per-ACK samples run about a third above what the link delivers (ACKs come in
/// bursts), and the in-flight cap `R_down × (base RTT + LinkQueue)` would keep that much
/// standing queue. With the average the cap settles at the queue target; when the link has
/// more room the queue drains, the next round delivers `1 + LinkQueue / base` times more, and
/// `R_down` follows capacity up within a few RTTs. Intervals in which the flow had nothing to
/// send (app-limited) only count when they raise the estimate: they are a lower bound of what
/// the link carries, so a pause in the sender never collapses `R_down` (BBR's rule). Zero or
/// missing samples change nothing.
#[derive(Debug, Clone, Default)]
pub struct RateEstimator {
    r: Option<f64>,
    /// `(time, bytes acked, app-limited)` of the recent samples.
    hist: std::collections::VecDeque<(Duration, u64, bool)>,
    /// Decreasing `(time, R)` candidates of the windowed maximum of `R` ([`Self::capacity`]).
    peaks: std::collections::VecDeque<(Duration, f64)>,
    /// Startup (BBR's full-bandwidth test): until `R` has grown by less than a quarter over
    /// three averaging windows in a row, a new flow's window is still opening and a lower
    /// average is no sign of a slower link.
    full: Option<StartupEnd>,
    filled: bool,
}

#[derive(Debug, Clone, Copy)]
struct StartupEnd {
    at: Duration,
    bw: f64,
    flat: u32,
}

/// Startup ends after this many averaging windows without a quarter more rate.
const STARTUP_FLAT_WINDOWS: u32 = 3;
const STARTUP_GROWTH: f64 = 1.25;

/// The capacity estimate is the maximum of `R_down` over this many averaging windows (one BBR
/// gain cycle): it holds through the dips of a bursty link and of the sender's own probing.
pub const CAPACITY_WINDOWS: u32 = 8;

/// Bounds of the averaging window (one satellite RTT).
const RATE_WINDOW_MIN: Duration = Duration::from_millis(10);
const RATE_WINDOW_MAX: Duration = Duration::from_secs(1);

impl RateEstimator {
    /// The averaging window for a satellite segment of smoothed RTT `srtt`.
    pub fn window(srtt: Duration) -> Duration {
        srtt.clamp(RATE_WINDOW_MIN, RATE_WINDOW_MAX)
    }

    /// Feeds one sample at `now`: the socket's delivered bytes, the kernel's last rate
    /// sample (bytes/s, 0 if none) and whether the flow was app-limited.
    pub fn on_sample(
        &mut self,
        now: Duration,
        acked: u64,
        kernel_rate: u64,
        app_limited: bool,
        window: Duration,
    ) -> Option<f64> {
        if self.hist.back().is_some_and(|b| acked < b.1 || now < b.0) {
            // A counter that went back is another socket's (or garbage): start over.
            self.hist.clear();
        }
        self.hist.push_back((now, acked, app_limited));
        // Keep the newest sample at least `window` old as the base of the average.
        while self.hist.len() > 2 && self.hist[1].0 + window <= now {
            self.hist.pop_front();
        }
        let (t0, a0, _) = self.hist[0];
        let cand = if t0 + window <= now && now > t0 {
            let limited = self.hist.iter().skip(1).any(|h| h.2);
            Some(((acked - a0) as f64 / (now - t0).as_secs_f64(), limited))
        } else if self.r.is_none() && kernel_rate > 0 {
            Some((kernel_rate as f64, app_limited))
        } else {
            None
        };
        if let Some((x, limited)) = cand {
            match self.r {
                Some(cur) if (limited || !self.filled) && x <= cur => {}
                _ if x > 0.0 => self.r = Some(x),
                _ => {}
            }
        }
        self.startup_check(now, window);
        if let Some(r) = self.r {
            while self.peaks.back().is_some_and(|p| p.1 <= r) {
                self.peaks.pop_back();
            }
            self.peaks.push_back((now, r));
            let horizon = window * CAPACITY_WINDOWS;
            while self.peaks.len() > 1 && self.peaks[0].0 + horizon < now {
                self.peaks.pop_front();
            }
        }
        self.r
    }

    fn startup_check(&mut self, now: Duration, window: Duration) {
        let (Some(r), false) = (self.r, self.filled) else {
            return;
        };
        let f = self.full.get_or_insert(StartupEnd {
            at: now,
            bw: r,
            flat: 0,
        });
        if now < f.at + window {
            return;
        }
        f.at = now;
        if r >= f.bw * STARTUP_GROWTH {
            f.bw = r;
            f.flat = 0;
        } else {
            f.flat += 1;
            self.filled = f.flat >= STARTUP_FLAT_WINDOWS;
        }
    }

    /// Whether the flow is past its startup (its rate stopped growing).
    pub fn filled(&self) -> bool {
        self.filled
    }

    /// What the link has shown it carries: the maximum of `R_down` over the last
    /// [`CAPACITY_WINDOWS`] averaging windows (bytes/s).
    pub fn capacity(&self) -> Option<f64> {
        self.peaks.front().map(|p| p.1)
    }

    /// Bytes/s, once known.
    pub fn get(&self) -> Option<f64> {
        self.r
    }
}

/// The satellite segment's base RTT: the minimum smoothed RTT, refreshed by short drains.
///
/// A lower sample is taken at once. A longer path, or a base that was measured with a queue
/// in it, is only seen when the queue is drained, so the controller drains the link (in-flight
/// cap at [`DRAIN_GAIN`] × `R_down × base`) during each reconfiguration guard/probe and at least
/// every [`LINK_PROBE_EVERY`]; the minimum over that drain replaces the old base (BBR's
/// PROBE_RTT, with 30 % of the window cut instead of all but four segments).
#[derive(Debug, Clone, Default)]
pub struct BaseRtt {
    base_us: Option<u32>,
    /// The kernel's minimum of raw RTT samples (`tcpi_min_rtt`, a 5-minute window).
    floor_us: Option<u32>,
    probe_min_us: Option<u32>,
    probing: bool,
    last_probe_end: Option<Duration>,
    probe_until: Option<Duration>,
}

/// In-flight cap during a drain, as a fraction of `R_down × base`: below one, so a base that
/// holds some queue still drains and is corrected at the next drain.
pub const DRAIN_GAIN: f64 = 0.5;
/// How far the base may sit above the kernel's minimum raw RTT.
pub const BASE_OVER_MIN: Duration = Duration::from_millis(5);
/// The longest time between two drains of the satellite segment, and in base RTTs (a drain
/// lasts a few RTTs: on a GEO path they must be rarer). 10 s, BBR's min-RTT window: a drain
/// costs about 1.5 base RTTs of the link's capacity, 1 % of it every 4 s (measured on the
/// Starlink trace: the drains were the largest shortfalls of delivered against offered
/// capacity), and a lower RTT is taken at once without one; only a path that grew longer
/// needs a drain to be seen, and on LEO the reconfiguration phases drain the link at each
/// change of path anyway.
pub const LINK_PROBE_EVERY: Duration = Duration::from_secs(10);
pub const LINK_PROBE_EVERY_RTTS: u32 = 40;
/// Above this satellite RTT a path is not LEO (GEO is 500 ms or more): `Reconfig = starlink`
/// does not shape it, BBR's ProbeRTT is not pre-empted on it, and its drains are rarer.
pub const LEO_MAX_RTT: Duration = Duration::from_millis(150);
/// Drains on a path longer than [`LEO_MAX_RTT`] come every this many base RTTs (a minute on
/// GEO). There the queue target is half the base RTT, so a path that grew by up to half still
/// keeps the link full; the base never sits more than [`BASE_OVER_MIN`] above the kernel's
/// own minimum; and each drain leaves the link half idle for a second.
pub const LINK_PROBE_EVERY_RTTS_LONG: u32 = 120;

/// The time between two periodic drains of a path whose base RTT is `base`.
pub fn link_probe_every(base: Option<Duration>) -> Duration {
    base.map_or(LINK_PROBE_EVERY, |b| {
        let rtts = if b > LEO_MAX_RTT {
            LINK_PROBE_EVERY_RTTS_LONG
        } else {
            LINK_PROBE_EVERY_RTTS
        };
        (b * rtts).max(LINK_PROBE_EVERY)
    })
}
/// Length of a periodic drain, in base RTTs, at least [`LINK_PROBE_MIN`] (and see
/// [`LINK_PROBE_MAX`]). The link's queue is empty one RTT after the cap drops (the bytes above
/// it are acknowledged first), and the bytes sent then come back at the base in the next one;
/// the third is margin for a short path's jitter of a few milliseconds.
const LINK_PROBE_RTTS: u32 = 3;
pub const LINK_PROBE_MIN: Duration = Duration::from_millis(30);
/// Beyond this a drain lasts two base RTTs, not three: on a GEO path three are 1.5 s at half
/// the link (a 30 MB download lost 0.75 s to one drain), and the base is held within
/// [`BASE_OVER_MIN`] of the kernel's minimum anyway.
pub const LINK_PROBE_MAX: Duration = Duration::from_secs(1);

/// How long a periodic drain lasts on a path whose base RTT is `base`.
pub fn link_probe_len(base: Option<Duration>) -> Duration {
    base.map_or(LINK_PROBE_MIN, |b| {
        (b * LINK_PROBE_RTTS)
            .min((b * 2).max(LINK_PROBE_MAX))
            .max(LINK_PROBE_MIN)
    })
}

impl BaseRtt {
    pub fn on_sample(&mut self, now: Duration, srtt_us: u32) {
        if srtt_us == 0 {
            return;
        }
        // A new flow has no queue yet: its first drain is one period away.
        self.last_probe_end.get_or_insert(now);
        self.base_us = Some(self.base_us.map_or(srtt_us, |b| b.min(srtt_us)));
        if self.probing {
            self.probe_min_us = Some(self.probe_min_us.map_or(srtt_us, |b| b.min(srtt_us)));
        }
    }

    /// The base: the drains' minimum smoothed RTT, but at most [`BASE_OVER_MIN`] above the
    /// kernel's minimum raw RTT (a drain on a shared, jittery path can stay above the
    /// propagation delay by several milliseconds, and every one of them becomes queue).
    pub fn get(&self) -> Option<Duration> {
        let over = BASE_OVER_MIN.as_micros() as u32;
        let b = match (self.base_us, self.floor_us) {
            (Some(b), Some(f)) => Some(b.min(f.saturating_add(over))),
            (b, _) => b,
        };
        b.map(|us| Duration::from_micros(us as u64))
    }

    /// The kernel's minimum raw RTT of the socket (`tcpi_min_rtt`, µs; 0: none).
    pub fn on_min_rtt(&mut self, min_rtt_us: u32) {
        if min_rtt_us > 0 {
            self.floor_us = Some(min_rtt_us);
        }
    }

    /// Whether the link is being drained at `now`; `forced` is a reconfiguration guard/probe.
    /// Starts and ends the periodic drains, and takes the new base at the end of each.
    pub fn tick(&mut self, now: Duration, forced: bool) -> bool {
        let periodic = match self.probe_until {
            Some(end) if now < end => true,
            Some(_) => {
                self.probe_until = None;
                false
            }
            None => {
                let every = link_probe_every(self.get());
                let due = self.last_probe_end.is_none_or(|t| now >= t + every);
                if due && self.base_us.is_some() && !forced {
                    self.probe_until = Some(now + link_probe_len(self.get()));
                    true
                } else {
                    false
                }
            }
        };
        let probing = forced || periodic;
        if self.probing && !probing {
            if let Some(m) = self.probe_min_us.take() {
                self.base_us = Some(m);
            }
            self.last_probe_end = Some(now);
        }
        if !self.probing && probing {
            self.probe_min_us = None;
        }
        self.probing = probing;
        probing
    }

    /// Whether the link is drained now or was within one base RTT: its delivery then says
    /// nothing about capacity.
    pub fn drain_effects(&self, now: Duration) -> bool {
        let rtt = self.get().unwrap_or(LINK_PROBE_MIN);
        self.probing || self.last_probe_end.is_some_and(|t| now < t + rtt)
    }

    /// The end of the current periodic drain, or the next one's start.
    pub fn next_event(&self) -> Option<Duration> {
        let every = link_probe_every(self.get());
        match (self.probe_until, self.last_probe_end) {
            (Some(end), _) => Some(end),
            (None, Some(t)) => Some(t + every),
            (None, None) => None,
        }
    }
}

/// `RTT_up`, the sender ↔ PEP round trip. The sender-facing socket only receives, so its
/// `tcpi_rtt` is the handshake's sample and never refreshed; `tcpi_rcv_rtt` is the kernel's
/// receiver-side estimate from the timestamps echoed in the sender's data (the time from our
/// ACK to the data it released), i.e. the RTT the sender's window actually clocks at. It is
/// used once the kernel has one; the handshake RTT until then.
pub fn rtt_up(rcv_rtt_us: u32, handshake_rtt_us: u32) -> Option<Duration> {
    let us = if rcv_rtt_us > 0 {
        rcv_rtt_us
    } else {
        handshake_rtt_us
    };
    (us > 0).then(|| Duration::from_micros(us.max(RTT_UP_FLOOR_US) as u64))
}

/// `RTT_up` as the controller uses it: the windowed minimum of [`rtt_up`] (BBR's min-RTT
/// filter). A single sample can be far above the path: the kernel's first `tcpi_rcv_rtt` spans
/// the sender's whole first window, and a scheduling stall of the PEP or the sender stretches
/// any one of them (48 ms measured on a 20 µs path). A window sized on it lets the sender fill
/// the receive buffer at once, and that queue stands for seconds. A path that really became
/// longer is followed within [`UP_RTT_WINDOW`].
///
/// Samples can also be far below the path, and a minimum keeps those: besides its timestamp
/// samples, the kernel times how long one advertised window of data takes to arrive and takes
/// any such time that is lower at once. When the window changes (the socket back-end sets the
/// kernel's own window), one window of bytes arrives in a fraction of a round trip: after a
/// shrink the bytes the sender sent under the old window are still coming (5.7 ms was measured
/// on a 20 ms path), after a growth the sender releases the difference at once (a quarter more
/// window read 0.8 of the path). The window sized on such a sample, with `R_down` held by the
/// app-limited rule, holds the sender below the link for as long as the minimum stands: 11.2 ms
/// on a 20 ms path after a probe held a flow at half the link for the rest of a run. So a
/// change of more than [`STEP`] either way (from the window the samples were last trusted at,
/// so that a ramp's small steps add up) leaves samples out for [`SETTLE_RTTS`] round trips,
/// and for as long as [`SETTLE_SEGMENTS`] segments take to arrive at the new window: the
/// kernel's timestamp samples, one per segment, each close an eighth of the gap.
#[derive(Debug, Clone, Copy, Default)]
pub struct UpRtt {
    min: Option<(Duration, Duration)>,
    /// Until when samples are left out (a recent change of the window).
    settle_until: Option<Duration>,
    /// The window samples are trusted at: a change of more than [`STEP`] from it starts a
    /// settling time and becomes the new anchor.
    anchor: Option<u32>,
}

/// How long a minimum of `RTT_up` stands (BBR's min-RTT window).
pub const UP_RTT_WINDOW: Duration = Duration::from_secs(10);
/// A window change by more than this fraction either way makes the next samples suspect
/// (smaller steps bias the kernel's window-timed sample by at most this much, which the
/// controller's `W_base + Δ` below Q_low covers).
pub const STEP: f64 = 0.0625;
/// Round trips of `RTT_up` (at least [`SETTLE_MIN`]) after a change during which samples are
/// left out.
pub const SETTLE_RTTS: u32 = 4;
pub const SETTLE_MIN: Duration = Duration::from_millis(20);
/// Segments that must arrive at the new window before samples count again: a sample a
/// fifteenth of the path (a window cut from 60 segments to the probe's 4) is back above 95 %
/// of it after 24 timestamp samples.
pub const SETTLE_SEGMENTS: u32 = 24;

impl UpRtt {
    /// Feeds the sample of `now` (if any); returns the filtered `RTT_up`.
    pub fn on_sample(&mut self, now: Duration, sample: Option<Duration>) -> Option<Duration> {
        let settling = self.settle_until.is_some_and(|t| now < t);
        if let Some(s) = sample.filter(|_| !settling) {
            let stale = |at: Duration| now.saturating_sub(at) > UP_RTT_WINDOW;
            if self.min.is_none_or(|(m, at)| s <= m || stale(at)) {
                self.min = Some((s, now));
            }
        }
        self.get()
    }

    /// The filtered `RTT_up`, if any sample was taken.
    pub fn get(&self) -> Option<Duration> {
        self.min.map(|(m, _)| m)
    }

    /// The window advertised at `now` (`mss`: the segment size it is counted in): a change of
    /// more than [`STEP`] starts a settling time.
    pub fn on_window(&mut self, now: Duration, window: u32, mss: u32) {
        let Some(anchor) = self.anchor else {
            self.anchor = Some(window);
            return;
        };
        let (lo, hi) = (anchor.min(window) as f64, anchor.max(window) as f64);
        if lo >= hi * (1.0 - STEP) {
            return;
        }
        let rtt = self.min.map_or(SETTLE_MIN, |(m, _)| m);
        let segments = (window / mss.max(1)).max(1);
        let settle = (rtt * SETTLE_RTTS)
            .max(rtt * SETTLE_SEGMENTS / segments)
            .max(SETTLE_MIN);
        let until = now + settle;
        self.settle_until = Some(self.settle_until.map_or(until, |t| t.max(until)));
        self.anchor = Some(window);
    }
}

/// Below this the kernel's figures are timer granularity, not a path.
const RTT_UP_FLOOR_US: u32 = 20;

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_drain_lasts_three_base_rtts_within_its_bounds() {
        assert_eq!(link_probe_len(None), LINK_PROBE_MIN);
        assert_eq!(link_probe_len(Some(5 * MS)), LINK_PROBE_MIN);
        assert_eq!(link_probe_len(Some(40 * MS)), 120 * MS, "LEO");
        assert_eq!(
            link_probe_len(Some(500 * MS)),
            LINK_PROBE_MAX,
            "GEO: two RTTs"
        );
        assert_eq!(link_probe_len(Some(400 * MS)), LINK_PROBE_MAX);
        assert_eq!(
            link_probe_len(Some(600 * MS)),
            1200 * MS,
            "never under two RTTs"
        );
    }

    #[test]
    fn drains_come_every_ten_seconds_on_leo_and_every_minute_on_geo() {
        assert_eq!(link_probe_every(None), LINK_PROBE_EVERY);
        assert_eq!(link_probe_every(Some(40 * MS)), LINK_PROBE_EVERY, "LEO");
        assert_eq!(
            link_probe_every(Some(LEO_MAX_RTT)),
            LINK_PROBE_EVERY,
            "at the bound: still 40 RTTs, floored at 10 s"
        );
        assert_eq!(
            link_probe_every(Some(500 * MS)),
            Duration::from_secs(60),
            "GEO"
        );
    }

    #[test]
    fn a_geo_path_drains_every_hundred_and_twenty_rtts_for_a_second() {
        let mut b = BaseRtt::default();
        let mut drains = Vec::new();
        let mut t = Duration::ZERO;
        // 150 s of a 500 ms path, ticked every 5 ms.
        while t < Duration::from_secs(150) {
            b.on_sample(t, 500_000);
            if b.tick(t, false) {
                drains.push(t);
            }
            t += 5 * MS;
        }
        let starts: Vec<Duration> = drains
            .windows(2)
            .filter(|w| w[1] - w[0] > 5 * MS)
            .map(|w| w[1])
            .chain(drains.first().copied())
            .collect();
        assert_eq!(starts.len(), 2, "every 60 s (120 RTTs): {starts:?}");
        assert_eq!(drains.first(), Some(&Duration::from_secs(60)));
        let total: Duration = 5 * MS * drains.len() as u32;
        assert_eq!(total, 2 * LINK_PROBE_MAX, "two drains of a second");
    }
}
