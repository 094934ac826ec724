//! A bad config is refused with every error and its line, and leaves nothing behind (root,
//! netns): no TUN, no route, no rule, exit status 1. `check` agrees with `run`.

#[path = "netns_tunnel_common.rs"]
mod common;

use common::*;
use starpep_tests::{bin_path, require_root, Node, TopoSpec, Topology};

fn links(topo: &Topology, node: Node) -> String {
    topo.run_ok(node, &["ip", "-o", "link", "show"]).unwrap()
}

#[test]
fn malformed_config_reports_every_line_and_creates_nothing() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let pk = keys();
    let bi = iface(&topo, "b");
    let text = format!(
        "[Interface]\n\
         PrivateKey = not-a-key\n\
         Address = 10.8.0.2/24\n\
         MTU = huge\n\
         Colour = blue\n\
         [Peer]\n\
         PublicKey = {}\n\
         Endpoint = 10.99.0.2\n\
         AllowedIPs = 0.0.0.0/0\n",
        pk.public
    );
    let conf = write_conf(&topo, &bi, &text);
    let before_links = links(&topo, Node::Box);
    let bin = bin_path("starpep-client");
    for cmd in ["check", "run"] {
        let out = topo
            .exec(
                Node::Box,
                &[
                    bin.as_os_str(),
                    cmd.as_ref(),
                    "-c".as_ref(),
                    conf.as_os_str(),
                ],
            )
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{cmd} accepted a bad config");
        let err = String::from_utf8_lossy(&out.stderr);
        let name = format!("{bi}.conf");
        for (line, key) in [
            (2, "PrivateKey"),
            (4, "MTU"),
            (5, "Colour"),
            (8, "Endpoint"),
        ] {
            let want = format!("{name}:{line}: {key}:");
            assert!(err.contains(&want), "{cmd}: missing {want:?} in:\n{err}");
        }
    }
    assert_eq!(links(&topo, Node::Box), before_links, "a link appeared");
    assert_eq!(leftovers(&topo, Node::Box, &bi), Vec::<String>::new());
    assert_eq!(
        extra_rules(&topo, Node::Box),
        Vec::<String>::new(),
        "a rule appeared"
    );
}

#[test]
fn a_failing_setup_step_undoes_the_earlier_ones() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, pk) = (keys(), keys());
    let bi = iface(&topo, "b");
    // Valid config whose PostUp fails after the TUN, addresses, routes and the /0 rules exist.
    let conf = write_conf(
        &topo,
        &bi,
        &box_conf(
            &bk,
            &pk.public,
            "10.99.0.2:51820",
            "0.0.0.0/0",
            "PostUp = false",
        ),
    );
    let bin = bin_path("starpep-client");
    let out = topo
        .exec(
            Node::Box,
            &[
                bin.as_os_str(),
                "run".as_ref(),
                "-c".as_ref(),
                conf.as_os_str(),
            ],
        )
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PostUp") && err.contains("sh -c false"),
        "{err}"
    );
    assert_eq!(leftovers(&topo, Node::Box, &bi), Vec::<String>::new());
    assert_eq!(extra_rules(&topo, Node::Box), Vec::<String>::new());
}

#[test]
fn the_client_refuses_a_config_without_exactly_one_endpoint_peer() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, a, b) = (keys(), keys(), keys());
    let bi = iface(&topo, "b");
    let text = format!(
        "[Interface]\nPrivateKey = {}\n[Peer]\nPublicKey = {}\nAllowedIPs = 10.2.0.0/24\n\
         [Peer]\nPublicKey = {}\nAllowedIPs = 10.3.0.0/24\n",
        bk.private, a.public, b.public
    );
    let conf = write_conf(&topo, &bi, &text);
    let out = topo
        .exec(
            Node::Box,
            &[
                bin_path("starpep-client").as_os_str(),
                "run".as_ref(),
                "-c".as_ref(),
                conf.as_os_str(),
            ],
        )
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("exactly one [Peer]") && err.contains(":3: Endpoint"),
        "{err}"
    );
    assert_eq!(leftovers(&topo, Node::Box, &bi), Vec::<String>::new());
    // The POP takes the same file (many peers, endpoints learnt).
    let out = topo
        .exec(
            Node::Box,
            &[
                bin_path("starpep-pop").as_os_str(),
                "check".as_ref(),
                "-c".as_ref(),
                conf.as_os_str(),
            ],
        )
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
