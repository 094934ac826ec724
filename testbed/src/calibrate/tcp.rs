//! TCP sanity: iperf3 (`-J`) downlink transfers with BBR and CUBIC; BBR must reach 85 % of a
//! lossless constant rate, CUBIC must be far lower when the profile loses packets.

use std::time::Duration;

use super::bed::{Bed, Dir};
use super::reference::{self, constant_rate};
use super::table::Row;
use super::{CalError, Ctx};
use crate::bench::iperf::{self, IperfSpec};
use crate::link::Direction;
use crate::topo::addr::BOX_WAN;
use crate::topo::Node;

/// Downlink goodput (bits/s, receiver side) of one iperf3 run from POP to box.
pub fn iperf3_down(bed: &Bed, cc: &str, secs: u32, omit: u32) -> Result<f64, CalError> {
    let box_ip = BOX_WAN.to_string();
    let spec = IperfSpec {
        client: Node::Pop,
        server: Node::Box,
        server_addr: &box_ip,
        bind: Some(&box_ip),
        port: 5201,
        secs,
        omit,
        cc,
        reverse: false,
    };
    iperf::run(&bed.topo, &spec, || {})
        .map(|r| r.bits_per_second)
        .map_err(|e| CalError::Measure(format!("{e:#}")))
}

/// The mean base RTT (down + up delay) over the next 30 s of the replay.
fn base_rtt(ctx: &Ctx, bed: &Bed) -> Duration {
    let down = reference::model(ctx.profile, Dir::Down, ctx.seed);
    let up = reference::model(ctx.profile, Dir::Up, ctx.seed);
    let t0 = bed.vnow();
    let n = 3000u32;
    let sum: Duration = (0..n)
        .map(|i| {
            let t = t0 + Duration::from_millis(10) * i;
            down.base_delay_at(t) + up.base_delay_at(t)
        })
        .sum();
    sum / n
}

pub fn tcp_rows(ctx: &Ctx, bed: &Bed) -> Result<Vec<Row>, CalError> {
    let spec = ctx.profile.direction(Direction::Down);
    let Some(rate) = constant_rate(spec) else {
        return Ok(Vec::new());
    };
    // BBR enters PROBE_RTT (cwnd 4 packets for 200 ms plus one RTT) about 10 s after its last
    // min-RTT sample, which a standing queue keeps from refreshing: on GEO that costs ~0.7 s. An
    // 8 s window holding one such probe reads 83-91 %; 16 s bounds its cost to ~5 %, so the
    // quick run measures as long as the full one.
    let (secs, omit) = (16, 4);
    let lossy = spec.loss.mean_loss() > 0.0 || ctx.profile.up().loss.mean_loss() > 0.0;
    let mbit = |b: f64| {
        format!(
            "{:.2} Mbit/s ({:.0}% of {:.0})",
            b / 1e6,
            b * 100.0 / rate as f64,
            rate as f64 / 1e6
        )
    };
    let bbr = iperf3_down(bed, "bbr", secs, omit)?;
    let mut rows = vec![ctx.row(
        "TCP BBR goodput (iperf3, down)",
        "down",
        mbit(bbr),
        if lossy {
            "reported".into()
        } else {
            "≥ 85% of the rate".into()
        },
        if lossy {
            "—".into()
        } else {
            "≥ 85%".into()
        },
        (!lossy).then_some(bbr >= 0.85 * rate as f64),
    )];
    let cubic = iperf3_down(bed, "cubic", secs, omit)?;
    // Loss-based TCP is bounded near MSS/RTT · 1.22/√p (Mathis et al.): "far below the rate"
    // is only promised where that bound is (GEO-like RTTs); at LEO RTTs it is reported.
    let p = spec.loss.mean_loss().max(ctx.profile.up().loss.mean_loss());
    let rtt = base_rtt(ctx, bed);
    let mathis = (p > 0.0).then(|| 1448.0 * 8.0 / rtt.as_secs_f64() * 1.22 / p.sqrt());
    let judged = mathis.filter(|m| *m < 0.25 * rate as f64);
    rows.push(ctx.row(
        "TCP CUBIC goodput (iperf3, down)",
        "down",
        mbit(cubic),
        match mathis {
            Some(m) => format!(
                "Mathis bound {:.2} Mbit/s (RTT {:.0} ms, p {:.1}%)",
                m / 1e6,
                rtt.as_secs_f64() * 1e3,
                p * 100.0
            ),
            None => "reported".into(),
        },
        if judged.is_some() {
            "< 50% of the rate".into()
        } else {
            "—".into()
        },
        judged.map(|_| cubic < 0.5 * rate as f64),
    ));
    Ok(rows)
}
