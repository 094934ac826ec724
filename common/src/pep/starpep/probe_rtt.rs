//! BBR's ProbeRTT on the satellite segment (pure): when to restart the kernel BBR's model so
//! that its min-RTT filter never expires.
//!
//! Kernel BBR keeps the minimum RTT of the last 10 s. When no sample has been below it for
//! 10 s, it enters ProbeRTT: cwnd 4 segments for 200 ms and a round trip. On LEO this is the
//! rule, not the exception: the path changes every 15 s, and after a change to a longer path no
//! sample can beat the old minimum, so the link idles for ~250 ms every 10 s (measured here:
//! three stalls at 1–2 Mbit/s in a 60 s download on the Starlink trace, each followed by its
//! queue in the PEP). StarPEP measures the base RTT itself (drains, reconfiguration probes) and
//! bounds the in-flight bytes, so BBR's ProbeRTT buys nothing. Re-initialising BBR (switching
//! the socket's congestion control away and back) restarts its filter from the kernel's own
//! minimum RTT and keeps cwnd; the restart is asked for shortly before the filter would expire,
//! and at once if ProbeRTT was entered anyway.

use std::time::Duration;

use crate::pep::BbrInfo;

/// Kernel BBR's min-RTT filter window (`bbr_min_rtt_win_sec`).
pub const BBR_MIN_RTT_WIN: Duration = Duration::from_secs(10);
/// The restart comes this long before the filter expires (a few control periods, so a late
/// tick still lands before it).
pub const RESTART_AHEAD: Duration = Duration::from_millis(300);

/// Tracks when BBR last refreshed its min RTT (seen as its value changing).
#[derive(Debug, Clone, Default)]
pub struct ProbeRttGuard {
    last: Option<(u32, Duration)>,
}

impl ProbeRttGuard {
    /// One sample at `now`; `true`: restart BBR now.
    pub fn on_sample(&mut self, now: Duration, b: &BbrInfo) -> bool {
        let Some((rtt, since)) = self.last else {
            // The first sample: the filter was refreshed at most now.
            self.last = Some((b.min_rtt_us, now));
            return false;
        };
        if b.min_rtt_us != rtt {
            self.last = Some((b.min_rtt_us, now));
        }
        let due = now.saturating_sub(since) + RESTART_AHEAD >= BBR_MIN_RTT_WIN;
        if b.in_probe_rtt() || (b.min_rtt_us == rtt && due) {
            // After the restart BBR's filter starts again from now.
            self.last = Some((b.min_rtt_us, now));
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bbr(min_rtt_us: u32, cwnd_gain: u32) -> BbrInfo {
        BbrInfo {
            bw: 6_000_000,
            min_rtt_us,
            pacing_gain: 256,
            cwnd_gain,
        }
    }

    #[test]
    fn restarts_before_an_unrefreshed_filter_expires_and_not_when_it_is_refreshed() {
        let mut g = ProbeRttGuard::default();
        let ms = Duration::from_millis;
        let mut restarts = Vec::new();
        // A stable minimum for 25 s, sampled every 5 ms.
        for i in 0..5000u64 {
            if g.on_sample(ms(i * 5), &bbr(25_000, 512)) {
                restarts.push(i * 5);
            }
        }
        let due = (BBR_MIN_RTT_WIN - RESTART_AHEAD).as_millis() as u64;
        assert_eq!(restarts, vec![due, 2 * due], "{restarts:?}");
        // A minimum that keeps being refreshed (a lower value every few seconds) never asks.
        let mut g = ProbeRttGuard::default();
        let mut asked = false;
        for i in 0..5000u64 {
            asked |= g.on_sample(ms(i * 5), &bbr(30_000 - (i * 5 / 4000) as u32, 512));
        }
        assert!(!asked);
    }

    #[test]
    fn probe_rtt_entered_anyway_restarts_at_once() {
        let mut g = ProbeRttGuard::default();
        assert!(!g.on_sample(Duration::ZERO, &bbr(25_000, 512)));
        assert!(g.on_sample(Duration::from_millis(5), &bbr(25_000, 256)));
        // Not again on the next tick unless still in ProbeRTT.
        assert!(!g.on_sample(Duration::from_millis(10), &bbr(25_000, 512)));
    }
}
