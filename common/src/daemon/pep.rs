//! The PEP in the endpoint daemons (daemon → proxy shell): what the daemon tells the PEP about
//! its interface and peers, and starting it on top of the tunnel or alone (`Tunnel = none`: no
//! TUN, no UDP socket, the classic distributed PEP).

use ipnet::IpNet;

use crate::config::TunnelMode;
use crate::proxy::{PepContext, PepRunner, Role as PepRole};

use super::plan::Plan;
use super::{DaemonError, Role};

fn pep_role(r: Role) -> PepRole {
    match r {
        Role::Client => PepRole::Box,
        Role::Pop => PepRole::Pop,
    }
}

/// The context for `plan`; `tunnel`: the TUN is up (name = the interface); `slots`: each peer's
/// AllowedIPs by the engine's slot (`Engine::slot_allowed_ips`).
pub fn context(r: Role, plan: &Plan, tunnel: bool, slots: Vec<Vec<IpNet>>) -> PepContext {
    let mut ctx = PepContext::new(pep_role(r), &plan.iface);
    if tunnel {
        ctx.tunnel_if = Some(plan.iface.clone());
        ctx.tunnel_mtu = Some(u32::from(plan.net.mtu));
        ctx.wg_fwmark = plan.socket_mark;
    }
    // The POP charges each peer's flows to that peer (`MaxFlowsPerClient`); both tell which
    // flows a reload takes from their peer.
    ctx.peers = slots;
    if r == Role::Client {
        ctx.destinations_default = plan
            .peers
            .iter()
            .flat_map(|p| p.allowed_ips.clone())
            .collect();
    }
    ctx
}

/// Undoes what the PEP of a killed instance of `iface` left ([`crate::proxy::undo_stale`]).
pub fn undo_stale(iface: &str) {
    crate::proxy::undo_stale(iface);
}

/// Whether `plan` asks for the PEP without a tunnel.
pub fn without_tunnel(plan: &Plan) -> bool {
    plan.pep
        .as_ref()
        .is_some_and(|p| p.mode.splits() && p.tunnel == TunnelMode::None)
}

/// Starts the PEP when `[PEP] Mode` splits (`None` otherwise); `tunnel`: the TUN is up.
pub fn start(
    r: Role,
    plan: &Plan,
    tunnel: bool,
    slots: Vec<Vec<IpNet>>,
) -> Result<Option<PepRunner>, DaemonError> {
    let Some(pep) = plan.pep.as_ref().filter(|p| p.mode.splits()) else {
        return Ok(None);
    };
    PepRunner::start(pep, context(r, plan, tunnel, slots))
        .map(Some)
        .map_err(DaemonError::Pep)
}
