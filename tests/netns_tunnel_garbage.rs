//! The POP's WireGuard port under hostile datagrams (root, netns): random bytes, type-shaped
//! messages, replays of the box's own valid packets, and handshake initiations with a valid
//! MAC1 from unknown keys (the cookie path), at ~100k datagrams/s while the tunnel carries a
//! ping and then a sha256-checked transfer. Nothing is lost, memory stays flat, the log stays
//! quiet, and the real peer keeps its endpoint.

#[path = "netns_tunnel_common.rs"]
mod common;

use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine as _;
use boringtun::noise::{Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};
use common::*;
use rand::{Rng, RngCore};
use starpep_tests::{addr, require_root, rss_kib, Node, Proc, TopoSpec, Topology};

/// How long the flood lasts, and its ceiling (the probe sent 1.32 M in 10 s).
const FLOOD: Duration = Duration::from_secs(10);
const MAX_RATE: u64 = 130_000;

/// Valid transport datagrams the box sent to the POP, captured on the POP's WAN while `work`
/// runs (they are replayed later).
fn capture_valid(topo: &Topology, work: impl FnOnce()) -> Vec<Vec<u8>> {
    let pcap = topo.tmpdir().join("valid.pcap");
    let mut dump: Proc = topo
        .spawn(
            Node::Pop,
            "tcpdump-valid",
            &[
                "tcpdump",
                "-i",
                "wan0",
                "-nn",
                "-U",
                "-w",
                &pcap.display().to_string(),
                &format!("udp dst port {WG_PORT} and udp[8] == 4"),
            ],
        )
        .expect("tcpdump");
    std::thread::sleep(Duration::from_millis(700));
    work();
    std::thread::sleep(Duration::from_millis(300));
    dump.stop();
    let f = std::fs::File::open(&pcap).expect("capture file");
    let mut r = pcap_file::pcap::PcapReader::new(f).expect("pcap header");
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let p = p.expect("pcap record");
        let s = etherparse::SlicedPacket::from_ethernet(&p.data).expect("ethernet frame");
        if let Some(etherparse::TransportSlice::Udp(u)) = s.transport {
            out.push(u.payload().to_vec());
        }
    }
    out
}

/// Handshake initiations from fresh unknown keys, with a valid MAC1 for `pop_public`.
fn stranger_initiations(pop_public: PublicKey, n: usize) -> Vec<Vec<u8>> {
    let mut rng = rand::thread_rng();
    (0..n)
        .map(|i| {
            let mut k = [0u8; 32];
            rng.fill_bytes(&mut k);
            let mut t = Tunn::new(
                StaticSecret::from(k),
                pop_public,
                None,
                None,
                i as u32,
                None,
            );
            let mut buf = vec![0u8; 256];
            match t.format_handshake_initiation(&mut buf, true) {
                TunnResult::WriteToNetwork(d) => d.to_vec(),
                other => panic!("no initiation: {other:?}"),
            }
        })
        .collect()
}

/// One datagram of the mix: random bytes, a type-shaped message, a replay or an initiation.
fn next_datagram(rng: &mut impl Rng, replays: &[Vec<u8>], inits: &[Vec<u8>], buf: &mut Vec<u8>) {
    buf.clear();
    match rng.gen_range(0..4) {
        0 => {
            buf.resize(rng.gen_range(0..1500), 0);
            rng.fill_bytes(buf);
        }
        1 => {
            // Types 1-4 at their lengths (data: any length from its header up), random body.
            let ty = rng.gen_range(1u8..=4);
            let len = match ty {
                1 => 148,
                2 => 92,
                3 => 64,
                _ => rng.gen_range(32..1500),
            };
            buf.resize(len, 0);
            rng.fill_bytes(buf);
            buf[..4].copy_from_slice(&[ty, 0, 0, 0]);
        }
        2 => buf.extend_from_slice(&replays[rng.gen_range(0..replays.len())]),
        _ => buf.extend_from_slice(&inits[rng.gen_range(0..inits.len())]),
    }
}

/// Sends the mix from `sock` until `stop`, at most [`MAX_RATE`] per second; counts what it sent.
fn flood(sock: &UdpSocket, replays: &[Vec<u8>], inits: &[Vec<u8>], stop: &AtomicBool) -> u64 {
    let mut rng = rand::thread_rng();
    let (t0, mut sent, mut buf) = (Instant::now(), 0u64, Vec::with_capacity(1500));
    while !stop.load(Relaxed) {
        let due = (t0.elapsed().as_secs_f64() * MAX_RATE as f64) as u64;
        if sent >= due {
            std::thread::sleep(Duration::from_micros(200));
            continue;
        }
        for _ in 0..64 {
            next_datagram(&mut rng, replays, inits, &mut buf);
            // A full socket buffer (ENOBUFS) is the sender's loss, not the POP's.
            if sock.send(&buf).is_ok() {
                sent += 1;
            }
        }
    }
    sent
}

/// Counts the cookie replies (type 3) that come back to the flooding socket.
fn count_cookies(sock: &UdpSocket, stop: &AtomicBool, cookies: &AtomicU64) {
    sock.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 2048];
    while !stop.load(Relaxed) {
        if let Ok(n) = sock.recv(&mut buf) {
            if n == 64 && buf[0] == 3 {
                cookies.fetch_add(1, Relaxed);
            }
        }
    }
}

#[test]
fn garbage_replays_and_strangers_at_the_pop_port_cost_the_tunnel_nothing() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (_bi, pi, pop, _bx) = up_pair(&topo, "");
    ping_ok(&topo, Node::Pc, &srv(), 5);

    let replays = capture_valid(&topo, || {
        let out = topo
            .exec(Node::Pc, &["ping", "-c", "200", "-i", "0.005", &srv()])
            .unwrap();
        assert!(out.status.success(), "warm-up ping failed");
    });
    assert!(
        replays.len() >= 20,
        "{} valid datagrams captured",
        replays.len()
    );
    let before = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    let pop_key: [u8; 32] = base64::engine::general_purpose::STANDARD
        .decode(before["public_key"].as_str().expect("the POP's public key"))
        .expect("base64 public key")
        .try_into()
        .expect("32-byte key");
    let inits = stranger_initiations(PublicKey::from(pop_key), 256);

    let endpoint = before["peers"][0]["endpoint"].clone();
    assert!(endpoint.is_string(), "the box's endpoint: {before}");
    let pid = pop.pid().expect("POP pid");
    let (rss0, _) = rss_kib(pid);
    let log0 = pop.log().lines().count();

    // The flood comes from the box's WAN address, another port: what an attacker on the
    // operator's access network can send.
    let dst: SocketAddr = format!("{}:{WG_PORT}", addr::POP_WAN).parse().unwrap();
    let sock = Arc::new(
        topo.run_in(Node::Box, move || {
            let s = UdpSocket::bind("0.0.0.0:0").expect("flood socket");
            s.connect(dst).expect("connect");
            s
        })
        .expect("enter the box's namespace"),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let cookies = Arc::new(AtomicU64::new(0));
    let (sent, ping) = std::thread::scope(|s| {
        let f = s.spawn(|| flood(&sock, &replays, &inits, &stop));
        s.spawn(|| count_cookies(&sock, &stop, &cookies));
        std::thread::sleep(Duration::from_millis(500));
        // 40 pings over 8 s through the tunnel, while the flood runs.
        let ping = topo
            .exec(
                Node::Pc,
                &["ping", "-c", "40", "-i", "0.2", "-W", "2", &srv()],
            )
            .unwrap();
        std::thread::sleep(FLOOD.saturating_sub(Duration::from_millis(8700)));
        stop.store(true, Relaxed);
        (f.join().expect("flood"), ping)
    });
    let ping = String::from_utf8_lossy(&ping.stdout).into_owned();
    let (rss1, _) = rss_kib(pid);
    let after = show_json(&topo, Node::Pop, "starpep-pop", &pi);
    let log = pop.log();
    let new_lines: Vec<&str> = log.lines().skip(log0).collect();
    eprintln!(
        "sent {sent} datagrams; cookies back {}; RSS {rss0} -> {rss1} KiB; {} new log lines; \
         POP counters invalid {} unknown {} cookies {} decrypt {}",
        cookies.load(Relaxed),
        new_lines.len(),
        after["dropped_invalid"],
        after["dropped_unknown_peer"],
        after["cookie_replies"],
        after["peers"][0]["dropped_decrypt"],
    );
    assert!(sent >= 500_000, "only {sent} datagrams sent: no flood");
    assert!(
        ping.contains(" 0% packet loss"),
        "pings lost through the tunnel during the flood:\n{ping}"
    );
    assert!(
        rss1 <= rss0 + 8 * 1024,
        "POP RSS grew from {rss0} to {rss1} KiB"
    );
    assert!(
        new_lines.len() <= 5,
        "the flood wrote {} log lines, first: {:?}",
        new_lines.len(),
        new_lines.first()
    );
    assert!(
        cookies.load(Relaxed) > 0,
        "no cookie replies to a flood of initiations"
    );
    assert!(
        after["dropped_invalid"].as_u64().unwrap_or(0) > 0
            && after["dropped_unknown_peer"].as_u64().unwrap_or(0) > 0,
        "the flood was not counted: {after}"
    );
    // Replays from another port authenticate nothing: the peer keeps its endpoint.
    assert_eq!(after["peers"][0]["endpoint"], endpoint, "{after}");
    // And the tunnel carries a checked transfer afterwards.
    transfer(&topo, Node::Pc, Node::Srv, &srv(), 5201, 5_000_000);
}
