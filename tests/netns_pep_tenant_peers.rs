//! One peer's sustained connect flood does not starve another peer at the POP (root, netns,
//! two plain WireGuard boxes behind one POP with a default `[PEP]`): box 0 opens 10,000
//! connects a second for 10 s toward a blackholed destination, each held 1 s and then aborted.
//! The POP splits at most its share of them (`MaxFlowsPerHost`: a box's one address); the rest
//! pass unsplit into the blackhole. Box 1's paced download keeps its full rate, byte-exact, and
//! a new flow of box 1 opened mid-flood is split at the POP and arrives intact.

#[path = "netns_tenant_common.rs"]
mod tenant;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_common::config::Pep;
use starpep_testbed::bench::fleet::{Fleet, FleetSpec};
use starpep_testbed::topo::star::Star;
use starpep_tests::{addr, payload, raise_nofile, require_root, sha256_hex, Node};
use tenant::*;

const RATE: u64 = 10_000;
const FLOOD: Duration = Duration::from_secs(10);
/// Held less than the SYN's first retransmission (1 s): each connect sends one SYN.
const HOLD: Duration = Duration::from_millis(900);
/// Box 1's download: 64 KiB every 10 ms (6.55 MB/s, 52 Mbit/s).
const CHUNK: usize = 64 << 10;
const EVERY: Duration = Duration::from_millis(10);

/// A listener on srv.
fn listen(fleet: &Fleet, port: u16) -> TcpListener {
    let dst = SocketAddr::from((addr::SRV, port));
    fleet
        .star
        .topo
        .run_in(Node::Srv, move || TcpListener::bind(dst))
        .expect("srv namespace")
        .expect("listen on srv")
}

/// A connection from box `b` to srv's `port`.
fn connect(fleet: &Fleet, b: usize, port: u16) -> TcpStream {
    let s = fleet
        .star
        .run_in_box(b, || {
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        })
        .expect("box namespace")
        .expect("socket");
    s.connect_timeout(
        &SocketAddr::from((addr::SRV, port)).into(),
        Duration::from_secs(10),
    )
    .expect("connect from box 1");
    TcpStream::from(s)
}

/// Whether the POP holds a split flow of `client`.
fn split(pep: &Value, client: SocketAddr) -> bool {
    pep["flows"].as_array().is_some_and(|fs| {
        fs.iter()
            .any(|f| f["client"].as_str() == Some(client.to_string().as_str()))
    })
}

fn wait_split(fleet: &Fleet, client: SocketAddr) {
    fleet
        .wait_pep(
            Duration::from_secs(5),
            &format!("{client} not split"),
            |p| split(p, client),
        )
        .unwrap();
}

#[test]
fn a_sustained_connect_flood_from_one_peer_leaves_another_peer_split_at_full_rate() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let mut fleet = Fleet::up(&FleetSpec {
        boxes: 2,
        pop_pep: Some(Vec::new()),
        pop_workers: None,
    })
    .expect("POP up");
    fleet
        .start_boxes(Duration::from_secs(30))
        .expect("both boxes complete a handshake");
    let share = u64::from(Pep::DEFAULT_MAX_FLOWS_PER_HOST);

    let l = listen(&fleet, 7200);
    let c = connect(&fleet, 1, 7200);
    let first = c.local_addr().unwrap();
    let dl = Paced::start(l, c, CHUNK, EVERY);
    wait_split(&fleet, first);
    let offered = CHUNK as f64 / EVERY.as_secs_f64();
    std::thread::sleep(Duration::from_secs(2));

    let blackhole: Vec<SocketAddr> = (80..90)
        .map(|p| SocketAddr::from(([10, 2, 0, 99], p)))
        .collect();
    let flooder = Star::box_tunnel(0);
    let flood = sustain(
        fleet.star.box_ns(0).to_string(),
        blackhole,
        RATE,
        HOLD,
        FLOOD,
    );
    let t_flood = Instant::now();

    std::thread::sleep(Duration::from_secs(4));
    let p = fleet.pop_pep().unwrap();
    let held = flows_from(&p, &flooder.to_string());
    eprintln!(
        "mid-flood: the POP holds {held} flows of box 0 (share {share}), capped_syns {}, \
         capped_clients {}",
        p["capped_syns"], p["capped_clients"]
    );
    assert!(held <= share, "box 0 holds more than its share: {held}");
    assert!(
        p["capped_clients"].as_u64().unwrap() >= 1,
        "the POP does not cap box 0: {p}"
    );
    // A new flow of box 1, mid-flood: split, intact.
    let l2 = listen(&fleet, 7201);
    let mut c2 = connect(&fleet, 1, 7201);
    let (mut s2, _) = l2.accept().unwrap();
    wait_split(&fleet, c2.local_addr().unwrap());
    let data = payload(2 << 20, 9);
    let sent = sha256_hex(&data);
    let w = std::thread::spawn(move || {
        s2.write_all(&data).unwrap();
        s2.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut got = Vec::new();
    c2.read_to_end(&mut got).unwrap();
    w.join().unwrap();
    assert_eq!(sha256_hex(&got), sent, "box 1's mid-flood download differs");
    drop(c2);

    // The flood runs its whole course.
    let fs = flood.join();
    let during = dl.rate_between(t_flood + Duration::from_secs(1), Instant::now());
    eprintln!(
        "flood: {} connects at {:.0}/s, {} completed a handshake (with the POP), {} refused by \
         the box; box 1's download {:.2} MB/s during it, offered {:.2}",
        fs.attempted,
        fs.rate,
        fs.completed,
        fs.refused,
        during / 1e6,
        offered / 1e6
    );
    assert!(
        fs.rate >= 0.9 * RATE as f64,
        "the flood ran at {:.0}/s",
        fs.rate
    );
    assert!(
        fs.completed <= share * ((FLOOD.as_millis() / HOLD.as_millis()) as u64 + 1),
        "{fs:?}"
    );
    assert!(
        during >= 0.9 * offered,
        "box 1's download fell to {:.2} of {:.2} MB/s",
        during / 1e6,
        offered / 1e6
    );
    let end = dl.finish();
    assert!(end.intact, "box 1's download differs: {end:?}");

    let p = fleet
        .wait_pep(Duration::from_secs(15), "flows still live", |p| {
            p["active_flows"] == 0
        })
        .unwrap();
    assert_eq!(p["capped_clients"], 0, "the POP still caps: {p}");
    let (status, log) = fleet.stop();
    assert!(status.is_some_and(|s| s.success()), "POP exit: {log}");
}
