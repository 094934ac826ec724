//! TCP Fast Open on the satellite segment (`FastOpen`, `pep::FastOpen`): the box waits a moment
//! for a new flow's first bytes from the client and sends them with its SYN toward the POP,
//! whose TPROXY listener takes data in a SYN. A request then leaves one satellite round trip
//! earlier. A client that sends nothing (a server-first protocol, a browser's preconnect) gets
//! a plain handshake after a quarter of the satellite round trip ([`first_bytes_wait`]); a POP
//! that does not take SYN data answers a plain SYN-ACK and the kernel sends the bytes again
//! after the handshake.
//!
//! At the POP the answer can start before the handshake completes (the child socket is in
//! SYN_RECV until the box's ACK, one satellite round trip later), but only if it is pushed: see
//! [`push_before_ack`].

use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use nix::sys::socket::{self, MsgFlags};
use socket2::{SockAddr, Socket};
use tokio::io::unix::AsyncFd;

use super::sys;

/// How long the box waits for a client's first bytes before a plain connect, as a share of
/// the satellite round trip ([`first_bytes_wait`]): a client-first connection whose bytes come
/// within the wait saves a round trip, a server-first one (SMTP, a browser's preconnect) pays
/// the wait once, so it is a quarter of what it saves.
pub const FIRST_BYTES_SHARE: u32 = 4;
/// The wait with no round trip seen yet, and its floor: a client-first protocol (HTTP, TLS)
/// writes as soon as its handshake with the box completes, a millisecond on an idle LAN host.
pub const FIRST_BYTES_WAIT_MIN: Duration = Duration::from_millis(10);
/// Its ceiling.
pub const FIRST_BYTES_WAIT_MAX: Duration = Duration::from_millis(150);

/// The wait for a client's first bytes on a satellite path whose round trip is `rtt` (`None`:
/// none seen yet). A browser that opens 20 connections at once writes on some of them 10-35 ms
/// after their handshakes (measured on a GEO page load here); with a fixed 10 ms those crossed
/// without Fast Open, a whole round trip later.
pub fn first_bytes_wait(rtt: Option<Duration>) -> Duration {
    rtt.map_or(FIRST_BYTES_WAIT_MIN, |r| {
        (r / FIRST_BYTES_SHARE).clamp(FIRST_BYTES_WAIT_MIN, FIRST_BYTES_WAIT_MAX)
    })
}

/// The satellite round trip the box's connects saw (their handshakes), smoothed (1/8 per
/// sample, as TCP's srtt). Shared by the flows; a lost update between two flows only delays
/// the average.
#[derive(Debug, Default)]
pub struct HandshakeRtt(AtomicU64);

impl HandshakeRtt {
    /// A connect completed with this round trip (zero: no sample).
    pub fn on_sample(&self, rtt: Duration) {
        let us = rtt.as_micros().min(u64::MAX as u128) as u64;
        if us == 0 {
            return;
        }
        let old = self.0.load(Relaxed);
        let new = if old == 0 { us } else { old - old / 8 + us / 8 };
        self.0.store(new, Relaxed);
    }

    /// The smoothed round trip, once one was seen.
    pub fn get(&self) -> Option<Duration> {
        match self.0.load(Relaxed) {
            0 => None,
            us => Some(Duration::from_micros(us)),
        }
    }
}

/// At most this much rides on the SYN (the kernel takes what fits one segment).
const FIRST_BYTES_MAX: usize = 1400;

/// How often a Fast Open child still waiting for the handshake's ACK is pushed.
pub const SYN_RECV_PUSH: Duration = Duration::from_millis(2);

/// The listener's queue of Fast Open children not yet accepted (beyond it: a plain handshake).
const LISTEN_QUEUE: i32 = 4096;

/// Lets a listener take data in a SYN (`TCP_FASTOPEN`); without a cookie when `cookie` is
/// false (`TCP_FASTOPEN_NO_COOKIE`). The namespace must allow it (`net.ipv4.tcp_fastopen`
/// bit 2, set by `NetCfg`).
pub fn listen(s: &Socket, cookie: bool) -> io::Result<()> {
    sys::set_int(
        s.as_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_FASTOPEN,
        LISTEN_QUEUE,
    )?;
    if !cookie {
        sys::set_int(
            s.as_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_FASTOPEN_NO_COOKIE,
            1,
        )?;
    }
    Ok(())
}

/// The client's first bytes, peeked (they stay in the accepted socket), if any arrive within
/// `wait` ([`first_bytes_wait`]). Empty on timeout, EOF or error: the flow then connects
/// plainly.
pub async fn first_bytes(accepted: &AsyncFd<Socket>, wait: Duration) -> Vec<u8> {
    let peek = async {
        loop {
            let mut guard = accepted.readable().await.ok()?;
            let mut buf = vec![0u8; FIRST_BYTES_MAX];
            let fd = accepted.get_ref().as_fd();
            match guard.try_io(|_| recv(fd, &mut buf, MsgFlags::MSG_PEEK)) {
                Ok(Ok(n)) => {
                    buf.truncate(n);
                    return Some(buf);
                }
                Ok(Err(_)) => return None,
                Err(_would_block) => continue,
            }
        }
    };
    tokio::time::timeout(wait, peek)
        .await
        .ok()
        .flatten()
        .unwrap_or_default()
}

fn recv(fd: BorrowedFd<'_>, buf: &mut [u8], flags: MsgFlags) -> io::Result<usize> {
    socket::recv(fd.as_raw_fd(), buf, flags).map_err(io::Error::from)
}

/// Starts the connect of `s` toward `server` with `first` in its SYN. Returns how many of
/// `first` the SYN carries (0: a plain SYN left, the bytes follow through the relay); an
/// error when the kernel refused Fast Open without starting the connect (`tcp_fastopen`
/// without its client bit): the caller then connects plainly.
pub fn connect(s: &Socket, server: SocketAddr, first: &[u8]) -> io::Result<usize> {
    // Send the bytes whether or not a cookie for this server is cached: the POP behind the
    // tunnel takes them without one, and a server that wants one answers a plain SYN-ACK.
    sys::set_int(
        s.as_fd(),
        libc::IPPROTO_TCP,
        libc::TCP_FASTOPEN_NO_COOKIE,
        1,
    )?;
    match s.send_to_with_flags(first, &SockAddr::from(server), libc::MSG_FASTOPEN) {
        Ok(n) => Ok(n),
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => Ok(0),
        Err(e) => Err(e),
    }
}

/// Sends what a Fast Open child may send before the client's ACK arrives; returns whether it
/// still waits for that ACK (call again after [`SYN_RECV_PUSH`]).
///
/// The kernel lets a child in SYN_RECV send (RFC 7413, up to its window and the SYN's unscaled
/// window, 64 KiB), but its paced transmissions (BBR always paces, and so does
/// `SO_MAX_PACING_RATE`) resume from the pacing timer, whose handler only writes in the
/// established states: after the first burst (one TSO packet, 10 segments) the rest waited
/// for the ACK, a whole satellite round trip. Setting `TCP_NODELAY` pushes the pending frames
/// (`__tcp_sock_set_nodelay`); each push sends what the pacing allows by then.
pub fn push_before_ack(s: &Socket) -> bool {
    match super::tcp_info::info(s) {
        Some(i) if i.syn_recv() => {
            let nagle = !s.tcp_nodelay().unwrap_or(true);
            let _ = s.set_tcp_nodelay(true);
            if nagle {
                let _ = s.set_tcp_nodelay(false);
            }
            true
        }
        _ => false,
    }
}

/// Takes the `n` bytes the SYN carried out of the accepted socket (they were peeked there).
pub fn consume(accepted: &Socket, n: usize) -> io::Result<()> {
    let mut buf = vec![0u8; n];
    let mut done = 0;
    while done < n {
        match recv(accepted.as_fd(), &mut buf[done..], MsgFlags::empty())? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            k => done += k,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn the_wait_is_a_quarter_of_the_round_trip_within_its_bounds() {
        assert_eq!(first_bytes_wait(None), FIRST_BYTES_WAIT_MIN);
        assert_eq!(first_bytes_wait(Some(20 * MS)), FIRST_BYTES_WAIT_MIN, "LEO");
        assert_eq!(first_bytes_wait(Some(80 * MS)), 20 * MS);
        assert_eq!(first_bytes_wait(Some(550 * MS)), 137_500 * MS / 1000, "GEO");
        assert_eq!(first_bytes_wait(Some(5000 * MS)), FIRST_BYTES_WAIT_MAX);
    }

    #[test]
    fn the_handshake_rtt_is_smoothed_from_its_first_sample() {
        let r = HandshakeRtt::default();
        assert_eq!(r.get(), None);
        r.on_sample(Duration::ZERO);
        assert_eq!(r.get(), None, "no sample");
        r.on_sample(560 * MS);
        assert_eq!(r.get(), Some(560 * MS));
        r.on_sample(400 * MS);
        assert_eq!(r.get(), Some(540 * MS), "an eighth of the way");
    }
}
