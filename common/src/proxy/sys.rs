//! Raw system calls of the PEP shell (its only `unsafe`): `getsockopt(TCP_INFO)` into bytes,
//! SIOCINQ and plain `int` socket options (TCP_WINDOW_CLAMP) for the window controller.
//!
//! The kernel's `struct tcp_info` is newer than the libc crate's, so it is read as bytes and
//! parsed by `pep::tcpinfo` (pure).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Room for `struct tcp_info` of newer kernels too (280 bytes on 6.18).
const TCP_INFO_BUF: usize = 512;

/// The bytes of `TCP_INFO` for a TCP socket (as many as the kernel filled in).
pub fn tcp_info_bytes(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    get_bytes(fd, libc::IPPROTO_TCP, libc::TCP_INFO, TCP_INFO_BUF)
}

/// `TCP_CC_INFO`: the congestion control's own figures (`struct tcp_bbr_info` under BBR; empty
/// for CCs that export none).
pub fn cc_info_bytes(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    const TCP_CC_INFO: libc::c_int = 26;
    get_bytes(fd, libc::IPPROTO_TCP, TCP_CC_INFO, 64)
}

/// `getsockopt` of a struct option, as the bytes the kernel wrote (at most `max`).
fn get_bytes(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    opt: libc::c_int,
    max: usize,
) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; max];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is a live, writable allocation of `len` bytes and `len` points to a valid
    // socklen_t; the kernel writes at most `len` bytes and stores the length it wrote. The fd is
    // borrowed, so it stays open for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            buf.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    buf.truncate(len as usize);
    Ok(buf)
}

/// Registers an owned socket with the tokio reactor (readable and writable interest).
pub fn register(s: socket2::Socket) -> io::Result<tokio::io::unix::AsyncFd<socket2::Socket>> {
    // SAFETY: `socket2::Socket` owns its descriptor: it is open, stays open until the Socket is
    // dropped (which happens only when the AsyncFd drops it or hands it back with into_inner),
    // and `as_raw_fd` always returns that same descriptor.
    unsafe { tokio::io::unix::AsyncFd::register(s) }.map_err(|e| e.into_parts().1)
}

/// Bytes the socket has received and the application not read yet (`SIOCINQ`).
pub fn unread_bytes(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCINQ (FIONREAD) writes one `int` through the pointer, which points to a live
    // local; the fd is borrowed, so it stays open for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n.max(0) as u32)
}

/// `getsockopt` of one `int` option.
pub fn get_int(fd: BorrowedFd<'_>, level: libc::c_int, opt: libc::c_int) -> io::Result<i32> {
    let mut v: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `v` and `len` are live locals of the sizes passed; the kernel writes at most `len`
    // bytes to `v`. The fd is borrowed for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&mut v as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(v)
}

/// `TCP_RTO_MAX_MS` (Linux 6.15): the largest retransmission timeout, 1000..120000 ms.
pub const TCP_RTO_MAX_MS: libc::c_int = 44;

/// `setsockopt` of one `int` option.
pub fn set_int(fd: BorrowedFd<'_>, level: libc::c_int, opt: libc::c_int, v: i32) -> io::Result<()> {
    // SAFETY: the kernel reads `size_of::<c_int>()` bytes from a live local; the fd is borrowed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            (&v as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SO_MAX_PACING_RATE` in bytes/s (64-bit form, since 4.20); `None` lifts the cap. It also
/// turns on the kernel's internal TCP pacing for a socket whose qdisc does not pace (no `fq`
/// on this kernel).
pub fn set_max_pacing_rate(fd: BorrowedFd<'_>, rate: Option<u64>) -> io::Result<()> {
    let v: u64 = rate.unwrap_or(u64::MAX);
    // SAFETY: the kernel reads `size_of::<u64>()` bytes from a live local; the fd is borrowed.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&v as *const u64).cast(),
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// `SO_MEMINFO` (SOL_SOCKET 55): the socket's memory accounting in bytes of skb truesize.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemInfo {
    pub rmem_alloc: u32,
    pub rcvbuf: u32,
    pub sndbuf: u32,
    pub wmem_queued: u32,
}

/// Reads `SO_MEMINFO` (`SK_MEMINFO_*` indices 0, 1, 3, 5).
pub fn mem_info(fd: BorrowedFd<'_>) -> io::Result<MemInfo> {
    const SO_MEMINFO: libc::c_int = 55;
    let mut v = [0u32; 16];
    let mut len = std::mem::size_of_val(&v) as libc::socklen_t;
    // SAFETY: `v` is a live local array of `len` bytes; the kernel writes at most `len` bytes
    // and stores the length. The fd is borrowed for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_MEMINFO,
            v.as_mut_ptr().cast(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(MemInfo {
        rmem_alloc: v[0],
        rcvbuf: v[1],
        sndbuf: v[3],
        wmem_queued: v[5],
    })
}

/// Payload bytes in the send queue, sent or not, not yet acknowledged (`SIOCOUTQ`).
pub fn unacked_and_unsent(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut n: libc::c_int = 0;
    // SAFETY: SIOCOUTQ (TIOCOUTQ) writes one `int` through the pointer to a live local; the fd
    // is borrowed for the call.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCOUTQ, &mut n) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n.max(0) as u32)
}
