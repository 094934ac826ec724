//! Capacity and queue checks: a downlink UDP flood above capacity; delivered rate per 1 s
//! window against the profile's capacity in that window; queueing delay at saturation against
//! the drop-tail limit; satlink's queue-drop counter against the datagrams that went missing.

use std::time::Duration;

use super::analysis::{bytes_per_window, diff_ms, percentile, virt};
use super::bed::{Bed, Dir};
use super::probe::{self, Flow};
use super::reference::{self, constant_rate, full_queue_delay, peak_capacity};
use super::table::Row;
use super::udp::IP_OVERHEAD;
use super::{CalError, Ctx};

/// Full-size datagrams: 1500-byte IP packets, one mahimahi opportunity each.
const PAYLOAD: usize = 1500 - IP_OVERHEAD;
const WINDOW: Duration = Duration::from_secs(1);
/// Offered load relative to the peak 1 s capacity of the flood period.
const OVERLOAD: f64 = 1.3;
/// Windows this long after the flood starts are skipped (the queue is still filling).
const FILL: Duration = Duration::from_secs(2);

pub fn flood_rows(ctx: &Ctx, bed: &mut Bed) -> Result<Vec<Row>, CalError> {
    let dir = Dir::Down;
    let secs: u32 = if ctx.quick { 8 } else { 14 };
    let m = reference::model(ctx.profile, dir, ctx.seed);
    let spec = ctx.profile.direction(reference::direction(dir));
    // Where the flood will fall (it starts on the next whole second, ≥ 200 ms from now).
    let from = Duration::from_secs(bed.vnow().as_secs() + 1);
    let span = Duration::from_secs(u64::from(secs) + 2);
    let peak = peak_capacity(&m, from, from + span, WINDOW);
    let rate = peak * OVERLOAD;
    let interval = Duration::from_secs_f64(1500.0 * 8.0 / rate);
    let count =
        (Duration::from_secs(u64::from(secs)).as_secs_f64() / interval.as_secs_f64()) as u64;
    let before = counters(&bed.stats()?, dir);
    let limit_delay = constant_rate(spec).map(|bps| full_queue_delay(spec.limit, 1500, bps));
    let linger = Duration::from_millis(1500) + limit_delay.unwrap_or(Duration::from_secs(1));
    let flow = Flow {
        dir,
        payload: PAYLOAD,
        interval,
        count,
    };
    let res = probe::run(bed, &[flow], WINDOW, Duration::ZERO, linger)?;
    let r = &res[0];
    let start = bed.start_ns();
    let d = |t: Duration| m.base_delay_at(t);
    // When a datagram left the bottleneck: its receive time less the propagation delay that
    // applied at that moment (solved by two fixed-point steps).
    let exit = |recv: Duration| {
        let e = recv.saturating_sub(d(recv));
        recv.saturating_sub(d(e))
    };
    let per_win = bytes_per_window(&r.rx, WINDOW, |x| virt(x.recv_ns, start).map(exit));
    let flood_end = r.first + interval * count as u32;
    let mut worst = (0.0f64, 0u64, 0.0, 0.0);
    let (mut n, mut sum_m, mut sum_e) = (0, 0.0, 0.0);
    for (k, bytes) in &per_win {
        let w0 = WINDOW * *k as u32;
        if w0 < r.first + FILL || w0 + WINDOW > flood_end {
            continue;
        }
        let measured = *bytes as f64 * 8.0 / WINDOW.as_secs_f64();
        let expected = m.capacity_bps_at(w0, WINDOW);
        let err = (measured - expected).abs() / expected.max(1.0);
        n += 1;
        sum_m += measured;
        sum_e += expected;
        if err >= worst.0 {
            worst = (err, *k, measured, expected);
        }
    }
    let mut rows = vec![ctx.row(
        "delivered rate per 1 s window, worst |err|",
        dir.name(),
        format!(
            "{:.2}% (window {} s: {:.2} vs {:.2} Mbit/s; {n} windows, mean {:.2} Mbit/s)",
            worst.0 * 100.0,
            worst.1,
            worst.2 / 1e6,
            worst.3 / 1e6,
            sum_m / n.max(1) as f64 / 1e6
        ),
        format!(
            "profile capacity (mean {:.2} Mbit/s; offered {:.1})",
            sum_e / n.max(1) as f64 / 1e6,
            rate / 1e6
        ),
        "≤ 3% every window".into(),
        Some(n >= 3 && worst.0 <= 0.03),
    )];
    if let Some(limit) = limit_delay {
        // Queueing delay of datagrams sent in the second half (queue saturated).
        let half = r.first + (flood_end - r.first) / 2;
        let mut q: Vec<f64> =
            r.rx.iter()
                .filter(|x| virt(x.sent_ns, start).is_some_and(|t| t >= half && t < flood_end))
                .map(|x| {
                    let recv = virt(x.recv_ns, start).unwrap_or_default();
                    diff_ms(x.owd(), d(exit(recv)))
                })
                .collect();
        let med = percentile(&mut q, 0.5);
        let p99 = percentile(&mut q, 0.99);
        let exp = limit.as_secs_f64() * 1e3;
        let tol = (exp * 0.02).max(2.0);
        rows.push(ctx.row(
            "queueing delay at saturation (OWD − delay), median",
            dir.name(),
            format!("{med:.1} ms (p99 {p99:.1}; n={})", q.len()),
            format!("{exp:.1} ms ({:?} at the rate)", spec.limit),
            format!("± {tol:.1} ms"),
            Some(!q.is_empty() && (med - exp).abs() <= tol),
        ));
    }
    // Drops: satlink's counters against what the receiver missed (stats rewritten every 1 s).
    std::thread::sleep(Duration::from_millis(1200));
    let after = counters(&bed.stats()?, dir);
    let missing = r.sent.sent.saturating_sub(r.rx.len() as u64);
    let dq = after.0 - before.0;
    let dl = after.1 - before.1;
    let tol = r.sent.sent / 1000 + 5;
    rows.push(ctx.row(
        "queue drops counted by satlink",
        dir.name(),
        format!("dropped_queue +{dq}, dropped_loss +{dl}"),
        format!("{missing} datagrams missing of {}", r.sent.sent),
        format!("± {tol}"),
        Some(dq > 0 && (dq + dl).abs_diff(missing) <= tol),
    ));
    Ok(rows)
}

/// (dropped_queue, dropped_loss) of a direction in a satlink stats JSON.
pub fn counters(stats: &serde_json::Value, dir: Dir) -> (u64, u64) {
    let d = &stats["directions"][dir.name()];
    let g = |k: &str| d[k].as_u64().unwrap_or(0);
    (g("dropped_queue"), g("dropped_loss"))
}
