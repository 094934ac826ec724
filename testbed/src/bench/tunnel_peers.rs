//! `starpep-bench tunnel-peers`: the tunnel data path with several peers at once. One POP
//! without `[PEP]` (a plain WireGuard endpoint) and `--boxes` peers ([`Fleet`]), each box
//! downloading `--flows-per-box` TCP streams from the server at once, for each `--workers`
//! setting of the POP in turn (A/B/A/B, a fresh fleet per run): goodput, the POP's CPU per
//! Gbit/s, the share between boxes, and how the POP's CPU splits over its worker threads.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::suite::quality::jain;

use super::cpu;
use super::fleet::{Fleet, FleetSpec};
use super::fleet_load::{Amount, Load, LoadSpec};

#[derive(Debug, clap::Args)]
pub struct TunnelPeersArgs {
    /// Boxes (WireGuard peers of the POP, each in its own namespace).
    #[arg(long, default_value_t = 4)]
    pub boxes: usize,
    /// Downloads per box, all at once.
    #[arg(long, default_value_t = 1)]
    pub flows_per_box: usize,
    /// The POP's worker counts to compare (`STARPEP_WORKERS`; 0: its default, one per core).
    #[arg(long, default_value = "1,0", value_delimiter = ',')]
    pub workers: Vec<usize>,
    /// Rounds; each round runs every worker setting once, in order.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Measured window, after --warmup.
    #[arg(long, default_value_t = 10)]
    pub seconds: u64,
    #[arg(long, default_value_t = 3)]
    pub warmup: u64,
    /// Also write the runs as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// One measured run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct PeersRun {
    /// `STARPEP_WORKERS` of the POP (0: its default).
    pub workers: usize,
    pub round: u32,
    pub goodput_mbps: f64,
    /// The POP's CPU (cores busy) and CPU seconds per Gbit delivered.
    pub pop_cores: f64,
    pub pop_cpu_s_per_gbit: f64,
    /// Every box daemon together (cores busy).
    pub boxes_cores: f64,
    pub jain: f64,
    /// CPU seconds of each POP data-path thread over the window.
    pub pop_threads_s: BTreeMap<String, f64>,
}

const PORT: u16 = 5801;

fn datapath_threads(pid: u32) -> anyhow::Result<BTreeMap<String, Duration>> {
    Ok(cpu::thread_times(pid)?
        .into_iter()
        .filter(|(n, _)| n.starts_with("tun-to-udp") || n.starts_with("udp-to-tun"))
        .collect())
}

fn one(args: &TunnelPeersArgs, workers: usize, round: u32) -> anyhow::Result<PeersRun> {
    let mut fleet = Fleet::up(&FleetSpec {
        boxes: args.boxes,
        pop_pep: None,
        pop_workers: (workers > 0).then_some(workers),
    })?;
    fleet.start_boxes(Duration::from_secs(120))?;
    let load = Load::open(
        &fleet,
        &LoadSpec {
            per_box: args.flows_per_box,
            port: PORT,
            amount: Amount::Open,
        },
    )?;
    load.go();
    std::thread::sleep(Duration::from_secs(args.warmup));
    let pop = fleet.pop_pid()?;
    let box_pids: Vec<u32> = fleet.boxes.iter().filter_map(|b| b.pid()).collect();
    let sample = || -> anyhow::Result<_> {
        Ok((
            load.bytes_per_box(),
            cpu::cpu_time(pop)?,
            cpu::total(&box_pids)?,
            datapath_threads(pop)?,
            Instant::now(),
        ))
    };
    let (b1, c1, bc1, th1, t1) = sample()?;
    std::thread::sleep(Duration::from_secs(args.seconds));
    let (b2, c2, bc2, th2, t2) = sample()?;
    load.stop();
    let res = load.finish();
    let (st, log) = fleet.stop();
    res?;
    if !st.is_some_and(|s| s.success()) {
        eprintln!("starpep-pop exit {st:?}:\n{log}");
    }
    let dt = (t2 - t1).as_secs_f64();
    let mbps: Vec<f64> = b1
        .iter()
        .zip(&b2)
        .map(|(a, b)| (b - a) as f64 * 8.0 / dt / 1e6)
        .collect();
    let total = mbps.iter().sum::<f64>();
    let pop_cores = (c2 - c1).as_secs_f64() / dt;
    let pop_threads_s = th2
        .iter()
        .map(|(n, t)| {
            let before = th1.get(n).copied().unwrap_or_default();
            (n.clone(), t.saturating_sub(before).as_secs_f64())
        })
        .collect();
    Ok(PeersRun {
        workers,
        round,
        goodput_mbps: total,
        pop_cores,
        pop_cpu_s_per_gbit: if total > 0.0 {
            pop_cores / (total / 1000.0)
        } else {
            f64::NAN
        },
        boxes_cores: (bc2 - bc1).as_secs_f64() / dt,
        jain: jain(&mbps).unwrap_or(0.0),
        pop_threads_s,
    })
}

fn label(workers: usize) -> String {
    if workers == 0 {
        "workers=default".into()
    } else {
        format!("workers={workers}")
    }
}

pub fn run(args: &TunnelPeersArgs) -> anyhow::Result<Vec<PeersRun>> {
    anyhow::ensure!(!args.workers.is_empty(), "--workers: at least one setting");
    let mut runs = Vec::new();
    for round in 0..args.rounds {
        for &w in &args.workers {
            let r = one(args, w, round)?;
            let threads: Vec<String> = r
                .pop_threads_s
                .iter()
                .map(|(n, s)| format!("{n} {s:.2}"))
                .collect();
            println!(
                "round {round} {:<16} {:>8.1} Mbit/s  POP {:.2} cores, {:.2} CPU-s/Gbit  boxes {:.2} cores  Jain {:.3}\n    POP threads (CPU-s): {}",
                label(w),
                r.goodput_mbps,
                r.pop_cores,
                r.pop_cpu_s_per_gbit,
                r.boxes_cores,
                r.jain,
                threads.join(", ")
            );
            runs.push(r);
        }
    }
    println!(
        "\n{} boxes x {} download(s), {} s each, tunnel-only POP; mean (min - max):",
        args.boxes, args.flows_per_box, args.seconds
    );
    for &w in &args.workers {
        let mine: Vec<&PeersRun> = runs.iter().filter(|r| r.workers == w).collect();
        let stat = |f: fn(&PeersRun) -> f64| {
            let v: Vec<f64> = mine.iter().map(|r| f(r)).collect();
            let mean = v.iter().sum::<f64>() / v.len() as f64;
            let min = v.iter().copied().fold(f64::INFINITY, f64::min);
            let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{mean:.2} ({min:.2} - {max:.2})")
        };
        println!(
            "  {:<16} {} Mbit/s   POP {} CPU-s/Gbit",
            label(w),
            stat(|r| r.goodput_mbps),
            stat(|r| r.pop_cpu_s_per_gbit)
        );
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&runs)?)?;
    }
    Ok(runs)
}
