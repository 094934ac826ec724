//! Test bed topology: namespaces, addressing, forwarding and guaranteed cleanup (root).

use starpep_testbed::topo::netns;
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

#[test]
fn direct_topology_routes_pc_to_srv_and_cleans_up() {
    if !require_root() {
        return;
    }
    let names;
    {
        let topo = Topology::build(TopoSpec::direct().with_plain_routes()).expect("build");
        names = [Node::Pc, Node::Box, Node::Pop, Node::Srv].map(|n| topo.ns(n));
        for n in &names {
            assert!(netns::exists(n), "{n} missing");
        }
        let srv = addr::SRV.to_string();
        let srv6 = addr::SRV6.to_string();
        topo.run_ok(Node::Pc, &["ping", "-c", "1", "-W", "2", &srv])
            .expect("ping v4 pc->srv");
        topo.run_ok(Node::Pc, &["ping", "-6", "-c", "1", "-W", "2", &srv6])
            .expect("ping v6 pc->srv");
        let _sleeper = topo.spawn(Node::Srv, "sleeper", &["sleep", "600"]).unwrap();
    }
    for n in &names {
        assert!(!netns::exists(n), "{n} left behind");
    }
}

#[test]
fn without_plain_routes_lans_are_isolated() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("build");
    let srv = addr::SRV.to_string();
    let out = topo
        .exec(Node::Pc, &["ping", "-c", "1", "-W", "1", &srv])
        .unwrap();
    assert!(!out.status.success(), "pc reached srv without any route");
    // The WAN itself is up.
    topo.run_ok(
        Node::Box,
        &["ping", "-c", "1", "-W", "2", &addr::POP_WAN.to_string()],
    )
    .expect("box->pop over wan");
}

#[test]
fn satlink_topology_has_a_silent_middle_namespace() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::satlink()).expect("build");
    let links = topo
        .run_ok(Node::Sat, &["ip", "-o", "addr", "show", "scope", "global"])
        .unwrap();
    let links6 = topo
        .run_ok(Node::Sat, &["ip", "-o", "-6", "addr", "show"])
        .unwrap();
    assert!(links6.trim().is_empty(), "sat has IPv6 addresses: {links6}");
    assert!(
        !links.contains("inet"),
        "sat namespace must have no addresses: {links}"
    );
    // Without satlink running nothing crosses the middle namespace.
    let out = topo
        .exec(
            Node::Box,
            &["ping", "-c", "1", "-W", "1", &addr::POP_WAN.to_string()],
        )
        .unwrap();
    assert!(!out.status.success(), "frames crossed sat without satlink");
    assert!(topo.run_ok(Node::Pop, &["true"]).is_ok());
}

#[test]
fn a_failed_process_in_a_namespace_reports_its_stderr() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("build");
    let err = topo
        .run_ok(Node::Box, &["ip", "link", "set", "nosuchif", "up"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("nosuchif"), "{err}");
}
