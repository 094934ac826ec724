//! satlink: the trace-driven satellite link emulator CLI (runs in the `sat` namespace).
//!
//! `satlink run` forwards frames between two interfaces through the link model in real time;
//! `satlink tc-commands` prints the netem/tbf equivalent of a constant profile; `satlink
//! calibrate` measures satlink itself through fresh namespaces and prints the calibration table.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

use starpep_testbed::calibrate::{self, table, Check, Options};
use starpep_testbed::emu::pump::PumpConfig;
use starpep_testbed::emu::session::{serve, SessionConfig, StartMode};
use starpep_testbed::link::Profile;
use starpep_testbed::topo::addr::{SAT_BOX_IF, SAT_POP_IF};

#[derive(Parser)]
#[command(
    name = "satlink",
    version,
    about = "Trace-driven satellite link emulator"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Clone, Copy, ValueEnum)]
enum Start {
    Now,
    Aligned,
}

#[derive(Clone, Copy, ValueEnum)]
enum CheckArg {
    Delay,
    Capacity,
    Loss,
    Tcp,
}

#[derive(Subcommand)]
enum Cmd {
    /// Emulate the link between two interfaces until SIGINT/SIGTERM (left → right = downlink).
    Run {
        /// Profile file or name (`geo` = configs/profiles/geo.toml).
        #[arg(long)]
        profile: String,
        /// Interface toward the POP (frames read here go down the link).
        #[arg(long)]
        left: String,
        /// Interface toward the box.
        #[arg(long)]
        right: String,
        /// Seed of the loss and jitter draws (default: the profile's, else 1).
        #[arg(long)]
        seed: Option<u64>,
        /// Write the stats JSON here on exit (and at start, and every --stats-interval).
        #[arg(long)]
        stats_json: Option<PathBuf>,
        /// Rewrite the stats JSON every this many seconds.
        #[arg(long)]
        stats_interval: Option<f64>,
        /// `aligned`: start the replay so the profile's reconfigurations fall on Starlink's
        /// :12/:27/:42/:57 seconds (waits ≤ 15 s; only for 15 s schedules). `now`: at once.
        #[arg(long, value_enum, default_value = "aligned")]
        start: Start,
        /// Sleep until this many µs before a release, then spin.
        #[arg(long, default_value_t = 30)]
        spin_us: u64,
        /// Queue occupancy sample period (ms).
        #[arg(long, default_value_t = 100)]
        sample_ms: u64,
        /// SCHED_FIFO priority of the direction threads; 0 = normal scheduling.
        #[arg(long, default_value_t = 10)]
        rt_priority: i32,
        /// Do not hold /dev/cpu_dma_latency at 0 (idle CPUs may then halt, and wake-ups in a
        /// VM come up to milliseconds late).
        #[arg(long)]
        no_pm_qos: bool,
    },
    /// Print the equivalent `tc qdisc` netem/tbf commands (constant profiles only).
    TcCommands {
        profile: String,
        /// Device whose egress carries the downlink (toward the box).
        #[arg(long, default_value = SAT_BOX_IF)]
        dev_down: String,
        /// Device whose egress carries the uplink (toward the POP).
        #[arg(long, default_value = SAT_POP_IF)]
        dev_up: String,
    },
    /// Measure satlink through fresh namespaces and print the calibration table (root).
    Calibrate {
        /// Profiles (names or files).
        #[arg(required = true)]
        profiles: Vec<String>,
        /// Short scenarios (CI).
        #[arg(long)]
        quick: bool,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Only these checks (default: all that apply to the profile).
        #[arg(long, value_enum, value_delimiter = ',')]
        only: Vec<CheckArg>,
        /// Also write the rows as JSON here.
        #[arg(long)]
        json: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    match real_main() {
        Ok(code) => code,
        Err(e) => {
            eprintln!("satlink: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn real_main() -> anyhow::Result<ExitCode> {
    match Cli::parse().cmd {
        Cmd::Run {
            profile,
            left,
            right,
            seed,
            stats_json,
            stats_interval,
            start,
            spin_us,
            sample_ms,
            rt_priority,
            no_pm_qos,
        } => {
            let stop = Arc::new(AtomicBool::new(false));
            for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
                signal_hook::flag::register(sig, stop.clone()).context("install signal handler")?;
            }
            let cfg = SessionConfig {
                profile: Profile::find(&profile)?,
                left,
                right,
                seed,
                stats_json,
                stats_interval: stats_interval
                    .filter(|s| *s > 0.0)
                    .map(Duration::from_secs_f64),
                start: match start {
                    Start::Now => StartMode::Now,
                    Start::Aligned => StartMode::Aligned,
                },
                pump: PumpConfig {
                    spin: Duration::from_micros(spin_us),
                    sample_every: Duration::from_millis(sample_ms.max(1)),
                    rt_priority: (rt_priority > 0).then_some(rt_priority),
                    ..PumpConfig::default()
                },
                pm_qos: !no_pm_qos,
            };
            serve(&cfg, &stop)?;
            Ok(ExitCode::SUCCESS)
        }
        Cmd::TcCommands {
            profile,
            dev_down,
            dev_up,
        } => {
            let p = Profile::load(&Profile::find(&profile)?)?;
            for line in p.tc_commands(&dev_down, &dev_up)? {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        Cmd::Calibrate {
            profiles,
            quick,
            seed,
            only,
            json,
        } => {
            let me = std::env::current_exe().context("locate the satlink binary")?;
            let checks: Vec<Check> = if only.is_empty() {
                Check::ALL.to_vec()
            } else {
                only.iter()
                    .map(|c| match c {
                        CheckArg::Delay => Check::Delay,
                        CheckArg::Capacity => Check::Capacity,
                        CheckArg::Loss => Check::Loss,
                        CheckArg::Tcp => Check::Tcp,
                    })
                    .collect()
            };
            let mut rows = Vec::new();
            for name in &profiles {
                let path = Profile::find(name)?;
                let r = calibrate::calibrate(&me, &path, Options { quick, seed }, &checks)
                    .with_context(|| format!("calibrate {name}"))?;
                rows.extend(r);
            }
            println!("{}", table::render(&rows));
            if let Some(p) = json {
                std::fs::write(&p, serde_json::to_string_pretty(&rows)?)
                    .with_context(|| format!("write {}", p.display()))?;
            }
            Ok(if table::all_pass(&rows) {
                ExitCode::SUCCESS
            } else {
                eprintln!("satlink calibrate: some checks are out of tolerance");
                ExitCode::from(1)
            })
        }
    }
}
