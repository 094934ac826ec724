//! A SYN flood from the LAN (root, netns, no emulation): 10,000 SYNs/s from spoofed random LAN
//! addresses toward the server network, sent by a raw socket in pc, first IPv4 for 10 s, then
//! IPv6 for 5 s. The box intercepts them like any SYN; its listener's queue of half-open
//! connections fills and the kernel answers with SYN cookies. Meanwhile a download that started
//! before the flood keeps its rate and arrives intact, new flows from pc (both families) are
//! still split at the box (their cookie ACKs steered to the listener) and arrive intact, no
//! flooded connection reaches the daemon, its memory stays where it was, and the kernel holds
//! no more half-open connections than the listen backlog allows.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_fault_common.rs"]
mod fault;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use common::*;
use fault::*;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use starpep_common::pep::nft::{
    COOKIE_COUNTER, SYN4_SET, SYN6_SET, SYN_SET_FULL_COUNTER, SYN_SET_SIZE,
};
use starpep_common::pep::plan::table_name;
use starpep_tests::{addr, raise_nofile, require_root, rss_kib, Node, TopoSpec, Topology};

/// SYNs a second.
const RATE: u64 = 10_000;
const FLOOD4: Duration = Duration::from_secs(10);
const FLOOD6: Duration = Duration::from_secs(5);
/// The download through the flood, paced (bytes/s): its rate during the flood must stay at
/// least half of this.
const OLD_RATE: u64 = 2_000_000;
/// The box daemon's RSS may grow this much (KiB) under the flood: no flooded connection ever
/// reaches it (none completes its handshake); the new flows' buffers are most of this.
const RSS_GROWTH_KIB: u64 = 16 * 1024;

/// A SYN toward `dst` from a random LAN address (`.3 ..= .254`, `::3 ..= ::fe`) and port. The
/// IPv6 sources stay as few as IPv4's: SYN-ACKs to thousands of spoofed addresses would
/// overflow the box's neighbour table (`gc_thresh3`, 1024) and evict pc's entry, split or not
/// (unsplit, the server's SYN-ACKs pass the box as well).
fn syn(rng: &mut rand::rngs::StdRng, dst: SocketAddr) -> Vec<u8> {
    let (sport, seq) = (rng.gen_range(1024..=65535), rng.gen());
    let b = match dst.ip() {
        IpAddr::V4(d) => {
            let mut src = addr::PC_LAN.octets();
            src[3] = rng.gen_range(3..=254);
            etherparse::PacketBuilder::ipv4(src, d.octets(), 64)
        }
        IpAddr::V6(d) => {
            let mut src = addr::PC_LAN6.octets();
            src[15] = rng.gen_range(3..=254);
            etherparse::PacketBuilder::ipv6(src, d.octets(), 64)
        }
    }
    .tcp(sport, dst.port(), seq, 64240)
    .syn();
    let mut out = Vec::with_capacity(b.size(0));
    b.write(&mut out, &[]).expect("build SYN");
    out
}

/// A flood of `RATE` spoofed SYNs a second from pc toward `dst`, until `stop`.
struct Flood {
    sent: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    started: Instant,
    thread: JoinHandle<()>,
}

impl Flood {
    fn start(topo: &Topology, dst: SocketAddr) -> Flood {
        let domain = socket2::Domain::for_address(dst);
        // IPPROTO_RAW: the IP header (with the spoofed source) is ours.
        let sock = in_ns(topo, Node::Pc, move || {
            socket2::Socket::new(domain, socket2::Type::RAW, Some(255.into()))
                .expect("raw socket (root)")
        });
        let (sent, stop) = (
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicBool::new(false)),
        );
        let (s2, stop2) = (sent.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut rng = rand::rngs::StdRng::seed_from_u64(7);
            // Raw sockets take no port (IPv6 would read it as the protocol).
            let to = socket2::SockAddr::from(SocketAddr::new(dst.ip(), 0));
            let t0 = Instant::now();
            while !stop2.load(Relaxed) {
                let n = s2.load(Relaxed);
                let due = t0 + Duration::from_secs_f64(n as f64 / RATE as f64);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
                for _ in 0..10 {
                    let _ = sock.send_to(&syn(&mut rng, dst), &to);
                }
                s2.fetch_add(10, Relaxed);
            }
        });
        Flood {
            sent,
            stop,
            started: Instant::now(),
            thread,
        }
    }

    /// Stops once it has run `length`; returns SYNs sent and seconds.
    fn stop_after(self, length: Duration) -> (u64, f64) {
        std::thread::sleep(length.saturating_sub(self.started.elapsed()));
        self.stop.store(true, Relaxed);
        self.thread.join().expect("flood thread");
        (
            self.sent.load(Relaxed),
            self.started.elapsed().as_secs_f64(),
        )
    }
}

/// Half-open connections (SYN-RECV request sockets) of one family in `node`.
fn syn_recv(topo: &Topology, node: Node, fam: &str) -> u64 {
    topo.run_ok(node, &["ss", "-Htn", fam, "state", "syn-recv"])
        .unwrap()
        .lines()
        .count() as u64
}

/// The backlog of the listener on `port` of one family (`ss`: Send-Q of a listening socket).
fn backlog(topo: &Topology, node: Node, fam: &str, port: u16) -> u64 {
    let out = topo
        .run_ok(
            node,
            &["ss", "-Hltn", fam, "sport", "=", &format!(":{port}")],
        )
        .unwrap();
    let line = out.lines().next().expect("a listener");
    line.split_whitespace().nth(2).unwrap().parse().unwrap()
}

fn nft_json(topo: &Topology, what: &[&str]) -> Value {
    let mut args = vec!["nft", "-j", "list"];
    args.extend(what);
    serde_json::from_str(&topo.run_ok(Node::Box, &args).unwrap()).unwrap()
}

/// Packets counted by the box table's counter `name`.
fn counter(topo: &Topology, table: &str, name: &str) -> u64 {
    let v = nft_json(topo, &["counter", "inet", table, name]);
    v["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|o| o["counter"]["packets"].as_u64())
        .expect("an nft counter")
}

/// Tuples in one of the box table's sets of recently intercepted SYNs.
fn remembered(topo: &Topology, table: &str, set: &str) -> usize {
    let v = nft_json(topo, &["set", "inet", table, set]);
    v["nftables"]
        .as_array()
        .unwrap()
        .iter()
        .find_map(|o| o["set"]["elem"].as_array().map(Vec::len))
        .unwrap_or(0)
}

/// New flows to srv `dst_ip` from `port` on, during a flood: each split at the box and intact.
fn new_flows(topo: &Topology, bx: &Daemon, dst_ip: IpAddr, port: u16, n: u16) -> usize {
    let mut split = 0;
    for i in 0..n {
        let s = try_start_stream(
            topo,
            SocketAddr::new(dst_ip, port + i),
            1_000_000,
            i % 2 == 0,
            u64::from(port + i),
            Some(Duration::from_secs(20)),
            Some(OLD_RATE),
        )
        .unwrap_or_else(|e| panic!("new flow {i} to {dst_ip} during the flood: {e}"));
        split += usize::from(flow_of(&bx.pep(topo), s.client).is_some());
        let o = s.join();
        assert!(
            o.intact(),
            "new flow to {dst_ip} {i} during the flood: {o:?}"
        );
    }
    split
}

#[test]
fn a_syn_flood_from_the_lan_leaves_old_and_new_flows_split_and_memory_bounded() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    for dst in [addr::SRV.to_string(), addr::SRV6.to_string()] {
        assert!(
            topo.wait_reachable(Node::Pc, &dst, Duration::from_secs(10)),
            "{dst} not reachable"
        );
    }
    let table = table_name(&bx.iface);
    let port = bx.pep(&topo)["proxy_port"].as_u64().unwrap() as u16;
    let pid = bx.proc.pid().unwrap();
    let (rss0, _) = rss_kib(pid);
    let accepted0 = bx.pep(&topo)["accepted"].as_u64().unwrap();
    let cookies0 = topo.tcp_ext(Node::Box, "SyncookiesSent").expect("netstat");
    let old = start_stream_paced(
        &topo,
        sa(&format!("{}:7800", addr::SRV)),
        30_000_000,
        true,
        1,
        None,
        Some(OLD_RATE),
    );
    std::thread::sleep(Duration::from_secs(1));

    // IPv4.
    let before = old.received.load(Relaxed);
    let flood = Flood::start(&topo, sa(&format!("{}:7899", addr::SRV)));
    std::thread::sleep(Duration::from_secs(2));
    let split4 = new_flows(&topo, &bx, IpAddr::V4(addr::SRV), 7801, 5);
    let half_open4 = syn_recv(&topo, Node::Box, "-4");
    let tuples4 = remembered(&topo, &table, SYN4_SET);
    let (n4, secs4) = flood.stop_after(FLOOD4);
    let moved = old.received.load(Relaxed) - before;
    let steered4 = counter(&topo, &table, COOKIE_COUNTER);

    // IPv6 (the v4 flood's request sockets time out meanwhile).
    let flood = Flood::start(&topo, sa(&format!("[{}]:7899", addr::SRV6)));
    std::thread::sleep(Duration::from_secs(2));
    let split6 = new_flows(&topo, &bx, IpAddr::V6(addr::SRV6), 7811, 2);
    let half_open6 = syn_recv(&topo, Node::Box, "-6");
    let tuples6 = remembered(&topo, &table, SYN6_SET);
    let (n6, secs6) = flood.stop_after(FLOOD6);
    let steered6 = counter(&topo, &table, COOKIE_COUNTER) - steered4;
    let set_full = counter(&topo, &table, SYN_SET_FULL_COUNTER);

    let (rss, _) = rss_kib(pid);
    let cookies = topo.tcp_ext(Node::Box, "SyncookiesSent").expect("netstat") - cookies0;
    let (backlog4, backlog6) = (
        backlog(&topo, Node::Box, "-4", port),
        backlog(&topo, Node::Box, "-6", port),
    );
    let old_rate = moved as f64 / secs4;
    eprintln!(
        "IPv4: {n4} SYNs in {secs4:.1} s ({:.0}/s), {half_open4} half-open (backlog \
         {backlog4}), {tuples4} SYN tuples remembered, {steered4} cookie ACKs steered, \
         {split4}/5 new flows split, the old download at {:.2} MB/s (paced {:.2}); IPv6: {n6} \
         SYNs in {secs6:.1} s ({:.0}/s), {half_open6} half-open (backlog {backlog6}), {tuples6} \
         tuples, {steered6} cookie ACKs steered, {split6}/2 new flows split; box: {cookies} SYN \
         cookies sent, RSS {rss0} -> {rss} KiB",
        n4 as f64 / secs4,
        old_rate / 1e6,
        OLD_RATE as f64 / 1e6,
        n6 as f64 / secs6,
    );
    let o = old.join();
    assert!(o.intact(), "the download through the flood: {o:?}");
    for (n, secs) in [(n4, secs4), (n6, secs6)] {
        let r = n as f64 / secs;
        assert!(r > RATE as f64 * 0.8, "a flood ran at {r:.0}/s only");
    }
    assert!(cookies > 0, "the listener's queue never overflowed");
    // The kernel's request queue holds up to one more than the listen backlog.
    assert!(half_open4 <= backlog4 + 1, "{half_open4} > {backlog4} + 1");
    assert!(half_open6 <= backlog6 + 1, "{half_open6} > {backlog6} + 1");
    for (t, fam) in [(tuples4, "IPv4"), (tuples6, "IPv6")] {
        assert!(t > 0, "no {fam} SYN tuple remembered");
        assert!(t <= SYN_SET_SIZE as usize, "{t} {fam} tuples");
    }
    // The sets cover this rate: every SYN was remembered (none passed unsplit for want of room).
    assert_eq!(set_full, 0, "SYNs that found their set full");
    // Every new flow completed its handshake on a cookie: its ACK was steered.
    assert!(
        steered4 >= 5,
        "{steered4} IPv4 cookie ACKs steered to the listener"
    );
    assert!(
        steered6 >= 2,
        "{steered6} IPv6 cookie ACKs steered to the listener"
    );
    assert_eq!(
        (split4, split6),
        (5, 2),
        "new flows during the flood not split"
    );
    assert!(
        old_rate >= OLD_RATE as f64 / 2.0,
        "the old download slowed to {old_rate:.0} B/s"
    );
    assert!(rss <= rss0 + RSS_GROWTH_KIB, "box RSS {rss0} -> {rss} KiB");
    let bp = bx.wait_idle(&topo, Duration::from_secs(10));
    // The old download and the new flows; not one flooded connection.
    assert_eq!(
        bp["accepted"].as_u64().unwrap() - accepted0,
        1 + 5 + 2,
        "{bp}"
    );
    assert_eq!(bp["reset"], 0, "{bp}");
    bx.stop();
    pop.stop();
}
