//! Unit tests of a reload of the PEP: what applies to new flows and what is refused, the flows
//! a reload takes from their peer, new shares under live flows, the nft sets of a moved peer.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::time::Instant;

use ipnet::IpNet;

use super::*;
use crate::config::{self, BypassRule, PepMode};
use crate::pep::flows::{FlowKey, FlowTable, InterceptChange};
use crate::pep::plan::PlanInput;
use crate::pep::tenants::{CapChange, CapSync, Tenant, TenantMap};

fn nets(v: &[&str]) -> Vec<IpNet> {
    v.iter().map(|s| s.parse().unwrap()).collect()
}

fn input(peers: Vec<Vec<IpNet>>) -> PlanInput {
    PlanInput {
        name: "pop0".into(),
        tunnel_if: Some("pop0".into()),
        tunnel_mtu: Some(1420),
        destinations_default: nets(&["10.2.0.0/24"]),
        wg_fwmark: None,
        peers,
    }
}

fn plan(pep: &config::Pep, role: Role, peers: Vec<Vec<IpNet>>) -> Plan {
    Plan::new(pep, role, &input(peers)).unwrap()
}

fn flow(client: &str, server: &str) -> FlowKey {
    FlowKey {
        client: client.parse::<SocketAddr>().unwrap(),
        server: server.parse::<SocketAddr>().unwrap(),
    }
}

#[test]
fn per_flow_settings_apply_live_and_what_the_nft_table_holds_is_refused() {
    let pep = config::Pep::default();
    let old = plan(&pep, Role::Pop, vec![nets(&["10.1.0.0/24"])]);
    let mut live = pep.clone();
    live.link_rate_bps *= 2;
    live.max_flows = 10;
    live.max_flows_per_client = Some(4);
    live.flow_buffer *= 2;
    live.snat = true;
    let new = plan(
        &live,
        Role::Pop,
        vec![nets(&["10.1.0.0/24", "10.5.0.0/24"])],
    );
    assert_ne!(old, new);
    assert_eq!(live_changes(&old, &new), Ok(()));

    let mut bypass = pep.clone();
    bypass.bypass.push(BypassRule::Port(22));
    bypass.mode = PepMode::Split;
    bypass.fast_open = false;
    let refused = live_changes(&old, &plan(&bypass, Role::Pop, vec![])).unwrap_err();
    assert_eq!(refused.len(), 3, "{refused:?}");
    assert!(refused[0].contains("[PEP] Mode") && refused[1].contains("[PEP] Bypass"));
    // The listener takes SYN data or not from its start.
    assert!(refused[2].contains("[PEP] FastOpen"), "{refused:?}");
    assert!(refused.iter().all(|e| e.ends_with("this takes a restart")));
}

#[test]
fn the_box_splitting_its_peers_allowed_ips_cannot_change_them_live() {
    let pep = config::Pep::default();
    let old = Plan::new(&pep, Role::Box, &input(vec![])).unwrap();
    let mut i = input(vec![]);
    i.destinations_default = nets(&["10.2.0.0/24", "10.7.0.0/24"]);
    let refused = live_changes(&old, &Plan::new(&pep, Role::Box, &i).unwrap()).unwrap_err();
    assert!(
        refused[0].contains("Destinations (with none given"),
        "{refused:?}"
    );
    // With Destinations set, the box's AllowedIPs are the tunnel's business only.
    let mut given = pep.clone();
    given.destinations = nets(&["0.0.0.0/0"]);
    let old = Plan::new(&given, Role::Box, &input(vec![])).unwrap();
    assert_eq!(
        live_changes(&old, &Plan::new(&given, Role::Box, &i).unwrap()),
        Ok(())
    );
}

#[test]
fn flows_whose_peer_is_removed_or_no_longer_holds_them_are_orphans() {
    let pep = config::Pep::default();
    let old = plan(
        &pep,
        Role::Pop,
        vec![nets(&["10.1.0.0/24"]), nets(&["10.3.0.0/24"])],
    );
    // Slot 1 removed, slot 0 narrowed to 10.1.0.0/25, a new peer in slot 2 takes 10.1.0.128/25.
    let new = plan(
        &pep,
        Role::Pop,
        vec![nets(&["10.1.0.0/25"]), vec![], nets(&["10.1.0.128/25"])],
    );
    let t0 = Instant::now();
    let mut t = FlowTable::new(100);
    let kept = t.admit(flow("10.1.0.2:1000", "10.2.0.2:80"), t0).id;
    let removed = t.admit(flow("10.3.0.2:1000", "10.2.0.2:80"), t0).id;
    let moved = t.admit(flow("10.1.0.200:1000", "10.2.0.2:80"), t0).id;
    let _nobody = t.admit(flow("192.0.2.1:1000", "10.2.0.2:80"), t0).id;
    assert_eq!(orphans(&t, &old, &new), vec![removed, moved]);
    assert_eq!(orphans(&t, &old, &old), Vec::<u64>::new());
    let _ = kept;

    // The box: the server's address is what its peer carries.
    let old = Plan::new(&pep, Role::Box, &input(vec![nets(&["10.2.0.0/24"])])).unwrap();
    let new = Plan::new(
        &pep,
        Role::Box,
        &input(vec![vec![], nets(&["10.2.0.0/24"])]),
    )
    .unwrap();
    let mut t = FlowTable::new(100);
    let f = t.admit(flow("10.1.0.2:1000", "10.2.0.2:80"), t0).id;
    assert_eq!(orphans(&t, &old, &new), vec![f], "its peer was replaced");
}

#[test]
fn new_shares_pause_cap_and_resume_under_live_flows() {
    let t0 = Instant::now();
    let map = TenantMap::new(vec![nets(&["10.1.0.0/24"])]);
    let mut t = FlowTable::new(100).with_client_caps(100, 100, map.clone());
    for port in 1..=10 {
        t.admit(flow(&format!("10.1.0.2:{port}"), "10.2.0.2:80"), t0);
    }
    assert!(t.take_cap_changes().is_empty());
    // Lower: the table is full and the peer and the host are at their share at once.
    assert_eq!(
        t.set_limits(10, 8, 10, map.clone()),
        Some(InterceptChange::Pause)
    );
    let caps = t.take_cap_changes();
    assert!(caps.contains(&CapChange::Cap(Tenant::Peer(0))), "{caps:?}");
    assert!(caps.contains(&CapChange::Cap(Tenant::Addr("10.1.0.2".parse().unwrap()))));
    assert!(!t.intercepting());
    // Higher again: everything resumes.
    assert_eq!(
        t.set_limits(100, 100, 100, map),
        Some(InterceptChange::Resume)
    );
    assert_eq!(t.take_cap_changes().len(), 2);
    assert_eq!(t.client_cap().0.capped(), 0);
}

#[test]
fn a_capped_peer_whose_allowed_ips_change_is_moved_in_the_nft_sets() {
    let old = TenantMap::new(vec![nets(&["10.1.0.0/24"])]);
    let new = TenantMap::new(vec![nets(&["10.1.0.0/24", "10.5.0.0/24"])]);
    let want: HashSet<Tenant> = [Tenant::Peer(0)].into_iter().collect();
    let mut s = CapSync::default();
    for step in s.diff(&old, &want) {
        s.applied(&step);
    }
    assert!(s.diff(&old, &want).is_empty());
    let steps = s.diff(&new, &want);
    assert_eq!(steps.len(), 2, "{steps:?}");
    assert!(!steps[0].on && steps[0].ops.delete_peer == nets(&["10.1.0.0/24"]));
    assert!(steps[1].on && steps[1].ops.add_peer == nets(&["10.1.0.0/24", "10.5.0.0/24"]));
    for step in &steps {
        s.applied(step);
    }
    // Removed by a reload (an empty slot) and uncapped: its old prefixes are deleted.
    let gone = TenantMap::new(vec![vec![]]);
    let steps = s.diff(&gone, &HashSet::new());
    assert_eq!(steps.len(), 1);
    assert_eq!(
        steps[0].ops.delete_peer,
        nets(&["10.1.0.0/24", "10.5.0.0/24"])
    );
}
