//! `starpep-bench split`: download time of one bulk TCP transfer srv → pc over an emulated
//! satellite link (default `geo`: 10 Mbit/s, 500 ms RTT) with CUBIC end hosts, for four setups:
//! no VPN no PEP, WireGuard only, WireGuard + split (ours), and the PEP without VPN.
//!
//! Ideal time = payload × 8 / link rate + 2 RTT (one RTT for the TCP handshake, one for the
//! request to reach the server and the first byte to come back); each time is reported with its
//! ratio to that ideal. Every setup runs in a fresh topology with its own satlink; the tunnel
//! setups are warmed up (WireGuard handshake done) before the transfer starts. Every received
//! byte is checked against the sent pattern.

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::link::{CapacitySpec, DelaySpec, Profile};
use crate::topo::{Node, Topology};

use super::bed::{Bed, BedSpec};
use super::setup::{pep_set, Setup};

#[derive(Debug, clap::Args)]
pub struct SplitArgs {
    /// satlink profile (name or path).
    #[arg(long, default_value = "geo")]
    pub profile: String,
    /// Payload of the download, bytes.
    #[arg(long, default_value_t = 30_000_000)]
    pub bytes: usize,
    /// Rounds; each runs every setup once.
    #[arg(long, default_value_t = 1)]
    pub rounds: u32,
    /// Setups (plain, wireguard, split, split-cubic, starpep, starpep-clamp, pep-novpn),
    /// comma-separated.
    #[arg(
        long,
        default_value = "plain,wireguard,split,pep-novpn",
        value_delimiter = ','
    )]
    pub setups: Vec<String>,
    /// Link rate and RTT for the ideal when the profile is not constant.
    #[arg(long)]
    pub rate_mbit: Option<f64>,
    #[arg(long)]
    pub rtt_ms: Option<f64>,
    /// `[PEP]` keys to override in both PEP configs (`KEY=VALUE`, repeatable), e.g.
    /// `--pep Congestion=cubic --pep InitCwnd=40`.
    #[arg(long = "pep")]
    pub pep_set: Vec<String>,
    /// What the path knows when the measured download starts (comma-separated): `cold` (it is
    /// the bed's first flow), `warm` (after a 3 MB download on the same path), `busy` (while a
    /// bulk download of the same peer runs, started 5 s before).
    #[arg(long, default_value = "cold", value_delimiter = ',')]
    pub start: Vec<Start>,
    /// Also write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// The path's state when the measured download starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Start {
    Cold,
    Warm,
    Busy,
}

/// The `warm` start's earlier download.
const WARM_BYTES: usize = 3_000_000;
/// The `busy` start: the other flow runs this long before the measured one starts ...
const BUSY_LEAD: Duration = Duration::from_secs(5);

/// One measured download.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Run {
    pub setup: Setup,
    pub start: Start,
    pub round: u32,
    pub bytes: usize,
    pub seconds: f64,
    pub ideal_seconds: f64,
    pub ratio: f64,
    pub goodput_mbit: f64,
}

/// Link rate (bit/s) and RTT of a constant profile, or the command line's.
fn link_figures(args: &SplitArgs, profile: &Path) -> anyhow::Result<(f64, f64)> {
    if let (Some(r), Some(t)) = (args.rate_mbit, args.rtt_ms) {
        return Ok((r * 1e6, t / 1000.0));
    }
    let p = Profile::load(profile)?;
    let rate = match &p.down().capacity {
        CapacitySpec::Rate(r) => *r as f64,
        _ => anyhow::bail!("profile {} has no constant rate: give --rate-mbit", p.name),
    };
    let one_way = |d: &DelaySpec| match d {
        DelaySpec::Constant { delay, .. } => Ok(delay.as_secs_f64()),
        _ => anyhow::bail!("profile {} has no constant delay: give --rtt-ms", p.name),
    };
    Ok((rate, one_way(&p.down().delay)? + one_way(&p.up().delay)?))
}

/// The end hosts' congestion control (cubic unless told). The namespaces' default cannot be
/// changed to cubic (restricted outside the initial namespace), so it is set per socket (root
/// may).
const END_HOST_CC: &str = "cubic";

fn cc_listener(a: SocketAddr, cc: &str) -> std::io::Result<TcpListener> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_tcp_congestion(cc.as_bytes())?;
    s.set_reuse_address(true)?;
    s.bind(&a.into())?;
    s.listen(16)?;
    Ok(s.into())
}

fn cc_connect(a: SocketAddr, cc: &str) -> std::io::Result<TcpStream> {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    s.set_tcp_congestion(cc.as_bytes())?;
    s.connect_timeout(&a.into(), Duration::from_secs(30))?;
    Ok(s.into())
}

/// Byte `i` of the payload (a pattern that detects reordering and loss).
fn pattern(i: usize) -> u8 {
    (i.wrapping_mul(2_654_435_761) >> 13) as u8
}

/// The server port of the measured downloads (the `busy` start's other flow uses the next).
const PORT: u16 = 5401;

/// The download srv → pc to `port`; returns its duration (connect to last byte).
fn download(
    topo: &Topology,
    srv: IpAddr,
    port: u16,
    bytes: usize,
    cc: &str,
) -> anyhow::Result<Duration> {
    let dst = SocketAddr::new(srv, port);
    let any = SocketAddr::from(([0, 0, 0, 0], port));
    let c2 = cc.to_string();
    let l = topo.run_in(Node::Srv, move || cc_listener(any, &c2))??;
    let data: Vec<u8> = (0..bytes).map(pattern).collect();
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut c, _) = l.accept()?;
        let mut req = [0u8; 1];
        c.read_exact(&mut req)?;
        c.write_all(&data)?;
        c.shutdown(Shutdown::Write)?;
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).map(|_| ())
    });
    let t0 = Instant::now();
    let c2 = cc.to_string();
    let mut c = topo.run_in(Node::Pc, move || cc_connect(dst, &c2))??;
    c.write_all(b"G")?;
    let mut buf = vec![0u8; 1 << 16];
    let mut got = 0;
    let mut intact = true;
    loop {
        let n = c.read(&mut buf)?;
        if n == 0 {
            break;
        }
        intact &= buf[..n]
            .iter()
            .enumerate()
            .all(|(i, b)| *b == pattern(got + i));
        got += n;
    }
    let took = t0.elapsed();
    c.shutdown(Shutdown::Write)?;
    server
        .join()
        .map_err(|_| anyhow::anyhow!("server thread panicked"))??;
    anyhow::ensure!(got == bytes, "received {got} of {bytes} bytes");
    anyhow::ensure!(intact, "payload corrupted");
    Ok(took)
}

fn one(args: &SplitArgs, profile: &Path, setup: Setup, start: Start) -> anyhow::Result<Duration> {
    let set = pep_set(setup, &Profile::load(profile)?, &args.pep_set);
    let spec = BedSpec {
        setup,
        profile,
        pep_set: &set,
        seed: Some(1),
        server_rtt: Duration::ZERO,
        aligned: true,
        control_log: false,
    };
    match start {
        Start::Cold => Ok(download_times(&spec, &[args.bytes], END_HOST_CC)?[0]),
        Start::Warm => Ok(download_times(&spec, &[WARM_BYTES, args.bytes], END_HOST_CC)?[1]),
        Start::Busy => {
            let (rate, _) = link_figures(args, profile)?;
            let mut bed = Bed::up(&spec)?;
            let srv = bed.srv_addr();
            // ... and lasts beyond it: the lead, the measured download at half the link, and
            // 10 s to spare.
            let secs = BUSY_LEAD.as_secs_f64() + 2.0 * args.bytes as f64 * 8.0 / rate + 10.0;
            let other = (rate / 8.0 * secs) as usize;
            let topo = &bed.topo;
            let took = std::thread::scope(|s| {
                let bulk = s.spawn(|| download(topo, srv, PORT + 1, other, END_HOST_CC));
                std::thread::sleep(BUSY_LEAD);
                let took = download(topo, srv, PORT, args.bytes, END_HOST_CC);
                let bulk = bulk
                    .join()
                    .map_err(|_| anyhow::anyhow!("bulk download panicked"))?;
                bulk.context("the other, bulk download")?;
                took
            });
            bed.stop();
            took
        }
    }
}

/// Downloads of `sizes` bytes srv → pc, one after the other (each a new connection) on one
/// fresh bed; their durations, connect to last byte.
pub(crate) fn download_times(
    bed: &BedSpec,
    sizes: &[usize],
    cc: &str,
) -> anyhow::Result<Vec<Duration>> {
    let mut bed = Bed::up(bed)?;
    let srv = bed.srv_addr();
    let took = sizes
        .iter()
        .map(|&b| download(&bed.topo, srv, PORT, b, cc))
        .collect::<anyhow::Result<Vec<_>>>()?;
    bed.stop();
    Ok(took)
}

pub fn run(args: &SplitArgs) -> anyhow::Result<Vec<Run>> {
    let setups: Vec<Setup> = args
        .setups
        .iter()
        .map(|s| Setup::parse(s))
        .collect::<anyhow::Result<_>>()?;
    let profile = Profile::find(&args.profile)?;
    let (rate, rtt) = link_figures(args, &profile)?;
    let ideal = args.bytes as f64 * 8.0 / rate + 2.0 * rtt;
    println!(
        "{} B download srv -> pc over {} ({:.1} Mbit/s, RTT {:.0} ms), CUBIC end hosts; \
         ideal = size/rate + 2 RTT = {ideal:.1} s",
        args.bytes,
        args.profile,
        rate / 1e6,
        rtt * 1000.0
    );
    let mut runs = Vec::new();
    for round in 0..args.rounds {
        for (setup, start) in setups
            .iter()
            .flat_map(|s| args.start.iter().map(move |t| (*s, *t)))
        {
            let took = one(args, &profile, setup, start)?.as_secs_f64();
            let r = Run {
                setup,
                start,
                round,
                bytes: args.bytes,
                seconds: took,
                ideal_seconds: ideal,
                ratio: took / ideal,
                goodput_mbit: args.bytes as f64 * 8.0 / took / 1e6,
            };
            println!(
                "round {round} {:<18} {:<5} {:>7.2} s  {:>5.2} x ideal  {:>6.2} Mbit/s",
                setup.label(),
                format!("{start:?}").to_lowercase(),
                r.seconds,
                r.ratio,
                r.goodput_mbit
            );
            runs.push(r);
        }
    }
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&runs)?)?;
    }
    Ok(runs)
}
