//! What a reload may change in a running PEP (pure): which `[PEP]` settings apply to new flows,
//! which would need the nft table, listeners or window back-end set up again (refused: they take
//! a restart), and which live flows lose the peer that carried them.

use super::flows::{FlowId, FlowTable};
use super::plan::{Plan, Role};
use super::tenants::Tenant;

/// The settings a reload cannot change in a running PEP, with the keys that set them. Every
/// other part of the plan (socket options and buffers, `LinkRate`/`LinkRtt`, StarPEP's
/// parameters, careful resume's, `FlowBuffer`, `IdleTimeout`, `SNAT`, the `MaxFlows*` shares,
/// the peers' AllowedIPs) applies to the flows that start after it.
pub fn live_changes(old: &Plan, new: &Plan) -> Result<(), Vec<String>> {
    let mut refused = Vec::new();
    let mut check = |same: bool, what: &str| {
        if !same {
            refused.push(format!("[PEP] {what}: changed; this takes a restart"));
        }
    };
    check(old.tunnel == new.tunnel, "Tunnel");
    check(
        old.starpep.as_ref().map(|s| s.apply) == new.starpep.as_ref().map(|s| s.apply),
        "Mode",
    );
    check(old.proxy_port == new.proxy_port, "ProxyPort");
    check(old.intercept == new.intercept, "Intercept");
    let dests = if old.role == Role::Box {
        "Destinations (with none given, the box splits what its peer's AllowedIPs route)"
    } else {
        "Destinations"
    };
    check(old.dst4 == new.dst4 && old.dst6 == new.dst6, dests);
    check(
        old.bypass_ports == new.bypass_ports
            && old.bypass4 == new.bypass4
            && old.bypass6 == new.bypass6,
        "Bypass",
    );
    check(old.init_cwnd == new.init_cwnd, "InitCwnd");
    check(old.start.is_some() == new.start.is_some(), "Resume");
    check(old.fast_open == new.fast_open, "FastOpen");
    // (A Mode change already names what the controller's presence changes.)
    if let (Some(o), Some(n)) = (old.starpep.as_ref(), new.starpep.as_ref()) {
        check(o.window_control == n.window_control, "WindowControl");
        check(o.control_log == n.control_log, "ControlLog");
    }
    if refused.is_empty() {
        Ok(())
    } else {
        Err(refused)
    }
}

/// The live flows a reload from `old` to `new` takes from the peer that carried them: the
/// address the tunnel carries for the flow (the client's at the POP, the server's at the box)
/// was held by a peer's AllowedIPs and is now held by no peer or by another one.
pub fn orphans(table: &FlowTable, old: &Plan, new: &Plan) -> Vec<FlowId> {
    table
        .iter()
        .filter(|(_, r)| {
            let addr = match old.role {
                Role::Pop => r.key.client.ip(),
                Role::Box => r.key.server.ip(),
            };
            match old.carriers.peer(addr) {
                Some(Tenant::Peer(i)) => new.carriers.peer(addr) != Some(Tenant::Peer(i)),
                _ => false,
            }
        })
        .map(|(id, _)| id)
        .collect()
}

#[cfg(test)]
#[path = "tests_reload.rs"]
mod tests;
