//! Typed metrics of one interface (pure): what `show` prints and `show --json` returns.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::engine::Engine;

/// Interface-level facts the engine does not know (filled in by the daemon).
#[derive(Debug, Clone, Default)]
pub struct InterfaceInfo {
    pub interface: String,
    pub listen_port: u16,
    pub fwmark: Option<u32>,
}

/// The version of `show --json`'s schema (`docs/show-json.md`). Within a version fields are
/// only added; a field renamed, removed or changed in meaning takes the next one.
pub const SHOW_SCHEMA_VERSION: u32 = 1;

/// Everything `show` reports about one interface.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InterfaceMetrics {
    /// [`SHOW_SCHEMA_VERSION`] of the daemon that answered (0: older than the schema).
    #[serde(default)]
    pub schema_version: u32,
    pub interface: String,
    /// Base64, as `wg show`.
    pub public_key: String,
    pub listen_port: u16,
    pub fwmark: Option<u32>,
    pub dropped_no_route: u64,
    pub dropped_no_endpoint: u64,
    pub dropped_invalid: u64,
    pub dropped_unknown_peer: u64,
    pub cookie_replies: u64,
    pub peers: Vec<PeerMetrics>,
}

/// One peer as `show` reports it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PeerMetrics {
    pub public_key: String,
    /// `ip:port` (`[v6]:port`), or none before the peer was ever heard from.
    pub endpoint: Option<String>,
    pub allowed_ips: Vec<String>,
    /// Unix seconds of the latest completed handshake.
    pub latest_handshake_unix: Option<u64>,
    pub latest_handshake_secs_ago: Option<u64>,
    /// Round-trip time of the latest handshake (initiator side), ms.
    pub handshake_rtt_ms: Option<u32>,
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    pub dropped_source_not_allowed: u64,
    pub dropped_decrypt: u64,
    pub endpoint_changes: u64,
    pub persistent_keepalive: Option<u16>,
    /// Of `dropped_decrypt`: replays, and MAC/tag failures.
    #[serde(default)]
    pub dropped_replay: u64,
    #[serde(default)]
    pub dropped_bad_mac: u64,
    /// Handshakes completed since the peer was added.
    #[serde(default)]
    pub handshakes: u64,
}

fn b64(key: &[u8; 32]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(key)
}

impl Engine {
    /// A consistent-per-peer snapshot; `now_unix` (seconds) dates the latest handshakes.
    pub fn snapshot(&self, info: &InterfaceInfo, now_unix: u64) -> InterfaceMetrics {
        let peers = self
            .peers()
            .iter()
            .map(|p| {
                let stats = p.stats();
                let spec = p.spec();
                let (ago, rtt) = self.handshake_info(p.index as usize);
                let ago = ago.map(|d: Duration| d.as_secs());
                PeerMetrics {
                    public_key: b64(&p.public_key),
                    endpoint: p.endpoint().map(|e| e.to_string()),
                    allowed_ips: spec.allowed_ips.iter().map(|n| n.to_string()).collect(),
                    latest_handshake_unix: ago.map(|a| now_unix.saturating_sub(a)),
                    latest_handshake_secs_ago: ago,
                    handshake_rtt_ms: rtt,
                    rx_bytes: stats.rx_bytes,
                    tx_bytes: stats.tx_bytes,
                    rx_packets: stats.rx_packets,
                    tx_packets: stats.tx_packets,
                    dropped_source_not_allowed: stats.dropped_source_not_allowed,
                    dropped_decrypt: stats.dropped_decrypt,
                    endpoint_changes: stats.endpoint_changes,
                    persistent_keepalive: spec.persistent_keepalive,
                    dropped_replay: stats.dropped_replay,
                    dropped_bad_mac: stats.dropped_bad_mac,
                    handshakes: stats.handshakes,
                }
            })
            .collect();
        let c = &self.counters;
        InterfaceMetrics {
            schema_version: SHOW_SCHEMA_VERSION,
            interface: info.interface.clone(),
            public_key: b64(&self.public_key()),
            listen_port: info.listen_port,
            fwmark: info.fwmark,
            dropped_no_route: c.dropped_no_route.load(Relaxed),
            dropped_no_endpoint: c.dropped_no_endpoint.load(Relaxed),
            dropped_invalid: c.dropped_invalid.load(Relaxed),
            dropped_unknown_peer: c.dropped_unknown_peer.load(Relaxed),
            cookie_replies: c.cookie_replies.load(Relaxed),
            peers,
        }
    }
}

/// `1 hour, 2 minutes, 3 seconds`, as `wg show` prints ages.
pub fn human_duration(secs: u64) -> String {
    let parts = [
        (secs / 86400, "day"),
        (secs / 3600 % 24, "hour"),
        (secs / 60 % 60, "minute"),
        (secs % 60, "second"),
    ];
    let v: Vec<String> = parts
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, u)| format!("{n} {u}{}", if *n == 1 { "" } else { "s" }))
        .collect();
    if v.is_empty() {
        "0 seconds".into()
    } else {
        v.join(", ")
    }
}

/// `1.23 MiB`, as `wg show` prints transfer sizes.
pub fn human_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.2} {}", UNITS[u])
}

impl InterfaceMetrics {
    /// The `wg show`-like text form.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "interface: {}", self.interface);
        let _ = writeln!(s, "  public key: {}", self.public_key);
        let _ = writeln!(s, "  listening port: {}", self.listen_port);
        if let Some(m) = self.fwmark {
            let _ = writeln!(s, "  fwmark: {m:#x}");
        }
        let _ = writeln!(
            s,
            "  dropped: {} no route, {} no endpoint, {} invalid, {} unknown peer; {} cookie replies",
            self.dropped_no_route,
            self.dropped_no_endpoint,
            self.dropped_invalid,
            self.dropped_unknown_peer,
            self.cookie_replies
        );
        for p in &self.peers {
            let _ = writeln!(s, "\npeer: {}", p.public_key);
            if let Some(e) = &p.endpoint {
                let _ = writeln!(s, "  endpoint: {e}");
            }
            let ips = if p.allowed_ips.is_empty() {
                "(none)".to_string()
            } else {
                p.allowed_ips.join(", ")
            };
            let _ = writeln!(s, "  allowed ips: {ips}");
            if let Some(a) = p.latest_handshake_secs_ago {
                let _ = writeln!(s, "  latest handshake: {} ago", human_duration(a));
            }
            if p.rx_bytes > 0 || p.tx_bytes > 0 {
                let _ = writeln!(
                    s,
                    "  transfer: {} received, {} sent",
                    human_bytes(p.rx_bytes),
                    human_bytes(p.tx_bytes)
                );
            }
            if let Some(k) = p.persistent_keepalive {
                let _ = writeln!(
                    s,
                    "  persistent keepalive: every {}",
                    human_duration(k.into())
                );
            }
            if p.dropped_source_not_allowed > 0 || p.dropped_decrypt > 0 {
                let _ = writeln!(
                    s,
                    "  dropped: {} source not allowed, {} failed decryption",
                    p.dropped_source_not_allowed, p.dropped_decrypt
                );
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_sizes_read_like_wg_show() {
        assert_eq!(human_duration(0), "0 seconds");
        assert_eq!(human_duration(1), "1 second");
        assert_eq!(human_duration(3725), "1 hour, 2 minutes, 5 seconds");
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(1536), "1.50 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.00 MiB");
    }
}
