//! The reconfiguration schedule (pure): instants `T_k = first + k·period`, shared by the PEP's
//! window controller (on UNIX time: Starlink's :12/:27/:42/:57 seconds) and the emulator (on replay
//! time, where each instant may open an outage window), and the wall-clock start that puts a
//! replay's instants on Starlink's grid.

use std::time::Duration;

/// Starlink reconfigures every 15 s ...
pub const STARLINK_PERIOD: Duration = Duration::from_secs(15);
/// ... at seconds 12, 27, 42 and 57 of each UTC minute (12 s past a multiple of 15 s).
pub const STARLINK_OFFSET: Duration = Duration::from_secs(12);

/// Reconfiguration instants `first + k·period` (k ≥ 0, virtual time since replay start); the
/// link serves no capacity during `[instant, instant + outage)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconfigSchedule {
    pub first: Duration,
    pub period: Duration,
    pub outage: Duration,
    /// Arrivals during an outage are dropped (counted as `dropped_outage`) instead of queued.
    pub outage_drop: bool,
}

impl ReconfigSchedule {
    /// A schedule whose outages queue arrivals. `period` must be nonzero.
    pub fn new(first: Duration, period: Duration, outage: Duration) -> ReconfigSchedule {
        assert!(!period.is_zero(), "reconfiguration period must be nonzero");
        ReconfigSchedule {
            first,
            period,
            outage,
            outage_drop: false,
        }
    }

    /// Fits a schedule of the given `period` to detected instants: `first` is the first
    /// instant corrected by the median residual of all instants against the grid, reduced to
    /// the first grid point ≥ 0. None when `instants` is empty.
    pub fn fit(instants: &[Duration], period: Duration, outage: Duration) -> Option<Self> {
        let &t0 = instants.first()?;
        let p = period.as_nanos() as i128;
        let mut res: Vec<i128> = instants
            .iter()
            .map(|t| {
                let d = t.as_nanos() as i128 - t0.as_nanos() as i128;
                d - (d + p / 2).div_euclid(p) * p
            })
            .collect();
        res.sort_unstable();
        let first = (t0.as_nanos() as i128 + res[res.len() / 2]).rem_euclid(p);
        Some(ReconfigSchedule::new(
            Duration::from_nanos(first as u64),
            period,
            outage,
        ))
    }

    /// All instants, from `first` on (endless).
    pub fn instants(&self) -> impl Iterator<Item = Duration> + '_ {
        (0u32..).map(move |k| self.first + self.period * k)
    }

    /// A schedule on UNIX time: instants `offset + k·period` since the epoch (no outage).
    /// Starlink is `utc(15 s, 12 s)`.
    pub fn utc(period: Duration, offset: Duration) -> ReconfigSchedule {
        ReconfigSchedule::new(
            Duration::from_nanos((offset.as_nanos() % period.as_nanos()) as u64),
            period,
            Duration::ZERO,
        )
    }

    /// The last instant ≤ `t`, if any.
    pub fn prev_instant(&self, t: Duration) -> Option<Duration> {
        self.index_at(t).map(|k| self.instant(k))
    }

    /// Index of the last instant ≤ `t`, if any.
    fn index_at(&self, t: Duration) -> Option<u64> {
        let since = t.checked_sub(self.first)?;
        Some((since.as_nanos() / self.period.as_nanos()) as u64)
    }

    fn instant(&self, k: u64) -> Duration {
        self.first + Duration::from_nanos((u128::from(k) * self.period.as_nanos()) as u64)
    }

    /// The end of the outage containing `t`, if `t` is inside one.
    pub fn outage_end_at(&self, t: Duration) -> Option<Duration> {
        let s = self.instant(self.index_at(t)?);
        (t < s + self.outage).then_some(s + self.outage)
    }

    /// The first instant strictly after `t`.
    pub fn next_instant_after(&self, t: Duration) -> Duration {
        match self.index_at(t) {
            None => self.first,
            Some(k) => self.instant(k + 1),
        }
    }

    /// Outage windows overlapping `[from, to)`, clipped to it.
    pub fn outages_in(
        &self,
        from: Duration,
        to: Duration,
    ) -> impl Iterator<Item = (Duration, Duration)> + '_ {
        let k0 = self.index_at(from).unwrap_or(0);
        let live = !self.outage.is_zero();
        (k0..)
            .map(move |k| self.instant(k))
            .take_while(move |&s| live && s < to)
            .filter_map(move |s| {
                let (a, b) = (s.max(from), (s + self.outage).min(to));
                (a < b).then_some((a, b))
            })
    }

    /// Total outage time within `[from, to)`.
    pub fn downtime_in(&self, from: Duration, to: Duration) -> Duration {
        self.outages_in(from, to).map(|(a, b)| b - a).sum()
    }
}

/// The earliest UNIX time `S ≥ now_unix` such that `S + sched.first` falls on second 12, 27, 42
/// or 57 of a UTC minute, to the nanosecond. Starting the replay at `S` puts the schedule's
/// first reconfiguration (and, with a 15 s period, every later one) on Starlink's real grid,
/// where the PEP's built-in Starlink preset expects them.
pub fn starlink_aligned_start(now_unix: Duration, sched: &ReconfigSchedule) -> Duration {
    let p = STARLINK_PERIOD.as_nanos();
    let phase = (now_unix + sched.first).as_nanos() % p;
    let wait = (STARLINK_OFFSET.as_nanos() + p - phase) % p;
    now_unix + Duration::from_nanos(wait as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn windows_and_instants() {
        let s = ReconfigSchedule::new(ms(100), ms(1000), ms(50));
        let v: Vec<_> = s.instants().take(3).collect();
        assert_eq!(v, [ms(100), ms(1100), ms(2100)]);
        assert_eq!(s.outage_end_at(ms(99)), None);
        assert_eq!(s.outage_end_at(ms(100)), Some(ms(150)));
        assert_eq!(s.outage_end_at(ms(1149)), Some(ms(1150)));
        assert_eq!(s.outage_end_at(ms(1150)), None);
        assert_eq!(s.next_instant_after(ms(0)), ms(100));
        assert_eq!(s.next_instant_after(ms(100)), ms(1100));
        assert_eq!(s.downtime_in(ms(0), ms(3000)), ms(150));
        assert_eq!(s.downtime_in(ms(120), ms(1110)), ms(40));
        let z = ReconfigSchedule::new(ms(100), ms(1000), Duration::ZERO);
        assert_eq!(z.outage_end_at(ms(100)), None);
        assert_eq!(z.downtime_in(ms(0), ms(5000)), Duration::ZERO);
    }

    #[test]
    fn utc_grid_and_neighbours() {
        let s = ReconfigSchedule::utc(STARLINK_PERIOD, STARLINK_OFFSET);
        // 2026-12-03 10:00:27 UTC is an instant; 10:00:30 lies between :27 and :42.
        let at = Duration::from_secs(1_796_292_027);
        assert_eq!(s.prev_instant(at), Some(at));
        assert_eq!(s.next_instant_after(at), at + STARLINK_PERIOD);
        let mid = at + Duration::from_secs(3);
        assert_eq!(s.prev_instant(mid), Some(at));
        assert_eq!(s.next_instant_after(mid), at + STARLINK_PERIOD);
        assert_eq!(s.prev_instant(ms(11_999)), None);
        assert_eq!(s.next_instant_after(ms(0)), ms(12_000));
        assert_eq!(ReconfigSchedule::utc(ms(1000), ms(2500)).first, ms(500));
    }

    #[test]
    fn fit_recovers_the_grid() {
        let inst = [
            ms(8750),
            ms(23730),
            ms(38740),
            ms(53730),
            ms(68790),
            ms(83740),
        ];
        let s = ReconfigSchedule::fit(&inst, ms(15000), Duration::ZERO).unwrap();
        assert!(s.first >= ms(8730) && s.first <= ms(8750), "{:?}", s.first);
        let late = [ms(23730), ms(38740)];
        let s = ReconfigSchedule::fit(&late, ms(15000), Duration::ZERO).unwrap();
        assert!(s.first < ms(15000));
        assert!(ReconfigSchedule::fit(&[], ms(15000), Duration::ZERO).is_none());
    }

    #[test]
    fn aligned_start_lands_on_starlink_seconds() {
        let sched = ReconfigSchedule::new(ms(8750), STARLINK_PERIOD, Duration::ZERO);
        for now_ms in [0u64, 1, 3_250, 3_251, 1_764_700_000_123, 1_764_700_059_999] {
            let now = ms(now_ms);
            let s = starlink_aligned_start(now, &sched);
            assert!(s >= now && s < now + STARLINK_PERIOD, "now={now_ms}");
            for inst in sched.instants().take(8) {
                let sec_of_minute = (s + inst).as_nanos() % 60_000_000_000;
                assert!(
                    [12u128, 27, 42, 57]
                        .iter()
                        .any(|x| sec_of_minute == x * 1_000_000_000),
                    "now={now_ms} inst={inst:?} lands on {sec_of_minute} ns"
                );
            }
        }
        // Already aligned: no wait.
        assert_eq!(starlink_aligned_start(ms(3_250), &sched), ms(3_250));
    }
}
