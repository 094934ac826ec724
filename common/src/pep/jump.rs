//! A new flow's careful-resume jump on its satellite socket (pure, part of `pep::start`):
//! paced at its plan's rate until the link acknowledged its window (validated), or retreating
//! to what the link delivered when it met loss first, or when its first acknowledgements came
//! far slower than a believed (configured or stale) rate. The proxy shell feeds `TCP_INFO`
//! samples and time in and applies the returned pacing (`proxy::start`).

use std::time::Duration;

use super::start::{Source, StartPlan, UNVALIDATED_SHARE};

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
    /// The jump met loss or slow acknowledgements before it was validated.
    retreated: bool,
    /// The rate (bytes/s) of the first acknowledgements, when they refuted a believed rate.
    refuted: Option<u64>,
    /// The jump was less than the path's whole believed rate: its window a share beside other
    /// busy or sending young flows, or paced at half of a rate not measured on the path now
    /// (`Configured`, `Stale`).
    partial: bool,
    /// The rate of the first acknowledgements still tests the jump's pacing: a rate not
    /// measured on the path now, and the flow alone on it (see [`Jump::on_sample`]).
    ack_check: bool,
    /// When acknowledged bytes were first seen, and `bytes_acked` and the smoothed RTT then;
    /// `bytes_acked` at the last look.
    acks_from: Option<(Duration, u64, Duration)>,
    acks_last: u64,
    /// The rate the bytes being timed were paced at: the jump's, or the whole believed rate
    /// for a flight sent before the handshake's last ACK.
    timed_at: u64,
    /// The whole believed rate, while the flight before the handshake's last ACK may still
    /// bear it out (see [`Jump::new`]).
    full: Option<u64>,
    /// The socket's handshake was seen over: the jump proper is paced.
    handshake_over: bool,
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

/// The first acknowledgements are timed over at least this long, each look in it seeing more
/// (a flight that was acknowledged sooner says nothing: the gap after it is not the link's) ...
pub const ACK_RATE_TIME: Duration = Duration::from_millis(30);
/// ... and this many bytes (ten full segments), ...
pub const ACK_RATE_BYTES: u64 = 14_000;
/// ... and the jump retreats when they came at less than its pacing over this ...
pub const ACK_RATE_SHORT: u64 = 2;
/// ... while the smoothed RTT grew by at least this share of the time they were timed over
/// (the link queued what was sent: it is slower than the sending, not the sending slow).
pub const ACK_QUEUE_RISE: f64 = 0.25;
/// A flight paced at the whole believed rate bears it out when its acknowledgements came at
/// no less than this share of that rate: the link delivered that much. (The smoothed RTT
/// says nothing here: it starts from the handshake's small segments and rises by 8-12 ms
/// toward a full segment's RTT while the flight is acknowledged, at the link's rate on GEO.)
pub const ACK_RATE_FULL: f64 = 0.75;

/// What the satellite socket's pacing cap becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JumpAction {
    Keep,
    /// Pace at this rate (bytes/s).
    Pace(u64),
    /// Pace at this higher rate (bytes/s), and restart the congestion control from its current
    /// window so that it paces at it: BBR raises its own pacing rate during STARTUP only from
    /// its bandwidth samples, and a Fast Open child's first samples span the wait for the
    /// handshake's last ACK (120 KB/s on GEO). A raised cap alone left the jump at the half rate
    /// it was lowered to at the handshake's end, for a whole round trip.
    Raise(u64),
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
    /// The socket holds bytes it has not sent (`tcpi_notsent_bytes`), or the relay does.
    pub backlogged: bool,
}

impl Jump {
    /// The jump of a flow started with `plan` (`None` when the plan is the kernel's).
    ///
    /// `before_handshake`: the satellite socket is a Fast Open child still waiting for its
    /// handshake's last ACK, and already sending its answer. What it sends before that ACK is
    /// bounded by the window of the peer's SYN (never scaled: at most 64 KB), so a jump on a
    /// believed rate alone on its path paces that flight at the whole rate, not half: its
    /// acknowledgements, timed as every first acknowledgements are, then bear the rate out
    /// ([`ACK_RATE_FULL`]) and the jump proper goes on at it, or refute it. Until they do, the
    /// jump proper is paced at half. On GEO that flight is acknowledged half a round trip
    /// before the jump's own bytes arrive: a `LinkRate` that is right otherwise held a 1 MB
    /// download at half the link for two round trips (1 s), 1.3 times the ideal time.
    pub fn new(plan: &StartPlan, mss: u32, before_handshake: bool) -> Option<Jump> {
        let (segs, pacing) = (plan.init_cwnd?, plan.pacing?);
        let ack_check = plan.busy == 0
            && plan.young == 0
            && matches!(plan.source, Source::Configured | Source::Stale);
        // Configured and stale rates are paced at UNVALIDATED_SHARE of themselves.
        let full = (ack_check && before_handshake)
            .then(|| (pacing as f64 / UNVALIDATED_SHARE) as u64)
            .filter(|&f| f > pacing);
        Some(Jump {
            window: segs as u64 * mss as u64,
            pacing,
            started: None,
            handshake_lost: 0,
            state: JumpState::Unvalidated,
            retreated: false,
            refuted: None,
            partial: plan.busy > 0 || plan.young > 0 || plan.source != Source::Measured,
            ack_check,
            acks_from: None,
            acks_last: 0,
            timed_at: full.unwrap_or(pacing),
            full,
            handshake_over: false,
        })
    }

    /// The pacing to set at connect: the whole believed rate for a flight before the
    /// handshake's last ACK ([`Jump::new`]), else the jump's.
    pub fn pacing(&self) -> u64 {
        self.full.unwrap_or(self.pacing)
    }

    pub fn done(&self) -> bool {
        self.state == JumpState::Done
    }

    /// The jump met loss or slow acknowledgements before it was validated: the path carried
    /// less than planned.
    pub fn retreated(&self) -> bool {
        self.retreated
    }

    /// The rate (bytes/s) of the first acknowledgements when they refuted the believed rate the
    /// jump was paced at (before the retreat's floor). A loss refutes nothing more precise:
    /// the kernel's delivery rate at that moment may span the whole first round trip.
    pub fn refuted(&self) -> Option<u64> {
        self.refuted
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
    ///
    /// A jump paced at a rate not measured on the path now (`LinkRate`, or a measurement from
    /// before the last reconfiguration), alone on its path, is also tested by the rate of its
    /// first acknowledgements, timed while they keep coming ([`ACK_RATE_TIME`],
    /// [`ACK_RATE_BYTES`]): when they come at less than half the pacing while the smoothed RTT
    /// grows ([`ACK_QUEUE_RISE`]), the link queues what the flow sends, so it is slower than
    /// believed, and the jump retreats to their rate at once. On GEO they come half a round trip
    /// before the jump has left: a `LinkRate` ten times too high otherwise sent a whole 1 MB
    /// answer into a 10 Mbit/s link within 0.2 s, and the link dropped its tail, with nothing
    /// sent behind it to report the loss. A sender that is merely slow (a server answering in
    /// pieces, or one held by StarPEP's window, which keeps the PEP nearly empty) builds no
    /// queue. Neither the kernel's application-limited mark nor the bytes waiting in the PEP
    /// tell the two apart: the kernel marks every flow's first flight, sent from an empty
    /// socket.
    pub fn on_sample(&mut self, now: Duration, s: &JumpSample) -> JumpAction {
        if s.handshake {
            self.handshake_lost = s.lost;
            return JumpAction::Keep;
        }
        // The handshake is over: the jump proper is paced at its unvalidated rate until the
        // flight before it bore the whole rate out.
        let paced_full = !std::mem::replace(&mut self.handshake_over, true) && self.full.is_some();
        let lost = s.lost.saturating_sub(self.handshake_lost);
        if s.bytes_acked > 0 && self.started.is_none() {
            self.started = Some(now);
        }
        let srtt = s.srtt.max(Duration::from_millis(1));
        if self.state == JumpState::Unvalidated && lost == 0 {
            match self.first_acks(now, s) {
                FirstAcks::Slow(rate) => {
                    self.full = None;
                    self.refuted = Some(rate);
                    return self.retreat(now, srtt, rate);
                }
                FirstAcks::Full => {
                    if let Some(full) = self.full.take() {
                        // Validated at the whole rate: nothing left for a restart to find.
                        self.pacing = full;
                        self.partial = false;
                        return JumpAction::Raise(full);
                    }
                }
                FirstAcks::Untold => {}
            }
        }
        let action = self.validate(now, s, srtt, lost);
        if paced_full && action == JumpAction::Keep {
            return JumpAction::Pace(self.pacing);
        }
        action
    }

    /// The jump's validation, or its retreat on loss.
    fn validate(&mut self, now: Duration, s: &JumpSample, srtt: Duration, lost: u32) -> JumpAction {
        match self.state {
            JumpState::Done => JumpAction::Keep,
            JumpState::Unvalidated if lost > 0 => self.retreat(now, srtt, s.delivery_rate),
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

    /// Paces at `delivered` (bytes/s) for two round trips. Never below a quarter of the jump's
    /// pacing (the path's rate, or half of it unvalidated; a share's window may deliver less):
    /// the kernel spaces each packet by its length over the rate when it is sent, and a later,
    /// higher rate does not take back a gap already scheduled (one segment at a few bytes/s
    /// would stall the flow for minutes). A delivery rate of 0 says nothing yet.
    fn retreat(&mut self, now: Duration, srtt: Duration, delivered: u64) -> JumpAction {
        let rate = delivered.clamp(self.pacing / RETREAT_FLOOR, self.pacing);
        self.state = JumpState::Retreat {
            until: now + 2 * srtt,
        };
        self.retreated = true;
        JumpAction::Pace(rate)
    }

    /// What the first acknowledgements, timed long enough while they kept coming, say of the
    /// rate their bytes were paced at.
    fn first_acks(&mut self, now: Duration, s: &JumpSample) -> FirstAcks {
        if !self.ack_check || s.bytes_acked == 0 {
            return FirstAcks::Untold;
        }
        let Some((from, acked, srtt)) = self.acks_from else {
            self.acks_from = Some((now, s.bytes_acked, s.srtt));
            self.acks_last = s.bytes_acked;
            return FirstAcks::Untold;
        };
        if s.bytes_acked <= self.acks_last {
            // The stream paused: what was sent before it is all acknowledged, and the next
            // acknowledgements come a round trip later. Tested once, or not at all.
            self.ack_check = false;
            self.full = None;
            return FirstAcks::Untold;
        }
        self.acks_last = s.bytes_acked;
        let (time, bytes) = (now.saturating_sub(from), s.bytes_acked - acked);
        if time < ACK_RATE_TIME || bytes < ACK_RATE_BYTES {
            return FirstAcks::Untold;
        }
        // Tested once: later acknowledgements are of the jump itself, which the loss rule and
        // the validation follow.
        self.ack_check = false;
        let rate = (bytes as f64 / time.as_secs_f64()) as u64;
        let queued = s.srtt.saturating_sub(srtt) >= time.mul_f64(ACK_QUEUE_RISE);
        if rate < self.timed_at / ACK_RATE_SHORT && queued {
            FirstAcks::Slow(rate)
        } else if rate as f64 >= ACK_RATE_FULL * self.timed_at as f64 {
            FirstAcks::Full
        } else {
            self.full = None;
            FirstAcks::Untold
        }
    }
}

/// What a jump's first acknowledgements said.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FirstAcks {
    /// Slower than half their pacing, and queueing: the rate (bytes/s) they came at.
    Slow(u64),
    /// At (nearly) their pacing.
    Full,
    /// Nothing (yet).
    Untold,
}
