//! `starpep-bench demo` (the README's main job): the endpoint pair in namespaces across the
//! emulated satellite link, one timed download per setup, results side by side.
//!
//! Default: the real Starlink trace (`leo-starlink`), WireGuard only vs WireGuard + split,
//! a 20 s `owd-bulk` download srv → pc with CUBIC end hosts. For each setup: goodput,
//! utilisation (goodput / the capacity the trace offered during the transfer), one-way delay
//! of the data (per 16 KiB chunk, stamped as it entered the network) and its queueing part
//! (OWD − the trace's propagation delay at that instant), and the satellite queue (satlink).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::link::Profile;
use crate::topo::{addr, Node, TopoSpec, Topology};

use super::sibling_bin;
use super::split::{start_daemon, Setup};

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// satlink profile (name in configs/profiles, or a path).
    #[arg(long, default_value = "leo-starlink")]
    pub profile: String,
    /// Length of each download, seconds.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// Setups side by side (plain, wireguard, split, pep-novpn), comma-separated.
    #[arg(long, default_value = "wireguard,split", value_delimiter = ',')]
    pub setups: Vec<String>,
    /// Also write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// What one setup measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DemoRow {
    pub setup: Setup,
    pub goodput_mbps: f64,
    /// Mean capacity the profile offered (downlink) while the transfer ran.
    pub capacity_mbps: f64,
    pub utilisation: f64,
    pub owd_p50_ms: f64,
    pub owd_p95_ms: f64,
    pub owd_p99_ms: f64,
    /// Median over 100 ms bins of (chunk OWD p50 − the trace's one-way delay in that bin).
    pub queueing_p50_ms: f64,
    /// Mean queueing delay in satlink's bottleneck (downlink) during the transfer.
    pub sat_queue_ms: f64,
    pub bytes: u64,
    pub sha256_match: bool,
}

pub fn run(args: &DemoArgs) -> anyhow::Result<Vec<DemoRow>> {
    let setups: Vec<Setup> = args
        .setups
        .iter()
        .map(|s| Setup::parse(s))
        .collect::<anyhow::Result<_>>()?;
    let profile = Profile::find(&args.profile)?;
    let desc = Profile::load(&profile)?.description;
    println!(
        "StarPEP-WG demo: {} s download srv -> pc over {} ({desc}), CUBIC end hosts",
        args.seconds, args.profile
    );
    let mut rows = Vec::new();
    for setup in setups {
        eprintln!("-- {}", setup.label());
        let row = one(args, &profile, setup)?;
        eprintln!(
            "   {:.2} Mbit/s, OWD p50 {:.1} ms",
            row.goodput_mbps, row.owd_p50_ms
        );
        rows.push(row);
    }
    print_table(&rows);
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(rows)
}

fn print_table(rows: &[DemoRow]) {
    println!();
    print!("{:<28}", "");
    for r in rows {
        print!("{:>20}", r.setup.label());
    }
    println!();
    let line = |name: &str, f: &dyn Fn(&DemoRow) -> String| {
        print!("{name:<28}");
        for r in rows {
            print!("{:>20}", f(r));
        }
        println!();
    };
    line("goodput (Mbit/s)", &|r| format!("{:.2}", r.goodput_mbps));
    line("offered capacity (Mbit/s)", &|r| {
        format!("{:.2}", r.capacity_mbps)
    });
    line("utilisation", &|r| {
        format!("{:.0} %", r.utilisation * 100.0)
    });
    line("one-way delay p50 (ms)", &|r| {
        format!("{:.1}", r.owd_p50_ms)
    });
    line("one-way delay p95 (ms)", &|r| {
        format!("{:.1}", r.owd_p95_ms)
    });
    line("one-way delay p99 (ms)", &|r| {
        format!("{:.1}", r.owd_p99_ms)
    });
    line("queueing delay p50 (ms)", &|r| {
        format!("{:.1}", r.queueing_p50_ms)
    });
    line("satellite queue mean (ms)", &|r| {
        format!("{:.1}", r.sat_queue_ms)
    });
    line("bytes, sha256 equal", &|r| {
        format!("{} {}", r.bytes, if r.sha256_match { "yes" } else { "NO" })
    });
    if let [a, b, ..] = rows {
        println!(
            "\n{} vs {}: goodput x{:.2}, queueing delay {:+.1} ms",
            b.setup.label(),
            a.setup.label(),
            b.goodput_mbps / a.goodput_mbps,
            b.queueing_p50_ms - a.queueing_p50_ms
        );
    }
}

fn one(args: &DemoArgs, profile: &Path, setup: Setup) -> anyhow::Result<DemoRow> {
    let spec = if setup.plain_routes() {
        TopoSpec::satlink().with_plain_routes()
    } else {
        TopoSpec::satlink()
    };
    let topo = Topology::build(spec)?;
    let stats = topo.tmpdir().join("satlink.json");
    let stats_s = stats.display().to_string();
    let mut link = topo.spawn_satlink(
        &sibling_bin("satlink")?,
        profile,
        &["--start", "now", "--stats-json", &stats_s],
    )?;
    let mut daemons = Vec::new();
    if let Some((b, p)) = setup.configs() {
        daemons.push(start_daemon(&topo, Node::Pop, "starpep-pop", p, &[])?);
        daemons.push(start_daemon(&topo, Node::Box, "starpep-client", b, &[])?);
    }
    let srv = addr::SRV.to_string();
    let reachable = (0..10).any(|_| {
        topo.exec(Node::Pc, &["ping", "-c", "1", "-W", "2", &srv])
            .map(|o| o.status.success())
            .unwrap_or(false)
    });
    anyhow::ensure!(reachable, "{}: pc cannot reach srv", setup.label());

    let owd = sibling_bin("owd-bulk")?;
    let owd = owd.display().to_string();
    let listen = format!("{}:5601", addr::SRV);
    let send_json = topo.tmpdir().join("send.json").display().to_string();
    let recv_json = topo.tmpdir().join("recv.json").display().to_string();
    let duration = format!("{}s", args.seconds);
    let mut sender = topo.spawn(
        Node::Srv,
        "owd-send",
        &[
            &owd,
            "send",
            "--listen",
            &listen,
            "--duration",
            &duration,
            "--cc",
            "cubic",
            "--json",
            &send_json,
        ],
    )?;
    wait_listening(&topo, 5601)?;
    topo.run_ok(
        Node::Pc,
        &[&owd, "recv", "--connect", &listen, "--json", &recv_json],
    )?;
    let sent = sender
        .wait_timeout(Duration::from_secs(30))
        .ok_or_else(|| anyhow::anyhow!("owd-bulk sender did not finish"))?;
    anyhow::ensure!(sent.success(), "owd-bulk sender failed: {}", sender.log());
    for mut d in daemons {
        d.stop();
    }
    link.stop();
    let recv: Value = serde_json::from_str(&std::fs::read_to_string(&recv_json)?)?;
    let send: Value = serde_json::from_str(&std::fs::read_to_string(&send_json)?)?;
    let sat: Value = serde_json::from_str(&std::fs::read_to_string(&stats)?)?;
    Ok(row(setup, &recv, &send, &sat))
}

/// Waits until something listens on TCP `port` in srv.
fn wait_listening(topo: &Topology, port: u16) -> anyhow::Result<()> {
    let filter = format!("sport = :{port}");
    for _ in 0..100 {
        let out = topo.run_ok(Node::Srv, &["ss", "-Hltn", &filter])?;
        if !out.trim().is_empty() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("nothing listens on srv:{port}")
}

fn f(v: &Value, path: &[&str]) -> f64 {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// Combines the receiver's result with satlink's downlink series over the same interval.
fn row(setup: Setup, recv: &Value, send: &Value, sat: &Value) -> DemoRow {
    let t0 = f(recv, &["start_unix_s"]) - f(sat, &["replay_start_unix"]);
    let t1 = t0 + f(recv, &["duration_s"]);
    let down = &sat["directions"]["down"];
    let in_window = |p: &&Value| {
        let t = f(p, &["t_ms"]) / 1000.0;
        t > t0 && t <= t1
    };
    let series = down["series"].as_array().cloned().unwrap_or_default();
    let window: Vec<&Value> = series.iter().filter(in_window).collect();
    let mean = |k: &str| {
        let v: Vec<f64> = window.iter().map(|p| f(p, &[k])).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    };
    let capacity = mean("capacity_mbps");
    let base = BaseDelay::from(&down["base_delay"]);
    let bin_s = f(recv, &["bin_ms"]) / 1000.0;
    let mut queueing: Vec<f64> = recv["series"]
        .as_array()
        .map(|bins| {
            bins.iter()
                .filter_map(|b| {
                    let owd = b["owd_ms_p50"].as_f64()?;
                    let t = t0 + f(b, &["t_s"]) + bin_s / 2.0;
                    Some(owd - base.at(t))
                })
                .collect()
        })
        .unwrap_or_default();
    queueing.sort_by(f64::total_cmp);
    let goodput = f(recv, &["goodput_mbps"]);
    DemoRow {
        setup,
        goodput_mbps: goodput,
        capacity_mbps: capacity,
        utilisation: goodput / capacity,
        owd_p50_ms: f(recv, &["owd_ms", "p50"]),
        owd_p95_ms: f(recv, &["owd_ms", "p95"]),
        owd_p99_ms: f(recv, &["owd_ms", "p99"]),
        queueing_p50_ms: queueing
            .get(queueing.len() / 2)
            .copied()
            .unwrap_or(f64::NAN),
        sat_queue_ms: mean("qdelay_mean_ms"),
        bytes: recv["bytes"].as_u64().unwrap_or(0),
        sha256_match: recv["sha256"].is_string() && recv["sha256"] == send["sha256"],
    }
}

/// The trace's one-way propagation delay, from satlink's stats JSON.
struct BaseDelay {
    constant_ms: Option<f64>,
    slot_s: f64,
    slots_ms: Vec<f64>,
}

impl BaseDelay {
    fn from(v: &Value) -> BaseDelay {
        BaseDelay {
            constant_ms: v["constant_ms"].as_f64(),
            slot_s: v["slot_ms"].as_f64().unwrap_or(10.0) / 1000.0,
            slots_ms: v["slots_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
        }
    }

    /// Delay (ms) at `t` seconds since the replay start.
    fn at(&self, t: f64) -> f64 {
        if let Some(c) = self.constant_ms {
            return c;
        }
        let i = (t / self.slot_s).max(0.0) as usize;
        self.slots_ms
            .get(i.min(self.slots_ms.len().saturating_sub(1)))
            .copied()
            .unwrap_or(f64::NAN)
    }
}
