//! Benchmarks (not tests): whole setups in a namespace topology, measured and printed.
//! `starpep-bench <subcommand>`; `tunnel` compares the WireGuard data paths on bare veth,
//! `split` the download time over a satellite link with and without VPN and PEP, `demo`
//! the README's main job (LEO trace, VPN only vs VPN + PEP, side by side), `run` the
//! VPN-vs-PEP suite's cells and matrices (`report` its page), `pop-scale` one POP serving
//! many boxes ([`fleet`], [`fleet_load`]; `tests/netns_ops_scale.rs` runs the same fleet),
//! `tunnel-peers` the tunnel data path with several peers at once and its workers.

pub mod bed;
pub mod bulk;
pub mod cdp;
pub mod chromium;
pub mod cost;
pub mod cpu;
pub mod demo;
pub mod fair;
pub mod fleet;
pub mod fleet_load;
pub mod iperf;
pub mod ovpn;
pub mod owd;
pub mod plots;
pub mod pop_scale;
pub mod progress;
pub mod run;
pub mod setup;
pub mod split;
pub mod sweep;
pub mod tunnel;
pub mod tunnel_peers;
pub mod uapi;
pub mod voip;
pub mod vpn;
pub mod web;

use std::path::PathBuf;

/// How long a bench waits for pc to reach srv before measuring (routes up, handshake done).
pub const WARM_UP: std::time::Duration = std::time::Duration::from_secs(20);

/// A binary next to the running one (`target/<profile>/NAME`), built by the same cargo build;
/// from a test binary (`target/<profile>/deps/`), the one a level up.
pub fn sibling_bin(name: &str) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let mut dir = exe
        .parent()
        .ok_or_else(|| anyhow::anyhow!("no parent dir of {}", exe.display()))?;
    if dir.ends_with("deps") {
        dir = dir.parent().unwrap_or(dir);
    }
    let p = dir.join(name);
    anyhow::ensure!(
        p.exists(),
        "{} not built (cargo build --release --workspace --bins)",
        p.display()
    );
    Ok(p)
}
