//! Tunnel state (pure): peers around boringtun `Tunn`, cryptokey routing (AllowedIPs), metrics.
//!
//! No sockets and no TUN here: the daemon's loops feed packets in and do the I/O the engine asks
//! for, so the whole protocol path is unit-tested in memory (`tests.rs`).

pub mod allowed_ips;
pub mod diff;
pub mod engine;
mod engine_peers;
pub mod metrics;
pub mod peer;
mod table;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_fuzz;
#[cfg(test)]
mod tests_reload;

pub use allowed_ips::AllowedIps;
pub use diff::{diff_peers, PeerChange, PeerDiff};
pub use engine::{Engine, EngineError, Inbound, Outbound, DATA_OVERHEAD, MIN_DST};
pub use metrics::{InterfaceInfo, InterfaceMetrics, PeerMetrics, SHOW_SCHEMA_VERSION};
pub use peer::{PeerSpec, PeerStats};
