//! One `satlink run`: load the profile, choose the replay start, run both directions until
//! asked to stop, write the stats JSON periodically and on exit.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::link::{starlink_aligned_start, Direction, Profile, STARLINK_PERIOD};

use super::pump::PumpConfig;
use super::report::{Report, RunInfo};
use super::run::{self, DOWN, UP};
use super::sys;
use super::EmuError;

/// When the replay (virtual time 0) starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StartMode {
    /// At once.
    Now,
    /// So the profile's reconfiguration instants fall on Starlink's :12/:27/:42/:57 seconds
    /// (waits at most 15 s); the same as `Now` for profiles without a 15 s schedule.
    Aligned,
}

#[derive(Debug, Clone)]
pub struct SessionConfig {
    pub profile: PathBuf,
    pub left: String,
    pub right: String,
    /// None: the profile's seed, else 1.
    pub seed: Option<u64>,
    pub stats_json: Option<PathBuf>,
    pub stats_interval: Option<Duration>,
    pub start: StartMode,
    pub pump: PumpConfig,
    /// Hold PM QoS at 0 µs wake-up latency while running (see [`sys::hold_zero_wake_latency`]).
    pub pm_qos: bool,
}

/// Runs until `stop` is set (SIGINT/SIGTERM in the CLI) or a direction fails; returns the
/// final report (also written to `stats_json`).
pub fn serve(cfg: &SessionConfig, stop: &AtomicBool) -> Result<Report, EmuError> {
    let profile = Profile::load(&cfg.profile).map_err(|e| EmuError::Setup(e.to_string()))?;
    let seed = cfg.seed.or(profile.seed).unwrap_or(1);
    let now = sys::realtime_now();
    let schedule = profile.reconfig().filter(|s| s.period == STARLINK_PERIOD);
    let (start, mode) = match (cfg.start, schedule) {
        (StartMode::Aligned, Some(s)) => (starlink_aligned_start(now, s), "aligned"),
        _ => (now, "now"),
    };
    let _qos = cfg.pm_qos.then(|| match sys::hold_zero_wake_latency() {
        Ok(f) => Some(f),
        Err(e) => {
            tracing::warn!("PM QoS 0 µs wake-up latency unavailable (releases may be late): {e}");
            None
        }
    });
    if let Err(e) = sys::lock_memory() {
        tracing::warn!("mlockall failed (page faults may delay releases): {e}");
    }
    let down = profile.model(Direction::Down, seed);
    let up = profile.model(Direction::Up, seed);
    let running = run::start(&cfg.left, &cfg.right, start, cfg.pump, down, up)?;
    tracing::info!(
        profile = %profile.name,
        seed,
        "{} -> {} is the downlink; replay starts at UNIX {:.6} ({mode}, in {:.3} s)",
        cfg.left,
        cfg.right,
        start.as_secs_f64(),
        start.saturating_sub(now).as_secs_f64()
    );
    if let Some(s) = profile.reconfig() {
        let next: Vec<String> = s
            .instants()
            .take(4)
            .map(|t| {
                format!(
                    "+{:.3} s = UNIX {:.3}",
                    t.as_secs_f64(),
                    (start + t).as_secs_f64()
                )
            })
            .collect();
        tracing::info!(
            "reconfigurations every {:?} (outage {:?}): {}, ...",
            s.period,
            s.outage,
            next.join(", ")
        );
    }
    let info = RunInfo {
        profile: &profile,
        seed,
        start_mode: mode,
        replay_start_unix: start,
        left: &cfg.left,
        right: &cfg.right,
        sample_every: cfg.pump.sample_every,
    };
    let write = |snaps: &[_; 2], live: bool| -> Result<Report, EmuError> {
        let r = Report::build(&info, snaps, live, sys::realtime_now());
        if let Some(p) = &cfg.stats_json {
            r.write(p)?;
        }
        Ok(r)
    };
    // A first file at once: scripts learn the replay start before any traffic.
    write(&[running.snapshot(DOWN), running.snapshot(UP)], true)?;
    let mut last = sys::mono_now();
    while !stop.load(Ordering::Relaxed) && !running.failed() {
        std::thread::sleep(Duration::from_millis(20));
        if let Some(iv) = cfg.stats_interval {
            if sys::mono_now() >= last + iv {
                last = sys::mono_now();
                write(&[running.snapshot(DOWN), running.snapshot(UP)], true)?;
            }
        }
    }
    let (snaps, err) = running.stop();
    let r = write(&snaps, false)?;
    if let Some(e) = err {
        return Err(e);
    }
    for (name, d) in [("down", &r.directions.down), ("up", &r.directions.up)] {
        tracing::info!(
            "{name}: in {} delivered {} dropped queue {} loss {} outage {}, late releases {} (max {:.3} ms)",
            d.packets_in,
            d.delivered_packets,
            d.dropped_queue,
            d.dropped_loss,
            d.dropped_outage,
            d.io.late_releases,
            d.io.max_late_ms
        );
    }
    Ok(r)
}
