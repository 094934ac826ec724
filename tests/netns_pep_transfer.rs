//! The PEP splits inner TCP (root, netns, bare veth WAN): 1 MB and 50 MB downloads and uploads
//! sha256-checked through the tunnel and without it, IPv4 and IPv6, transparent at both ends,
//! both PEPs terminating every flow with the configured congestion control, clean shutdown.

#[path = "netns_pep_common.rs"]
mod common;

use std::time::Duration;

use common::*;
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

const MB: usize = 1_000_000;

fn spec(carry: Carry) -> TopoSpec {
    match carry {
        Carry::Tunnel => TopoSpec::direct(),
        Carry::NoTunnel => TopoSpec::direct().with_plain_routes(),
    }
}

/// Downloads and uploads of 1 MB and 50 MB (IPv4) and 1 MB (IPv6); every flow split by both
/// PEPs and seen by the server from the user's own address and port.
fn transfers_are_split_and_intact(carry: Carry) {
    let topo = Topology::build(spec(carry)).expect("topology");
    let (bx, pop) = start_pair(&topo, carry, &[], &[]);
    let v4 = sa(&format!("{}:5001", addr::SRV));
    let v6 = sa(&format!("[{}]:5002", addr::SRV6));
    let mut flows = 0;
    for (dst, bytes) in [(v4, MB), (v4, 50 * MB), (v6, MB)] {
        for down in [true, false] {
            let t = checked(&topo, dst, bytes, down);
            flows += 1;
            let want = if dst.is_ipv4() {
                addr::PC_LAN.to_string()
            } else {
                addr::PC_LAN6.to_string()
            };
            assert_eq!(
                t.server_saw.ip().to_string(),
                want,
                "the server must see the user's address (SNAT = false)"
            );
            assert_ne!(t.server_saw.port(), 0);
        }
    }
    let b = bx.wait_idle(&topo, Duration::from_secs(5));
    let p = pop.wait_idle(&topo, Duration::from_secs(5));
    for (side, m) in [("box", &b), ("pop", &p)] {
        assert_eq!(m["accepted"], flows, "{side} split every flow: {m}");
        assert_eq!(m["closed"], flows, "{side}: every flow ended cleanly: {m}");
        assert_eq!(m["reset"], 0, "{side}: {m}");
        let expect = (2 * (50 + 1 + 1) * MB) as u64;
        let moved = m["bytes_up"].as_u64().unwrap() + m["bytes_down"].as_u64().unwrap();
        assert_eq!(moved, expect, "{side} relayed every byte once: {m}");
    }
    assert_eq!(b["role"], "box");
    assert_eq!(p["role"], "pop");
    let tunnel = if carry == Carry::Tunnel {
        "wireguard"
    } else {
        "none"
    };
    assert_eq!(b["tunnel"], tunnel);
    let (bname, pname) = carry.names();
    let blog = bx.stop();
    let plog = pop.stop();
    assert!(blog.contains("PEP stopped"), "{blog}");
    assert!(plog.contains("PEP stopped"), "{plog}");
    // Nothing left: nft table, policy rules, local route table.
    for (node, name) in [(Node::Box, bname), (Node::Pop, pname)] {
        let tables = topo.run_ok(node, &["nft", "list", "tables"]).unwrap();
        assert!(!tables.contains("starpep_"), "{name}: nft left: {tables}");
        for fam in ["-4", "-6"] {
            let rules = topo.run_ok(node, &["ip", fam, "rule"]).unwrap();
            assert!(!rules.contains("0x535"), "{name}: rule left: {rules}");
            let t = topo
                .run_ok(node, &["ip", fam, "route", "show", "table", "21328"])
                .unwrap();
            assert!(t.trim().is_empty(), "{name}: routes left: {t}");
        }
    }
}

#[test]
fn split_through_the_tunnel_downloads_and_uploads_intact() {
    if !require_root() {
        return;
    }
    transfers_are_split_and_intact(Carry::Tunnel);
}

#[test]
fn split_without_tunnel_downloads_and_uploads_intact() {
    if !require_root() {
        return;
    }
    transfers_are_split_and_intact(Carry::NoTunnel);
}

/// While a flow is live, both PEPs report it with the configured satellite-segment congestion
/// control (reno here, not the kernel's default bbr) and the terrestrial one (cubic), and
/// `ss -ti` on the box shows the satellite-segment socket toward the server using reno.
#[test]
fn the_satellite_segment_uses_the_configured_congestion_control() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let set = [("Congestion", "reno"), ("LanCongestion", "cubic")];
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &set, &set);
    let dst = sa(&format!("{}:5003", addr::SRV));
    let l = listen(&topo, Node::Srv, dst);
    let mut c = connect(&topo, Node::Pc, dst).expect("connect");
    let (mut s, _) = l.accept().unwrap();
    use std::io::{Read, Write};
    c.write_all(b"ping").unwrap();
    let mut b4 = [0u8; 4];
    s.read_exact(&mut b4).unwrap();
    s.write_all(b"pong").unwrap();
    c.read_exact(&mut b4).unwrap();
    let me = c.local_addr().unwrap();
    std::thread::sleep(Duration::from_millis(1500)); // a TCP_INFO sample
    for (side, d) in [("box", &bx), ("pop", &pop)] {
        let f = flow_of(&d.pep(&topo), me).unwrap_or_else(|| panic!("{side}: no flow for {me}"));
        assert_eq!(f["server"], dst.to_string(), "{side}: {f}");
        assert_eq!(f["state"], "established", "{side}: {f}");
        assert_eq!(f["satellite"]["congestion"], "reno", "{side}: {f}");
        assert_eq!(f["terrestrial"]["congestion"], "cubic", "{side}: {f}");
        assert!(
            f["satellite"]["rtt_us"].as_u64().unwrap() > 0,
            "{side}: {f}"
        );
    }
    // The box's own socket toward the server (through the tunnel), as the kernel reports it.
    let ss = topo
        .run_ok(Node::Box, &["ss", "-tni", "dst", &dst.to_string()])
        .unwrap();
    assert!(
        ss.contains(&me.to_string()),
        "box has no socket from {me}: {ss}"
    );
    assert!(ss.contains("reno"), "satellite segment not reno: {ss}");
    // The satellite segment takes its MSS from the tunnel MTU (the route through the TUN).
    assert!(ss.contains("pmtu:1420"), "satellite segment path MTU: {ss}");
    drop((c, s));
    bx.wait_idle(&topo, Duration::from_secs(5));
    pop.wait_idle(&topo, Duration::from_secs(5));
}

/// Without a tunnel the WAN carries the satellite segment in clear: its SYN is the box's own
/// (a new initial sequence number and source of the box's choosing), not the user's SYN
/// forwarded, while the server still sees the user's address.
#[test]
fn without_tunnel_the_wan_handshake_is_the_box_s_own() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct().with_plain_routes()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::NoTunnel, &[], &[]);
    let caps: Vec<(Node, &str, std::path::PathBuf)> = [(Node::Box, "lan0"), (Node::Pop, "wan0")]
        .into_iter()
        .map(|(n, i)| (n, i, topo.tmpdir().join(format!("{}-{i}.pcap", n.short()))))
        .collect();
    let mut dumps: Vec<_> = caps
        .iter()
        .map(|(n, i, p)| {
            let p = p.display().to_string();
            topo.spawn(
                *n,
                &format!("tcpdump-{}-{i}", n.short()),
                &["tcpdump", "-i", i, "-nn", "-U", "-w", &p, "tcp port 5004"],
            )
            .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_millis(800));
    let t = checked(&topo, sa(&format!("{}:5004", addr::SRV)), 100_000, true);
    std::thread::sleep(Duration::from_millis(300));
    for d in &mut dumps {
        d.stop();
    }
    let syn_seq = |node: Node, path: &std::path::Path| -> String {
        let out = topo
            .run_ok(
                node,
                &[
                    "tcpdump",
                    "-nn",
                    "-S",
                    "-r",
                    &path.display().to_string(),
                    "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
                ],
            )
            .unwrap();
        let line = out
            .lines()
            .next()
            .unwrap_or_else(|| panic!("no SYN in {path:?}"));
        let seq = line
            .split("seq ")
            .nth(1)
            .unwrap()
            .split(',')
            .next()
            .unwrap();
        assert!(
            line.contains("10.1.0.2."),
            "SYN not from the user's address: {line}"
        );
        seq.to_string()
    };
    let user = syn_seq(caps[0].0, &caps[0].2);
    let wan = syn_seq(caps[1].0, &caps[1].2);
    assert_ne!(
        user, wan,
        "the WAN SYN is the user's SYN forwarded: not split"
    );
    assert_eq!(t.server_saw.ip(), addr::PC_LAN);
    bx.wait_idle(&topo, Duration::from_secs(5));
    pop.wait_idle(&topo, Duration::from_secs(5));
}
