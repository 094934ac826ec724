//! owd-bulk socket shell: address resolution, the one connection of a run (listen + accept one,
//! or connect), socket options, waiting for readiness against the transfer deadline, the clock.

use super::OwdError;
use nix::poll::{poll, PollFd, PollFlags};
use socket2::{Domain, Protocol, SockRef, Socket, Type};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::AsFd;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// CLOCK_REALTIME in ns (the clock every namespace of the machine shares).
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// Where the connection of a run comes from.
#[derive(Debug)]
pub enum Endpoint {
    /// Accept one connection on this (bound, listening) socket, then close it.
    Listen(TcpListener),
    /// Connect to this address.
    Connect(SocketAddr),
}

/// The whole transfer's deadline (connection set-up included).
#[derive(Debug, Clone, Copy)]
pub struct Deadline {
    at: Instant,
    total: Duration,
}

impl Deadline {
    /// A deadline `total` from now.
    pub fn after(total: Duration) -> Self {
        Self {
            at: Instant::now() + total,
            total,
        }
    }

    fn remaining(&self, what: &str) -> Result<Duration, OwdError> {
        let left = self.at.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(OwdError::Timeout {
                what: what.to_string(),
                after: self.total,
            });
        }
        Ok(left)
    }
}

/// Resolves `ADDR:PORT` (`[v6]:port` for IPv6) to the first address.
pub fn resolve(s: &str) -> Result<SocketAddr, OwdError> {
    s.to_socket_addrs()
        .map_err(|e| OwdError::io(format!("resolve {s}"), e))?
        .next()
        .ok_or_else(|| OwdError::Usage(format!("{s}: no address")))
}

/// Binds and listens on `addr` (SO_REUSEADDR, backlog 1).
pub fn listen(addr: SocketAddr) -> Result<TcpListener, OwdError> {
    let what = || format!("listen tcp {addr}");
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| OwdError::io(what(), e))?;
    s.set_reuse_address(true)
        .map_err(|e| OwdError::io(what(), e))?;
    s.bind(&addr.into()).map_err(|e| OwdError::io(what(), e))?;
    s.listen(1).map_err(|e| OwdError::io(what(), e))?;
    Ok(s.into())
}

/// Establishes the run's connection; returns it (non-blocking) with the time it was
/// established (CLOCK_REALTIME ns: `accept` or `connect` returned).
pub fn establish(ep: Endpoint, dl: &Deadline) -> Result<(TcpStream, u64), OwdError> {
    let s = match ep {
        Endpoint::Listen(l) => {
            let local = l.local_addr().map_err(|e| OwdError::io("listener", e))?;
            let what = format!("accept on {local}");
            l.set_nonblocking(true)
                .map_err(|e| OwdError::io(what.clone(), e))?;
            loop {
                match l.accept() {
                    Ok((s, _)) => break s,
                    Err(e) if would_block(&e) => wait(&l, PollFlags::POLLIN, dl, &what)?,
                    Err(e) => return Err(OwdError::io(what, e)),
                }
            }
        }
        Endpoint::Connect(addr) => {
            let what = format!("connect tcp {addr}");
            let left = dl.remaining(&what)?;
            TcpStream::connect_timeout(&addr, left).map_err(|e| {
                if e.kind() == std::io::ErrorKind::TimedOut {
                    OwdError::Timeout {
                        what: what.clone(),
                        after: dl.total,
                    }
                } else {
                    OwdError::io(what.clone(), e)
                }
            })?
        }
    };
    let t = now_ns();
    tracing::debug!(local = ?s.local_addr().ok(), peer = ?s.peer_addr().ok(), "connection established");
    s.set_nonblocking(true)
        .map_err(|e| OwdError::io("set non-blocking", e))?;
    Ok((s, t))
}

/// Sets the sender's options: TCP_NODELAY, TCP_NOTSENT_LOWAT and, if given, TCP_CONGESTION. Returns the
/// congestion control and low-water mark in effect (read back).
pub fn sender_options(
    s: &TcpStream,
    lowat: u32,
    cc: Option<&str>,
) -> Result<(String, u32), OwdError> {
    let r = SockRef::from(s);
    r.set_tcp_nodelay(true)
        .map_err(|e| OwdError::io("setsockopt TCP_NODELAY", e))?;
    r.set_tcp_notsent_lowat(lowat)
        .map_err(|e| OwdError::io(format!("setsockopt TCP_NOTSENT_LOWAT {lowat}"), e))?;
    if let Some(cc) = cc {
        r.set_tcp_congestion(cc.as_bytes()).map_err(|e| {
            OwdError::io(
                format!("setsockopt TCP_CONGESTION {cc} (non-default needs root)"),
                e,
            )
        })?;
    }
    let got = r
        .tcp_congestion()
        .map_err(|e| OwdError::io("getsockopt TCP_CONGESTION", e))?;
    let name = String::from_utf8_lossy(&got)
        .trim_end_matches('\0')
        .to_string();
    let lw = r
        .tcp_notsent_lowat()
        .map_err(|e| OwdError::io("getsockopt TCP_NOTSENT_LOWAT", e))?;
    Ok((name, lw))
}

/// Makes the next close of `s` send a RST (SO_LINGER 0), so a peer still writing or waiting
/// learns at once that the transfer failed.
pub fn abort_on_close(s: &TcpStream) {
    let _ = SockRef::from(s).set_linger(Some(Duration::ZERO));
}

/// Whether an I/O error means "try again after poll".
pub fn would_block(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::Interrupted
    )
}

/// Waits until `fd` is ready for `flags` (or has an error / hang-up to report), at most until
/// the deadline.
pub fn wait(fd: &impl AsFd, flags: PollFlags, dl: &Deadline, what: &str) -> Result<(), OwdError> {
    loop {
        let left = dl.remaining(what)?;
        let ms = left.as_millis().clamp(1, 1000) as u16;
        let mut fds = [PollFd::new(fd.as_fd(), flags)];
        match poll(&mut fds, ms) {
            Ok(0) => continue,
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(OwdError::io(format!("poll ({what})"), e.into())),
        }
    }
}
