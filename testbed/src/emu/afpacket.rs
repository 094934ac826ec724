//! AF_PACKET ports of the `sat` namespace: a capture socket and an inject socket per interface.
//!
//! Each direction owns the capture socket of its ingress interface and the inject socket of its
//! egress interface, so the two pump threads never share a descriptor.

use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use super::sys::{self, RxFrame};
use super::EmuError;

/// Kernel socket buffers: ~16 MiB absorbs a 100 ms stall at 1 Gbit/s.
const SOCK_BUF: usize = 16 << 20;
/// Room above the MTU for the Ethernet header and a VLAN tag.
const L2_OVERHEAD: usize = 14 + 4;

/// Captures every frame arriving on one interface (not the ones sent there).
pub struct RxPort {
    fd: OwnedFd,
    ifname: String,
}

/// Injects frames on one interface, as if they had just arrived over the wire.
pub struct TxPort {
    fd: OwnedFd,
    ifname: String,
}

fn io_err(what: String) -> impl FnOnce(std::io::Error) -> EmuError {
    move |source| EmuError::Io { what, source }
}

/// The frame buffer size needed for `ifname` (MTU + L2 header), at least 2048 bytes.
pub fn slot_size(ifname: &str) -> Result<usize, EmuError> {
    let mtu = sys::if_mtu(ifname).map_err(io_err(format!("SIOCGIFMTU {ifname}")))? as usize;
    Ok((mtu + L2_OVERHEAD).max(2048).next_multiple_of(64))
}

impl RxPort {
    pub fn open(ifname: &str) -> Result<RxPort, EmuError> {
        let idx = sys::if_index(ifname).map_err(io_err(format!("interface {ifname}")))?;
        let fd = sys::packet_socket(idx, true)
            .map_err(io_err(format!("AF_PACKET capture socket on {ifname}")))?;
        sys::set_ignore_outgoing(fd.as_fd())
            .map_err(io_err(format!("PACKET_IGNORE_OUTGOING on {ifname}")))?;
        sys::set_rcvbuf_force(fd.as_fd(), SOCK_BUF)
            .map_err(io_err(format!("SO_RCVBUFFORCE on {ifname}")))?;
        Ok(RxPort {
            fd,
            ifname: ifname.to_string(),
        })
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Non-blocking batch receive into `staging` (frame i at `i * slot`).
    pub fn recv(
        &self,
        staging: &mut [u8],
        slot: usize,
        out: &mut [RxFrame],
    ) -> Result<usize, EmuError> {
        sys::recv_batch(self.fd.as_fd(), staging, slot, out)
            .map_err(io_err(format!("recvmmsg on {}", self.ifname)))
    }

    /// Waits for a frame for at most `timeout`; true if one is waiting.
    pub fn wait(&self, timeout: Option<Duration>) -> Result<bool, EmuError> {
        sys::wait_readable(self.fd.as_fd(), timeout)
            .map_err(io_err(format!("ppoll on {}", self.ifname)))
    }

    /// Throws away whatever the kernel has queued (frames that arrived before the link was up).
    pub fn drain(&self, staging: &mut [u8], slot: usize) -> Result<u64, EmuError> {
        let mut out = [RxFrame::default(); sys::MAX_BATCH];
        let mut n = 0u64;
        loop {
            let got = self.recv(staging, slot, &mut out)?;
            if got == 0 {
                return Ok(n);
            }
            n += got as u64;
        }
    }
}

impl TxPort {
    pub fn open(ifname: &str) -> Result<TxPort, EmuError> {
        let idx = sys::if_index(ifname).map_err(io_err(format!("interface {ifname}")))?;
        let fd = sys::packet_socket(idx, false)
            .map_err(io_err(format!("AF_PACKET inject socket on {ifname}")))?;
        sys::set_sndbuf_force(fd.as_fd(), SOCK_BUF)
            .map_err(io_err(format!("SO_SNDBUFFORCE on {ifname}")))?;
        // Best effort: without it frames pass the (empty) veth qdisc layer, which is harmless.
        let _ = sys::set_qdisc_bypass(fd.as_fd());
        Ok(TxPort {
            fd,
            ifname: ifname.to_string(),
        })
    }

    pub fn ifname(&self) -> &str {
        &self.ifname
    }

    /// Sends frames `i < lens.len()` from `staging`; returns how many the kernel accepted.
    pub fn send(&self, staging: &[u8], slot: usize, lens: &[usize]) -> Result<usize, EmuError> {
        sys::send_batch(self.fd.as_fd(), staging, slot, lens)
            .map_err(io_err(format!("sendmmsg on {}", self.ifname)))
    }
}
