//! owd-bulk: the test bed's timestamped bulk TCP transfer (end hosts of every benchmark and of
//! the sha256-checked transfers of the netns tests), and its packet-level cross-check.
//!
//! Pure parts: `chunk` (wire format, sender plan), `reasm` (receiver reassembly and
//! verification), `stats` / `report` (results), `units`, `pcap_match`. Socket shells: `net`,
//! `send`, `recv`; file shell: `pcap_read`. The command line is in `cli`. See docs/owd-bulk.md.

pub mod chunk;
pub mod cli;
pub mod net;
pub mod reasm;
pub mod recv;
pub mod report;
pub mod send;
pub mod stats;
pub mod units;

#[cfg(test)]
mod loopback_tests;

pub use net::{listen, resolve, Endpoint};
pub use recv::{run_recv, RecvOpts};
pub use report::Report;
pub use send::{run_send, SendAmount, SendOpts};

/// Errors of a run.
#[derive(Debug, thiserror::Error)]
pub enum OwdError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{what}: timed out (--timeout {after:?})")]
    Timeout {
        what: String,
        after: std::time::Duration,
    },
    #[error("stream rejected: {0}")]
    Stream(#[source] reasm::StreamError),
    #[error("{0}")]
    Protocol(String),
    #[error("{0}")]
    Usage(String),
    #[error("{ctx}: {source}")]
    Context {
        ctx: String,
        #[source]
        source: Box<OwdError>,
    },
}

impl OwdError {
    /// An I/O error with what was being done.
    pub fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }

    /// Prefixes the error with `ctx`.
    pub fn context(self, ctx: &str) -> Self {
        Self::Context {
            ctx: ctx.to_string(),
            source: Box::new(self),
        }
    }
}
