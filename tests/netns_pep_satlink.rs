//! The PEP over the emulated satellite link (root, netns, satlink): sha256-checked downloads
//! and uploads over `geo` and `leo-starlink`, through the tunnel and without it, and the proof
//! that flows are split: the user's connect is answered by the box at once, while the SYN of
//! the satellite segment reaches the POP a one-way delay later.
//!
//! CI time: 1 MB each way on every link and carriage; 50 MB each way over leo-starlink (tens
//! of Mbit/s) for both carriages, and over geo (10 Mbit/s: about 45 s each) only a download
//! through the tunnel and an upload without it.

#[path = "netns_pep_common.rs"]
mod common;

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::*;
use starpep_tests::{addr, bin_path, require_root, Node, Proc, TopoSpec, Topology};

const MB: usize = 1_000_000;

/// One satlink at a time: it spins and runs at real-time priority on a 2-core machine.
static LINK: Mutex<()> = Mutex::new(());

fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../configs/profiles/{name}.toml"))
}

struct Bed {
    topo: Topology,
    _link: Proc,
    bx: Daemon,
    pop: Daemon,
}

fn bed(link: &str, carry: Carry) -> Bed {
    let spec = match carry {
        Carry::Tunnel => TopoSpec::satlink(),
        Carry::NoTunnel => TopoSpec::satlink().with_plain_routes(),
    };
    let topo = Topology::build(spec).expect("topology");
    let l = topo
        .spawn_satlink(&bin_path("satlink"), &profile(link), &["--start", "now"])
        .expect("satlink");
    let (bx, pop) = start_pair(&topo, carry, &[], &[]);
    Bed {
        topo,
        _link: l,
        bx,
        pop,
    }
}

fn unix(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs_f64()
}

/// Epoch time of the first pure SYN in a capture.
fn first_syn(topo: &Topology, node: Node, pcap: &std::path::Path) -> f64 {
    let out = topo
        .run_ok(
            node,
            &[
                "tcpdump",
                "-nn",
                "-tt",
                "-r",
                &pcap.display().to_string(),
                "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
            ],
        )
        .unwrap();
    let line = out
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no SYN captured on the POP: {out}"));
    line.split_whitespace().next().unwrap().parse().unwrap()
}

/// The user's connect returns at once (answered by the box) and the satellite segment's SYN
/// arrives at the POP (on its WAN without tunnel, on its TUN with it) at least `min_owd` later.
fn split_proof(b: &Bed, carry: Carry, min_owd: Duration) {
    let topo = &b.topo;
    let (_, pop_if) = carry.names();
    let iface = if carry == Carry::Tunnel {
        pop_if
    } else {
        "wan0"
    };
    let pcap = topo.tmpdir().join("pop-syn.pcap");
    let mut dump = topo
        .spawn(
            Node::Pop,
            "tcpdump-pop",
            &[
                "tcpdump",
                "-i",
                iface,
                "-nn",
                "-U",
                "-w",
                &pcap.display().to_string(),
                "tcp port 5301",
            ],
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    let dst = sa(&format!("{}:5301", addr::SRV));
    let t = checked(topo, dst, 100_000, true);
    let connected_at = SystemTime::now() - (t.total_time - t.connect_time);
    std::thread::sleep(Duration::from_millis(500));
    dump.stop();
    let syn_at = first_syn(topo, Node::Pop, &pcap);
    let lag = syn_at - unix(connected_at);
    eprintln!(
        "user connect {:?}; satellite-segment SYN at the POP {lag:.3} s after it returned",
        t.connect_time
    );
    assert!(
        t.connect_time < Duration::from_millis(100),
        "connect took {:?}: not answered by the box",
        t.connect_time
    );
    assert!(
        lag >= min_owd.as_secs_f64(),
        "POP saw the SYN {lag:.3} s after the user's connect returned (one-way ≥ {min_owd:?})"
    );
}

fn run(link: &str, carry: Carry, sizes: &[(usize, bool)]) {
    let _one = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed(link, carry);
    if link == "geo" {
        split_proof(&b, carry, Duration::from_millis(200));
    }
    for (i, &(bytes, down)) in sizes.iter().enumerate() {
        let dst = sa(&format!("{}:{}", addr::SRV, 5310 + i));
        let t = checked(&b.topo, dst, bytes, down);
        eprintln!(
            "{link} {carry:?}: {} {bytes} B in {:.1} s ({:.2} Mbit/s)",
            if down { "download" } else { "upload" },
            t.total_time.as_secs_f64(),
            bytes as f64 * 8.0 / t.total_time.as_secs_f64() / 1e6
        );
    }
    let n = sizes.len() as u64 + if link == "geo" { 1 } else { 0 };
    for d in [&b.bx, &b.pop] {
        let m = d.wait_idle(&b.topo, Duration::from_secs(10));
        assert_eq!(m["accepted"], n, "{:?}: {m}", d.node);
        assert_eq!(m["closed"], n, "{:?}: {m}", d.node);
    }
}

#[test]
fn geo_through_the_tunnel() {
    if !require_root() {
        return;
    }
    run(
        "geo",
        Carry::Tunnel,
        &[(MB, true), (MB, false), (50 * MB, true)],
    );
}

#[test]
fn geo_without_tunnel() {
    if !require_root() {
        return;
    }
    run(
        "geo",
        Carry::NoTunnel,
        &[(MB, true), (MB, false), (50 * MB, false)],
    );
}

#[test]
fn leo_starlink_through_the_tunnel() {
    if !require_root() {
        return;
    }
    let sizes = [(MB, true), (MB, false), (50 * MB, true), (50 * MB, false)];
    run("leo-starlink", Carry::Tunnel, &sizes);
}

#[test]
fn leo_starlink_without_tunnel() {
    if !require_root() {
        return;
    }
    let sizes = [(MB, true), (MB, false), (50 * MB, true), (50 * MB, false)];
    run("leo-starlink", Carry::NoTunnel, &sizes);
}
