//! PEP I/O shell: TPROXY listeners, per-flow relays (splice), nftables/policy routing, TCP socket options.
//!
//! [`Pep::start`] resolves the `[PEP]` section for the daemon's role, opens the transparent
//! listeners, installs the nft table and policy routing, and runs the accept loops and one task
//! per flow on the caller's tokio runtime. [`PepHandle`] gives the metrics for `show` and
//! removes everything on [`PepHandle::shutdown`] (or on drop). See `docs/pep.md`.

mod control;
pub mod error;
mod fast_open;
mod flow;
mod listener;
pub mod netcfg;
mod nofile;
pub mod pump;
mod reload;
mod runner;
mod share;
mod sockopt;
mod start;
mod state;
mod sys;
mod tasks;
mod tcp_info;
pub mod window;
mod window_ebpf;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ipnet::IpNet;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::config::{self, TunnelMode};
use crate::pep::{Plan, PlanInput, Side};

pub use crate::pep::{PepMetrics, Role};
pub use error::ProxyError;
pub use pump::RelayMode;
pub use reload::PreparedPlan;
pub use runner::{PepMonitor, PepRunner};

use control::ControlLog;
use netcfg::NetCfg;
use state::Shared;
use window::{ClampBackend, WindowBackend};
use window_ebpf::EbpfBackend;

/// Undoes what the PEP of a killed instance named `name` left in this namespace (its undo
/// record), before the tunnel adds its rules: those take the priority below the lowest rule
/// present, so with stale PEP rules still there they would land before the new PEP's rules and
/// catch the packets it intercepts. Call once the control socket is bound (the name is ours).
pub fn undo_stale(name: &str) {
    drop(crate::io::undo_file::UndoFile::take_over(
        &crate::pep::plan::table_name(name),
    ));
}

/// What the daemon tells the PEP.
#[derive(Debug, Clone)]
pub struct PepContext {
    pub role: Role,
    /// The daemon's interface name (config file stem): names the nft table `starpep_<name>`.
    pub name: String,
    /// The TUN device (`None` with `Tunnel = none`).
    pub tunnel_if: Option<String>,
    pub tunnel_mtu: Option<u32>,
    /// Box: the peer's AllowedIPs, intercepted when `Destinations` is empty.
    pub destinations_default: Vec<IpNet>,
    /// WireGuard's FwMark, checked against the PEP's mark.
    pub wg_fwmark: Option<u32>,
    /// Each peer's AllowedIPs by the tunnel engine's slot (empty for a removed peer): one
    /// client each at the POP (`MaxFlowsPerClient`), and who carries which flows (a reload
    /// resets the flows it takes from their peer).
    pub peers: Vec<Vec<IpNet>>,
    /// How flows move bytes (splice unless measuring).
    pub relay: RelayMode,
}

impl PepContext {
    /// What the plan needs of the context.
    pub fn plan_input(&self) -> PlanInput {
        PlanInput {
            name: self.name.clone(),
            tunnel_if: self.tunnel_if.clone(),
            tunnel_mtu: self.tunnel_mtu,
            destinations_default: self.destinations_default.clone(),
            wg_fwmark: self.wg_fwmark,
            peers: self.peers.clone(),
        }
    }

    pub fn new(role: Role, name: &str) -> PepContext {
        PepContext {
            role,
            name: name.to_string(),
            tunnel_if: None,
            tunnel_mtu: None,
            destinations_default: Vec::new(),
            wg_fwmark: None,
            peers: Vec::new(),
            relay: RelayMode::default(),
        }
    }
}

/// Entry point of the PEP.
pub struct Pep;

/// How long shutdown waits for flows to reset themselves.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(3);

impl Pep {
    /// Starts splitting on the current tokio runtime. Needs CAP_NET_ADMIN (transparent sockets,
    /// nftables, policy routing). On error nothing stays installed.
    pub async fn start(cfg: &config::Pep, ctx: PepContext) -> Result<PepHandle, ProxyError> {
        let mut plan = Plan::new(cfg, ctx.role, &ctx.plan_input())?;
        if ctx.role == Role::Box && cfg.tunnel == TunnelMode::None {
            let nets: Vec<IpNet> = plan
                .dst4
                .iter()
                .map(|n| IpNet::V4(*n))
                .chain(plan.dst6.iter().map(|n| IpNet::V6(*n)))
                .collect();
            let devs = netcfg::route_devs(&nets);
            tracing::info!("satellite side (routes toward the destinations): {devs:?}");
            plan = plan.with_satellite_devs(&devs);
        }
        raise_nofile_limit();
        let listen_opts = plan.opts(Side::Accepted).clone();
        let port = plan.proxy_port;
        let mut listeners = Vec::new();
        if !plan.dst4.is_empty() {
            let a = SocketAddr::from((Ipv4Addr::UNSPECIFIED, port));
            listeners.push((a, sockopt::listener(a, &listen_opts, plan.fast_open)?));
        }
        if !plan.dst6.is_empty() {
            let a = SocketAddr::from((Ipv6Addr::UNSPECIFIED, port));
            match sockopt::listener(a, &listen_opts, plan.fast_open) {
                Ok(l) => listeners.push((a, l)),
                Err(e) if !listeners.is_empty() => tracing::warn!("IPv6 not split: {e}"),
                Err(e) => return Err(e),
            }
        }
        let listeners = listeners
            .into_iter()
            .map(|(a, s)| listener::to_tokio(s, a))
            .collect::<Result<Vec<_>, _>>()?;
        let window = plan
            .starpep
            .as_ref()
            .filter(|sp| sp.apply)
            .map(|sp| select_backend(sp, &plan))
            .transpose()?;
        // Both back-ends need the kernel's own window to shrink with the buffer: the clamp so
        // that a lower clamp takes effect on the next ACK; the eBPF rewrite because it grants
        // W beyond every ACK, so the sender fills the kernel's whole right edge, and an edge
        // made under a larger buffer would be filled past the buffer (pruned and dropped: the
        // start stall in docs/pep.md).
        let shrink = window.is_some();
        let net = {
            let plan = plan.clone();
            tokio::task::spawn_blocking(move || NetCfg::apply(&plan, shrink))
                .await
                .map_err(|e| ProxyError::sys("nft setup task", std::io::Error::other(e)))??
        };
        let net = Arc::new(Mutex::new(net));
        let (intercept_tx, intercept_rx) = watch::channel(true);
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        tracing::info!(
            role = ?plan.role,
            table = %plan.table,
            port,
            "PEP splitting TCP: intercept {:?}, destinations {:?} {:?}, bypass ports {:?}",
            plan.intercept,
            plan.dst4,
            plan.dst6,
            plan.bypass_ports
        );
        let control_log = match plan.starpep.as_ref().and_then(|s| s.control_log.as_ref()) {
            Some(p) => Some(ControlLog::create(p)?),
            None => None,
        };
        let mut shared = Shared::new(plan, ctx.relay, intercept_tx, shutdown_rx);
        shared.window = window;
        shared.control_log = control_log;
        let shared = Arc::new(shared);
        let mut tasks: Vec<JoinHandle<()>> = listeners
            .into_iter()
            .map(|l| tokio::spawn(listener::accept_loop(shared.clone(), l)))
            .collect();
        tasks.push(tokio::spawn(tasks::intercept(
            shared.clone(),
            net.clone(),
            intercept_rx,
        )));
        tasks.push(tokio::spawn(tasks::caps(shared.clone(), net.clone())));
        tasks.push(tokio::spawn(tasks::counters(shared.clone())));
        tasks.push(tokio::spawn(tasks::flow_budget(shared.clone())));
        tasks.push(tokio::spawn(start::routes_task(
            shared.clone(),
            net.clone(),
        )));
        Ok(PepHandle {
            shared,
            net,
            shutdown_tx,
            tasks,
        })
    }
}

/// A running PEP. Dropping it without [`PepHandle::shutdown`] still removes the nft table and
/// routing rules (and the flows end with the runtime).
pub struct PepHandle {
    shared: Arc<Shared>,
    net: Arc<Mutex<NetCfg>>,
    shutdown_tx: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl PepHandle {
    /// Snapshot of the flow table and counters (the nft SYN counters as the counters task
    /// last read them).
    pub fn metrics(&self) -> PepMetrics {
        self.shared.metrics()
    }

    /// Live flows.
    pub fn active_flows(&self) -> usize {
        self.shared.table(|t| t.len())
    }

    /// Resets every flow (both sides get RST: a cut stream must not look complete), stops the
    /// listeners and removes the nft table, rules and routes.
    pub async fn shutdown(self) {
        let _ = self.shutdown_tx.send(true);
        let end = tokio::time::Instant::now() + SHUTDOWN_GRACE;
        while self.active_flows() > 0 && tokio::time::Instant::now() < end {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let n = self.net.clone();
        let _ = tokio::task::spawn_blocking(move || {
            n.lock().unwrap_or_else(|e| e.into_inner()).teardown()
        })
        .await;
        tracing::info!("PEP stopped");
        // Drop aborts what is left.
    }
}

impl Drop for PepHandle {
    fn drop(&mut self) {
        let _ = self.shutdown_tx.send(true);
        for t in &self.tasks {
            t.abort();
        }
        self.net
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .teardown();
    }
}

/// The StarPEP window back-end for `WindowControl`: eBPF where it loads (`auto`, `ebpf`), the
/// socket clamp otherwise (`auto` says why in one log line; `ebpf` fails the start).
fn select_backend(
    sp: &crate::pep::StarpepPlan,
    plan: &Plan,
) -> Result<Arc<dyn WindowBackend>, ProxyError> {
    use crate::config::WindowControl;
    let clamp = || -> Arc<dyn WindowBackend> {
        tracing::info!("StarPEP window back-end: socket clamp (TCP_WINDOW_CLAMP)");
        Arc::new(ClampBackend)
    };
    Ok(match sp.window_control {
        WindowControl::Clamp => clamp(),
        WindowControl::Ebpf => Arc::new(EbpfBackend::start(plan)?),
        WindowControl::Auto => match EbpfBackend::start(plan) {
            Ok(b) => Arc::new(b),
            Err(e) => {
                tracing::warn!("{e}; falling back to the socket clamp");
                clamp()
            }
        },
    })
}

/// Flows hold two sockets and two pipes each: lift the soft descriptor limit to the hard one.
fn raise_nofile_limit() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        if soft < hard {
            if let Err(e) = setrlimit(Resource::RLIMIT_NOFILE, hard, hard) {
                tracing::warn!("RLIMIT_NOFILE {soft} -> {hard}: {e}");
            }
        }
    }
}

/// Resolves once the shutdown flag is set (at once if it already is). No guard is held across
/// the await, so the future stays `Send`.
async fn until_shutdown(rx: &mut watch::Receiver<bool>) {
    loop {
        if *rx.borrow_and_update() {
            return;
        }
        if rx.changed().await.is_err() {
            return;
        }
    }
}
