//! I/O layer: TUN, UDP sockets, routes, nftables, socket options, the control socket and the
//! metrics endpoint (the only place with syscalls).
//!
//! `sys` holds every `unsafe` block; the other modules are safe wrappers the daemon loops use.

pub mod cmd;
pub mod control;
pub mod http;
pub mod netconf;
pub mod stdio;
pub mod sys;
pub mod tun;
pub mod udp;
pub mod udp_group;

pub use tun::Tun;
pub use udp::Udp;
pub use udp_group::UdpGroup;

/// Errors of the I/O layer; each says what was being done.
#[derive(Debug, thiserror::Error)]
pub enum IoError {
    #[error("{what}: {source}")]
    Sys {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{cmd}` failed (exit {status}): {stderr}")]
    Command {
        cmd: String,
        status: String,
        stderr: String,
    },
}

impl IoError {
    pub fn sys(what: impl Into<String>, source: std::io::Error) -> IoError {
        IoError::Sys {
            what: what.into(),
            source,
        }
    }
}
