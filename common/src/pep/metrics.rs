//! PEP metrics (pure): the typed snapshot `show` / `show --json` prints, built from the flow table.

use std::fmt::Write;
use std::net::SocketAddr;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::flows::{FlowTable, TableTotals};
use super::plan::Role;
use super::relay::FlowState;
use super::starpep::ControlRecord;
use super::tcpinfo::SegmentInfo;

/// One live flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FlowMetrics {
    pub id: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
    pub state: FlowState,
    pub age_ms: u64,
    /// Bytes relayed toward the server and toward the client (refreshed about once a second).
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// TCP_INFO of the satellite-segment socket and of the terrestrial one.
    pub satellite: Option<SegmentInfo>,
    pub terrestrial: Option<SegmentInfo>,
    /// StarPEP window control of the flow (its last tick), when controlled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub control: Option<ControlRecord>,
    /// How its satellite segment started (careful resume): initial window in segments, jump
    /// pacing in bytes/s, where they came from (`measured`, `stale`, `configured`, `default`)
    /// and how many flows of its path were busy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<crate::pep::StartPlan>,
    /// The pacing cap of its jump (bytes/s) while the jump lasts: the plan's, then what its
    /// validation or retreat set (`pep::jump`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jump_pacing: Option<u64>,
}

/// The whole PEP of one daemon.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PepMetrics {
    pub role: Role,
    /// `starpep` or `split`.
    #[serde(default)]
    pub mode: String,
    /// The StarPEP window back-end in use (`ebpf`, `clamp`), with `Mode = starpep`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_backend: Option<String>,
    /// `wireguard` or `none`.
    pub tunnel: String,
    /// nft table name.
    pub table: String,
    pub proxy_port: u16,
    /// Whether new flows are intercepted now (false while the table is full).
    pub intercepting: bool,
    pub max_flows: usize,
    pub active_flows: usize,
    /// Flows accepted and split since start.
    pub accepted: u64,
    /// Flows accepted while the table was already full (their SYN raced the pause).
    pub over_limit: u64,
    /// Times the table filled up and interception was paused.
    pub pauses: u64,
    /// SYNs of new flows that passed untouched because the table was full (nft counter).
    pub overflow_syns: u64,
    /// SYNs intercepted by TPROXY (nft counter; retransmitted SYNs count again).
    pub intercepted_syns: u64,
    /// The shares per source address and per peer; clients capped now; flows that came in over
    /// their client's share (their SYN raced the cap); times a client was capped; SYNs that
    /// passed unsplit because their client was capped (nft counter).
    pub max_flows_per_host: usize,
    pub max_flows_per_peer: usize,
    pub capped_clients: usize,
    pub over_cap: u64,
    pub client_caps: u64,
    pub capped_syns: u64,
    /// Flows reset at accept because the daemon had no descriptor left.
    #[serde(default)]
    pub refused_flows: u64,
    /// Finished flows by outcome.
    pub closed: u64,
    pub reset: u64,
    pub connect_failed: u64,
    pub idle_timeout: u64,
    pub shutdown: u64,
    /// Reset because a reload removed the peer that carried them.
    #[serde(default)]
    pub revoked: u64,
    /// Bytes of finished flows plus the live flows' last figures.
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub flows: Vec<FlowMetrics>,
}

/// What the snapshot needs besides the table.
#[derive(Debug, Clone)]
pub struct MetricsHeader {
    pub role: Role,
    pub mode: String,
    pub window_backend: Option<String>,
    pub tunnel: String,
    pub table: String,
    pub proxy_port: u16,
    pub overflow_syns: u64,
    pub intercepted_syns: u64,
    pub capped_syns: u64,
    pub refused_flows: u64,
}

impl PepMetrics {
    pub fn snapshot(h: &MetricsHeader, table: &FlowTable, now: Instant) -> PepMetrics {
        let TableTotals {
            accepted,
            over_limit,
            pauses,
            bytes_up,
            bytes_down,
            closed,
            reset,
            connect_failed,
            idle_timeout,
            shutdown,
            revoked,
        } = table.totals();
        let (caps, _) = table.client_cap();
        let (over_cap, client_caps) = caps.totals();
        let flows: Vec<FlowMetrics> = table
            .iter()
            .map(|(id, r)| FlowMetrics {
                id,
                client: r.key.client,
                server: r.key.server,
                state: r.state,
                age_ms: FlowTable::age(r, now).as_millis() as u64,
                bytes_up: r.bytes_up,
                bytes_down: r.bytes_down,
                satellite: r.satellite.clone(),
                terrestrial: r.terrestrial.clone(),
                control: r.control.clone(),
                start: r.start,
                jump_pacing: r.jump_pacing,
            })
            .collect();
        let live_up: u64 = flows.iter().map(|f| f.bytes_up).sum();
        let live_down: u64 = flows.iter().map(|f| f.bytes_down).sum();
        PepMetrics {
            role: h.role,
            mode: h.mode.clone(),
            window_backend: h.window_backend.clone(),
            tunnel: h.tunnel.clone(),
            table: h.table.clone(),
            proxy_port: h.proxy_port,
            intercepting: table.intercepting(),
            max_flows: table.max(),
            active_flows: flows.len(),
            accepted,
            over_limit,
            pauses,
            overflow_syns: h.overflow_syns,
            intercepted_syns: h.intercepted_syns,
            max_flows_per_host: caps.caps().0,
            max_flows_per_peer: caps.caps().1,
            capped_clients: caps.capped(),
            over_cap,
            client_caps,
            capped_syns: h.capped_syns,
            refused_flows: h.refused_flows,
            closed,
            reset,
            connect_failed,
            idle_timeout,
            shutdown,
            revoked,
            bytes_up: bytes_up + live_up,
            bytes_down: bytes_down + live_down,
            flows,
        }
    }

    /// Human-readable block for `show` (like `wg show`'s sections).
    pub fn render(&self) -> String {
        let mut s = String::new();
        let backend = match &self.window_backend {
            Some(b) => format!(" (window back-end {b})"),
            None => String::new(),
        };
        let _ = writeln!(
            s,
            "pep: {:?} {}{backend}, tunnel {}, nft table {}, port {}",
            self.role, self.mode, self.tunnel, self.table, self.proxy_port
        );
        let _ = writeln!(
            s,
            "  flows: {} active / {} max{}; accepted {}, closed {}, reset {}, connect failed {}, \
             idle {}",
            self.active_flows,
            self.max_flows,
            if self.intercepting {
                ""
            } else {
                " (FULL: new flows pass unsplit)"
            },
            self.accepted,
            self.closed,
            self.reset,
            self.connect_failed,
            self.idle_timeout
        );
        let _ = writeln!(
            s,
            "  unsplit by MaxFlows: {} SYNs ({} pauses, {} over limit); transfer: {} up, {} down",
            self.overflow_syns,
            self.pauses,
            self.over_limit,
            bytes(self.bytes_up),
            bytes(self.bytes_down)
        );
        let _ = writeln!(
            s,
            "  unsplit by client shares ({} per host, {} per peer): {} SYNs ({} clients capped \
             now, {} caps, {} over cap)",
            self.max_flows_per_host,
            self.max_flows_per_peer,
            self.capped_syns,
            self.capped_clients,
            self.client_caps,
            self.over_cap
        );
        if self.refused_flows > 0 {
            let _ = writeln!(
                s,
                "  refused for want of descriptors: {} flows",
                self.refused_flows
            );
        }
        for f in &self.flows {
            let seg = |i: &Option<SegmentInfo>| match i {
                Some(i) => format!(
                    "{} rtt {:.1}/{:.1} ms cwnd {}",
                    i.congestion,
                    i.rtt_us as f64 / 1000.0,
                    i.min_rtt_us.unwrap_or(0) as f64 / 1000.0,
                    i.cwnd
                ),
                None => "-".into(),
            };
            let _ = writeln!(
                s,
                "  flow {} {} -> {} {} {} up {} down; satellite {}; terrestrial {}",
                f.id,
                f.client,
                f.server,
                f.state.as_str(),
                bytes(f.bytes_up),
                bytes(f.bytes_down),
                seg(&f.satellite),
                seg(&f.terrestrial)
            );
            if let Some(c) = &f.control {
                let _ = writeln!(s, "    {}", control_line(c));
            }
        }
        s
    }
}

/// One controlled flow's window line for `show`.
fn control_line(c: &ControlRecord) -> String {
    let w = c.w_bytes.map_or("-".to_string(), |w| bytes(w as u64));
    format!(
        "starpep {} {}: W {w} (W_base {}), Q {} (Q^ {}, {:.1} ms), R_down {:.2} Mbit/s, \
         RTT_up {:.2} ms, back-end {}",
        c.phase.as_str(),
        match c.regime {
            super::starpep::Regime::Below => "below",
            super::starpep::Regime::Inside => "inside",
            super::starpep::Regime::Above => "above",
        },
        bytes(c.w_base_bytes as u64),
        bytes(c.q_bytes as u64),
        bytes(c.q_hat_bytes as u64),
        c.proxy_queue_ms,
        c.r_down_mbps,
        c.rtt_up_ms,
        c.backend
    )
}

fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < UNITS.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{n} B")
    } else {
        format!("{v:.2} {}", UNITS[u])
    }
}
