//! The controller's estimators (pure): `R_down` (the satellite segment's delivery rate), the
//! satellite segment's base RTT (for its in-flight cap) and `RTT_up` (sender ↔ PEP).

use std::time::Duration;

use super::minmax::{Keep, Windowed};

/// `R_down`: a windowed maximum of the kernel's delivery-rate samples of the satellite socket
/// (`tcpi_delivery_rate`, each one measured over about one RTT).
///
/// App-limited samples (the socket had nothing to send) only ever raise the estimate: they are
/// a lower bound of what the link carries, so a pause in the sender never collapses `R_down`
/// (BBR's rule). Zero or missing samples change nothing.
#[derive(Debug, Clone)]
pub struct RateEstimator {
    max: Windowed,
}

impl Default for RateEstimator {
    fn default() -> Self {
        RateEstimator {
            max: Windowed::new(Keep::Max),
        }
    }
}

/// Window of the rate filter: 8 satellite RTTs (one BBR gain cycle), within these bounds.
const RATE_WINDOW_MIN: Duration = Duration::from_millis(50);
const RATE_WINDOW_MAX: Duration = Duration::from_secs(1);
const RATE_WINDOW_RTTS: u32 = 8;

impl RateEstimator {
    /// The filter window for a satellite segment of smoothed RTT `srtt`.
    pub fn window(srtt: Duration) -> Duration {
        (srtt * RATE_WINDOW_RTTS).clamp(RATE_WINDOW_MIN, RATE_WINDOW_MAX)
    }

    /// Feeds one sample (bytes/s); returns the estimate.
    pub fn on_sample(
        &mut self,
        now: Duration,
        rate: u64,
        app_limited: bool,
        window: Duration,
    ) -> Option<f64> {
        if rate == 0 {
            return self.get();
        }
        let r = rate as f64;
        if app_limited && self.get().is_some_and(|cur| r <= cur) {
            return self.get();
        }
        Some(self.max.update(window, now, r))
    }

    /// Bytes/s, once a sample arrived.
    pub fn get(&self) -> Option<f64> {
        self.max.get()
    }
}

/// The satellite segment's base RTT: the minimum smoothed RTT, refreshed by short drains.
///
/// A lower sample is taken at once. A longer path is only seen when the queue is drained, so
/// the controller drains the link (in-flight cap at `R_down × base`, no queue target) during
/// each reconfiguration guard/probe and at least every [`LINK_PROBE_EVERY`]; the minimum over
/// that drain replaces the old base (BBR's PROBE_RTT, without cutting the window).
#[derive(Debug, Clone, Default)]
pub struct BaseRtt {
    base_us: Option<u32>,
    probe_min_us: Option<u32>,
    probing: bool,
    last_probe_end: Option<Duration>,
    probe_until: Option<Duration>,
}

/// The longest time between two drains of the satellite segment.
pub const LINK_PROBE_EVERY: Duration = Duration::from_secs(2);
/// Length of a periodic drain, in base RTTs (at least [`LINK_PROBE_MIN`]).
const LINK_PROBE_RTTS: u32 = 3;
pub const LINK_PROBE_MIN: Duration = Duration::from_millis(30);

impl BaseRtt {
    pub fn on_sample(&mut self, srtt_us: u32) {
        if srtt_us == 0 {
            return;
        }
        self.base_us = Some(self.base_us.map_or(srtt_us, |b| b.min(srtt_us)));
        if self.probing {
            self.probe_min_us = Some(self.probe_min_us.map_or(srtt_us, |b| b.min(srtt_us)));
        }
    }

    pub fn get(&self) -> Option<Duration> {
        self.base_us.map(|us| Duration::from_micros(us as u64))
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
                let due = self
                    .last_probe_end
                    .is_none_or(|t| now >= t + LINK_PROBE_EVERY);
                if due && self.base_us.is_some() && !forced {
                    let len = self.get().map_or(LINK_PROBE_MIN, |b| {
                        (b * LINK_PROBE_RTTS).max(LINK_PROBE_MIN)
                    });
                    self.probe_until = Some(now + len);
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

    /// The end of the current periodic drain, or the next one's start.
    pub fn next_event(&self) -> Option<Duration> {
        match (self.probe_until, self.last_probe_end) {
            (Some(end), _) => Some(end),
            (None, Some(t)) => Some(t + LINK_PROBE_EVERY),
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

/// Below this the kernel's figures are timer granularity, not a path.
const RTT_UP_FLOOR_US: u32 = 20;
