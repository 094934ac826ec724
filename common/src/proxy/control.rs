//! StarPEP in the proxy shell: every period, one controlled flow's sockets and relay are
//! sampled, its [`Controller`] runs, and the decision is applied: the window through the
//! back-end, the sender-facing receive buffer, the satellite socket's send buffer (its in-flight
//! cap) and low-water mark, and the relay's size in the controlled direction.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::os::fd::AsFd;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use nix::sys::socket::{setsockopt, sockopt};
use socket2::Socket;

use crate::pep::starpep::{ControlRecord, Controller, Decision, FlowSamples, SatSample, UpSample};
use crate::pep::{hysteresis, BbrInfo, Dir, StarpepPlan, TcpInfo};

use super::error::ProxyError;
use super::pump::FlowIo;
use super::sockopt::{congestion_name, restart_congestion};
use super::sys;
use super::tcp_info::{self, info};
use super::window::{Controlled, WindowBackend};

/// The controllers' clock: UNIX time (so `Reconfig = starlink` meets the satellite's UTC
/// schedule) advanced by the monotonic clock (so a wall-clock step never jumps a phase).
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    unix0: Duration,
    mono0: Instant,
}

impl Clock {
    pub fn new() -> Clock {
        Clock {
            unix0: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default(),
            mono0: Instant::now(),
        }
    }

    pub fn now(&self) -> Duration {
        self.unix0 + self.mono0.elapsed()
    }

    /// The monotonic instant of clock time `t`.
    pub fn instant(&self, t: Duration) -> Instant {
        self.mono0 + t.saturating_sub(self.unix0)
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

/// The per-tick record file (`ControlLog`): one JSON line per controlled flow per tick.
pub struct ControlLog {
    out: Mutex<(BufWriter<File>, Instant)>,
}

/// The log is flushed at least this often (and when the PEP stops).
const LOG_FLUSH: Duration = Duration::from_millis(200);

impl ControlLog {
    pub fn create(path: &Path) -> Result<ControlLog, ProxyError> {
        let f = File::options()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| ProxyError::sys(format!("open ControlLog {}", path.display()), e))?;
        Ok(ControlLog {
            out: Mutex::new((BufWriter::with_capacity(1 << 16, f), Instant::now())),
        })
    }

    pub fn write(&self, r: &ControlRecord) {
        let Ok(line) = serde_json::to_string(r) else {
            return;
        };
        let mut g = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let (w, last) = &mut *g;
        let _ = writeln!(w, "{line}");
        if last.elapsed() >= LOG_FLUSH {
            let _ = w.flush();
            *last = Instant::now();
        }
    }

    pub fn flush(&self) {
        let mut g = self.out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = g.0.flush();
    }
}

impl Drop for ControlLog {
    fn drop(&mut self) {
        self.flush();
    }
}

/// Buffer sizes are in skb memory (truesize), the controller's bounds in payload bytes: each
/// socket's ratio of the two is measured (`SO_MEMINFO` against SIOCOUTQ / SIOCINQ) and
/// smoothed; these are the starting values and the bounds.
/// (Receive skbs of one segment each weigh 3–5 times their payload here: a receive buffer
/// sized in payload bytes overflows, and the kernel drops what it had already let in.)
const SEND_OVERHEAD0: f64 = 1.1;
const RECV_OVERHEAD0: f64 = 4.0;
const OVERHEAD_MAX: f64 = 8.0;
/// Queues shorter than this say little about the overhead.
const OVERHEAD_MIN_SAMPLE: u32 = 4 * 1024;
/// EWMA gain of the overhead ratios per tick.
const OVERHEAD_GAIN: f64 = 0.05;
/// The smallest `SO_RCVBUF` the controller sets (the kernel doubles it).
const MIN_RCVBUF: u32 = 16 * 1024;
/// The controlled direction's relay size: the satellite socket's low-water mark, at least this.
const MIN_RELAY: u32 = 8 * 1024;
/// BBR: the controller pre-empts its ProbeRTT, and careful resume restarts it after a jump.
pub(super) const BBR: &str = "bbr";

fn smooth(k: &mut f64, mem: u32, payload: u32) {
    if payload >= OVERHEAD_MIN_SAMPLE && mem > 0 {
        let x = (mem as f64 / payload as f64).clamp(1.0, OVERHEAD_MAX);
        *k += OVERHEAD_GAIN * (x - *k);
    }
}

/// A buffer value is rewritten only when it moves by more than an eighth.
fn moved(last: Option<u32>, new: u32) -> bool {
    last.is_none_or(|l| hysteresis::moved(l.into(), new.into()))
}

/// The sender-facing socket's `SO_RCVBUF` (the value set; the kernel doubles it): `want`, but a
/// lowering stops at `floor` (what the kernel already let the sender send, in the same units).
/// `current` is the buffer as it is: the last value set, else the kernel's own (autotuned), so
/// the first lowering keeps the floor too.
fn receive_buffer(want: u32, floor: u32, current: Option<u32>) -> u32 {
    match current {
        Some(last) if want < last => want.max(floor).min(last),
        _ => want,
    }
}

/// One controlled flow.
pub struct FlowControl {
    ctl: Controller,
    dir: Dir,
    /// `None`: observe only (`Mode = split` with a `ControlLog`).
    backend: Option<Arc<dyn WindowBackend>>,
    flow: u64,
    client: SocketAddr,
    server: SocketAddr,
    local: SocketAddr,
    remote: SocketAddr,
    max_relay: usize,
    last_received: u64,
    rcv_buf: Option<u32>,
    snd_buf: Option<u32>,
    lowat: Option<u32>,
    window: Option<u32>,
    send_overhead: f64,
    recv_overhead: f64,
    warned: bool,
    /// The satellite socket's congestion control (read once).
    sat_cc: Option<String>,
}

impl FlowControl {
    /// The controller of an established flow; `None` if its sender-facing socket has no
    /// addresses (it is already gone).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        plan: &StarpepPlan,
        backend: Option<Arc<dyn WindowBackend>>,
        io: &FlowIo,
        flow: u64,
        client: SocketAddr,
        server: SocketAddr,
        max_relay: usize,
        now: Duration,
    ) -> Option<FlowControl> {
        let s = io.sock(plan.dir.source()).get_ref();
        let local = s.local_addr().ok()?.as_socket()?;
        let remote = s.peer_addr().ok()?.as_socket()?;
        Some(FlowControl {
            ctl: Controller::new(plan.params.clone(), now),
            dir: plan.dir,
            backend,
            flow,
            client,
            server,
            local,
            remote,
            max_relay,
            last_received: 0,
            rcv_buf: None,
            snd_buf: None,
            lowat: None,
            window: None,
            send_overhead: SEND_OVERHEAD0,
            recv_overhead: RECV_OVERHEAD0,
            warned: false,
            sat_cc: Some(congestion_name(io.sock(plan.dir.sink()).get_ref())),
        })
    }

    /// What the controller measured of the satellite segment (rate, base RTT), once filled.
    pub fn measured(&self) -> Option<(f64, Duration)> {
        self.ctl.measured()
    }

    /// When the next tick is due (clock time).
    pub fn deadline(&self) -> Duration {
        self.ctl.next_deadline()
    }

    fn controlled<'a>(&self, s: &'a Socket) -> Controlled<'a> {
        Controlled {
            fd: s.as_fd(),
            local: self.local,
            remote: self.remote,
        }
    }

    /// The flow's careful-resume jump retreated: see [`Controller::on_start_refuted`].
    pub fn on_start_refuted(&mut self, rate: f64) {
        self.ctl.on_start_refuted(rate);
    }

    /// One period: sample, decide, apply. Returns the record of this tick.
    pub fn tick(&mut self, io: &FlowIo, now: Duration) -> ControlRecord {
        let sender = io.sock(self.dir.source()).get_ref();
        let sat = io.sock(self.dir.sink()).get_ref();
        let up_info = info(sender);
        let sat_info = info(sat);
        let unread = sys::unread_bytes(sender.as_fd()).unwrap_or(0);
        let outq = sys::unacked_and_unsent(sat.as_fd()).unwrap_or(0);
        if let Ok(m) = sys::mem_info(sat.as_fd()) {
            smooth(&mut self.send_overhead, m.wmem_queued, outq);
        }
        let sender_mem = sys::mem_info(sender.as_fd()).ok();
        if let Some(m) = sender_mem {
            smooth(&mut self.recv_overhead, m.rmem_alloc, unread);
        }
        let notsent = sat_info.and_then(|i| i.notsent_bytes).unwrap_or(0);
        let pipe = io.with_relay(|r| r.buffered(self.dir)) as u32;
        let received = up_info.and_then(|i| i.bytes_received).unwrap_or(0);
        let active = received != self.last_received || unread > 0 || pipe > 0;
        self.last_received = received;
        let samples = FlowSamples {
            unread,
            pipe,
            notsent,
            active,
            sat: sat_info.map(|i| SatSample {
                delivered: i.delivered_bytes().unwrap_or(0),
                delivery_rate: i.delivery_rate.unwrap_or(0),
                app_limited: i.app_limited,
                srtt_us: i.rtt_us,
                min_rtt_us: i.min_rtt_us.unwrap_or(0),
                mss: i.snd_mss,
                inflight: outq.saturating_sub(notsent),
                recovering: i.ca_state >= 3,
                lost_bytes: i.lost.saturating_mul(i.snd_mss),
                sacked_bytes: i.sacked.saturating_mul(i.snd_mss),
                bbr: self.bbr_info(sat),
                acks: i.segs_in.unwrap_or(0),
            }),
            up: up_info.map(|i| UpSample {
                rcv_rtt_us: i.rcv_rtt_us,
                rtt_us: i.rtt_us,
                rcv_mss: i.rcv_mss,
                max_window: self.backend.as_ref().and_then(|b| b.socket_window(&i)),
            }),
        };
        let d = self.ctl.on_samples(now, &samples);
        // Writes toward the satellite end on its segments' boundaries (an observer changes
        // nothing).
        if let (Some(i), Some(_)) = (sat_info, &self.backend) {
            io.segment[self.dir as usize].store(i.snd_mss, std::sync::atomic::Ordering::Relaxed);
        }
        // An observer (`Mode = split` with a ControlLog) changes nothing.
        if d.restart_cc && self.backend.is_some() {
            self.restart_cc(sat);
        }
        let name = match &self.backend {
            Some(b) => {
                let b = b.clone();
                if let Err(e) = self.apply(io, &*b, up_info.as_ref(), sender_mem, &d) {
                    if !self.warned {
                        tracing::warn!("window control: {e}");
                        self.warned = true;
                    }
                }
                b.name()
            }
            None => "none",
        };
        ControlRecord::new(now, self.flow, self.client, self.server, name, &d, &samples)
    }

    fn apply(
        &mut self,
        io: &FlowIo,
        backend: &dyn WindowBackend,
        up: Option<&TcpInfo>,
        mem: Option<sys::MemInfo>,
        d: &Decision,
    ) -> Result<(), ProxyError> {
        let (Some(w), Some(up)) = (d.window, up) else {
            return Ok(());
        };
        let sender = io.sock(self.dir.source()).get_ref();
        let sat = io.sock(self.dir.sink()).get_ref();
        if let Some(lowat) = d.sat_lowat {
            if moved(self.lowat, lowat) {
                sat.set_tcp_notsent_lowat(lowat)
                    .map_err(|e| ProxyError::sys(format!("TCP_NOTSENT_LOWAT {lowat}"), e))?;
                self.lowat = Some(lowat);
                let relay = (lowat.max(MIN_RELAY) as usize).min(self.max_relay);
                io.with_relay(|r| r.set_cap(self.dir, relay));
                io.unsent_limit[self.dir as usize]
                    .store(lowat, std::sync::atomic::Ordering::Relaxed);
            }
        }
        if let (Some(cap), Some(lowat)) = (d.link_cap, self.lowat) {
            // The kernel doubles SO_SNDBUF.
            let want = ((cap as f64 + lowat as f64) * self.send_overhead / 2.0) as u32;
            if moved(self.snd_buf, want) {
                setsockopt(&sat.as_fd(), sockopt::SndBufForce, &(want as usize))
                    .map_err(|e| ProxyError::sys(format!("SO_SNDBUFFORCE {want}"), e.into()))?;
                self.snd_buf = Some(want);
            }
        }
        if let Some(rb) = d.rcv_buf {
            // In skb memory (the kernel doubles SO_RCVBUF), with one more window of room: the
            // kernel sizes its window with its own estimate of the payload/memory ratio, and a
            // segment that overshoots is dropped (the sender then waits for a 200 ms RTO).
            let want = (((rb as f64 + w as f64) * self.recv_overhead / 2.0) as u32).max(MIN_RCVBUF);
            // Lowering it below what the kernel already let the sender send would drop those
            // segments (and a 200 ms RTO would stall the sender): the buffer never goes below
            // what is queued plus the window last advertised. The sender saw at most the
            // window we last applied beyond the last ACK: under the eBPF rewrite the kernel's
            // own window is larger, but `tcp_shrink_window = 1` (`netcfg.rs`) makes its right
            // edge follow the buffer. Before any application (the first one), the window the
            // handshake's ACK granted.
            let seen = up.rcv_wnd.unwrap_or(0).min(self.window.unwrap_or(u32::MAX));
            let promised =
                mem.map_or(0, |m| m.rmem_alloc) as f64 + seen as f64 * self.recv_overhead;
            let floor = (promised / 2.0) as u32;
            let current = self.rcv_buf.or(mem.map(|m| m.rcvbuf / 2));
            let rb = receive_buffer(want, floor, current);
            if moved(self.rcv_buf, rb) {
                tracing::trace!(
                    rb,
                    want,
                    floor,
                    rmem = mem.map_or(0, |m| m.rmem_alloc),
                    rcv_wnd = up.rcv_wnd,
                    received = up.bytes_received,
                    w,
                    overhead = self.recv_overhead,
                    "receive buffer"
                );
                setsockopt(&sender.as_fd(), sockopt::RcvBufForce, &(rb as usize))
                    .map_err(|e| ProxyError::sys(format!("SO_RCVBUFFORCE {rb}"), e.into()))?;
                self.rcv_buf = Some(rb);
            }
        }
        backend.apply(&self.controlled(sender), up, w)?;
        self.window = Some(w);
        Ok(())
    }

    /// BBR's figures, if the satellite socket runs BBR.
    fn bbr_info(&self, sat: &Socket) -> Option<BbrInfo> {
        if self.sat_cc.as_deref() != Some(BBR) {
            return None;
        }
        tcp_info::bbr(sat)
    }

    /// Re-initialises BBR on the satellite socket: its min-RTT filter restarts and cwnd stays
    /// (`probe_rtt.rs`).
    fn restart_cc(&mut self, sat: &Socket) {
        if let Err(e) = restart_congestion(sat, BBR) {
            if !self.warned {
                tracing::warn!("restarting BBR on the satellite segment: {e}");
                self.warned = true;
            }
            // Never try again on this flow: the socket may be left on another CC.
            self.sat_cc = None;
        }
    }

    /// The flow ends: the back-end forgets it.
    pub fn release(&self, io: &FlowIo) {
        let s = io.sock(self.dir.source()).get_ref();
        if let Some(b) = &self.backend {
            b.release(&self.controlled(s));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::receive_buffer;

    #[test]
    fn a_lowering_stops_at_what_the_sender_was_let_send() {
        assert_eq!(receive_buffer(20_000, 37_000, Some(65_536)), 37_000);
        assert_eq!(receive_buffer(40_000, 37_000, Some(65_536)), 40_000);
    }

    #[test]
    fn the_first_lowering_from_the_kernels_own_buffer_keeps_the_floor() {
        // The handshake granted 64 KB and the server's answer is arriving: the kernel's buffer
        // stays until the floor lets it go.
        assert_eq!(receive_buffer(16_384, 129_024, Some(65_536)), 65_536);
        assert_eq!(receive_buffer(16_384, 0, Some(65_536)), 16_384);
    }

    #[test]
    fn a_raise_is_never_held_back_by_the_floor() {
        assert_eq!(receive_buffer(90_000, 10_000, Some(65_536)), 90_000);
        assert_eq!(receive_buffer(90_000, 200_000, None), 90_000);
        assert_eq!(receive_buffer(10_000, 200_000, None), 10_000);
    }
}
