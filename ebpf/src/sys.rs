//! Kernel ABI glue of the eBPF back-end: `aya::Pod` for the map structs, the link-type ioctl.

use std::io;
use std::os::fd::AsRawFd;

use nix::sys::socket::{socket, AddressFamily, SockFlag, SockType};

use crate::flow::{FlowEntry, FlowKey};

// SAFETY: FlowKey is #[repr(C)] and made only of u8 and u8 arrays: no padding, every bit
// pattern is a valid value, so it may be copied to and from the map's byte buffers.
unsafe impl aya::Pod for FlowKey {}

// SAFETY: FlowEntry is #[repr(C)] (u32, u8, [u8; 3], u64, u64): the padding is explicit
// (`pad`), the size (24) is asserted in flow.rs, and every bit pattern is a valid value.
unsafe impl aya::Pod for FlowEntry {}

/// The ARPHRD_* link type of `iface` in the calling thread's network namespace.
///
/// Uses `SIOCGIFHWADDR` on a socket instead of `/sys/class/net/<iface>/type`: sysfs shows the
/// namespace that mounted it, not the one a thread entered with `setns`.
pub(crate) fn link_type(iface: &str) -> io::Result<u16> {
    if iface.is_empty() || iface.len() >= libc::IFNAMSIZ || iface.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a valid interface name",
        ));
    }
    let sock = socket(
        AddressFamily::Inet,
        SockType::Datagram,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // SAFETY: ifreq is a plain C struct (a name array and a union of plain fields); all-zero
    // bytes are a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in req.ifr_name.iter_mut().zip(iface.bytes()) {
        *dst = src as libc::c_char;
    }
    // SAFETY: SIOCGIFHWADDR reads the NUL-terminated ifr_name (the name is shorter than
    // IFNAMSIZ, the rest is zero) and writes ifr_hwaddr inside `req`, which outlives the call.
    let rc = unsafe { libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFHWADDR, &mut req) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: on success the kernel filled the ifru_hwaddr member of the union.
    Ok(unsafe { req.ifr_ifru.ifru_hwaddr.sa_family })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_and_bad_names() {
        // "lo" exists in every namespace; its type is ARPHRD_LOOPBACK (772).
        assert_eq!(link_type("lo").unwrap(), 772);
        let err = link_type("starpep-nope0").unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::ENODEV));
        assert_eq!(
            link_type("a-name-that-is-too-long").unwrap_err().kind(),
            io::ErrorKind::InvalidInput
        );
    }
}
