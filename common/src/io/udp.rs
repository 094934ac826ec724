//! The outer UDP socket: one dual-stack socket for IPv4 and IPv6 peers, batched send and receive
//! (sendmmsg/recvmmsg) with UDP GSO trains on send and UDP GRO on receive.

use std::io::{self, IoSlice};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::Duration;

use nix::sys::socket::{setsockopt, sockopt};
use socket2::{Domain, Protocol, Socket, Type};

pub use super::sys::{OutMsg, RecvBatch, SendBatch};
use super::IoError;

/// Socket buffer size asked for (SO_*BUFFORCE: root bypasses net.core.*mem_max).
const SOCKET_BUFFER: usize = 4 << 20;

/// The bound outer socket.
pub struct Udp {
    sock: Socket,
    v6: bool,
    port: u16,
    /// Cleared after the kernel refused a GSO send (e.g. checksum offload off on the route).
    gso: AtomicBool,
    gro: bool,
}

impl Udp {
    /// Binds `[::]:port` dual-stack (IPv4 peers arrive v4-mapped); falls back to `0.0.0.0:port`
    /// when the namespace has no IPv6. Port 0 picks a free port. `fwmark` sets SO_MARK.
    pub fn bind(port: u16, fwmark: Option<u32>) -> Result<Udp, IoError> {
        Self::open(port, fwmark, None, false)
    }

    /// [`Udp::bind`] with a family (`Some(true)`: IPv6 dual-stack only, `Some(false)`: IPv4
    /// only, `None`: IPv6 else IPv4) and optionally SO_REUSEPORT (a member of a worker group,
    /// [`super::udp_group`]).
    pub(super) fn open(
        port: u16,
        fwmark: Option<u32>,
        v6: Option<bool>,
        reuseport: bool,
    ) -> Result<Udp, IoError> {
        let (sock, v6) = match v6 {
            Some(true) => (Self::socket(Domain::IPV6, port, reuseport)?, true),
            Some(false) => (Self::socket(Domain::IPV4, port, reuseport)?, false),
            None => match Self::socket(Domain::IPV6, port, reuseport) {
                Ok(s) => (s, true),
                Err(e6) => match Self::socket(Domain::IPV4, port, reuseport) {
                    Ok(s) => (s, false),
                    Err(_) => return Err(e6),
                },
            },
        };
        let what = |w: &str| format!("udp port {port}: {w}");
        if let Some(mark) = fwmark {
            sock.set_mark(mark)
                .map_err(|e| IoError::sys(what(&format!("SO_MARK {mark:#x}")), e))?;
        }
        // Large buffers so bursts of a fast sender are not dropped; best effort.
        let _ = setsockopt(&sock, sockopt::RcvBufForce, &SOCKET_BUFFER);
        let _ = setsockopt(&sock, sockopt::SndBufForce, &SOCKET_BUFFER);
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .map_err(|e| IoError::sys(what("SO_RCVTIMEO"), e))?;
        let gro = setsockopt(&sock, sockopt::UdpGroSegment, &true).is_ok();
        let port = sock
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map(|a| a.port())
            .unwrap_or(port);
        Ok(Udp {
            sock,
            v6,
            port,
            gso: AtomicBool::new(true),
            gro,
        })
    }

    fn socket(domain: Domain, port: u16, reuseport: bool) -> Result<Socket, IoError> {
        let addr: SocketAddr = if domain == Domain::IPV6 {
            (Ipv6Addr::UNSPECIFIED, port).into()
        } else {
            (Ipv4Addr::UNSPECIFIED, port).into()
        };
        let what = |w: &str| format!("bind udp {addr}: {w}");
        let s = Socket::new(domain, Type::DGRAM.cloexec(), Some(Protocol::UDP))
            .map_err(|e| IoError::sys(what("socket"), e))?;
        if domain == Domain::IPV6 {
            s.set_only_v6(false)
                .map_err(|e| IoError::sys(what("IPV6_V6ONLY"), e))?;
        }
        if reuseport {
            s.set_reuse_port(true)
                .map_err(|e| IoError::sys(what("SO_REUSEPORT"), e))?;
        }
        s.bind(&addr.into())
            .map_err(|e| IoError::sys(what("bind"), e))?;
        Ok(s)
    }

    /// The bound port (the chosen one when bound to port 0).
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn is_v6(&self) -> bool {
        self.v6
    }

    /// Whether UDP GSO trains are still used for sending.
    pub fn gso_enabled(&self) -> bool {
        self.gso.load(Relaxed)
    }

    /// Whether the kernel may hand us GRO-coalesced trains (see [`RecvBatch::gro_segment`]).
    pub fn gro_enabled(&self) -> bool {
        self.gro
    }

    /// A send batch sized for this socket.
    pub fn send_batch(&self, n: usize) -> SendBatch {
        SendBatch::new(n, self.v6)
    }

    /// Sends one datagram (control traffic: handshakes, cookies, keepalives).
    pub fn send_to(&self, datagram: &[u8], to: SocketAddr) -> io::Result<usize> {
        let to = match (to, self.v6) {
            (SocketAddr::V4(a), true) => SocketAddr::new(a.ip().to_ipv6_mapped().into(), a.port()),
            (a, _) => a,
        };
        self.sock.send_to(datagram, &to.into())
    }

    /// Receives a batch (blocks up to 200 ms for the first datagram; `WouldBlock`/`TimedOut`
    /// when none came).
    pub fn recv(&self, batch: &mut RecvBatch, bufs: &mut [Vec<u8>]) -> io::Result<usize> {
        batch.recv(self.sock.as_fd(), bufs)
    }

    /// Sends every message of `msgs`, retrying partial batches. A message the kernel refuses
    /// is dropped (counted in the return value's second field); a refused GSO train disables
    /// GSO and is resent as single datagrams. Returns (datagrams sent, datagrams dropped).
    pub fn send_all(
        &self,
        batch: &mut SendBatch,
        segs: &[IoSlice<'_>],
        msgs: &mut [OutMsg],
    ) -> (usize, usize) {
        let (mut sent, mut dropped) = (0, 0);
        let mut i = 0;
        while i < msgs.len() {
            let end = (i + batch.capacity()).min(msgs.len());
            match batch.send(self.sock.as_fd(), segs, &msgs[i..end]) {
                Ok(n) => {
                    sent += msgs[i..i + n].iter().map(|m| m.count).sum::<usize>();
                    i += n;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let m = msgs[i];
                    if m.gso.is_some() && matches!(e.raw_os_error(), Some(libc::EIO | libc::EINVAL))
                    {
                        if self.gso.swap(false, Relaxed) {
                            tracing::info!("UDP GSO refused ({e}); sending single datagrams");
                        }
                        let (s, d) = self.send_singly(segs, &m);
                        sent += s;
                        dropped += d;
                    } else {
                        tracing::debug!(to = %m.to, "udp send: {e}");
                        dropped += m.count;
                    }
                    i += 1;
                }
            }
        }
        (sent, dropped)
    }

    fn send_singly(&self, segs: &[IoSlice<'_>], m: &OutMsg) -> (usize, usize) {
        let (mut sent, mut dropped) = (0, 0);
        for s in &segs[m.first..m.first + m.count] {
            match self.send_to(s, m.to) {
                Ok(_) => sent += 1,
                Err(_) => dropped += 1,
            }
        }
        (sent, dropped)
    }
}

impl AsFd for Udp {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4_loopback(port: u16) -> SocketAddr {
        (Ipv4Addr::LOCALHOST, port).into()
    }

    #[test]
    fn dual_stack_socket_talks_to_ipv4_peers() {
        let a = Udp::bind(0, None).unwrap();
        let b = Udp::bind(0, None).unwrap();
        assert_ne!(a.port(), 0);
        a.send_to(b"ping", v4_loopback(b.port())).unwrap();
        let mut batch = RecvBatch::new(4);
        let mut bufs = vec![vec![0u8; 65536]; 4];
        let n = b.recv(&mut batch, &mut bufs).unwrap();
        assert_eq!(n, 1);
        assert_eq!(&bufs[0][..batch.len(0)], b"ping");
        let from = crate::tunnel::peer::canonical(batch.addr(0).unwrap());
        assert_eq!(from, v4_loopback(a.port()));
    }

    #[test]
    fn gso_trains_arrive_whole_or_as_datagrams() {
        let a = Udp::bind(0, None).unwrap();
        let b = Udp::bind(0, None).unwrap();
        let payload: Vec<Vec<u8>> = (0..5u8)
            .map(|i| vec![i; if i == 4 { 50 } else { 100 }])
            .collect();
        let segs: Vec<IoSlice> = payload.iter().map(|p| IoSlice::new(p)).collect();
        let mut msgs = [OutMsg {
            to: v4_loopback(b.port()),
            first: 0,
            count: 5,
            gso: Some(100),
        }];
        let mut sb = a.send_batch(4);
        assert_eq!(a.send_all(&mut sb, &segs, &mut msgs), (5, 0));
        let mut batch = RecvBatch::new(8);
        let mut bufs = vec![vec![0u8; 65536]; 8];
        let mut got: Vec<Vec<u8>> = Vec::new();
        while got.len() < 5 {
            let n = b.recv(&mut batch, &mut bufs).unwrap();
            for i in 0..n {
                let data = &bufs[i][..batch.len(i)];
                let seg = batch.gro_segment(i).unwrap_or(data.len());
                got.extend(data.chunks(seg).map(|c| c.to_vec()));
            }
        }
        assert_eq!(got, payload);
    }
}
