//! Parser of the `[PEP]` section (pure): keys, value checks and cross-key checks.
//!
//! The StarPEP controller keys are handled by `starpep_parse.rs`.

use std::time::Duration;

use super::error::ErrorKind;
use super::parse::{check_key, Ctx, SectionSpec, Seen};
use super::pep::{BypassRule, Congestion, Pep, PepMode, TunnelMode};
use super::starpep_parse::{self, StarpepLines};
use super::values::{self, ValueResult};

const PEP_KEYS: &[&str] = &[
    "Mode",
    "Tunnel",
    "Congestion",
    "LanCongestion",
    "LinkRate",
    "LinkRtt",
    "SndBuf",
    "RcvBuf",
    "InitCwnd",
    "Resume",
    "FastOpen",
    "NoDelay",
    "QuickAck",
    "NotsentLowat",
    "Bypass",
    "MaxFlows",
    "MaxFlowsPerClient",
    "MaxFlowsPerHost",
    "IdleTimeout",
    "DeadPeerTimeout",
    "SNAT",
    "FlowBuffer",
    "ProxyPort",
    "Intercept",
    "Destinations",
    // StarPEP (starpep_parse.rs)
    "Reconfig",
    "ReconfigPeriod",
    "ReconfigOffset",
    "Alpha",
    "Beta",
    "QueueLow",
    "QueueHigh",
    "GuardTime",
    "ProbeTime",
    "RecoverTime",
    "ProbeWindow",
    "WindowControl",
    "LinkQueue",
    "ControlLog",
];
const PEP: SectionSpec = SectionSpec {
    name: "PEP",
    known: PEP_KEYS,
    multi: &["Bypass", "Intercept", "Destinations"],
};

/// Bounds of `SndBuf`/`RcvBuf`.
const SOCK_BUF_MIN: u64 = 4 * 1024;
/// Bounds of `FlowBuffer`.
const FLOW_BUFFER_MAX: u64 = 64 << 20;

/// Collects one `[PEP]` section.
pub(super) struct PepBuilder {
    seen: Seen,
    pep: Pep,
    tunnel_line: usize,
    starpep_lines: StarpepLines,
}

impl PepBuilder {
    pub fn new(line: usize) -> Self {
        Self {
            seen: Seen::default(),
            pep: Pep {
                line,
                ..Pep::default()
            },
            tunnel_line: 0,
            starpep_lines: StarpepLines::default(),
        }
    }

    /// Line of the `[PEP]` header.
    pub fn line(&self) -> usize {
        self.pep.line
    }

    pub fn entry(&mut self, ctx: &mut Ctx<'_>, key: &str, v: &str, line: usize) {
        let Some(k) = check_key(ctx, &mut self.seen, &PEP, key, v, line) else {
            return;
        };
        let p = &mut self.pep;
        let max_buf = Pep::MAX_SEGMENT_BUFFER;
        macro_rules! set {
            ($field:expr, $r:expr) => {
                if let Some(x) = ctx.value(line, k, $r) {
                    $field = x;
                }
            };
        }
        if starpep_parse::entry(ctx, &mut p.starpep, &mut self.starpep_lines, k, v, line) {
            return;
        }
        match k {
            "Mode" => set!(p.mode, mode(v)),
            "Tunnel" => {
                set!(p.tunnel, tunnel(v));
                self.tunnel_line = line;
            }
            "Congestion" => set!(p.congestion, congestion(v)),
            "LanCongestion" => set!(p.lan_congestion, congestion(v).map(Some)),
            "LinkRate" => {
                set!(p.link_rate_bps, values::bit_rate(v));
                p.link_rate_given = true;
            }
            "LinkRtt" => set!(p.link_rtt, duration_in(v, Duration::from_millis(1), 10)),
            "SndBuf" => set!(
                p.snd_buf,
                values::byte_size(v, SOCK_BUF_MIN, max_buf).map(Some)
            ),
            "RcvBuf" => set!(
                p.rcv_buf,
                values::byte_size(v, SOCK_BUF_MIN, max_buf).map(Some)
            ),
            "InitCwnd" => set!(p.init_cwnd, values::int_in(v, 1u32, 1000).map(Some)),
            "Resume" => set!(p.resume, values::bool_value(v)),
            "FastOpen" => set!(p.fast_open, values::bool_value(v)),
            "NoDelay" => set!(p.no_delay, values::bool_value(v)),
            "QuickAck" => set!(p.quick_ack, values::bool_value(v)),
            "NotsentLowat" => set!(
                p.notsent_lowat,
                values::byte_size(v, 1, max_buf).map(|b| Some(b as u32))
            ),
            "Bypass" => {
                if let Some(items) = ctx.value(line, k, values::list(v)) {
                    for item in items {
                        if let Some(r) = ctx.value(line, k, bypass_rule(item)) {
                            p.bypass.push(r);
                        }
                    }
                }
            }
            "MaxFlows" => set!(p.max_flows, values::int_in(v, 1u32, 1_000_000)),
            "MaxFlowsPerClient" => set!(
                p.max_flows_per_client,
                values::int_in(v, 1u32, 1_000_000).map(Some)
            ),
            "MaxFlowsPerHost" => set!(
                p.max_flows_per_host,
                values::int_in(v, 1u32, 1_000_000).map(Some)
            ),
            "IdleTimeout" => set!(
                p.idle_timeout,
                duration_in(v, Duration::from_secs(1), 30 * 86400)
            ),
            "DeadPeerTimeout" => set!(
                p.dead_peer_timeout,
                duration_in(v, Duration::from_secs(5), 86400)
            ),
            "SNAT" => set!(p.snat, values::bool_value(v)),
            "FlowBuffer" => set!(
                p.flow_buffer,
                values::byte_size(v, Pep::MIN_FLOW_BUFFER as u64, FLOW_BUFFER_MAX)
                    .map(|b| b as u32)
            ),
            "ProxyPort" => set!(p.proxy_port, values::int_in(v, 1u16, 65535)),
            "Intercept" => {
                if let Some(items) = ctx.value(line, k, values::list(v)) {
                    for name in items {
                        if values::is_interface_name(name) {
                            p.intercept.push(name.to_string());
                        } else {
                            let msg = format!(
                                "{name:?} is not an interface name ([a-zA-Z0-9_=+.-], 1..15 chars)"
                            );
                            ctx.err(line, k, ErrorKind::Invalid(msg));
                        }
                    }
                }
            }
            "Destinations" => {
                if let Some(items) = ctx.value(line, k, values::list(v)) {
                    for item in items {
                        if let Some(net) = ctx.value(line, k, values::prefix(item)) {
                            p.destinations.push(net);
                        }
                    }
                }
            }
            _ => unreachable!("key {k} listed but not handled"),
        }
    }

    /// Cross-key checks; returns the section.
    pub fn finish(self, ctx: &mut Ctx<'_>) -> Pep {
        let p = self.pep;
        starpep_parse::finish(ctx, &p.starpep, &self.starpep_lines, p.line);
        if p.tunnel == TunnelMode::None && p.mode == PepMode::Off {
            let msg = "Tunnel = none needs Mode = starpep or split (without the tunnel and \
                       without splitting there is nothing to do)";
            ctx.err(
                self.tunnel_line,
                "Tunnel",
                ErrorKind::Invalid(msg.to_string()),
            );
        }
        p
    }
}

fn mode(v: &str) -> ValueResult<PepMode> {
    match v.to_ascii_lowercase().as_str() {
        "off" => Ok(PepMode::Off),
        "split" => Ok(PepMode::Split),
        "starpep" => Ok(PepMode::Starpep),
        _ => Err(format!("{v:?} is not a mode (starpep, split, off)")),
    }
}

fn tunnel(v: &str) -> ValueResult<TunnelMode> {
    match v.to_ascii_lowercase().as_str() {
        "wireguard" => Ok(TunnelMode::WireGuard),
        "none" => Ok(TunnelMode::None),
        _ => Err(format!("{v:?} is not a tunnel mode (wireguard, none)")),
    }
}

fn congestion(v: &str) -> ValueResult<Congestion> {
    match v.to_ascii_lowercase().as_str() {
        "bbr" => Ok(Congestion::Bbr),
        "cubic" => Ok(Congestion::Cubic),
        "reno" => Ok(Congestion::Reno),
        "hybla" => {
            Err("hybla is not available in this kernel (available: bbr, cubic, reno)".into())
        }
        _ => Err(format!(
            "{v:?} is not an available congestion control (available: bbr, cubic, reno)"
        )),
    }
}

/// A duration within `min..=max_secs` seconds.
fn duration_in(v: &str, min: Duration, max_secs: u64) -> ValueResult<Duration> {
    let d = values::duration(v)?;
    if d < min || d > Duration::from_secs(max_secs) {
        return Err(format!("{v:?} is out of range ({min:?}..{max_secs}s)"));
    }
    Ok(d)
}

/// `22`, `5060-5070` or a prefix `192.0.2.0/24`.
fn bypass_rule(item: &str) -> ValueResult<BypassRule> {
    let port = |s: &str| values::int_in(s.trim(), 1u16, 65535);
    if item.contains(['.', ':', '/']) {
        return values::prefix(item).map(BypassRule::Prefix);
    }
    if let Some((lo, hi)) = item.split_once('-') {
        let (lo, hi) = (port(lo)?, port(hi)?);
        if lo > hi {
            return Err(format!("{item:?}: empty port range (start above end)"));
        }
        return Ok(BypassRule::Ports(lo, hi));
    }
    port(item)
        .map(BypassRule::Port)
        .map_err(|_| format!("{item:?} is not a port, port range (a-b) or prefix"))
}
