//! Tunnel timers (root, netns): `PersistentKeepalive` keeps an idle tunnel alive with empty
//! 32-byte data messages at the configured interval, and only the side that configured it sends
//! them.

#[path = "netns_tunnel_common.rs"]
mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;
use starpep_tests::{require_root, Node, TopoSpec, Topology};

/// A WireGuard keepalive: an empty transport-data message (16-byte header + 16-byte tag).
const KEEPALIVE_LEN: u64 = 32;

fn peer_bytes(v: &Value) -> (u64, u64) {
    let p = &v["peers"][0];
    (
        p["rx_bytes"].as_u64().unwrap(),
        p["tx_bytes"].as_u64().unwrap(),
    )
}

#[test]
fn persistent_keepalive_sends_empty_messages_at_its_interval() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bi, pi, _pop, _bx) = up_pair(&topo, "PersistentKeepalive = 1\n");
    ping_ok(&topo, Node::Pc, &srv(), 5);
    // Let the handshake's own keepalive and any passive keepalive settle.
    std::thread::sleep(Duration::from_millis(1500));

    let (pop_rx0, _) = peer_bytes(&show_json(&topo, Node::Pop, "starpep-pop", &pi));
    let (box_rx0, box_tx0) = peer_bytes(&show_json(&topo, Node::Box, "starpep-client", &bi));
    let idle = Duration::from_secs(5);
    std::thread::sleep(idle);
    let (pop_rx1, _) = peer_bytes(&show_json(&topo, Node::Pop, "starpep-pop", &pi));
    let (box_rx1, box_tx1) = peer_bytes(&show_json(&topo, Node::Box, "starpep-client", &bi));

    let sent = box_tx1 - box_tx0;
    let got = pop_rx1 - pop_rx0;
    eprintln!(
        "idle {idle:?}: box sent {sent} B, POP received {got} B, box received {} B",
        box_rx1 - box_rx0
    );
    assert_eq!(
        sent % KEEPALIVE_LEN,
        0,
        "only keepalives while idle: {sent} B"
    );
    let n = sent / KEEPALIVE_LEN;
    assert!(
        (4..=6).contains(&n),
        "{n} keepalives in {idle:?} at a 1 s interval"
    );
    assert_eq!(got, sent, "the POP authenticated every keepalive");
    // The POP has no PersistentKeepalive: it stays silent on an idle tunnel.
    assert_eq!(
        box_rx1,
        box_rx0,
        "the POP sent {} B while idle",
        box_rx1 - box_rx0
    );
}
