//! Socket setup of the PEP: transparent listeners, transparent connected sockets, and the
//! per-segment TCP options (congestion control, forced buffers, NODELAY, QUICKACK, NOTSENT_LOWAT,
//! the satellite segment's RTO cap, user timeout and keepalive).

use std::io;
use std::net::SocketAddr;
use std::os::fd::AsFd;

use nix::sys::socket::{setsockopt, sockopt};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::pep::plan::CONNECT_MARK;
use crate::pep::{FastOpen, Liveness, SocketOpts};

use super::error::ProxyError;
use super::sys;

/// Accept backlog of the TPROXY listeners (the kernel caps it at `somaxconn`).
const BACKLOG: i32 = 4096;
/// `TCP_KEEPCNT`: the kernel's largest; the user timeout, and before it the dead-peer check,
/// decide when probing stops (`pep::liveness`).
const KEEPALIVE_PROBES: u32 = 127;

fn domain(a: &SocketAddr) -> Domain {
    if a.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    }
}

fn set_transparent(s: &Socket, v4: bool) -> io::Result<()> {
    if v4 {
        s.set_ip_transparent_v4(true)
    } else {
        s.set_ip_transparent_v6(true)
    }
}

/// Applies `o` to a TCP socket. Errors name the option.
pub fn apply(s: &Socket, o: &SocketOpts) -> Result<(), ProxyError> {
    apply_but_liveness(s, o)?;
    set_liveness(s, o)
}

/// [`apply`] but the liveness options ([`set_liveness`]).
fn apply_but_liveness(s: &Socket, o: &SocketOpts) -> Result<(), ProxyError> {
    if let Some(cc) = o.congestion {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| ProxyError::sys(format!("TCP_CONGESTION {cc}"), e))?;
    }
    set_buffers(s, o.snd_buf, o.rcv_buf)?;
    s.set_tcp_nodelay(o.no_delay)
        .map_err(|e| ProxyError::sys("TCP_NODELAY", e))?;
    if o.quick_ack {
        s.set_tcp_quickack(true)
            .map_err(|e| ProxyError::sys("TCP_QUICKACK", e))?;
    }
    if let Some(n) = o.notsent_lowat {
        s.set_tcp_notsent_lowat(n)
            .map_err(|e| ProxyError::sys(format!("TCP_NOTSENT_LOWAT {n}"), e))?;
    }
    Ok(())
}

/// The satellite segment's liveness options of `o`, if any. A connecting socket gets them once
/// connected: its SYNs keep the kernel's backoff and give-up, as a direct attempt's would (with
/// the RTO capped, the kernel gave up on a SYN after about 15 s: a flow started while the tunnel
/// re-handshakes with a restarted POP, which takes 15 s, failed).
pub fn set_liveness(s: &Socket, o: &SocketOpts) -> Result<(), ProxyError> {
    match &o.liveness {
        Some(l) => liveness(s, l),
        None => Ok(()),
    }
}

/// The satellite segment's RTO cap, user timeout and keepalive (`pep::liveness`). A kernel
/// older than 6.15 has no `TCP_RTO_MAX_MS`: the segment then keeps the kernel's backoff.
fn liveness(s: &Socket, l: &Liveness) -> Result<(), ProxyError> {
    let ms = l.rto_max.as_millis().min(i32::MAX as u128) as i32;
    if let Err(e) = sys::set_int(s.as_fd(), libc::IPPROTO_TCP, sys::TCP_RTO_MAX_MS, ms) {
        tracing::debug!("TCP_RTO_MAX_MS {ms}: {e}");
    }
    s.set_tcp_user_timeout(Some(l.user_timeout))
        .map_err(|e| ProxyError::sys(format!("TCP_USER_TIMEOUT {:?}", l.user_timeout), e))?;
    let ka = socket2::TcpKeepalive::new()
        .with_time(l.keepalive)
        .with_interval(l.keepalive)
        .with_retries(KEEPALIVE_PROBES);
    s.set_tcp_keepalive(&ka)
        .map_err(|e| ProxyError::sys(format!("keepalive {:?}", l.keepalive), e))
}

/// Forces the socket's send and receive buffers (`SO_SNDBUFFORCE`/`SO_RCVBUFFORCE`: the
/// kernel doubles the value for its overhead and stops autotuning that buffer); `None` leaves
/// one as it is.
pub fn set_buffers(s: &Socket, snd: Option<usize>, rcv: Option<usize>) -> Result<(), ProxyError> {
    if let Some(n) = snd {
        setsockopt(&s.as_fd(), sockopt::SndBufForce, &n)
            .map_err(|e| ProxyError::sys(format!("SO_SNDBUFFORCE {n}"), e.into()))?;
    }
    if let Some(n) = rcv {
        setsockopt(&s.as_fd(), sockopt::RcvBufForce, &n)
            .map_err(|e| ProxyError::sys(format!("SO_RCVBUFFORCE {n}"), e.into()))?;
    }
    Ok(())
}

/// A nonblocking IP_TRANSPARENT listener on `addr` (IPv6: v6-only). Accepted sockets inherit
/// `opts` set here (congestion control, buffers: the window scale is chosen at the SYN). With
/// `FastOpen::Listen` it takes data in a SYN (a failure is logged: plain handshakes then).
pub fn listener(
    addr: SocketAddr,
    opts: &SocketOpts,
    fast_open: FastOpen,
) -> Result<Socket, ProxyError> {
    let what = |w: &str| format!("TPROXY listener {addr}: {w}");
    let s = Socket::new(domain(&addr), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| ProxyError::sys(what("socket"), e))?;
    s.set_reuse_address(true)
        .map_err(|e| ProxyError::sys(what("SO_REUSEADDR"), e))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)
            .map_err(|e| ProxyError::sys(what("IPV6_V6ONLY"), e))?;
    }
    set_transparent(&s, addr.is_ipv4())
        .map_err(|e| ProxyError::sys(what("IP_TRANSPARENT (needs CAP_NET_ADMIN)"), e))?;
    apply(&s, opts).map_err(|e| ProxyError::sys(what("options"), io::Error::other(e)))?;
    s.bind(&SockAddr::from(addr))
        .map_err(|e| ProxyError::sys(what("bind"), e))?;
    if let FastOpen::Listen { cookie } = fast_open {
        if let Err(e) = super::fast_open::listen(&s, cookie) {
            tracing::warn!("{}", what(&format!("TCP_FASTOPEN: {e}; plain handshakes")));
        }
    }
    s.listen(BACKLOG)
        .map_err(|e| ProxyError::sys(what("listen"), e))?;
    s.set_nonblocking(true)
        .map_err(|e| ProxyError::sys(what("O_NONBLOCK"), e))?;
    Ok(s)
}

/// A nonblocking socket toward `server` with `opts` (but the liveness ones: [`set_liveness`]
/// once connected); with `spoof` it is IP_TRANSPARENT and bound
/// to the originator's address (and port, when free). The connect is started, not finished;
/// with `first` bytes (Fast Open) its SYN carries what fits of them, and the count is returned.
pub fn connect_start(
    server: SocketAddr,
    spoof: Option<SocketAddr>,
    opts: &SocketOpts,
    first: &[u8],
) -> Result<(Socket, usize), ProxyError> {
    let what = |w: &str| format!("connect {server}: {w}");
    let s = Socket::new(domain(&server), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| ProxyError::sys(what("socket"), e))?;
    apply_but_liveness(&s, opts)
        .map_err(|e| ProxyError::sys(what("options"), io::Error::other(e)))?;
    if let Some(client) = spoof {
        set_transparent(&s, server.is_ipv4())
            .map_err(|e| ProxyError::sys(what("IP_TRANSPARENT"), e))?;
        s.set_mark(CONNECT_MARK)
            .map_err(|e| ProxyError::sys(what("SO_MARK"), e))?;
        s.set_reuse_address(true)
            .map_err(|e| ProxyError::sys(what("SO_REUSEADDR"), e))?;
        if let Err(e) = s.bind(&SockAddr::from(client)) {
            // The port is taken by another of our sockets: keep the address, any port.
            tracing::debug!("bind {client}: {e}; binding port 0");
            let mut any = client;
            any.set_port(0);
            s.bind(&SockAddr::from(any))
                .map_err(|e| ProxyError::sys(what(&format!("bind {any}")), e))?;
        }
    }
    s.set_nonblocking(true)
        .map_err(|e| ProxyError::sys(what("O_NONBLOCK"), e))?;
    if !first.is_empty() {
        match super::fast_open::connect(&s, server, first) {
            Ok(n) => return Ok((s, n)),
            Err(e) => tracing::debug!("{}", what(&format!("Fast Open: {e}; plain connect"))),
        }
    }
    match s.connect(&SockAddr::from(server)) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(ProxyError::sys(what("connect"), e)),
    }
    Ok((s, 0))
}

/// Re-initialises a socket's congestion control `cc` (away to reno and back: setting the CC in
/// use is a no-op). Its estimates start over, its window stays: BBR re-enters STARTUP with a
/// pacing rate from that window and forgets its min-RTT filter.
pub fn restart_congestion(s: &Socket, cc: &str) -> std::io::Result<()> {
    s.set_tcp_congestion(b"reno")?;
    s.set_tcp_congestion(cc.as_bytes()).inspect_err(|_| {
        // Once more: a socket left on reno would crawl on a long path.
        let _ = s.set_tcp_congestion(cc.as_bytes());
    })
}

/// The congestion control in use on a socket.
pub fn congestion_name(s: &Socket) -> String {
    s.tcp_congestion()
        .map(|b| {
            String::from_utf8_lossy(&b)
                .trim_end_matches('\0')
                .to_string()
        })
        .unwrap_or_else(|_| "?".into())
}
