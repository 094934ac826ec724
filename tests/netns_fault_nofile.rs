//! Descriptor exhaustion at the box (root, netns, no emulation).
//!
//! - Started with a low `RLIMIT_NOFILE` (`prlimit --nofile=N:N`), the box splits only as many
//!   flows as its descriptors allow (six each, 64 kept): a burst of more concurrent flows is
//!   carried whole (sha256), the ones beyond the budget unsplit, the split ones unharmed; later
//!   flows are split again.
//! - Its limit lowered below what it already uses while it runs (`prlimit --pid`), its
//!   existing flows keep going; new flows pass unsplit or are refused with a reset, none hangs,
//!   and the log says so once; with the limit raised again new flows are split again.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_fault_common.rs"]
mod fault;

use std::io::{Read, Write};
use std::time::{Duration, Instant};

use common::*;
use fault::*;
use starpep_common::pep::nofile::{fds_per_flow, RESERVE};
use starpep_tests::{addr, raise_nofile, require_root, Node, TopoSpec, Topology};

/// No new flow may take longer than this to end, one way or the other.
const END_BOUND: Duration = Duration::from_secs(30);

fn conf(carry_name: &str) -> String {
    shipped_conf(carry_name, &[])
}

/// Sets the soft `RLIMIT_NOFILE` of a running process (raising the hard one needs
/// CAP_SYS_RESOURCE, which a test need not have); `None`: back to the hard limit.
fn prlimit_soft(pid: u32, soft: Option<u64>) {
    let hard = std::fs::read_to_string(format!("/proc/{pid}/limits"))
        .unwrap()
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4).map(str::to_string))
        .expect("hard RLIMIT_NOFILE");
    let soft = soft.map_or(hard.clone(), |s| s.to_string());
    let out = std::process::Command::new("prlimit")
        .args([
            "--pid",
            &pid.to_string(),
            &format!("--nofile={soft}:{hard}"),
        ])
        .output()
        .expect("prlimit");
    assert!(out.status.success(), "prlimit: {out:?}");
}

fn open_fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .count()
}

/// The lowest descriptor number `pid` has free: with the soft limit there, no new descriptor
/// can be had (the limit bounds numbers, not counts) while the open ones keep working.
fn lowest_free_fd(pid: u32) -> u64 {
    let open: std::collections::BTreeSet<u64> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    (0..).find(|n| !open.contains(n)).unwrap()
}

fn dst(port: u16) -> std::net::SocketAddr {
    sa(&format!("{}:{port}", addr::SRV))
}

/// A connection from pc to `d` and a 100 kB download on it: `Ok` if it arrived intact (split or
/// not), or how it failed at pc (a refusal must be a reset, seen within 3 s).
fn new_flow(topo: &Topology, d: std::net::SocketAddr) -> Result<(), String> {
    let l = listen(topo, Node::Srv, d);
    l.set_nonblocking(true).unwrap();
    let mut pc = connect(topo, Node::Pc, d).map_err(|e| format!("connect: {e}"))?;
    let end = Instant::now() + Duration::from_secs(3);
    let srv = loop {
        match l.accept() {
            Ok((s, _)) => break Some(s),
            Err(_) if Instant::now() < end => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    pc.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let Some(mut srv) = srv else {
        let mut b = [0u8; 1];
        return match pc.read(&mut b) {
            Ok(n) => Err(format!("not carried, but no reset either (read {n})")),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => Err(format!("reset: {e}")),
            Err(e) => Err(format!("not carried: {e}")),
        };
    };
    srv.set_nonblocking(false).unwrap();
    let data = starpep_tests::payload(100_000, 5);
    srv.write_all(&data)
        .map_err(|e| format!("srv write: {e}"))?;
    drop(srv);
    let mut got = Vec::new();
    pc.read_to_end(&mut got)
        .map_err(|e| format!("pc read: {e}"))?;
    (got == data).then_some(()).ok_or("payload differs".into())
}

/// A 1 MB download that must be split at the box.
fn split_again(topo: &Topology, bx: &Daemon, port: u16) {
    let s = start_stream_paced(topo, dst(port), 1_000_000, true, 9, None, Some(2_000_000));
    let end = Instant::now() + Duration::from_secs(5);
    while flow_of(&bx.pep(topo), s.client).is_none() {
        assert!(Instant::now() < end, "a new flow is not split at the box");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(s.join().intact(), "the new split flow");
}

#[test]
fn a_box_started_with_few_descriptors_splits_what_they_allow_and_carries_the_rest_unsplit() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (b, p) = Carry::Tunnel.names();
    let pop = start(&topo, Node::Pop, "starpep-pop", p, &conf(p));
    let limit = 192;
    let bx = start_wrapped(
        &topo,
        Node::Box,
        "starpep-client",
        b,
        &conf(b),
        true,
        &|_, argv| {
            let mut all = vec!["prlimit".to_string(), format!("--nofile={limit}:{limit}")];
            all.extend(argv);
            all
        },
    );
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(10)),
        "srv not reachable"
    );
    let max = bx.pep(&topo)["max_flows"].as_u64().unwrap();
    eprintln!("RLIMIT_NOFILE {limit}: the box splits at most {max} flows");
    assert!(
        max > 0 && max * 6 < limit,
        "max_flows {max} for {limit} descriptors"
    );
    // Three times as many concurrent flows, 2 MB each at 1 MB/s.
    let n = 3 * max as usize;
    let streams: Vec<Stream> = (0..n)
        .map(|i| {
            let down = i % 2 == 0;
            start_stream_paced(
                &topo,
                dst(7600 + i as u16),
                2_000_000,
                down,
                i as u64,
                None,
                Some(1_000_000),
            )
        })
        .collect();
    let pid = bx.proc.pid().unwrap();
    let peak_flows = bx.pep(&topo)["active_flows"].as_u64().unwrap();
    let fds = open_fds(pid);
    let ends: Vec<Outcome> = streams.into_iter().map(Stream::join).collect();
    for (i, o) in ends.iter().enumerate() {
        assert!(o.intact(), "flow {i}: {o:?}");
    }
    let bp = bx.wait_idle(&topo, Duration::from_secs(10));
    let raced = bp["over_limit"].as_u64().unwrap();
    eprintln!(
        "{n} flows: {peak_flows} split at once ({fds} descriptors open), {} SYNs unsplit, \
         {} accepted in all, {raced} over the limit, {} refused",
        bp["overflow_syns"], bp["accepted"], bp["refused_flows"]
    );
    // SYNs intercepted before the nft pause took effect are still split and counted as
    // `over_limit` (pep::flows); the descriptor reserve is there for them.
    assert!(
        peak_flows <= max + raced,
        "{peak_flows} split flows over the budget {max} (+{raced} that raced the pause)"
    );
    assert!(
        raced * fds_per_flow(true) < RESERVE,
        "{raced} flows raced the pause: more than the descriptor reserve covers"
    );
    assert!(
        bp["overflow_syns"].as_u64().unwrap() > 0,
        "none passed unsplit: {bp}"
    );
    assert_eq!(bp["refused_flows"], 0, "{bp}");
    assert_eq!(bp["reset"], 0, "{bp}");
    split_again(&topo, &bx, 7599);
    let log = bx.stop();
    assert!(!log.contains("Too many open files"), "{log}");
    pop.stop();
}

#[test]
fn a_box_whose_descriptors_run_out_keeps_its_flows_refuses_new_ones_and_recovers() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(10)),
        "srv not reachable"
    );
    // Ten split flows that last through the exhaustion (16 MB at 1 MB/s).
    let old: Vec<Stream> = (0..10)
        .map(|i| {
            start_stream_paced(
                &topo,
                dst(7700 + i),
                16_000_000,
                i % 2 == 0,
                i as u64,
                None,
                Some(1_000_000),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(500));
    let pid = bx.proc.pid().unwrap();
    // No descriptor left: the limit at the lowest free descriptor number.
    let free = lowest_free_fd(pid);
    prlimit_soft(pid, Some(free));
    eprintln!(
        "box: {} descriptors open, RLIMIT_NOFILE lowered to {free}",
        open_fds(pid)
    );
    std::thread::sleep(Duration::from_millis(1500));
    // New flows now: each is carried (unsplit) or refused with a reset; none hangs.
    let (mut carried, mut refused) = (0, 0);
    for i in 0..8u16 {
        let since = Instant::now();
        match new_flow(&topo, dst(7720 + i)) {
            Ok(()) => carried += 1,
            Err(e) => {
                assert!(e.contains("reset"), "new flow {i}: {e}");
                refused += 1;
            }
        }
        assert!(
            since.elapsed() < END_BOUND,
            "new flow {i} took {:?}",
            since.elapsed()
        );
    }
    eprintln!("8 new flows while out of descriptors: {carried} carried, {refused} refused (reset)");
    // The old flows went on.
    for (i, s) in old.into_iter().enumerate() {
        let o = s.join();
        assert!(o.intact(), "old flow {i}: {o:?}");
    }
    prlimit_soft(pid, None);
    std::thread::sleep(Duration::from_millis(1500));
    let bp = bx.pep(&topo);
    eprintln!(
        "the box refused {} flows, {} SYNs passed unsplit",
        bp["refused_flows"], bp["overflow_syns"]
    );
    assert_eq!(bp["refused_flows"], refused, "{bp}");
    split_again(&topo, &bx, 7740);
    let log = bx.stop();
    for l in log
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
    {
        eprintln!("box log: {l}");
    }
    let lines = log.matches("no descriptor left").count();
    eprintln!("box log: {lines} line(s) about the exhaustion");
    assert!(
        lines <= 2,
        "the exhaustion is logged once per episode:\n{log}"
    );
    pop.stop();
}
