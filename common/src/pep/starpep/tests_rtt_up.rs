//! Unit tests of `RTT_up` under window changes: the kernel's window-timed receive-RTT sample
//! reads short after the window shrinks or grows, and the controller must not keep it
//! (virtual clock).

use std::time::Duration;

use super::estimate::{UpRtt, SETTLE_RTTS, SETTLE_SEGMENTS, STEP};
use super::*;
use crate::config::{Reconfig, Starpep};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

const MSS: u32 = 1448;

#[test]
fn samples_after_a_shrink_are_left_out_until_it_settles() {
    let mut u = UpRtt::default();
    assert_eq!(u.on_sample(ms(0), Some(ms(20))), Some(ms(20)));
    u.on_window(ms(0), 100_000, MSS);
    // A small step does not make samples suspect.
    u.on_window(ms(5), 95_000, MSS);
    assert_eq!(u.on_sample(ms(6), Some(ms(19))), Some(ms(19)));
    // Halved: the next samples time the old window's bytes arriving early.
    u.on_window(ms(10), 45_000, MSS);
    let settle = ms(19) * SETTLE_RTTS;
    assert_eq!(u.on_sample(ms(12), Some(ms(6))), Some(ms(19)));
    assert_eq!(
        u.on_sample(ms(10) + settle - ms(1), Some(ms(6))),
        Some(ms(19))
    );
    // Past the settling time a lower sample is a shorter path.
    assert_eq!(u.on_sample(ms(10) + settle, Some(ms(15))), Some(ms(15)));
}

#[test]
fn samples_after_a_growth_or_a_ramp_are_left_out_too() {
    let mut u = UpRtt::default();
    assert_eq!(u.on_sample(ms(0), Some(ms(20))), Some(ms(20)));
    u.on_window(ms(0), 80_000, MSS);
    // A quarter more window: the sender releases it at once.
    u.on_window(ms(10), 100_000, MSS);
    assert_eq!(u.on_sample(ms(30), Some(ms(16))), Some(ms(20)));
    // Steps of 3 % that add up to more than STEP from where samples were last trusted.
    let mut w = 100_000f64;
    let start = ms(10) + ms(20) * SETTLE_RTTS;
    for i in 0..4 {
        w *= 1.03;
        u.on_window(start + ms(i), w as u32, MSS);
    }
    assert_eq!(u.on_sample(start + ms(40), Some(ms(17))), Some(ms(20)));
    assert_eq!(
        u.on_sample(start + ms(3) + ms(20) * SETTLE_RTTS, Some(ms(19))),
        Some(ms(19))
    );
}

#[test]
fn a_small_window_settles_for_its_segments_not_only_its_round_trips() {
    let mut u = UpRtt::default();
    assert_eq!(u.on_sample(ms(0), Some(ms(20))), Some(ms(20)));
    u.on_window(ms(0), 60 * MSS, MSS);
    // The probe's 4 segments: SETTLE_SEGMENTS of them take SETTLE_SEGMENTS / 4 round trips.
    u.on_window(ms(100), 4 * MSS, MSS);
    let settle = (ms(20) * SETTLE_RTTS).max(ms(20) * SETTLE_SEGMENTS / 4);
    assert_eq!(
        u.on_sample(ms(100) + settle - ms(1), Some(ms(11))),
        Some(ms(20))
    );
    assert_eq!(u.on_sample(ms(100) + settle, Some(ms(19))), Some(ms(19)));
}

/// The kernel's `tcpi_rcv_rtt` of a socket whose own window the controller sets (the socket
/// back-end). A window-timed sample times one window's bytes arriving and is taken at once when
/// lower: after a change from `old` to `new` they arrive in `min/max` of a round trip (a shrink
/// leaves the old window's bytes in flight; a growth releases the difference at once).
/// Timestamp samples, one per segment received, then raise it by an eighth of the gap each:
/// a window of 4 segments brings 4 of them per round trip.
struct ClampKernel {
    path_us: f64,
    est_us: f64,
    window: Option<u32>,
}

impl ClampKernel {
    fn tick(&mut self, window: Option<u32>) -> u32 {
        if let (Some(old), Some(new)) = (self.window, window) {
            let ratio = old.min(new) as f64 / old.max(new) as f64;
            self.est_us = self.est_us.min(self.path_us * ratio);
        }
        self.window = window.or(self.window);
        // Segments (timestamp samples) per 1 ms tick.
        let per_ms = self
            .window
            .map_or(1.0, |w| w as f64 / 1448.0 / (self.path_us / 1000.0));
        for _ in 0..per_ms.floor() as u32 {
            self.est_us += (self.path_us - self.est_us) / 8.0;
        }
        self.est_us += (self.path_us - self.est_us) / 8.0 * per_ms.fract();
        self.est_us as u32
    }
}

#[test]
fn window_steps_either_way_do_not_shorten_rtt_up_in_a_closed_loop() {
    let mut s = Starpep {
        reconfig: Reconfig::Periodic,
        reconfig_period: ms(2_000),
        reconfig_offset: Duration::ZERO,
        ..Starpep::default()
    };
    s.alpha = 1.0;
    let p = Params::new(&s, 0, ms(30));
    let t0 = ms(1_796_292_000_000);
    let mut c = Controller::new(p, t0);
    let mut k = ClampKernel {
        path_us: 20_000.0,
        est_us: 20_000.0,
        window: None,
    };
    let r = 6_250_000u64;
    let mut lowest = Duration::MAX;
    for i in 0..6_000u64 {
        let now = t0 + ms(i);
        // The queue swings above Q_high, below Q_low and back every 100 ms: β cuts, W_base + Δ,
        // then W_base again.
        let q = [400_000, 20_000, 0][(i / 100) as usize % 3];
        let samples = FlowSamples {
            unread: q,
            active: true,
            sat: Some(SatSample {
                delivered: r * i / 1000,
                delivery_rate: r,
                srtt_us: 30_000,
                mss: 1448,
                inflight: 10_000_000,
                ..SatSample::default()
            }),
            up: Some(UpSample {
                rcv_rtt_us: k.tick(c.window()),
                rtt_us: 20_000,
                rcv_mss: 1448,
                max_window: None,
            }),
            ..FlowSamples::default()
        };
        let d = c.on_samples(now, &samples);
        if d.window.is_some() {
            lowest = lowest.min(d.rtt_up);
        }
    }
    // The probes (4 MSS after each instant) and the β cuts shrank the window dozens of times,
    // and the recoveries and the below-Q_low steps opened it as often.
    // What is left: steps below STEP (at most 1/16 short), and what the kernel's timestamp
    // samples have not yet closed when a settling time ends. Without the settling on growth
    // and on segments this model fell to 16.5 ms.
    assert!(
        lowest >= ms(20).mul_f64(1.0 - STEP) - ms(1),
        "RTT_up fell to {lowest:?} on a 20 ms path"
    );
}
