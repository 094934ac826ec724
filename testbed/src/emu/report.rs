//! The stats JSON of `satlink run`: per-direction counters, occupancy series, the capacity the
//! profile offered and its base delay over the run, the replay start and reconfigurations.

use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::link::{DelaySpec, Direction, LinkModel, Profile, DELAY_SLOT};

use super::stats::{DirSnapshot, LATENESS_BUCKETS_US};
use super::EmuError;

/// How many upcoming reconfiguration instants the report lists beyond the elapsed time.
const UPCOMING: u32 = 8;

#[derive(Debug, Serialize)]
pub struct Report {
    pub profile: String,
    pub profile_path: String,
    pub seed: u64,
    /// `now` or `aligned` (replay start chosen so reconfigurations fall on :12/:27/:42/:57).
    pub start_mode: String,
    /// True while satlink runs (periodic writes); false in the file written on exit.
    pub running: bool,
    /// UNIX time (s) of virtual time 0 of both directions.
    pub replay_start_unix: f64,
    pub written_at_unix: f64,
    /// Virtual time covered by this report (s since the replay start).
    pub elapsed_s: f64,
    pub reconfig: Option<ReconfigReport>,
    pub directions: Directions,
}

#[derive(Debug, Serialize)]
pub struct Directions {
    pub down: DirReport,
    pub up: DirReport,
}

#[derive(Debug, Serialize)]
pub struct ReconfigReport {
    pub first_s: f64,
    pub period_s: f64,
    pub outage_s: f64,
    /// Instants found in the delay trace (s, within one trace period), if any.
    pub detected_s: Vec<f64>,
    /// Instants from the replay start to a few beyond the elapsed time.
    pub instants: Vec<Instant>,
}

#[derive(Debug, Serialize)]
pub struct Instant {
    /// Seconds since the replay start.
    pub t_s: f64,
    pub unix: f64,
}

#[derive(Debug, Serialize)]
pub struct DirReport {
    /// Ingress and egress interfaces.
    pub from: String,
    pub to: String,
    pub packets_in: u64,
    pub bytes_in: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_outage: u64,
    /// Held at the time of the report: in the bottleneck queue, and past it (propagating).
    pub queued_packets: u64,
    pub queued_bytes: u64,
    pub in_flight_packets: u64,
    pub max_queue_packets: u64,
    /// Mean capacity the profile offered over the run, and what was delivered (bytes as the
    /// model charges them: IP packets).
    pub mean_capacity_mbps: f64,
    pub delivered_mbps: f64,
    pub io: IoReport,
    pub series_interval_ms: u64,
    pub series: Vec<Point>,
    pub base_delay: BaseDelay,
}

#[derive(Debug, Serialize)]
pub struct IoReport {
    pub rx_frames: u64,
    pub rx_truncated: u64,
    pub dropped_pool: u64,
    pub tx_frames: u64,
    pub tx_errors: u64,
    pub pool_slots: u64,
    /// Releases later than due by > 1 ms.
    pub late_releases: u64,
    pub max_late_ms: f64,
    pub mean_late_us: f64,
    /// Release lateness histogram: `[upper bound µs (null = open), count]`.
    pub lateness_us: Vec<(Option<u64>, u64)>,
}

/// One occupancy sample with the profile's capacity and base delay for its bin.
#[derive(Debug, Serialize)]
pub struct Point {
    pub t_ms: u64,
    pub queue_pkts: u64,
    pub queue_bytes: u64,
    pub delivered_mbps: f64,
    pub capacity_mbps: f64,
    pub qdelay_mean_ms: f64,
    pub qdelay_max_ms: f64,
    pub base_delay_ms: f64,
}

/// The trace's one-way delay over the run (without queueing): constant, or per 10 ms slot.
#[derive(Debug, Serialize)]
pub struct BaseDelay {
    pub constant_ms: Option<f64>,
    pub slot_ms: u64,
    /// Delay of slot i = [i·slot, (i+1)·slot) since the replay start (trace profiles only).
    pub slots_ms: Vec<f64>,
}

/// What the report is about (fixed for a run).
pub struct RunInfo<'a> {
    pub profile: &'a Profile,
    pub seed: u64,
    pub start_mode: &'a str,
    pub replay_start_unix: Duration,
    pub left: &'a str,
    pub right: &'a str,
    pub sample_every: Duration,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

impl Report {
    pub fn build(
        info: &RunInfo,
        snaps: &[DirSnapshot; 2],
        running: bool,
        now_unix: Duration,
    ) -> Report {
        let elapsed = snaps[0].vtime.max(snaps[1].vtime);
        let reconfig = info.profile.reconfig().map(|s| {
            let end = elapsed + s.period * UPCOMING;
            ReconfigReport {
                first_s: s.first.as_secs_f64(),
                period_s: s.period.as_secs_f64(),
                outage_s: s.outage.as_secs_f64(),
                detected_s: info
                    .profile
                    .detected_instants()
                    .iter()
                    .map(Duration::as_secs_f64)
                    .collect(),
                instants: s
                    .instants()
                    .take_while(|t| *t < end)
                    .map(|t| Instant {
                        t_s: t.as_secs_f64(),
                        unix: (info.replay_start_unix + t).as_secs_f64(),
                    })
                    .collect(),
            }
        });
        let dir = |d: Direction, snap: &DirSnapshot, from: &str, to: &str| {
            dir_report(info, d, snap, from, to, elapsed)
        };
        Report {
            profile: info.profile.name.clone(),
            profile_path: info.profile.path.display().to_string(),
            seed: info.seed,
            start_mode: info.start_mode.to_string(),
            running,
            replay_start_unix: info.replay_start_unix.as_secs_f64(),
            written_at_unix: now_unix.as_secs_f64(),
            elapsed_s: elapsed.as_secs_f64(),
            reconfig,
            directions: Directions {
                down: dir(Direction::Down, &snaps[0], info.left, info.right),
                up: dir(Direction::Up, &snaps[1], info.right, info.left),
            },
        }
    }

    /// Writes the report atomically (temp file + rename): readers never see half a file.
    pub fn write(&self, path: &Path) -> Result<(), EmuError> {
        let io = |what: String| move |source| EmuError::Io { what, source };
        let text = serde_json::to_string_pretty(self)
            .map_err(|e| EmuError::Setup(format!("serialise stats: {e}")))?;
        let tmp = path.with_extension("json.tmp");
        std::fs::write(&tmp, text).map_err(io(format!("write {}", tmp.display())))?;
        std::fs::rename(&tmp, path).map_err(io(format!("rename to {}", path.display())))
    }
}

fn dir_report(
    info: &RunInfo,
    d: Direction,
    s: &DirSnapshot,
    from: &str,
    to: &str,
    elapsed: Duration,
) -> DirReport {
    let m: LinkModel<()> = info.profile.model(d, info.seed);
    let bin = info.sample_every;
    let series = s
        .series
        .iter()
        .map(|p| {
            let end = Duration::from_millis(p.t_ms);
            let start = end.saturating_sub(bin);
            Point {
                t_ms: p.t_ms,
                queue_pkts: p.queue_pkts,
                queue_bytes: p.queue_bytes,
                delivered_mbps: p.delivered_bytes as f64 * 8.0 / bin.as_secs_f64() / 1e6,
                capacity_mbps: m.capacity_bps_at(start, bin) / 1e6,
                qdelay_mean_ms: p.qdelay_mean_ms,
                qdelay_max_ms: p.qdelay_max_ms,
                base_delay_ms: ms(m.base_delay_at(start)),
            }
        })
        .collect();
    let base_delay = match &info.profile.direction(d).delay {
        DelaySpec::Constant { delay, .. } => BaseDelay {
            constant_ms: Some(ms(*delay)),
            slot_ms: DELAY_SLOT.as_millis() as u64,
            slots_ms: Vec::new(),
        },
        DelaySpec::Trace(_) => BaseDelay {
            constant_ms: None,
            slot_ms: DELAY_SLOT.as_millis() as u64,
            slots_ms: (0..=(elapsed.as_nanos() / DELAY_SLOT.as_nanos()) as u32)
                .map(|i| ms(m.base_delay_at(DELAY_SLOT * i)))
                .collect(),
        },
    };
    let secs = elapsed.as_secs_f64().max(1e-9);
    let io = &s.io;
    let mut lateness_us: Vec<(Option<u64>, u64)> = LATENESS_BUCKETS_US
        .iter()
        .zip(io.lateness_hist.iter())
        .map(|(b, n)| (Some(*b), *n))
        .collect();
    lateness_us.push((None, io.lateness_hist[LATENESS_BUCKETS_US.len()]));
    DirReport {
        from: from.to_string(),
        to: to.to_string(),
        packets_in: s.link.packets_in,
        bytes_in: s.link.bytes_in,
        delivered_packets: s.link.delivered_packets,
        delivered_bytes: s.link.delivered_bytes,
        dropped_queue: s.link.dropped_queue,
        dropped_loss: s.link.dropped_loss,
        dropped_outage: s.link.dropped_outage,
        queued_packets: s.queue_pkts,
        queued_bytes: s.queue_bytes,
        in_flight_packets: s.link.in_flight,
        max_queue_packets: s.link.max_queue_pkts,
        mean_capacity_mbps: m.capacity_bps_at(Duration::ZERO, elapsed) / 1e6,
        delivered_mbps: s.link.delivered_bytes as f64 * 8.0 / secs / 1e6,
        io: IoReport {
            rx_frames: io.rx_frames,
            rx_truncated: io.rx_truncated,
            dropped_pool: io.dropped_pool,
            tx_frames: io.tx_frames,
            tx_errors: io.tx_errors,
            pool_slots: s.pool_slots,
            late_releases: io.late_releases,
            max_late_ms: ms(io.max_late),
            mean_late_us: io.lateness_sum.as_secs_f64() * 1e6 / io.releases().max(1) as f64,
            lateness_us,
        },
        series_interval_ms: bin.as_millis() as u64,
        series,
        base_delay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emu::stats::Sample;
    use crate::link::{starlink_aligned_start, workspace_root};

    #[test]
    fn report_carries_schedule_capacity_and_trace_delay() {
        let p = Profile::load(&workspace_root().join("configs/profiles/leo-10mbit.toml")).unwrap();
        let sched = *p.reconfig().expect("leo-10mbit has a schedule");
        let start = starlink_aligned_start(Duration::from_secs(1_800_000_000), &sched);
        let info = RunInfo {
            profile: &p,
            seed: 1,
            start_mode: "aligned",
            replay_start_unix: start,
            left: "pop0",
            right: "box0",
            sample_every: Duration::from_millis(100),
        };
        let mut snap = DirSnapshot {
            vtime: Duration::from_secs(20),
            ..DirSnapshot::default()
        };
        snap.link.packets_in = 5;
        snap.series.push(Sample {
            t_ms: 100,
            delivered_bytes: 12_500,
            ..Sample::default()
        });
        let r = Report::build(&info, &[snap.clone(), snap], false, start);
        let rc = r.reconfig.as_ref().unwrap();
        assert!(rc.instants.len() >= 8);
        for i in &rc.instants {
            let sec = i.unix.rem_euclid(60.0);
            assert!(
                [12.0, 27.0, 42.0, 57.0]
                    .iter()
                    .any(|s| (sec - s).abs() < 1e-3),
                "{sec}"
            );
        }
        let d = &r.directions.down;
        assert_eq!((d.from.as_str(), d.to.as_str()), ("pop0", "box0"));
        assert_eq!(r.directions.up.from, "box0");
        assert!((d.mean_capacity_mbps - 10.0).abs() < 1e-9);
        assert!((d.series[0].delivered_mbps - 1.0).abs() < 1e-9);
        assert_eq!(d.base_delay.constant_ms, None);
        assert_eq!(d.base_delay.slots_ms.len(), 2001);
        assert_eq!(d.base_delay.slots_ms[0], d.series[0].base_delay_ms);
        assert_eq!(d.packets_in, 5);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(
            json["directions"]["down"]["io"]["lateness_us"][7][0],
            serde_json::Value::Null
        );
    }
}
