//! starpep-client: entry point of the client box daemon (wiring only: CLI, logging, shared daemon).

use std::process::ExitCode;

use starpep_common::daemon::{dispatch, Cli, Role};

fn main() -> ExitCode {
    let cli = Cli::parse_for(Role::Client);
    init_logging(cli.log_level());
    dispatch(Role::Client, cli)
}

/// Logs to stderr; `RUST_LOG` overrides the level chosen by `-v`/`-q`.
fn init_logging(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
