//! Tests of the satellite segment's start (`start.rs`), on a virtual clock: each source of a
//! plan, the share between flows, reconfigurations and expiry (a jump's validation and retreat:
//! `tests_jump.rs`); then a closed loop (a slow-start sender on a GEO bottleneck) that shows
//! what the plan buys and that a 10× wrong configuration stays bounded.

use std::time::Duration;

use super::jump::Jump;
use super::starpep::Phases;
use super::start::*;
use crate::reconfig::ReconfigSchedule;

const MSS: u32 = 1400;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn no_schedule() -> Phases {
    Phases {
        schedule: None,
        guard: ms(100),
        probe: ms(200),
        recover: ms(300),
    }
}

fn starlink() -> Phases {
    Phases {
        schedule: Some(ReconfigSchedule::utc(ms(15_000), ms(12_000))),
        ..no_schedule()
    }
}

fn geo() -> Link {
    Link {
        rate: 1.25e6,
        rtt: ms(500),
    }
}

fn starts(configured: Option<Link>, phases: Phases) -> Starts<u32> {
    Starts::new(StartParams {
        configured,
        mss: MSS,
        phases,
        leo_max_rtt: Some(ms(150)),
    })
}

#[test]
fn nothing_measured_nor_configured_is_the_kernels_default() {
    let s = starts(None, no_schedule());
    let p = s.plan(&0, ms(1000));
    assert_eq!(p.source, Source::Default);
    assert_eq!((p.init_cwnd, p.pacing), (None, None));
    assert!(Jump::new(&p, MSS, false).is_none());
}

#[test]
fn a_configured_link_gives_half_its_bdp_paced_at_half_its_rate() {
    let s = starts(Some(geo()), no_schedule());
    let p = s.plan(&0, ms(1000));
    assert_eq!(p.source, Source::Configured);
    let segs = (geo().bdp() * UNVALIDATED_SHARE / MSS as f64) as u32;
    assert_eq!(p.init_cwnd, Some(segs));
    let pace = p.pacing.unwrap() as f64;
    assert!(
        (pace / (geo().rate * UNVALIDATED_SHARE) - 1.0).abs() < 0.01,
        "{pace}"
    );
}

#[test]
fn a_measured_path_gives_a_lone_flow_the_whole_bdp_and_one_beside_a_busy_flow_three_quarters() {
    let mut s = starts(
        Some(Link {
            rate: 12.5e6,
            rtt: ms(600),
        }),
        no_schedule(),
    );
    // One busy flow measures 1.25 MB/s over 500 ms: the configured 100 Mbit/s no longer counts.
    for t in (0..5).map(|k| ms(1000 * k)) {
        s.on_sample(&7, 1, t, RateSample::alone(1.25e6, ms(500)));
    }
    let with_one = s.plan(&7, ms(4500));
    assert_eq!((with_one.source, with_one.busy), (Source::Measured, 1));
    let full = (geo().bdp() / MSS as f64) as u32;
    // The busy flow yields to the new one (least attained service, `pep::priority`).
    assert_eq!(
        with_one.init_cwnd,
        Some((geo().bdp() * 0.75 / MSS as f64) as u32)
    );
    s.on_end(&7, 1);
    let alone = s.plan(&7, ms(4500));
    assert_eq!((alone.source, alone.busy), (Source::Measured, 0));
    assert_eq!(alone.init_cwnd, Some(full));
    let pace = alone.pacing.unwrap() as f64;
    assert!((pace / 1.25e6 - 1.0).abs() < 0.01, "{pace}");
    // Another path knows nothing of it.
    assert_eq!(s.plan(&8, ms(4500)).source, Source::Configured);
}

#[test]
fn busy_flows_rates_add_up_and_silent_ones_stop_counting() {
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 1, ms(0), RateSample::alone(0.6e6, ms(500)));
    s.on_sample(&0, 2, ms(100), RateSample::alone(0.65e6, ms(520)));
    let p = s.plan(&0, ms(200));
    assert_eq!(p.busy, 2);
    // Two old busy flows: the new one gets three quarters of the (unvalidated) half.
    let share = 1.25e6 * 0.75 * 0.5;
    assert_eq!(p.init_cwnd, Some((share / MSS as f64) as u32));
    // Flow 1 falls silent (app-limited samples are not fed): after FRESH only flow 2 is busy.
    s.on_sample(&0, 2, FRESH + ms(500), RateSample::alone(1.25e6, ms(500)));
    assert_eq!(s.plan(&0, FRESH + ms(500)).busy, 1);
}

#[test]
fn two_flows_whose_filters_each_hold_the_whole_link_count_it_once() {
    let mut s = starts(None, no_schedule());
    // Flow 1 had the link alone; flow 2 jumped in: both filtered estimates say 1.25 MB/s, but
    // each delivered half of it over the last second.
    let half = |rtt| RateSample {
        capacity: 1.25e6,
        delivered: 0.625e6,
        rtt,
        total: u64::MAX,
        congested: false,
    };
    s.on_sample(&0, 1, ms(1000), half(ms(500)));
    s.on_sample(&0, 2, ms(1300), half(ms(510)));
    s.on_end(&0, 1);
    s.on_end(&0, 2);
    let p = s.plan(&0, ms(1400));
    assert_eq!((p.source, p.busy), (Source::Measured, 0));
    assert_eq!(p.init_cwnd, Some((geo().bdp() / MSS as f64) as u32));
    // Deliveries above every estimate (the estimates lag a rising link) still add up.
    let mut s = starts(None, no_schedule());
    for (f, t) in [(1, 1000), (2, 1100)] {
        let r = RateSample {
            capacity: 0.5e6,
            delivered: 0.7e6,
            rtt: ms(500),
            total: u64::MAX,
            congested: false,
        };
        s.on_sample(&0, f, ms(t), r);
    }
    let p = s.plan(&0, ms(1200));
    assert_eq!(p.busy, 2);
    assert_eq!(p.init_cwnd, Some((1.4e6 * 0.75 * 0.5 / MSS as f64) as u32));
}

#[test]
fn zero_and_non_finite_samples_are_ignored() {
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 1, ms(0), RateSample::alone(0.0, ms(500)));
    s.on_sample(&0, 1, ms(0), RateSample::alone(f64::NAN, ms(500)));
    s.on_sample(&0, 1, ms(0), RateSample::alone(1e6, Duration::ZERO));
    assert_eq!(s.plan(&0, ms(10)).source, Source::Default);
}

/// A flow that had delivered `total` bytes when it reported `rate` (bytes/s) on a 500 ms path.
fn short(rate: f64, total: u64) -> RateSample {
    RateSample {
        total,
        ..RateSample::alone(rate, ms(500))
    }
}

#[test]
fn a_short_flow_does_not_lower_what_the_path_measured_and_a_long_one_does() {
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 1, ms(0), RateSample::alone(1.25e6, ms(500)));
    s.on_end(&0, 1);
    let before = s.plan(&0, ms(1000));
    // A 48 KB answer, done in its first round trip, reports ~96 KB/s: its size, not the link's.
    s.on_sample(&0, 2, ms(1500), short(96e3, 48_000));
    s.on_end(&0, 2);
    let after = s.plan(&0, ms(2000));
    assert_eq!(after.source, Source::Measured);
    assert_eq!(
        after.init_cwnd, before.init_cwnd,
        "a short flow lowered the path"
    );
    // A flow that carried two round trips at its own rate did measure the path: the link has
    // less to give now.
    s.on_sample(&0, 3, ms(3000), short(0.6e6, 600_000));
    s.on_end(&0, 3);
    let lower = s.plan(&0, ms(3500));
    assert!(
        lower.init_cwnd.unwrap() < before.init_cwnd.unwrap() * 3 / 5,
        "{lower:?} vs {before:?}"
    );
    // A short flow may still raise it.
    s.on_sample(&0, 4, ms(4000), short(1.0e6, 50_000));
    s.on_end(&0, 4);
    assert!(s.plan(&0, ms(4000)).init_cwnd > lower.init_cwnd);
}

#[test]
fn a_short_flow_does_not_replace_the_configured_link_and_a_long_one_does() {
    let mut s = starts(Some(geo()), no_schedule());
    s.on_sample(&0, 1, ms(0), short(96e3, 48_000));
    s.on_end(&0, 1);
    assert_eq!(s.plan(&0, ms(500)).source, Source::Configured);
    // A configured rate ten times too high: a flow that ran two round trips at what the link
    // really carries replaces it, long before it could carry the configured BDP.
    let mut s = starts(
        Some(Link {
            rate: 12.5e6,
            rtt: ms(500),
        }),
        no_schedule(),
    );
    s.on_sample(&0, 1, ms(0), short(1.25e6, 1_300_000));
    let p = s.plan(&0, ms(500));
    assert_eq!(p.source, Source::Measured);
    // Flow 1 is still busy: the new flow starts at three quarters (`pep::priority`).
    assert_eq!(p.init_cwnd, Some((geo().bdp() * 0.75 / MSS as f64) as u32));
}

#[test]
fn flows_too_short_to_measure_still_take_their_share_after_expire() {
    let mut s = starts(Some(geo()), no_schedule());
    for f in 1..=3 {
        s.on_sample(&0, f, ms(100 * f), short(96e3, 48_000));
    }
    s.expire(ms(400));
    let p = s.plan(&0, ms(400));
    assert_eq!((p.source, p.busy), (Source::Configured, 3));
    // Neither young nor old, they share with the new flow: a quarter of the unvalidated half.
    let want = geo().bdp() * UNVALIDATED_SHARE / 4.0 / MSS as f64;
    assert_eq!(p.init_cwnd, Some(want as u32));
}

#[test]
fn many_short_flows_together_measure_a_drop_and_so_does_a_failed_jump() {
    // The link fell to 0.6 MB/s: ten flows of 300 KB each, none long enough alone, together
    // carried it for over two round trips.
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 100, ms(0), RateSample::alone(1.25e6, ms(500)));
    s.on_end(&0, 100);
    for f in 1..=10 {
        let r = RateSample {
            capacity: 0.6e6,
            delivered: 0.06e6,
            rtt: ms(500),
            total: 300_000,
            congested: false,
        };
        s.on_sample(&0, f, ms(1000 + f), r);
    }
    for f in 1..=10 {
        s.on_end(&0, f);
    }
    let p = s.plan(&0, ms(2000));
    assert!(
        p.init_cwnd.unwrap() < (geo().bdp() / MSS as f64) as u32,
        "{p:?}"
    );
    // A short flow whose jump met loss lowers the path at once.
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 100, ms(0), RateSample::alone(1.25e6, ms(500)));
    s.on_end(&0, 100);
    let full = s.plan(&0, ms(100)).init_cwnd.unwrap();
    s.on_sample(
        &0,
        1,
        ms(1000),
        RateSample {
            congested: true,
            ..short(0.3e6, 60_000)
        },
    );
    s.on_end(&0, 1);
    assert!(s.plan(&0, ms(1100)).init_cwnd.unwrap() < full / 3);
}

#[test]
fn a_measurement_expires_and_the_configuration_decides_again() {
    let mut s = starts(Some(geo()), no_schedule());
    s.on_sample(&0, 1, ms(0), RateSample::alone(2.5e6, ms(500)));
    s.on_end(&0, 1);
    assert_eq!(s.plan(&0, MAX_AGE).source, Source::Measured);
    assert_eq!(s.plan(&0, MAX_AGE + ms(1)).source, Source::Configured);
    s.expire(MAX_AGE + ms(1));
    assert_eq!(s.paths().count(), 0);
}

#[test]
fn a_small_bdp_is_the_kernels_default_and_a_huge_one_is_capped() {
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 1, ms(0), RateSample::alone(100e3, ms(100))); // 10 KB: below 10 segments
    assert_eq!(s.plan(&1, ms(1)).init_cwnd, None);
    assert_eq!(s.plan(&0, ms(1)).source, Source::Default);
    s.on_sample(&2, 1, ms(0), RateSample::alone(1e9, ms(600)));
    s.on_end(&2, 1);
    assert_eq!(s.plan(&2, ms(1)).init_cwnd, Some(MAX_INIT_CWND));
}

/// 12:00:00 UTC on some day, as UNIX time (a multiple of the minute).
fn minute() -> Duration {
    Duration::from_secs(29_666_667 * 60)
}

#[test]
fn around_a_reconfiguration_a_leo_path_starts_from_the_kernels_default() {
    let mut s = starts(None, starlink());
    let t_k = minute() + ms(12_000);
    // Measured well before T_k on a 40 ms path.
    s.on_sample(&0, 1, t_k - ms(3000), RateSample::alone(10e6, ms(40)));
    s.on_end(&0, 1);
    assert_eq!(s.plan(&0, t_k - ms(101)).source, Source::Measured);
    for t in [t_k - ms(100), t_k, t_k + ms(199), t_k + ms(499)] {
        assert_eq!(
            s.plan(&0, t).source,
            Source::Default,
            "at T_k{:+?}",
            t.as_millis() as i64 - t_k.as_millis() as i64
        );
    }
    // After the recover phase the path is the new one: the old measurement is stale (half).
    let after = s.plan(&0, t_k + ms(500));
    assert_eq!(after.source, Source::Stale);
    assert_eq!(
        after.init_cwnd,
        Some((10e6 * 0.040 * 0.5 / MSS as f64) as u32)
    );
    // Measured again on the new path: the whole share again.
    s.on_sample(&0, 2, t_k + ms(900), RateSample::alone(10e6, ms(40)));
    s.on_end(&0, 2);
    assert_eq!(s.plan(&0, t_k + ms(1000)).source, Source::Measured);
}

#[test]
fn the_starlink_schedule_does_not_shape_a_geo_path() {
    let mut s = starts(None, starlink());
    let t_k = minute() + ms(12_000);
    s.on_sample(&0, 1, t_k - ms(3000), RateSample::alone(1.25e6, ms(500)));
    s.on_end(&0, 1);
    for t in [t_k, t_k + ms(600)] {
        assert_eq!(s.plan(&0, t).source, Source::Measured);
    }
}

/// A closed loop on a virtual clock: a sender that starts with `iw` segments, doubles its
/// window each round trip (slow start, the kernel's start for a new flow) and sends at most
/// `pacing` per round trip's worth; a bottleneck of `link_rate` with `buffer` bytes of queue
/// (drop-tail); the flow is `size` bytes. Returns the completion time and the bytes dropped.
fn transfer(size: f64, iw: u32, pacing: Option<f64>, link_rate: f64, rtt: f64) -> (f64, f64) {
    let buffer = 500.0 * 1500.0;
    let mut cwnd = iw as f64 * MSS as f64;
    let (mut sent, mut t, mut dropped) = (0.0, 0.0, 0.0);
    while sent < size {
        let burst = cwnd.min(size - sent);
        let rate = pacing.unwrap_or(f64::INFINITY);
        // What arrives at the bottleneck faster than it drains queues; beyond the buffer, drops.
        let spread = burst / rate;
        let excess = (burst - link_rate * spread) - buffer;
        let lost = excess.max(0.0);
        dropped += lost;
        sent += burst - lost;
        t += rtt.max(burst / link_rate);
        cwnd = if lost > 0.0 {
            (burst - lost).max(cwnd / 2.0)
        } else {
            cwnd * 2.0
        };
    }
    (t + rtt, dropped)
}

#[test]
fn in_a_closed_loop_the_plan_saves_the_slow_start_and_a_wrong_rate_stays_bounded() {
    let rtt = geo().rtt.as_secs_f64();
    let size = 1e6;
    let ideal = size / geo().rate + 2.0 * rtt;
    let (kernel, _) = transfer(size, KERNEL_INIT_CWND, None, geo().rate, rtt);
    // A measured path (the lone flow gets the whole BDP, paced at the link rate).
    let mut s = starts(None, no_schedule());
    s.on_sample(&0, 1, ms(0), RateSample::alone(geo().rate, geo().rtt));
    s.on_end(&0, 1);
    let p = s.plan(&0, ms(1));
    let (measured, lost) = transfer(
        size,
        p.init_cwnd.unwrap(),
        p.pacing.map(|v| v as f64),
        geo().rate,
        rtt,
    );
    assert_eq!(lost, 0.0);
    assert!(
        measured <= 1.3 * ideal,
        "measured start {measured:.2} s, ideal {ideal:.2} s"
    );
    assert!(
        kernel > 1.5 * measured,
        "kernel start {kernel:.2} s vs {measured:.2} s"
    );
    // A configuration 10× too high: the unvalidated half-BDP jump, paced at half the wrong
    // rate, overfills the buffer once; the flow still beats the kernel's start.
    let wrong = starts(
        Some(Link {
            rate: 12.5e6,
            rtt: ms(600),
        }),
        no_schedule(),
    )
    .plan(&0, ms(1));
    let (t_wrong, lost) = transfer(
        size,
        wrong.init_cwnd.unwrap(),
        wrong.pacing.map(|v| v as f64),
        geo().rate,
        rtt,
    );
    assert!(
        lost > 0.0,
        "a 10× jump must overflow this buffer in the model"
    );
    assert!(
        t_wrong < kernel,
        "wrong rate {t_wrong:.2} s vs kernel {kernel:.2} s"
    );
}

#[test]
fn routes_lower_at_once_and_rise_at_most_once_a_second() {
    let t = ms(10_000);
    assert!(!route_update(None, None, t));
    assert!(
        route_update(None, Some(400), t),
        "the first plan applies at once"
    );
    assert!(
        !route_update(Some((Some(400), t)), Some(420), t + ms(5000)),
        "within an eighth"
    );
    assert!(
        route_update(Some((Some(400), t)), Some(200), t + ms(1)),
        "lower: at once"
    );
    assert!(
        route_update(Some((Some(400), t)), None, t + ms(1)),
        "default: at once"
    );
    assert!(!route_update(Some((Some(200), t)), Some(400), t + ms(999)));
    assert!(route_update(
        Some((Some(200), t)),
        Some(400),
        t + ROUTE_RAISE_GAP
    ));
    assert!(!route_update(Some((None, t)), Some(400), t + ms(999)));
}

#[test]
fn a_flow_is_busy_when_it_moved_half_its_rate() {
    assert!(busy(600_000, ms(1000), 1.0e6));
    assert!(!busy(400_000, ms(1000), 1.0e6));
    assert!(!busy(400_000, ms(1000), 0.0));
}

#[test]
fn a_flows_path_is_its_peer_at_the_pop_and_the_tunnel_at_the_box() {
    use crate::pep::TenantMap;
    let pop = TenantMap::new(vec![
        vec!["10.1.0.0/24".parse().unwrap()],
        vec!["10.3.0.0/24".parse().unwrap()],
    ]);
    let a = |s: &str| s.parse().unwrap();
    assert_eq!(PathKey::of(&pop, a("10.3.0.9")), Some(PathKey::Peer(1)));
    assert_eq!(PathKey::of(&pop, a("192.0.2.1")), None);
    assert_eq!(
        PathKey::of(&TenantMap::default(), a("10.1.0.2")),
        Some(PathKey::All)
    );
}

#[test]
fn old_busy_flows_yield_to_a_young_one_for_its_first_round_trips() {
    let mut s = starts(None, no_schedule());
    for t in (0..5).map(|k| ms(1000 * k)) {
        s.on_sample(&0, 1, t, RateSample::alone(1.25e6, ms(500)));
    }
    assert_eq!(
        s.yield_cap(&0, 1, ms(4500)),
        None,
        "no young flow, no yield"
    );
    // A new flow beside the busy one starts at three quarters of the link.
    let p = s.plan(&0, ms(4500));
    assert_eq!((p.busy, p.young), (1, 0));
    let bdp = geo().bdp() / MSS as f64;
    assert_eq!(p.init_cwnd, Some((bdp * 0.75) as u32));
    // Its first byte makes it young: the old flow paces at a quarter of the path.
    s.on_first_byte(&0, 2, ms(4600));
    assert_eq!(s.yield_cap(&0, 1, ms(4600)), Some(312_500));
    assert_eq!(
        s.yield_cap(&0, 2, ms(4600)),
        None,
        "the young flow does not yield"
    );
    // A third flow shares the young part with it while bytes of the young one wait, paced
    // at the path's rate (a short answer leaves at the link's speed).
    assert!(s.on_look(&0, 2, ms(4690), true));
    let p = s.plan(&0, ms(4700));
    assert_eq!((p.busy, p.young), (1, 1));
    assert_eq!(p.init_cwnd, Some((bdp * 0.375) as u32));
    assert_eq!(p.pacing, Some(1_250_000));
    // Once the young one has sent everything it takes no share and is yielded nothing (the
    // link would idle), but it is still young: its next answer is yielded to again.
    assert!(s.on_look(&0, 2, ms(4800), false));
    let p = s.plan(&0, ms(4800));
    assert_eq!((p.busy, p.young), (1, 0));
    assert_eq!(p.init_cwnd, Some((bdp * 0.75) as u32));
    assert_eq!(s.yield_cap(&0, 1, ms(4800)), None);
    assert!(s.on_look(&0, 2, ms(5000), true));
    assert!(s.yield_cap(&0, 1, ms(5000)).is_some());
    // Four round trips (2 s) after its first byte it is old: nobody yields any more, and the
    // young flow's next answer does not make it young again.
    assert!(s.on_look(&0, 2, ms(6590), true));
    assert!(s.yield_cap(&0, 1, ms(6599)).is_some());
    assert!(!s.on_look(&0, 2, ms(6600), true));
    assert_eq!(s.yield_cap(&0, 1, ms(6600)), None);
    s.on_first_byte(&0, 2, ms(7000));
    assert_eq!(s.yield_cap(&0, 1, ms(7000)), None);
    // A young flow that ends releases the old ones at once.
    s.on_first_byte(&0, 3, ms(7000));
    assert!(s.yield_cap(&0, 1, ms(7000)).is_some());
    s.on_end(&0, 3);
    assert_eq!(s.yield_cap(&0, 1, ms(7000)), None);
}

#[test]
fn old_flows_share_their_quarter_and_nothing_known_makes_no_flow_young() {
    let mut s = starts(None, no_schedule());
    for f in [1, 2] {
        s.on_sample(&0, f, ms(1000), RateSample::alone(0.625e6, ms(500)));
    }
    s.on_first_byte(&0, 3, ms(1100));
    assert_eq!(s.yield_cap(&0, 1, ms(1100)), Some(156_250));
    assert_eq!(s.yield_cap(&0, 2, ms(1100)), Some(156_250));
    // A path with neither a measurement nor a configured link has no round trip to count in.
    let mut s = starts(None, no_schedule());
    assert!(!s.on_first_byte(&0, 1, ms(0)));
    assert_eq!(s.plan(&0, ms(0)).young, 0);
    assert_eq!(s.yield_cap(&0, 2, ms(0)), None);
    // A configured link does: a young flow without measurement yields nobody a cap (there is
    // no measured rate to take a share of) but counts for the next flow's share.
    let mut s = starts(Some(geo()), no_schedule());
    assert!(s.on_first_byte(&0, 1, ms(0)));
    assert_eq!(s.plan(&0, ms(40)).young, 1);
    assert_eq!(s.yield_cap(&0, 2, ms(100)), None);
    s.expire(ms(5000));
    assert_eq!(s.plan(&0, ms(5000)).young, 0);
}

#[test]
fn a_busy_flow_yields_only_once_it_carried_a_bdp_of_its_path() {
    let mut s = starts(None, no_schedule());
    let bdp = geo().bdp();
    // Flow 1 measures the path; flow 2 is a kept-alive connection's short answer.
    for t in (0..5).map(|k| ms(1000 * k)) {
        s.on_sample(&0, 1, t, RateSample::alone(1.25e6, ms(500)));
    }
    let short = RateSample {
        total: (bdp * 0.5) as u64,
        ..RateSample::alone(1.25e6, ms(500))
    };
    s.on_sample(&0, 2, ms(4000), short);
    s.on_first_byte(&0, 3, ms(4600));
    assert_eq!(
        s.yield_cap(&0, 2, ms(4600)),
        None,
        "under a BDP of the path carried: it is as short as the young one"
    );
    // The long one keeps the whole quarter (of the two flows' sum).
    let quarter = s.yield_cap(&0, 1, ms(4600)).expect("the long one yields");
    assert_eq!(quarter, 625_000);
    // Once the short one carried a BDP it is old too: the two share the quarter (while the
    // young one still sends).
    s.on_sample(&0, 2, ms(4700), RateSample::alone(1.25e6, ms(500)));
    assert!(s.on_look(&0, 3, ms(4690), true));
    assert_eq!(s.yield_cap(&0, 2, ms(4700)), Some(quarter / 2));
    assert_eq!(s.yield_cap(&0, 1, ms(4700)), Some(quarter / 2));
    // A flow that never reported busy yields nothing.
    assert_eq!(s.yield_cap(&0, 9, ms(4700)), None);
}
