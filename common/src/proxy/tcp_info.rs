//! A socket's `TCP_INFO` and BBR's `TCP_CC_INFO` in the proxy shell: read as bytes through
//! `sys` and parsed by the cores (`pep::tcpinfo`, `pep::bbrinfo`). `None` when the socket is
//! gone or the kernel gave nothing to parse.

use std::os::fd::AsFd;

use socket2::Socket;

use crate::pep::{BbrInfo, TcpInfo};

use super::sys;

/// A socket's TCP_INFO, parsed.
pub fn info(s: &Socket) -> Option<TcpInfo> {
    let b = sys::tcp_info_bytes(s.as_fd()).ok()?;
    TcpInfo::parse(&b)
}

/// BBR's figures of a socket (`None` under another congestion control).
pub fn bbr(s: &Socket) -> Option<BbrInfo> {
    BbrInfo::parse(&sys::cc_info_bytes(s.as_fd()).ok()?)
}
