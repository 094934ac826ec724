//! The PEP on its own threads: a small tokio runtime for the daemons, whose loops are threads.
//!
//! [`PepRunner::start`] returns once the PEP is set up (or failed); [`PepMonitor`] gives the
//! metrics to the control thread; [`PepRunner::stop`] resets the flows and removes the nft
//! table and routing rules before it returns.

use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::oneshot;

use crate::config;

use super::state::Shared;
use super::{Pep, PepContext, PepMetrics, ProxyError};

/// Worker threads of the PEP runtime (the machine has 2 cores; the data path has its own).
const WORKERS: usize = 2;

/// Read-only view of a running PEP, for `show`.
#[derive(Clone)]
pub struct PepMonitor {
    pub(super) shared: Arc<Shared>,
}

impl PepMonitor {
    /// The flow table and the daemon's copy of the nft SYN counters (no `nft` run here).
    pub fn metrics(&self) -> PepMetrics {
        self.shared.metrics()
    }

    /// The StarPEP controllers' histograms and phase times since start.
    pub fn control_stats(&self) -> crate::pep::control_stats::ControlStats {
        self.shared
            .control_stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// A PEP running on its own runtime thread.
pub struct PepRunner {
    monitor: PepMonitor,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl PepRunner {
    /// Starts the PEP; returns when it is intercepting (or with the setup error).
    pub fn start(cfg: &config::Pep, ctx: PepContext) -> Result<PepRunner, ProxyError> {
        let cfg = cfg.clone();
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("pep".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(WORKERS)
                    .thread_name("pep-worker")
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = ready_tx.send(Err(ProxyError::sys("PEP runtime", e)));
                        return;
                    }
                };
                rt.block_on(async move {
                    let handle = match Pep::start(&cfg, ctx).await {
                        Ok(h) => h,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e));
                            return;
                        }
                    };
                    let _ = ready_tx.send(Ok(PepMonitor {
                        shared: handle.shared.clone(),
                    }));
                    let _ = stop_rx.await;
                    handle.shutdown().await;
                });
            })
            .map_err(|e| ProxyError::sys("spawn PEP thread", e))?;
        let monitor = match ready_rx.recv() {
            Ok(Ok(m)) => m,
            Ok(Err(e)) => {
                let _ = thread.join();
                return Err(e);
            }
            Err(_) => {
                let _ = thread.join();
                return Err(ProxyError::sys(
                    "PEP thread",
                    std::io::Error::other("exited during start"),
                ));
            }
        };
        Ok(PepRunner {
            monitor,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    pub fn monitor(&self) -> PepMonitor {
        self.monitor.clone()
    }

    /// Stops the PEP and waits until its kernel state is removed.
    pub fn stop(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for PepRunner {
    fn drop(&mut self) {
        self.stop_now();
    }
}
