//! Unit tests of the reconfiguration phases: every boundary of guard, probe and recover on the
//! Starlink UTC grid and on a periodic schedule, and the ramp.

use std::time::Duration;

use super::phase::{Phase, Phases};
use crate::reconfig::ReconfigSchedule;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn starlink() -> Phases {
    Phases {
        schedule: Some(ReconfigSchedule::utc(
            Duration::from_secs(15),
            Duration::from_secs(12),
        )),
        guard: ms(100),
        probe: ms(200),
        recover: ms(300),
    }
}

/// 2026-12-03 10:00:27 UTC, an instant of Starlink's grid.
const T: u64 = 1_796_292_027_000;

#[test]
fn each_boundary_of_each_phase() {
    let p = starlink();
    let cases = [
        (T - 15_000 + 500, Phase::Steady),
        (T - 101, Phase::Steady),
        (T - 100, Phase::Guard),
        (T - 1, Phase::Guard),
        (T, Phase::Probe),
        (T + 199, Phase::Probe),
        (T + 200, Phase::Recover),
        (T + 499, Phase::Recover),
        (T + 500, Phase::Steady),
        (T + 14_899, Phase::Steady),
        (T + 14_900, Phase::Guard),
    ];
    for (t, want) in cases {
        let at = p.at(ms(t));
        assert_eq!(at.phase, want, "at T{:+} ms", t as i64 - T as i64);
    }
}

#[test]
fn phase_ends_are_the_next_boundaries() {
    let p = starlink();
    assert_eq!(p.at(ms(T - 3000)).until, ms(T - 100));
    assert_eq!(p.at(ms(T - 50)).until, ms(T));
    assert_eq!(p.at(ms(T - 50)).instant, Some(ms(T)));
    assert_eq!(p.at(ms(T + 10)).until, ms(T + 200));
    assert_eq!(p.at(ms(T + 10)).instant, Some(ms(T)));
    assert_eq!(p.at(ms(T + 300)).until, ms(T + 500));
    assert_eq!(p.at(ms(T + 600)).until, ms(T + 14_900));
}

#[test]
fn recover_ramps_linearly_from_zero_to_one() {
    let p = starlink();
    assert_eq!(p.at(ms(T + 200)).ramp, 0.0);
    assert!((p.at(ms(T + 350)).ramp - 0.5).abs() < 1e-9);
    assert!((p.at(ms(T + 470)).ramp - 0.9).abs() < 1e-9);
    assert!(p.at(ms(T + 499)).ramp < 1.0);
    assert_eq!(p.at(ms(T + 100)).ramp, 0.0);
}

#[test]
fn starlink_instants_are_seconds_12_27_42_57() {
    let p = starlink();
    for k in 0..8u64 {
        let probe_start = T + k * 15_000;
        assert_eq!(p.at(ms(probe_start)).phase, Phase::Probe);
        let sec = (probe_start / 1000) % 60;
        assert!([12, 27, 42, 57].contains(&sec), "{sec}");
    }
}

#[test]
fn no_schedule_is_always_steady() {
    let p = Phases {
        schedule: None,
        ..starlink()
    };
    for t in [0, T - 100, T, T + 200] {
        let at = p.at(ms(t));
        assert_eq!(at.phase, Phase::Steady);
        assert_eq!(at.until, Duration::MAX);
    }
}

#[test]
fn periodic_schedule_and_zero_length_phases() {
    let p = Phases {
        schedule: Some(ReconfigSchedule::utc(ms(1000), ms(250))),
        guard: Duration::ZERO,
        probe: ms(50),
        recover: Duration::ZERO,
    };
    assert_eq!(p.at(ms(10_249)).phase, Phase::Steady);
    assert_eq!(p.at(ms(10_250)).phase, Phase::Probe);
    assert_eq!(p.at(ms(10_299)).phase, Phase::Probe);
    assert_eq!(p.at(ms(10_300)).phase, Phase::Steady);
    // Before the first instant of the epoch grid.
    assert_eq!(p.at(ms(100)).phase, Phase::Steady);
    assert_eq!(p.at(ms(100)).until, ms(250));
}
