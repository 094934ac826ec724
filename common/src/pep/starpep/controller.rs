//! The StarPEP window controller of one flow (pure): samples and a clock in, the window to
//! advertise to the sender out (eq. 1–10), plus the two bounds that keep bytes from piling up
//! where the window cannot see them (the sender-facing receive buffer and the satellite
//! segment's in-flight cap).
//!
//! Timer contract (quinn-proto's): the shell calls [`Controller::on_samples`] at
//! [`Controller::next_deadline`] or later; phase boundaries are deadlines, so guard, probe and
//! recover start within one call of their instant. Time is the schedule's clock (UNIX time
//! as a `Duration`, advanced monotonically by the shell).

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::{ProbeWindow, Reconfig, Starpep};
use crate::reconfig::ReconfigSchedule;

use super::acks::AckSpacing;
use super::estimate::{rtt_up, BaseRtt, RateEstimator, UpRtt, DRAIN_GAIN, LEO_MAX_RTT};
use super::headroom::{self, Headroom};
use super::phase::{Phase, PhaseAt, Phases};
use super::probe_rtt::ProbeRttGuard;
use crate::pep::BbrInfo;

/// The control period. 5 ms: the shortest LEO RTT in the Starlink recording is about 16 ms,
/// so the window changes at least three times per satellite round trip and a phase boundary
/// (guard 100 ms, probe 200 ms) is hit within 2.5–5 % of its length; at 50 Mbit/s a period is
/// about 21 full segments, so one period of error in Q is below one QueueLow. tokio's timer
/// has 1 ms resolution, and one tick costs a few system calls per flow (TCP_INFO twice,
/// SIOCINQ, a setsockopt or map update only when the value changes).
pub const CONTROL_PERIOD: Duration = Duration::from_millis(5);
/// Period of a flow that moved nothing in the controlled direction since the last tick.
pub const IDLE_PERIOD: Duration = Duration::from_millis(50);
/// The satellite segment's queue target is at least this fraction of its base RTT (LEO), and
/// [`LINK_QUEUE_PER_RTT_LONG`] of it on a long path: room for BBR's gain cycle, whose 1.25
/// phase adds a quarter of a BDP and whose 0.75 phase takes one away. On GEO a quarter let the
/// drain phase empty the link every cycle (30 MB on geo: 35.5 s; with half, 31.3 s, plain
/// splitting 32.5 s). On LEO paths LinkQueue (15 ms) is the larger term anyway.
pub const LINK_QUEUE_PER_RTT: f64 = 0.25;
pub const LINK_QUEUE_PER_RTT_LONG: f64 = 0.5;
/// A satellite socket with nothing unsent and less than this fraction of its in-flight cap
/// used was starved by the PEP: its delivery says nothing about the link.
const SUPPLY_LIMITED: f64 = 0.75;
/// The window's gain over `W_base` below Q_low (Δ = max(1 MSS, W_base / 4)).
const BELOW_GAIN: f64 = 1.25;
/// Segment size assumed until the kernel reports one.
const DEFAULT_MSS: u32 = 1448;

/// The controller's parameters (from `[PEP]`).
#[derive(Debug, Clone, PartialEq)]
pub struct Params {
    pub alpha: f64,
    pub beta: f64,
    pub queue_low: Duration,
    pub queue_high: Duration,
    pub probe_window: ProbeWindow,
    pub link_queue: Duration,
    pub phases: Phases,
    /// The configured satellite link (`LinkRate` in bytes/s, `LinkRtt`): what the controller
    /// assumes until the flow has measured its own.
    pub link_rate: f64,
    pub link_rtt: Duration,
    /// The schedule is Starlink's: it only shapes LEO paths ([`LEO_MAX_RTT`]).
    pub leo_only: bool,
}

impl Params {
    /// From the StarPEP keys and the `[PEP]` section's `LinkRate` (bit/s) and `LinkRtt`.
    pub fn new(cfg: &Starpep, link_rate_bps: u64, link_rtt: Duration) -> Params {
        Params {
            link_rate: link_rate_bps as f64 / 8.0,
            link_rtt,
            leo_only: cfg.reconfig == Reconfig::Starlink,
            alpha: cfg.alpha,
            beta: cfg.beta,
            queue_low: cfg.queue_low,
            queue_high: cfg.queue_high,
            probe_window: cfg.probe_window,
            link_queue: cfg.link_queue,
            phases: Phases {
                schedule: cfg
                    .schedule()
                    .map(|(period, offset)| ReconfigSchedule::utc(period, offset)),
                guard: cfg.guard,
                probe: cfg.probe,
                recover: cfg.recover,
            },
        }
    }
}

/// The satellite socket's figures (TCP_INFO).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SatSample {
    /// Bytes delivered to the peer ([`TcpInfo::delivered_bytes`](crate::pep::TcpInfo::delivered_bytes)).
    pub delivered: u64,
    /// `tcpi_delivery_rate`, bytes/s (0: none yet).
    pub delivery_rate: u64,
    /// `tcpi_delivery_rate_app_limited`.
    pub app_limited: bool,
    /// `tcpi_rtt` and `tcpi_min_rtt`, µs.
    pub srtt_us: u32,
    pub min_rtt_us: u32,
    /// `tcpi_snd_mss`.
    pub mss: u32,
    /// Bytes sent and not yet acknowledged (SIOCOUTQ − unsent).
    pub inflight: u32,
    /// Loss recovery (`tcpi_ca_state` recovery or loss): delivery is held back by lost
    /// segments, not by the link's rate.
    pub recovering: bool,
    /// In-flight bytes deemed lost (`tcpi_lost` segments) and bytes received beyond a hole
    /// (`tcpi_sacked`): the send buffer holds them, the link does not.
    pub lost_bytes: u32,
    pub sacked_bytes: u32,
    /// BBR's own model (`TCP_CC_INFO`), when the segment runs BBR.
    pub bbr: Option<BbrInfo>,
    /// Segments received (`tcpi_segs_in`): the ACKs of the peer.
    pub acks: u32,
}

/// The sender-facing socket's figures (TCP_INFO).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UpSample {
    /// `tcpi_rcv_rtt`, µs (0: none yet).
    pub rcv_rtt_us: u32,
    /// `tcpi_rtt`: the handshake's RTT sample, µs.
    pub rtt_us: u32,
    /// `tcpi_rcv_mss`: the sender's segment size.
    pub rcv_mss: u32,
    /// What the socket itself would advertise (the kernel's window before any rewrite), if the
    /// back-end can tell.
    pub max_window: Option<u32>,
}

/// Everything sampled for one flow in one period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FlowSamples {
    /// Unread bytes of the sender-facing socket (SIOCINQ).
    pub unread: u32,
    /// Bytes in the relay between the two sockets (the pipe).
    pub pipe: u32,
    /// The satellite socket's unsent bytes (`tcpi_notsent_bytes`).
    pub notsent: u32,
    /// Whether bytes moved in the controlled direction since the last call.
    pub active: bool,
    pub sat: Option<SatSample>,
    pub up: Option<UpSample>,
}

/// Which branch of eq. 3 applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Regime {
    /// Q̂ < Q_low: `W_base + 1 MSS`.
    Below,
    /// Q_low ≤ Q̂ ≤ Q_high: `W_base`.
    Inside,
    /// Q̂ > Q_high: `β W_base`.
    Above,
}

/// What the shell applies, and what telemetry reports.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// The window to advertise (bytes); `None` until `R_down` and `RTT_up` are known.
    pub window: Option<u32>,
    /// `R_down × RTT_up`.
    pub w_base: u32,
    /// The steady-state window of eq. 3 (`W_s`), before the phase is applied.
    pub w_steady: u32,
    pub q: u32,
    pub q_hat: f64,
    /// Bytes/s.
    pub r_down: f64,
    pub rtt_up: Duration,
    pub phase: Phase,
    pub regime: Regime,
    /// Payload the sender-facing socket may buffer (`W + Q_low`, at least `W_r` on top):
    /// bounds the unread bytes when the window cannot (a sender so close that `W_base` is
    /// below `ProbeWindow`).
    pub rcv_buf: Option<u32>,
    /// In-flight cap of the satellite socket (`C × (base RTT + LinkQueue)`, C the recent
    /// maximum of `R_down`).
    pub link_cap: Option<u32>,
    /// Unsent bytes the satellite socket should keep ready (`R_down × QueueLow / 2`, at least
    /// two ACKs' worth within `R_down × QueueHigh`, ≥ 4 MSS).
    pub sat_lowat: Option<u32>,
    /// Base RTT of the satellite segment.
    pub sat_base: Option<Duration>,
    /// The satellite segment is being drained (its queue target is 0).
    pub link_probe: bool,
    /// Restart the satellite socket's BBR model now: its min-RTT filter is about to expire
    /// (or has) and ProbeRTT would idle the link ([`super::probe_rtt`]).
    pub restart_cc: bool,
}

/// One flow's controller.
#[derive(Debug, Clone)]
pub struct Controller {
    p: Params,
    rate: RateEstimator,
    base: BaseRtt,
    up_rtt: UpRtt,
    q_hat: Option<f64>,
    mss: u32,
    next: Duration,
    last_window: Option<u32>,
    last_cap: Option<u32>,
    probe_rtt: ProbeRttGuard,
    acks: AckSpacing,
    /// The satellite segment lost a segment during the flow's startup: the link does not carry
    /// what `LinkRate` says, which then no longer stands in for the measurement.
    lost_in_startup: bool,
    /// The rate at which the flow's careful-resume jump retreated
    /// ([`Controller::on_start_refuted`]): `LinkRate` stands in no higher than this.
    refuted_rate: Option<f64>,
    /// The in-flight cap's headroom, and what the last satellite sample said of it: its
    /// smoothed RTT, and whether the cap bound (nothing unsent, most of it in flight).
    headroom: Headroom,
    sat_rtt: Option<Duration>,
    cap_binds: bool,
}

impl Controller {
    /// The flow's start met a link slower than believed: its careful-resume jump retreated to
    /// `rate` bytes/s (`pep::jump`), and the configured `LinkRate` stands in for `R_down` no
    /// higher than that. A jump that retreated before any loss otherwise left the in-flight
    /// cap at ten times a GEO link for seconds; dropping the stand-in altogether left it to
    /// the first round trip's few samples, which held a 1 MB download at a fraction of the
    /// link.
    /// A rate of 0 (the kernel had no delivery rate yet at a loss) says nothing.
    pub fn on_start_refuted(&mut self, rate: f64) {
        if rate > 0.0 {
            self.refuted_rate = Some(self.refuted_rate.map_or(rate, |r| r.min(rate)));
        }
    }

    pub fn new(p: Params, now: Duration) -> Controller {
        Controller {
            p,
            rate: RateEstimator::default(),
            base: BaseRtt::default(),
            up_rtt: UpRtt::default(),
            q_hat: None,
            mss: DEFAULT_MSS,
            next: now,
            last_window: None,
            last_cap: None,
            probe_rtt: ProbeRttGuard::default(),
            acks: AckSpacing::default(),
            lost_in_startup: false,
            refuted_rate: None,
            headroom: Headroom::default(),
            sat_rtt: None,
            cap_binds: false,
        }
    }

    pub fn params(&self) -> &Params {
        &self.p
    }

    /// When the shell must call again.
    pub fn next_deadline(&self) -> Duration {
        self.next
    }

    /// What this flow measured of its satellite segment: its delivery rate (bytes/s, limited
    /// intervals left out; during its startup a lower bound) and the segment's base RTT.
    pub fn measured(&self) -> Option<(f64, Duration)> {
        self.rate.get().zip(self.base.get())
    }

    /// The window applied last (`None`: not controlled yet).
    pub fn window(&self) -> Option<u32> {
        self.last_window
    }

    /// One control step at `now`.
    pub fn on_samples(&mut self, now: Duration, s: &FlowSamples) -> Decision {
        let q = s.unread.saturating_add(s.pipe).saturating_add(s.notsent);
        let a = self.p.alpha;
        let q_hat = self
            .q_hat
            .map_or(q as f64, |prev| a * q as f64 + (1.0 - a) * prev);
        self.q_hat = Some(q_hat);
        // The phase (on the base RTT known so far).
        let mut ph = self.p.phases.at(now);
        if self.p.leo_only && self.base.get().is_some_and(|b| b > LEO_MAX_RTT) {
            // Starlink's reconfigurations concern LEO paths, not a GEO flow through the same
            // PEP.
            ph = Phases {
                schedule: None,
                ..self.p.phases
            }
            .at(now);
        }
        let mut sat_mss = DEFAULT_MSS;
        // On every path. On LEO the path changes every few seconds; on GEO the link's queue
        // target (half the base RTT) keeps every sample above the minimum: a 30 MB download
        // met ProbeRTT every 12.5 s, each time with the link idle for 0.9 s (cwnd 4 segments
        // for 200 ms and a 500 ms round trip, then the pipe refilled). (Careful resume also
        // restarts BBR once at the end of a jump below the path's rate: `pep::jump::Jump`.)
        let restart_cc = s
            .sat
            .and_then(|x| x.bbr)
            .is_some_and(|b| self.probe_rtt.on_sample(now, &b));
        if let Some(sat) = s.sat {
            let srtt = Duration::from_micros(sat.srtt_us as u64);
            let window = RateEstimator::window(srtt);
            // Not limited by the link: the PEP held nothing for it (app-limited), the link was
            // being drained, or the socket was recovering from a loss. Such intervals only
            // count when they raise R_down. (A new flow's first round trips, while its window
            // still opens, are the estimator's startup. The kernel's own app-limited flag is
            // set whenever less than a segment is unsent and the send buffer is not full to the
            // byte, which the in-flight cap makes the rule: unused.)
            // Nor is a link that the PEP did not keep full: nothing unsent, and in flight well
            // below the cap (the sender's window still ramps after a reconfiguration, or the
            // sender is far and slow to refill), nor the reconfiguration phases themselves.
            let starved = s.notsent < sat.mss.max(1)
                && self
                    .last_cap
                    .is_some_and(|c| (sat.inflight as f64 + q as f64) < SUPPLY_LIMITED * c as f64);
            let limited = q < self.mss
                || starved
                || ph.phase != Phase::Steady
                || self.base.drain_effects(now)
                || sat.recovering;
            self.rate
                .on_sample(now, sat.delivered, sat.delivery_rate, limited, window);
            if !self.rate.filled() && (sat.lost_bytes > 0 || sat.recovering) {
                self.lost_in_startup = true;
            }
            self.sat_rtt = (sat.srtt_us > 0).then_some(srtt);
            self.cap_binds = s.notsent < sat.mss.max(1)
                && self
                    .last_cap
                    .is_some_and(|c| sat.inflight as f64 >= headroom::BINDS * c as f64);
            self.base.on_sample(now, sat.srtt_us);
            self.base.on_min_rtt(sat.min_rtt_us);
            self.acks.on_sample(sat.delivered, sat.acks);
            if sat.mss > 0 {
                sat_mss = sat.mss;
            }
        }
        if let Some(up) = s.up.filter(|u| u.rcv_mss > 0) {
            self.mss = up.rcv_mss;
        }
        let forced = matches!(ph.phase, Phase::Guard | Phase::Probe);
        let link_probe = self.base.tick(now, forced);
        self.next = self.deadline(now, &ph, s.active || q > 0);
        // Until the flow has measured its satellite segment (and while its startup still opens
        // the window), the configured link stands in where it says more; not once the link
        // lost a segment of this startup. (A `LinkRate` ten times too high on GEO otherwise
        // held R_down, and with it the in-flight cap, at ten times the link for seconds: 3.6 MB
        // in flight on a 625 KB path, and a second flow of the peer took 5-7 s for 1 MB.)
        let configured = Some(self.p.link_rate).filter(|r| *r > 0.0);
        let stand_in = configured.map(|c| self.refuted_rate.map_or(c, |r| r.min(c)));
        let r = match (self.rate.get(), stand_in) {
            (Some(m), Some(c)) if !self.rate.filled() && !self.lost_in_startup => Some(m.max(c)),
            (m, c) => m.or(c),
        };
        // Outside the steady state the window swings (4 MSS, then a ramp back) and the
        // kernel's samples time the swing, not the path: 11.3 ms was taken in a probe on a
        // 20 ms path and, as the minimum, held the sender at about half the link for the next
        // 10 s. The settling after a window change (`UpRtt::on_window`) is shorter than a
        // probe. So those phases give a sample only to a flow that has none yet.
        let up_sample =
            s.up.and_then(|u| rtt_up(u.rcv_rtt_us, u.rtt_us))
                .filter(|_| ph.phase == Phase::Steady || self.up_rtt.get().is_none());
        let up_rtt = self.up_rtt.on_sample(now, up_sample);
        let (Some(r), Some(rtt)) = (r, up_rtt) else {
            self.last_window = None;
            return Decision {
                window: None,
                w_base: 0,
                w_steady: 0,
                q,
                q_hat,
                r_down: r.unwrap_or(0.0),
                rtt_up: up_rtt.unwrap_or_default(),
                phase: ph.phase,
                regime: Regime::Inside,
                rcv_buf: None,
                link_cap: None,
                sat_lowat: None,
                sat_base: self.base.get(),
                link_probe,
                restart_cc,
            };
        };
        let bytes_in = |d: Duration| (r * d.as_secs_f64()).min(u32::MAX as f64);
        let w_base = bytes_in(rtt) as u32;
        let (q_low, q_high) = (bytes_in(self.p.queue_low), bytes_in(self.p.queue_high));
        let (regime, w_s) = if q_hat > q_high {
            (Regime::Above, (self.p.beta * w_base as f64) as u32)
        } else if q_hat < q_low {
            // Eq. 3's `W_base + Δ`, with Δ = max(1 MSS, W_base / 4). Below Q_low the
            // satellite socket has too little queued to show what the link carries, and R_down
            // is then what the sender was allowed to send: with one MSS per RTT_up (0.6 Mbit/s
            // at 20 ms) the PEP would take seconds to fill Q_low again after a dip, and the link
            // idles meanwhile. A quarter of W_base (BBR's probing gain) fills it within a few
            // RTT_up; Q̂ above Q_low ends the probe. (A near sender has W_base below one MSS:
            // Δ = 1 MSS there, as in the paper.)
            let w = w_base
                .saturating_add(self.mss)
                .max((BELOW_GAIN * w_base as f64) as u32);
            (Regime::Below, w)
        } else {
            (Regime::Inside, w_base)
        };
        let w_r = self.p.probe_window.bytes(self.mss);
        let w_s = w_s.max(w_r);
        let w = match ph.phase {
            Phase::Steady => w_s,
            Phase::Guard => w_s.min(w_r),
            Phase::Probe => w_r,
            Phase::Recover => (w_r as f64 + ph.ramp * (w_s as f64 - w_r as f64)) as u32,
        };
        let cap =
            s.up.and_then(|u| u.max_window)
                .map_or(u32::MAX, |c| c.max(w_r));
        let w = w.max(w_r).min(cap);
        self.last_window = Some(w);
        self.up_rtt.on_window(now, w, self.mss);
        let rcv_buf = w.saturating_add((q_low as u32).max(w_r));
        let base = self.base.get();
        let c = self.rate.capacity().map_or(r, |c| c.max(r));
        let link_cap = match base.or(Some(self.p.link_rtt)) {
            Some(b) if !self.p.link_queue.is_zero() => {
                // The queue target grows with long paths (LINK_QUEUE_PER_RTT: BBR's gain cycle
                // needs half a base RTT of room; a GEO flow would otherwise idle in its drain
                // phase).
                let per_rtt = if b > LEO_MAX_RTT {
                    LINK_QUEUE_PER_RTT_LONG
                } else {
                    LINK_QUEUE_PER_RTT
                };
                let g = self.p.link_queue.max(b.mul_f64(per_rtt));
                let inflight = if forced {
                    // Around a reconfiguration: no queue target, so the instant finds the
                    // link's queue empty (the sender's window does the rest).
                    b
                } else if link_probe {
                    b.mul_f64(DRAIN_GAIN)
                } else if ph.phase == Phase::Recover {
                    b + g.mul_f64(ph.ramp)
                } else {
                    b + g
                };
                // The headroom opens only in the steady state, where the cap has its target.
                let steady = !forced && !link_probe && ph.phase == Phase::Steady;
                let gain = match (steady, self.sat_rtt) {
                    (true, Some(srtt)) => {
                        let queued = srtt.saturating_sub(b);
                        self.headroom
                            .on_sample(now, srtt, self.cap_binds, queued, g)
                    }
                    (true, None) => self.headroom.gain(),
                    (false, _) => {
                        self.headroom.reset();
                        1.0
                    }
                };
                let inflight = inflight.mul_f64(gain);
                let floor = self.p.probe_window.bytes(sat_mss);
                // The send buffer also holds what is lost and what arrived beyond a hole: on a
                // lossy link that is most of the time, and counting it would block new data
                // for every recovery.
                let lost = s
                    .sat
                    .map_or(0, |x| x.lost_bytes.saturating_add(x.sacked_bytes))
                    as f64;
                // A drain sizes by the current rate, not the recent maximum: it must empty
                // the queue even when the base it starts from holds some of it.
                let rate = if link_probe && !forced { r } else { c };
                let cap = (rate * inflight.as_secs_f64() + lost).min(u32::MAX as f64) as u32;
                Some(cap.max(floor))
            }
            _ => None,
        };
        self.last_cap = link_cap;
        // Unsent bytes kept ready: half of Q_low, and at least two ACKs' worth (the kernel
        // wakes the relay at half the mark, on an ACK: what one ACK lets the socket send must
        // be there already), within Q_high.
        let per_ack = self.acks.get().unwrap_or(0) as f64;
        let sat_lowat = ((q_low / 2.0).max((2.0 * per_ack).min(q_high)) as u32).max(4 * sat_mss);
        Decision {
            window: Some(w),
            w_base,
            w_steady: w_s,
            q,
            q_hat,
            r_down: r,
            rtt_up: rtt,
            phase: ph.phase,
            regime,
            rcv_buf: Some(rcv_buf),
            link_cap,
            sat_lowat: Some(sat_lowat),
            sat_base: base,
            link_probe,
            restart_cc,
        }
    }

    /// The next call: one period on (longer when idle), never past a phase or drain boundary.
    fn deadline(&self, now: Duration, ph: &PhaseAt, active: bool) -> Duration {
        let step = if active { CONTROL_PERIOD } else { IDLE_PERIOD };
        let mut next = now + step;
        if ph.until > now {
            next = next.min(ph.until);
        }
        if let Some(t) = self.base.next_event().filter(|&t| t > now) {
            next = next.min(t);
        }
        next
    }
}
