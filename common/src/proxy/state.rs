//! State shared by the PEP's tasks: the plan (swapped by a reload), the flow table, the
//! interception switch, the shutdown signal, the flows a reload revoked and the last nft
//! counter values.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use tokio::sync::{watch, Notify};

use crate::pep::control_stats::ControlStats;
use crate::pep::{
    Admission, CapChange, FlowId, FlowKey, FlowState, FlowTable, InterceptChange, MetricsHeader,
    PathKey, PepMetrics, Plan, Starts,
};

use super::control::{Clock, ControlLog};
use super::netcfg::NftCounters;
use super::nofile::Spare;
use super::pump::RelayMode;
use super::window::WindowBackend;

/// The paths' memory (careful resume, `proxy::start`), shared by the flows and the routes task.
pub type SharedStarts = Mutex<Starts<PathKey>>;

pub struct Shared {
    /// The plan new flows start with; a reload replaces it (`proxy::reload`), a flow keeps the
    /// one it started with. Subscribers (the accept loops) hear of a new one.
    pub plan: watch::Sender<Arc<Plan>>,
    /// Flows a reload took from their peer: they reset themselves (`proxy::flow`).
    pub revoked: watch::Sender<HashSet<FlowId>>,
    pub mode: RelayMode,
    table: Mutex<FlowTable>,
    /// Desired interception state; the netcfg task applies the latest value.
    pub intercept_tx: watch::Sender<bool>,
    /// Wakes the cap task when a client was capped or uncapped (`MaxFlowsPerClient`); it then
    /// reads the table's state and brings the nft sets to it.
    pub cap_notify: Notify,
    /// Becomes `true` when the PEP shuts down.
    pub shutdown_rx: watch::Receiver<bool>,
    pub overflow_syns: AtomicU64,
    pub intercepted_syns: AtomicU64,
    pub capped_syns: AtomicU64,
    /// Flows reset at accept for want of a descriptor, and the descriptor kept to do it.
    pub refused_flows: AtomicU64,
    pub spare: Spare,
    /// A flow's splice pipe came out smaller than `FlowBuffer` (logged once).
    pub pipes_short: AtomicBool,
    /// StarPEP: the window back-end (with `Mode = starpep`), the controllers' clock and the
    /// per-tick log.
    pub window: Option<Arc<dyn WindowBackend>>,
    pub clock: Clock,
    pub control_log: Option<ControlLog>,
    /// Careful resume: every satellite path's memory (`None` when off).
    pub starts: Option<SharedStarts>,
    /// Fast Open at the box: the satellite round trip its connects saw, which sets how long
    /// a new flow waits for its client's first bytes.
    pub handshake_rtt: super::fast_open::HandshakeRtt,
    /// The StarPEP controllers' histograms and phase times, for the metrics.
    pub control_stats: Mutex<ControlStats>,
}

impl Shared {
    pub fn new(
        plan: Plan,
        mode: RelayMode,
        intercept_tx: watch::Sender<bool>,
        shutdown_rx: watch::Receiver<bool>,
    ) -> Shared {
        let table = FlowTable::new(plan.max_flows).with_client_caps(
            plan.max_flows_per_host,
            plan.max_flows_per_peer,
            plan.tenants.clone(),
        );
        let table = Mutex::new(table);
        let starts = plan.start.clone().map(|p| Mutex::new(Starts::new(p)));
        Shared {
            plan: watch::Sender::new(Arc::new(plan)),
            revoked: watch::Sender::new(HashSet::new()),
            mode,
            table,
            intercept_tx,
            cap_notify: Notify::new(),
            shutdown_rx,
            overflow_syns: AtomicU64::new(0),
            intercepted_syns: AtomicU64::new(0),
            capped_syns: AtomicU64::new(0),
            refused_flows: AtomicU64::new(0),
            spare: Spare::new(),
            pipes_short: AtomicBool::new(false),
            window: None,
            clock: Clock::new(),
            control_log: None,
            starts,
            handshake_rtt: Default::default(),
            control_stats: Mutex::default(),
        }
    }

    /// The plan new flows start with now.
    pub fn plan(&self) -> Arc<Plan> {
        self.plan.borrow().clone()
    }

    pub fn table<R>(&self, f: impl FnOnce(&mut FlowTable) -> R) -> R {
        f(&mut self.table.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Admits an accepted flow; passes the table's decisions (pause, cap) on.
    pub fn admit(&self, key: FlowKey, now: Instant) -> Admission {
        let (adm, caps) = self.table(|t| {
            let a = t.admit(key, now);
            (a, t.take_cap_changes())
        });
        if adm.over_cap {
            tracing::debug!("flow from {} arrived over its client's share", key.client);
        }
        self.intercept_change(adm.change);
        self.cap_changes(caps);
        adm
    }

    /// Sets the flow table's limit (`MaxFlows`, or fewer when the descriptors allow fewer).
    pub fn set_flow_limit(&self, max: usize) {
        let change = self.table(|t| t.set_max(max));
        self.intercept_change(change);
    }

    /// Removes a finished flow; passes the table's decisions (resume, uncap) on.
    pub fn remove(&self, id: FlowId, state: FlowState, up: u64, down: u64) {
        let (change, caps) = self.table(|t| {
            let c = t.remove(id, state, up, down);
            (c, t.take_cap_changes())
        });
        self.intercept_change(change);
        self.cap_changes(caps);
        // Quietly: the flows only need to hear of new revocations.
        self.revoked.send_if_modified(|r| {
            r.remove(&id);
            false
        });
    }

    pub fn cap_changes(&self, caps: Vec<CapChange>) {
        if caps.is_empty() {
            return;
        }
        let plan = self.plan();
        for c in &caps {
            match c {
                CapChange::Cap(t) => tracing::warn!(
                    "client {t:?} holds its share of the flow table (per host {}, per peer {}): \
                     its new flows pass unsplit",
                    plan.max_flows_per_host,
                    plan.max_flows_per_peer
                ),
                CapChange::Uncap(t) => {
                    tracing::info!("client {t:?} below its share again: splitting its new flows")
                }
            }
        }
        self.cap_notify.notify_one();
    }

    /// Passes a pause/resume decision of the table to the netcfg task.
    pub fn intercept_change(&self, c: Option<InterceptChange>) {
        match c {
            Some(InterceptChange::Pause) => {
                let n = self.table(|t| t.max());
                tracing::warn!(
                    "MaxFlows {n} reached: new TCP flows pass the tunnel unsplit until flows end"
                );
                let _ = self.intercept_tx.send(false);
            }
            Some(InterceptChange::Resume) => {
                tracing::info!("flow table below its low watermark: splitting new flows again");
                let _ = self.intercept_tx.send(true);
            }
            None => {}
        }
    }

    pub fn set_counters(&self, c: NftCounters) {
        self.overflow_syns.store(c.overflow, Relaxed);
        self.intercepted_syns.store(c.intercepted, Relaxed);
        self.capped_syns.store(c.capped, Relaxed);
    }

    pub fn metrics(&self) -> PepMetrics {
        let p = self.plan();
        let h = MetricsHeader {
            role: p.role,
            mode: if p.starpep.as_ref().is_some_and(|s| s.apply) {
                "starpep"
            } else {
                "split"
            }
            .into(),
            window_backend: self.window.as_ref().map(|b| b.name().to_string()),
            tunnel: match p.tunnel {
                crate::config::TunnelMode::WireGuard => "wireguard".into(),
                crate::config::TunnelMode::None => "none".into(),
            },
            table: p.table.clone(),
            proxy_port: p.proxy_port,
            overflow_syns: self.overflow_syns.load(Relaxed),
            intercepted_syns: self.intercepted_syns.load(Relaxed),
            capped_syns: self.capped_syns.load(Relaxed),
            refused_flows: self.refused_flows.load(Relaxed),
        };
        let now = Instant::now();
        self.table(|t| PepMetrics::snapshot(&h, t, now))
    }
}
