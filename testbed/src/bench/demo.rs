//! `starpep-bench demo` (the README's main job): the endpoint pair in namespaces across the
//! emulated satellite link, one timed download per setup, results side by side.
//!
//! Default: the real Starlink trace (`leo-starlink`), WireGuard only vs WireGuard + split vs
//! WireGuard + StarPEP, a 20 s `owd-bulk` download srv → pc with CUBIC end hosts. For each
//! setup: goodput, utilisation (goodput / the capacity the trace offered during the transfer),
//! one-way delay of the data (per 16 KiB chunk, stamped as it entered the network), its
//! queueing part (OWD − the trace's propagation delay when the chunk crossed the link), how much
//! of it the PEP's own queue holds (the POP controller's `Q / R_down`), and the satellite queue
//! (satlink). satlink starts aligned to Starlink's :12/:27/:42/:57 grid, where the PEP's
//! `Reconfig = starlink` expects the reconfigurations.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::link::{retrace, Profile};
use crate::topo::{Node, Topology};

use super::bed::{Bed, BedSpec};
use super::setup::{pep_set, Setup};
use super::sibling_bin;

#[derive(Debug, clap::Args)]
pub struct DemoArgs {
    /// satlink profile (name in configs/profiles, or a path).
    #[arg(long, default_value = "leo-starlink")]
    pub profile: String,
    /// Replace the profile's capacity trace (both directions; mahimahi format).
    #[arg(long, value_name = "FILE")]
    pub trace_bw: Option<PathBuf>,
    /// Replace the profile's delay trace (both directions; one ms value per 10 ms line). The
    /// reconfiguration schedule is then detected in this trace.
    #[arg(long, value_name = "FILE")]
    pub trace_delay: Option<PathBuf>,
    /// Length of each download, seconds.
    #[arg(long, default_value_t = 20)]
    pub seconds: u64,
    /// A constant round trip between POP and server (a second satlink), e.g. `20ms`.
    #[arg(long, default_value = "0ms", value_parser = crate::link::units::parse_duration)]
    pub server_rtt: Duration,
    /// Setups side by side (plain, wireguard, split, split-cubic, starpep, starpep-clamp,
    /// pep-novpn), comma-separated.
    #[arg(long, default_value = "wireguard,split,starpep", value_delimiter = ',')]
    pub setups: Vec<String>,
    /// `[PEP]` keys to override in both PEP configs (`KEY=VALUE`, repeatable), after the
    /// setup's own (e.g. `--pep QueueHigh=10ms`).
    #[arg(long = "pep")]
    pub pep_set: Vec<String>,
    /// Also write the results as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep each setup's raw files (per-chunk samples, satlink's counters, the POP's per-tick
    /// control log) under DIR/SETUP/.
    #[arg(long, value_name = "DIR")]
    pub keep: Option<PathBuf>,
    /// The end hosts' congestion control (cubic or bbr).
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    /// Seed of satlink's loss and jitter draws (default: the profile's, else 1).
    #[arg(long)]
    pub seed: Option<u64>,
}

/// What one setup measured. Field names are a contract (scripts read them).
#[derive(Debug, Clone, serde::Serialize)]
pub struct DemoRow {
    /// The name given to `--setups`.
    pub setup: Setup,
    pub goodput_mbps: f64,
    /// Mean capacity the profile offered (downlink) while the transfer ran.
    pub capacity_mbps: f64,
    pub utilisation: f64,
    pub owd_p50_ms: f64,
    pub owd_p95_ms: f64,
    pub owd_p99_ms: f64,
    /// Per chunk: OWD − the trace's one-way delay when the chunk crossed the link.
    pub queueing_p50_ms: f64,
    pub queueing_p95_ms: f64,
    /// Mean over the POP controller's ticks of its queue in delay units (Q / R_down); null
    /// without a PEP.
    pub proxy_queue_ms: Option<f64>,
    /// Mean queueing delay in satlink's bottleneck (downlink) during the transfer.
    pub sat_queue_ms: f64,
    pub bytes: u64,
    pub sha256_match: bool,
    /// satlink's downlink counters (for the suite's cells; not in the demo's rows).
    #[serde(skip)]
    pub emulator: Option<Value>,
}

pub fn run(args: &DemoArgs) -> anyhow::Result<Vec<DemoRow>> {
    let setups: Vec<Setup> = args
        .setups
        .iter()
        .map(|s| Setup::parse(s))
        .collect::<anyhow::Result<_>>()?;
    let found = Profile::find(&args.profile)?;
    let scratch = std::env::temp_dir().join(format!("starpep-demo-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let profile = retraced(&found, args, &scratch)?;
    let desc = Profile::load(&profile)?.description;
    let ter = if args.server_rtt.is_zero() {
        String::new()
    } else {
        format!(", {:?} RTT between POP and server", args.server_rtt)
    };
    println!(
        "StarPEP-WG demo: {} s download srv -> pc over {} ({desc}){ter}, CUBIC end hosts",
        args.seconds, args.profile
    );
    let mut rows = Vec::new();
    for setup in setups {
        eprintln!("-- {}", setup.label());
        let row = one(args, &profile, setup)?;
        eprintln!(
            "   {:.2} Mbit/s, OWD p50 {:.1} ms, queueing p50 {:.1} / p95 {:.1} ms",
            row.goodput_mbps, row.owd_p50_ms, row.queueing_p50_ms, row.queueing_p95_ms
        );
        rows.push(row);
    }
    let _ = std::fs::remove_dir_all(&scratch);
    print_table(&rows);
    if let Some(p) = &args.json {
        std::fs::write(p, serde_json::to_string_pretty(&rows)?)?;
    }
    Ok(rows)
}

/// The profile to replay: `found`, or a copy with `--trace-bw` / `--trace-delay` in it.
pub(crate) fn retraced(found: &Path, args: &DemoArgs, dir: &Path) -> anyhow::Result<PathBuf> {
    if args.trace_bw.is_none() && args.trace_delay.is_none() {
        return Ok(found.to_path_buf());
    }
    let text = std::fs::read_to_string(found)?;
    let out = retrace::with_traces(
        found,
        &text,
        args.trace_bw.as_deref(),
        args.trace_delay.as_deref(),
    )?;
    let p = dir.join("profile.toml");
    std::fs::write(&p, out)?;
    Ok(p)
}

fn print_table(rows: &[DemoRow]) {
    println!();
    print!("{:<30}", "");
    for r in rows {
        print!("{:>20}", r.setup.label());
    }
    println!();
    let line = |name: &str, f: &dyn Fn(&DemoRow) -> String| {
        print!("{name:<30}");
        for r in rows {
            print!("{:>20}", f(r));
        }
        println!();
    };
    let opt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
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
    line("queueing delay p95 (ms)", &|r| {
        format!("{:.1}", r.queueing_p95_ms)
    });
    line("  of which in the PEP (ms)", &|r| opt(r.proxy_queue_ms));
    line("  satellite queue mean (ms)", &|r| {
        format!("{:.1}", r.sat_queue_ms)
    });
    line("bytes, sha256 equal", &|r| {
        format!("{} {}", r.bytes, if r.sha256_match { "yes" } else { "NO" })
    });
    if let [a, rest @ ..] = rows {
        for b in rest {
            println!(
                "{} vs {}: goodput x{:.2}, OWD p50 x{:.2}",
                b.setup.label(),
                a.setup.label(),
                b.goodput_mbps / a.goodput_mbps,
                b.owd_p50_ms / a.owd_p50_ms
            );
        }
    }
}

pub(crate) fn one(args: &DemoArgs, profile: &Path, setup: Setup) -> anyhow::Result<DemoRow> {
    let set = pep_set(setup, &Profile::load(profile)?, &args.pep_set);
    let mut bed = Bed::up(&BedSpec {
        setup,
        profile,
        pep_set: &set,
        seed: args.seed,
        server_rtt: args.server_rtt,
        aligned: true,
        control_log: true,
    })?;
    let topo = &bed.topo;
    let owd = sibling_bin("owd-bulk")?;
    let owd = owd.display().to_string();
    let listen = "0.0.0.0:5601";
    let connect = SocketAddr::new(bed.srv_addr(), 5601).to_string();
    let send_json = topo.tmpdir().join("send.json").display().to_string();
    let recv_json = topo.tmpdir().join("recv.json").display().to_string();
    let samples = topo.tmpdir().join("samples.csv");
    let samples_s = samples.display().to_string();
    let duration = format!("{}s", args.seconds);
    let mut sender = topo.spawn(
        Node::Srv,
        "owd-send",
        &[
            &owd,
            "send",
            "--listen",
            listen,
            "--duration",
            &duration,
            "--cc",
            &args.cc,
            // A chunk waits behind at most this much unsent data in the server's own socket
            // (16 KiB is 3 ms at 45 Mbit/s; owd-bulk's 64 KiB default would add up to 12 ms of
            // sender-side wait to every setup's figure; docs/owd-bulk.md).
            "--notsent-lowat",
            "16K",
            "--json",
            &send_json,
        ],
    )?;
    wait_listening(topo, 5601)?;
    topo.run_ok(
        Node::Pc,
        &[
            &owd,
            "recv",
            "--connect",
            &connect,
            "--json",
            &recv_json,
            "--samples",
            &samples_s,
        ],
    )?;
    let sent = sender
        .wait_timeout(Duration::from_secs(30))
        .ok_or_else(|| anyhow::anyhow!("owd-bulk sender did not finish"))?;
    anyhow::ensure!(sent.success(), "owd-bulk sender failed: {}", sender.log());
    bed.stop();
    let recv: Value = serde_json::from_str(&std::fs::read_to_string(&recv_json)?)?;
    let send: Value = serde_json::from_str(&std::fs::read_to_string(&send_json)?)?;
    let sat = bed.satlink_stats()?;
    let chunks = read_samples(&samples)?;
    let ctl = bed.control_log();
    if let Some(dir) = &args.keep {
        let dir = dir.join(setup.name());
        std::fs::create_dir_all(&dir)?;
        let mut keep = bed.artefacts();
        keep.extend([samples.clone(), bed.topo.tmpdir().join("recv.json")]);
        for f in &keep {
            if f.exists() {
                std::fs::copy(f, dir.join(f.file_name().unwrap_or_default()))?;
            }
        }
    }
    let server_owd_ms = args.server_rtt.as_secs_f64() * 500.0;
    Ok(row(
        setup,
        server_owd_ms,
        &recv,
        &send,
        &sat,
        &chunks,
        ctl.as_deref(),
    ))
}

/// Waits until something listens on TCP `port` in srv.
pub(crate) fn wait_listening(topo: &Topology, port: u16) -> anyhow::Result<()> {
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

/// `(stamp_unix_s, owd_ms)` per chunk from owd-bulk's `--samples` file.
fn read_samples(p: &Path) -> anyhow::Result<Vec<(f64, f64)>> {
    let text = std::fs::read_to_string(p)?;
    Ok(text
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (a, b) = l.split_once(',')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        })
        .collect())
}

fn f(v: &Value, path: &[&str]) -> f64 {
    path.iter()
        .fold(v, |v, k| &v[*k])
        .as_f64()
        .unwrap_or(f64::NAN)
}

/// Nearest-rank percentile of sorted values.
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[i.clamp(1, sorted.len()) - 1]
}

/// Per-chunk queueing delay: OWD minus the trace's one-way delay when the chunk left the
/// link (its arrival minus that delay), in replay time `t0 = replay start`.
pub(crate) fn queueing(chunks: &[(f64, f64)], base: &BaseDelay, replay_start: f64) -> Vec<f64> {
    let mut q: Vec<f64> = chunks
        .iter()
        .map(|&(stamp, owd)| {
            let arrival = stamp + owd / 1000.0 - replay_start;
            let b = base.at(arrival - base.at(arrival) / 1000.0);
            owd - b
        })
        .collect();
    q.sort_by(f64::total_cmp);
    q
}

/// Mean of the POP controller's `proxy_queue_ms` over the ticks within `[t0, t1]` (UNIX s).
pub(crate) fn proxy_queue(log: &str, t0: f64, t1: f64) -> Option<f64> {
    let v: Vec<f64> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| {
            let t = r["t_s"].as_f64().unwrap_or(0.0);
            t >= t0 && t <= t1 && r["r_down_mbps"].as_f64().unwrap_or(0.0) > 0.0
        })
        .filter_map(|r| r["proxy_queue_ms"].as_f64())
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Combines the receiver's result with satlink's downlink series over the same interval.
fn row(
    setup: Setup,
    server_owd_ms: f64,
    recv: &Value,
    send: &Value,
    sat: &Value,
    chunks: &[(f64, f64)],
    ctl: Option<&str>,
) -> DemoRow {
    let replay_start = f(sat, &["replay_start_unix"]);
    let start = f(recv, &["start_unix_s"]);
    let t0 = start - replay_start;
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
    let mut q = queueing(chunks, &base, replay_start);
    // The terrestrial path's one-way delay is propagation too.
    for x in &mut q {
        *x -= server_owd_ms;
    }
    let goodput = f(recv, &["goodput_mbps"]);
    DemoRow {
        setup,
        goodput_mbps: goodput,
        capacity_mbps: capacity,
        utilisation: goodput / capacity,
        owd_p50_ms: f(recv, &["owd_ms", "p50"]),
        owd_p95_ms: f(recv, &["owd_ms", "p95"]),
        owd_p99_ms: f(recv, &["owd_ms", "p99"]),
        queueing_p50_ms: pct(&q, 50.0),
        queueing_p95_ms: pct(&q, 95.0),
        proxy_queue_ms: ctl.and_then(|l| proxy_queue(l, start, start + f(recv, &["duration_s"]))),
        sat_queue_ms: mean("qdelay_mean_ms"),
        bytes: recv["bytes"].as_u64().unwrap_or(0),
        sha256_match: recv["sha256"].is_string() && recv["sha256"] == send["sha256"],
        emulator: Some(emulator_counters(down)),
    }
}

/// satlink's counters of one direction, without its time series.
pub(crate) fn emulator_counters(dir: &Value) -> Value {
    let mut v = dir.clone();
    if let Some(o) = v.as_object_mut() {
        o.remove("series");
        o.remove("base_delay");
    }
    v
}

/// The trace's one-way propagation delay, from satlink's stats JSON.
pub(crate) struct BaseDelay {
    constant_ms: Option<f64>,
    slot_s: f64,
    slots_ms: Vec<f64>,
}

impl BaseDelay {
    pub(crate) fn from(v: &Value) -> BaseDelay {
        BaseDelay {
            constant_ms: v["constant_ms"].as_f64(),
            slot_s: v["slot_ms"].as_f64().unwrap_or(10.0) / 1000.0,
            slots_ms: v["slots_ms"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_f64).collect())
                .unwrap_or_default(),
        }
    }

    /// Delay (ms) at `t` seconds since the replay start (the trace wraps, as satlink's does).
    pub(crate) fn at(&self, t: f64) -> f64 {
        if let Some(c) = self.constant_ms {
            return c;
        }
        if self.slots_ms.is_empty() {
            return f64::NAN;
        }
        let i = (t / self.slot_s).max(0.0) as usize;
        self.slots_ms[i % self.slots_ms.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_delay_constant_and_slotted_with_wrap() {
        let c = BaseDelay::from(&serde_json::json!({"constant_ms": 250.0}));
        assert_eq!(c.at(3.0), 250.0);
        let s = BaseDelay::from(&serde_json::json!({"slot_ms": 10, "slots_ms": [5, 7, 9]}));
        assert_eq!(s.at(0.0), 5.0);
        assert_eq!(s.at(0.015), 7.0);
        assert_eq!(s.at(0.029), 9.0);
        assert_eq!(s.at(0.031), 5.0, "wraps like the replay");
        assert_eq!(s.at(-1.0), 5.0);
        let none = BaseDelay::from(&serde_json::json!({}));
        assert!(none.at(1.0).is_nan());
    }

    #[test]
    fn queueing_subtracts_the_delay_of_the_slot_the_chunk_left_in() {
        let base = BaseDelay::from(&serde_json::json!({"slot_ms": 10, "slots_ms": [10, 20]}));
        // Replay started at 1000 s; a chunk stamped at 1000.000 s arriving 12 ms later left
        // the link at ~2 ms (slot 0: 10 ms) -> 2 ms of queueing.
        let q = queueing(&[(1000.0, 12.0), (1000.005, 35.0)], &base, 1000.0);
        assert_eq!(q.len(), 2);
        assert!((q[0] - 2.0).abs() < 1e-9, "{q:?}");
        // Arrives at 40 ms, left at 20 ms (slot 0 delay at 40 ms is 10 -> 30 ms: slot 1, 20
        // ms) -> 15 ms.
        assert!((q[1] - 15.0).abs() < 1e-9, "{q:?}");
    }

    #[test]
    fn percentiles_nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(pct(&v, 50.0), 50.0);
        assert_eq!(pct(&v, 95.0), 95.0);
        assert_eq!(pct(&v, 100.0), 100.0);
        assert_eq!(pct(&[3.0], 95.0), 3.0);
        assert!(pct(&[], 50.0).is_nan());
    }

    #[test]
    fn proxy_queue_averages_the_ticks_in_the_window() {
        let log = [
            r#"{"t_s": 9.0, "proxy_queue_ms": 100.0, "r_down_mbps": 50.0}"#,
            r#"{"t_s": 10.0, "proxy_queue_ms": 2.0, "r_down_mbps": 50.0}"#,
            r#"{"t_s": 11.0, "proxy_queue_ms": 4.0, "r_down_mbps": 50.0}"#,
            r#"{"t_s": 11.5, "proxy_queue_ms": 0.0, "r_down_mbps": 0.0}"#,
            "garbage",
        ]
        .join("\n");
        assert_eq!(proxy_queue(&log, 10.0, 12.0), Some(3.0));
        assert_eq!(proxy_queue(&log, 20.0, 30.0), None);
    }
}
