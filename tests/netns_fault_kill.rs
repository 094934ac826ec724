//! Kill -9 of both daemons (root, netns, no emulation): what a killed instance leaves (its nft
//! table, policy rules, the sysctls it set, routes with its `initcwnd`) is undone by the next
//! start from the undo record in `/run/starpep`, so the restarted pair is in exactly the state
//! the first one was, and a clean stop then leaves the namespaces as they were before.
//!
//! Through the tunnel the box routes everything (`AllowedIPs = 0.0.0.0/0, ::/0`: WireGuard's
//! fwmark rules and `src_valid_mark`) and the TUN with its routes disappears with the process;
//! without the tunnel the `initcwnd` routes are on the WAN and outlive it.

#[path = "netns_pep_common.rs"]
mod common;

use std::os::unix::fs::MetadataExt;
use std::time::Duration;

use common::*;
use nix::sys::signal::Signal;
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

/// The sysctls the daemons may set.
const SYSCTLS: [&str; 4] = [
    "net.ipv4.fwmark_reflect",
    "net.ipv6.fwmark_reflect",
    "net.ipv4.tcp_shrink_window",
    "net.ipv4.conf.all.src_valid_mark",
];

/// Everything of `node`'s kernel state the daemons touch, as text.
fn state(topo: &Topology, node: Node) -> String {
    let mut s = String::new();
    for k in SYSCTLS {
        let v = topo
            .sh(node, &format!("cat /proc/sys/{}", k.replace('.', "/")))
            .unwrap();
        s.push_str(&format!("{k} = {}", v));
    }
    for cmd in [
        "ip -4 rule",
        "ip -6 rule",
        "ip -4 route show table all",
        "ip -6 route show table all",
        "nft list tables",
    ] {
        s.push_str(&format!("$ {cmd}\n"));
        // A new TUN draws a new random link-local address.
        for l in topo.sh(node, cmd).unwrap().lines() {
            if !l.starts_with("local fe80::") {
                s.push_str(l);
                s.push('\n');
            }
        }
    }
    s
}

/// Undo records of `node`'s namespace in /run/starpep.
fn records(topo: &Topology, node: Node) -> Vec<String> {
    let ino = std::fs::metadata(format!("/run/netns/{}", topo.ns(node)))
        .unwrap()
        .ino();
    let suffix = format!(".{ino}.json");
    std::fs::read_dir("/run/starpep")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.ends_with(&suffix))
                .collect()
        })
        .unwrap_or_default()
}

fn kill9(d: &mut Daemon) {
    d.proc.signal(Signal::SIGKILL);
    let st = d.proc.wait_timeout(Duration::from_secs(5));
    assert!(st.is_some(), "{} survived SIGKILL", d.bin);
}

/// The pair's configs: StarPEP with the socket clamp (`tcp_shrink_window`), a fixed
/// `InitCwnd` (routes rewritten at start), and through the tunnel a box that routes everything.
fn configs(carry: Carry) -> (String, String) {
    let (b, p) = carry.names();
    let set = [
        ("Mode", "starpep"),
        ("WindowControl", "clamp"),
        ("InitCwnd", "40"),
    ];
    let mut bx = shipped_conf(b, &set);
    if carry == Carry::Tunnel {
        bx = bx.replace(
            "AllowedIPs = 10.2.0.0/24, fd00:2::/64\nAllowedIPs = 10.8.0.0/24, fd00:8::/64",
            "AllowedIPs = 0.0.0.0/0, ::/0",
        );
        assert!(bx.contains("0.0.0.0/0"), "box AllowedIPs not patched");
    }
    (bx, shipped_conf(p, &set))
}

fn start_both(topo: &Topology, carry: Carry, confs: &(String, String)) -> (Daemon, Daemon) {
    let (b, p) = carry.names();
    let pop = start(topo, Node::Pop, "starpep-pop", p, &confs.1);
    let bx = start(topo, Node::Box, "starpep-client", b, &confs.0);
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(30)),
        "srv not reachable from pc"
    );
    (bx, pop)
}

fn killed_and_restarted(carry: Carry) {
    let spec = match carry {
        Carry::Tunnel => TopoSpec::direct(),
        Carry::NoTunnel => TopoSpec::direct().with_plain_routes(),
    };
    let topo = Topology::build(spec).expect("topology");
    let nodes = [Node::Box, Node::Pop];
    let before: Vec<String> = nodes.iter().map(|n| state(&topo, *n)).collect();
    let confs = configs(carry);
    let (mut bx, mut pop) = start_both(&topo, carry, &confs);
    checked(&topo, sa(&format!("{}:7001", addr::SRV)), 1_000_000, true);
    // A live split flow while the daemons die.
    let dst = sa(&format!("{}:7002", addr::SRV));
    let l = listen(&topo, Node::Srv, dst);
    let live = connect(&topo, Node::Pc, dst).expect("connect");
    let _srv_side = l.accept().expect("accept");
    let local = live.local_addr().unwrap();
    assert!(
        flow_of(&bx.pep(&topo), local).is_some(),
        "not split at the box"
    );
    let up: Vec<String> = nodes.iter().map(|n| state(&topo, *n)).collect();
    for (n, (b, u)) in nodes.iter().zip(before.iter().zip(&up)) {
        assert_ne!(b, u, "{n:?}: the daemons changed nothing?");
        assert!(u.contains("= 1\n"), "{n:?}: no sysctl set:\n{u}");
        if carry == Carry::NoTunnel {
            assert!(u.contains("initcwnd 40"), "{n:?}: no initcwnd route:\n{u}");
        }
    }

    kill9(&mut bx);
    kill9(&mut pop);
    for (i, n) in nodes.iter().enumerate() {
        let left = state(&topo, *n);
        eprintln!("{n:?} after kill -9:\n{left}");
        assert!(left.contains("table inet starpep_"), "{n:?}: {left}");
        assert!(left.contains("lookup 21328"), "{n:?}: {left}");
        assert_ne!(left, before[i], "{n:?}: a killed daemon left nothing?");
        assert!(
            !records(&topo, *n).is_empty(),
            "{n:?}: no undo record left in /run/starpep"
        );
    }
    if carry == Carry::Tunnel {
        for (n, d) in [(Node::Box, &bx), (Node::Pop, &pop)] {
            let link = topo.exec(n, &["ip", "link", "show", &d.iface]).unwrap();
            assert!(!link.status.success(), "{n:?}: the TUN outlived its daemon");
        }
        let left = state(&topo, Node::Box);
        assert!(
            left.contains("not from all fwmark 0xca6c lookup 51820"),
            "box: WireGuard's rule should outlive the process: {left}"
        );
    }
    drop(live);

    let (bx, pop) = start_both(&topo, carry, &confs);
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(
            state(&topo, *n),
            up[i],
            "{n:?}: the restarted daemon's state differs from the first one's"
        );
    }
    checked(&topo, sa(&format!("{}:7003", addr::SRV)), 1_000_000, false);
    bx.stop();
    pop.stop();
    for (i, n) in nodes.iter().enumerate() {
        assert_eq!(
            state(&topo, *n),
            before[i],
            "{n:?}: a clean stop after the restart leaves a different state"
        );
        assert_eq!(records(&topo, *n), Vec::<String>::new(), "{n:?}");
    }
}

#[test]
fn kill9_through_the_tunnel_is_undone_by_the_next_start() {
    if !require_root() {
        return;
    }
    killed_and_restarted(Carry::Tunnel);
}

#[test]
fn kill9_without_tunnel_is_undone_by_the_next_start() {
    if !require_root() {
        return;
    }
    killed_and_restarted(Carry::NoTunnel);
}
