//! The resolved PEP plan (pure): `[PEP]` settings + what the daemon knows → what the shell sets up.
//!
//! Resolves every default that depends on the role and the tunnel: where to intercept, which
//! destinations, which of the flow's two sockets is the satellite segment, socket options per
//! segment, the MSS clamp, the policy-routing mark and table. `nft::ruleset` renders it.

use std::time::Duration;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::liveness::Liveness;
use super::relay::{Dir, Side};
use super::starpep::Params;
use super::tenants::TenantMap;
use crate::config::{self, PepMode, TunnelMode, WindowControl};

/// Which endpoint runs the PEP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The customer box: intercepts the LAN side, its connected socket is the satellite segment.
    Box,
    /// The POP: intercepts the satellite side, its accepted socket is the satellite segment.
    Pop,
}

/// Packet mark of intercepted flows and of replies to the PEP's transparent sockets. Distinct
/// from WireGuard's 51820 (0xca6c).
pub const FWMARK: u32 = 0x5350;
/// SO_MARK of the PEP's transparent connecting sockets. With `fwmark_reflect` the ICMP error
/// the kernel generates for them (neighbour unreachable) carries it, and a policy rule for
/// ICMP with this mark delivers the error locally to the connecting socket (which is bound to
/// a foreign address): the connect fails as fast as a direct attempt would.
pub const CONNECT_MARK: u32 = 0x5351;
/// Routing table holding `local default dev lo` for marked packets.
pub const ROUTE_TABLE: u32 = 0x5350;
/// Priority of the `fwmark` rule: before wg-quick's rules (32764/32765) and `main` (32766).
pub const RULE_PREF: u32 = 0x5350;

/// What the daemon knows that the `[PEP]` section does not.
#[derive(Debug, Clone, Default)]
pub struct PlanInput {
    /// The daemon's interface name (from the config file name); names the nft table.
    pub name: String,
    /// The TUN device; `None` with `Tunnel = none`.
    pub tunnel_if: Option<String>,
    /// The TUN MTU (for the MSS clamp of unsplit TCP).
    pub tunnel_mtu: Option<u32>,
    /// Box: the peer's AllowedIPs (what the tunnel carries). Used when `Destinations` is empty.
    pub destinations_default: Vec<IpNet>,
    /// WireGuard's `FwMark`, to refuse a collision with ours.
    pub wg_fwmark: Option<u32>,
    /// Each peer's AllowedIPs, by the tunnel engine's slot (a removed peer's slot is empty).
    /// At the POP a peer is one client for `MaxFlowsPerClient`; the box charges each source
    /// address instead. Both use them to tell which flows a reload takes from their peer.
    pub peers: Vec<Vec<IpNet>>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PlanError {
    #[error("Mode = off: there is nothing to split")]
    ModeOff,
    #[error("Tunnel = wireguard but the daemon gave no tunnel interface")]
    NoTunnel,
    #[error("Intercept: required on the POP with Tunnel = none (the satellite-side interfaces)")]
    InterceptRequired,
    #[error("FwMark {0:#x} collides with the PEP's mark {FWMARK:#x}")]
    FwMarkCollision(u32),
    #[error("interface name {0:?} is not usable in an nftables rule")]
    BadInterface(String),
}

/// Where new TCP flows are intercepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Intercept {
    /// Only on these ingress interfaces.
    Only(Vec<String>),
    /// On every ingress interface except these (the box default: all but the tunnel and lo).
    AllExcept(Vec<String>),
}

/// Socket options of one segment's sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SocketOpts {
    /// `TCP_CONGESTION`; `None`: the kernel default.
    pub congestion: Option<&'static str>,
    /// SO_SNDBUFFORCE / SO_RCVBUFFORCE; `None`: kernel autotuning.
    pub snd_buf: Option<usize>,
    pub rcv_buf: Option<usize>,
    pub no_delay: bool,
    /// TCP_QUICKACK (not sticky in the kernel: re-armed after each read).
    pub quick_ack: bool,
    pub notsent_lowat: Option<u32>,
    /// The satellite segment's liveness options (`TCP_RTO_MAX_MS`, `TCP_USER_TIMEOUT`,
    /// keepalive); `None` on the terrestrial side.
    pub liveness: Option<Liveness>,
}

/// The window controller's part of the plan: `Mode = starpep`, or `Mode = split` with a
/// `ControlLog` (the controller then only observes: its queue figures are logged, nothing is
/// applied).
#[derive(Debug, Clone, PartialEq)]
pub struct StarpepPlan {
    /// Whether decisions are applied (`Mode = starpep`).
    pub apply: bool,
    pub params: Params,
    pub window_control: WindowControl,
    pub control_log: Option<std::path::PathBuf>,
    /// The direction toward the satellite link, whose sender is regulated: the box's uploads
    /// (`Up`), the POP's downloads (`Down`). Its source socket faces the sender.
    pub dir: Dir,
}

/// Everything the proxy shell sets up.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub role: Role,
    pub tunnel: TunnelMode,
    /// `inet` table name (`starpep_<name>`).
    pub table: String,
    pub proxy_port: u16,
    pub intercept: Intercept,
    /// Destinations intercepted (merged prefixes); an empty family is not intercepted.
    pub dst4: Vec<Ipv4Net>,
    pub dst6: Vec<Ipv6Net>,
    /// Bypass: destination port ranges (inclusive) and prefixes.
    pub bypass_ports: Vec<(u16, u16)>,
    pub bypass4: Vec<Ipv4Net>,
    pub bypass6: Vec<Ipv6Net>,
    /// MSS clamp of forwarded TCP through the tunnel: (device, MTU).
    pub mss_clamp: Option<(String, u32)>,
    /// Which socket of a flow is the satellite segment.
    pub satellite_side: Side,
    pub satellite: SocketOpts,
    pub terrestrial: SocketOpts,
    /// The connected socket binds the originator's address and port (false with `SNAT`).
    pub transparent_connect: bool,
    /// Relay buffer per direction per flow (bytes).
    pub flow_buffer: usize,
    pub max_flows: usize,
    /// Split flows per source address and per peer (the box: `MaxFlowsPerClient` per LAN host,
    /// no peers; the POP: `MaxFlowsPerHost` and `MaxFlowsPerClient`), and who the peers are.
    pub max_flows_per_host: usize,
    pub max_flows_per_peer: usize,
    pub tenants: TenantMap,
    /// Who carries which addresses: every peer's AllowedIPs by slot (both roles). A flow whose
    /// carrier a reload removes is reset ([`crate::pep::reload::orphans`]).
    pub carriers: TenantMap,
    pub idle_timeout: Duration,
    /// `initcwnd` for the routes toward the satellite segment.
    pub init_cwnd: Option<u32>,
    /// The satellite-side devices known from the config (tunnel, or POP `Intercept` without
    /// tunnel); the box without tunnel adds the devices its destination routes use at start.
    pub satellite_devs: Vec<String>,
    /// StarPEP window control (`None` with `Mode = split`).
    pub starpep: Option<StarpepPlan>,
    /// The satellite segment's careful resume (`None` with `Resume = off` or `InitCwnd`).
    pub start: Option<crate::pep::StartParams>,
    /// TCP Fast Open on the satellite segment (`FastOpen`).
    pub fast_open: FastOpen,
}

/// TCP Fast Open on the satellite segment: a new flow's first bytes cross the satellite with
/// its SYN, saving the round trip the handshake would take before a request can leave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FastOpen {
    Off,
    /// The box: the connect toward the satellite carries the client's first bytes.
    Connect,
    /// The POP: its listener takes data in a SYN. Without a cookie only behind the WireGuard
    /// tunnel, whose peers are authenticated and their sources checked against AllowedIPs;
    /// with `Tunnel = none` a box's first flow to a server earns the cookie the next ones use
    /// (RFC 7413), so a spoofed SYN cannot make the POP open connections.
    Listen {
        cookie: bool,
    },
}

impl FastOpen {
    fn of(pep: &config::Pep, role: Role) -> FastOpen {
        match (pep.fast_open, role) {
            (false, _) => FastOpen::Off,
            (true, Role::Box) => FastOpen::Connect,
            (true, Role::Pop) => FastOpen::Listen {
                cookie: pep.tunnel != TunnelMode::WireGuard,
            },
        }
    }
}

fn check_if(name: &str) -> Result<(), PlanError> {
    let ok = !name.is_empty()
        && name.len() <= 15
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_=+.-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(PlanError::BadInterface(name.to_string()))
    }
}

/// `starpep_<name>` with every character nft identifiers do not take replaced by `_`.
pub fn table_name(name: &str) -> String {
    let clean: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("starpep_{clean}")
}

fn split_nets(nets: &[IpNet]) -> (Vec<Ipv4Net>, Vec<Ipv6Net>) {
    let merged = IpNet::aggregate(&nets.iter().map(|n| n.trunc()).collect());
    let mut v4 = Vec::new();
    let mut v6 = Vec::new();
    for n in merged {
        match n {
            IpNet::V4(n) => v4.push(n),
            IpNet::V6(n) => v6.push(n),
        }
    }
    (v4, v6)
}

/// Sorted, merged inclusive port ranges.
fn merge_ports(mut r: Vec<(u16, u16)>) -> Vec<(u16, u16)> {
    r.sort_unstable();
    let mut out: Vec<(u16, u16)> = Vec::new();
    for (lo, hi) in r {
        match out.last_mut() {
            Some(last) if lo as u32 <= last.1 as u32 + 1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

impl Plan {
    /// Resolves `pep` for `role`.
    pub fn new(pep: &config::Pep, role: Role, input: &PlanInput) -> Result<Plan, PlanError> {
        if pep.mode == PepMode::Off {
            return Err(PlanError::ModeOff);
        }
        if let Some(m) = input.wg_fwmark {
            if m == FWMARK {
                return Err(PlanError::FwMarkCollision(m));
            }
        }
        let tun = match pep.tunnel {
            TunnelMode::WireGuard => Some(input.tunnel_if.clone().ok_or(PlanError::NoTunnel)?),
            TunnelMode::None => None,
        };
        for i in pep.intercept.iter().chain(tun.iter()) {
            check_if(i)?;
        }
        let intercept = match (role, pep.intercept.is_empty(), &tun) {
            (_, false, _) => Intercept::Only(pep.intercept.clone()),
            (Role::Box, true, Some(t)) => Intercept::AllExcept(vec![t.clone(), "lo".into()]),
            (Role::Box, true, None) => Intercept::AllExcept(vec!["lo".into()]),
            (Role::Pop, true, Some(t)) => Intercept::Only(vec![t.clone()]),
            (Role::Pop, true, None) => return Err(PlanError::InterceptRequired),
        };
        let all: [IpNet; 2] = [
            "0.0.0.0/0".parse().expect("v4"),
            "::/0".parse().expect("v6"),
        ];
        let dests: &[IpNet] = if !pep.destinations.is_empty() {
            &pep.destinations
        } else if role == Role::Box && tun.is_some() {
            &input.destinations_default
        } else {
            &all
        };
        let (dst4, dst6) = split_nets(dests);
        let mut ports = Vec::new();
        let mut prefixes = Vec::new();
        for r in &pep.bypass {
            match *r {
                config::BypassRule::Port(p) => ports.push((p, p)),
                config::BypassRule::Ports(lo, hi) => ports.push((lo, hi)),
                config::BypassRule::Prefix(n) => prefixes.push(n),
            }
        }
        let (bypass4, bypass6) = split_nets(&prefixes);
        let mss_clamp = match (&tun, input.tunnel_mtu) {
            (Some(t), Some(mtu)) => Some((t.clone(), mtu)),
            _ => None,
        };
        let satellite = SocketOpts {
            congestion: Some(pep.congestion.as_str()),
            snd_buf: Some(pep.snd_buf_bytes() as usize),
            rcv_buf: Some(pep.rcv_buf_bytes() as usize),
            no_delay: pep.no_delay,
            quick_ack: pep.quick_ack,
            notsent_lowat: pep.notsent_lowat,
            liveness: Some(Liveness::new(
                pep.link_rtt,
                pep.idle_timeout,
                pep.dead_peer_timeout,
            )),
        };
        let terrestrial = SocketOpts {
            congestion: pep.lan_congestion.map(|c| c.as_str()),
            snd_buf: None,
            rcv_buf: None,
            no_delay: pep.no_delay,
            quick_ack: false,
            notsent_lowat: None,
            liveness: None,
        };
        let satellite_devs = match (&tun, role) {
            (Some(t), _) => vec![t.clone()],
            (None, Role::Pop) => pep.intercept.clone(),
            (None, Role::Box) => Vec::new(),
        };
        let start = (pep.resume && pep.init_cwnd.is_none()).then(|| {
            // The satellite segment's MSS: the tunnel's MTU less IPv4 and TCP headers with
            // timestamps (52 bytes), or Ethernet's without a tunnel.
            let mtu = mss_clamp.as_ref().map_or(1500, |(_, m)| *m);
            crate::pep::StartParams::new(pep, mtu.saturating_sub(52).max(536))
        });
        Ok(Plan {
            role,
            tunnel: pep.tunnel,
            table: table_name(&input.name),
            proxy_port: pep.proxy_port,
            intercept,
            dst4,
            dst6,
            bypass_ports: merge_ports(ports),
            bypass4,
            bypass6,
            mss_clamp,
            satellite_side: match role {
                Role::Box => Side::Connected,
                Role::Pop => Side::Accepted,
            },
            satellite,
            terrestrial,
            transparent_connect: !pep.snat,
            flow_buffer: pep.flow_buffer as usize,
            max_flows: pep.max_flows as usize,
            max_flows_per_host: match role {
                Role::Box => pep.max_flows_per_client,
                Role::Pop => pep.max_flows_per_host,
            }
            .unwrap_or(config::Pep::DEFAULT_MAX_FLOWS_PER_HOST)
            .min(pep.max_flows) as usize,
            max_flows_per_peer: match role {
                Role::Box => pep.max_flows,
                Role::Pop => pep
                    .max_flows_per_client
                    .unwrap_or(config::Pep::DEFAULT_MAX_FLOWS_PER_PEER),
            }
            .min(pep.max_flows) as usize,
            tenants: TenantMap::new(match role {
                Role::Box => Vec::new(),
                Role::Pop => input.peers.clone(),
            }),
            carriers: TenantMap::new(input.peers.clone()),
            idle_timeout: pep.idle_timeout,
            init_cwnd: pep.init_cwnd,
            start,
            fast_open: FastOpen::of(pep, role),
            satellite_devs,
            starpep: (pep.mode == PepMode::Starpep || pep.starpep.control_log.is_some()).then(
                || StarpepPlan {
                    apply: pep.mode == PepMode::Starpep,
                    params: Params::new(&pep.starpep, pep.link_rate_bps, pep.link_rtt),
                    window_control: pep.starpep.window_control,
                    control_log: pep.starpep.control_log.clone(),
                    dir: match role {
                        Role::Box => Dir::Up,
                        Role::Pop => Dir::Down,
                    },
                },
            ),
        })
    }

    /// The options of `side`'s socket.
    pub fn opts(&self, side: Side) -> &SocketOpts {
        if side == self.satellite_side {
            &self.satellite
        } else {
            &self.terrestrial
        }
    }
}

impl Plan {
    /// Adds satellite-side devices found at start (the box without tunnel: where its
    /// destination routes go). The box never intercepts on them.
    pub fn with_satellite_devs(mut self, devs: &[String]) -> Plan {
        for d in devs {
            if !self.satellite_devs.contains(d) {
                self.satellite_devs.push(d.clone());
            }
            if let (Role::Box, Intercept::AllExcept(ex)) = (self.role, &mut self.intercept) {
                if !ex.contains(d) {
                    ex.push(d.clone());
                }
            }
        }
        self
    }
}
