//! A new flow's careful-resume jump on its satellite socket (pure, part of `pep::start`):
//! paced at its plan's rate until the link acknowledged its window (validated), or retreating
//! to what the link delivered when it met loss first. The proxy shell feeds `TCP_INFO` samples
//! and time in and applies the returned pacing (`proxy::start`).

use std::time::Duration;

use super::start::{Source, StartPlan};

/// One flow's jump, from its start to its validation.
#[derive(Debug, Clone, PartialEq)]
pub struct Jump {
    /// The plan's window in bytes and pacing rate.
    window: u64,
    pacing: u64,
    /// `bytes_acked` and the time when the flow first had data acknowledged.
    started: Option<Duration>,
    /// Retransmissions of the handshake (a Fast Open child resends its SYN-ACK to a repeated
    /// SYN): not losses of the jump.
    handshake_lost: u32,
    state: JumpState,
    /// The jump met loss before it was validated.
    retreated: bool,
    /// The jump was less than the path's whole believed rate: its window a share beside other
    /// busy or sending young flows, or paced at half of a rate not measured on the path now
    /// (`Configured`, `Stale`).
    partial: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum JumpState {
    /// The jump is in flight and not yet confirmed by the link.
    Unvalidated,
    /// Loss before validation: paced at the measured delivery rate until `until`.
    Retreat {
        until: Duration,
    },
    Done,
}

/// A retreat paces at no less than the jump's rate over this.
pub const RETREAT_FLOOR: u64 = 4;

/// What the satellite socket's pacing cap becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JumpAction {
    Keep,
    /// Pace at this rate (bytes/s).
    Pace(u64),
    /// The jump is over: the congestion control alone paces.
    Release,
    /// The jump is over and the congestion control starts over from its current window (see
    /// [`Jump::on_sample`]), then paces alone.
    Restart,
}

/// The satellite socket's figures a jump is validated on (TCP_INFO).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct JumpSample {
    pub bytes_acked: u64,
    /// Segments retransmitted or deemed lost so far (`tcpi_total_retrans`, `tcpi_lost`).
    pub lost: u32,
    pub delivery_rate: u64,
    pub srtt: Duration,
    /// The socket still waits for its handshake's last ACK (a Fast Open child in SYN_RECV,
    /// already sending): what it retransmits is the SYN-ACK.
    pub handshake: bool,
    /// The socket holds bytes it has not sent (`tcpi_notsent_bytes`).
    pub backlogged: bool,
}

impl Jump {
    /// The jump of a flow started with `plan` (`None` when the plan is the kernel's).
    pub fn new(plan: &StartPlan, mss: u32) -> Option<Jump> {
        let (segs, pacing) = (plan.init_cwnd?, plan.pacing?);
        Some(Jump {
            window: segs as u64 * mss as u64,
            pacing,
            started: None,
            handshake_lost: 0,
            state: JumpState::Unvalidated,
            retreated: false,
            partial: plan.busy > 0 || plan.young > 0 || plan.source != Source::Measured,
        })
    }

    pub fn pacing(&self) -> u64 {
        self.pacing
    }

    pub fn done(&self) -> bool {
        self.state == JumpState::Done
    }

    /// The jump met loss before it was validated: the path carried less than planned.
    pub fn retreated(&self) -> bool {
        self.retreated
    }

    /// One look at the socket. The jump is validated once its window was acknowledged, or two
    /// RTTs after the first acknowledgement (the application had less to send), without loss;
    /// a loss before that retreats to the delivery rate (at least a quarter of the jump's) for
    /// two RTTs, then releases. Retransmissions during the handshake are not losses.
    ///
    /// A validated jump below the path's whole rate (its window a share beside other flows, or
    /// paced at the unvalidated half of a configured or stale rate), on a socket that still has
    /// bytes to send, restarts the congestion control: BBR learned that as the path's bandwidth and
    /// would find the rest only at +25 % per eight round trips, 4 s a step on GEO (the capacity
    /// of the flows it started beside once they end, the other half of a configured link).
    /// Restarted, it is in STARTUP again from the window it has, and finds what is free within
    /// a few round trips: if the path is full, STARTUP sees no growth and leaves.
    pub fn on_sample(&mut self, now: Duration, s: &JumpSample) -> JumpAction {
        if s.handshake {
            self.handshake_lost = s.lost;
            return JumpAction::Keep;
        }
        let lost = s.lost.saturating_sub(self.handshake_lost);
        if s.bytes_acked > 0 && self.started.is_none() {
            self.started = Some(now);
        }
        let srtt = s.srtt.max(Duration::from_millis(1));
        match self.state {
            JumpState::Done => JumpAction::Keep,
            JumpState::Unvalidated if lost > 0 => {
                // Never below a quarter of the jump's pacing (the path's rate, or half of it
                // unvalidated; a share's window may deliver less): the kernel spaces each packet by
                // its length over the rate when it is sent, and a later, higher rate does not
                // take back a gap already scheduled (one segment at a few bytes/s would stall the
                // flow for minutes). A delivery rate of 0 says nothing yet.
                let rate = s
                    .delivery_rate
                    .clamp(self.pacing / RETREAT_FLOOR, self.pacing);
                self.state = JumpState::Retreat {
                    until: now + 2 * srtt,
                };
                self.retreated = true;
                JumpAction::Pace(rate)
            }
            JumpState::Unvalidated => {
                let validated = s.bytes_acked >= self.window
                    || self.started.is_some_and(|t| now >= t + 2 * srtt);
                if validated {
                    self.state = JumpState::Done;
                    if self.partial && s.backlogged {
                        JumpAction::Restart
                    } else {
                        JumpAction::Release
                    }
                } else {
                    JumpAction::Keep
                }
            }
            JumpState::Retreat { until } if now >= until => {
                self.state = JumpState::Done;
                JumpAction::Release
            }
            JumpState::Retreat { .. } => JumpAction::Keep,
        }
    }
}
