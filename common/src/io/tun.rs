//! The TUN device: inner IP packets in and out of the kernel (one packet per read/write), one
//! queue per data-path worker.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::{sys, IoError};

/// One queue of a TUN interface (`IFF_TUN | IFF_NO_PI`, and `IFF_MULTI_QUEUE` when it has more
/// than one). The interface exists as long as one of its queues is open: dropping the last
/// removes the link and every route through it.
pub struct Tun {
    fd: OwnedFd,
    name: String,
}

impl Tun {
    /// Creates interface `name` with `queues` queues (nonblocking reads; writes never block on a
    /// TUN); fails if an interface of that name exists (`IFF_TUN_EXCL`). With several queues
    /// the kernel hands each outgoing flow to one queue, by flow hash, or to the queue the
    /// flow's last incoming packet was written on (its flow table, entries kept 3 s).
    pub fn create(name: &str, queues: usize) -> Result<Vec<Tun>, IoError> {
        let what = || format!("create TUN {name}");
        let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
        if queues > 1 {
            flags |= libc::IFF_MULTI_QUEUE;
        }
        let mut out: Vec<Tun> = Vec::with_capacity(queues.max(1));
        for q in 0..queues.max(1) {
            // The first queue creates the interface, the others attach to it.
            let (want, excl) = match out.first() {
                Some(t) => (t.name.clone(), 0),
                None => (name.to_string(), libc::IFF_TUN_EXCL),
            };
            let (fd, name) = sys::tun_open(&want, flags | excl).map_err(|e| {
                let e = if e.raw_os_error() == Some(libc::EBUSY) && q == 0 {
                    io::Error::new(e.kind(), "an interface of that name exists")
                } else {
                    e
                };
                let w = if q == 0 {
                    what()
                } else {
                    format!("{} (queue {q})", what())
                };
                IoError::sys(w, e)
            })?;
            let fl = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_GETFL)
                .map_err(|e| IoError::sys(what(), e.into()))?;
            let fl = nix::fcntl::OFlag::from_bits_retain(fl) | nix::fcntl::OFlag::O_NONBLOCK;
            nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_SETFL(fl))
                .map_err(|e| IoError::sys(what(), e.into()))?;
            out.push(Tun { fd, name });
        }
        Ok(out)
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
