//! A PEP daemon restarted mid-transfer (root, netns, no emulation): the POP killed (-9) or
//! stopped (SIGTERM) and started again, and the box killed and started again, each while a
//! download, an upload and an idle connection are split through them.
//!
//! - The box re-handshakes within REKEY_TIMEOUT + KEEPALIVE (15 s) of the POP's last packet.
//! - New flows work once the handshake is done (the time from the restart is printed).
//! - The flows split at the dead daemon end with an error on both end hosts (a reset, never a
//!   clean EOF) within a bound, none hangs; both PEPs' tables are empty afterwards, so the POP
//!   holds no stale per-flow state after a box restart.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_fault_common.rs"]
mod fault;

use std::io::Read;
use std::net::TcpStream;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use fault::*;
use nix::sys::signal::Signal;
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

/// One restart at a time: the bounds below are timing.
static ONE: Mutex<()> = Mutex::new(());

/// WireGuard: a new handshake once data went unanswered for KEEPALIVE (10 s) + REKEY_TIMEOUT
/// (5 s) since the last packet of the old POP; the margin covers the timer tick, the restart
/// and a loaded machine.
const HANDSHAKE_BOUND: Duration = Duration::from_secs(15 + 5);
/// The flows split at the dead daemon end within this (the dead-peer timeout is 20 s here).
const END_BOUND: Duration = Duration::from_secs(45);
/// Sender rate of the streams: mid-transfer without loading the machine.
const RATE: u64 = 5_000_000;
const DEAD_PEER: &str = "20s";

/// An idle split connection: each side blocks in read until the connection ends.
struct Idle {
    /// Per side: how the read ended and when.
    sides: Vec<JoinHandle<(String, Instant)>>,
}

fn idle(topo: &Topology, port: u16) -> Idle {
    let dst = sa(&format!("{}:{port}", addr::SRV));
    let l = listen(topo, Node::Srv, dst);
    let pc = connect(topo, Node::Pc, dst).expect("connect");
    let (srv, _) = l.accept().unwrap();
    let read = |mut s: TcpStream| {
        std::thread::spawn(move || {
            let mut b = [0u8; 16];
            let r = match s.read(&mut b) {
                Ok(0) => "clean EOF".to_string(),
                Ok(n) => format!("{n} bytes"),
                Err(e) => format!("error: {e}"),
            };
            (r, Instant::now())
        })
    };
    Idle {
        sides: vec![read(pc), read(srv)],
    }
}

/// The flows that live through the restart.
struct Live {
    streams: Vec<Stream>,
    idle: Idle,
}

fn live(topo: &Topology, base: u16) -> Live {
    let streams = [true, false]
        .iter()
        .enumerate()
        .map(|(i, down)| {
            let dst = sa(&format!("{}:{}", addr::SRV, base + i as u16));
            start_stream_paced(topo, dst, 1 << 40, *down, i as u64, None, Some(RATE))
        })
        .collect();
    let idle = idle(topo, base + 2);
    std::thread::sleep(Duration::from_secs(2));
    Live { streams, idle }
}

impl Live {
    /// Every flow ends with an error on both end hosts within `END_BOUND` of `since`.
    fn all_reset(self, what: &str, since: Instant) {
        for (i, s) in self.streams.into_iter().enumerate() {
            let dir = if i == 0 { "download" } else { "upload" };
            let got = s.received.load(std::sync::atomic::Ordering::Relaxed);
            let left = END_BOUND.saturating_sub(since.elapsed());
            let o = s
                .join_within(left)
                .unwrap_or_else(|| panic!("{what}: the {dir} hangs {END_BOUND:?} after"));
            eprintln!(
                "{what}: {dir} ({got} bytes) ended after {:.1} s (sender) / {:.1} s (receiver): {:?} / {:?}",
                o.sender.at.duration_since(since).as_secs_f64(),
                o.receiver.at.duration_since(since).as_secs_f64(),
                o.sender.error,
                o.receiver.error
            );
            assert!(
                o.failed_both_sides(),
                "{what}: the {dir} did not fail on both end hosts: {o:?}"
            );
        }
        for (h, side) in self.idle.sides.into_iter().zip(["pc", "srv"]) {
            while !h.is_finished() {
                assert!(
                    since.elapsed() < END_BOUND,
                    "{what}: the idle connection hangs at {side}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            let (r, at) = h.join().unwrap();
            eprintln!(
                "{what}: idle connection at {side}: {r} after {:.1} s",
                at.duration_since(since).as_secs_f64()
            );
            assert!(r.starts_with("error"), "{what}: idle at {side}: {r}");
        }
    }
}

fn latest_handshake(topo: &Topology, d: &Daemon) -> Option<u64> {
    d.show(topo)["peers"][0]["latest_handshake_unix"].as_u64()
}

/// Polls until a 1 MB download through both PEPs succeeds; the time it took from `since`.
fn new_flow_works(topo: &Topology, port: u16, since: Instant) -> Duration {
    let mut tries = 0;
    loop {
        tries += 1;
        let dst = sa(&format!("{}:{port}", addr::SRV));
        let t = Some(Duration::from_secs(30));
        match try_start_stream(topo, dst, 1_000_000, true, tries, t, None).map(Stream::join) {
            Ok(o) if o.intact() => return since.elapsed(),
            Ok(o) => eprintln!("new flow attempt {tries}: {o:?}"),
            Err(e) => eprintln!("new flow attempt {tries}: {e}"),
        }
        assert!(
            since.elapsed() < END_BOUND,
            "no new flow works {END_BOUND:?} after the restart"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn pair(topo: &Topology) -> (Daemon, Daemon) {
    let set = [("DeadPeerTimeout", DEAD_PEER)];
    let pair = start_pair(topo, Carry::Tunnel, &set, &set);
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(10)),
        "srv not reachable"
    );
    pair
}

fn restart(topo: &Topology, d: Daemon, sig: Signal) -> (Daemon, Instant) {
    let (node, bin, name) = (d.node, d.bin, d.iface.clone());
    let (b, p) = Carry::Tunnel.names();
    let conf = shipped_conf(
        if node == Node::Box { b } else { p },
        &[("DeadPeerTimeout", DEAD_PEER)],
    );
    let mut d = d;
    d.proc.signal(sig);
    let st = d.proc.wait_timeout(Duration::from_secs(10));
    assert!(st.is_some(), "{bin} did not exit on {sig:?}");
    let t = Instant::now();
    drop(d);
    (start(topo, node, bin, &name, &conf), t)
}

fn pop_restarted(sig: Signal) {
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let what = format!("POP {sig:?}");
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = pair(&topo);
    let flows = live(&topo, 7300);
    let (pop, down) = restart(&topo, pop, sig);
    let up_after = down.elapsed();
    // New flows from now on; the box's first packets after the old POP's last one go
    // unanswered, and once they have for 15 s the box initiates a handshake with the new POP.
    let (hs, works) = std::thread::scope(|sc| {
        let works = sc.spawn(|| new_flow_works(&topo, 7310, down));
        let hs = loop {
            if latest_handshake(&topo, &pop).is_some() {
                break down.elapsed();
            }
            assert!(
                down.elapsed() < HANDSHAKE_BOUND,
                "{what}: no handshake with the new POP {HANDSHAKE_BOUND:?} after"
            );
            std::thread::sleep(Duration::from_millis(100));
        };
        (hs, works.join().expect("new flow thread"))
    });
    eprintln!(
        "{what}: the new POP up {:.1} s after the old one ended; handshake {:.1} s; a new 1 MB \
         download through it done {:.1} s after",
        up_after.as_secs_f64(),
        hs.as_secs_f64(),
        works.as_secs_f64()
    );
    flows.all_reset(&what, down);
    bx.wait_idle(&topo, Duration::from_secs(5));
    pop.wait_idle(&topo, Duration::from_secs(5));
    bx.stop();
    pop.stop();
}

#[test]
fn a_pop_killed_and_restarted_mid_transfer_resets_its_flows_and_the_box_reconnects() {
    if !require_root() {
        return;
    }
    pop_restarted(Signal::SIGKILL);
}

#[test]
fn a_pop_stopped_and_restarted_mid_transfer_resets_its_flows_and_the_box_reconnects() {
    if !require_root() {
        return;
    }
    pop_restarted(Signal::SIGTERM);
}

#[test]
fn flows_split_at_a_pop_that_stays_dead_are_reset_within_the_dead_peer_timeout() {
    if !require_root() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, mut pop) = pair(&topo);
    let flows = live(&topo, 7500);
    pop.proc.signal(Signal::SIGKILL);
    assert!(pop.proc.wait_timeout(Duration::from_secs(5)).is_some());
    let down = Instant::now();
    flows.all_reset("POP dead", down);
    let b = bx.wait_idle(&topo, Duration::from_secs(5));
    eprintln!(
        "POP dead: the box's table empty {:.1} s after",
        down.elapsed().as_secs_f64()
    );
    assert!(b["reset"].as_u64().unwrap() >= 3, "{b}");
    bx.stop();
}

#[test]
fn a_box_killed_and_restarted_mid_transfer_leaves_no_stale_flow_at_the_pop() {
    if !require_root() {
        return;
    }
    let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = pair(&topo);
    let flows = live(&topo, 7400);
    let held = pop.pep(&topo)["active_flows"].as_u64().unwrap();
    assert_eq!(held, 3, "the POP should hold the three flows: {held}");
    let (bx, down) = restart(&topo, bx, Signal::SIGKILL);
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(10)),
        "srv not reachable through the new box"
    );
    let works = new_flow_works(&topo, 7410, down);
    let hs = latest_handshake(&topo, &bx).expect("the new box's handshake");
    eprintln!("box SIGKILL: the new box's handshake at UNIX {hs}");
    eprintln!(
        "box SIGKILL: a new 1 MB download through the new box done {:.1} s after the old one ended",
        works.as_secs_f64()
    );
    flows.all_reset("box SIGKILL", down);
    let p = pop.wait_idle(&topo, END_BOUND.saturating_sub(down.elapsed()));
    eprintln!(
        "box SIGKILL: the POP's table empty {:.1} s after (reset {})",
        down.elapsed().as_secs_f64(),
        p["reset"]
    );
    bx.wait_idle(&topo, Duration::from_secs(5));
    bx.stop();
    pop.stop();
}
