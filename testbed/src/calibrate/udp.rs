//! Calibration traffic: a paced UDP sender and a recording receiver, with CLOCK_REALTIME stamps.
//!
//! Every datagram carries a sequence number and its send time; the receiver takes the kernel's
//! receive time (SO_TIMESTAMPNS). All namespaces share one clock, so `recv - sent` is the
//! one-way delay across the emulated link. Each side runs in a thread moved into its namespace.

use std::io::IoSliceMut;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

use nix::sys::socket::{recvmsg, setsockopt, sockopt, ControlMessageOwned, MsgFlags};

use super::CalError;
use crate::emu::sys;

const MAGIC: u32 = 0x5350_434c; // "SPCL"
/// Bytes of header a calibration datagram carries: magic, flow, seq, send time.
pub const HEADER: usize = 24;
/// IPv4 + UDP header bytes around a payload: the link model charges the IP packet.
pub const IP_OVERHEAD: usize = 20 + 8;

/// How a sender paces its datagrams.
#[derive(Debug, Clone)]
pub struct SendPlan {
    pub bind: SocketAddr,
    pub dst: SocketAddr,
    pub flow: u32,
    /// UDP payload bytes (≥ HEADER).
    pub payload: usize,
    /// Time between datagrams.
    pub interval: Duration,
    /// UNIX time of the first datagram.
    pub first_unix: Duration,
    pub count: u64,
    /// Wake up at most this often (datagrams that fell due meanwhile go out as a burst).
    pub min_sleep: Duration,
}

/// What a sender did.
#[derive(Debug, Clone, Copy, Default)]
pub struct SendReport {
    pub sent: u64,
    pub errors: u64,
}

/// One datagram as the receiver saw it (times in ns since the UNIX epoch).
#[derive(Debug, Clone, Copy)]
pub struct Rx {
    pub flow: u32,
    pub seq: u64,
    pub sent_ns: u64,
    pub recv_ns: u64,
    pub len: usize,
}

impl Rx {
    pub fn owd(&self) -> Duration {
        Duration::from_nanos(self.recv_ns.saturating_sub(self.sent_ns))
    }
}

/// Runs `f` in a new thread inside the network namespace `ns` (`/run/netns/NAME`).
pub fn in_netns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> Result<T, CalError> + Send + 'static,
) -> JoinHandle<Result<T, CalError>> {
    let path = PathBuf::from("/run/netns").join(ns);
    let ns = ns.to_string();
    std::thread::spawn(move || {
        sys::enter_netns(&path).map_err(|source| CalError::Io {
            what: format!("enter netns {ns}"),
            source,
        })?;
        f()
    })
}

/// Waits for a thread started with [`in_netns`].
pub fn join<T>(h: JoinHandle<Result<T, CalError>>, what: &str) -> Result<T, CalError> {
    h.join()
        .map_err(|_| CalError::Measure(format!("{what}: thread panicked")))?
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> CalError {
    move |source| CalError::Io { what, source }
}

/// Sends `plan.count` stamped datagrams on schedule (the caller's thread, current namespace).
pub fn send(plan: &SendPlan) -> Result<SendReport, CalError> {
    let sock = UdpSocket::bind(plan.bind).map_err(io(format!("bind udp {}", plan.bind)))?;
    let mut buf = vec![0u8; plan.payload.max(HEADER)];
    buf[0..4].copy_from_slice(&MAGIC.to_be_bytes());
    buf[4..8].copy_from_slice(&plan.flow.to_be_bytes());
    let _ = sys::set_precise_timers();
    let mut rep = SendReport::default();
    let mut next = plan.first_unix;
    sys::sleep_until_realtime(next);
    while rep.sent + rep.errors < plan.count {
        let now = sys::realtime_now();
        while next <= now && rep.sent + rep.errors < plan.count {
            let seq = rep.sent + rep.errors;
            buf[8..16].copy_from_slice(&seq.to_be_bytes());
            let stamp = sys::realtime_now().as_nanos() as u64;
            buf[16..24].copy_from_slice(&stamp.to_be_bytes());
            match sock.send_to(&buf, plan.dst) {
                Ok(_) => rep.sent += 1,
                Err(_) => rep.errors += 1,
            }
            next += plan.interval;
        }
        sys::sleep_until_realtime(next.max(now + plan.min_sleep));
    }
    Ok(rep)
}

/// A bound receiver; [`Receiver::run`] records datagrams until a deadline or a count.
pub struct Receiver {
    sock: UdpSocket,
}

impl Receiver {
    pub fn bind(addr: SocketAddr) -> Result<Receiver, CalError> {
        let sock = UdpSocket::bind(addr).map_err(io(format!("bind udp {addr}")))?;
        stamp_receptions(&sock).map_err(io(format!("SO_TIMESTAMPNS on {addr}")))?;
        setsockopt(&sock, sockopt::RcvBufForce, &(32 << 20))
            .map_err(|e| io(format!("SO_RCVBUFFORCE on {addr}"))(e.into()))?;
        sock.set_read_timeout(Some(Duration::from_millis(50)))
            .map_err(io(format!("SO_RCVTIMEO on {addr}")))?;
        Ok(Receiver { sock })
    }

    /// Binds inside network namespace `ns` (the socket stays there when the thread ends).
    pub fn bind_in(ns: &str, addr: SocketAddr) -> Result<Receiver, CalError> {
        join(in_netns(ns, move || Receiver::bind(addr)), "bind receiver")
    }

    /// Records datagrams until CLOCK_REALTIME passes `until_unix` or `max` were received.
    pub fn run(&self, until_unix: Duration, max: usize) -> Result<Vec<Rx>, CalError> {
        let mut out = Vec::with_capacity(max.min(1 << 16));
        let mut buf = vec![0u8; 65536];
        while out.len() < max && sys::realtime_now() < until_unix {
            let Some((len, recv_ns)) =
                recv_stamped(&self.sock, &mut buf).map_err(io("recvmsg".into()))?
            else {
                continue;
            };
            if let Some(rx) = parse(&buf[..len], recv_ns) {
                out.push(rx);
            }
        }
        Ok(out)
    }
}

/// Turns on kernel receive stamps (SO_TIMESTAMPNS) for [`recv_stamped`].
pub fn stamp_receptions(sock: &UdpSocket) -> std::io::Result<()> {
    setsockopt(sock, sockopt::ReceiveTimestampns, &true).map_err(std::io::Error::from)
}

/// One datagram into `buf`: its length and its kernel receive time (CLOCK_REALTIME ns; the
/// time of the read if the socket gives no stamp). `None` when the socket's read timeout
/// passed or a signal interrupted the wait.
pub fn recv_stamped(sock: &UdpSocket, buf: &mut [u8]) -> std::io::Result<Option<(usize, u64)>> {
    let mut cmsg = nix::cmsg_space!(nix::sys::time::TimeSpec);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = match recvmsg::<()>(
        sock.as_raw_fd(),
        &mut iov,
        Some(&mut cmsg),
        MsgFlags::empty(),
    ) {
        Ok(m) => m,
        Err(nix::errno::Errno::EAGAIN) | Err(nix::errno::Errno::EINTR) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut recv_ns = 0u64;
    if let Ok(cm) = msg.cmsgs() {
        for c in cm {
            if let ControlMessageOwned::ScmTimestampns(ts) = c {
                recv_ns = Duration::from(ts).as_nanos() as u64;
            }
        }
    }
    if recv_ns == 0 {
        recv_ns = sys::realtime_now().as_nanos() as u64;
    }
    Ok(Some((msg.bytes, recv_ns)))
}

fn parse(b: &[u8], recv_ns: u64) -> Option<Rx> {
    if b.len() < HEADER || b[0..4] != MAGIC.to_be_bytes() {
        return None;
    }
    let u64_at = |i: usize| u64::from_be_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
    Some(Rx {
        flow: u32::from_be_bytes(b[4..8].try_into().unwrap_or([0; 4])),
        seq: u64_at(8),
        sent_ns: u64_at(16),
        recv_ns,
        len: b.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_round_trip_carries_seq_and_stamps() {
        let rx = Receiver::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let dst = rx.sock.local_addr().unwrap();
        let start = sys::realtime_now() + Duration::from_millis(20);
        let plan = SendPlan {
            bind: "127.0.0.1:0".parse().unwrap(),
            dst,
            flow: 7,
            payload: 100,
            interval: Duration::from_millis(1),
            first_unix: start,
            count: 20,
            min_sleep: Duration::from_micros(100),
        };
        let h = std::thread::spawn(move || send(&plan));
        let got = rx.run(start + Duration::from_secs(2), 20).unwrap();
        let rep = h.join().unwrap().unwrap();
        assert_eq!(rep.sent, 20);
        assert_eq!(got.len(), 20);
        for (i, r) in got.iter().enumerate() {
            assert_eq!((r.flow, r.seq, r.len), (7, i as u64, 100));
            assert!(r.recv_ns >= r.sent_ns && r.owd() < Duration::from_millis(100));
        }
    }

    #[test]
    fn foreign_datagrams_are_ignored() {
        assert!(parse(b"hello world, not ours at all!", 1).is_none());
    }
}
