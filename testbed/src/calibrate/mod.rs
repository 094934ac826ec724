//! `satlink calibrate`: measures satlink through real namespaces against its profile and
//! prints the calibration table (capacity, delay, loss, queue, TCP sanity).
//!
//! Each check sends its own traffic between the POP and box ends of a fresh bed
//! ([`bed::Bed`]) and compares what arrived with what the pure model promises
//! ([`reference`]). Rows carry a verdict; the command exits 0 only if none failed.

pub mod analysis;
pub mod bed;
pub mod capacity;
pub mod delay;
pub mod loss;
pub mod probe;
pub mod quiet;
pub mod reference;
pub mod steal;
pub mod table;
pub mod tcp;
pub mod udp;

use std::path::Path;

use crate::link::{Profile, ProfileError};
use crate::topo::TopoError;

use steal::{host_steal, Steal, StealWatch};

pub use table::Row;

/// Errors of a calibration run (a failed check is a row, not an error).
#[derive(Debug, thiserror::Error)]
pub enum CalError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Topo(#[from] TopoError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error("{0}")]
    Measure(String),
}

/// Which checks and how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Shorter scenarios (CI).
    pub quick: bool,
    pub seed: u64,
}

/// The groups of checks (all by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    Delay,
    Capacity,
    Loss,
    Tcp,
}

impl Check {
    pub const ALL: [Check; 4] = [Check::Delay, Check::Capacity, Check::Loss, Check::Tcp];
}

/// What every check needs.
pub struct Ctx<'a> {
    pub profile: &'a Profile,
    pub quick: bool,
    pub seed: u64,
}

impl Ctx<'_> {
    pub fn row(
        &self,
        check: &str,
        dir: &str,
        measured: String,
        expected: String,
        tolerance: String,
        pass: Option<bool>,
    ) -> Row {
        Row {
            profile: self.profile.name.clone(),
            check: check.to_string(),
            dir: dir.to_string(),
            measured,
            expected,
            tolerance,
            pass,
        }
    }
}

/// Calibrates `satlink` (the binary) on the profile at `profile_path`: builds a bed, runs the
/// requested checks in turn on it (each waits for the link to drain), returns the rows.
pub fn calibrate(
    satlink: &Path,
    profile_path: &Path,
    opts: Options,
    checks: &[Check],
) -> Result<Vec<Row>, CalError> {
    let profile = Profile::load(profile_path)?;
    let ctx = Ctx {
        profile: &profile,
        quick: opts.quick,
        seed: opts.seed,
    };
    let steal0 = host_steal();
    let t0 = std::time::Instant::now();
    let mut bed = bed::Bed::start(satlink, profile_path, opts.seed, "now")?;
    let mut rows = Vec::new();
    for c in checks {
        let r = match c {
            Check::Delay => {
                let mut r = delay::probe_rows(&ctx, &bed)?;
                r.extend(delay::ping_rows(&ctx, &bed)?);
                r
            }
            Check::Capacity => capacity::flood_rows(&ctx, &mut bed)?,
            Check::Loss => loss::loss_rows(&ctx, &bed)?,
            Check::Tcp => tcp::tcp_rows(&ctx, &bed)?,
        };
        for row in &r {
            tracing::info!(
                "{} {} {}: {} [{}]",
                row.profile,
                row.check,
                row.dir,
                row.measured,
                row.verdict()
            );
        }
        rows.extend(r);
    }
    let final_stats = bed.stop()?;
    let steal = match (steal0, host_steal()) {
        (Some(a), Some(b)) => format!(
            "; host steal {} ms in {:.0} s",
            b.saturating_sub(a).as_millis(),
            t0.elapsed().as_secs_f64()
        ),
        _ => String::new(),
    };
    rows.push(ctx.row(
        "satlink late releases (> 1 ms)",
        "both",
        late_summary(&final_stats) + &steal,
        "0".into(),
        "reported".into(),
        None,
    ));
    Ok(rows)
}

/// Attempts of [`calibrate_calm`].
pub const CALM_ATTEMPTS: usize = 3;
/// Failed runs on a calm host that make [`calibrate_calm`]'s verdict final.
pub const CALM_FAILURES: usize = 2;

/// [`calibrate`], judged by `ok`, each run once the CPUs are quiet ([`quiet::wait_quiet`]).
/// A run that fails is run again (at most [`CALM_ATTEMPTS`] runs) unless it is the second
/// ([`CALM_FAILURES`]) to fail on a calm host: one whose hypervisor withheld the CPU less than
/// [`steal::STEAL_LIMIT`] of the time, with no stall of [`steal::STALL_LIMIT`]. Each run is
/// judged whole against the same bounds. Why a calm failure gets a second run: CI has failed
/// single runs at host steal of 0.3-0.6 % (probe p99 1.18 ms on `geo`, 1.58 ms on
/// `leo-10mbit`, against 0.16-0.45 ms in the other runs), where an error in the model, which is
/// deterministic for a seed, fails every run. Returns the last run's rows and the steal of
/// every run.
pub fn calibrate_calm(
    satlink: &Path,
    profile_path: &Path,
    opts: Options,
    checks: &[Check],
    ok: impl Fn(&[Row]) -> bool,
) -> Result<(Vec<Row>, Vec<Steal>), CalError> {
    let mut steals = Vec::new();
    let mut calm_failures = 0;
    loop {
        quiet::wait_quiet();
        let watch = StealWatch::start();
        let rows = calibrate(satlink, profile_path, opts, checks)?;
        let steal = watch.finish();
        steals.push(steal);
        if ok(&rows) {
            return Ok((rows, steals));
        }
        calm_failures += usize::from(steal.calm());
        if calm_failures >= CALM_FAILURES || steals.len() >= CALM_ATTEMPTS {
            return Ok((rows, steals));
        }
    }
}

/// Whether the last run of [`calibrate_calm`] had a calm host (its timing checks mean
/// something). When no run was calm, a test reports the calibration as inconclusive instead of
/// judging the emulator by the hypervisor.
pub fn last_was_calm(steals: &[Steal]) -> bool {
    steals.last().is_none_or(Steal::calm)
}

fn late_summary(stats: &serde_json::Value) -> String {
    let d = &stats["directions"];
    let g = |dir: &str, k: &str| d[dir]["io"][k].as_f64().unwrap_or(f64::NAN);
    format!(
        "down {} (max {:.3} ms), up {} (max {:.3} ms)",
        g("down", "late_releases"),
        g("down", "max_late_ms"),
        g("up", "late_releases"),
        g("up", "max_late_ms")
    )
}
