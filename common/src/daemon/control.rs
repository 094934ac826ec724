//! The daemon's one control thread: answers the requests of `show` and `reload` on the
//! interface's control socket (`io::control`), with or without a tunnel; and the metrics
//! thread, which serves the same figures to Prometheus (`MetricsListen`, `io::http`).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::io::control::ControlServer;
use crate::io::http::MetricsServer;
use crate::io::IoError;
use crate::proxy::PepMonitor;
use crate::tunnel::{Engine, InterfaceInfo};

use super::metrics::Exported;
use super::reload::{reload_logged, SharedReloader};

/// The request answered with the interface and its peers (JSON `InterfaceMetrics`).
pub const SHOW_REQUEST: &str = "show";
/// The request answered with the PEP's metrics (JSON `PepMetrics`); an error without a PEP.
pub const PEP_REQUEST: &str = "pep";
/// The request that reloads the config file: answered with `{"reloaded": ReloadReport}`, or
/// `{"error": "..."}` (every reason, one per line; nothing changed).
pub const RELOAD_REQUEST: &str = "reload";

/// What the control thread answers from.
pub struct Answers {
    pub info: InterfaceInfo,
    /// The peers (without tunnel the engine only describes them: no handshakes).
    pub engine: Arc<Engine>,
    /// Handshakes happen: their dates are taken from the wall clock (0 otherwise).
    pub tunnel: bool,
    pub pep: Option<PepMonitor>,
    pub reloader: SharedReloader,
}

fn error(msg: impl std::fmt::Display) -> String {
    serde_json::json!({ "error": msg.to_string() }).to_string()
}

impl Answers {
    fn snapshot(&self) -> crate::tunnel::InterfaceMetrics {
        let now = if self.tunnel { unix_now() } else { 0 };
        self.engine.snapshot(&self.info, now)
    }

    /// What a scrape reports now (reads the nft counters: a few ms).
    pub fn exported(&self) -> Exported {
        let pep = self.pep.as_ref().map(PepMonitor::metrics);
        // The controllers' figures when the PEP controls windows (`Mode = starpep`).
        let control = match (&self.pep, &pep) {
            (Some(m), Some(p)) if p.mode == "starpep" => Some(m.control_stats()),
            _ => None,
        };
        Exported {
            iface: self.snapshot(),
            pep,
            control,
        }
    }

    /// The answer to one request line.
    pub fn answer(&self, req: &str) -> String {
        match req {
            SHOW_REQUEST => serde_json::to_string(&self.snapshot()).unwrap_or_else(error),
            PEP_REQUEST => match &self.pep {
                Some(m) => serde_json::to_string(&m.metrics()).unwrap_or_else(error),
                None => error(format!("unknown request {req:?}")),
            },
            RELOAD_REQUEST => match reload_logged(&self.reloader, "reload command") {
                Ok(r) => serde_json::json!({ "reloaded": r }).to_string(),
                Err(e) => error(e),
            },
            other => error(format!("unknown request {other:?}")),
        }
    }
}

/// Serves `server` on its own thread until `stop`, and `metrics` (if any) on another.
pub fn spawn(
    server: ControlServer,
    metrics: Option<MetricsServer>,
    answers: Answers,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<JoinHandle<()>>, IoError> {
    let answers = Arc::new(answers);
    let mut threads = Vec::new();
    if let Some(m) = metrics {
        let (a, stop) = (answers.clone(), stop.clone());
        tracing::info!("metrics at http://{}/metrics", m.addr());
        threads.push(
            std::thread::Builder::new()
                .name("metrics".into())
                .spawn(move || m.serve(&stop, || a.exported().encode()))
                .map_err(|e| IoError::sys("spawn metrics thread", e))?,
        );
    }
    let stop = stop.clone();
    threads.push(
        std::thread::Builder::new()
            .name("control".into())
            .spawn(move || server.serve(&stop, |req| answers.answer(req)))
            .map_err(|e| IoError::sys("spawn control thread", e))?,
    );
    Ok(threads)
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}
