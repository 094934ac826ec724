//! One tenant's sustained connect flood does not starve the others (root, netns, no
//! emulation, the shipped configs' defaults): one LAN host opens 10,000 connects a second for
//! 10 s toward a blackholed destination, each held 1 s and then aborted. At the box and at the
//! POP it holds at most its share of the flow table (`MaxFlowsPerClient` per host at the box,
//! `MaxFlowsPerHost` at the POP); its further SYNs pass both PEPs unsplit and die at the
//! blackhole, so its own connects beyond the share time out at the host. Meanwhile another
//! host behind the same box keeps its paced download at its full rate, byte-exact, and a new
//! flow it opens mid-flood is split at both PEPs and arrives intact.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_tenant_common.rs"]
mod tenant;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use starpep_common::config::Pep;
use starpep_tests::{
    addr, payload, raise_nofile, require_root, sha256_hex, Node, TopoSpec, Topology,
};
use tenant::*;

/// Connects a second, for how long, each held how long.
const RATE: u64 = 10_000;
const FLOOD: Duration = Duration::from_secs(10);
/// Held less than the SYN's first retransmission (1 s): each connect sends one SYN.
const HOLD: Duration = Duration::from_millis(900);
/// The other host's download: 64 KiB every 10 ms (6.55 MB/s, 52 Mbit/s).
const CHUNK: usize = 64 << 10;
const EVERY: Duration = Duration::from_millis(10);
/// The other host's address on the LAN.
const OTHER: &str = "10.1.0.3";

/// A connection from the other host to `dst`.
fn other_host(topo: &Topology, dst: SocketAddr) -> TcpStream {
    in_ns(topo, Node::Pc, move || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let src: SocketAddr = format!("{OTHER}:0").parse().unwrap();
        s.bind(&src.into()).unwrap();
        s.connect_timeout(&dst.into(), Duration::from_secs(10))
            .expect("connect from the other host");
        TcpStream::from(s)
    })
}

/// Waits until `client`'s flow is split at both PEPs.
fn split_at_both(topo: &Topology, bx: &Daemon, pop: &Daemon, client: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while flow_of(&bx.pep(topo), client).is_none() || flow_of(&pop.pep(topo), client).is_none() {
        assert!(
            Instant::now() < deadline,
            "{client}'s flow is not split at both PEPs"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_sustained_connect_flood_from_one_host_leaves_another_host_split_at_full_rate() {
    if !require_root() {
        return;
    }
    raise_nofile();
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    topo.ip(
        Node::Pc,
        &["addr", "add", &format!("{OTHER}/24"), "dev", addr::LAN_IF],
    )
    .expect("second LAN host");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    assert!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), Duration::from_secs(10)),
        "the tunnel did not come up"
    );
    // The shipped configs leave the shares at their defaults (a host's share, box and POP).
    let share = u64::from(Pep::DEFAULT_MAX_FLOWS_PER_HOST);
    let (box_share, pop_share) = (share, share);

    // The other host's paced download, running before, through and after the flood.
    let dst = SocketAddr::from((addr::SRV, 7100));
    let l = listen(&topo, Node::Srv, dst);
    let c = other_host(&topo, dst);
    let first = c.local_addr().unwrap();
    let dl = Paced::start(l, c, CHUNK, EVERY);
    split_at_both(&topo, &bx, &pop, first);
    let offered = CHUNK as f64 / EVERY.as_secs_f64();
    std::thread::sleep(Duration::from_secs(2));

    let blackhole: Vec<SocketAddr> = (80..90)
        .map(|p| SocketAddr::from(([10, 2, 0, 99], p)))
        .collect();
    let flood = sustain(topo.ns(Node::Pc), blackhole, RATE, HOLD, FLOOD);
    let t_flood = Instant::now();

    // Mid-flood: the flooder holds at most its share at each PEP; a new flow of the other
    // host is split at both and arrives intact.
    std::thread::sleep(Duration::from_secs(4));
    let pc = addr::PC_LAN.to_string();
    let (bp, pp) = (bx.pep(&topo), pop.pep(&topo));
    let (at_box, at_pop) = (flows_from(&bp, &pc), flows_from(&pp, &pc));
    eprintln!(
        "mid-flood: box {at_box} flows of the flooder (share {box_share}), capped_syns {}; \
         POP {at_pop} (share {pop_share}), capped_syns {}",
        bp["capped_syns"], pp["capped_syns"]
    );
    assert!(at_box <= box_share, "box over the share: {at_box}");
    assert!(at_pop <= pop_share, "POP over the share: {at_pop}");
    assert!(
        bp["capped_clients"].as_u64().unwrap() >= 1,
        "the box does not cap the flooder: {bp}"
    );
    let dst2 = SocketAddr::from((addr::SRV, 7101));
    let l2 = listen(&topo, Node::Srv, dst2);
    let mut c2 = other_host(&topo, dst2);
    let (mut s2, _) = l2.accept().unwrap();
    split_at_both(&topo, &bx, &pop, c2.local_addr().unwrap());
    let data = payload(2 << 20, 9);
    let sent = sha256_hex(&data);
    let w = std::thread::spawn(move || {
        s2.write_all(&data).unwrap();
        s2.shutdown(std::net::Shutdown::Write).unwrap();
    });
    let mut got = Vec::new();
    c2.read_to_end(&mut got).unwrap();
    w.join().unwrap();
    assert_eq!(sha256_hex(&got), sent, "the mid-flood download differs");
    drop(c2);

    // The flood runs its whole course.
    let fs = flood.join();
    let t_end = Instant::now();
    // The first second is the host's ramp to its share; the rate is measured after it.
    let during = dl.rate_between(t_flood + Duration::from_secs(1), t_end);
    eprintln!(
        "flood: {} connects at {:.0}/s, {} completed a handshake (with a PEP), {} refused by \
         the host; the other host's download {:.2} MB/s during it, offered {:.2}",
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
    // Only the flows within the shares ever completed a handshake: the rest were unsplit and
    // blackholed. Slots freed by aborted flows are taken again, so the count is over time.
    assert!(
        fs.completed
            <= (box_share + pop_share) * ((FLOOD.as_millis() / HOLD.as_millis()) as u64 + 1),
        "{fs:?}"
    );
    assert!(
        during >= 0.9 * offered,
        "the other host's download fell to {:.2} of {:.2} MB/s",
        during / 1e6,
        offered / 1e6
    );
    let end = dl.finish();
    assert!(end.intact, "the other host's download differs: {end:?}");

    // The flood is gone: both tables drain, nobody stays capped.
    let bp = bx.wait_idle(&topo, Duration::from_secs(15));
    let pp = pop.wait_idle(&topo, Duration::from_secs(15));
    assert_eq!(bp["capped_clients"], 0, "box still caps: {bp}");
    assert_eq!(pp["capped_clients"], 0, "POP still caps: {pp}");
    bx.stop();
    pop.stop();
}
