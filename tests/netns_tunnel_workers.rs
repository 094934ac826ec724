//! The data path's workers (root, netns, no emulation): a tunnel-only POP with two workers
//! (`STARPEP_WORKERS=2`) and four boxes (client daemons in the box namespace: the POP's peers in
//! slots 0..3). Every box uploads and downloads a sha256-checked TCP stream and sends numbered
//! UDP datagrams both ways, all at once: every payload arrives byte-exact, each peer's
//! datagrams arrive in the order they were sent, and the POP's work is spread over both
//! workers in each direction (peers 0 and 2 on worker 0, 1 and 3 on worker 1). While it runs,
//! a second daemon on the POP's port is refused with "address already in use".

#[path = "netns_ops_common.rs"]
mod ops;

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ops::*;
use starpep_testbed::bench::cpu::thread_times;
use starpep_tests::{bin_path, require_root, Node, TopoSpec, Topology};

const WORKERS: usize = 2;
const BOXES: usize = 4;
const BYTES: usize = 16 << 20;
const DATAGRAMS: u64 = 2000;
const TCP_PORT: u16 = 7100;
const UDP_PORT: u16 = 7300;

fn pop_conf(private: &str, peers: &[String]) -> String {
    format!(
        "[Interface]\nPrivateKey = {private}\nAddress = 10.8.0.1/24\nListenPort = 51820\n{}",
        peers.join("")
    )
}

fn srv(port: u16) -> SocketAddr {
    SocketAddr::from(([10, 2, 0, 2], port))
}

/// A UDP socket bound to `addr` in `node`.
fn udp_in(topo: &Topology, node: Node, addr: SocketAddr) -> UdpSocket {
    topo.run_in(node, move || UdpSocket::bind(addr))
        .unwrap()
        .unwrap_or_else(|e| panic!("bind {addr} in {node:?}: {e}"))
}

/// `DATAGRAMS` numbered datagrams from `src` in `from` to `dst` in `to` (lightly paced); the
/// numbers the receiver got, in arrival order.
fn numbered(
    topo: &Topology,
    from: Node,
    src: IpAddr,
    to: Node,
    dst: SocketAddr,
) -> JoinHandle<Vec<u64>> {
    let rx = udp_in(topo, to, dst);
    let tx = udp_in(topo, from, SocketAddr::new(src, 0));
    let receiver = std::thread::spawn(move || {
        rx.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 2048];
        while (got.len() as u64) < DATAGRAMS {
            match rx.recv(&mut buf) {
                Ok(n) if n >= 8 => got.push(u64::from_be_bytes(buf[..8].try_into().unwrap())),
                Ok(_) => {}
                Err(_) => break, // silence: the rest was lost
            }
        }
        got
    });
    std::thread::spawn(move || {
        let mut d = vec![0x5au8; 1000];
        for seq in 0..DATAGRAMS {
            d[..8].copy_from_slice(&seq.to_be_bytes());
            let _ = tx.send_to(&d, dst);
            if seq % 8 == 7 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        receiver.join().expect("receiver")
    })
}

/// CPU time of each data-path thread of `pid`, by name.
fn workers_cpu(pid: u32) -> HashMap<String, Duration> {
    thread_times(pid)
        .expect("/proc/PID/task")
        .into_iter()
        .filter(|(n, _)| n.starts_with("tun-to-udp-") || n.starts_with("udp-to-tun-"))
        .collect()
}

#[test]
fn peers_are_spread_over_the_workers_byte_exact_and_in_order() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let pop_keys = BoxSpec::new(&[], 0).keys;
    let boxes: Vec<BoxSpec> = (0..BOXES)
        .map(|i| BoxSpec::new(&[&format!("10.8.0.{}", i + 2)], 102 + i as u32))
        .collect();
    let p = topo.prefix().trim_start_matches("sp").to_string();
    let name = |t: &str| format!("{t}{p}").chars().take(15).collect::<String>();
    let peers: Vec<String> = boxes
        .iter()
        .map(|b| pop_peer(b, &format!("{}/32", b.addrs[0])))
        .collect();
    let pop_name = name("p");
    let pop_path = write_conf(&topo, &pop_name, &pop_conf(&pop_keys.private, &peers));
    let workers = format!("STARPEP_WORKERS={WORKERS}");
    let pop_bin = bin_path("starpep-pop");
    let mut pop = topo
        .spawn(
            Node::Pop,
            "pop",
            &[
                "env".as_ref(),
                workers.as_ref(),
                pop_bin.as_os_str(),
                "run".as_ref(),
                "-c".as_ref(),
                pop_path.as_os_str(),
                "-v".as_ref(),
            ],
        )
        .expect("spawn POP");
    assert!(
        wait_for(Duration::from_secs(15), || run_bin(
            &topo,
            Node::Pop,
            "starpep-pop",
            &["show", &pop_name]
        )
        .0),
        "POP not up:\n{}",
        pop.log()
    );
    let mut procs = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        let path = write_conf(&topo, &name(&format!("b{i}")), &b.conf(&pop_keys.public));
        procs.push(
            topo.spawn(
                Node::Box,
                &format!("box{i}"),
                &[
                    bin_path("starpep-client").as_os_str(),
                    "run".as_ref(),
                    "-c".as_ref(),
                    path.as_os_str(),
                ],
            )
            .expect("spawn box"),
        );
    }
    for b in &boxes {
        let src = b.addrs[0].to_string();
        assert!(
            wait_for(Duration::from_secs(20), || ping_from(
                &topo, &src, "10.2.0.2", 1
            )),
            "{src} cannot reach srv:\n{}",
            pop.log()
        );
    }

    // The POP: one socket per worker on its port, and the port refused to a second daemon.
    let socks = topo
        .run_ok(Node::Pop, &["ss", "-Huan", "sport", "=", ":51820"])
        .unwrap();
    assert_eq!(
        socks.lines().count(),
        WORKERS,
        "UDP sockets on 51820:\n{socks}"
    );
    let other = write_conf(
        &topo,
        &name("q"),
        &pop_conf(&BoxSpec::new(&[], 0).keys.private, &[]),
    );
    for w in [workers.as_str(), "STARPEP_WORKERS=1"] {
        let out = topo
            .exec(
                Node::Pop,
                &[
                    "timeout".as_ref(),
                    "20".as_ref(),
                    "env".as_ref(),
                    w.as_ref(),
                    pop_bin.as_os_str(),
                    "run".as_ref(),
                    "-c".as_ref(),
                    other.as_os_str(),
                ],
            )
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
        assert!(
            !out.status.success() && err.contains("address already in use"),
            "{w}: {:?} {err}",
            out.status
        );
    }

    let pid = pop.pid().expect("POP pid");
    let before = workers_cpu(pid);
    let mut transfers = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        for (k, down) in [false, true].into_iter().enumerate() {
            let port = TCP_PORT + (2 * i + k) as u16;
            transfers.push((
                i,
                down,
                Paced::start(
                    &topo,
                    b.addrs[0],
                    srv(port),
                    BYTES,
                    64 * 1024,
                    Duration::ZERO,
                    down,
                    (2 * i + k) as u64,
                ),
            ));
        }
    }
    let mut streams = Vec::new();
    for (i, b) in boxes.iter().enumerate() {
        let (up, down) = (UDP_PORT + 2 * i as u16, UDP_PORT + 2 * i as u16 + 1);
        let unspec = IpAddr::from([0, 0, 0, 0]);
        streams.push((
            i,
            "up",
            numbered(&topo, Node::Box, b.addrs[0], Node::Srv, srv(up)),
        ));
        streams.push((
            i,
            "down",
            numbered(
                &topo,
                Node::Srv,
                unspec,
                Node::Box,
                SocketAddr::new(b.addrs[0], down),
            ),
        ));
    }
    let t0 = Instant::now();
    for (i, down, t) in transfers {
        let r = t.finish();
        assert!(
            r.intact(),
            "box {i} {}: {r:?}\nPOP:\n{}",
            if down { "download" } else { "upload" },
            pop.log()
        );
    }
    eprintln!("8 x {BYTES} bytes through 4 peers in {:?}", t0.elapsed());
    for (i, dir, s) in streams {
        let got = s.join().expect("stream");
        assert!(
            got.len() as u64 >= DATAGRAMS / 2,
            "box {i} {dir}: {} of {DATAGRAMS} datagrams",
            got.len()
        );
        assert!(
            got.windows(2).all(|w| w[0] < w[1]),
            "box {i} {dir}: reordered {:?}",
            got.windows(2).find(|w| w[0] >= w[1])
        );
    }

    // Each worker carried its share: its threads' CPU time, per direction.
    let after = workers_cpu(pid);
    for dir in ["udp-to-tun-", "tun-to-udp-"] {
        let used: Vec<Duration> = (0..WORKERS)
            .map(|k| {
                let n = format!("{dir}{k}");
                after
                    .get(&n)
                    .copied()
                    .unwrap_or_else(|| panic!("no thread {n}: {after:?}"))
                    - before[&n]
            })
            .collect();
        let max = used.iter().copied().max().unwrap();
        assert!(
            used.iter().all(|u| *u > Duration::ZERO && *u * 5 >= max),
            "{dir}*: CPU {used:?}"
        );
        eprintln!("{dir}*: CPU {used:?}");
    }
    assert_eq!(after.len(), 2 * WORKERS, "data-path threads: {after:?}");
    let v = show(&topo, &pop_name);
    for b in &boxes {
        let p = peer(&v, &b.keys.public).expect("peer");
        assert!(
            p["rx_bytes"].as_u64() > Some(BYTES as u64)
                && p["tx_bytes"].as_u64() > Some(BYTES as u64),
            "{p}"
        );
    }
    for mut b in procs {
        b.stop();
    }
    let st = pop.stop();
    assert!(
        st.is_some_and(|s| s.success()),
        "POP exit {st:?}:\n{}",
        pop.log()
    );
}
