//! The only `unsafe` of the emulator: AF_PACKET sockets, batch recv/send, clocks and sleeps.
//!
//! Everything here is a thin, safe-to-call wrapper over one syscall; policy (what to send when)
//! lives in `pump.rs`, socket setup in `afpacket.rs`.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use nix::sys::time::TimeSpec;
use nix::time::{ClockId, ClockNanosleepFlags};

/// `SOL_PACKET` socket options (linux/if_packet.h).
const SOL_PACKET: libc::c_int = 263;
const PACKET_QDISC_BYPASS: libc::c_int = 20;
const PACKET_IGNORE_OUTGOING: libc::c_int = 23;
const ETH_P_ALL: u16 = 0x0003;

/// The most frames one `recvmmsg`/`sendmmsg` call moves.
pub const MAX_BATCH: usize = 64;

/// One received frame of a batch: its length and whether the buffer was too small for it.
#[derive(Debug, Clone, Copy, Default)]
pub struct RxFrame {
    pub len: usize,
    pub truncated: bool,
}

/// An AF_PACKET SOCK_RAW socket bound to interface `ifindex`. With `receive` it captures every
/// protocol (ETH_P_ALL); without, protocol 0: it receives nothing and is used only to send.
pub fn packet_socket(ifindex: u32, receive: bool) -> io::Result<OwnedFd> {
    let proto: u16 = if receive { ETH_P_ALL.to_be() } else { 0 };
    // SAFETY: plain socket(2) call with constant arguments; the result is checked below and
    // owned by exactly one OwnedFd.
    let fd = unsafe { libc::socket(libc::AF_PACKET, libc::SOCK_RAW, proto as libc::c_int) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh, valid descriptor that nothing else owns.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_ll is plain old data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = proto;
    sll.sll_ifindex = ifindex as i32;
    // SAFETY: `sll` is a valid sockaddr_ll and the length passed is its size.
    let rc = unsafe {
        libc::bind(
            owned.as_raw_fd(),
            &sll as *const libc::sockaddr_ll as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(owned)
}

fn setsockopt_int(fd: BorrowedFd, level: libc::c_int, opt: libc::c_int, v: i32) -> io::Result<()> {
    // SAFETY: `v` lives for the call and the length passed is that of an int.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            opt,
            &v as *const i32 as *const libc::c_void,
            std::mem::size_of::<i32>() as libc::socklen_t,
        )
    };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// PACKET_IGNORE_OUTGOING: do not capture frames this host transmits on the interface (the
/// frames satlink itself injects there).
pub fn set_ignore_outgoing(fd: BorrowedFd) -> io::Result<()> {
    setsockopt_int(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
}

/// PACKET_QDISC_BYPASS: injected frames go straight to the driver (veths have no qdisc anyway).
pub fn set_qdisc_bypass(fd: BorrowedFd) -> io::Result<()> {
    setsockopt_int(fd, SOL_PACKET, PACKET_QDISC_BYPASS, 1)
}

/// SO_RCVBUFFORCE (root: bypasses the netns-read-only rmem_max).
pub fn set_rcvbuf_force(fd: BorrowedFd, bytes: usize) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, bytes as i32)
}

/// SO_SNDBUFFORCE (root).
pub fn set_sndbuf_force(fd: BorrowedFd, bytes: usize) -> io::Result<()> {
    setsockopt_int(fd, libc::SOL_SOCKET, libc::SO_SNDBUFFORCE, bytes as i32)
}

/// The MTU of interface `name` (SIOCGIFMTU).
pub fn if_mtu(name: &str) -> io::Result<u32> {
    if name.len() >= libc::IFNAMSIZ {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let sock =
        std::net::UdpSocket::bind("0.0.0.0:0").or_else(|_| std::net::UdpSocket::bind("[::]:0"))?;
    // SAFETY: ifreq is plain old data; all-zero is valid.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (d, s) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *d = s as libc::c_char;
    }
    // SAFETY: SIOCGIFMTU reads ifr_name (NUL-terminated: name is shorter than IFNAMSIZ and the
    // rest is zero) and writes ifru_mtu inside `req`, which lives for the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFMTU, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: after a successful SIOCGIFMTU the union holds ifru_mtu.
    Ok(unsafe { req.ifr_ifru.ifru_mtu } as u32)
}

/// Receives up to `out.len()` (≤ MAX_BATCH) frames without blocking, frame `i` into
/// `staging[i*slot .. (i+1)*slot]`. Returns how many were received (0 if none was waiting).
pub fn recv_batch(
    fd: BorrowedFd,
    staging: &mut [u8],
    slot: usize,
    out: &mut [RxFrame],
) -> io::Result<usize> {
    let n = out.len().min(MAX_BATCH).min(staging.len() / slot.max(1));
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: iovec and mmsghdr are plain old data; all-zero is valid (null pointers, 0 lens).
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut hdr: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for (i, chunk) in staging.chunks_exact_mut(slot).take(n).enumerate() {
        iov[i].iov_base = chunk.as_mut_ptr() as *mut libc::c_void;
        iov[i].iov_len = slot;
        hdr[i].msg_hdr.msg_iov = &mut iov[i];
        hdr[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: each of the first `n` headers points at one iovec, which points at a distinct
    // `slot`-byte chunk of `staging`; `staging`, `iov` and `hdr` outlive the call and nothing
    // else references them during it. MSG_DONTWAIT: never blocks.
    let rc = unsafe {
        libc::recvmmsg(
            fd.as_raw_fd(),
            hdr.as_mut_ptr(),
            n as libc::c_uint,
            libc::MSG_DONTWAIT | libc::MSG_TRUNC,
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(0),
            _ => Err(e),
        };
    }
    let got = rc as usize;
    for i in 0..got {
        let len = hdr[i].msg_len as usize;
        let truncated = len > slot || hdr[i].msg_hdr.msg_flags & libc::MSG_TRUNC != 0;
        out[i] = RxFrame {
            len: len.min(slot),
            truncated,
        };
    }
    Ok(got)
}

/// Sends frames `i < lens.len()` (≤ MAX_BATCH) from `staging[i*slot ..][..lens[i]]` on a bound
/// packet socket. Returns how many the kernel took (the rest should be retried or dropped).
pub fn send_batch(
    fd: BorrowedFd,
    staging: &[u8],
    slot: usize,
    lens: &[usize],
) -> io::Result<usize> {
    let n = lens.len().min(MAX_BATCH).min(staging.len() / slot.max(1));
    if n == 0 {
        return Ok(0);
    }
    // SAFETY: iovec and mmsghdr are plain old data; all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut hdr: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for (i, chunk) in staging.chunks_exact(slot).take(n).enumerate() {
        iov[i].iov_base = chunk.as_ptr() as *mut libc::c_void;
        iov[i].iov_len = lens[i].min(slot);
        hdr[i].msg_hdr.msg_iov = &mut iov[i];
        hdr[i].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: the first `n` headers each point at one iovec describing a prefix of a distinct
    // chunk of `staging`, which the kernel only reads; all arrays outlive the call. A null
    // msg_name sends on the interface the socket is bound to.
    let rc = unsafe { libc::sendmmsg(fd.as_raw_fd(), hdr.as_mut_ptr(), n as libc::c_uint, 0) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// CLOCK_MONOTONIC now, as a Duration since boot.
pub fn mono_now() -> Duration {
    clock(ClockId::CLOCK_MONOTONIC)
}

/// CLOCK_REALTIME now, as a Duration since the UNIX epoch.
pub fn realtime_now() -> Duration {
    clock(ClockId::CLOCK_REALTIME)
}

fn clock(id: ClockId) -> Duration {
    nix::time::clock_gettime(id)
        .map(Duration::from)
        .unwrap_or_default()
}

/// Sleeps until CLOCK_MONOTONIC reaches `t` (absolute; restarts after signals).
pub fn sleep_until_mono(t: Duration) {
    let ts = TimeSpec::from_duration(t);
    while let Err(nix::errno::Errno::EINTR) = nix::time::clock_nanosleep(
        ClockId::CLOCK_MONOTONIC,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &ts,
    ) {}
}

/// Waits until `fd` is readable or `timeout` passes (None: forever). True if readable.
pub fn wait_readable(fd: BorrowedFd, timeout: Option<Duration>) -> io::Result<bool> {
    use nix::poll::{PollFd, PollFlags};
    let mut fds = [PollFd::new(fd, PollFlags::POLLIN)];
    match nix::poll::ppoll(&mut fds, timeout.map(TimeSpec::from_duration), None) {
        Ok(n) => Ok(n > 0),
        Err(nix::errno::Errno::EINTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Timer slack of the calling thread to 1 ns, so sleeps end when asked (default is 50 µs).
pub fn set_precise_timers() -> io::Result<()> {
    nix::sys::prctl::set_timerslack(1).map_err(io::Error::from)
}

/// Moves the calling thread into the network namespace at `path` (e.g. /run/netns/NAME).
pub fn enter_netns(path: &std::path::Path) -> io::Result<()> {
    let f = std::fs::File::open(path)?;
    nix::sched::setns(&f, nix::sched::CloneFlags::CLONE_NEWNET).map_err(io::Error::from)
}

/// The index of interface `name` in the current namespace.
pub fn if_index(name: &str) -> io::Result<u32> {
    nix::net::if_::if_nametoindex(name).map_err(io::Error::from)
}

/// Sleeps until CLOCK_REALTIME reaches `t` (a Duration since the UNIX epoch).
pub fn sleep_until_realtime(t: Duration) {
    let ts = TimeSpec::from_duration(t);
    while let Err(nix::errno::Errno::EINTR) = nix::time::clock_nanosleep(
        ClockId::CLOCK_REALTIME,
        ClockNanosleepFlags::TIMER_ABSTIME,
        &ts,
    ) {}
}

/// Puts the calling thread under SCHED_FIFO at `priority` (1..=99), so compile jobs and
/// traffic generators on the same cores cannot delay a release. Needs CAP_SYS_NICE (root).
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param that lives for the call; pid 0 = calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

/// Asks the kernel (PM QoS, `/dev/cpu_dma_latency`) for 0 µs wake-up latency for as long as
/// the returned file stays open: idle CPUs poll instead of halting, so timer and packet
/// wake-ups arrive in tens of µs instead of up to milliseconds (measured on this VM).
pub fn hold_zero_wake_latency() -> io::Result<std::fs::File> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")?;
    f.write_all(&0i32.to_ne_bytes())?;
    Ok(f)
}

/// mlockall(MCL_CURRENT | MCL_FUTURE): no page faults (and no wait on the memory map lock
/// behind another thread's mmap/munmap) on the data path.
pub fn lock_memory() -> io::Result<()> {
    // SAFETY: mlockall takes only flags and touches no memory of ours.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}
