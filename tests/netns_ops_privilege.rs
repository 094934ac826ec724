//! The daemons without root (root, netns): box and POP run as a user with no passwd entry and
//! only the ambient capabilities docs/operations.md ("Privileges") says they need, CAP_NET_ADMIN
//! and CAP_BPF, as systemd's `User=` and `AmbientCapabilities=` would start them. They bring up
//! the tunnel, the PEP (nft, ip rules, sysctls through their `ip`/`nft` children and
//! /proc/sys/net) and the eBPF window back-end, split a sha256-checked transfer each way, run as
//! that user with exactly those capabilities, and clean up on SIGTERM.

#[path = "netns_pep_common.rs"]
mod common;

use std::path::Path;
use std::time::Duration;

use common::{checked, sa, shipped_conf, start_wrapped, Daemon};
use starpep_tests::privilege::{chown, RunAs};
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

/// No user on a test machine has this id (no passwd entry is needed: setpriv takes numbers).
const UID: u32 = 61_871;

fn start_as(topo: &Topology, who: &RunAs, node: Node, bin: &'static str, name: &str) -> Daemon {
    let dir = topo.tmpdir().to_path_buf();
    // Where the daemon may keep state of its own (as systemd's RuntimeDirectory= gives the unit).
    let run = dir.join(format!("run-{name}"));
    std::fs::create_dir(&run).unwrap();
    chown(&run, who.uid, who.gid);
    let wrap = |conf: &Path, argv: Vec<String>| {
        chown(conf, who.uid, who.gid);
        let mut env = vec![
            "env".to_string(),
            format!("STARPEP_RUN_DIR={}", run.display()),
        ];
        env.extend(argv);
        who.argv(&dir, &env)
    };
    start_wrapped(topo, node, bin, name, &shipped_conf(name, &[]), true, &wrap)
}

#[test]
fn box_and_pop_split_traffic_as_a_user_with_only_their_capabilities() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    // The user reads its config there (the tmpdir is root's, 0755 at most: traversable).
    let who = RunAs {
        uid: UID,
        gid: UID,
        caps: vec!["CAP_NET_ADMIN".into(), "CAP_BPF".into()],
        no_new_privs: true,
    };
    let pop = start_as(&topo, &who, Node::Pop, "starpep-pop", "pop-pep");
    let bx = start_as(&topo, &who, Node::Box, "starpep-client", "box-pep");
    for d in [&pop, &bx] {
        who.check(d.proc.pid().expect("pid"), d.bin);
    }
    for (port, bytes, down) in [(5701, 3_000_000, true), (5702, 1_000_000, false)] {
        let t = checked(&topo, sa(&format!("{}:{port}", addr::SRV)), bytes, down);
        assert_eq!(t.bytes, bytes);
    }
    for d in [&pop, &bx] {
        let pep = d.wait_idle(&topo, Duration::from_secs(20));
        assert_eq!(pep["accepted"], 2, "{} split both flows: {pep}", d.bin);
        let mode = pep["mode"].as_str().unwrap_or_default().to_string();
        if mode == "starpep" {
            assert_eq!(pep["window_backend"], "ebpf", "{}: {pep}", d.bin);
        }
    }
    for d in [bx, pop] {
        let (node, iface, bin) = (d.node, d.iface.clone(), d.bin);
        let log = d.stop();
        assert!(!log.contains("Permission denied"), "{bin}:\n{log}");
        let links = topo.run_ok(node, &["ip", "-o", "link", "show"]).unwrap();
        assert!(
            !links.contains(&format!(": {iface}:")),
            "{iface} left: {links}"
        );
        let tables = topo.run_ok(node, &["nft", "list", "tables"]).unwrap();
        assert!(!tables.contains("starpep"), "{bin} left {tables}");
    }
}
