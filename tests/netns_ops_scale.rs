//! One POP, a hundred terminals (root, netns): 100 boxes, each its own WireGuard peer with its
//! own key and endpoint, started at once (a handshake storm the POP completes); a flow alone on
//! its box's link gets the link's whole buffer; 1000 split downloads, byte-exact, with each
//! satellite socket's buffer a share of its box's link and the POP's RSS within the goal; the
//! flow beyond `MaxFlows` passes unsplit and intact; every flow ends and the POP stops clean.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use starpep_common::config::Pep;
use starpep_common::pep::buffers::{LinkBuffers, SLACK};
use starpep_testbed::bench::fleet::{Fleet, FleetSpec, SockMem};
use starpep_testbed::bench::fleet_load::{echo, Amount, Load, LoadSpec};
use starpep_tests::{addr, raise_nofile, require_root, rss_kib, Node};

const BOXES: usize = 100;
const PER_BOX: usize = 10;
const FLOWS: usize = BOXES * PER_BOX;
const PER_FLOW: usize = 200_000;
const PORT: u16 = 5701;
/// The goal for the POP at 1000 active flows.
const RSS_GOAL_KIB: u64 = 200 * 1024;

/// The POP's satellite-side sockets of downloads to `port` (accepted from the tunnel: the
/// peer is a box's tunnel address).
fn satellite(socks: &[SockMem], port: u16) -> Vec<&SockMem> {
    socks
        .iter()
        .filter(|s| s.peer.starts_with("10.8.") && s.local.ends_with(&format!(":{port}")))
        .collect()
}

/// Polls the POP's sockets until `ok` holds for the satellite sockets of `port`.
fn wait_sockets(fleet: &Fleet, port: u16, what: &str, ok: impl Fn(&[&SockMem]) -> bool) {
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        let socks = fleet.pop_sockets().expect("ss in the POP");
        let sat = satellite(&socks, port);
        if ok(&sat) {
            return;
        }
        assert!(Instant::now() < end, "{what}: {sat:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn one_pop_serves_a_hundred_boxes_with_a_thousand_split_flows() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let mut fleet = Fleet::up(&FleetSpec {
        boxes: BOXES,
        pop_pep: Some(vec![format!("MaxFlows = {FLOWS}")]),
        pop_workers: None,
    })
    .expect("POP up");
    let pop = fleet.pop_pid().unwrap();
    let storm = fleet
        .start_boxes(Duration::from_secs(120))
        .expect("every box completes a handshake with the POP");
    eprintln!(
        "storm: all {BOXES} handshakes after {:?}",
        storm.all_handshakes
    );
    let peers = fleet.pop_show().unwrap()["peers"].clone();
    let endpoints: std::collections::HashSet<String> = peers
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["endpoint"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(endpoints.len(), BOXES, "one endpoint per box: {peers}");

    // The link's buffers with the POP's defaults (the config sets only MaxFlows).
    let d = Pep::default();
    let link = LinkBuffers {
        snd: d.snd_buf_bytes() as usize,
        rcv: d.rcv_buf_bytes() as usize,
    };
    // A flow alone on its box's link: the whole receive buffer (the kernel doubles it).
    let alone_port = PORT + 2;
    let dst = SocketAddr::from((addr::SRV, alone_port));
    let l: TcpListener = fleet
        .star
        .topo
        .run_in(Node::Srv, move || TcpListener::bind(dst))
        .unwrap()
        .unwrap();
    let s = fleet
        .star
        .run_in_box(0, || {
            socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
        })
        .unwrap()
        .unwrap();
    s.connect_timeout(&dst.into(), Duration::from_secs(30))
        .expect("connect from box 0");
    let mut c = TcpStream::from(s);
    let (mut srv, _) = l.accept().unwrap();
    c.write_all(b"hello").unwrap();
    let mut got = [0u8; 5];
    srv.read_exact(&mut got).unwrap();
    wait_sockets(
        &fleet,
        alone_port,
        "a lone flow without the whole buffer",
        |s| s.len() == 1 && s[0].rb == 2 * link.rcv as u64,
    );
    drop((c, srv, l));
    fleet
        .wait_pep(Duration::from_secs(20), "the lone flow still live", |p| {
            p["active_flows"] == 0
        })
        .unwrap();

    let load = Load::open(
        &fleet,
        &LoadSpec {
            per_box: PER_BOX,
            port: PORT,
            amount: Amount::Checked(PER_FLOW),
        },
    )
    .expect("every flow connected");
    let full = fleet
        .wait_pep(Duration::from_secs(60), "not every flow split", |p| {
            p["active_flows"] == FLOWS && p["intercepting"] == false
        })
        .unwrap();
    // Each satellite socket holds a share of its box's link, not the whole link.
    let share = link.per_flow(PER_BOX).rcv as u64;
    wait_sockets(&fleet, PORT, "satellite buffers above their share", |s| {
        s.len() == FLOWS && s.iter().all(|m| m.rb <= 2 * SLACK as u64 * share)
    });
    let (rss_open, _) = rss_kib(pop);

    // The flow beyond MaxFlows passes the POP unsplit, intact, counted.
    let accepted = full["accepted"].as_u64().unwrap();
    assert!(
        echo(&fleet, 0, PORT + 1, 1 << 20).unwrap(),
        "the flow beyond MaxFlows was corrupted"
    );
    let p = fleet
        .wait_pep(Duration::from_secs(15), "overflow not counted", |p| {
            p["overflow_syns"].as_u64().unwrap_or(0) >= 1
        })
        .unwrap();
    assert_eq!(
        p["accepted"].as_u64(),
        Some(accepted),
        "split beyond MaxFlows: {p}"
    );

    load.go();
    let res = load.finish().expect("every flow ends");
    let (_, hwm) = rss_kib(pop);
    eprintln!("POP RSS: {rss_open} KiB with {FLOWS} flows open, peak {hwm} KiB");
    assert_eq!(res.flows, FLOWS);
    assert_eq!(res.intact, FLOWS, "flows with a corrupted payload");
    for (b, bytes) in res.bytes_per_box.iter().enumerate() {
        assert_eq!(*bytes, (PER_BOX * PER_FLOW) as u64, "box {b}");
    }
    assert!(hwm <= RSS_GOAL_KIB, "POP peak RSS {hwm} KiB");
    let p = fleet
        .wait_pep(Duration::from_secs(30), "flows still live", |p| {
            p["active_flows"] == 0
        })
        .unwrap();
    assert_eq!(p["closed"].as_u64(), Some(accepted), "{p}");
    assert_eq!(
        satellite(&fleet.pop_sockets().unwrap(), PORT).len(),
        0,
        "sockets left at the POP"
    );
    let (st, log) = fleet.stop();
    assert!(st.is_some_and(|s| s.success()), "POP exit {st:?}:\n{log}");
}
