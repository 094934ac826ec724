//! `starpep-bench control-cost`: what the StarPEP controller costs in CPU at many concurrent
//! flows. The same trickle of `--flows` concurrent downloads (1 Mbit/s each, direct WAN, no
//! emulation) through the endpoint pair with `Mode = split` and with `Mode = starpep`, one
//! after the other; the daemons' CPU time (utime + stime) over the same window; the
//! difference is the controllers' (every flow is active, so each ticks every 5 ms).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use crate::topo::{addr, Node, TopoSpec, Topology};

use super::cpu;
use super::setup::start_daemon;

#[derive(Debug, clap::Args)]
pub struct CostArgs {
    /// Concurrent flows.
    #[arg(long, default_value_t = 100)]
    pub flows: usize,
    /// Measured window, seconds (after all flows are up).
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
}

/// CPU of one mode.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cost {
    pub mode: String,
    pub flows: usize,
    /// Fraction of one core over the window.
    pub box_cpu: f64,
    pub pop_cpu: f64,
}

const CHUNK: usize = 1250;
const EVERY: Duration = Duration::from_millis(10);

fn one(mode: &str, args: &CostArgs) -> anyhow::Result<Cost> {
    let topo = Topology::build(TopoSpec::direct())?;
    let set = vec![
        format!("Mode={mode}"),
        format!("MaxFlows={}", args.flows * 2),
    ];
    let mut pop = start_daemon(&topo, Node::Pop, "starpep-pop", "pop-pep", &set)?;
    let mut bx = start_daemon(&topo, Node::Box, "starpep-client", "box-pep", &set)?;
    let dst = SocketAddr::from((addr::SRV, 5501));
    let l: TcpListener = topo.run_in(Node::Srv, move || TcpListener::bind(dst))??;
    let total = Duration::from_secs(args.seconds + 4);
    let n = args.flows;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let mut hs = Vec::new();
        for _ in 0..n {
            let (mut c, _) = l.accept()?;
            hs.push(std::thread::spawn(move || {
                let buf = [7u8; CHUNK];
                let end = Instant::now() + total;
                while Instant::now() < end {
                    if c.write_all(&buf).is_err() {
                        return;
                    }
                    std::thread::sleep(EVERY);
                }
            }));
        }
        for h in hs {
            let _ = h.join();
        }
        Ok(())
    });
    let mut clients = Vec::new();
    for _ in 0..n {
        let c: TcpStream = topo.run_in(Node::Pc, move || TcpStream::connect(dst))??;
        clients.push(std::thread::spawn(move || {
            let mut c = c;
            let mut b = vec![0u8; 1 << 16];
            while matches!(c.read(&mut b), Ok(k) if k > 0) {}
        }));
    }
    std::thread::sleep(Duration::from_secs(2));
    let pids = |p: &crate::topo::Proc| p.pid().ok_or_else(|| anyhow::anyhow!("no pid"));
    let (bp, pp) = (pids(&bx)?, pids(&pop)?);
    let (b0, p0, t0) = (cpu::cpu_time(bp)?, cpu::cpu_time(pp)?, Instant::now());
    std::thread::sleep(Duration::from_secs(args.seconds));
    let (b1, p1) = (cpu::cpu_time(bp)?, cpu::cpu_time(pp)?);
    let dt = t0.elapsed().as_secs_f64();
    let _ = server.join();
    for c in clients {
        let _ = c.join();
    }
    bx.stop();
    pop.stop();
    Ok(Cost {
        mode: mode.to_string(),
        flows: n,
        box_cpu: (b1 - b0).as_secs_f64() / dt,
        pop_cpu: (p1 - p0).as_secs_f64() / dt,
    })
}

pub fn run(args: &CostArgs) -> anyhow::Result<Vec<Cost>> {
    println!(
        "{} concurrent flows of 1 Mbit/s each through the pair (direct WAN), {} s measured",
        args.flows, args.seconds
    );
    let mut out = Vec::new();
    for mode in ["split", "starpep"] {
        let c = one(mode, args)?;
        println!(
            "{:<8} box {:5.1} % of a core, POP {:5.1} %",
            c.mode,
            c.box_cpu * 100.0,
            c.pop_cpu * 100.0
        );
        out.push(c);
    }
    if let [s, p] = &out[..] {
        let per = (p.box_cpu + p.pop_cpu - s.box_cpu - s.pop_cpu) / 2.0;
        println!(
            "controller: {:.1} % of a core per PEP for {} flows ({:.0} µs of CPU per flow-second, \
             {:.1} µs per 5 ms tick)",
            per * 100.0,
            args.flows,
            per / args.flows as f64 * 1e6,
            per / args.flows as f64 * 1e6 / 200.0
        );
    }
    Ok(out)
}
