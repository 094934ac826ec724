//! Tests of a new flow's jump (`jump.rs`), on a virtual clock: validation by its window or by
//! time, a resent SYN-ACK that is not a loss, the retreat on loss, and the restart of the
//! congestion control after a jump below the path's rate.

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
    Jump::new(&plan, MSS).unwrap()
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
        Jump::new(&plan, MSS).unwrap()
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
