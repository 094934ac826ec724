//! The TUN device: inner IP packets in and out of the kernel (one packet per read/write).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::{sys, IoError};

/// An open TUN interface (`IFF_TUN | IFF_NO_PI`). The interface exists as long as this is open:
/// dropping it removes the link and every route through it.
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates interface `name` (nonblocking reads; writes never block on a TUN).
    pub fn create(name: &str) -> Result<Tun, IoError> {
        let what = || format!("create TUN {name}");
        let (fd, name) = sys::tun_open(name, libc::IFF_TUN | libc::IFF_NO_PI)
            .map_err(|e| IoError::sys(what(), e))?;
        let flags = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFL)
            .map_err(|e| IoError::sys(what(), e.into()))?;
        let flags = nix::fcntl::OFlag::from_bits_retain(flags) | nix::fcntl::OFlag::O_NONBLOCK;
        nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(flags))
            .map_err(|e| IoError::sys(what(), e.into()))?;
        Ok(Tun { fd, name })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one packet; `WouldBlock` when none is queued.
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        nix::unistd::read(&self.fd, buf).map_err(io::Error::from)
    }

    /// Writes one packet.
    #[inline]
    pub fn write(&self, packet: &[u8]) -> io::Result<usize> {
        nix::unistd::write(&self.fd, packet).map_err(io::Error::from)
    }

    /// Waits until a packet can be read or `timeout` passes; true if readable.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        let mut fds = [PollFd::new(self.fd.as_fd(), PollFlags::POLLIN)];
        let ms = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, ms) {
            Ok(n) => Ok(n > 0),
            Err(nix::errno::Errno::EINTR) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
