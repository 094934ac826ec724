//! `starpep-bench tunnel`: iperf3 (cubic, one stream) pc → srv through each VPN data path on bare
//! veth, alternating the setups A/B/A/B in one topology; Mbit/s and CPU per Gbit of the two
//! daemons (utime + stime from /proc over the run, divided by the Gbit transferred).

use std::time::Duration;

use crate::topo::{addr, Node, TopoSpec, Topology};

use super::vpn::{self, Setup};
use super::{cpu, iperf};

#[derive(Debug, clap::Args)]
pub struct TunnelArgs {
    /// Rounds; each round runs every setup once, in order.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// iperf3 duration per run, seconds.
    #[arg(long, default_value_t = 10)]
    pub seconds: u32,
    /// Setups to compare (starpep, wireguard-go, boringtun-cli), comma-separated.
    #[arg(long, default_value = "starpep,wireguard-go", value_delimiter = ',')]
    pub setups: Vec<String>,
    /// Also write the results as JSON here.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
}

/// One measured run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Run {
    pub setup: Setup,
    pub round: u32,
    pub mbit_per_s: f64,
    pub retransmits: u64,
    /// CPU seconds of both daemons per Gbit delivered.
    pub cpu_s_per_gbit: f64,
    pub daemon_cpu_s: f64,
    pub gbit: f64,
}

pub fn run(args: &TunnelArgs) -> anyhow::Result<Vec<Run>> {
    let setups: Vec<Setup> = args
        .setups
        .iter()
        .map(|s| Setup::parse(s))
        .collect::<anyhow::Result<_>>()?;
    let topo = Topology::build(TopoSpec::direct())?;
    let mut runs = Vec::new();
    for round in 0..args.rounds {
        for (i, setup) in setups.iter().enumerate() {
            let tag = format!("{round}{i}");
            let r = one(&topo, *setup, round, &tag, args.seconds)?;
            println!(
                "round {round} {:<14} {:>8.1} Mbit/s  {:>6.2} CPU-s/Gbit  ({} retransmits)",
                setup.name(),
                r.mbit_per_s,
                r.cpu_s_per_gbit,
                r.retransmits
            );
            runs.push(r);
        }
    }
    println!(
        "\nmean over {} round(s), {} s each, iperf3 cubic single stream pc -> srv:",
        args.rounds, args.seconds
    );
    for setup in &setups {
        let mine: Vec<&Run> = runs.iter().filter(|r| r.setup == *setup).collect();
        let n = mine.len() as f64;
        let mbit = mine.iter().map(|r| r.mbit_per_s).sum::<f64>() / n;
        let cpu = mine.iter().map(|r| r.cpu_s_per_gbit).sum::<f64>() / n;
        let each: Vec<String> = mine
            .iter()
            .map(|r| format!("{:.0}", r.mbit_per_s))
            .collect();
        println!(
            "  {:<14} {:>8.1} Mbit/s  {:>6.2} CPU-s/Gbit   rounds: {}",
            setup.name(),
            mbit,
            cpu,
            each.join(" / ")
        );
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&runs)?)?;
    }
    Ok(runs)
}

fn one(topo: &Topology, setup: Setup, round: u32, tag: &str, secs: u32) -> anyhow::Result<Run> {
    let running = vpn::up(topo, setup, tag)?;
    let pids = running.pids();
    anyhow::ensure!(pids.len() == 2, "{}: daemon pids {pids:?}", setup.name());
    let mut samples = Vec::new();
    let srv = addr::SRV.to_string();
    let spec = iperf::IperfSpec {
        client: Node::Pc,
        server: Node::Srv,
        server_addr: &srv,
        bind: None,
        port: 5201,
        secs,
        omit: 0,
        cc: "cubic",
        reverse: false,
    };
    let res = iperf::run(topo, &spec, || samples.push(cpu::total(&pids)))?;
    let (before, after) = match (samples.first(), samples.get(1)) {
        (Some(Ok(a)), Some(Ok(b))) => (*a, *b),
        _ => anyhow::bail!("{}: could not read daemon CPU times", setup.name()),
    };
    drop(running);
    std::thread::sleep(Duration::from_millis(300));
    let cpu_s = (after - before).as_secs_f64();
    let gbit = res.bytes as f64 * 8.0 / 1e9;
    Ok(Run {
        setup,
        round,
        mbit_per_s: res.bits_per_second / 1e6,
        retransmits: res.retransmits,
        cpu_s_per_gbit: if gbit > 0.0 { cpu_s / gbit } else { f64::NAN },
        daemon_cpu_s: cpu_s,
        gbit,
    })
}
