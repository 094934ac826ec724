//! StarPEP (pure): the receive-window controller of the PEP whose egress is the satellite link.
//!
//! Per controlled flow, every [`CONTROL_PERIOD`], the proxy shell samples the sender-facing
//! socket (SIOCINQ, TCP_INFO), the relay pipe and the satellite socket (TCP_INFO) and feeds them
//! to a [`Controller`], which returns the window to advertise to the sender and two bounds: the
//! sender-facing receive buffer and the satellite segment's in-flight cap. Steady state is the
//! paper's eq. 1–4 (`W_base = R_down × RTT_up`, EWMA `Q̂`, three regimes); around predictable
//! reconfigurations ([`Phases`], on the shared [`crate::reconfig`] schedule) eq. 5–10 (guard,
//! probe, linear recover). Nothing here touches a socket or reads a clock. The design and its
//! measured behaviour are in `docs/starpep.md`.

mod acks;
mod controller;
mod estimate;
mod headroom;
mod phase;
mod probe_rtt;
mod record;

#[cfg(test)]
mod tests_controller;
#[cfg(test)]
mod tests_phase;
#[cfg(test)]
mod tests_rtt_up;

pub use acks::AckSpacing;
pub use controller::{
    Controller, Decision, FlowSamples, Params, Regime, SatSample, UpSample, CONTROL_PERIOD,
    IDLE_PERIOD,
};
pub use estimate::{
    rtt_up, BaseRtt, RateEstimator, UpRtt, LEO_MAX_RTT, LINK_PROBE_EVERY, UP_RTT_WINDOW,
};
pub use phase::{Phase, PhaseAt, Phases};
pub use probe_rtt::{ProbeRttGuard, BBR_MIN_RTT_WIN, RESTART_AHEAD};
pub use record::ControlRecord;
