//! What a reload changes in a running daemon (pure): the running plan against the file's new
//! one. Peers change as `wg syncconf` changes them ([`diff_peers`]) and their AllowedIPs' routes
//! follow; `[Interface]` settings the running interface was set up with cannot change (the
//! reload is refused and names them); hooks and `DNS` changes wait for the next start.

use std::collections::BTreeSet;

use ipnet::IpNet;

use crate::io::netconf::RouteTable;
use crate::tunnel::{diff_peers, PeerDiff};

use super::plan::Plan;

/// A reload that can apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub peers: PeerDiff,
    /// AllowedIPs routes to add and to remove (the peers' prefixes, host bits cleared).
    pub routes_add: Vec<IpNet>,
    pub routes_del: Vec<IpNet>,
    /// Changes accepted but not applied by the running daemon (hooks), for the log.
    pub notes: Vec<String>,
}

fn routes(plan: &Plan) -> BTreeSet<IpNet> {
    plan.net.routes.iter().map(|n| n.trunc()).collect()
}

fn splits(plan: &Plan) -> bool {
    plan.pep.as_ref().is_some_and(|p| p.mode.splits())
}

/// From the running `old` to the file's `new` (of `file`): the change, or every reason it
/// cannot apply live (one line each, naming the file and the key).
pub fn change(old: &Plan, new: &Plan, file: &str) -> Result<Change, Vec<String>> {
    let mut refused = Vec::new();
    let mut check = |same: bool, key: &str, what: String| {
        if !same {
            refused.push(format!(
                "{file}: [Interface] {key}: {what}; this takes a restart"
            ));
        }
    };
    let (o, n) = (&old.net, &new.net);
    check(
        old.private_key == new.private_key,
        "PrivateKey",
        "changed".into(),
    );
    check(
        old.listen_port == new.listen_port,
        "ListenPort",
        format!("{} -> {}", old.listen_port, new.listen_port),
    );
    check(
        o.addresses == n.addresses,
        "Address",
        format!("{:?} -> {:?}", o.addresses, n.addresses),
    );
    check(o.mtu == n.mtu, "MTU", format!("{} -> {}", o.mtu, n.mtu));
    check(
        o.table == n.table,
        "Table",
        format!("{:?} -> {:?}", o.table, n.table),
    );
    check(
        o.fwmark == n.fwmark,
        "FwMark",
        format!("{:#x} -> {:#x}", o.fwmark, n.fwmark),
    );
    check(
        old.metrics_listen == new.metrics_listen,
        "MetricsListen",
        format!("{:?} -> {:?}", old.metrics_listen, new.metrics_listen),
    );
    let (was, is) = (routes(old), routes(new));
    let routes_add: Vec<IpNet> = is.difference(&was).copied().collect();
    let routes_del: Vec<IpNet> = was.difference(&is).copied().collect();
    let default_route = |v: &[IpNet]| v.iter().any(|r| r.prefix_len() == 0);
    if n.table == RouteTable::Auto && (default_route(&routes_add) || default_route(&routes_del)) {
        refused.push(format!(
            "{file}: [Peer] AllowedIPs: adding or removing a default route (/0) changes the \
             policy routing (Table = auto); this takes a restart"
        ));
    }
    if splits(old) != splits(new) {
        refused.push(format!(
            "{file}: [PEP]: adding or removing the section (or Mode = off) takes a restart"
        ));
    }
    let peers = match diff_peers(&old.peers, &new.peers) {
        Ok(d) => d,
        Err(e) => {
            refused.push(format!("{file}: [Peer] {e}"));
            PeerDiff::default()
        }
    };
    if !refused.is_empty() {
        return Err(refused);
    }
    let mut notes = Vec::new();
    let (oh, nh) = (&old.hooks, &new.hooks);
    for (key, a, b) in [
        ("PreUp", &oh.pre_up, &nh.pre_up),
        ("PostUp", &oh.post_up, &nh.post_up),
        ("PreDown", &oh.pre_down, &nh.pre_down),
        ("PostDown", &oh.post_down, &nh.post_down),
    ] {
        if a != b {
            notes.push(format!(
                "{file}: [Interface] {key}: changed; the running daemon keeps the hooks it \
                 started with (the new ones run at the next start)"
            ));
        }
    }
    Ok(Change {
        peers,
        routes_add,
        routes_del,
        notes,
    })
}

#[cfg(test)]
#[path = "tests_change.rs"]
mod tests;
