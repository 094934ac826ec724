//! Liveness of the satellite segment (pure): how long its socket waits on a silent peer, and
//! when a split flow is given up because the far PEP is gone (it died, or restarted and forgot
//! the flow) rather than left to hang.
//!
//! - **RTO cap** (`TCP_RTO_MAX_MS`, Linux 6.15+): after an outage the retransmission timer has
//!   backed off exponentially, and the first RTT sample after it (a segment queued through the
//!   outage) inflates the RTO; both can hold a flow idle for tens of seconds after the link is
//!   back. Capped at three times `LinkRtt` (1 s at least, as the kernel requires), the segment
//!   retries at least that often, so it resumes within one capped RTO of the link's return.
//! - **User timeout** (`TCP_USER_TIMEOUT`): with the RTO capped, the kernel's own give-up
//!   (`tcp_retries2`, modelled on an uncapped backoff) would come after ~15 retries, a few tens of
//!   seconds; the user timeout replaces it with `IdleTimeout`, the PEP's own limit for a flow
//!   where nothing moves (it also bounds a zero window, as the idle timeout does).
//! - **Keepalive**: an idle segment whose peer is gone learns nothing by itself. Probes every
//!   [`Liveness::keepalive`] make a restarted peer (or the host behind it) answer with a reset,
//!   and a dead one stay silent.
//! - **Dead peer** ([`Liveness::is_dead`]): nothing (no data, no acknowledgement) for
//!   `DeadPeerTimeout` while something waits on the peer (unacknowledged data or unanswered
//!   probes): the flow is reset both ways. A zero window answered by the peer is alive: its
//!   probes are acknowledged.

use std::time::Duration;

use super::tcpinfo::TcpInfo;

/// The kernel's bounds of `TCP_RTO_MAX_MS`.
const RTO_MAX_MIN: Duration = Duration::from_secs(1);
const RTO_MAX_MAX: Duration = Duration::from_secs(120);
/// Keepalive probe period bounds.
const KEEPALIVE_MIN: Duration = Duration::from_secs(1);
const KEEPALIVE_MAX: Duration = Duration::from_secs(15);

/// The satellite segment's liveness settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Liveness {
    /// `TCP_RTO_MAX_MS`.
    pub rto_max: Duration,
    /// `TCP_USER_TIMEOUT`.
    pub user_timeout: Duration,
    /// Idle time before the first keepalive probe, and between probes.
    pub keepalive: Duration,
    /// `DeadPeerTimeout`.
    pub dead_after: Duration,
}

impl Liveness {
    pub fn new(link_rtt: Duration, idle_timeout: Duration, dead_after: Duration) -> Liveness {
        Liveness {
            rto_max: (link_rtt * 3).clamp(RTO_MAX_MIN, RTO_MAX_MAX),
            user_timeout: idle_timeout,
            keepalive: (dead_after / 4).clamp(KEEPALIVE_MIN, KEEPALIVE_MAX),
            dead_after,
        }
    }

    /// The peer has been silent for `dead_after` while something waited on it.
    pub fn is_dead(&self, i: &TcpInfo) -> bool {
        let silent = Duration::from_millis(u64::from(i.last_ack_recv_ms.min(i.last_data_recv_ms)));
        let waiting = i.unacked > 0 || i.probes > 0;
        waiting && silent >= self.dead_after
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: u64) -> Duration {
        Duration::from_secs(x)
    }

    #[test]
    fn settings_follow_the_link_and_the_timeouts() {
        let geo = Liveness::new(Duration::from_millis(600), s(3600), s(60));
        assert_eq!(geo.rto_max, Duration::from_millis(1800));
        assert_eq!(geo.user_timeout, s(3600));
        assert_eq!(geo.keepalive, s(15));
        let lan = Liveness::new(Duration::from_millis(20), s(3600), s(8));
        assert_eq!(lan.rto_max, s(1), "the kernel takes no less than 1 s");
        assert_eq!(lan.keepalive, s(2));
        let far = Liveness::new(s(60), s(3600), s(2));
        assert_eq!(far.rto_max, s(120));
        assert_eq!(far.keepalive, s(1));
        assert_eq!(Liveness::new(s(1), s(1), s(3600)).keepalive, s(15));
    }

    #[test]
    fn a_peer_is_dead_when_silent_while_something_waits_on_it() {
        let l = Liveness::new(Duration::from_millis(600), s(3600), s(60));
        let i = |unacked, probes, data_ms, ack_ms| TcpInfo {
            unacked,
            probes,
            last_data_recv_ms: data_ms,
            last_ack_recv_ms: ack_ms,
            ..TcpInfo::default()
        };
        // Retransmitting into silence, and probing an idle peer that does not answer.
        assert!(l.is_dead(&i(12, 0, 90_000, 60_000)));
        assert!(l.is_dead(&i(0, 3, 70_000, 61_000)));
        // Not yet.
        assert!(!l.is_dead(&i(12, 0, 90_000, 59_999)));
        // Idle both ways, nothing waiting: the keepalive will ask.
        assert!(!l.is_dead(&i(0, 0, 600_000, 600_000)));
        // A receiver of a download hears data (no new ACKs: it sends nothing).
        assert!(!l.is_dead(&i(0, 1, 10, 600_000)));
        // A zero window: the peer answers the probes.
        assert!(!l.is_dead(&i(40, 0, 600_000, 300)));
    }
}
