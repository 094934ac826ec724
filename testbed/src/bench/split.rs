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
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::link::{CapacitySpec, DelaySpec, Profile};
use crate::topo::{addr, Node, Proc, TopoSpec, Topology};

use super::sibling_bin;

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
    /// Also write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// What is between pc and srv. The name given on the command line is the name in every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// Plain routing over the link: no VPN, no PEP.
    Plain,
    /// Our endpoint pair with stock WireGuard configs (no `[PEP]`).
    Wireguard,
    /// `configs/{box,pop}-pep.conf` with `Mode = split`: tunnel + plain splitting, BBR.
    Split,
    /// The same with CUBIC on the satellite segment (2 × BDP buffers): the PEPsal-like reference.
    SplitCubic,
    /// `configs/{box,pop}-pep.conf` as shipped: tunnel + StarPEP (the default mode).
    Starpep,
    /// StarPEP with the socket back-end (`WindowControl = clamp`).
    StarpepClamp,
    /// `configs/{box,pop}-pep-none.conf`: the PEP without VPN, plain routing.
    PepNoVpn,
    /// Stock wireguard-go + `wg` at box and POP (`bench::vpn`).
    WireguardGo,
}

impl serde::Serialize for Setup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Setup {
    pub const ALL: [Setup; 8] = [
        Setup::Plain,
        Setup::Wireguard,
        Setup::Split,
        Setup::SplitCubic,
        Setup::Starpep,
        Setup::StarpepClamp,
        Setup::PepNoVpn,
        Setup::WireguardGo,
    ];

    pub fn parse(s: &str) -> anyhow::Result<Setup> {
        if let Some(x) = Setup::ALL.into_iter().find(|x| x.name() == s) {
            return Ok(x);
        }
        Ok(match s {
            "wg" => Setup::Wireguard,
            "pep" => Setup::PepNoVpn,
            o => {
                let names: Vec<&str> = Setup::ALL.iter().map(|x| x.name()).collect();
                anyhow::bail!("unknown setup {o:?} ({})", names.join(", "))
            }
        })
    }

    /// The command-line name (also the `setup` of every JSON row).
    pub fn name(self) -> &'static str {
        match self {
            Setup::Plain => "plain",
            Setup::Wireguard => "wireguard",
            Setup::Split => "split",
            Setup::SplitCubic => "split-cubic",
            Setup::Starpep => "starpep",
            Setup::StarpepClamp => "starpep-clamp",
            Setup::PepNoVpn => "pep-novpn",
            Setup::WireguardGo => "wireguard-go",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Setup::Plain => "no VPN, no PEP",
            Setup::Wireguard => "WireGuard only",
            Setup::Split => "WireGuard + split",
            Setup::SplitCubic => "split (CUBIC)",
            Setup::Starpep => "WireGuard + StarPEP",
            Setup::StarpepClamp => "StarPEP (clamp)",
            Setup::PepNoVpn => "PEP without VPN",
            Setup::WireguardGo => "wireguard-go",
        }
    }

    /// Config names (box, POP) in `configs/`, if daemons run.
    pub(crate) fn configs(self) -> Option<(&'static str, &'static str)> {
        match self {
            Setup::Plain | Setup::WireguardGo => None,
            Setup::Wireguard => Some(("box", "pop")),
            Setup::Split | Setup::SplitCubic | Setup::Starpep | Setup::StarpepClamp => {
                Some(("box-pep", "pop-pep"))
            }
            Setup::PepNoVpn => Some(("box-pep-none", "pop-pep-none")),
        }
    }

    /// The `[PEP]` keys that make this setup out of the shipped config (before `--pep`).
    pub(crate) fn pep_keys(self) -> &'static [&'static str] {
        match self {
            Setup::Split => &["Mode=split"],
            Setup::SplitCubic => &["Mode=split", "Congestion=cubic"],
            Setup::Starpep => &["Mode=starpep"],
            Setup::StarpepClamp => &["Mode=starpep", "WindowControl=clamp"],
            Setup::Plain | Setup::Wireguard | Setup::PepNoVpn | Setup::WireguardGo => &[],
        }
    }

    pub(crate) fn plain_routes(self) -> bool {
        matches!(self, Setup::Plain | Setup::PepNoVpn)
    }
}

/// The `[PEP]` overrides of one run: the setup's keys, the link's nominal rate and RTT (buffers
/// sized to its BDP, as an operator configures them), then the command line's `--pep`.
pub(crate) fn pep_set(setup: Setup, profile: &Profile, user: &[String]) -> Vec<String> {
    let (rate, rtt) = profile.nominal();
    let mut v: Vec<String> = setup.pep_keys().iter().map(|s| s.to_string()).collect();
    v.push(format!("LinkRate={}bit", rate.round() as u64));
    v.push(format!("LinkRtt={}ms", rtt.as_millis().max(1)));
    v.extend(user.iter().cloned());
    v
}

/// One measured download.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Run {
    pub setup: Setup,
    pub round: u32,
    pub bytes: usize,
    pub seconds: f64,
    pub ideal_seconds: f64,
    pub ratio: f64,
    pub goodput_mbit: f64,
}

/// wireguard-go at box and POP if `setup` is that (stopped when the value drops).
pub(crate) fn start_wireguard_go(
    topo: &Topology,
    setup: Setup,
) -> anyhow::Result<Option<super::vpn::Running>> {
    if setup != Setup::WireguardGo {
        return Ok(None);
    }
    super::vpn::up(topo, super::vpn::Setup::WireguardGo, "g").map(Some)
}

/// `text` with `KEY=VALUE` overrides in its `[PEP]` section (the file's last section).
fn patch_pep(text: &str, set: &[String]) -> anyhow::Result<String> {
    let mut out = text.to_string();
    for kv in set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--pep {kv:?}: not KEY=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        let at = out
            .find("[PEP]")
            .ok_or_else(|| anyhow::anyhow!("no [PEP] section"))?;
        let (head, tail) = out.split_at(at);
        let mut lines: Vec<String> = tail
            .lines()
            .filter(|l| {
                let key = l.split('=').next().unwrap_or("").trim();
                l.trim_start().starts_with('#') || !key.eq_ignore_ascii_case(k)
            })
            .map(str::to_string)
            .collect();
        lines.push(format!("{k} = {v}"));
        out = format!("{head}{}\n", lines.join("\n"));
    }
    Ok(out)
}

/// Starts `configs/NAME.conf` (with `[PEP]` overrides) in `node` and waits until `show`
/// answers (and reports the PEP, for PEP configs).
pub(crate) fn start_daemon(
    topo: &Topology,
    node: Node,
    bin: &str,
    name: &str,
    pep_set: &[String],
) -> anyhow::Result<Proc> {
    let src = crate::link::workspace_root().join(format!("configs/{name}.conf"));
    let conf = topo.tmpdir().join(format!("{name}.conf"));
    let text = std::fs::read_to_string(&src)?;
    let text = if name.contains("pep") {
        patch_pep(&text, pep_set)?
    } else {
        text
    };
    std::fs::write(&conf, text)?;
    let bin = sibling_bin(bin)?;
    let mut p = topo.spawn(
        node,
        &format!("{}-{name}", node.short()),
        &[
            bin.as_os_str(),
            "run".as_ref(),
            "-c".as_ref(),
            conf.as_os_str(),
        ],
    )?;
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(st) = p.try_status() {
            anyhow::bail!("{name}: daemon exited ({st}): {}", p.log());
        }
        let out = topo.exec(node, &[bin.as_os_str(), "show".as_ref(), name.as_ref()])?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && (!name.contains("pep") || text.contains("pep:")) {
            return Ok(p);
        }
        anyhow::ensure!(Instant::now() < end, "{name}: not up: {}", p.log());
        std::thread::sleep(Duration::from_millis(50));
    }
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

/// The download srv → pc; returns its duration (connect to last byte).
fn download(topo: &Topology, bytes: usize, cc: &str) -> anyhow::Result<Duration> {
    let dst: SocketAddr = SocketAddr::from((addr::SRV, 5401));
    let c2 = cc.to_string();
    let l = topo.run_in(Node::Srv, move || cc_listener(dst, &c2))??;
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

fn one(args: &SplitArgs, profile: &Path, setup: Setup) -> anyhow::Result<Duration> {
    let set = pep_set(setup, &Profile::load(profile)?, &args.pep_set);
    let took = download_times(
        profile,
        setup,
        &set,
        &[args.bytes],
        END_HOST_CC,
        1,
        Duration::ZERO,
    )?;
    Ok(took[0])
}

/// Downloads of `sizes` bytes srv → pc, one after the other (each a new connection) in one
/// fresh topology of `setup` over `profile` (`server_rtt` between POP and server); their
/// durations, connect to last byte.
pub(crate) fn download_times(
    profile: &Path,
    setup: Setup,
    set: &[String],
    sizes: &[usize],
    cc: &str,
    seed: u64,
    server_rtt: Duration,
) -> anyhow::Result<Vec<Duration>> {
    let spec = if setup.plain_routes() {
        TopoSpec::satlink().with_plain_routes()
    } else {
        TopoSpec::satlink()
    };
    let topo = Topology::build(spec.with_server_rtt(server_rtt))?;
    let _ter = match topo.has(Node::Ter) {
        true => Some(topo.spawn_terrestrial(&sibling_bin("satlink")?)?),
        false => None,
    };
    let seed = seed.to_string();
    let _link = topo.spawn_satlink(
        &sibling_bin("satlink")?,
        profile,
        &["--start", "now", "--seed", &seed],
    )?;
    let mut daemons = Vec::new();
    if let Some((b, p)) = setup.configs() {
        daemons.push(start_daemon(&topo, Node::Pop, "starpep-pop", p, set)?);
        daemons.push(start_daemon(&topo, Node::Box, "starpep-client", b, set)?);
    }
    let _wg_go = start_wireguard_go(&topo, setup)?;
    // Warm-up: the path works (and the WireGuard handshake is done) before timing.
    let ok = topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), super::WARM_UP);
    anyhow::ensure!(ok, "{}: pc cannot reach srv", setup.label());
    let took = sizes
        .iter()
        .map(|&b| download(&topo, b, cc))
        .collect::<anyhow::Result<Vec<_>>>()?;
    for mut d in daemons {
        d.stop();
    }
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
        for setup in &setups {
            let took = one(args, &profile, *setup)?.as_secs_f64();
            let r = Run {
                setup: *setup,
                round,
                bytes: args.bytes,
                seconds: took,
                ideal_seconds: ideal,
                ratio: took / ideal,
                goodput_mbit: args.bytes as f64 * 8.0 / took / 1e6,
            };
            println!(
                "round {round} {:<18} {:>7.1} s  {:>5.2} x ideal  {:>6.2} Mbit/s",
                setup.label(),
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
