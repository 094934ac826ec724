//! Errors of the eBPF back-end (load, attach, map updates), each saying what was being done.

use std::error::Error;
use std::net::SocketAddr;

/// `e` and its sources joined with ": " (aya's messages leave the OS error in the source).
fn chain(e: &dyn Error) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(s) = next {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = s.source();
    }
    out
}

/// An error of [`crate::WindowRewriter`].
#[derive(Debug, thiserror::Error)]
pub enum EbpfError {
    /// build.rs could not compile the C program (the reason says why, e.g. no clang).
    #[error("eBPF object not built: {0}")]
    NotBuilt(&'static str),
    /// Parsing the object or creating its maps failed (needs CAP_BPF and BTF).
    #[error("load eBPF object starpep_window.bpf.o (needs CAP_BPF, CAP_NET_ADMIN and BTF): {}", chain(.0))]
    Load(#[source] aya::EbpfError),
    /// The object lacks a program or map this crate expects (object and loader out of sync).
    #[error("eBPF object has no {kind} {name}")]
    Missing {
        kind: &'static str,
        name: &'static str,
    },
    /// The kernel rejected a program (the message includes the verifier log).
    #[error("load program {program}: {}", chain(source))]
    Program {
        program: &'static str,
        #[source]
        source: aya::programs::ProgramError,
    },
    /// The interface does not exist in this network namespace (or its type is unreadable).
    #[error("interface {iface}: {source}")]
    NoInterface {
        iface: String,
        #[source]
        source: std::io::Error,
    },
    /// The interface is neither Ethernet-framed nor a raw-IP (TUN) device.
    #[error(
        "interface {iface}: link type {link_type} is neither Ethernet (1) nor raw IP (65534, 519)"
    )]
    LinkType { iface: String, link_type: u16 },
    /// Attaching the program on the interface's egress failed.
    #[error("attach {program} on egress of {iface}: {}", chain(source))]
    Attach {
        iface: String,
        program: &'static str,
        #[source]
        source: aya::programs::ProgramError,
    },
    /// Detaching from the interface failed.
    #[error("detach from {iface}: {}", chain(source))]
    Detach {
        iface: String,
        #[source]
        source: aya::programs::ProgramError,
    },
    /// A map operation failed.
    #[error("map STARPEP_WINDOWS: {action}: {}", chain(source))]
    Map {
        action: String,
        #[source]
        source: aya::maps::MapError,
    },
    /// Local and remote addresses of different families (after IPv4-mapped normalisation).
    #[error("flow {local} -> {remote}: address families differ")]
    FamilyMismatch {
        local: SocketAddr,
        remote: SocketAddr,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_includes_the_os_error() {
        let io = std::io::Error::from_raw_os_error(libc::EPERM);
        let e = EbpfError::Map {
            action: "set 10.0.0.1:1 -> 10.0.0.2:2".to_string(),
            source: aya::maps::MapError::SyscallError(aya::sys::SyscallError {
                call: "bpf_map_update_elem",
                io_error: io,
            }),
        };
        let text = e.to_string();
        assert!(text.starts_with("map STARPEP_WINDOWS: set 10.0.0.1:1 -> 10.0.0.2:2: "));
        assert!(text.contains("Operation not permitted"), "{text}");
    }
}
