//! satlink emulator I/O: AF_PACKET sockets in the `sat` namespace driving `link` in real time.

pub mod afpacket;
mod model;
pub mod pool;
pub mod pump;
pub mod report;
pub mod run;
pub mod session;
pub mod stats;
pub mod sys;

#[cfg(test)]
mod pump_tests;

/// Errors of the emulator's I/O layer; each names what was being done.
#[derive(Debug, thiserror::Error)]
pub enum EmuError {
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("{0}")]
    Setup(String),
}
