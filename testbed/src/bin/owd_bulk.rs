//! owd-bulk: timestamped bulk TCP sender/receiver (end hosts of every benchmark); see
//! docs/owd-bulk.md. Exits 0 only after a complete, verified transfer.

use clap::Parser;
use starpep_testbed::tools::owd::cli::{run, Cli};
use std::process::ExitCode;

fn main() -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    match run(Cli::parse()) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("owd-bulk: error: {e}");
            ExitCode::FAILURE
        }
    }
}
