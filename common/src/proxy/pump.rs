//! One relay direction of a split flow: zero-copy `splice(2)` through a pipe, or a plain
//! buffer copy; both bounded by the relay's budget and driven by socket readiness.
//!
//! Each loop reads once (at most the budget: the pipe or buffer is empty at that point, so an
//! `EAGAIN` on the read means the socket is empty and its readiness may be cleared), then
//! writes everything it read before reading again. While the sink is full nothing more is read:
//! the source's receive window closes (backpressure end to end, no unbounded queue).

use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

use nix::errno::Errno;
use nix::fcntl::{fcntl, splice, FcntlArg, OFlag, SpliceFFlags};
use socket2::Socket;
use tokio::io::unix::AsyncFd;

use crate::pep::segments::{write_step, WriteStep, HOLD};
use crate::pep::{Action, Actions, Dir, Event, Relay, Side};

/// How often a direction whose sink has no room for a segment looks again.
const ROOM_POLL: std::time::Duration = std::time::Duration::from_millis(1);

/// How flows move bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RelayMode {
    /// `splice(2)` socket → pipe → socket: the payload never enters user space.
    #[default]
    Splice,
    /// `recv` into a buffer, `send` from it.
    Copy,
}

/// A socket failed (reset, broken pipe, timeout): which one and why.
#[derive(Debug)]
pub struct Failure {
    pub side: Side,
    pub error: io::Error,
}

/// The two sockets and the relay state of one flow.
pub struct FlowIo {
    pub accepted: AsyncFd<Socket>,
    pub connected: AsyncFd<Socket>,
    pub relay: Mutex<Relay>,
    /// Re-arm TCP_QUICKACK after each read on these sides (`[accepted, connected]`).
    pub quick_ack: [bool; 2],
    /// Per direction (`[up, down]`): at most this many bytes per write into the sink socket
    /// (0: no limit), whose `TCP_NOTSENT_LOWAT` is the same value. The window controller keeps
    /// the satellite socket's send queue short; the kernel's low-water mark alone lets one
    /// write fill a 64 KB segment past it.
    pub unsent_limit: [AtomicU32; 2],
    /// Per direction: writes end on boundaries of segments of this size (the sink's MSS; 0:
    /// write what was read). Set for the satellite socket of a StarPEP-controlled direction,
    /// whose short send queue would otherwise send every short tail as its own packet
    /// ([`crate::pep::segments`]).
    pub segment: [AtomicU32; 2],
    /// Signalled after every read, either way (careful resume waits on it for the flow's
    /// first byte, when the flow becomes young: `pep::priority`).
    pub read: tokio::sync::Notify,
}

impl FlowIo {
    pub fn sock(&self, side: Side) -> &AsyncFd<Socket> {
        match side {
            Side::Accepted => &self.accepted,
            Side::Connected => &self.connected,
        }
    }

    pub fn with_relay<R>(&self, f: impl FnOnce(&mut Relay) -> R) -> R {
        f(&mut self.relay.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Feeds an event at the current time.
    pub fn event(&self, ev: Event) -> Actions {
        self.with_relay(|r| r.on(ev, Instant::now()))
    }

    /// Executes the relay's actions on the sockets.
    pub fn exec(&self, actions: &Actions) -> Result<(), Failure> {
        for a in actions.iter() {
            match a {
                Action::ShutdownWrite(side) => self
                    .sock(side)
                    .get_ref()
                    .shutdown(std::net::Shutdown::Write)
                    .map_err(|error| Failure { side, error })?,
                Action::Abort(side) => {
                    let _ = self
                        .sock(side)
                        .get_ref()
                        .set_linger(Some(std::time::Duration::ZERO));
                }
                Action::Close => {}
            }
        }
        Ok(())
    }

    /// What `dir` writes of its `left` buffered bytes now (`flush`: the tail too).
    ///
    /// With an unsent limit, one write is at most that many bytes (and at least a segment):
    /// the kernel's `TCP_NOTSENT_LOWAT` on the sink (the same limit) refuses the next write
    /// with `EAGAIN` once that much is unsent, and wakes the relay as soon as the socket has
    /// sent half of it. (Counting the unsent bytes here and polling for room starved the
    /// satellite socket: tokio's timer sleeps at least a millisecond, which is all a 6 KB
    /// limit lasts at 50 Mbit/s; 76 % of the control ticks of a Starlink-trace download saw
    /// less than a segment unsent while the PEP held more.)
    fn write_step(&self, dir: Dir, left: usize, flush: bool) -> WriteStep {
        let segment = self.segment[dir as usize].load(Relaxed);
        let limit = self.unsent_limit[dir as usize].load(Relaxed) as usize;
        let room = match limit {
            0 => left,
            l => left.min(l.max(segment as usize)),
        };
        let written = self.with_relay(|r| r.bytes(dir));
        write_step(left, room, written, segment, flush)
    }

    fn after_read(&self, side: Side) {
        self.read.notify_one();
        if self.quick_ack[side as usize] {
            let _ = self.sock(side).get_ref().set_tcp_quickack(true);
        }
    }
}

/// A pipe for one direction, sized to the flow buffer.
pub struct Pipe {
    r: OwnedFd,
    w: OwnedFd,
    size: usize,
    /// Smaller than asked: the user's pipe pages are spent.
    short: bool,
}

impl Pipe {
    /// A nonblocking pipe of at least `size` bytes (the kernel rounds up to pages). Without
    /// CAP_SYS_RESOURCE the pipes of all the user's processes share `fs.pipe-user-pages-soft`
    /// (16384 pages): past it the kernel refuses to grow a pipe, and this one keeps the size it
    /// was created with (as small as two pages) rather than failing.
    pub fn new(size: usize) -> io::Result<Pipe> {
        let (r, w) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
        let (got, short) = match fcntl(&w, FcntlArg::F_SETPIPE_SZ(size as i32)) {
            Ok(n) => (n, false),
            Err(Errno::EPERM) => (fcntl(&w, FcntlArg::F_GETPIPE_SZ)?, true),
            Err(e) => return Err(e.into()),
        };
        Ok(Pipe {
            r,
            w,
            size: got as usize,
            short,
        })
    }

    /// The pipe's real capacity in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Whether the kernel refused the size asked for (the user's pipe pages are spent).
    pub fn short(&self) -> bool {
        self.short
    }
}

const FLAGS: SpliceFFlags = SpliceFFlags::SPLICE_F_MOVE.union(SpliceFFlags::SPLICE_F_NONBLOCK);

fn errno_io(e: Errno) -> io::Error {
    io::Error::from_raw_os_error(e as i32)
}

/// Waits until `sock` is readable; while a short tail is held, at most [`HOLD`] (`None`: the
/// source stayed quiet, flush the tail).
async fn readable_or_hold<'a>(
    sock: &'a AsyncFd<Socket>,
    holding: bool,
) -> io::Result<Option<tokio::io::unix::AsyncFdReadyGuard<'a, Socket>>> {
    if !holding {
        return sock.readable().await.map(Some);
    }
    match tokio::time::timeout(HOLD, sock.readable()).await {
        Ok(g) => g.map(Some),
        Err(_) => Ok(None),
    }
}

/// Relays `dir` with splice until its EOF is forwarded (Ok) or a socket fails.
pub async fn splice_dir(io: &FlowIo, dir: Dir, pipe: &Pipe) -> Result<(), Failure> {
    let (src_side, dst_side) = (dir.source(), dir.sink());
    let (src, dst) = (io.sock(src_side), io.sock(dst_side));
    let src_fail = |error| Failure {
        side: src_side,
        error,
    };
    let dst_fail = |error| Failure {
        side: dst_side,
        error,
    };
    loop {
        let (budget, held) = io.with_relay(|r| (r.read_budget(dir), r.buffered(dir)));
        // Nothing more to read (EOF, the end, a full buffer): write out what is held.
        let mut flush = budget == 0;
        if flush && held == 0 {
            return Ok(());
        }
        if !flush {
            match readable_or_hold(src, held > 0).await.map_err(src_fail)? {
                None => flush = true,
                Some(mut g) => {
                    match splice(
                        src.get_ref().as_fd(),
                        None,
                        pipe.w.as_fd(),
                        None,
                        budget,
                        FLAGS,
                    ) {
                        Ok(0) => {
                            let a = io.event(Event::Eof { dir });
                            io.exec(&a)?;
                            continue;
                        }
                        Ok(n) => {
                            io.event(Event::Read { dir, n });
                            io.after_read(src_side);
                        }
                        Err(Errno::EAGAIN) => {
                            g.clear_ready();
                            continue;
                        }
                        Err(Errno::EINTR) => continue,
                        Err(e) => return Err(src_fail(errno_io(e))),
                    }
                }
            }
        }
        loop {
            let left = io.with_relay(|r| r.buffered(dir));
            if left == 0 {
                break;
            }
            let mut g = dst.writable().await.map_err(dst_fail)?;
            let n = match io.write_step(dir, left, flush) {
                WriteStep::Write(n) => n,
                WriteStep::Hold => break,
                WriteStep::WaitRoom => {
                    // Not reached with a room of at least a segment; polled, not waited for
                    // an edge that the kernel would never send.
                    drop(g);
                    tokio::time::sleep(ROOM_POLL).await;
                    continue;
                }
            };
            match splice(pipe.r.as_fd(), None, dst.get_ref().as_fd(), None, n, FLAGS) {
                Ok(n) => {
                    let a = io.event(Event::Written { dir, n });
                    io.exec(&a)?;
                }
                Err(Errno::EAGAIN) => g.clear_ready(),
                Err(Errno::EINTR) => {}
                Err(e) => return Err(dst_fail(errno_io(e))),
            }
        }
    }
}

/// Relays `dir` through a user-space buffer of the relay's capacity (allocated on first data).
/// Unwritten bytes (a held tail) stay at the buffer's start.
pub async fn copy_dir(io: &FlowIo, dir: Dir, cap: usize) -> Result<(), Failure> {
    let (src_side, dst_side) = (dir.source(), dir.sink());
    let (src, dst) = (io.sock(src_side), io.sock(dst_side));
    let src_fail = |error| Failure {
        side: src_side,
        error,
    };
    let dst_fail = |error| Failure {
        side: dst_side,
        error,
    };
    let mut buf: Vec<u8> = Vec::new();
    loop {
        let (budget, held) = io.with_relay(|r| (r.read_budget(dir), r.buffered(dir)));
        let mut flush = budget == 0;
        if flush && held == 0 {
            return Ok(());
        }
        if buf.is_empty() {
            buf = vec![0u8; cap.max(held + 1)];
        }
        let room = budget.min(buf.len().saturating_sub(held));
        if !flush && room == 0 {
            flush = true;
        }
        if !flush {
            match readable_or_hold(src, held > 0).await.map_err(src_fail)? {
                None => flush = true,
                Some(mut g) => {
                    let mut sock: &Socket = g.get_inner();
                    match sock.read(&mut buf[held..held + room]) {
                        Ok(0) => {
                            drop(g);
                            let a = io.event(Event::Eof { dir });
                            io.exec(&a)?;
                            continue;
                        }
                        Ok(n) => {
                            drop(g);
                            io.event(Event::Read { dir, n });
                            io.after_read(src_side);
                        }
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            g.clear_ready();
                            continue;
                        }
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(error) => return Err(src_fail(error)),
                    }
                }
            }
        }
        let total = io.with_relay(|r| r.buffered(dir));
        let mut off = 0;
        while off < total {
            let mut g = dst.writable().await.map_err(dst_fail)?;
            let n = match io.write_step(dir, total - off, flush) {
                WriteStep::Write(n) => n,
                WriteStep::Hold => break,
                WriteStep::WaitRoom => {
                    // Not reached with a room of at least a segment; polled, not waited for
                    // an edge that the kernel would never send.
                    drop(g);
                    tokio::time::sleep(ROOM_POLL).await;
                    continue;
                }
            };
            match g.get_inner().send(&buf[off..off + n]) {
                Ok(w) => {
                    off += w;
                    let a = io.event(Event::Written { dir, n: w });
                    io.exec(&a)?;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => g.clear_ready(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(dst_fail(error)),
            }
        }
        // The held tail moves to the start.
        buf.copy_within(off..total, 0);
    }
}
