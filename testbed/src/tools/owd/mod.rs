//! owd-bulk: the test bed's timestamped bulk TCP transfer (end hosts of every benchmark and of
//! the sha256-checked transfers of the netns tests), and its packet-level cross-check.
//!
//! Pure parts: `chunk` (wire format, sender plan), `reasm` (receiver reassembly and
//! verification), `stats` / `report` (results), `units`, `pcap_match`. Socket shells: `net`,
//! `send`, `recv`; file shell: `pcap_read`. The command line is in `cli`. See docs/owd-bulk.md.

pub mod chunk;
pub mod cli;
pub mod net;
pub mod pcap_match;
pub mod pcap_read;
pub mod reasm;
pub mod recv;
pub mod report;
pub mod send;
pub mod stats;
pub mod units;

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod loopback_tests;
#[cfg(test)]
mod pcap_tests;

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
    #[error(transparent)]
    Pcap(#[from] pcap_read::PcapReadError),
    #[error("pcap-owd: {0}")]
    Match(#[from] pcap_match::MatchError),
    #[error("{0}")]
    Usage(String),
    #[error("{ctx}: {source}")]
    Context {
        ctx: String,
        #[source]
        source: Box<OwdError>,
    },
}

/// `pcap-owd`: OWD of the bulk flow's data segments between two captures.
pub fn run_pcap_owd(
    sender: &std::path::Path,
    receiver: &std::path::Path,
    port: Option<u16>,
    bin_ms: u64,
) -> Result<Report, OwdError> {
    let s = pcap_read::read_file(sender)?;
    let r = pcap_read::read_file(receiver)?;
    let m = pcap_match::match_segments(&s, &r, port)?;
    Ok(Report::pcap(&m, bin_ms))
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
