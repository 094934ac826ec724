//! Errors of the PEP shell: each says what was being done (plan, nft, routing, sockets).

use std::io;

use crate::io::IoError;
use crate::pep::PlanError;

#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("[PEP]: {0}")]
    Plan(#[from] PlanError),
    #[error("{what}: {source}")]
    Sys {
        what: String,
        #[source]
        source: io::Error,
    },
    #[error("nft {what}: {stderr}")]
    Nft { what: String, stderr: String },
    #[error(transparent)]
    Cmd(#[from] IoError),
    #[error("StarPEP eBPF back-end: {0}")]
    Ebpf(#[from] starpep_ebpf::EbpfError),
    /// A reload asked for changes a running PEP cannot make, one per line.
    #[error("{}", .0.join("\n"))]
    Reload(Vec<String>),
}

impl ProxyError {
    pub fn sys(what: impl Into<String>, source: io::Error) -> ProxyError {
        ProxyError::Sys {
            what: what.into(),
            source,
        }
    }
}
