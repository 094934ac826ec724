//! `starpep-bench pop-scale`: one POP serving many boxes (`--boxes`, default 100), all started
//! at once (a handshake storm), each with `--flows-per-box` split downloads (default 10: 1000
//! in all, the POP's `MaxFlows`), saturating the POP for `--seconds`. Prints the POP's memory
//! (RSS, and the kernel memory of its sockets), its CPU per Gbit/s, how long the storm took,
//! the goodput share between the boxes (Jain's index) and that a flow beyond `MaxFlows` passes
//! unsplit and intact.

use std::time::{Duration, Instant};

use crate::suite::quality::jain;

use super::cpu;
use super::fleet::{Fleet, FleetSpec, SockMem};
use super::fleet_load::{echo, Amount, Load, LoadSpec};

#[derive(Debug, clap::Args)]
pub struct PopScaleArgs {
    /// Boxes (WireGuard peers of the POP, each in its own namespace).
    #[arg(long, default_value_t = 100)]
    pub boxes: usize,
    /// Split downloads per box (the POP's MaxFlows is boxes × this).
    #[arg(long, default_value_t = 10)]
    pub flows_per_box: usize,
    /// Measured window once every flow is sending (after --warmup).
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    #[arg(long, default_value_t = 5)]
    pub warmup: u64,
    /// Extra `[PEP]` lines of the POP (`KEY=VALUE`, repeatable), e.g. `Mode=split`.
    #[arg(long = "pep")]
    pub pep: Vec<String>,
    /// Also write the figures as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// What one run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PopScale {
    pub boxes: usize,
    pub flows: usize,
    pub mode: String,
    /// Spawning every box daemon, and from the first spawn to the POP holding a completed
    /// handshake with every box.
    pub spawn_s: f64,
    pub all_handshakes_s: f64,
    pub rss_idle_mib: f64,
    /// With every flow open (no data yet), while every flow sends, and the peak.
    pub rss_flows_open_mib: f64,
    pub rss_saturated_mib: f64,
    pub rss_peak_mib: f64,
    /// The POP's TCP sockets while saturated, memory in use (receive + send queues) and the
    /// sum of their buffer limits: the satellite side (toward the boxes) and the server side.
    pub sat_mem_mib: f64,
    pub sat_limits_mib: f64,
    pub srv_mem_mib: f64,
    pub srv_limits_mib: f64,
    pub goodput_gbps: f64,
    /// The POP's CPU (cores busy) and per Gbit/s of goodput.
    pub pop_cores: f64,
    pub pop_cores_per_gbps: f64,
    /// Every box daemon together (cores busy).
    pub boxes_cores: f64,
    pub jain: f64,
    pub box_mbps_min: f64,
    pub box_mbps_max: f64,
    /// The flow beyond MaxFlows: carried intact, not split (the POP's accepted count did not
    /// move), counted as an overflowed SYN.
    pub beyond_intact: bool,
    pub beyond_unsplit: bool,
    pub overflow_syns: u64,
}

const PORT: u16 = 5601;
const MIB: f64 = 1024.0 * 1024.0;

fn mib_of_kib(k: u64) -> f64 {
    k as f64 / 1024.0
}

/// Memory in use and limits of the sockets `which` selects, in MiB.
fn socket_mem(socks: &[SockMem], which: impl Fn(&SockMem) -> bool) -> (f64, f64) {
    let (used, limits) = socks
        .iter()
        .filter(|s| which(s))
        .fold((0, 0), |(u, l), s| (u + s.r + s.w, l + s.rb + s.tb));
    (used as f64 / MIB, limits as f64 / MIB)
}

pub fn run(args: &PopScaleArgs) -> anyhow::Result<PopScale> {
    let flows = args.boxes * args.flows_per_box;
    let mut pep = vec![format!("MaxFlows = {flows}")];
    pep.extend(args.pep.iter().map(|kv| kv.replacen('=', " = ", 1)));
    let mut fleet = Fleet::up(&FleetSpec {
        boxes: args.boxes,
        pop_pep: Some(pep),
        pop_workers: None,
    })?;
    let pop = fleet.pop_pid()?;
    let (rss_idle, _) = cpu::rss_kib(pop)?;
    eprintln!("starting {} boxes at once", args.boxes);
    let storm = fleet.start_boxes(Duration::from_secs(120))?;
    eprintln!(
        "{} box daemons spawned in {:.2} s; all handshakes after {:.2} s",
        args.boxes,
        storm.spawned.as_secs_f64(),
        storm.all_handshakes.as_secs_f64()
    );
    let load = Load::open(
        &fleet,
        &LoadSpec {
            per_box: args.flows_per_box,
            port: PORT,
            amount: Amount::Open,
        },
    )?;
    let full = fleet.wait_pep(Duration::from_secs(60), "not every flow split", |p| {
        p["active_flows"] == flows
    })?;
    let mode = full["mode"].as_str().unwrap_or("?").to_string();
    let (rss_open, _) = cpu::rss_kib(pop)?;
    // The flow beyond MaxFlows: the table is full, so it passes the POP unsplit.
    let accepted = full["accepted"].as_u64().unwrap_or(0);
    let beyond_intact = echo(&fleet, 0, PORT + 1, 1 << 20)?;
    let after = fleet
        .wait_pep(Duration::from_secs(10), "overflow not counted", |p| {
            p["overflow_syns"].as_u64().unwrap_or(0) > 0
        })
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            fleet.pop_pep().unwrap_or_default()
        });
    let beyond_unsplit = after["accepted"].as_u64() == Some(accepted);
    let overflow_syns = after["overflow_syns"].as_u64().unwrap_or(0);
    eprintln!(
        "all {flows} flows split; sending for {} s + {} s",
        args.warmup, args.seconds
    );
    load.go();
    std::thread::sleep(Duration::from_secs(args.warmup));
    let box_pids: Vec<u32> = fleet.boxes.iter().filter_map(|b| b.pid()).collect();
    let (b1, c1, bc1, t1) = (
        load.bytes_per_box(),
        cpu::cpu_time(pop)?,
        cpu::total(&box_pids)?,
        Instant::now(),
    );
    std::thread::sleep(Duration::from_secs(args.seconds));
    let (b2, c2, bc2, t2) = (
        load.bytes_per_box(),
        cpu::cpu_time(pop)?,
        cpu::total(&box_pids)?,
        Instant::now(),
    );
    let (rss_sat, _) = cpu::rss_kib(pop)?;
    // Satellite sockets: accepted from the tunnel (peer a box); server side: toward srv.
    let socks = fleet.pop_sockets()?;
    let srv = format!("{}:{PORT}", crate::topo::addr::SRV);
    let (sat_used, sat_limits) = socket_mem(&socks, |s| s.local == srv);
    let (srv_used, srv_limits) = socket_mem(&socks, |s| s.peer == srv);
    load.stop();
    let res = load.finish()?;
    let (_, hwm) = cpu::rss_kib(pop)?;
    let dt = (t2 - t1).as_secs_f64();
    let mbps: Vec<f64> = b1
        .iter()
        .zip(&b2)
        .map(|(a, b)| (b - a) as f64 * 8.0 / dt / 1e6)
        .collect();
    let gbps = mbps.iter().sum::<f64>() / 1000.0;
    let pop_cores = (c2 - c1).as_secs_f64() / dt;
    let out = PopScale {
        boxes: args.boxes,
        flows: res.flows,
        mode,
        spawn_s: storm.spawned.as_secs_f64(),
        all_handshakes_s: storm.all_handshakes.as_secs_f64(),
        rss_idle_mib: mib_of_kib(rss_idle),
        rss_flows_open_mib: mib_of_kib(rss_open),
        rss_saturated_mib: mib_of_kib(rss_sat),
        rss_peak_mib: mib_of_kib(hwm),
        sat_mem_mib: sat_used,
        sat_limits_mib: sat_limits,
        srv_mem_mib: srv_used,
        srv_limits_mib: srv_limits,
        goodput_gbps: gbps,
        pop_cores,
        pop_cores_per_gbps: if gbps > 0.0 { pop_cores / gbps } else { 0.0 },
        boxes_cores: (bc2 - bc1).as_secs_f64() / dt,
        jain: jain(&mbps).unwrap_or(0.0),
        box_mbps_min: mbps.iter().copied().fold(f64::INFINITY, f64::min),
        box_mbps_max: mbps.iter().copied().fold(0.0, f64::max),
        beyond_intact,
        beyond_unsplit,
        overflow_syns,
    };
    let (st, log) = fleet.stop();
    if !st.is_some_and(|s| s.success()) {
        eprintln!("starpep-pop exit {st:?}:\n{log}");
    }
    print!("{}", render(&out));
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&out)?)?;
    }
    Ok(out)
}

/// The figures as a small table.
pub fn render(r: &PopScale) -> String {
    let mut s = format!(
        "pop-scale: {} boxes, {} flows, Mode = {}\n",
        r.boxes, r.flows, r.mode
    );
    let rows = [
        (
            "box daemons spawned / all handshakes done",
            format!("{:.2} s / {:.2} s", r.spawn_s, r.all_handshakes_s),
        ),
        (
            "POP RSS idle / flows open / saturated / peak",
            format!(
                "{:.1} / {:.1} / {:.1} / {:.1} MiB",
                r.rss_idle_mib, r.rss_flows_open_mib, r.rss_saturated_mib, r.rss_peak_mib
            ),
        ),
        (
            "POP satellite sockets: in use / limits",
            format!("{:.1} / {:.1} MiB", r.sat_mem_mib, r.sat_limits_mib),
        ),
        (
            "POP server-side sockets: in use / limits",
            format!("{:.1} / {:.1} MiB", r.srv_mem_mib, r.srv_limits_mib),
        ),
        ("goodput", format!("{:.3} Gbit/s", r.goodput_gbps)),
        (
            "POP CPU (cores) / per Gbit/s",
            format!("{:.2} / {:.2}", r.pop_cores, r.pop_cores_per_gbps),
        ),
        ("box daemons CPU (cores)", format!("{:.2}", r.boxes_cores)),
        (
            "per box (min / max), Jain",
            format!(
                "{:.2} / {:.2} Mbit/s, {:.3}",
                r.box_mbps_min, r.box_mbps_max, r.jain
            ),
        ),
        (
            "flow beyond MaxFlows",
            format!(
                "{}, {} ({} overflowed SYNs)",
                if r.beyond_unsplit { "unsplit" } else { "SPLIT" },
                if r.beyond_intact {
                    "intact"
                } else {
                    "CORRUPTED"
                },
                r.overflow_syns
            ),
        ),
    ];
    for (k, v) in rows {
        s.push_str(&format!("  {k:<46} {v}\n"));
    }
    s
}
