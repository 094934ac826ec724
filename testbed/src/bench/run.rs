//! `starpep-bench run` and `starpep-bench report`: the suite's cells (`crate::suite`) run
//! through the bench's topologies. A single cell prints its JSON object as the last stdout line;
//! a matrix appends one JSON line per cell to `OUT/cells.jsonl` as each finishes (a failed cell
//! is a line that says why), then writes `OUT/cells.csv` and `OUT/report.md`, which `report`
//! regenerates from the JSON lines alone.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::link::Profile;
use crate::suite::cell::{CellResult, CellSpec, Pct2, Pct3};
use crate::suite::{matrix, report};
use crate::topo;

use super::bed::BedSpec;
use super::demo::{self, DemoArgs};
use super::plots;
use super::progress::Progress;
use super::setup::{pep_set, Setup};
use super::{bulk, fair, split, voip, web};

#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// A matrix (e.g. configs/bench/report.toml): every cell, results under --out.
    #[arg(long, value_name = "FILE", conflicts_with = "setup")]
    pub matrix: Option<PathBuf>,
    /// Where a matrix run writes cells.jsonl, cells.csv and report.md.
    #[arg(long, value_name = "DIR", default_value = "results/run")]
    pub out: PathBuf,
    /// A short matrix (configs/bench/check.toml, 10 s cells), as CI runs it.
    #[arg(long, conflicts_with_all = ["matrix", "setup"])]
    pub check: bool,
    /// A single cell: its setup (plain, pep, wg, wg+split-cubic, wg+split, wg+starpep,
    /// wg+starpep-clamp, …).
    #[arg(long)]
    pub setup: Option<String>,
    /// The cell's link: a profile name (configs/profiles) or path.
    #[arg(long, default_value = "leo-starlink")]
    pub link: String,
    /// The cell's application: bulk, file, web, voip or fair.
    #[arg(long, default_value = "bulk")]
    pub app: String,
    /// The end hosts' congestion control: cubic or bbr.
    #[arg(long, default_value = "cubic")]
    pub cc: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Length of a bulk download, seconds.
    #[arg(long, default_value_t = 30.0)]
    pub duration: f64,
    /// A constant RTT between POP and server, e.g. `20ms`.
    #[arg(long, default_value = "0ms", value_parser = crate::link::units::parse_duration)]
    pub server_rtt: Duration,
    /// Replace the link's capacity trace (both directions; mahimahi format).
    #[arg(long, value_name = "FILE")]
    pub trace_bw: Option<PathBuf>,
    /// Replace the link's delay trace (both directions); the reconfiguration schedule is then
    /// detected in it.
    #[arg(long, value_name = "FILE")]
    pub trace_delay: Option<PathBuf>,
    /// `[PEP]` keys to override in both PEP configs (`KEY=VALUE`, repeatable).
    #[arg(long = "pep")]
    pub pep_set: Vec<String>,
    /// web: what loads the page, chromium or curl (default: curl under --check, else chromium).
    #[arg(long, value_enum)]
    pub web_loader: Option<web::Loader>,
    /// Single cell: print the cell as one JSON object on the last stdout line.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// A matrix run's directory (its cells.jsonl).
    pub dir: PathBuf,
}

fn unix_now() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// The tree that runs the cells (`git describe --always --dirty`), or the crate version.
fn commit() -> String {
    std::process::Command::new("git")
        .args(["describe", "--always", "--dirty"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| format!("v{}", env!("CARGO_PKG_VERSION")))
}

/// Runs one cell; any failure becomes a failed cell. With `run_dir`, a bulk cell keeps its
/// series under `run_dir/series/<cell id>/`.
pub fn run_cell(
    spec: &CellSpec,
    args: &RunArgs,
    commit: &str,
    run_dir: Option<&Path>,
) -> CellResult {
    let started = unix_now();
    match measure(spec, args, commit, started, run_dir) {
        Ok(c) => c,
        Err(e) => CellResult::failed(spec, commit, started, format!("{e:#}")),
    }
}

fn measure(
    spec: &CellSpec,
    args: &RunArgs,
    commit: &str,
    started: f64,
    run_dir: Option<&Path>,
) -> anyhow::Result<CellResult> {
    spec.validate().map_err(|e| anyhow::anyhow!(e))?;
    let setup = Setup::from_suite(&spec.setup).ok_or_else(|| {
        anyhow::anyhow!("setup {} is not in this build of the suite yet", spec.setup)
    })?;
    let found = Profile::find(&spec.link)?;
    let mut c = CellResult::empty(spec, commit, started);
    let d = DemoArgs {
        profile: spec.link.clone(),
        trace_bw: args.trace_bw.clone(),
        trace_delay: args.trace_delay.clone(),
        seconds: spec.duration_s.ceil() as u64,
        server_rtt: Duration::from_secs_f64(spec.server_rtt_ms / 1000.0),
        setups: Vec::new(),
        pep_set: args.pep_set.clone(),
        json: None,
        keep: run_dir.map(|d| d.join("series").join(spec.id())),
        cc: spec.cc.clone(),
        seed: Some(spec.seed),
    };
    let scratch = scratch_dir();
    std::fs::create_dir_all(&scratch)?;
    let profile = demo::retraced(&found, &d, &scratch)?;
    c.configs = pep_set(setup, &Profile::load(&profile)?, &args.pep_set);
    let set = c.configs.clone();
    let bed = BedSpec {
        setup,
        profile: &profile,
        pep_set: &set,
        seed: Some(spec.seed),
        server_rtt: d.server_rtt,
        aligned: true,
        control_log: true,
    };
    match spec.app.as_str() {
        "bulk" => bulk(&d, &bed, &mut c)?,
        "file" => file(&bed, spec, &mut c)?,
        "voip" => voip::cell(&bed, spec, &mut c)?,
        "fair" => fair::cell(&bed, spec, &mut c)?,
        "web" => web::cell(
            &bed,
            &spec.cc,
            web::Loader::for_run(args.web_loader, args.check),
            &mut c,
        )?,
        other => anyhow::bail!("app {other} is not in this build of the suite yet"),
    }
    Ok(c)
}

/// Where a run writes the cells' retraced profiles (removed when the run ends).
fn scratch_dir() -> PathBuf {
    std::env::temp_dir().join(format!("starpep-run-{}", std::process::id()))
}

/// bulk: a timed download srv → pc with owd-bulk (goodput, one-way delay per chunk), then
/// an iperf3 download and an upload (`bench::bulk`).
fn bulk(d: &DemoArgs, bed: &BedSpec, c: &mut CellResult) -> anyhow::Result<()> {
    let r = demo::one(d, bed.profile, bed.setup)?;
    // demo::one keeps the files under KEEP/<its setup name>/.
    c.series_dir = d
        .keep
        .as_ref()
        .map(|_| format!("series/{}/{}", c.spec.id(), bed.setup.name()));
    c.goodput_mbps = Some(r.goodput_mbps);
    c.capacity_mbps = Some(r.capacity_mbps);
    c.utilisation = Some(r.utilisation);
    // A figure the run could not compute is NaN, which JSON cannot hold: null instead.
    let finite = |v: &[f64]| v.iter().all(|x| x.is_finite());
    c.owd_ms = finite(&[r.owd_p50_ms, r.owd_p95_ms, r.owd_p99_ms]).then_some(Pct3 {
        p50: r.owd_p50_ms,
        p95: r.owd_p95_ms,
        p99: r.owd_p99_ms,
    });
    c.queueing_ms = finite(&[r.queueing_p50_ms, r.queueing_p95_ms]).then_some(Pct2 {
        p50: r.queueing_p50_ms,
        p95: r.queueing_p95_ms,
    });
    c.proxy_queue_ms = r.proxy_queue_ms.filter(|x| x.is_finite());
    c.sat_queue_ms = Some(r.sat_queue_ms).filter(|x| x.is_finite());
    c.bytes = Some(r.bytes);
    c.sha256_equal = Some(r.sha256_match);
    c.emulator = r.emulator;
    anyhow::ensure!(r.sha256_match, "payload sha256 differs");
    bulk::download_iperf_and_upload(bed, c)
}

/// file: the study's metric, the time to download 30 MB, and 1 MB (startup), one after the
/// other on fresh connections.
fn file(bed: &BedSpec, spec: &CellSpec, c: &mut CellResult) -> anyhow::Result<()> {
    let sizes = [1_000_000, 30_000_000];
    let t = split::download_times(bed, &sizes, &spec.cc)?;
    c.file_1mb_s = Some(t[0].as_secs_f64());
    c.file_30mb_s = Some(t[1].as_secs_f64());
    // download() checks every byte against its pattern (no sha256 for file cells).
    c.bytes = Some(sizes.iter().sum::<usize>() as u64);
    Ok(())
}

pub fn run(args: &RunArgs) -> anyhow::Result<()> {
    let commit = commit();
    if let Some(setup) = &args.setup {
        let spec = CellSpec {
            setup: setup.clone(),
            link: args.link.clone(),
            app: args.app.clone(),
            cc: args.cc.clone(),
            seed: args.seed,
            duration_s: args.duration,
            server_rtt_ms: args.server_rtt.as_secs_f64() * 1000.0,
        };
        spec.validate().map_err(|e| anyhow::anyhow!(e))?;
        let c = run_cell(&spec, args, &commit, None);
        if !args.json {
            eprintln!("{}: {:?}", spec.label(), c.status);
        }
        println!("{}", serde_json::to_string(&c)?);
        anyhow::ensure!(
            c.error.is_none(),
            "cell failed: {}",
            c.error.unwrap_or_default()
        );
        return Ok(());
    }
    let path = match (&args.matrix, args.check) {
        (Some(p), _) => p.clone(),
        (None, true) => PathBuf::from("configs/bench/check.toml"),
        (None, false) => anyhow::bail!("give --setup (one cell), --matrix FILE or --check"),
    };
    let text = std::fs::read_to_string(&path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let mut cells =
        matrix::parse(&path.display().to_string(), &text).map_err(anyhow::Error::msg)?;
    if args.check {
        for c in &mut cells {
            c.duration_s = c.duration_s.min(10.0);
        }
    }
    std::fs::create_dir_all(&args.out)?;
    let jsonl = args.out.join("cells.jsonl");
    // A finished (or interrupted) run's cells are not overwritten by accident.
    let had_cells = std::fs::metadata(&jsonl).is_ok_and(|m| m.len() > 0);
    anyhow::ensure!(
        args.check || !had_cells,
        "{} already holds a run's cells: give another --out, or remove it",
        jsonl.display()
    );
    let out = std::fs::File::create(&jsonl)
        .map_err(|e| anyhow::anyhow!("creating {}: {e}", jsonl.display()))?;
    let cmd = format!(
        "`starpep-bench run --matrix {} --out {}`{}",
        path.display(),
        args.out.display(),
        if args.check {
            " (--check: 10 s cells)"
        } else {
            ""
        }
    );
    let journal = Arc::new(Mutex::new(Journal {
        out,
        current: None,
        commit: commit.clone(),
    }));
    {
        // Ctrl-C: once the namespaces and their processes are gone, the cell that was running
        // becomes a failed line and the report covers what ran.
        let (journal, dir, cmd) = (journal.clone(), args.out.clone(), cmd.clone());
        topo::on_interrupt(move || {
            let recorded = lock(&journal).interrupt();
            if let Err(e) = recorded.and_then(|_| write_report(&dir, Some(&cmd))) {
                eprintln!("interrupted; writing the report failed: {e:#}");
            } else {
                eprintln!("interrupted: {}", dir.join("report.md").display());
            }
        });
    }
    let t0 = Instant::now();
    let mut failed = 0;
    let mut progress = Progress::new(cells.len());
    let apps: Vec<&str> = cells.iter().map(|c| c.app.as_str()).collect();
    for (i, spec) in cells.iter().enumerate() {
        progress.start(i, &spec.label(), &apps[i..]);
        lock(&journal).current = Some((spec.clone(), unix_now()));
        let t = Instant::now();
        let c = run_cell(spec, args, &commit, Some(&args.out));
        let mut j = lock(&journal);
        if topo::interrupted() {
            // The signal thread records this cell as interrupted and ends the process.
            drop(j);
            loop {
                std::thread::park();
            }
        }
        j.current = None;
        j.write(&c)?;
        drop(j);
        failed += usize::from(c.error.is_some());
        progress.end(&spec.app, t.elapsed().as_secs_f64(), c.error.as_deref());
    }
    progress.finish();
    let _ = std::fs::remove_dir_all(scratch_dir());
    write_report(&args.out, Some(&cmd))?;
    eprintln!(
        "{} cells ({failed} failed) in {:.1} min: {}",
        cells.len(),
        t0.elapsed().as_secs_f64() / 60.0,
        args.out.join("report.md").display()
    );
    // The report covers every cell, failed ones included; the exit status says whether any
    // failed (the check is a test: every one of its cells must work).
    anyhow::ensure!(
        failed == 0,
        "{failed} of {} cells failed (listed in {})",
        cells.len(),
        args.out.join("report.md").display()
    );
    Ok(())
}

/// cells.jsonl while a matrix runs, shared by the loop and the Ctrl-C hook.
struct Journal {
    out: std::fs::File,
    /// The cell being run and when it started.
    current: Option<(CellSpec, f64)>,
    commit: String,
}

impl Journal {
    fn write(&mut self, c: &CellResult) -> anyhow::Result<()> {
        writeln!(self.out, "{}", serde_json::to_string(c)?)?;
        self.out.flush()?;
        Ok(())
    }

    /// The running cell, failed as "interrupted".
    fn interrupt(&mut self) -> anyhow::Result<()> {
        match self.current.take() {
            Some((spec, started)) => {
                let c = CellResult::failed(&spec, &self.commit, started, "interrupted".into());
                self.write(&c)
            }
            None => Ok(()),
        }
    }
}

fn lock(j: &Mutex<Journal>) -> std::sync::MutexGuard<'_, Journal> {
    j.lock().unwrap_or_else(|e| e.into_inner())
}

/// cells.csv, the plots and report.md from cells.jsonl; `cmd` (the run's command) is kept in
/// `command.txt` for `report` to reuse.
fn write_report(dir: &Path, cmd: Option<&str>) -> anyhow::Result<()> {
    let saved = dir.join("command.txt");
    let cmd = match cmd {
        Some(c) => {
            std::fs::write(&saved, c)?;
            c.to_string()
        }
        None => std::fs::read_to_string(&saved).unwrap_or_else(|_| "`starpep-bench run`".into()),
    };
    let jsonl = dir.join("cells.jsonl");
    let text = std::fs::read_to_string(&jsonl)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", jsonl.display()))?;
    let cells =
        report::parse_lines(&text).map_err(|e| anyhow::anyhow!("{}: {e}", jsonl.display()))?;
    let commits: Vec<&str> = {
        let mut v: Vec<&str> = cells.iter().map(|c| c.commit.as_str()).collect();
        v.sort();
        v.dedup();
        v
    };
    let header = format!(
        "Generated by {cmd} at commit {}; regenerate the page with `starpep-bench report {}`.",
        commits.join(", "),
        dir.display()
    );
    std::fs::write(dir.join("cells.csv"), report::csv(&cells))?;
    // The tables do not need the plots: a plot that cannot be drawn is a warning.
    let plots = plots::draw_all(dir, &cells).unwrap_or_else(|e| {
        eprintln!("plots not drawn: {e:#}");
        Vec::new()
    });
    std::fs::write(
        dir.join("report.md"),
        report::markdown(&cells, &header, &plots),
    )?;
    Ok(())
}

pub fn report_cmd(args: &ReportArgs) -> anyhow::Result<()> {
    write_report(&args.dir, None)?;
    println!("{}", args.dir.join("report.md").display());
    Ok(())
}
