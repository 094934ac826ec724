//! Unit tests of `RTT_up` under window shrinks: the kernel's window-timed receive-RTT sample
//! reads short after the window shrinks, and the controller must not keep it (virtual clock).

use std::time::Duration;

use super::estimate::{UpRtt, SHRINK_SETTLE_RTTS};
use super::*;
use crate::config::{Reconfig, Starpep};

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn samples_after_a_shrink_are_left_out_until_it_settles() {
    let mut u = UpRtt::default();
    assert_eq!(u.on_sample(ms(0), Some(ms(20))), Some(ms(20)));
    u.on_window(ms(0), 100_000);
    // A small step does not make samples suspect.
    u.on_window(ms(5), 90_000);
    assert_eq!(u.on_sample(ms(6), Some(ms(19))), Some(ms(19)));
    // Halved: the next samples time the old window's bytes arriving early.
    u.on_window(ms(10), 45_000);
    let settle = ms(19) * SHRINK_SETTLE_RTTS;
    assert_eq!(u.on_sample(ms(12), Some(ms(6))), Some(ms(19)));
    assert_eq!(
        u.on_sample(ms(10) + settle - ms(1), Some(ms(6))),
        Some(ms(19))
    );
    // Past the settling time a lower sample is a shorter path.
    assert_eq!(u.on_sample(ms(10) + settle, Some(ms(15))), Some(ms(15)));
}

/// The kernel's `tcpi_rcv_rtt` of a socket whose own window the controller sets (the socket
/// back-end): timestamp samples of the path's RTT, and after each shrink one window-timed
/// sample of the old window's bytes arriving (`rtt × new / old`), taken at once as a lower
/// value; timestamp samples then raise it by an eighth of the gap per millisecond.
struct ClampKernel {
    path_us: f64,
    est_us: f64,
    window: Option<u32>,
}

impl ClampKernel {
    fn tick(&mut self, window: Option<u32>) -> u32 {
        if let (Some(old), Some(new)) = (self.window, window) {
            if new < old {
                self.est_us = self.est_us.min(self.path_us * new as f64 / old as f64);
            }
        }
        self.window = window.or(self.window);
        self.est_us += (self.path_us - self.est_us) / 8.0;
        self.est_us as u32
    }
}

#[test]
fn beta_cuts_and_probes_do_not_shorten_rtt_up_in_a_closed_loop() {
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
        // The queue swings above Q_high and back every 100 ms: β cuts, then W_base again.
        let q = if (i / 100) % 2 == 0 { 400_000 } else { 20_000 };
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
    // The probes (4 MSS after each instant) and the β cuts shrank the window dozens of times.
    assert!(
        lowest >= ms(19),
        "RTT_up fell to {lowest:?} on a 20 ms path"
    );
}
