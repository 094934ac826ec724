//! Interop with the reference userspace WireGuard (root, netns): starpep-client against
//! wireguard-go + wg as the POP, and wireguard-go + wg as the box against starpep-pop.
//! Handshake and data both ways (pings each way and a checked transfer).

#[path = "netns_tunnel_common.rs"]
mod common;

use common::*;
use starpep_tests::{require_root, Node, TopoSpec, Topology};

#[test]
fn starpep_client_talks_to_wireguard_go_as_pop() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, pk) = (keys(), keys());
    let (bi, wi) = (iface(&topo, "b"), iface(&topo, "wgp"));
    let _pop = start_wireguard_go(
        &topo,
        Node::Pop,
        &wi,
        &WgGoSpec {
            keys: &pk,
            listen_port: Some(WG_PORT),
            peer_public: &bk.public,
            endpoint: None,
            allowed: POP_ALLOWED,
            addresses: &["10.8.0.1/24", "fd00:8::1/64"],
            routes: &["10.1.0.0/24", "fd00:1::/64"],
        },
    );
    let box_conf = write_conf(
        &topo,
        &bi,
        &box_conf(&bk, &pk.public, "10.99.0.2:51820", BOX_ALLOWED, ""),
    );
    let _bx = start_daemon(&topo, Node::Box, "starpep-client", &box_conf);
    ping_ok(&topo, Node::Pc, &srv(), 5);
    ping_ok(&topo, Node::Srv, "10.1.0.2", 5);
    ping_ok(&topo, Node::Pc, &srv6(), 5);
    transfer(&topo, Node::Pc, Node::Srv, &srv(), 5101, 4_000_000);
    transfer(&topo, Node::Srv, Node::Pc, "10.1.0.2", 5102, 4_000_000);
    // wireguard-go's own view: a handshake with our box and traffic both ways.
    let dump = topo
        .run_ok(Node::Pop, &["wg", "show", &wi, "dump"])
        .unwrap();
    let peer = dump.lines().nth(1).expect("peer line");
    let f: Vec<&str> = peer.split('\t').collect();
    assert_eq!(f[0], bk.public, "{dump}");
    assert_ne!(f[4], "0", "no handshake in wg show: {dump}");
    let (rx, tx): (u64, u64) = (f[5].parse().unwrap(), f[6].parse().unwrap());
    assert!(rx > 4_000_000 && tx > 4_000_000, "{dump}");
}

#[test]
fn wireguard_go_box_talks_to_starpep_pop() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, pk) = (keys(), keys());
    let (wi, pi) = (iface(&topo, "wgb"), iface(&topo, "p"));
    let pop_conf = write_conf(&topo, &pi, &pop_conf(&pk, &bk.public, ""));
    let _pop = start_daemon(&topo, Node::Pop, "starpep-pop", &pop_conf);
    let _bx = start_wireguard_go(
        &topo,
        Node::Box,
        &wi,
        &WgGoSpec {
            keys: &bk,
            listen_port: None,
            peer_public: &pk.public,
            endpoint: Some("10.99.0.2:51820"),
            allowed: BOX_ALLOWED,
            addresses: &["10.8.0.2/24", "fd00:8::2/64"],
            routes: &["10.2.0.0/24", "fd00:2::/64"],
        },
    );
    ping_ok(&topo, Node::Pc, &srv(), 5);
    ping_ok(&topo, Node::Srv, "10.1.0.2", 5);
    ping_ok(&topo, Node::Srv, "fd00:1::2", 5);
    transfer(&topo, Node::Pc, Node::Srv, &srv(), 5103, 4_000_000);
    transfer(&topo, Node::Srv, Node::Pc, "10.1.0.2", 5104, 4_000_000);
    let p = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    let peer = &p["peers"][0];
    assert_eq!(peer["public_key"], bk.public.as_str());
    assert!(peer["latest_handshake_unix"].is_u64(), "{peer}");
    assert!(peer["rx_bytes"].as_u64().unwrap() > 4_000_000, "{peer}");
    assert!(peer["tx_bytes"].as_u64().unwrap() > 4_000_000, "{peer}");
}
