//! The endpoint pair end to end (root, netns): tunnel up, ping v4/v6, 10 MB sha256-checked TCP
//! transfer pc → srv, only WireGuard UDP on the wire, `show --json`, clean shutdown.

#[path = "netns_tunnel_common.rs"]
mod common;

use std::time::Duration;

use common::*;
use starpep_tests::{require_root, Node, TopoSpec, Topology};

#[test]
fn tunnel_carries_ping_and_a_checked_transfer_and_only_udp_crosses_the_wan() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, pk) = (keys(), keys());
    let (bi, pi) = (iface(&topo, "b"), iface(&topo, "p"));
    let pop_conf = write_conf(&topo, &pi, &pop_conf(&pk, &bk.public, ""));
    let box_conf = write_conf(
        &topo,
        &bi,
        &box_conf(&bk, &pk.public, "10.99.0.2:51820", BOX_ALLOWED, ""),
    );
    let mut pop = start_daemon(&topo, Node::Pop, "starpep-pop", &pop_conf);
    let mut bx = start_daemon(&topo, Node::Box, "starpep-client", &box_conf);

    ping_ok(&topo, Node::Pc, &srv(), 5);
    ping_ok(&topo, Node::Pc, &srv6(), 5);
    ping_ok(&topo, Node::Srv, "10.1.0.2", 5);

    let cap = topo.tmpdir().join("wan.pcap");
    let cap_s = cap.display().to_string();
    let mut dump = topo
        .spawn(
            Node::Pop,
            "tcpdump",
            &["tcpdump", "-i", "wan0", "-nn", "-U", "-w", &cap_s],
        )
        .expect("tcpdump");
    std::thread::sleep(Duration::from_millis(700));
    transfer(&topo, Node::Pc, Node::Srv, &srv(), 5001, 10_000_000);
    transfer(&topo, Node::Pc, Node::Srv, &srv6(), 5002, 1_000_000);
    std::thread::sleep(Duration::from_millis(300));
    dump.stop();

    let count = |filter: &str| -> usize {
        let out = topo
            .exec(Node::Pop, &["tcpdump", "-nn", "-r", &cap_s, filter])
            .unwrap();
        String::from_utf8_lossy(&out.stdout).lines().count()
    };
    let wg = count(&format!("udp port {WG_PORT}"));
    assert!(
        wg > 100,
        "only {wg} WireGuard packets captured during 11 MB"
    );
    assert_eq!(count("tcp"), 0, "inner TCP visible on the WAN");
    assert_eq!(
        count(&format!("ip and not udp port {WG_PORT}")),
        0,
        "IPv4 other than WireGuard"
    );
    // IPv6 on the WAN: only the link's own neighbour discovery / multicast listener traffic.
    let v6_other = format!(
        "ip6 and not udp port {WG_PORT} and not ip6 multicast and not (icmp6 and ip6[40] >= 133 and ip6[40] <= 137)"
    );
    assert_eq!(count(&v6_other), 0, "IPv6 other than WireGuard and ND");

    // show --json on both sides.
    let b = show_json(&topo, Node::Box, "starpep-client", &bi);
    let p = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    assert_eq!(b["interface"], bi.as_str());
    assert_eq!(b["public_key"], bk.public.as_str());
    assert_eq!(p["public_key"], pk.public.as_str());
    assert_eq!(p["listen_port"], WG_PORT);
    let bp = &b["peers"][0];
    let pp = &p["peers"][0];
    assert_eq!(bp["public_key"], pk.public.as_str());
    assert_eq!(pp["public_key"], bk.public.as_str());
    assert_eq!(bp["endpoint"], "10.99.0.2:51820");
    let box_port = b["listen_port"].as_u64().unwrap();
    assert_eq!(
        pp["endpoint"],
        format!("10.99.0.1:{box_port}").as_str(),
        "POP learnt the box"
    );
    assert!(bp["latest_handshake_unix"].as_u64().unwrap() > 1_600_000_000);
    assert!(bp["tx_bytes"].as_u64().unwrap() > 10_000_000, "{bp}");
    assert!(pp["rx_bytes"].as_u64().unwrap() > 10_000_000, "{pp}");
    assert!(pp["tx_bytes"].as_u64().unwrap() > 0 && bp["rx_bytes"].as_u64().unwrap() > 0);
    assert_eq!(pp["dropped_source_not_allowed"], 0);
    let ips: Vec<&str> = bp["allowed_ips"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(
        ips,
        ["10.2.0.0/24", "fd00:2::/64", "10.8.0.0/24", "fd00:8::/64"]
    );
    // The text form names the same things.
    let text = topo
        .run_ok(
            Node::Pop,
            &[
                starpep_tests::bin_path("starpep-pop").as_os_str(),
                "show".as_ref(),
            ],
        )
        .unwrap();
    assert!(
        text.contains(&format!("interface: {pi}")) && text.contains("latest handshake:"),
        "{text}"
    );

    // Clean shutdown: TUN, routes gone; exit status 0.
    assert!(
        !leftovers(&topo, Node::Box, &bi).is_empty(),
        "box interface not found while running"
    );
    for (proc, node, name) in [(&mut bx, Node::Box, &bi), (&mut pop, Node::Pop, &pi)] {
        let st = proc.stop().expect("exit status");
        assert!(st.success(), "{name} exited with {st}:\n{}", proc.log());
        assert!(proc.log().contains("shutting down"), "{}", proc.log());
        assert_eq!(
            leftovers(&topo, node, name),
            Vec::<String>::new(),
            "left behind in {node:?}"
        );
    }
    assert_eq!(
        topo.exec(Node::Pc, &["ping", "-c", "1", "-W", "1", &srv()])
            .unwrap()
            .status
            .code(),
        Some(1),
        "pc still reaches srv after the tunnel is down"
    );
}

#[test]
fn default_route_uses_fwmark_rules_and_removes_them() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, pk) = (keys(), keys());
    let (bi, pi) = (iface(&topo, "b"), iface(&topo, "p"));
    let pop_conf = write_conf(&topo, &pi, &pop_conf(&pk, &bk.public, ""));
    let box_conf = write_conf(
        &topo,
        &bi,
        &box_conf(&bk, &pk.public, "10.99.0.2:51820", "0.0.0.0/0, ::/0", ""),
    );
    let _pop = start_daemon(&topo, Node::Pop, "starpep-pop", &pop_conf);
    let mut bx = start_daemon(&topo, Node::Box, "starpep-client", &box_conf);
    let rules = extra_rules(&topo, Node::Box);
    assert_eq!(rules.len(), 4, "two rules per family: {rules:?}");
    assert!(
        rules
            .iter()
            .any(|r| r.contains("not from all fwmark 0xca6c lookup 51820")),
        "{rules:?}"
    );
    assert!(
        rules.iter().any(|r| r.contains("suppress_prefixlength 0")),
        "{rules:?}"
    );
    // Everything goes through the tunnel, the box's own WireGuard packets (marked) do not loop.
    ping_ok(&topo, Node::Pc, &srv(), 5);
    ping_ok(&topo, Node::Pc, &srv6(), 5);
    transfer(&topo, Node::Pc, Node::Srv, &srv(), 5003, 2_000_000);
    let b = show_json(&topo, Node::Box, "starpep-client", &bi);
    assert_eq!(b["fwmark"], 51820);
    assert!(bx.stop().unwrap().success(), "{}", bx.log());
    assert_eq!(
        extra_rules(&topo, Node::Box),
        Vec::<String>::new(),
        "rules left behind"
    );
    assert_eq!(leftovers(&topo, Node::Box, &bi), Vec::<String>::new());
}

#[test]
fn ipv6_outer_endpoint_carries_v4_and_v6() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bk, pk) = (keys(), keys());
    let (bi, pi) = (iface(&topo, "b"), iface(&topo, "p"));
    let pop_conf = write_conf(&topo, &pi, &pop_conf(&pk, &bk.public, ""));
    let box_conf = write_conf(
        &topo,
        &bi,
        &box_conf(&bk, &pk.public, "[fd00:99::2]:51820", BOX_ALLOWED, ""),
    );
    let _pop = start_daemon(&topo, Node::Pop, "starpep-pop", &pop_conf);
    let _bx = start_daemon(&topo, Node::Box, "starpep-client", &box_conf);
    ping_ok(&topo, Node::Pc, &srv6(), 5);
    ping_ok(&topo, Node::Pc, &srv(), 5);
    transfer(&topo, Node::Pc, Node::Srv, &srv6(), 5004, 2_000_000);
    let p = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    let ep = p["peers"][0]["endpoint"].as_str().unwrap().to_string();
    assert!(
        ep.starts_with("[fd00:99::1]:"),
        "POP sees the box over IPv6: {ep}"
    );
}
