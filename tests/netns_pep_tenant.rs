//! One tenant cannot starve the others (root, netns, no emulation): a connect flood from one
//! LAN host toward a blackholed destination holds at most its share of the box's flow table
//! (`MaxFlowsPerClient`, per host) and of the POP's (`MaxFlowsPerHost` per address,
//! `MaxFlowsPerClient` per peer); its further flows pass unsplit. Another host's flow is
//! still split at both PEPs and arrives intact, and once the flood resets its connections
//! both tables drain at once (the PEPs give up their connect attempts).

#[path = "netns_pep_common.rs"]
mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use starpep_tests::{
    addr, payload, raise_nofile, require_root, sha256_hex, Node, TopoSpec, Topology,
};

const BOX_SHARE: u64 = 8;
const POP_HOST_SHARE: u64 = 16;
const FLOOD: usize = 300;

/// Flows of `pep` (show --json) whose client address is `ip`.
fn flows_from(pep: &serde_json::Value, ip: &str) -> u64 {
    pep["flows"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter(|f| {
                    f["client"]
                        .as_str()
                        .and_then(|c| c.parse::<SocketAddr>().ok())
                        .is_some_and(|c| c.ip().to_string() == ip)
                })
                .count() as u64
        })
        .unwrap_or(0)
}

/// `n` non-blocking connects from pc's default address to a destination nobody answers.
fn flood(topo: &Topology, n: usize) -> Vec<socket2::Socket> {
    let dst: SocketAddr = "10.2.0.99:80".parse().unwrap();
    in_ns(topo, Node::Pc, move || {
        (0..n)
            .map(|_| {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .expect("socket");
                s.set_nonblocking(true).unwrap();
                let _ = s.connect(&dst.into());
                // 10,000 connects/s.
                std::thread::sleep(Duration::from_micros(100));
                s
            })
            .collect()
    })
}

/// A connection from pc's second address (another LAN host) to srv.
fn other_host(topo: &Topology, dst: SocketAddr) -> TcpStream {
    in_ns(topo, Node::Pc, move || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let src: SocketAddr = "10.1.0.3:0".parse().unwrap();
        s.bind(&src.into()).unwrap();
        s.connect_timeout(&dst.into(), Duration::from_secs(10))
            .expect("connect from the other host");
        TcpStream::from(s)
    })
}

#[test]
fn a_connect_flood_from_one_host_holds_only_its_share_and_another_host_is_still_split() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    topo.ip(
        Node::Pc,
        &["addr", "add", "10.1.0.3/24", "dev", addr::LAN_IF],
    )
    .expect("second LAN host");
    let box_share = BOX_SHARE.to_string();
    let host_share = POP_HOST_SHARE.to_string();
    let (bx, pop) = start_pair(
        &topo,
        Carry::Tunnel,
        &[("MaxFlowsPerClient", &box_share)],
        &[
            ("MaxFlowsPerClient", "64"),
            ("MaxFlowsPerHost", &host_share),
        ],
    );
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(10)),
        "the tunnel did not come up"
    );
    // A burst outruns the nft update: the flows that raced it are reset at accept (counted as
    // over the cap); once the set holds the host, its SYNs pass unsplit.
    let mut flood_socks = flood(&topo, FLOOD);
    std::thread::sleep(Duration::from_millis(300));
    flood_socks.extend(flood(&topo, FLOOD));
    std::thread::sleep(Duration::from_millis(500));

    // The daemon reads the nft SYN counters about once a second.
    let bp = bx.wait_pep(
        &topo,
        Duration::from_secs(10),
        "no capped SYN counted",
        |b| b["capped_syns"].as_u64().unwrap_or(0) > 0,
    );
    let pp = pop.pep(&topo);
    let pc = addr::PC_LAN.to_string();
    eprintln!(
        "box: {} flows of the flood, capped_syns {}, over_cap {}; POP: {} flows, capped_syns {}",
        flows_from(&bp, &pc),
        bp["capped_syns"],
        bp["over_cap"],
        flows_from(&pp, &pc),
        pp["capped_syns"]
    );
    assert!(
        flows_from(&bp, &pc) <= BOX_SHARE,
        "box holds more than the share: {bp}"
    );
    assert!(
        flows_from(&bp, &pc) >= BOX_SHARE - 1,
        "box split too few: {bp}"
    );
    assert_eq!(bp["capped_clients"], 1, "{bp}");
    assert!(
        bp["capped_syns"].as_u64().unwrap() > 0,
        "nothing passed unsplit: {bp}"
    );
    // Raced flows are reset at the box; a box flow whose connect raced the POP's own update
    // is reset by the POP (its over-cap count) and ends reset at the box too.
    let (b_over, b_reset) = (
        bp["over_cap"].as_u64().unwrap(),
        bp["reset"].as_u64().unwrap(),
    );
    let p_over = pp["over_cap"].as_u64().unwrap();
    assert!(
        b_reset >= b_over && b_reset - b_over <= p_over,
        "box resets {b_reset}: its {b_over} raced flows and at most the POP's {p_over}: {bp}"
    );
    // The flood's unsplit flows reach the POP, which holds at most a host's share of them.
    assert!(flows_from(&pp, &pc) <= POP_HOST_SHARE, "POP: {pp}");
    assert!(pp["capped_clients"].as_u64().unwrap() >= 1, "{pp}");

    // Another host behind the same box: split at both, byte-exact.
    let dst = SocketAddr::from((addr::SRV, 7100));
    let l = listen(&topo, Node::Srv, dst);
    let mut c = other_host(&topo, dst);
    let (mut srv, _) = l.accept().unwrap();
    let local = c.local_addr().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while flow_of(&bx.pep(&topo), local).is_none() || flow_of(&pop.pep(&topo), local).is_none() {
        assert!(
            Instant::now() < deadline,
            "the other host's flow is not split at both PEPs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let data = payload(4 << 20, 7);
    let sent = sha256_hex(&data);
    let w = std::thread::spawn(move || {
        srv.write_all(&data).unwrap();
        srv.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut got = Vec::new();
    c.read_to_end(&mut got).unwrap();
    w.join().unwrap();
    assert_eq!(sha256_hex(&got), sent, "the other host's download differs");
    drop(c);

    // The flood gives up (resets): both tables drain without waiting for SYN retries.
    for s in &flood_socks {
        let _ = s.set_linger(Some(Duration::ZERO));
    }
    drop(flood_socks);
    let bp = bx.wait_idle(&topo, Duration::from_secs(10));
    let pp = pop.wait_idle(&topo, Duration::from_secs(10));
    assert_eq!(bp["capped_clients"], 0, "box still caps: {bp}");
    assert_eq!(pp["capped_clients"], 0, "POP still caps: {pp}");
    bx.stop();
    pop.stop();
}
