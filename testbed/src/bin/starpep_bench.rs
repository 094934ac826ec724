//! starpep-bench: the benchmarks (not tests) of StarPEP-WG; each subcommand builds its own
//! namespace topology, measures, and prints what it measured (root).

use clap::{Parser, Subcommand};
use starpep_testbed::bench;

#[derive(Parser)]
#[command(name = "starpep-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Throughput and CPU/Gbit through the tunnel on bare veth: ours vs wireguard-go (A/B/A/B).
    Tunnel(bench::tunnel::TunnelArgs),
    /// Download time over a satellite link (default geo, 30 MB, CUBIC end hosts): no VPN, WireGuard, WireGuard + split, PEP without VPN; ratio to the ideal.
    Split(bench::split::SplitArgs),
    /// The main demo: the Starlink trace, WireGuard only vs WireGuard + split vs WireGuard + StarPEP, side by side.
    Demo(bench::demo::DemoArgs),
    /// CPU cost of the StarPEP controller at many concurrent flows (split vs starpep).
    ControlCost(bench::cost::CostArgs),
    /// The VPN-vs-PEP suite: one cell (--setup … --json) or a matrix (--matrix FILE --out DIR, --check).
    Run(bench::run::RunArgs),
    /// Regenerates a matrix run's report.md and cells.csv from its cells.jsonl.
    Report(bench::run::ReportArgs),
    /// One POP, many boxes (default 100 x 10 flows): handshake storm, POP memory, CPU per Gbit/s, fairness between boxes, MaxFlows overflow.
    PopScale(bench::pop_scale::PopScaleArgs),
    /// The tunnel with several peers at once (tunnel-only POP, default 4 boxes): goodput and POP CPU per worker setting (A/B/A/B).
    TunnelPeers(bench::tunnel_peers::TunnelPeersArgs),
    /// StarPEP parameter sweeps (α, β, QueueLow × QueueHigh, LinkQueue) as a markdown page.
    Sweep(bench::sweep::SweepArgs),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::Tunnel(a) => bench::tunnel::run(&a).map(|_| ()),
        Cmd::Split(a) => bench::split::run(&a).map(|_| ()),
        Cmd::Demo(a) => bench::demo::run(&a).map(|_| ()),
        Cmd::Run(a) => bench::run::run(&a),
        Cmd::Report(a) => bench::run::report_cmd(&a),
        Cmd::Sweep(a) => bench::sweep::run(&a).map(|_| ()),
        Cmd::ControlCost(a) => bench::cost::run(&a).map(|_| ()),
        Cmd::PopScale(a) => bench::pop_scale::run(&a).map(|_| ()),
        Cmd::TunnelPeers(a) => bench::tunnel_peers::run(&a).map(|_| ()),
    }
}
