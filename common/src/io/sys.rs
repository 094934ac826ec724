//! Raw system calls of the data path (the only `unsafe` in common): TUN ioctl, batched UDP I/O.
//!
//! Every `unsafe` block states why it is sound. Batches keep their `mmsghdr`/`iovec`/address
//! arrays preallocated and point them at the caller's buffers right before each call, so no
//! structure points into itself and nothing is allocated per packet.

use std::io;
use std::io::IoSlice;
use std::mem::{size_of, zeroed};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// Linux `struct ifreq` as TUNSETIFF uses it: the name and the flags (40 bytes in all).
#[repr(C)]
struct IfReqFlags {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Opens `/dev/net/tun` and attaches it to interface `name` (created if absent) with `flags`
/// (`IFF_TUN | IFF_NO_PI`, optionally `IFF_MULTI_QUEUE`). Returns the descriptor and the name
/// the kernel gave the interface.
pub fn tun_open(name: &str, flags: libc::c_int) -> io::Result<(OwnedFd, String)> {
    if name.len() >= libc::IFNAMSIZ || name.as_bytes().contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("interface name {name:?}: at most 15 bytes, no NUL"),
        ));
    }
    // SAFETY: the path is a NUL-terminated C string literal; open(2) has no other preconditions.
    let raw = unsafe { libc::open(c"/dev/net/tun".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor we just opened and own exclusively.
    let fd = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut req = IfReqFlags {
        name: [0; libc::IFNAMSIZ],
        flags: flags as libc::c_short,
        _pad: [0; 22],
    };
    req.name[..name.len()].copy_from_slice(name.as_bytes());
    // SAFETY: TUNSETIFF reads and writes a `struct ifreq`; `IfReqFlags` has its layout and size
    // and lives across the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF as _, &mut req) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    let len = req
        .name
        .iter()
        .position(|b| *b == 0)
        .unwrap_or(libc::IFNAMSIZ);
    Ok((fd, String::from_utf8_lossy(&req.name[..len]).into_owned()))
}

/// Writes `addr` into `storage` (v4-mapped when the socket is IPv6); returns the length used.
fn put_addr(addr: SocketAddr, v6_socket: bool, storage: &mut libc::sockaddr_storage) -> u32 {
    let addr = match (addr, v6_socket) {
        (SocketAddr::V4(a), true) => {
            SocketAddr::V6(SocketAddrV6::new(a.ip().to_ipv6_mapped(), a.port(), 0, 0))
        }
        (a, _) => a,
    };
    match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*a.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than and suitably aligned for sockaddr_in.
            unsafe {
                (storage as *mut libc::sockaddr_storage as *mut libc::sockaddr_in).write(sin)
            };
            size_of::<libc::sockaddr_in>() as u32
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo().to_be(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: sockaddr_storage is larger than and suitably aligned for sockaddr_in6.
            unsafe {
                (storage as *mut libc::sockaddr_storage as *mut libc::sockaddr_in6).write(sin6)
            };
            size_of::<libc::sockaddr_in6>() as u32
        }
    }
}

/// Reads the address the kernel wrote into `storage`.
fn get_addr(storage: &libc::sockaddr_storage, len: u32) -> Option<SocketAddr> {
    match storage.ss_family as libc::c_int {
        libc::AF_INET if len as usize >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: the family says the storage holds a sockaddr_in, fully written (length).
            let sin = unsafe { &*(storage as *const _ as *const libc::sockaddr_in) };
            Some(SocketAddr::V4(SocketAddrV4::new(
                Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                u16::from_be(sin.sin_port),
            )))
        }
        libc::AF_INET6 if len as usize >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: the family says the storage holds a sockaddr_in6, fully written (length).
            let sin6 = unsafe { &*(storage as *const _ as *const libc::sockaddr_in6) };
            Some(SocketAddr::V6(SocketAddrV6::new(
                Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                u16::from_be(sin6.sin6_port),
                u32::from_be(sin6.sin6_flowinfo),
                sin6.sin6_scope_id,
            )))
        }
        _ => None,
    }
}

/// Room for one `cmsghdr` carrying an int (UDP_GRO) or u16 (UDP_SEGMENT), 8-byte aligned.
#[derive(Clone, Copy)]
#[repr(C, align(8))]
struct Cmsg([u8; 32]);

/// Receives up to N datagrams per system call (`recvmmsg`), with UDP GRO segment sizes.
pub struct RecvBatch {
    hdrs: Vec<libc::mmsghdr>,
    iovs: Vec<libc::iovec>,
    names: Vec<libc::sockaddr_storage>,
    ctrl: Vec<Cmsg>,
}

// SAFETY: the raw pointers inside are only scratch, rewritten before every call; the batch owns
// no borrowed memory between calls, so moving it to another thread is sound.
unsafe impl Send for RecvBatch {}

impl RecvBatch {
    pub fn new(n: usize) -> RecvBatch {
        // SAFETY: mmsghdr, iovec and sockaddr_storage are plain C structs for which all-zero
        // bytes are a valid value.
        let (hdrs, iovs, names) = unsafe {
            (
                vec![zeroed::<libc::mmsghdr>(); n],
                vec![zeroed::<libc::iovec>(); n],
                vec![zeroed::<libc::sockaddr_storage>(); n],
            )
        };
        RecvBatch {
            hdrs,
            iovs,
            names,
            ctrl: vec![Cmsg([0; 32]); n],
        }
    }

    /// Blocks until at least one datagram arrives (or the socket's receive timeout passes), then
    /// takes whatever else is queued, up to `bufs.len()` datagrams. Returns how many.
    pub fn recv(&mut self, fd: BorrowedFd<'_>, bufs: &mut [Vec<u8>]) -> io::Result<usize> {
        let n = bufs.len().min(self.hdrs.len());
        for (i, buf) in bufs.iter_mut().enumerate().take(n) {
            self.iovs[i] = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = size_of::<libc::sockaddr_storage>() as u32;
            h.msg_iov = &mut self.iovs[i];
            h.msg_iovlen = 1;
            h.msg_control = self.ctrl[i].0.as_mut_ptr().cast();
            h.msg_controllen = self.ctrl[i].0.len();
            h.msg_flags = 0;
            self.hdrs[i].msg_len = 0;
        }
        // SAFETY: the first `n` headers point at live buffers (`bufs`, names, control) of the
        // stated lengths, all borrowed mutably for the duration of the call.
        let r = unsafe {
            libc::recvmmsg(
                fd.as_raw_fd(),
                self.hdrs.as_mut_ptr(),
                n as libc::c_uint,
                libc::MSG_WAITFORONE,
                std::ptr::null_mut(),
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as usize)
    }

    /// Length of datagram `i` of the last `recv`.
    pub fn len(&self, i: usize) -> usize {
        self.hdrs[i].msg_len as usize
    }

    /// Source address of datagram `i` of the last `recv`.
    pub fn addr(&self, i: usize) -> Option<SocketAddr> {
        get_addr(&self.names[i], self.hdrs[i].msg_hdr.msg_namelen)
    }

    /// UDP GRO segment size of datagram `i`: the kernel coalesced several datagrams of this size
    /// (the last may be shorter) into one buffer.
    pub fn gro_segment(&self, i: usize) -> Option<usize> {
        let h = &self.hdrs[i].msg_hdr;
        if h.msg_controllen == 0 {
            return None;
        }
        // SAFETY: `h` was filled by the kernel for this buffer; the CMSG macros walk it within
        // `msg_controllen`, and the data read is the int UDP_GRO carries.
        unsafe {
            let mut c = libc::CMSG_FIRSTHDR(h);
            while !c.is_null() {
                if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO {
                    let v = (libc::CMSG_DATA(c) as *const libc::c_int).read_unaligned();
                    return (v > 0).then_some(v as usize);
                }
                c = libc::CMSG_NXTHDR(h, c);
            }
        }
        None
    }
}

/// One outgoing message: `count` consecutive segments of the send list to `to`; with
/// `gso = Some(size)` the kernel splits it into datagrams of `size` (UDP GSO).
#[derive(Debug, Clone, Copy)]
pub struct OutMsg {
    pub to: SocketAddr,
    pub first: usize,
    pub count: usize,
    pub gso: Option<u16>,
}

/// Sends many messages per system call (`sendmmsg`), each optionally a UDP GSO train.
pub struct SendBatch {
    hdrs: Vec<libc::mmsghdr>,
    names: Vec<libc::sockaddr_storage>,
    ctrl: Vec<Cmsg>,
    v6_socket: bool,
}

// SAFETY: as for RecvBatch, the pointers are scratch rewritten before every call.
unsafe impl Send for SendBatch {}

impl SendBatch {
    /// `v6_socket`: the socket is AF_INET6 (IPv4 destinations are then sent v4-mapped).
    pub fn new(n: usize, v6_socket: bool) -> SendBatch {
        // SAFETY: all-zero bytes are valid for these C structs.
        let (hdrs, names) = unsafe {
            (
                vec![zeroed::<libc::mmsghdr>(); n],
                vec![zeroed::<libc::sockaddr_storage>(); n],
            )
        };
        SendBatch {
            hdrs,
            names,
            ctrl: vec![Cmsg([0; 32]); n],
            v6_socket,
        }
    }

    /// Capacity in messages.
    pub fn capacity(&self) -> usize {
        self.hdrs.len()
    }

    /// Sends `msgs` (at most `capacity()`), whose segments are `segs`. Returns how many messages
    /// the kernel took; an error only if it took none (the error is that of the first message).
    pub fn send(
        &mut self,
        fd: BorrowedFd<'_>,
        segs: &[IoSlice<'_>],
        msgs: &[OutMsg],
    ) -> io::Result<usize> {
        let n = msgs.len().min(self.hdrs.len());
        for (i, m) in msgs[..n].iter().enumerate() {
            assert!(m.first + m.count <= segs.len() && m.count > 0, "bad OutMsg");
            let namelen = put_addr(m.to, self.v6_socket, &mut self.names[i]);
            let h = &mut self.hdrs[i].msg_hdr;
            h.msg_name = (&mut self.names[i] as *mut libc::sockaddr_storage).cast();
            h.msg_namelen = namelen;
            // IoSlice is guaranteed ABI-compatible with iovec on Unix; the kernel only reads it.
            h.msg_iov = segs[m.first..].as_ptr() as *mut libc::iovec;
            h.msg_iovlen = m.count;
            h.msg_flags = 0;
            match m.gso {
                Some(size) => {
                    let ctrl = &mut self.ctrl[i].0;
                    h.msg_control = ctrl.as_mut_ptr().cast();
                    // SAFETY: CMSG_SPACE is a pure size computation.
                    h.msg_controllen =
                        unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as usize;
                    // SAFETY: the control buffer (32 bytes, 8-aligned) holds CMSG_SPACE(2) = 24
                    // bytes; CMSG_FIRSTHDR/CMSG_DATA point inside it.
                    unsafe {
                        let c = libc::CMSG_FIRSTHDR(h);
                        (*c).cmsg_level = libc::SOL_UDP;
                        (*c).cmsg_type = libc::UDP_SEGMENT;
                        (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as usize;
                        (libc::CMSG_DATA(c) as *mut u16).write_unaligned(size);
                    }
                }
                None => {
                    h.msg_control = std::ptr::null_mut();
                    h.msg_controllen = 0;
                }
            }
        }
        // SAFETY: the first `n` headers point at live names, control buffers and the caller's
        // segments (borrowed for the call); sendmmsg only reads them.
        let r = unsafe { libc::sendmmsg(fd.as_raw_fd(), self.hdrs.as_mut_ptr(), n as u32, 0) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_round_trip_through_sockaddr_storage() {
        // SAFETY: all-zero is a valid sockaddr_storage.
        let mut st: libc::sockaddr_storage = unsafe { zeroed() };
        for s in ["10.99.0.2:51820", "[fd00:99::2]:443"] {
            let a: SocketAddr = s.parse().unwrap();
            let len = put_addr(a, false, &mut st);
            assert_eq!(get_addr(&st, len), Some(a));
        }
        let a: SocketAddr = "10.0.0.1:9".parse().unwrap();
        let len = put_addr(a, true, &mut st);
        assert_eq!(
            get_addr(&st, len),
            Some("[::ffff:10.0.0.1]:9".parse().unwrap()),
            "v4 on a v6 socket is sent v4-mapped"
        );
    }

    #[test]
    fn batches_carry_datagrams_over_loopback() {
        let a = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let b = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = b.local_addr().unwrap();
        let mut send = SendBatch::new(4, false);
        let payloads = [b"one".as_slice(), b"two", b"three"];
        let segs: Vec<IoSlice> = payloads.iter().map(|p| IoSlice::new(p)).collect();
        let msgs: Vec<OutMsg> = (0..3)
            .map(|i| OutMsg {
                to,
                first: i,
                count: 1,
                gso: None,
            })
            .collect();
        use std::os::fd::AsFd;
        assert_eq!(send.send(a.as_fd(), &segs, &msgs).unwrap(), 3);
        let mut recv = RecvBatch::new(8);
        let mut bufs = vec![vec![0u8; 2048]; 8];
        let mut got = Vec::new();
        while got.len() < 3 {
            let n = recv.recv(b.as_fd(), &mut bufs).unwrap();
            for (i, buf) in bufs.iter().enumerate().take(n) {
                assert_eq!(recv.addr(i), Some(a.local_addr().unwrap()));
                got.push(buf[..recv.len(i)].to_vec());
            }
        }
        assert_eq!(
            got,
            vec![b"one".to_vec(), b"two".to_vec(), b"three".to_vec()]
        );
    }
}
