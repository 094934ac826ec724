//! Unit tests of the controller on a virtual clock with synthetic samples: each regime of eq. 3
//! and its thresholds, α and β at their edges, zero / missing / app-limited samples, the window
//! bounds (never below `ProbeWindow`, never above the socket's own window), the phases applied
//! to the window, the deadlines, and the receive-buffer and in-flight bounds.

use std::time::Duration;

use super::*;
use crate::config::{ProbeWindow, Reconfig, Starpep};

const MSS: u32 = 1448;
/// 50 Mbit/s.
const R: u64 = 6_250_000;
/// 2026-12-03 10:00:27 UTC, a Starlink instant.
const T: u64 = 1_796_292_027_000;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn cfg(f: impl FnOnce(&mut Starpep)) -> Params {
    let mut s = Starpep {
        reconfig: Reconfig::Off,
        ..Starpep::default()
    };
    f(&mut s);
    // A configured link far from the samples' 50 Mbit/s, so tests see which one is used.
    Params::new(&s, 8_000_000, Duration::from_millis(600))
}

/// Samples with `q` bytes unread, the link delivering `R`, the sender 20 ms away.
fn samples(q: u32) -> FlowSamples {
    FlowSamples {
        unread: q,
        pipe: 0,
        notsent: 0,
        active: true,
        sat: Some(SatSample {
            delivered: 0,
            delivery_rate: R,
            app_limited: false,
            srtt_us: 25_000,
            min_rtt_us: 0,
            mss: MSS,
            inflight: 0,
            recovering: false,
            lost_bytes: 0,
            sacked_bytes: 0,
            bbr: None,
            acks: 0,
        }),
        up: Some(UpSample {
            rcv_rtt_us: 20_000,
            rtt_us: 21_000,
            rcv_mss: MSS,
            max_window: None,
        }),
    }
}

fn window(p: Params, q: u32) -> Decision {
    let mut c = Controller::new(p, ms(T));
    c.on_samples(ms(T), &samples(q))
}

#[test]
fn w_base_is_r_down_times_rtt_up() {
    let d = window(cfg(|_| {}), 20_000);
    assert_eq!(d.w_base, 125_000);
    assert_eq!(d.r_down, R as f64);
    assert_eq!(d.rtt_up, ms(20));
}

#[test]
fn one_stretched_rtt_up_sample_does_not_open_the_window() {
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    let mut s = samples(20_000);
    let first = c.on_samples(ms(T), &s);
    // A scheduling stall: the next receiver RTT sample reads 48 ms on the 20 ms path.
    s.up.as_mut().unwrap().rcv_rtt_us = 48_000;
    let stalled = c.on_samples(ms(T + 10), &s);
    assert_eq!(stalled.rtt_up, ms(20));
    assert_eq!(stalled.w_base, first.w_base);
    // A path that really became longer is followed once the old minimum has aged out.
    let later = c.on_samples(ms(T + 10) + UP_RTT_WINDOW + ms(10), &s);
    assert_eq!(later.rtt_up, ms(48));
    assert!(later.w_base > first.w_base);
}

#[test]
fn each_regime_of_eq_3() {
    let alpha1 = |s: &mut Starpep| s.alpha = 1.0;
    // Q_low = 2 ms = 12 500 B, Q_high = 8 ms = 50 000 B at 50 Mbit/s.
    // Below: Δ = max(1 MSS, W_base / 4) (W_base = 125 000 B here, so a quarter).
    let d = window(cfg(alpha1), 0);
    assert_eq!((d.regime, d.window), (Regime::Below, Some(156_250)));
    let d = window(cfg(alpha1), 30_000);
    assert_eq!((d.regime, d.window), (Regime::Inside, Some(125_000)));
    let d = window(cfg(alpha1), 60_000);
    assert_eq!((d.regime, d.window), (Regime::Above, Some(100_000)));
    // The thresholds themselves are inside.
    assert_eq!(window(cfg(alpha1), 12_500).regime, Regime::Inside);
    assert_eq!(window(cfg(alpha1), 50_000).regime, Regime::Inside);
    assert_eq!(window(cfg(alpha1), 12_499).regime, Regime::Below);
    assert_eq!(window(cfg(alpha1), 50_001).regime, Regime::Above);
}

#[test]
fn alpha_edges() {
    // α = 1: Q̂ is the last sample.
    let mut c = Controller::new(cfg(|s| s.alpha = 1.0), ms(T));
    c.on_samples(ms(T), &samples(0));
    let d = c.on_samples(ms(T + 5), &samples(90_000));
    assert_eq!(d.q_hat, 90_000.0);
    // α = 0.01: a jump moves Q̂ by 1 %, so the regime stays Below.
    let mut c = Controller::new(cfg(|s| s.alpha = 0.01), ms(T));
    c.on_samples(ms(T), &samples(0));
    let d = c.on_samples(ms(T + 5), &samples(100_000));
    assert!((d.q_hat - 1000.0).abs() < 1e-6, "{}", d.q_hat);
    assert_eq!(d.regime, Regime::Below);
    // The default α = 0.4 converges to a constant queue.
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    let mut d = c.on_samples(ms(T), &samples(0));
    for i in 1..40 {
        d = c.on_samples(ms(T + 5 * i), &samples(40_000));
    }
    assert!((d.q_hat - 40_000.0).abs() < 1.0, "{}", d.q_hat);
}

#[test]
fn beta_edges() {
    let above = |beta: f64| {
        window(
            cfg(|s| {
                s.alpha = 1.0;
                s.beta = beta;
            }),
            200_000,
        )
    };
    assert_eq!(above(1.0).window, Some(125_000));
    assert_eq!(above(0.5).window, Some(62_500));
    // A tiny β cannot take the window below ProbeWindow (4 MSS).
    assert_eq!(above(0.001).window, Some(4 * MSS));
}

#[test]
fn zero_and_missing_samples_fall_back_to_the_configured_link() {
    // Configured: 8 Mbit/s = 1 MB/s, 600 ms.
    let p = cfg(|_| {});
    let mut zero = samples(0);
    zero.sat.as_mut().unwrap().delivery_rate = 0;
    let mut c = Controller::new(p.clone(), ms(T));
    let d = c.on_samples(ms(T), &zero);
    assert_eq!(d.r_down, 1_000_000.0);
    assert_eq!(d.w_base, 20_000, "1 MB/s x 20 ms");
    assert!(d.window.is_some() && d.rcv_buf.is_some());
    let no_sat = FlowSamples {
        sat: None,
        ..samples(0)
    };
    let mut c = Controller::new(p.clone(), ms(T));
    let d = c.on_samples(ms(T), &no_sat);
    assert_eq!((d.r_down, d.sat_base), (1_000_000.0, None));
    // The configured RTT sizes the in-flight cap until the link's own is measured:
    // 1 MB/s x (600 ms + 300 ms: on a long path half the base RTT is the queue target).
    assert_eq!(d.link_cap, Some(900_000));
    // Without RTT_up the flow is not controlled at all.
    let mut no_rtt = samples(0);
    no_rtt.up = Some(UpSample {
        rcv_rtt_us: 0,
        rtt_us: 0,
        rcv_mss: MSS,
        max_window: None,
    });
    let mut c = Controller::new(p.clone(), ms(T));
    let d = c.on_samples(ms(T), &no_rtt);
    assert_eq!((d.window, d.rcv_buf, d.link_cap), (None, None, None));
    assert_eq!(c.window(), None);
    let no_up = FlowSamples {
        up: None,
        ..samples(0)
    };
    assert_eq!(
        Controller::new(p.clone(), ms(T))
            .on_samples(ms(T), &no_up)
            .window,
        None
    );
    // Without a configured rate either, nothing is controlled until a sample arrives.
    let mut unconfigured = p.clone();
    unconfigured.link_rate = 0.0;
    let mut c = Controller::new(unconfigured, ms(T));
    assert_eq!(c.on_samples(ms(T), &zero).window, None);
    // Once measured, a later zero or missing sample keeps the estimate.
    let mut c = Controller::new(p, ms(T));
    c.on_samples(ms(T), &samples(0));
    let d = c.on_samples(ms(T + 5), &zero);
    assert_eq!(d.r_down, R as f64);
    let d = c.on_samples(ms(T + 10), &no_sat);
    assert_eq!(d.r_down, R as f64);
    assert!(d.window.is_some());
}

#[test]
fn handshake_rtt_serves_until_the_receiver_has_one() {
    let mut s = samples(0);
    s.up.as_mut().unwrap().rcv_rtt_us = 0;
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    let d = c.on_samples(ms(T), &s);
    assert_eq!(d.rtt_up, ms(21));
}

/// Samples at `t_ms` after T of a link that has acknowledged `rate` bytes/s since T.
fn at(t_ms: u64, rate: u64, app_limited: bool) -> FlowSamples {
    // App-limited: the PEP holds nothing for the link.
    let mut s = samples(if app_limited { 0 } else { 10_000 });
    let sat = s.sat.as_mut().unwrap();
    sat.delivered = rate * t_ms / 1000;
    // The kernel's flag is not trusted (set whenever less than a segment is unsent).
    sat.app_limited = !app_limited;
    // Link-limited: the in-flight cap is reached.
    sat.inflight = 10_000_000;
    sat.delivery_rate = rate * 4 / 3; // the kernel's samples run high: not used once averaged
    s
}

#[test]
fn r_down_is_the_bytes_delivered_over_one_rtt() {
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    // The first call has no history: the kernel's sample serves.
    let d = c.on_samples(ms(T), &at(0, R, false));
    assert_eq!(d.r_down, (R * 4 / 3) as f64);
    // Then the bytes acknowledged over one satellite RTT (after the first drain of the link,
    // whose slower delivery says nothing about capacity).
    let mut d = d;
    for i in 1..=60 {
        d = c.on_samples(ms(T + 5 * i), &at(5 * i, R, false));
    }
    assert!((d.r_down / R as f64 - 1.0).abs() < 1e-6, "{}", d.r_down);
    // A rate change is followed within one satellite RTT (25 ms) plus a period.
    let mut acked = R * 300 / 1000;
    for i in 61..=70 {
        acked += R / 2 / 200;
        let mut s = at(5 * i, R, false);
        s.sat.as_mut().unwrap().delivered = acked;
        d = c.on_samples(ms(T + 5 * i), &s);
    }
    assert!(
        (d.r_down / (R / 2) as f64 - 1.0).abs() < 0.01,
        "{}",
        d.r_down
    );
}

#[test]
fn an_overestimate_comes_down_once_startup_is_over() {
    // The first windows deliver 3 R (a burst), then the link settles at R: the estimate
    // follows it down after the startup test (three windows without a quarter more).
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    let mut acked = 0u64;
    let mut d = None;
    for i in 0..=300u64 {
        acked += if i < 20 { 3 * R / 200 } else { R / 200 };
        let mut s = at(5 * i, R, false);
        s.sat.as_mut().unwrap().delivered = acked;
        d = Some(c.on_samples(ms(T + 5 * i), &s));
    }
    let d = d.unwrap();
    assert!((d.r_down / R as f64 - 1.0).abs() < 0.01, "{}", d.r_down);
}

/// A controller with `LinkRate` ten times what the link carries, after the first 50 ms of a
/// startup at `R`: the configured link stands in (asserted); its last decision.
fn tenfold_in_startup() -> (Controller, Decision) {
    let mut p = cfg(|_| {});
    p.link_rate = 10.0 * R as f64;
    let mut c = Controller::new(p, ms(T));
    let mut d = None;
    for i in 0..=10 {
        d = Some(c.on_samples(ms(T + 5 * i), &at(5 * i, R, false)));
    }
    let d = d.unwrap();
    assert_eq!(d.r_down, 10.0 * R as f64, "the configured link stands in");
    (c, d)
}

#[test]
fn a_configured_rate_above_the_link_stops_standing_in_at_the_first_loss() {
    // `LinkRate` ten times what the link carries: during the startup it stands in ...
    let (mut c, before) = tenfold_in_startup();
    let mut d = None;
    // ... until the link loses a segment: then the flow's own measurement decides, and the
    // in-flight cap follows it.
    for i in 11..=20 {
        let mut s = at(5 * i, R, false);
        s.sat.as_mut().unwrap().lost_bytes = MSS;
        d = Some(c.on_samples(ms(T + 5 * i), &s));
    }
    let d = d.unwrap();
    assert!(d.r_down <= 1.5 * R as f64, "{}", d.r_down);
    let (cap, was) = (d.link_cap.expect("a cap"), before.link_cap.expect("a cap"));
    assert!(
        cap < was / 4,
        "in-flight cap {cap}, {was} on the configured rate"
    );
}

#[test]
fn a_configured_rate_above_the_link_stands_in_no_higher_than_the_jumps_retreat() {
    // The same, refuted by the start's jump (its first acknowledgements came slow and queued)
    // before any segment was lost: the stand-in comes down to the rate it retreated to.
    let (mut c, _) = tenfold_in_startup();
    let mut d = None;
    // Retreated to twice the link: the stand-in is no higher (the measurement takes over once
    // the startup is over).
    c.on_start_refuted(2.0 * R as f64);
    for i in 11..=20 {
        d = Some(c.on_samples(ms(T + 5 * i), &at(5 * i, R, false)));
    }
    let d = d.unwrap();
    assert!(d.r_down <= 2.0 * R as f64, "{}", d.r_down);
    // A later, higher rate does not raise it again, nor does a rate of 0 say anything.
    c.on_start_refuted(0.0);
    c.on_start_refuted(5.0 * R as f64);
    let d = c.on_samples(ms(T + 105), &at(105, R, false));
    assert!(d.r_down <= 2.0 * R as f64, "{}", d.r_down);
}

#[test]
fn loss_recovery_does_not_lower_r_down() {
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    for i in 0..=60 {
        c.on_samples(ms(T + 5 * i), &at(5 * i, R, false));
    }
    let mut acked = R * 300 / 1000;
    let mut d = None;
    for i in 61..=80 {
        acked += R / 4 / 200;
        let mut s = at(5 * i, R, false);
        s.sat.as_mut().unwrap().delivered = acked;
        s.sat.as_mut().unwrap().recovering = true;
        d = Some(c.on_samples(ms(T + 5 * i), &s));
    }
    let d = d.unwrap();
    assert!((d.r_down / R as f64 - 1.0).abs() < 1e-6, "{}", d.r_down);
}

#[test]
fn app_limited_samples_never_lower_r_down() {
    struct Feed {
        c: Controller,
        t: u64,
        acked: u64,
    }
    impl Feed {
        fn step(&mut self, rate: u64, limited: bool) -> Decision {
            self.t += 5;
            self.acked += rate / 200;
            let mut s = at(self.t, 0, limited);
            s.sat.as_mut().unwrap().delivered = self.acked;
            self.c.on_samples(ms(T + self.t), &s)
        }
    }
    let mut f = Feed {
        c: Controller::new(cfg(|_| {}), ms(T)),
        t: 0,
        acked: 0,
    };
    for _ in 0..200 {
        f.step(R, false);
    }
    // Seconds of app-limited delivery at a tenth of the rate: R_down holds.
    let mut d = f.step(R / 10, true);
    for _ in 0..1000 {
        d = f.step(R / 10, true);
    }
    assert!((d.r_down / R as f64 - 1.0).abs() < 1e-6, "{}", d.r_down);
    // An app-limited interval above the estimate is a valid lower bound: it raises it.
    for _ in 0..20 {
        d = f.step(2 * R, true);
    }
    assert!(d.r_down > 1.9 * R as f64, "{}", d.r_down);
    // A lower interval that is not app-limited is taken.
    for _ in 0..20 {
        d = f.step(R / 2, false);
    }
    assert!(
        (d.r_down / (R / 2) as f64 - 1.0).abs() < 0.05,
        "{}",
        d.r_down
    );
}

#[test]
fn window_never_below_probe_window_nor_above_the_socket_window() {
    // A sender 100 µs away: W_base is a fraction of a segment.
    let mut s = samples(0);
    s.up.as_mut().unwrap().rcv_rtt_us = 100;
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    let d = c.on_samples(ms(T), &s);
    assert!(d.w_base < MSS);
    assert_eq!(d.window, Some(4 * MSS));
    // In bytes too.
    let p = cfg(|s| s.probe_window = ProbeWindow::Bytes(10_000));
    let mut c = Controller::new(p, ms(T));
    assert_eq!(c.on_samples(ms(T), &s).window, Some(10_000));
    // The socket's own window caps W (the eBPF rewrite can only lower it).
    let mut s = samples(0);
    s.up.as_mut().unwrap().max_window = Some(80_000);
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    assert_eq!(c.on_samples(ms(T), &s).window, Some(80_000));
    // ... but never below ProbeWindow.
    s.up.as_mut().unwrap().max_window = Some(1000);
    assert_eq!(c.on_samples(ms(T + 5), &s).window, Some(4 * MSS));
    // Randomised: for any queue, RTT and cap, the bounds hold.
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut c = Controller::new(cfg(|_| {}), ms(T));
    for i in 0..5000u64 {
        let mut s = samples((next() % 2_000_000) as u32);
        s.sat.as_mut().unwrap().delivery_rate = next() % 20_000_000;
        s.up.as_mut().unwrap().rcv_rtt_us = (next() % 200_000) as u32;
        let cap = (next() % 3 != 0).then(|| (next() % 1_000_000) as u32);
        s.up.as_mut().unwrap().max_window = cap;
        let d = c.on_samples(ms(T + 5 * i), &s);
        if let Some(w) = d.window {
            assert!(w >= 4 * MSS, "{w}");
            assert!(w <= cap.unwrap_or(u32::MAX).max(4 * MSS), "{w} {cap:?}");
        }
    }
}

fn starlink() -> Params {
    Params::new(&Starpep::default(), 8_000_000, Duration::from_millis(600))
}

#[test]
fn phases_shape_the_window() {
    let w_r = 4 * MSS;
    let w_s = 156_250; // empty queue: Below, W_base + W_base / 4
    let at = |t: u64| {
        let mut c = Controller::new(starlink(), ms(t));
        let d = c.on_samples(ms(t), &samples(0));
        (d.phase, d.window.unwrap(), d.w_steady)
    };
    assert_eq!(at(T - 1000), (Phase::Steady, w_s, w_s));
    assert_eq!(at(T - 100), (Phase::Guard, w_r, w_s));
    assert_eq!(at(T), (Phase::Probe, w_r, w_s));
    assert_eq!(at(T + 199), (Phase::Probe, w_r, w_s));
    let (ph, w, _) = at(T + 350);
    assert_eq!(ph, Phase::Recover);
    let mid = (w_r + w_s) / 2;
    assert!(w.abs_diff(mid) <= 1, "{w} vs {mid}");
    assert_eq!(at(T + 500), (Phase::Steady, w_s, w_s));
    // Guard is min(W_s, W_r): a window already below W_r stays.
    let mut s = samples(0);
    s.up.as_mut().unwrap().rcv_rtt_us = 100;
    let mut c = Controller::new(starlink(), ms(T - 50));
    assert_eq!(c.on_samples(ms(T - 50), &s).window, Some(w_r));
}

#[test]
fn rtt_up_samples_of_the_reconfiguration_phases_are_left_out() {
    let low = |rcv_rtt_us| {
        let mut s = samples(0);
        s.up.as_mut().unwrap().rcv_rtt_us = rcv_rtt_us;
        s
    };
    let mut c = Controller::new(starlink(), ms(T - 3000));
    for t in (T - 3000..T - 100).step_by(5) {
        c.on_samples(ms(t), &samples(0));
    }
    // Guard, probe and recover time the window's swing: 11.3 ms on this 20 ms path.
    for t in (T - 100..T + 500).step_by(5) {
        c.on_samples(ms(t), &low(11_300));
    }
    let d = c.on_samples(ms(T + 500), &samples(0));
    assert_eq!((d.phase, d.rtt_up), (Phase::Steady, ms(20)));
    // A lower sample in the steady state, once the ramp's window settled, is the path's.
    let d = c.on_samples(ms(T + 1500), &low(15_000));
    assert_eq!(d.rtt_up, ms(15));
    // A flow that starts inside a probe takes its first sample there.
    let mut c = Controller::new(starlink(), ms(T + 50));
    let d = c.on_samples(ms(T + 50), &low(11_300));
    assert_eq!(
        (d.phase, d.rtt_up),
        (Phase::Probe, Duration::from_micros(11_300))
    );
    let d = c.on_samples(ms(T + 55), &low(9_000));
    assert_eq!(d.rtt_up, Duration::from_micros(11_300));
}

#[test]
fn deadlines_follow_the_period_and_the_phase_boundaries() {
    let mut c = Controller::new(starlink(), ms(T - 3000));
    c.on_samples(ms(T - 3000), &samples(0));
    assert_eq!(c.next_deadline(), ms(T - 3000) + CONTROL_PERIOD);
    // Idle: the longer period.
    let idle = FlowSamples {
        active: false,
        ..samples(0)
    };
    c.on_samples(ms(T - 2000), &idle);
    assert_eq!(c.next_deadline(), ms(T - 2000) + IDLE_PERIOD);
    // Close to a boundary: the boundary.
    c.on_samples(ms(T - 102), &samples(0));
    assert_eq!(c.next_deadline(), ms(T - 100));
    c.on_samples(ms(T - 2), &samples(0));
    assert_eq!(c.next_deadline(), ms(T));
    c.on_samples(ms(T + 198), &idle);
    assert_eq!(c.next_deadline(), ms(T + 200));
    // Driven only at its deadlines, the controller enters each phase within one period.
    let mut c = Controller::new(starlink(), ms(T - 5000));
    let mut now = ms(T - 5000);
    let mut seen = Vec::new();
    while now < ms(T + 1000) {
        let d = c.on_samples(now, &samples(0));
        if seen.last().map(|(p, _)| *p) != Some(d.phase) {
            seen.push((d.phase, now));
        }
        now = c.next_deadline();
    }
    let starts: Vec<(Phase, Duration)> = seen.into_iter().skip(1).collect();
    assert_eq!(
        starts,
        [
            (Phase::Guard, ms(T - 100)),
            (Phase::Probe, ms(T)),
            (Phase::Recover, ms(T + 200)),
            (Phase::Steady, ms(T + 500)),
        ]
    );
}

#[test]
fn receive_buffer_bound_is_window_plus_the_queue_target() {
    let d = window(cfg(|s| s.alpha = 1.0), 0);
    // W + Q_low = 156 250 + 12 500.
    assert_eq!(d.rcv_buf, Some(156_250 + 12_500));
    assert_eq!(d.sat_lowat, Some(6_250));
}

#[test]
fn link_cap_is_rate_times_base_rtt_plus_target_and_drains_periodically() {
    let mut c = Controller::new(cfg(|s| s.link_queue = ms(5)), ms(T));
    let mut s = samples(0);
    s.sat.as_mut().unwrap().srtt_us = 20_000;
    let d = c.on_samples(ms(T), &s);
    // The first sample gives the base (the first drain is one period later).
    assert_eq!(d.sat_base, Some(ms(20)));
    let mut t = T;
    let mut caps = Vec::new();
    for _ in 0..2400 {
        t += 5;
        let d = c.on_samples(ms(t), &s);
        caps.push((d.link_probe, d.link_cap.unwrap()));
    }
    // Queue target max(5 ms, base / 4) = 5 ms: 25 ms of R; half the base during the drains.
    assert!(caps.iter().any(|&(p, cap)| !p && cap == 156_250));
    assert!(caps.iter().any(|&(p, cap)| p && cap == 62_500));
    let drains = caps.windows(2).filter(|w| !w[0].0 && w[1].0).count();
    // 12 s of ticks: a drain every 10 s.
    assert_eq!(drains, 1, "{drains}");
    // A drain that sees a longer path takes it as the new base.
    let mut longer = s;
    longer.sat.as_mut().unwrap().srtt_us = 30_000;
    let mut based = Vec::new();
    for _ in 0..2400 {
        t += 5;
        based.push(c.on_samples(ms(t), &longer).sat_base);
    }
    assert_eq!(based.last().copied().flatten(), Some(ms(30)));
    // LinkQueue = 0: no cap.
    let d = window(cfg(|s| s.link_queue = Duration::ZERO), 0);
    assert_eq!(d.link_cap, None);
}

#[test]
fn lost_and_sacked_bytes_are_added_to_the_link_cap() {
    let mut c = Controller::new(cfg(|s| s.link_queue = ms(5)), ms(T));
    let mut s = samples(0);
    s.sat.as_mut().unwrap().srtt_us = 20_000;
    let plain = c.on_samples(ms(T), &s).link_cap.unwrap();
    let sat = s.sat.as_mut().unwrap();
    sat.lost_bytes = 3_000;
    sat.sacked_bytes = 40_000;
    let d = c.on_samples(ms(T + 5), &s);
    assert_eq!(d.link_cap, Some(plain + 43_000));
}

#[test]
fn bbr_is_restarted_ahead_of_its_probe_rtt_and_only_then() {
    use crate::pep::BbrInfo;
    let mut c = Controller::new(cfg(|_| {}), Duration::ZERO);
    let mut s = samples(10_000);
    let bbr = |min_rtt_us| BbrInfo {
        bw: R,
        min_rtt_us,
        pacing_gain: 320,
        cwnd_gain: 512,
    };
    let mut restarts = Vec::new();
    let mut t = Duration::ZERO;
    // 12 s of a minimum BBR never refreshes: one restart, before its 10 s filter expires.
    while t < Duration::from_secs(12) {
        s.sat.as_mut().unwrap().bbr = Some(bbr(24_000));
        if c.on_samples(t, &s).restart_cc {
            restarts.push(t);
        }
        t += CONTROL_PERIOD;
    }
    assert_eq!(restarts.len(), 1, "{restarts:?}");
    assert!(restarts[0] < super::BBR_MIN_RTT_WIN && restarts[0] > Duration::from_secs(9));
    // Not a BBR socket: never.
    let mut c = Controller::new(cfg(|_| {}), Duration::ZERO);
    let s = samples(10_000);
    assert!((0..3000).all(|i| !c.on_samples(CONTROL_PERIOD * i, &s).restart_cc));
    // A GEO path (600 ms) too, with the link's queue target in its smoothed RTT (half the
    // base): no sample comes below the minimum, and ProbeRTT idled the link for 0.9 s every
    // 12.5 s. (Until a1d8549 the restart was for paths up to 150 ms only.)
    let mut c = Controller::new(cfg(|_| {}), Duration::ZERO);
    let mut s = samples(10_000);
    let sat = s.sat.as_mut().unwrap();
    sat.srtt_us = 900_000;
    sat.bbr = Some(bbr(600_000));
    let restarts: Vec<u32> = (0..2400)
        .filter(|&i| c.on_samples(CONTROL_PERIOD * i, &s).restart_cc)
        .collect();
    assert_eq!(restarts.len(), 1, "{restarts:?}");
    let at = CONTROL_PERIOD * restarts[0];
    assert!(
        at < super::BBR_MIN_RTT_WIN && at > Duration::from_secs(9),
        "{at:?}"
    );
}

#[test]
fn the_unsent_mark_holds_two_acks_worth_within_queue_high() {
    // The link delivers R (31 250 bytes per 5 ms tick); `acks_per_20ms` ACKs carry it.
    let lowat = |acks_per_20ms: u64| {
        let mut c = Controller::new(cfg(|_| {}), ms(T));
        let mut s = samples(0);
        let mut d = None;
        for k in 0..400u64 {
            let sat = s.sat.as_mut().unwrap();
            sat.delivered = k * R / 200;
            sat.acks = (k * acks_per_20ms / 4) as u32;
            d = Some(c.on_samples(ms(T + 5 * k), &s));
        }
        d.unwrap().sat_lowat.unwrap()
    };
    // Many small ACKs (1 953 bytes each): Q_low / 2 (6 250) is more than two of them.
    assert_eq!(lowat(64), 6_250);
    // 15 625 bytes per ACK (the tunnel's receive offload coalesces ~11 segments): two ACKs.
    let two = lowat(8);
    assert!((30_000..=32_000).contains(&two), "{two}");
    // One ACK per 125 000 bytes: never above Q_high (8 ms of R: 50 000).
    assert_eq!(lowat(1), 50_000);
}
