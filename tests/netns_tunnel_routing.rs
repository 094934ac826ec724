//! Roaming and cryptokey routing (root, netns): the box changes its WAN address mid-run and
//! traffic continues (the POP follows, `show` reports the new endpoint); a packet from the box
//! with an inner source outside its AllowedIPs is dropped and counted by the POP.

#[path = "netns_tunnel_common.rs"]
mod common;

use std::time::Duration;

use common::*;
use starpep_tests::{require_root, Node, TopoSpec, Topology};

#[test]
fn the_pop_follows_a_box_that_changes_address() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bi, pi, _pop, _bx) = up_pair(&topo, "");
    ping_ok(&topo, Node::Pc, &srv(), 5);
    let before = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    let port = show_json(&topo, Node::Box, "starpep-client", &bi)["listen_port"]
        .as_u64()
        .unwrap();
    assert_eq!(
        before["peers"][0]["endpoint"],
        format!("10.99.0.1:{port}").as_str()
    );

    // A continuous ping while the box's WAN address changes under it.
    let pinger = topo
        .spawn(Node::Pc, "ping", &["ping", "-i", "0.2", "-w", "6", &srv()])
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    // Primary address first: without promote_secondaries deleting it would take a secondary
    // with it.
    topo.run_ok(
        Node::Box,
        &["ip", "addr", "del", "10.99.0.1/24", "dev", "wan0"],
    )
    .unwrap();
    topo.run_ok(
        Node::Box,
        &["ip", "addr", "add", "10.99.0.11/24", "dev", "wan0"],
    )
    .unwrap();
    let mut pinger = pinger;
    pinger.wait_timeout(Duration::from_secs(10));
    let log = pinger.log();
    // Replies after the move: the last seconds of the run must have answered.
    let last_seq = log
        .lines()
        .filter_map(|l| {
            l.split("icmp_seq=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse::<u32>()
                .ok()
        })
        .max()
        .unwrap_or(0);
    assert!(
        last_seq >= 20,
        "pings stopped after the address change:\n{log}"
    );
    ping_ok(&topo, Node::Pc, &srv(), 3);
    let after = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    let peer = &after["peers"][0];
    assert_eq!(
        peer["endpoint"],
        format!("10.99.0.11:{port}").as_str(),
        "{peer}"
    );
    assert!(peer["endpoint_changes"].as_u64().unwrap() >= 1, "{peer}");
    // And a transfer over the new address.
    transfer(&topo, Node::Pc, Node::Srv, &srv(), 5201, 2_000_000);
}

#[test]
fn spoofed_inner_source_is_dropped_and_counted_by_the_pop() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (_bi, pi, _pop, _bx) = up_pair(&topo, "");
    ping_ok(&topo, Node::Pc, &srv(), 5);
    // The box sends from an address that is not in its AllowedIPs at the POP.
    topo.run_ok(
        Node::Box,
        &["ip", "addr", "add", "10.77.0.1/32", "dev", "lo"],
    )
    .unwrap();
    let out = topo
        .exec(
            Node::Box,
            &["ping", "-c", "3", "-W", "1", "-I", "10.77.0.1", &srv()],
        )
        .unwrap();
    assert!(!out.status.success(), "spoofed pings were answered");
    let peer = &show_json(&topo, Node::Pop, "starpep-pop", &pi)["peers"][0];
    assert_eq!(peer["dropped_source_not_allowed"], 3, "{peer}");
    // Legitimate traffic is unaffected.
    ping_ok(&topo, Node::Pc, &srv(), 3);
}
