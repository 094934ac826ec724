//! The `[PEP]` section model: TCP splitting settings of the satellite segment (pure data + defaults).
//!
//! Absent section = stock WireGuard (no splitting). Parsing lives in `pep_parse.rs`.

use std::time::Duration;

use ipnet::IpNet;

use super::starpep::Starpep;

/// `Mode =`: what the PEP does with inner TCP flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PepMode {
    /// No splitting: every packet passes the tunnel untouched (stock WireGuard behaviour).
    Off,
    /// Split each inner TCP flow at the box and at the POP (PEP position B).
    Split,
    /// Split, and the PEP whose egress is the satellite link regulates the sender through the
    /// receive window it advertises (the default of a `[PEP]` section).
    #[default]
    Starpep,
}

impl PepMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PepMode::Off => "off",
            PepMode::Split => "split",
            PepMode::Starpep => "starpep",
        }
    }

    /// Whether flows are split (`split` or `starpep`).
    pub fn splits(self) -> bool {
        self != PepMode::Off
    }
}

/// `Tunnel =`: how the satellite segment is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TunnelMode {
    /// Inside the WireGuard tunnel.
    #[default]
    WireGuard,
    /// In clear over the satellite link (the distributed PEP without VPN).
    None,
}

/// A TCP congestion control available in this kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Congestion {
    Bbr,
    Cubic,
    Reno,
}

impl Congestion {
    /// The kernel's name (for `TCP_CONGESTION`).
    pub fn as_str(self) -> &'static str {
        match self {
            Congestion::Bbr => "bbr",
            Congestion::Cubic => "cubic",
            Congestion::Reno => "reno",
        }
    }
}

/// One `Bypass =` item: TCP matching it is not split (it passes the tunnel untouched).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BypassRule {
    /// A destination port.
    Port(u16),
    /// An inclusive destination port range.
    Ports(u16, u16),
    /// A destination prefix (host bits cleared).
    Prefix(IpNet),
}

/// The `[PEP]` section. See `configs/README.md` for every key.
#[derive(Debug, Clone, PartialEq)]
pub struct Pep {
    /// Line of the `[PEP]` header (0 for [`Pep::default`]).
    pub line: usize,
    pub mode: PepMode,
    pub tunnel: TunnelMode,
    /// Satellite-segment congestion control.
    pub congestion: Congestion,
    /// Terrestrial (LAN/server-side) segment congestion control; `None`: the kernel default.
    pub lan_congestion: Option<Congestion>,
    /// Satellite link rate in bit/s (sizes the buffers to the BDP).
    pub link_rate_bps: u64,
    /// Satellite link round-trip time (sizes the buffers to the BDP).
    pub link_rtt: Duration,
    /// `LinkRate` was given: a new flow with nothing measured may start from it (`Resume`).
    pub link_rate_given: bool,
    /// Satellite-segment socket buffers in bytes; `None`: [`Pep::segment_buffer_bytes`].
    pub snd_buf: Option<u64>,
    pub rcv_buf: Option<u64>,
    /// Initial congestion window in segments (route `initcwnd`); `None`: kernel default.
    pub init_cwnd: Option<u32>,
    /// A new flow's satellite segment starts at its share of what its path measured (careful
    /// resume: initial window and pacing, `pep::start`); off: the kernel's start. `InitCwnd`
    /// overrides it with a fixed window.
    pub resume: bool,
    /// TCP Fast Open on the satellite segment: the box sends a client's first bytes with its
    /// SYN, the POP's listener takes them (`proxy::fast_open`); off: a plain handshake.
    pub fast_open: bool,
    pub no_delay: bool,
    pub quick_ack: bool,
    /// `TCP_NOTSENT_LOWAT` in bytes; `None`: not set.
    pub notsent_lowat: Option<u32>,
    pub bypass: Vec<BypassRule>,
    /// Concurrent split flows; flows beyond it pass unsplit (counted, not dropped).
    pub max_flows: u32,
    /// Concurrent split flows of one client (the box: one source address; the POP: one peer);
    /// its further flows pass unsplit while other clients' flows are still split. `None`: the
    /// role's default (`DEFAULT_MAX_FLOWS_PER_HOST` / `_PER_PEER`).
    pub max_flows_per_client: Option<u32>,
    /// The POP: concurrent split flows of one address behind a peer (`None`: the default per
    /// host). The box's hosts are its clients (`MaxFlowsPerClient`).
    pub max_flows_per_host: Option<u32>,
    pub idle_timeout: Duration,
    /// A split flow whose satellite segment hears nothing from the far PEP this long while
    /// it waits on it (unacknowledged data, unanswered keepalive probes) is reset both ways.
    pub dead_peer_timeout: Duration,
    /// The server sees the POP's address instead of the user's.
    pub snat: bool,
    /// Relay buffer per direction per flow, bytes.
    pub flow_buffer: u32,
    /// TPROXY listener port.
    pub proxy_port: u16,
    /// Ingress interfaces to intercept on; empty: the daemon's default (LAN side / tunnel).
    pub intercept: Vec<String>,
    /// Destination prefixes to intercept; empty: all destinations routed through the tunnel.
    pub destinations: Vec<IpNet>,
    /// The window controller (used with `Mode = starpep`).
    pub starpep: Starpep,
}

impl Pep {
    pub const DEFAULT_LINK_RATE_BPS: u64 = 100_000_000;
    pub const DEFAULT_LINK_RTT: Duration = Duration::from_millis(600);
    pub const DEFAULT_MAX_FLOWS: u32 = 4096;
    /// `MaxFlowsPerClient` of the box (per LAN host): a sixteenth of the default table, and
    /// several times what a browser opens.
    pub const DEFAULT_MAX_FLOWS_PER_HOST: u32 = 256;
    /// `MaxFlowsPerClient` of the POP (per peer, i.e. per customer box): four box hosts' worth.
    pub const DEFAULT_MAX_FLOWS_PER_PEER: u32 = 1024;
    pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);
    pub const DEFAULT_DEAD_PEER_TIMEOUT: Duration = Duration::from_secs(60);
    pub const DEFAULT_FLOW_BUFFER: u32 = 256 * 1024;
    pub const MIN_FLOW_BUFFER: u32 = 16 * 1024;
    pub const DEFAULT_PROXY_PORT: u16 = 8399;
    /// Lower bound of the computed segment buffer.
    pub const MIN_SEGMENT_BUFFER: u64 = 64 * 1024;
    /// Upper bound of the computed segment buffer (and of `SndBuf`/`RcvBuf`).
    pub const MAX_SEGMENT_BUFFER: u64 = 1 << 30;

    /// Bandwidth-delay product of the satellite link in bytes.
    pub fn bdp_bytes(&self) -> u64 {
        let bits = self.link_rate_bps as u128 * self.link_rtt.as_nanos() / 1_000_000_000;
        (bits / 8).min(u64::MAX as u128) as u64
    }

    /// Default satellite-segment socket buffer: 2 × BDP, within 64 KiB..1 GiB.
    pub fn segment_buffer_bytes(&self) -> u64 {
        self.bdp_bytes()
            .saturating_mul(2)
            .clamp(Self::MIN_SEGMENT_BUFFER, Self::MAX_SEGMENT_BUFFER)
    }

    /// `SndBuf`, or the computed default.
    pub fn snd_buf_bytes(&self) -> u64 {
        self.snd_buf.unwrap_or_else(|| self.segment_buffer_bytes())
    }

    /// `RcvBuf`, or the computed default: twice the send side's, 4 × BDP. The receiving end
    /// of the satellite segment must never be what limits it: `LinkRate` is a mean the link
    /// exceeds for seconds at a time, and its RTT grows with its queue. (With 2 × BDP of the
    /// Starlink trace's mean the POP's satellite socket was receive-window limited 22 % of a
    /// download, at the trace's peaks.) The relay reads it at LAN speed, so the room is
    /// rarely used.
    pub fn rcv_buf_bytes(&self) -> u64 {
        self.rcv_buf
            .unwrap_or_else(|| self.segment_buffer_bytes().saturating_mul(2))
            .min(Self::MAX_SEGMENT_BUFFER)
    }

    /// Whether TCP to `dst:port` is excluded from splitting by a `Bypass` rule.
    pub fn bypassed(&self, dst: std::net::IpAddr, port: u16) -> bool {
        self.bypass.iter().any(|r| match *r {
            BypassRule::Port(p) => p == port,
            BypassRule::Ports(lo, hi) => (lo..=hi).contains(&port),
            BypassRule::Prefix(net) => net.contains(&dst),
        })
    }
}

impl Default for Pep {
    /// The values of an empty `[PEP]` section.
    fn default() -> Self {
        Self {
            line: 0,
            mode: PepMode::Starpep,
            tunnel: TunnelMode::WireGuard,
            congestion: Congestion::Bbr,
            lan_congestion: None,
            link_rate_bps: Self::DEFAULT_LINK_RATE_BPS,
            link_rtt: Self::DEFAULT_LINK_RTT,
            link_rate_given: false,
            snd_buf: None,
            rcv_buf: None,
            init_cwnd: None,
            resume: true,
            fast_open: true,
            no_delay: true,
            quick_ack: false,
            notsent_lowat: None,
            bypass: Vec::new(),
            max_flows: Self::DEFAULT_MAX_FLOWS,
            max_flows_per_client: None,
            max_flows_per_host: None,
            idle_timeout: Self::DEFAULT_IDLE_TIMEOUT,
            dead_peer_timeout: Self::DEFAULT_DEAD_PEER_TIMEOUT,
            snat: false,
            flow_buffer: Self::DEFAULT_FLOW_BUFFER,
            proxy_port: Self::DEFAULT_PROXY_PORT,
            intercept: Vec::new(),
            destinations: Vec::new(),
            starpep: Starpep::default(),
        }
    }
}
