//! The command line both daemons share: `run`, `check`, `genkey`, `pubkey`, `show`, `reload`.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::config::{self, PrivateKey};
use crate::io::control;
use crate::tunnel::InterfaceMetrics;

use super::control::{PEP_REQUEST, RELOAD_REQUEST, SHOW_REQUEST};
use super::reload::ReloadReport;
use super::{run, DaemonError, Role};

/// StarPEP-WG endpoint daemon.
#[derive(Debug, Parser)]
#[command(version)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the daemon in the foreground for a wg-quick style config (the interface is named after
    /// the file: box.conf → box).
    Run {
        /// The config file, NAME.conf; mode 0600 (a file group/others can access is refused).
        #[arg(short = 'c', long = "config")]
        config: PathBuf,
        /// More log output (-v debug, -vv trace).
        #[arg(short, long, action = clap::ArgAction::Count, conflicts_with = "quiet")]
        verbose: u8,
        /// Only warnings and errors.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Validate a config: prints every error with its line, exits 0 (valid) or 1.
    Check {
        #[arg(short = 'c', long = "config")]
        config: PathBuf,
    },
    /// Print a new base64 private key (as `wg genkey`).
    Genkey,
    /// Read a private key on stdin, print its public key (as `wg pubkey`).
    Pubkey,
    /// Show a running interface (peers, endpoints, handshakes, transfer) like `wg show`.
    Show {
        /// Interface name; default: every interface with a daemon in this network namespace.
        iface: Option<String>,
        /// Name the interface by its config file instead.
        #[arg(short = 'c', long = "config", conflicts_with = "iface")]
        config: Option<PathBuf>,
        /// Machine-readable output (one object, or an array when no interface is named).
        #[arg(long)]
        json: bool,
    },
    /// Re-read a running interface's config file and apply it live, as `wg syncconf` (SIGHUP
    /// does the same): added peers start, removed peers stop and their split flows are reset,
    /// changed AllowedIPs take effect, untouched peers keep their sessions and flows, [PEP]
    /// changes apply to new flows. An invalid file, or a change that takes a restart
    /// (ListenPort, Address, PrivateKey...), is refused with every reason and nothing changes
    /// (exit 1).
    Reload {
        /// Interface name.
        #[arg(required_unless_present = "config")]
        iface: Option<String>,
        /// Name the interface by its config file instead.
        #[arg(short = 'c', long = "config", conflicts_with = "iface")]
        config: Option<PathBuf>,
    },
}

impl Cli {
    /// The clap command of `role`'s binary (its name and description): what `parse_for` parses,
    /// and what the man pages and shell completions are generated from.
    pub fn command_for(role: Role) -> clap::Command {
        Cli::command().name(role.binary()).about(role.about())
    }

    /// Parses the process arguments under the binary name and description of `role`;
    /// `--version` prints `version` (the binary's, with its commit).
    pub fn parse_for(role: Role, version: &'static str) -> Cli {
        let matches = Cli::command_for(role).version(version).get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }

    /// The log filter the command asks for (`info` unless `run -v/-q`).
    pub fn log_level(&self) -> &'static str {
        match self.command {
            Command::Run { quiet: true, .. } => "warn",
            Command::Run { verbose: 1, .. } => "debug",
            Command::Run { verbose: 2.., .. } => "trace",
            _ => "info",
        }
    }
}

/// Runs the command; errors are printed to stderr and give exit status 1.
pub fn dispatch(role: Role, cli: Cli) -> ExitCode {
    match execute(role, cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}: {e}", role.binary());
            ExitCode::FAILURE
        }
    }
}

fn execute(role: Role, cli: Cli) -> Result<(), DaemonError> {
    match cli.command {
        Command::Run { config, .. } => run::run(role, &config),
        Command::Check { config } => {
            let plan = run::validate(role, &config)?;
            if let Err(e) = run::check_perms(&config) {
                eprintln!("{}: warning: {e}: `run` refuses it", role.binary());
            }
            println!(
                "{}: ok (interface {}, {} peer(s))",
                config.display(),
                plan.iface,
                plan.peers.len()
            );
            Ok(())
        }
        Command::Genkey => genkey(),
        Command::Pubkey => pubkey(),
        Command::Show {
            iface,
            config,
            json,
        } => show(iface, config, json),
        Command::Reload { iface, config } => reload(iface, config),
    }
}

/// How long `reload` waits for the daemon (it runs `ip` for each route it changes).
const RELOAD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);

fn reload(iface: Option<String>, config: Option<PathBuf>) -> Result<(), DaemonError> {
    let iface = match (iface, config) {
        (Some(i), _) => i,
        (None, Some(c)) => {
            config::interface_name(&c).map_err(|e| DaemonError::Config(e.to_string()))?
        }
        (None, None) => return Err(DaemonError::Usage("reload: name an interface".into())),
    };
    let text = control::request_timeout(&iface, RELOAD_REQUEST, RELOAD_TIMEOUT)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        DaemonError::Usage(format!("{iface}: bad answer from the daemon: {e}: {text}"))
    })?;
    if let Some(message) = v["error"].as_str() {
        return Err(DaemonError::Reload {
            iface,
            message: message.to_string(),
        });
    }
    let report: ReloadReport = serde_json::from_value(v["reloaded"].clone()).map_err(|e| {
        DaemonError::Usage(format!("{iface}: bad answer from the daemon: {e}: {text}"))
    })?;
    println!("{iface}: reloaded: {}", report.summary());
    for n in &report.notes {
        println!("note: {n}");
    }
    Ok(())
}

fn genkey() -> Result<(), DaemonError> {
    // As `wg genkey`: warn when the key is about to land in a file others can read.
    if crate::io::stdio::stdout_is_world_readable_file() {
        eprintln!(
            "Warning: writing to world accessible file.\n\
             Consider setting the umask to 077 and trying again."
        );
    }
    println!("{}", PrivateKey::generate());
    Ok(())
}

fn pubkey() -> Result<(), DaemonError> {
    let mut s = zeroize::Zeroizing::new(String::new());
    std::io::stdin()
        .take(4096)
        .read_to_string(&mut s)
        .map_err(|e| crate::io::IoError::sys("read stdin", e))?;
    let key: PrivateKey = s
        .trim()
        .parse()
        .map_err(|_| DaemonError::Usage("stdin: not a 32-byte base64 private key".into()))?;
    println!("{}", key.public_key());
    Ok(())
}

fn show(iface: Option<String>, config: Option<PathBuf>, json: bool) -> Result<(), DaemonError> {
    let named = match (iface, config) {
        (Some(i), _) => Some(i),
        (None, Some(c)) => {
            Some(config::interface_name(&c).map_err(|e| DaemonError::Config(e.to_string()))?)
        }
        (None, None) => None,
    };
    let ifaces = match &named {
        Some(i) => vec![i.clone()],
        None => control::list(),
    };
    let mut all = Vec::new();
    let mut peps = Vec::new();
    for i in &ifaces {
        let text = control::request(i, SHOW_REQUEST)?;
        let m: InterfaceMetrics = serde_json::from_str(&text).map_err(|e| {
            DaemonError::Usage(format!("{i}: bad answer from the daemon: {e}: {text}"))
        })?;
        all.push(m);
        // The PEP's block, when the daemon splits TCP (an error answer: no PEP).
        let pep = control::request(i, PEP_REQUEST)
            .ok()
            .and_then(|t| serde_json::from_str::<crate::proxy::PepMetrics>(&t).ok());
        peps.push(pep);
    }
    let mut out = std::io::stdout().lock();
    let res = if json {
        // Each interface object gains a "pep" member when its daemon splits TCP.
        let objs: Vec<serde_json::Value> = all
            .iter()
            .zip(&peps)
            .map(|(m, p)| {
                let mut v = serde_json::to_value(m).unwrap_or_default();
                if let (Some(p), Some(o)) = (p, v.as_object_mut()) {
                    o.insert("pep".into(), serde_json::to_value(p).unwrap_or_default());
                }
                v
            })
            .collect();
        let v = match (&named, objs.len()) {
            (Some(_), 1) => serde_json::to_string_pretty(&objs[0]),
            _ => serde_json::to_string_pretty(&objs),
        };
        writeln!(out, "{}", v.unwrap_or_default())
    } else {
        let text: Vec<String> = all
            .iter()
            .zip(&peps)
            .map(|(m, p)| m.render() + &p.as_ref().map(|p| p.render()).unwrap_or_default())
            .collect();
        write!(out, "{}", text.join("\n"))
    };
    res.map_err(|e| crate::io::IoError::sys("write stdout", e).into())
}
