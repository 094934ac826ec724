//! Window back-ends of the StarPEP controller: how the window `W` reaches the sender. One trait,
//! two implementations: the eBPF rewrite of our ACKs (`window_ebpf.rs`) and the socket clamp
//! here (`TCP_WINDOW_CLAMP`, re-applied every period because the kernel overwrites it).

use std::net::SocketAddr;
use std::os::fd::BorrowedFd;

use crate::pep::TcpInfo;

use super::error::ProxyError;
use super::sys;

/// The sender-facing socket of one controlled flow.
#[derive(Debug, Clone, Copy)]
pub struct Controlled<'a> {
    pub fd: BorrowedFd<'a>,
    /// Its local and remote addresses (the 4-tuple of the ACKs it sends).
    pub local: SocketAddr,
    pub remote: SocketAddr,
}

/// A way to make the sender see window `W`.
pub trait WindowBackend: Send + Sync {
    /// `ebpf` or `clamp` (what `show` reports).
    fn name(&self) -> &'static str;
    /// Applies `window` bytes to the flow; `info` is its TCP_INFO of this period.
    fn apply(&self, flow: &Controlled<'_>, info: &TcpInfo, window: u32) -> Result<(), ProxyError>;
    /// The flow ends: forget it.
    fn release(&self, flow: &Controlled<'_>);
    /// The window the socket itself advertises, when the back-end leaves it untouched (the
    /// controller never asks for more: a rewrite can only lower it).
    fn socket_window(&self, info: &TcpInfo) -> Option<u32>;
}

/// `TCP_WINDOW_CLAMP` (level IPPROTO_TCP, option 10).
const TCP_WINDOW_CLAMP: libc::c_int = 10;

/// The socket clamp: `TCP_WINDOW_CLAMP = W` after the handshake (the window scale was chosen at
/// the SYN from the unclamped buffer, so the clamp never caps the scale). The kernel rewrites
/// the clamp from the buffer size on autotuning and in `tcp_measure_rcv_mss`, so every period
/// reads it back and sets it again when it differs; SO_RCVBUF is locked by the shell and
/// `net.ipv4.tcp_shrink_window = 1` (set in the PEP's namespace) lets a lower clamp take
/// effect on the next ACK instead of after a window of data.
#[derive(Debug, Default)]
pub struct ClampBackend;

impl WindowBackend for ClampBackend {
    fn name(&self) -> &'static str {
        "clamp"
    }

    fn apply(&self, flow: &Controlled<'_>, _info: &TcpInfo, window: u32) -> Result<(), ProxyError> {
        let want = window.min(i32::MAX as u32) as i32;
        let now = sys::get_int(flow.fd, libc::IPPROTO_TCP, TCP_WINDOW_CLAMP)
            .map_err(|e| ProxyError::sys("read TCP_WINDOW_CLAMP", e))?;
        if now != want {
            sys::set_int(flow.fd, libc::IPPROTO_TCP, TCP_WINDOW_CLAMP, want)
                .map_err(|e| ProxyError::sys(format!("TCP_WINDOW_CLAMP {want}"), e))?;
        }
        Ok(())
    }

    fn release(&self, _flow: &Controlled<'_>) {}

    fn socket_window(&self, _info: &TcpInfo) -> Option<u32> {
        // The socket's own window is the clamp itself: it is no bound on the next one.
        None
    }
}
