//! The controller's telemetry (pure): one record per flow per tick, as `show --json` reports it
//! and as the per-tick log (`ControlLog`, JSON lines) writes it. Units are in the field names.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::controller::{Decision, FlowSamples, Regime};
use super::phase::Phase;

/// One tick of one controlled flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ControlRecord {
    /// UNIX time of the tick, seconds.
    pub t_s: f64,
    pub flow: u64,
    pub client: SocketAddr,
    pub server: SocketAddr,
    /// `ebpf` or `clamp`.
    pub backend: String,
    pub phase: Phase,
    pub regime: Regime,
    /// The window applied (absent until `R_down` and `RTT_up` are known).
    pub w_bytes: Option<u32>,
    pub w_base_bytes: u32,
    /// `W_s` of eq. 3, before the phase.
    pub w_steady_bytes: u32,
    /// Q = unread + pipe + notsent, and its EWMA Q̂.
    pub q_bytes: u32,
    pub q_hat_bytes: f64,
    pub unread_bytes: u32,
    pub pipe_bytes: u32,
    pub notsent_bytes: u32,
    pub r_down_mbps: f64,
    pub rtt_up_ms: f64,
    /// Q / R_down: the queueing delay the PEP itself adds.
    pub proxy_queue_ms: f64,
    /// The satellite segment's bytes in flight, its cap and its base RTT.
    pub inflight_bytes: u32,
    pub link_cap_bytes: Option<u32>,
    pub sat_base_ms: Option<f64>,
    pub link_probe: bool,
    /// The satellite socket's BBR model was restarted at this tick (ahead of its ProbeRTT).
    #[serde(default)]
    pub cc_restart: bool,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl ControlRecord {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        now: Duration,
        flow: u64,
        client: SocketAddr,
        server: SocketAddr,
        backend: &str,
        d: &Decision,
        s: &FlowSamples,
    ) -> ControlRecord {
        let proxy_queue_ms = if d.r_down > 0.0 {
            d.q as f64 / d.r_down * 1000.0
        } else {
            0.0
        };
        ControlRecord {
            t_s: now.as_secs_f64(),
            flow,
            client,
            server,
            backend: backend.to_string(),
            phase: d.phase,
            regime: d.regime,
            w_bytes: d.window,
            w_base_bytes: d.w_base,
            w_steady_bytes: d.w_steady,
            q_bytes: d.q,
            q_hat_bytes: d.q_hat,
            unread_bytes: s.unread,
            pipe_bytes: s.pipe,
            notsent_bytes: s.notsent,
            r_down_mbps: d.r_down * 8.0 / 1e6,
            rtt_up_ms: ms(d.rtt_up),
            proxy_queue_ms,
            inflight_bytes: s.sat.map_or(0, |x| x.inflight),
            link_cap_bytes: d.link_cap,
            sat_base_ms: d.sat_base.map(ms),
            link_probe: d.link_probe,
            cc_restart: d.restart_cc,
        }
    }
}
