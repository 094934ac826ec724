//! The PEP's own port (root, netns, no emulation): only TPROXY-steered flows reach the
//! listener. A connection addressed to port 8399 of the box (LAN or tunnel address) or of the
//! POP (through the tunnel) is refused at once, over IPv4 and IPv6, and never becomes a flow of
//! either PEP; a flow whose real destination port is 8399 is still split and intact.

#[path = "netns_pep_common.rs"]
mod common;

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use common::*;
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

/// What a connect from the PC to `dst` saw: refused at once, or reset right after it was
/// answered (a box that split it and got a refusal from the far end).
fn refused(topo: &Topology, dst: &str) -> Duration {
    let dst = sa(dst);
    let t0 = Instant::now();
    match connect(topo, Node::Pc, dst) {
        // Refused by us, or (a flow the box split toward the far PEP, which refused it) reset
        // before connect() returned.
        Err(e) => {
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::ConnectionRefused | ErrorKind::ConnectionReset
                ),
                "{dst}: {e}"
            );
        }
        Ok(mut s) => {
            use std::io::Read;
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut b = [0u8; 1];
            let r = s.read(&mut b);
            assert!(
                matches!(&r, Err(e) if e.kind() == ErrorKind::ConnectionReset),
                "{dst}: expected a reset, got {r:?}"
            );
        }
    }
    t0.elapsed()
}

#[test]
fn direct_connections_to_the_proxy_port_are_refused() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    // Both listeners up and the handshake done (the POP's tunnel address answers).
    assert!(
        topo.wait_reachable(Node::Pc, "10.8.0.1", Duration::from_secs(10)),
        "the tunnel did not come up"
    );
    let targets = [
        // The box's LAN address and its tunnel address.
        format!("{}:8399", addr::BOX_LAN),
        "10.8.0.2:8399".to_string(),
        format!("[{}]:8399", addr::BOX_LAN6),
        "[fd00:8::2]:8399".to_string(),
        // The POP's tunnel address, through the tunnel.
        "10.8.0.1:8399".to_string(),
        "[fd00:8::1]:8399".to_string(),
    ];
    for t in &targets {
        let took = refused(&topo, t);
        eprintln!("{t}: refused in {took:?}");
        assert!(took < Duration::from_secs(2), "{t}: refusal took {took:?}");
    }
    // Nothing reached either listener as a flow to the PEP itself, and nothing lingers.
    let bp = bx.wait_idle(&topo, Duration::from_secs(5));
    let pp = pop.wait_idle(&topo, Duration::from_secs(5));
    assert_eq!(pp["accepted"], 0, "POP accepted a flow to itself: {pp}");
    // The box splits the two flows addressed to the POP (their destination is remote) and
    // resets the user when the POP refuses; the four to itself never arrive.
    assert_eq!(bp["accepted"], 2, "{bp}");
    assert_eq!(bp["connect_failed"], 2, "{bp}");
    let out = topo
        .run_ok(
            Node::Box,
            &[
                "nft",
                "list",
                "counter",
                "inet",
                "starpep_box_pep",
                "own_port",
            ],
        )
        .unwrap();
    assert!(!out.contains("packets 0 "), "box own_port counter: {out}");
    // A server that really listens on 8399 is still reached through the split.
    for dst in [
        format!("{}:8399", addr::SRV),
        format!("[{}]:8399", addr::SRV6),
    ] {
        let t = checked(&topo, sa(&dst), 1_000_000, true);
        assert!(t.connect_time < Duration::from_millis(500));
    }
    let bp = bx.wait_idle(&topo, Duration::from_secs(5));
    assert_eq!(bp["accepted"], 4, "{bp}");
    assert_eq!(bp["closed"], 2, "{bp}");
}
