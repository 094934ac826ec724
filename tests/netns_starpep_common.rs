//! Shared helpers of the netns_starpep_* tests (included with `#[path]`, next to
//! `netns_pep_common.rs`): the PEP pair over satlink with the controller's per-tick log, the
//! log's records, and `ss -ti` figures of the end hosts' sockets.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::Shutdown;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_tests::{addr, bin_path, payload, sha256_hex, Node, Proc, TopoSpec, Topology};

use super::common::{connect_cc, listen_cc, sa, start_pair, Carry, Daemon};

/// One satlink at a time: it spins and runs at real-time priority on a 2-core machine.
pub static LINK: Mutex<()> = Mutex::new(());

pub fn profile(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../configs/profiles/{name}.toml"))
}

/// A topology with satlink replaying `link`, the PEP pair, and the controller logs.
pub struct Bed {
    pub topo: Topology,
    pub link: Proc,
    pub bx: Daemon,
    pub pop: Daemon,
    pub box_log: PathBuf,
    pub pop_log: PathBuf,
    pub stats: PathBuf,
}

/// `link` replayed aligned to Starlink's grid (`aligned`) or at once; both PEPs log every tick;
/// `set` is applied to both `[PEP]` sections.
pub fn bed(link: &str, aligned: bool, set: &[(&str, &str)]) -> Bed {
    let topo = Topology::build(TopoSpec::satlink()).expect("topology");
    let stats = topo.tmpdir().join("satlink.json");
    let start = if aligned { "aligned" } else { "now" };
    let link = topo
        .spawn_satlink(
            &bin_path("satlink"),
            &profile(link),
            &[
                "--start",
                start,
                "--stats-json",
                &stats.display().to_string(),
            ],
        )
        .expect("satlink");
    let box_log = topo.tmpdir().join("control-box.jsonl");
    let pop_log = topo.tmpdir().join("control-pop.jsonl");
    let bl = box_log.display().to_string();
    let pl = pop_log.display().to_string();
    let mut box_set: Vec<(&str, &str)> = set.to_vec();
    box_set.push(("ControlLog", &bl));
    let mut pop_set: Vec<(&str, &str)> = set.to_vec();
    pop_set.push(("ControlLog", &pl));
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &box_set, &pop_set);
    Bed {
        topo,
        link,
        bx,
        pop,
        box_log,
        pop_log,
        stats,
    }
}

/// The controller's per-tick records (JSON lines); the last line may be partial.
pub fn records(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

/// `snd_wnd` (bytes) of the connected TCP sockets in `node` whose port `side` (`sport` or
/// `dport`) is `port`, from `ss -ti` (any state: a sender that wrote everything is already in
/// FIN-WAIT while its data leaves).
pub fn snd_wnd(topo: &Topology, node: Node, side: &str, port: u16) -> Vec<u64> {
    let filter = format!("( {side} = :{port} )");
    let out = topo
        .run_ok(node, &["ss", "-Htin", &filter])
        .unwrap_or_default();
    out.split_whitespace()
        .filter_map(|w| w.strip_prefix("snd_wnd:"))
        .filter_map(|v| v.parse().ok())
        .collect()
}

/// Runs `work` while sampling `probe` every `every` (scoped: both may borrow the bed);
/// returns `work`'s result and the samples.
pub fn sampled<R: Send, T: Send>(
    every: Duration,
    work: impl FnOnce() -> R + Send,
    probe: impl Fn() -> Option<T> + Send + Sync,
) -> (R, Vec<T>) {
    use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sampler = s.spawn(|| {
            let mut v = Vec::new();
            while !done.load(Relaxed) {
                if let Some(x) = probe() {
                    v.push(x);
                }
                std::thread::sleep(every);
            }
            v
        });
        let r = work();
        done.store(true, Relaxed);
        (r, sampler.join().expect("sampler thread"))
    })
}

/// Nearest-rank percentile (`p` in 0..=100) of `v`.
pub fn pct(mut v: Vec<f64>, p: f64) -> f64 {
    assert!(!v.is_empty(), "no samples");
    v.sort_by(f64::total_cmp);
    let i = ((p / 100.0) * v.len() as f64).ceil() as usize;
    v[i.clamp(1, v.len()) - 1]
}

/// The request of [`exchange`] (bytes).
pub const EXCHANGE_REQUEST: usize = 300;

/// One client-first exchange (a request, then a `size`-byte response, both sha256-checked) to
/// `port`, the client writing its request `late` after its connect: seconds from the connect
/// to the first and the last response byte.
pub fn exchange(topo: &Topology, port: u16, size: usize, late: Duration) -> (f64, f64) {
    let dst = sa(&format!("{}:{port}", addr::SRV));
    let l = listen_cc(topo, Node::Srv, dst, None);
    let request = payload(EXCHANGE_REQUEST, port as u64);
    let response = payload(size, port as u64 + 1);
    let (req_sha, resp_sha) = (sha256_hex(&request), sha256_hex(&response));
    let srv = std::thread::spawn(move || {
        let (mut c, _) = l.accept().expect("accept");
        let mut got = vec![0u8; EXCHANGE_REQUEST];
        c.read_exact(&mut got).expect("server reads the request");
        c.write_all(&response).expect("server writes the response");
        c.shutdown(Shutdown::Write).unwrap();
        sha256_hex(&got)
    });
    let t0 = Instant::now();
    let mut c = connect_cc(topo, Node::Pc, dst, None).expect("connect");
    std::thread::sleep(late);
    c.write_all(&request).expect("client writes the request");
    let mut first = [0u8; 1];
    c.read_exact(&mut first).expect("the first response byte");
    let ttfb = t0.elapsed().as_secs_f64();
    let mut rest = vec![0u8; size - 1];
    c.read_exact(&mut rest).expect("the response");
    // The last byte, not the EOF: a Fast Open child sends its FIN only once established.
    let last = t0.elapsed().as_secs_f64();
    let mut tail = Vec::new();
    c.read_to_end(&mut tail).expect("the response's end");
    assert!(tail.is_empty(), "{} bytes beyond the response", tail.len());
    let mut got = first.to_vec();
    got.extend(rest);
    assert_eq!(srv.join().expect("server"), req_sha, "request corrupted");
    assert_eq!(sha256_hex(&got), resp_sha, "response corrupted");
    (ttfb, last)
}
