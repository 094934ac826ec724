//! owd-bulk command line (clap): `send`, `recv` and `pcap-owd`, each writing one JSON result to
//! stdout or `--json FILE` and a one-line summary to stderr.

use super::net::{listen, resolve, Endpoint};
use super::recv::{run_recv, RecvOpts};
use super::report::Report;
use super::send::{run_send, SendAmount, SendOpts};
use super::units::{parse_duration, parse_size};
use super::OwdError;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::time::Duration;

/// owd-bulk: timestamped bulk TCP transfer with per-chunk one-way delay.
#[derive(Debug, Parser)]
#[command(
    name = "owd-bulk",
    version,
    about = "Timestamped bulk TCP transfer: goodput, per-chunk one-way delay, sha256 (docs/owd-bulk.md)"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// Send one stream (to a listening receiver, or to the receiver that connects).
    Send(SendArgs),
    /// Receive and verify one stream, report goodput and per-chunk one-way delay.
    Recv(RecvArgs),
    /// One-way delay of the TCP data segments seen in two captures (sender side, receiver side).
    PcapOwd(PcapArgs),
}

/// Where the one connection comes from.
#[derive(Debug, Args)]
#[group(required = true, multiple = false)]
pub struct Conn {
    /// Listen on ADDR:PORT and accept one connection.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Connect to ADDR:PORT (`[v6]:port` for IPv6).
    #[arg(long, value_name = "ADDR:PORT")]
    pub connect: Option<String>,
}

/// Options of both ends.
#[derive(Debug, Args)]
pub struct Common {
    /// Write the JSON result here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Width of the series bins, ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub bin_ms: u64,
    /// Give up (exit 1) if the whole transfer, connection set-up included, takes longer.
    #[arg(long, default_value = "300s", value_parser = parse_duration)]
    pub timeout: Duration,
}

/// `send` arguments.
#[derive(Debug, Args)]
pub struct SendArgs {
    #[command(flatten)]
    pub conn: Conn,
    /// Stream size, chunk headers included (K/M/G/T = 2^10/2^20/2^30/2^40; at least 28).
    #[arg(long, value_parser = parse_size, conflicts_with = "duration", required_unless_present = "duration")]
    pub bytes: Option<u64>,
    /// Send full chunks for this long (`20s`, `500ms`, `2m`) instead of a fixed size.
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,
    /// TCP_NOTSENT_LOWAT of the sending socket, bytes (suffixes as --bytes).
    #[arg(long, default_value = "64K", value_parser = parse_size)]
    pub notsent_lowat: u64,
    /// TCP congestion control of the sending socket (cubic, bbr, reno; non-default needs root).
    #[arg(long)]
    pub cc: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

/// `recv` arguments.
#[derive(Debug, Args)]
pub struct RecvArgs {
    #[command(flatten)]
    pub conn: Conn,
    #[command(flatten)]
    pub common: Common,
    /// Also write every chunk's stamp and one-way delay here (CSV `stamp_unix_s,owd_ms`).
    #[arg(long, value_name = "FILE")]
    pub samples: Option<PathBuf>,
}

/// `pcap-owd` arguments.
#[derive(Debug, Args)]
pub struct PcapArgs {
    /// Capture at the sender's interface (tcpdump -w).
    #[arg(long, value_name = "FILE")]
    pub sender_pcap: PathBuf,
    /// Capture at the receiver's interface.
    #[arg(long, value_name = "FILE")]
    pub receiver_pcap: PathBuf,
    /// Only the flow with this TCP port (either end); default: the flow carrying most payload.
    #[arg(long)]
    pub port: Option<u16>,
    /// Write the JSON result here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Width of the series bins, ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub bin_ms: u64,
}

fn endpoint(c: &Conn) -> Result<Endpoint, OwdError> {
    match (&c.listen, &c.connect) {
        (Some(l), None) => Ok(Endpoint::Listen(listen(resolve(l)?)?)),
        (None, Some(a)) => Ok(Endpoint::Connect(resolve(a)?)),
        _ => Err(OwdError::Usage(
            "give exactly one of --listen, --connect".into(),
        )),
    }
}

/// Runs a parsed command line: the result is written as JSON, its summary printed to stderr.
pub fn run(cli: Cli) -> Result<Report, OwdError> {
    let (report, json) = match cli.cmd {
        Cmd::Send(a) => {
            let amount = match (a.bytes, a.duration) {
                (Some(b), None) => SendAmount::Bytes(b),
                (None, Some(d)) => SendAmount::Duration(d),
                _ => return Err(OwdError::Usage("give one of --bytes, --duration".into())),
            };
            let lowat = u32::try_from(a.notsent_lowat)
                .map_err(|_| OwdError::Usage("--notsent-lowat: too large".into()))?;
            let opts = SendOpts {
                amount,
                notsent_lowat: lowat,
                cc: a.cc,
                bin_ms: a.common.bin_ms,
                timeout: a.common.timeout,
            };
            (run_send(endpoint(&a.conn)?, &opts)?, a.common.json)
        }
        Cmd::Recv(a) => {
            let opts = RecvOpts {
                bin_ms: a.common.bin_ms,
                timeout: a.common.timeout,
                samples: a.samples,
            };
            (run_recv(endpoint(&a.conn)?, &opts)?, a.common.json)
        }
        Cmd::PcapOwd(a) => (
            super::run_pcap_owd(&a.sender_pcap, &a.receiver_pcap, a.port, a.bin_ms)?,
            a.json,
        ),
    };
    write_json(&report, json.as_deref())?;
    eprintln!("{}", report.summary());
    Ok(report)
}

/// Writes the result to `path` or stdout.
pub fn write_json(r: &Report, path: Option<&std::path::Path>) -> Result<(), OwdError> {
    let mut s = serde_json::to_string_pretty(r).expect("report serialises");
    s.push('\n');
    match path {
        Some(p) => {
            std::fs::write(p, s).map_err(|e| OwdError::io(format!("write {}", p.display()), e))
        }
        None => {
            use std::io::Write;
            std::io::stdout()
                .write_all(s.as_bytes())
                .map_err(|e| OwdError::io("write stdout", e))
        }
    }
}
