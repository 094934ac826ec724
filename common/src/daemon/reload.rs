//! `reload`: the daemon re-reads its config file and applies it live, as `wg syncconf` (the
//! control request `reload` and SIGHUP). Nothing changes unless the whole file is valid and
//! every change can apply ([`super::change`], `pep::reload`): then routes, peers and the PEP
//! change in that order, and the flows of removed peers are reset.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::io::netconf::Applied;
use crate::proxy::{PepMonitor, ProxyError};
use crate::tunnel::Engine;

use super::change::change;
use super::pep::context;
use super::plan::Plan;
use super::run::{check_perms, validate};
use super::{DaemonError, Role};

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReloadReport {
    pub peers_added: usize,
    pub peers_removed: usize,
    pub peers_changed: usize,
    pub peers_unchanged: usize,
    /// Split flows reset because their peer was removed (or no longer holds them).
    pub flows_reset: usize,
    /// Changes accepted but not applied by the running daemon (hooks).
    pub notes: Vec<String>,
}

impl ReloadReport {
    /// One line for the log and the `reload` command.
    pub fn summary(&self) -> String {
        format!(
            "{} peer(s) added, {} removed, {} changed, {} unchanged; {} split flow(s) reset",
            self.peers_added,
            self.peers_removed,
            self.peers_changed,
            self.peers_unchanged,
            self.flows_reset
        )
    }
}

/// What a reload changes, owned by the running daemon.
pub struct Reloader {
    role: Role,
    path: PathBuf,
    /// The plan running now (the last one applied).
    plan: Plan,
    engine: Arc<Engine>,
    /// The interface's routes (`None` without tunnel).
    net: Option<Applied>,
    pep: Option<PepMonitor>,
}

impl Reloader {
    pub fn new(
        role: Role,
        path: PathBuf,
        plan: Plan,
        engine: Arc<Engine>,
        net: Option<Applied>,
        pep: Option<PepMonitor>,
    ) -> Reloader {
        Reloader {
            role,
            path,
            plan,
            engine,
            net,
            pep,
        }
    }

    /// Gives the interface's routes and rules back for the shutdown.
    pub fn take_net(&mut self) -> Option<Applied> {
        self.net.take()
    }

    /// Re-reads the file and applies it; on error nothing changed.
    pub fn reload(&mut self) -> Result<ReloadReport, DaemonError> {
        check_perms(&self.path)?;
        let new = validate(self.role, &self.path)?;
        let file = self.path.display().to_string();
        let c = change(&self.plan, &new, &file).map_err(|v| DaemonError::Refused(v.join("\n")))?;
        let tunnel = self.net.is_some();
        let prepared = match (&self.pep, new.pep.as_ref()) {
            (Some(m), Some(cfg)) => {
                let slots = self.engine.slot_allowed_ips_after(&c.peers);
                let ctx = context(self.role, &new, tunnel, slots);
                let p = m.prepare(cfg, &ctx).map_err(|e| match e {
                    ProxyError::Reload(v) => DaemonError::Refused(
                        v.iter()
                            .map(|l| format!("{file}: {l}"))
                            .collect::<Vec<_>>()
                            .join("\n"),
                    ),
                    other => DaemonError::Pep(other),
                })?;
                Some((m, p))
            }
            _ => None,
        };
        if let Some(net) = self.net.as_mut() {
            net.update_routes(&new.net, &c.routes_add, &[])?;
        }
        if let Err(e) = self.engine.apply(&c.peers, &new.peers) {
            if let Some(net) = self.net.as_mut() {
                net.update_routes(&new.net, &[], &c.routes_add)?;
            }
            return Err(e.into());
        }
        let flows_reset = prepared.map_or(0, |(m, p)| m.commit(p));
        if let Some(net) = self.net.as_mut() {
            net.update_routes(&new.net, &[], &c.routes_del)?;
        }
        let d = &c.peers;
        let report = ReloadReport {
            peers_added: d.added.len(),
            peers_removed: d.removed.len(),
            peers_changed: d.changed.len(),
            peers_unchanged: d.unchanged.len(),
            flows_reset,
            notes: c.notes,
        };
        // The hooks stay those the daemon started with (`run` keeps its own plan for them).
        self.plan = new;
        Ok(report)
    }
}

/// The reloader the control thread and the main loop (SIGHUP) share.
pub type SharedReloader = Arc<Mutex<Reloader>>;

/// Reloads and logs the outcome (`via`: what asked for it).
pub fn reload_logged(r: &Mutex<Reloader>, via: &str) -> Result<ReloadReport, DaemonError> {
    let res = r.lock().unwrap_or_else(|e| e.into_inner()).reload();
    match &res {
        Ok(rep) => {
            tracing::info!("reloaded ({via}): {}", rep.summary());
            for n in &rep.notes {
                tracing::warn!("{n}");
            }
        }
        Err(e) => tracing::error!("reload ({via}) refused, nothing changed: {e}"),
    }
    res
}
