//! The suite's `fair` application (shell): two competing owd-bulk downloads srv → pc through
//! the setup, the second starting 10 s after the first and ending with it; each one's goodput
//! over the interval where both run (`suite::fair`), and Jain's index of the two.

use std::time::Duration;

use crate::suite::cell::{CellResult, CellSpec};
use crate::suite::fair::{overlap, window_mbps, Series};
use crate::suite::quality::jain;

use super::bed::{Bed, BedSpec};
use super::demo::emulator_counters;
use super::owd::{Ends, Transfer, TransferSpec, Way};

/// The second download starts this long after the first.
pub const STAGGER: Duration = Duration::from_secs(10);
/// The shortest first download that leaves the two flows 10 s together.
pub const MIN_DURATION_S: f64 = 20.0;

/// Runs the cell; fills `fair_mbps` (in start order), `jain`, `bytes` (both flows),
/// `sha256_equal` (both) and satlink's counters.
pub fn cell(bed: &BedSpec, spec: &CellSpec, c: &mut CellResult) -> anyhow::Result<()> {
    anyhow::ensure!(
        spec.duration_s >= MIN_DURATION_S,
        "fair needs --duration of at least {MIN_DURATION_S} s (the second download starts \
         after {} s), got {} s",
        STAGGER.as_secs(),
        spec.duration_s
    );
    let mut bed = Bed::up(bed)?;
    let length = Duration::from_secs_f64(spec.duration_s);
    let start = |port, duration| {
        Transfer::start(
            &bed.topo,
            bed.srv_addr(),
            &TransferSpec {
                way: Way::Down,
                port,
                duration,
                cc: &spec.cc,
                samples: None,
            },
        )
    };
    let first = start(5601, length)?;
    std::thread::sleep(STAGGER);
    let second = start(5602, length - STAGGER)?;
    let (a, b) = (first.finish()?, second.finish()?);
    bed.stop();
    let flows = [&a, &b];
    c.bytes = flows.iter().map(|e| e.recv["bytes"].as_u64()).sum();
    c.sha256_equal = Some(flows.iter().all(|e| e.sha256_equal()));
    c.emulator = Some(emulator_counters(
        &bed.satlink_stats()?["directions"]["down"],
    ));
    anyhow::ensure!(c.sha256_equal == Some(true), "a download's sha256 differs");
    let shares = shares(&flows)?;
    c.jain = jain(&shares);
    c.fair_mbps = Some(shares);
    Ok(())
}

/// Each flow's goodput over the interval both ran.
fn shares(flows: &[&Ends]) -> anyhow::Result<Vec<f64>> {
    let series = flows
        .iter()
        .map(|e| {
            Series::of(&e.recv_report()?)
                .ok_or_else(|| anyhow::anyhow!("owd-bulk receiver gave no start time"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (t0, t1) =
        overlap(&series).ok_or_else(|| anyhow::anyhow!("the downloads never ran together"))?;
    series
        .iter()
        .map(|s| window_mbps(s, t0, t1).ok_or_else(|| anyhow::anyhow!("empty window")))
        .collect()
}
