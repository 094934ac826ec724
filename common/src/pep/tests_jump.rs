//! Tests of a new flow's jump (`jump.rs`), on a virtual clock: validation by its window or by
//! time, a resent SYN-ACK that is not a loss, the retreat on loss or on first acknowledgements
//! far slower than a believed rate, and the restart of the congestion control after a jump
//! below the path's rate.

use std::time::Duration;

use super::jump::*;
use super::start::{Source, StartPlan};

const MSS: u32 = 1400;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn sample(acked: u64, lost: u32, rate: u64) -> JumpSample {
    JumpSample {
        bytes_acked: acked,
        lost,
        delivery_rate: rate,
        srtt: ms(500),
        handshake: false,
        backlogged: false,
    }
}

fn a_jump() -> Jump {
    let plan = StartPlan {
        init_cwnd: Some(500),
        pacing: Some(1_250_000),
        source: Source::Measured,
        busy: 0,
        young: 0,
    };
    Jump::new(&plan, MSS, false).unwrap()
}

#[test]
fn a_jump_is_validated_by_its_window_acknowledged() {
    let mut j = a_jump();
    assert_eq!(j.on_sample(ms(0), &sample(0, 0, 0)), JumpAction::Keep);
    assert_eq!(
        j.on_sample(ms(600), &sample(100_000, 0, 1_000_000)),
        JumpAction::Keep
    );
    assert_eq!(
        j.on_sample(ms(900), &sample(700_000, 0, 1_200_000)),
        JumpAction::Release
    );
    assert!(j.done());
    assert_eq!(
        j.on_sample(ms(950), &sample(800_000, 3, 1)),
        JumpAction::Keep
    );
}

#[test]
fn a_short_flows_jump_is_validated_two_rtts_after_its_first_ack() {
    let mut j = a_jump();
    assert_eq!(
        j.on_sample(ms(500), &sample(20_000, 0, 1)),
        JumpAction::Keep
    );
    assert_eq!(
        j.on_sample(ms(1499), &sample(20_000, 0, 1)),
        JumpAction::Keep
    );
    assert_eq!(
        j.on_sample(ms(1500), &sample(20_000, 0, 1)),
        JumpAction::Release
    );
}

#[test]
fn a_resent_syn_ack_is_not_a_loss_of_the_jump() {
    // A Fast Open child sends its jump in SYN_RECV and resends its SYN-ACK to a repeated SYN.
    let mut j = a_jump();
    let handshake = |lost| JumpSample {
        handshake: true,
        ..sample(0, lost, 0)
    };
    assert_eq!(j.on_sample(ms(0), &handshake(0)), JumpAction::Keep);
    assert_eq!(j.on_sample(ms(30), &handshake(1)), JumpAction::Keep);
    // Established: the SYN-ACK's retransmission stays in tcpi_total_retrans.
    assert_eq!(
        j.on_sample(ms(500), &sample(20_000, 1, 1_000_000)),
        JumpAction::Keep
    );
    assert_eq!(
        j.on_sample(ms(900), &sample(700_000, 1, 1_200_000)),
        JumpAction::Release
    );
    // A data loss after the handshake still retreats.
    let mut j = a_jump();
    j.on_sample(ms(0), &handshake(1));
    assert_eq!(
        j.on_sample(ms(600), &sample(50_000, 3, 400_000)),
        JumpAction::Pace(400_000)
    );
}

#[test]
fn loss_before_validation_retreats_to_the_delivery_rate_then_releases() {
    let mut j = a_jump();
    j.on_sample(ms(0), &sample(0, 0, 0));
    assert_eq!(
        j.on_sample(ms(600), &sample(50_000, 4, 400_000)),
        JumpAction::Pace(400_000)
    );
    assert!(j.retreated());
    assert_eq!(j.refuted(), None, "a loss refutes no rate");
    assert_eq!(
        j.on_sample(ms(1599), &sample(90_000, 9, 300_000)),
        JumpAction::Keep
    );
    assert_eq!(
        j.on_sample(ms(1600), &sample(90_000, 9, 300_000)),
        JumpAction::Release
    );
    // A delivery rate above the jump's never raises the pacing, and none (or a tiny one) never
    // paces below a quarter of it.
    let mut j = a_jump();
    assert_eq!(
        j.on_sample(ms(1), &sample(1, 1, u64::MAX)),
        JumpAction::Pace(1_250_000)
    );
    for low in [0, 1, 1000] {
        let mut j = a_jump();
        assert_eq!(
            j.on_sample(ms(1), &sample(0, 1, low)),
            JumpAction::Pace(1_250_000 / RETREAT_FLOOR)
        );
    }
}

#[test]
fn a_jump_below_the_paths_rate_restarts_the_cc_if_it_still_has_bytes_to_send() {
    let planned = |busy, young, source| {
        let plan = StartPlan {
            init_cwnd: Some(100),
            pacing: Some(100_000),
            source,
            busy,
            young,
        };
        Jump::new(&plan, MSS, false).unwrap()
    };
    let shared = |busy, young| planned(busy, young, Source::Measured);
    let backlogged = JumpSample {
        backlogged: true,
        ..sample(20_000, 0, 100_000)
    };
    // Beside a busy flow or among young ones, with bytes waiting: BBR starts over.
    for (busy, young) in [(1, 0), (0, 3)] {
        let mut j = shared(busy, young);
        assert_eq!(j.on_sample(ms(500), &backlogged), JumpAction::Keep);
        assert_eq!(j.on_sample(ms(1500), &backlogged), JumpAction::Restart);
        assert!(j.done());
        assert_eq!(j.on_sample(ms(2000), &backlogged), JumpAction::Keep);
    }
    // Nothing left to send: the estimate does not matter.
    let mut j = shared(1, 0);
    j.on_sample(ms(500), &sample(20_000, 0, 1));
    assert_eq!(
        j.on_sample(ms(1500), &sample(20_000, 0, 1)),
        JumpAction::Release
    );
    // A jump alone on a measured path paced at its whole rate: BBR keeps what it learned.
    let mut j = shared(0, 0);
    j.on_sample(ms(500), &backlogged);
    assert_eq!(j.on_sample(ms(1500), &backlogged), JumpAction::Release);
    // Alone on half a configured or stale rate: the other half is to be found.
    for source in [Source::Configured, Source::Stale] {
        let mut j = planned(0, 0, source);
        j.on_sample(ms(500), &backlogged);
        assert_eq!(j.on_sample(ms(1500), &backlogged), JumpAction::Restart);
    }
    // A jump that met loss retreats, then releases without a restart.
    let mut j = shared(1, 0);
    let lost = JumpSample {
        backlogged: true,
        ..sample(20_000, 2, 50_000)
    };
    assert!(matches!(j.on_sample(ms(500), &lost), JumpAction::Pace(_)));
    assert_eq!(j.on_sample(ms(1600), &lost), JumpAction::Release);
}

/// The plan of a flow alone on its path, paced at `pacing` bytes/s from `source`.
fn alone(source: Source, pacing: u64) -> StartPlan {
    StartPlan {
        init_cwnd: Some(2000),
        pacing: Some(pacing),
        source,
        busy: 0,
        young: 0,
    }
}

/// A jump alone on its path, paced at `pacing` bytes/s believed from `source`.
fn believed(source: Source, pacing: u64) -> Jump {
    Jump::new(&alone(source, pacing), MSS, false).unwrap()
}

/// What the jump does when its validation comes (1 s after the first acknowledgements, at
/// `rate`) with bytes still waiting for the satellite socket.
fn validated_backlogged(j: &mut Jump, rate: u64) -> JumpAction {
    let (now, s) = acks(rate, ms(1000), 0.0);
    let backlogged = JumpSample {
        backlogged: true,
        ..s
    };
    j.on_sample(now, &backlogged)
}

/// The look `after` the first acknowledgements were seen (1400 bytes, at 500 ms into a 500 ms
/// path), while they come at `rate` bytes/s and the smoothed RTT grows by `rise` of the time.
fn acks(rate: u64, after: Duration, rise: f64) -> (Duration, JumpSample) {
    let s = JumpSample {
        srtt: ms(500) + after.mul_f64(rise),
        ..sample(1400 + (rate as f64 * after.as_secs_f64()) as u64, 0, 0)
    };
    (ms(500) + after, s)
}

/// Looks every 10 ms from the first acknowledgements to `until`; the actions.
fn looks(j: &mut Jump, rate: u64, until: u64, rise: f64) -> Vec<JumpAction> {
    (0..=until)
        .step_by(10)
        .map(|t| {
            let (now, s) = acks(rate, ms(t), rise);
            j.on_sample(now, &s)
        })
        .collect()
}

#[test]
fn a_believed_rate_retreats_when_its_first_acks_come_slow_and_queue() {
    // LinkRate ten times the link: paced at half of it (6.25 MB/s), acknowledged at the link's
    // 1.25 MB/s, the RTT growing by half the time (measured on geo: 19 ms in 30 ms).
    for source in [Source::Configured, Source::Stale] {
        let mut j = believed(source, 6_250_000);
        let acts = looks(&mut j, 1_250_000, 30, 0.5);
        // Not before the acknowledgements were timed over ACK_RATE_TIME; then paced at their
        // rate, but never below a quarter of the jump's pacing.
        assert!(acts[..3].iter().all(|a| *a == JumpAction::Keep), "{acts:?}");
        assert_eq!(acts[3], JumpAction::Pace(6_250_000 / RETREAT_FLOOR));
        assert!(j.retreated());
        // What the acknowledgements showed goes to the controller, not the floor.
        assert!(j.refuted().is_some_and(|r| r.abs_diff(1_250_000) < 1000));
        // Released after two round trips, without a restart.
        let (now, s) = acks(1_250_000, ms(30) + 2 * ms(530), 0.0);
        assert_eq!(j.on_sample(now, &s), JumpAction::Release);
    }
    // Acknowledgements at a third of the pacing, above the floor: paced at their rate.
    let mut j = believed(Source::Configured, 6_000_000);
    let acts = looks(&mut j, 2_000_000, 30, 0.5);
    assert!(
        matches!(acts[3], JumpAction::Pace(r) if r.abs_diff(2_000_000) < 1000),
        "{acts:?}"
    );
}

#[test]
fn a_believed_rate_that_its_first_acks_bear_out_jumps_on() {
    // LinkRate right: paced at half the link, acknowledged at that pace (or a bit below), no
    // queue.
    for rate in [625_000, 400_000] {
        let mut j = believed(Source::Configured, 625_000);
        let acts = looks(&mut j, rate, 100, 0.0);
        assert!(acts.iter().all(|a| *a == JumpAction::Keep), "{acts:?}");
        // Tested once: later slow acknowledgements are the loss rule's.
        let (now, s) = acks(100_000, ms(300), 0.5);
        assert_eq!(j.on_sample(now, &s), JumpAction::Keep);
        assert_eq!(validated_backlogged(&mut j, rate), JumpAction::Restart);
    }
}

#[test]
fn slow_first_acks_say_nothing_without_a_queue_or_when_measured_shared_or_short() {
    let slow = 1_000_000;
    // A sender slower than the pacing (a server answering in pieces, or held by StarPEP's
    // window): its acknowledgements are slow, but nothing queues.
    let mut j = believed(Source::Configured, 6_250_000);
    assert!(looks(&mut j, slow, 100, 0.1)
        .iter()
        .all(|a| *a == JumpAction::Keep));
    assert!(!j.retreated());
    // A rate measured on the path now: validated by its window or by time, as before.
    let mut j = believed(Source::Measured, 6_250_000);
    assert!(looks(&mut j, slow, 100, 0.5)
        .iter()
        .all(|a| *a == JumpAction::Keep));
    // A jump beside busy or young flows: its acknowledgements are its share.
    for (busy, young) in [(1, 0), (0, 2)] {
        let plan = StartPlan {
            init_cwnd: Some(2000),
            pacing: Some(6_250_000),
            source: Source::Configured,
            busy,
            young,
        };
        let mut j = Jump::new(&plan, MSS, false).unwrap();
        assert!(looks(&mut j, slow, 100, 0.5)
            .iter()
            .all(|a| *a == JumpAction::Keep));
    }
    // Fewer than ten segments acknowledged in the time: too few to time.
    let mut j = believed(Source::Configured, 6_250_000);
    let few = (ACK_RATE_BYTES - 1) as f64 / ACK_RATE_TIME.as_secs_f64();
    let acts = looks(&mut j, few as u64 - 1, 30, 0.5);
    assert!(acts.iter().all(|a| *a == JumpAction::Keep), "{acts:?}");
}

#[test]
fn a_flight_acknowledged_before_the_timing_is_long_enough_says_nothing() {
    // LEO: the first flight (64 KB) is acknowledged within 20 ms; the next acknowledgements come
    // a round trip later. Over wall time the two would read as a slow link.
    let mut j = believed(Source::Configured, 3_125_000);
    let at = |acked: u64, srtt: u64| JumpSample {
        srtt: ms(srtt),
        ..sample(acked, 0, 0)
    };
    for (t, acked, srtt) in [
        (30, 1400, 30),
        (40, 33_000, 35),
        (50, 65_000, 40),
        (60, 65_000, 40),
    ] {
        assert_eq!(
            j.on_sample(ms(t), &at(acked, srtt)),
            JumpAction::Keep,
            "at {t} ms"
        );
    }
    assert_eq!(
        j.on_sample(ms(100), &at(80_000, 60)),
        JumpAction::Keep,
        "the stream paused: not tested"
    );
    assert!(!j.retreated());
}

/// A Fast Open child's jump alone on its path, on a rate believed from `source` and paced at
/// half of it (`pacing`), still waiting for its handshake's last ACK.
fn before_handshake(source: Source, pacing: u64) -> Jump {
    let mut j = Jump::new(&alone(source, pacing), MSS, true).unwrap();
    let hs = JumpSample {
        handshake: true,
        ..sample(0, 0, 0)
    };
    assert_eq!(j.on_sample(ms(0), &hs), JumpAction::Keep);
    j
}

#[test]
fn a_flight_before_the_handshake_paced_at_the_whole_rate_bears_it_out() {
    // LinkRate right (1.25 MB/s): the answer's first 64 KB leave at the whole rate, the jump
    // proper at half of it from the handshake's end, and at the whole rate once the first
    // acknowledgements came at the link's rate without a queue.
    for source in [Source::Configured, Source::Stale] {
        let mut j = before_handshake(source, 625_000);
        assert_eq!(j.pacing(), 1_250_000);
        // The smoothed RTT rises from the handshake's sample (measured: 8-12 ms in 30 ms).
        let acts = looks(&mut j, 1_180_000, 40, 0.3);
        assert_eq!(acts[0], JumpAction::Pace(625_000), "{acts:?}");
        assert!(
            acts[1..3].iter().all(|a| *a == JumpAction::Keep),
            "{acts:?}"
        );
        assert_eq!(acts[3], JumpAction::Raise(1_250_000), "{acts:?}");
        assert!(acts[4..].iter().all(|a| *a == JumpAction::Keep), "{acts:?}");
        assert!(!j.retreated() && j.refuted().is_none());
        // Validated at the whole rate: released, not restarted.
        assert_eq!(validated_backlogged(&mut j, 1_180_000), JumpAction::Release);
    }
}

#[test]
fn a_flight_before_the_handshake_refutes_a_rate_ten_times_the_link() {
    // LinkRate ten times the link: the flight at 12.5 MB/s, acknowledged at 1.25 MB/s while
    // the RTT grows; the retreat is as for any jump (floor: a quarter of the jump's pacing).
    let mut j = before_handshake(Source::Configured, 6_250_000);
    assert_eq!(j.pacing(), 12_500_000);
    let acts = looks(&mut j, 1_250_000, 30, 0.5);
    assert_eq!(acts[0], JumpAction::Pace(6_250_000), "{acts:?}");
    assert_eq!(
        acts[3],
        JumpAction::Pace(6_250_000 / RETREAT_FLOOR),
        "{acts:?}"
    );
    assert!(j.retreated());
    assert!(j.refuted().is_some_and(|r| r.abs_diff(1_250_000) < 1000));
}

#[test]
fn a_flight_before_the_handshake_that_says_less_leaves_the_jump_at_half() {
    // Acknowledged at 60 % of the whole rate, or at 70 % with a queue growing: the jump stays
    // at half, and its validation restarts the congestion control as before.
    for (rate, rise) in [(750_000, 0.0), (875_000, 0.3)] {
        let mut j = before_handshake(Source::Configured, 625_000);
        let acts = looks(&mut j, rate, 100, rise);
        assert_eq!(acts[0], JumpAction::Pace(625_000), "{acts:?}");
        assert!(acts[1..].iter().all(|a| *a == JumpAction::Keep), "{acts:?}");
        assert!(!j.retreated());
        assert_eq!(validated_backlogged(&mut j, rate), JumpAction::Restart);
    }
    // A flight acknowledged before it could be timed: the jump proper at half all the same.
    let mut j = before_handshake(Source::Configured, 625_000);
    let at = |acked: u64| JumpSample {
        srtt: ms(500),
        ..sample(acked, 0, 0)
    };
    assert_eq!(j.on_sample(ms(500), &at(0)), JumpAction::Pace(625_000));
    assert_eq!(j.on_sample(ms(510), &at(65_000)), JumpAction::Keep);
    assert_eq!(j.on_sample(ms(520), &at(65_000)), JumpAction::Keep);
    assert_eq!(j.on_sample(ms(600), &at(200_000)), JumpAction::Keep);
}

#[test]
fn only_a_believed_rate_alone_on_its_path_paces_the_flight_at_the_whole_rate() {
    let plan = |source, busy, young| StartPlan {
        busy,
        young,
        ..alone(source, 625_000)
    };
    for p in [
        plan(Source::Measured, 0, 0),
        plan(Source::Configured, 1, 0),
        plan(Source::Stale, 0, 1),
    ] {
        let j = Jump::new(&p, MSS, true).unwrap();
        assert_eq!(j.pacing(), 625_000, "{p:?}");
    }
    // Nor a socket whose handshake was over at connect.
    let j = Jump::new(&plan(Source::Configured, 0, 0), MSS, false).unwrap();
    assert_eq!(j.pacing(), 625_000);
}
