//! Raw system calls of the PEP shell (its only `unsafe`): `getsockopt(TCP_INFO)` into bytes.
//!
//! The kernel's `struct tcp_info` is newer than the libc crate's, so it is read as bytes and
//! parsed by `pep::tcpinfo` (pure).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Room for `struct tcp_info` of newer kernels too (280 bytes on 6.18).
const TCP_INFO_BUF: usize = 512;

/// The bytes of `TCP_INFO` for a TCP socket (as many as the kernel filled in).
pub fn tcp_info_bytes(fd: BorrowedFd<'_>) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; TCP_INFO_BUF];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: `buf` is a live, writable allocation of `len` bytes and `len` points to a valid
    // socklen_t; the kernel writes at most `len` bytes and stores the length it wrote. The fd is
    // borrowed, so it stays open for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
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
