//! starpep-client: entry point of the client box daemon (wiring only: CLI, logging, shared daemon).

use std::process::ExitCode;

use starpep_common::daemon::{dispatch, logging, Cli, Role};

/// The version `--version` prints: the package's and the commit it was built from.
const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("STARPEP_COMMIT"), ")");

fn main() -> ExitCode {
    let cli = Cli::parse_for(Role::Client, VERSION);
    logging::init(cli.log_level());
    dispatch(Role::Client, cli)
}
