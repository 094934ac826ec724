//! The StarPEP keys of `[PEP]` (pure data + defaults): the receive-window controller of the PEP
//! whose egress is the satellite link, and its reconfiguration schedule.
//!
//! Parsed by `starpep_parse.rs`; used only with `Mode = starpep` (the default of a `[PEP]`
//! section). Every key is documented in `configs/README.md`.

use std::path::PathBuf;
use std::time::Duration;

/// `Reconfig =`: when the satellite network reconfigures (handover, beam switch).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reconfig {
    /// No known schedule: steady-state control only.
    Off,
    /// Starlink: every 15 s, at seconds 12, 27, 42 and 57 of the UTC minute.
    #[default]
    Starlink,
    /// `ReconfigPeriod` and `ReconfigOffset`: instants `offset + k·period` since the UNIX epoch.
    Periodic,
}

/// `WindowControl =`: how the window reaches the sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WindowControl {
    /// eBPF where it loads, else the socket clamp (one log line says why).
    #[default]
    Auto,
    /// A tc egress program rewrites the window of the PEP's ACKs toward the sender.
    Ebpf,
    /// `TCP_WINDOW_CLAMP` on the sender-facing socket (re-applied every period).
    Clamp,
}

impl WindowControl {
    pub fn as_str(self) -> &'static str {
        match self {
            WindowControl::Auto => "auto",
            WindowControl::Ebpf => "ebpf",
            WindowControl::Clamp => "clamp",
        }
    }
}

/// `ProbeWindow =`: a number of segments (MSS of the flow) or a size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeWindow {
    Segments(u32),
    Bytes(u32),
}

impl ProbeWindow {
    /// In bytes for a flow whose segments are `mss` bytes.
    pub fn bytes(self, mss: u32) -> u32 {
        match self {
            ProbeWindow::Segments(n) => n.saturating_mul(mss.max(1)),
            ProbeWindow::Bytes(b) => b,
        }
    }
}

/// The StarPEP settings.
#[derive(Debug, Clone, PartialEq)]
pub struct Starpep {
    pub reconfig: Reconfig,
    /// Used with `Reconfig = periodic`.
    pub reconfig_period: Duration,
    pub reconfig_offset: Duration,
    /// EWMA weight of the newest queue sample (`Q̂ = αQ + (1−α)Q̂`), in (0, 1].
    pub alpha: f64,
    /// Window factor above `QueueHigh` (`W = βW_base`), in (0, 1].
    pub beta: f64,
    /// Queueing-delay thresholds of the PEP's queue (Q / R_down).
    pub queue_low: Duration,
    pub queue_high: Duration,
    /// Reconfiguration phases: guard before each instant, probe after it, then a linear recover.
    pub guard: Duration,
    pub probe: Duration,
    pub recover: Duration,
    pub probe_window: ProbeWindow,
    pub window_control: WindowControl,
    /// Target queueing delay of the satellite segment itself (its in-flight bytes are capped at
    /// `R_down × (base RTT + LinkQueue)`); `0` turns the cap off.
    pub link_queue: Duration,
    /// Per-tick record of every controlled flow (JSON lines), if set.
    pub control_log: Option<PathBuf>,
}

impl Starpep {
    pub const DEFAULT_ALPHA: f64 = 0.4;
    pub const DEFAULT_BETA: f64 = 0.8;
    pub const DEFAULT_QUEUE_LOW: Duration = Duration::from_millis(2);
    pub const DEFAULT_QUEUE_HIGH: Duration = Duration::from_millis(8);
    pub const DEFAULT_GUARD: Duration = Duration::from_millis(100);
    pub const DEFAULT_PROBE: Duration = Duration::from_millis(200);
    pub const DEFAULT_RECOVER: Duration = Duration::from_millis(300);
    pub const DEFAULT_PROBE_WINDOW: ProbeWindow = ProbeWindow::Segments(4);
    pub const DEFAULT_LINK_QUEUE: Duration = Duration::from_millis(15);
    /// Starlink's schedule: every 15 s, 12 s past each multiple of 15 s (UTC).
    pub const STARLINK_PERIOD: Duration = Duration::from_secs(15);
    pub const STARLINK_OFFSET: Duration = Duration::from_secs(12);

    /// `(period, offset)` of the schedule in use, or `None` with `Reconfig = off`.
    pub fn schedule(&self) -> Option<(Duration, Duration)> {
        match self.reconfig {
            Reconfig::Off => None,
            Reconfig::Starlink => Some((Self::STARLINK_PERIOD, Self::STARLINK_OFFSET)),
            Reconfig::Periodic => Some((self.reconfig_period, self.reconfig_offset)),
        }
    }
}

impl Default for Starpep {
    fn default() -> Self {
        Starpep {
            reconfig: Reconfig::Starlink,
            reconfig_period: Self::STARLINK_PERIOD,
            reconfig_offset: Self::STARLINK_OFFSET,
            alpha: Self::DEFAULT_ALPHA,
            beta: Self::DEFAULT_BETA,
            queue_low: Self::DEFAULT_QUEUE_LOW,
            queue_high: Self::DEFAULT_QUEUE_HIGH,
            guard: Self::DEFAULT_GUARD,
            probe: Self::DEFAULT_PROBE,
            recover: Self::DEFAULT_RECOVER,
            probe_window: Self::DEFAULT_PROBE_WINDOW,
            window_control: WindowControl::Auto,
            link_queue: Self::DEFAULT_LINK_QUEUE,
            control_log: None,
        }
    }
}
