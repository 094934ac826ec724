//! The PEP in the endpoint daemons: started on top of the tunnel (`run_with` attach), or alone
//! with `Tunnel = none` (no TUN, no UDP socket: the classic distributed PEP), and its `pep`
//! control request for `show`.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Duration;

use crate::config::TunnelMode;
use crate::daemon::plan::Plan;
use crate::daemon::run::{Attachment, UpContext};
use crate::daemon::{DaemonError, Role as DaemonRole};
use crate::io::control::ControlServer;
use crate::io::undo_file::UndoFile;
use crate::io::IoError;
use crate::tunnel::{Engine, InterfaceInfo};

use super::{PepContext, PepMonitor, PepRunner, Role};

/// The control request answered with the PEP's metrics (JSON `PepMetrics`).
pub const PEP_REQUEST: &str = "pep";

/// How often the `Tunnel = none` daemon checks its stop flag.
const POLL: Duration = Duration::from_millis(100);

fn role(r: DaemonRole) -> Role {
    match r {
        DaemonRole::Client => Role::Box,
        DaemonRole::Pop => Role::Pop,
    }
}

/// The context for `plan`; `tunnel`: the TUN is up (name = the interface).
fn context(r: DaemonRole, plan: &Plan, tunnel: bool) -> PepContext {
    let mut ctx = PepContext::new(role(r), &plan.iface);
    if tunnel {
        ctx.tunnel_if = Some(plan.iface.clone());
        ctx.tunnel_mtu = Some(u32::from(plan.net.mtu));
        ctx.wg_fwmark = plan.socket_mark;
    }
    // The POP charges each peer's flows to that peer (`MaxFlowsPerClient`).
    if r == DaemonRole::Pop {
        ctx.peers = plan.peers.iter().map(|p| p.allowed_ips.clone()).collect();
    }
    if r == DaemonRole::Client {
        ctx.destinations_default = plan
            .peers
            .iter()
            .flat_map(|p| p.allowed_ips.clone())
            .collect();
    }
    ctx
}

fn pep_error(e: super::ProxyError) -> DaemonError {
    DaemonError::Io(IoError::sys("start PEP", std::io::Error::other(e)))
}

/// A PEP started on top of the tunnel.
struct Attached(PepRunner);

impl Attachment for Attached {
    fn stop(self: Box<Self>) {
        self.0.stop();
    }
}

/// The `Attach` function of `run_with`: starts the PEP when `[PEP] Mode = split` and registers
/// the `pep` control request.
pub fn attach(up: &UpContext) -> Result<Vec<Box<dyn Attachment>>, DaemonError> {
    let Some(pep) = up.plan.pep.as_ref().filter(|p| p.mode.splits()) else {
        return Ok(Vec::new());
    };
    let runner = PepRunner::start(pep, context(up.role, up.plan, true)).map_err(pep_error)?;
    let monitor = runner.monitor();
    up.control
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((PEP_REQUEST.to_string(), Box::new(move || answer(&monitor))));
    Ok(vec![Box::new(Attached(runner))])
}

fn answer(m: &PepMonitor) -> String {
    serde_json::to_string(&m.metrics_fresh()).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

/// Undoes what the PEP of a killed instance of `iface` left in this namespace (its undo
/// record), before the tunnel adds its rules: those take the priority below the lowest rule
/// present, so with stale PEP rules still there they would land before the new PEP's rules and
/// catch the packets it intercepts. Call once the control socket is bound (the name is ours).
pub fn undo_stale(iface: &str) {
    drop(UndoFile::take_over(&crate::pep::plan::table_name(iface)));
}

/// Whether `plan` asks for the PEP without a tunnel.
pub fn without_tunnel(plan: &Plan) -> bool {
    plan.pep
        .as_ref()
        .is_some_and(|p| p.mode.splits() && p.tunnel == TunnelMode::None)
}

/// `run` with `Tunnel = none`: no TUN and no UDP socket; the PEP splits flows routed across the
/// satellite link in clear. Runs until `stop` (SIGINT/SIGTERM), then removes everything.
pub fn run_without_tunnel(
    r: DaemonRole,
    plan: &Plan,
    stop: &Arc<AtomicBool>,
) -> Result<(), DaemonError> {
    let pep = plan.pep.as_ref().expect("checked by without_tunnel");
    let control = ControlServer::bind(&plan.iface)?;
    // The engine only describes the interface and its peers for `show` (no handshakes here).
    let engine = Engine::new(plan.private_key, plan.peers.clone())?;
    let runner = PepRunner::start(pep, context(r, plan, false)).map_err(pep_error)?;
    tracing::info!(iface = %plan.iface, "{} PEP up without tunnel", r.name());
    let monitor = runner.monitor();
    let info = InterfaceInfo {
        interface: plan.iface.clone(),
        listen_port: 0,
        fwmark: None,
    };
    let stop2 = stop.clone();
    let control_thread = std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            control.serve(&stop2, |req| match req {
                "show" => serde_json::to_string(&engine.snapshot(&info, 0))
                    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
                PEP_REQUEST => answer(&monitor),
                other => format!("{{\"error\":\"unknown request {other:?}\"}}"),
            })
        })
        .map_err(|e| IoError::sys("spawn control thread", e))?;
    while !stop.load(Relaxed) {
        std::thread::sleep(POLL);
    }
    tracing::info!(iface = %plan.iface, "shutting down");
    runner.stop();
    let _ = control_thread.join();
    Ok(())
}
