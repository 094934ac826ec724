//! Daemon wiring shared by the client box and the POP: config → I/O → event loops, control socket.
//!
//! Both binaries are `Cli::parse_for(role)` + `dispatch`: the client has exactly one peer (its
//! POP, with an Endpoint), the POP any number. Threads: `tun-to-udp-K` and `udp-to-tun-K` (the
//! data path's workers, one per core, [`datapath`]), `control` (the `show` socket,
//! [`control`]), the PEP's runtime ([`pep`]) and the main thread (timers, signals).

pub mod change;
pub mod cli;
pub mod control;
pub mod datapath;
pub mod logging;
pub mod metrics;
pub mod pep;
pub mod plan;
pub mod reload;
pub mod run;

pub use cli::{dispatch, Cli};

/// Which endpoint a binary is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The customer terminal box: one peer, the POP.
    Client,
    /// The operator's point of presence: one peer per box.
    Pop,
}

impl Role {
    pub fn binary(self) -> &'static str {
        match self {
            Role::Client => "starpep-client",
            Role::Pop => "starpep-pop",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Role::Client => "client box",
            Role::Pop => "POP",
        }
    }

    pub fn about(self) -> &'static str {
        match self {
            Role::Client => {
                "StarPEP-WG client box: WireGuard endpoint (boringtun) of a satellite terminal"
            }
            Role::Pop => {
                "StarPEP-WG POP: WireGuard endpoint (boringtun) for many satellite terminals"
            }
        }
    }
}

/// Errors of the daemon commands.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Every problem of the config, one per line.
    #[error("invalid configuration:\n{0}")]
    Config(String),
    #[error(transparent)]
    Io(#[from] crate::io::IoError),
    #[error(transparent)]
    Engine(#[from] crate::tunnel::EngineError),
    #[error("start PEP: {0}")]
    Pep(#[source] crate::proxy::ProxyError),
    #[error("{0} hook: {1}")]
    Hook(&'static str, crate::io::IoError),
    #[error("{0}")]
    Usage(String),
    /// A reload the running daemon cannot apply, one reason per line (nothing changed).
    #[error("cannot apply live:\n{0}")]
    Refused(String),
    /// The daemon answered a `reload` with an error.
    #[error("{iface}: reload refused, nothing changed:\n{message}")]
    Reload { iface: String, message: String },
    /// `run` refuses a config file group/others can access.
    #[error("refusing to run: {0}")]
    Perms(#[from] crate::config::PermsError),
}
