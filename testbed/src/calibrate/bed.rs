//! A calibration bed: the `pc — box — sat — pop — srv` namespaces with satlink running in `sat`,
//! static neighbours across the link (no ARP during measurements) and satlink's stats JSON.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::CalError;
use crate::emu::sys;
use crate::topo::addr::{BOX_WAN, POP_WAN, WAN_IF};
use crate::topo::{Node, Proc, TopoSpec, Topology};

/// Which way traffic crosses the emulated link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dir {
    /// POP → box (satlink left → right).
    Down,
    /// Box → POP.
    Up,
}

impl Dir {
    pub fn name(self) -> &'static str {
        match self {
            Dir::Down => "down",
            Dir::Up => "up",
        }
    }

    /// (sending node, its address, receiving node, its address).
    pub fn ends(self) -> (Node, IpAddr, Node, IpAddr) {
        match self {
            Dir::Down => (Node::Pop, POP_WAN.into(), Node::Box, BOX_WAN.into()),
            Dir::Up => (Node::Box, BOX_WAN.into(), Node::Pop, POP_WAN.into()),
        }
    }
}

/// A running bed. Dropping it stops satlink and removes the namespaces.
pub struct Bed {
    pub topo: Topology,
    satlink: Option<Proc>,
    stats_path: PathBuf,
    /// UNIX time of the replay start (virtual time 0 of both directions).
    pub replay_start: Duration,
}

impl Bed {
    /// Builds the namespaces and starts `satlink run` on `profile` (`start`: now | aligned).
    pub fn start(satlink: &Path, profile: &Path, seed: u64, start: &str) -> Result<Bed, CalError> {
        let topo = Topology::build(TopoSpec::satlink())?;
        static_neighbours(&topo)?;
        let stats_path = topo.tmpdir().join("satlink-stats.json");
        let stats = stats_path.to_string_lossy().into_owned();
        let seed = seed.to_string();
        let extra = [
            "--seed",
            seed.as_str(),
            "--stats-json",
            stats.as_str(),
            "--stats-interval",
            "1",
            "--start",
            start,
        ];
        let mut proc = topo.spawn_satlink(satlink, profile, &extra)?;
        let deadline = Instant::now() + Duration::from_secs(25);
        let replay_start = loop {
            if let Some(v) = read_json(&stats_path) {
                if let Some(s) = v.get("replay_start_unix").and_then(Value::as_f64) {
                    break Duration::from_secs_f64(s);
                }
            }
            if proc.try_status().is_some() || Instant::now() > deadline {
                return Err(CalError::Measure(format!(
                    "satlink did not start: {}",
                    proc.log()
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // Measurements begin once the link is up.
        sys::sleep_until_realtime(replay_start + Duration::from_millis(50));
        Ok(Bed {
            topo,
            satlink: Some(proc),
            stats_path,
            replay_start,
        })
    }

    /// The replay start in ns since the UNIX epoch.
    pub fn start_ns(&self) -> u64 {
        self.replay_start.as_nanos() as u64
    }

    /// Virtual time now (since the replay start).
    pub fn vnow(&self) -> Duration {
        sys::realtime_now().saturating_sub(self.replay_start)
    }

    /// satlink's latest stats JSON (it rewrites it every second).
    pub fn stats(&self) -> Result<Value, CalError> {
        read_json(&self.stats_path)
            .ok_or_else(|| CalError::Measure(format!("no stats at {}", self.stats_path.display())))
    }

    /// The satlink log so far.
    pub fn log(&self) -> String {
        self.satlink.as_ref().map(Proc::log).unwrap_or_default()
    }

    /// SIGTERM to satlink; returns its final stats JSON (written on exit).
    pub fn stop(&mut self) -> Result<Value, CalError> {
        if let Some(mut p) = self.satlink.take() {
            let st = p.stop();
            if !st.is_some_and(|s| s.success()) {
                return Err(CalError::Measure(format!(
                    "satlink exit {st:?}: {}",
                    p.log()
                )));
            }
        }
        self.stats()
    }
}

fn read_json(p: &Path) -> Option<Value> {
    let s = std::fs::read_to_string(p).ok()?;
    serde_json::from_str(&s).ok()
}

/// MAC of `ifname` inside `node`.
fn mac(topo: &Topology, node: Node, ifname: &str) -> Result<String, CalError> {
    let out = topo.run_ok(node, &["cat", &format!("/sys/class/net/{ifname}/address")])?;
    Ok(out.trim().to_string())
}

/// Permanent neighbour entries on both WAN ends, so no ARP crosses the link mid-measurement.
fn static_neighbours(topo: &Topology) -> Result<(), CalError> {
    let box_mac = mac(topo, Node::Box, WAN_IF)?;
    let pop_mac = mac(topo, Node::Pop, WAN_IF)?;
    for (node, ip, lladdr) in [
        (Node::Box, POP_WAN.to_string(), pop_mac),
        (Node::Pop, BOX_WAN.to_string(), box_mac),
    ] {
        topo.ip(
            node,
            &[
                "neigh",
                "replace",
                &ip,
                "lladdr",
                &lladdr,
                "dev",
                WAN_IF,
                "nud",
                "permanent",
            ],
        )?;
    }
    Ok(())
}
