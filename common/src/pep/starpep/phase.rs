//! Reconfiguration phases (pure, eq. 5–10): around each instant `T_k` of the schedule the window
//! passes guard `[T_k − Δpre, T_k)`, probe `[T_k, T_k + Δprobe)` and a linear recover over
//! `[T_k + Δprobe, T_k + Δprobe + Δrecover)`; steady state otherwise.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::reconfig::ReconfigSchedule;

/// Where the controller stands relative to the reconfiguration schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Steady state: eq. 1–4 alone.
    Steady,
    /// Just before an instant: `min(W_s, W_r)`.
    Guard,
    /// Just after it: `W_r`.
    Probe,
    /// Linear ramp `W_r + a(t)(W_s − W_r)`.
    Recover,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Steady => "steady",
            Phase::Guard => "guard",
            Phase::Probe => "probe",
            Phase::Recover => "recover",
        }
    }
}

/// The phase at one instant.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseAt {
    pub phase: Phase,
    /// `a(t)` in `[0, 1)` during recover, 0 otherwise.
    pub ramp: f64,
    /// The instant the phase ends (the next boundary); `Duration::MAX` without a schedule.
    pub until: Duration,
    /// The reconfiguration instant this phase belongs to (guard: the coming one).
    pub instant: Option<Duration>,
}

/// The schedule and the three phase lengths.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Phases {
    pub schedule: Option<ReconfigSchedule>,
    pub guard: Duration,
    pub probe: Duration,
    pub recover: Duration,
}

impl Phases {
    /// The phase at `now` (the schedule's clock: UNIX time for `Reconfig = starlink/periodic`).
    pub fn at(&self, now: Duration) -> PhaseAt {
        let Some(s) = self.schedule else {
            return PhaseAt {
                phase: Phase::Steady,
                ramp: 0.0,
                until: Duration::MAX,
                instant: None,
            };
        };
        if let Some(t) = s.prev_instant(now) {
            let probe_end = t + self.probe;
            let recover_end = probe_end + self.recover;
            if now < probe_end {
                return at(Phase::Probe, 0.0, probe_end, t);
            }
            if now < recover_end {
                let a = (now - probe_end).as_secs_f64() / self.recover.as_secs_f64();
                return at(Phase::Recover, a, recover_end, t);
            }
        }
        let next = s.next_instant_after(now);
        let guard_start = next.saturating_sub(self.guard);
        if now >= guard_start {
            at(Phase::Guard, 0.0, next, next)
        } else {
            at(Phase::Steady, 0.0, guard_start, next)
        }
    }
}

fn at(phase: Phase, ramp: f64, until: Duration, instant: Duration) -> PhaseAt {
    PhaseAt {
        phase,
        ramp,
        until,
        instant: Some(instant),
    }
}
