//! The satellite segment's start, careful resume (root, netns, satlink `geo`): a new flow
//! starts at its share of what its path measured, paced (seen in a capture on the POP's
//! tunnel, before encryption); on a configured rate alone, at the whole rate once its Fast Open
//! flight was acknowledged at it; beside a flow already running it gets most of the link while
//! it is young, and neither stalls; with nothing measured and no `LinkRate` it starts from the
//! kernel's defaults; a `LinkRate` ten times too high neither collapses a flow nor stalls the
//! other flows of the peer. Every payload is sha256-checked.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_starpep_common.rs"]
mod sp;

use std::path::Path;
use std::time::Duration;

use common::*;
use serde_json::Value;
use sp::*;
use starpep_tests::{addr, require_root, Node, Proc, Topology};

const MB: usize = 1_000_000;
/// geo: 10 Mbit/s, 500 ms RTT.
const LINK_BPS: f64 = 10e6;
const RTT: f64 = 0.5;
const POP_TUN: &str = "pop-pep";
/// The satellite segment's MSS inside the tunnel (MTU 1420, IPv4 and TCP headers with
/// timestamps): the capture has no offload, so every data packet is at most this.
const SAT_MSS: u64 = 1368;

/// The POP namespace's counters of a receive queue over its buffer: the kernel pruned it (and
/// collapsed segments to fit), or dropped what arrived.
const SQUEEZE_COUNTERS: [&str; 3] = ["PruneCalled", "TCPRcvCollapsed", "TCPRcvQDrop"];

fn ideal(bytes: usize) -> f64 {
    bytes as f64 * 8.0 / LINK_BPS + 2.0 * RTT
}

/// tcpdump of the server's data toward the box on the POP's tunnel (inner packets).
fn capture(topo: &Topology, port: u16) -> (Proc, std::path::PathBuf) {
    let pcap = topo.tmpdir().join(format!("pop-{port}.pcap"));
    let filter = format!("tcp src port {port}");
    let p = topo
        .spawn(
            Node::Pop,
            &format!("tcpdump-{port}"),
            &[
                "tcpdump",
                "-i",
                POP_TUN,
                "-nn",
                "-U",
                "-w",
                &pcap.display().to_string(),
                &filter,
            ],
        )
        .expect("tcpdump");
    std::thread::sleep(Duration::from_millis(1000));
    (p, pcap)
}

/// Departure time (s) and payload length (bytes) of the data segments in a capture.
fn data_segments(topo: &Topology, pcap: &Path) -> Vec<(f64, u64)> {
    let out = topo
        .run_ok(
            Node::Pop,
            &[
                "tcpdump",
                "-nn",
                "-tt",
                "-r",
                &pcap.display().to_string(),
                "tcp[tcpflags] & tcp-syn == 0",
            ],
        )
        .expect("tcpdump -r");
    out.lines()
        .filter_map(|l| {
            let t = l.split_whitespace().next()?.parse().ok()?;
            let after = l.rsplit_once("length ")?.1;
            let digits = after.split(|c: char| !c.is_ascii_digit()).next()?;
            let len = digits.parse().ok()?;
            Some((t, len))
        })
        .filter(|&(_, len)| len > 0)
        .collect()
}

/// The first round trip: its segments, and the most bytes sent within any 10 ms of it
/// (the kernel paces bytes: a run of tiny segments is a small burst).
fn first_round(segs: &[(f64, u64)]) -> (usize, u64) {
    let Some(&(t0, _)) = segs.first() else {
        return (0, 0);
    };
    let round: Vec<(f64, u64)> = segs
        .iter()
        .copied()
        .filter(|(t, _)| *t < t0 + 0.9 * RTT)
        .collect();
    let burst = round
        .iter()
        .map(|(a, _)| {
            round
                .iter()
                .filter(|(b, _)| *b >= *a && *b < a + 0.010)
                .map(|(_, len)| len)
                .sum()
        })
        .max()
        .unwrap_or(0);
    (round.len(), burst)
}

/// The POP's `show --json` records of the live flow to `port`, sampled every `every` while
/// `work` runs, each with its wall-clock time (UNIX seconds, as a capture's).
fn with_flow<R: Send>(
    b: &Bed,
    port: u16,
    every: Duration,
    work: impl FnOnce() -> R + Send,
) -> (R, Vec<(f64, Value)>) {
    sampled(every, work, || {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs_f64();
        let p = b.pop.pep(&b.topo);
        let f = p["flows"].as_array()?.iter().find(|f| {
            f["server"]
                .as_str()
                .is_some_and(|s| s.ends_with(&format!(":{port}")))
        })?;
        Some((now, f.clone()))
    })
}

/// The POP's start plans of live flows to `port`, sampled while `work` runs.
fn with_starts<R: Send>(b: &Bed, port: u16, work: impl FnOnce() -> R + Send) -> (R, Vec<Value>) {
    let (r, seen) = with_flow(b, port, Duration::from_millis(100), work);
    let starts = seen.into_iter().map(|(_, f)| f["start"].clone());
    (r, starts.filter(|s| !s.is_null()).collect())
}

fn download(b: &Bed, port: u16, bytes: usize) -> f64 {
    let dst = sa(&format!("{}:{port}", addr::SRV));
    let t = transfer_cc(&b.topo, dst, bytes, true, port as u64, Some("cubic"));
    assert_eq!(
        t.sent_sha, t.recv_sha,
        "download of {bytes} B to :{port} corrupted"
    );
    t.total_time.as_secs_f64()
}

#[test]
fn a_new_flow_starts_at_the_measured_rate_paced() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("geo", false, &[]);
    // The first flow measures the path.
    let warm = download(&b, 5501, 3 * MB);
    eprintln!("warm-up 3 MB in {warm:.2} s");
    let (dump, pcap) = capture(&b.topo, 5502);
    let (t, starts) = with_starts(&b, 5502, || download(&b, 5502, MB));
    let mut dump = dump;
    dump.stop();
    let start = starts
        .first()
        .expect("the flow's start plan in show --json");
    eprintln!("1 MB in {t:.2} s (ideal {:.2} s), start {start}", ideal(MB));
    assert_eq!(start["source"], "measured", "{start}");
    assert_eq!(start["busy"], 0, "{start}");
    // About a BDP (625 KB / 1368 B = 457 segments) from the measurement.
    let iw = start["init_cwnd"].as_u64().expect("an initial window");
    assert!((200..=700).contains(&iw), "initial window {iw} segments");
    let segs = data_segments(&b.topo, &pcap);
    let (round, burst) = first_round(&segs);
    eprintln!("first round trip: {round} segments, at most {burst} B within 10 ms");
    assert!(
        round >= 150,
        "only {round} segments in the first round trip: no jump"
    );
    // Paced at the plan's rate: about 12 KB per 10 ms at 10 Mbit/s. The kernel sends a
    // connection's first 10 segments unpaced (as sch_fq does), and after a late timer or an
    // idle gap it sends at up to twice the rate until it has caught up (`tcp_output.c`,
    // `tcp_update_skb_after_send`); one more rate's worth is margin. Line rate would be
    // hundreds of KB.
    let pacing = start["pacing"].as_u64().expect("a pacing rate");
    let paced = 10 * SAT_MSS + 3 * pacing / 100;
    assert!(
        burst <= paced,
        "{burst} B within 10 ms at a pacing rate of {pacing} B/s: not paced"
    );
    assert!(
        t <= 1.5 * ideal(MB),
        "1 MB took {t:.2} s, ideal {:.2} s",
        ideal(MB)
    );
}

#[test]
fn a_configured_rate_that_the_fast_open_flight_bears_out_is_sent_at_in_full() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    // A fresh path: nothing measured, the profile's `LinkRate` (the link's own 10 Mbit/s).
    let b = bed("geo", false, &[]);
    // The tunnel's own handshake first (a round trip), so that the exchange times the flow.
    b.topo
        .run_ok(
            Node::Pc,
            &["ping", "-c", "1", "-W", "5", &addr::SRV.to_string()],
        )
        .expect("ping through the tunnel");
    let squeezed = || SQUEEZE_COUNTERS.map(|c| b.topo.tcp_ext(Node::Pop, c).expect("netstat"));
    let squeezed0 = squeezed();
    let (mut dump, pcap) = capture(&b.topo, 5541);
    // Client-first, as a web answer: the request crosses with the box's SYN. The flow's record
    // is sampled with its wall-clock time, to set beside the capture's.
    let ((first, t), seen) = with_flow(&b, 5541, Duration::from_millis(20), || {
        exchange(&b.topo, 5541, MB, Duration::ZERO)
    });
    dump.stop();
    let squeezes: Vec<(&str, u64)> = SQUEEZE_COUNTERS
        .into_iter()
        .zip(squeezed().into_iter().zip(squeezed0).map(|(a, b)| a - b))
        .collect();
    let start = seen
        .iter()
        .map(|(_, f)| &f["start"])
        .find(|s| !s.is_null())
        .expect("the flow's start plan");
    eprintln!(
        "1 MB answer: first byte {first:.2} s, last {t:.2} s from the connect (ideal {:.2} s); start {start}",
        ideal(MB)
    );
    assert_eq!(start["source"], "configured", "{start}");
    assert_eq!(start["busy"], 0, "{start}");
    let half = start["pacing"].as_u64().expect("the plan's pacing");
    // The answer's first 64 KB leave before the handshake's last ACK (Fast Open), then nothing
    // for about a round trip; the jump proper starts at half the rate and, once those 64 KB
    // were acknowledged at the link's rate (about 50 ms), goes on at the whole rate.
    let segs = data_segments(&b.topo, &pcap);
    let t1 = segs
        .windows(2)
        .find(|w| w[1].0 - w[0].0 > 0.6 * RTT)
        .map(|w| w[1].0)
        .expect("the gap between the flight before the handshake's end and the jump");
    let sent: u64 = segs
        .iter()
        .filter(|(s, _)| *s >= t1 + 0.1 && *s < t1 + 0.3)
        .map(|(_, len)| len)
        .sum();
    let paced: Vec<(f64, Option<u64>)> = seen
        .iter()
        .filter(|(at, _)| *at >= t1 + 0.1 && *at < t1 + 0.45)
        .map(|(at, f)| (at - t1, f["jump_pacing"].as_u64()))
        .collect();
    eprintln!(
        "jump from {t1:.3} s: {sent} B sent from 100 to 300 ms into it (the whole rate sends {:.0} B); its pacing cap then: {paced:?}",
        LINK_BPS / 8.0 * 0.2
    );
    // The build before paced the jump at `half` until its own window was acknowledged (two
    // round trips): 125 KB in that window, and 2.43 s for the answer.
    assert!(
        !paced.is_empty() && paced.iter().all(|(_, p)| *p == Some(2 * half)),
        "the jump's pacing cap from 100 to 450 ms after the handshake: {paced:?}, not the whole rate {}",
        2 * half
    );
    // The server's answer queues in the sender-facing socket while the satellite handshake
    // lasts. Before 2026-12-07 the PEP could then lower that socket's buffer below what the
    // kernel had already let the server send (in about one run in four here, the same build
    // failing this assertion in one of four): the kernel pruned the queue and dropped what
    // kept arriving, closed the window, and the server waited 0.45 s for its retransmission
    // timer (docs/pep.md, "A start stall on the server's side").
    assert!(
        squeezes.iter().all(|(_, n)| *n == 0),
        "the PEP squeezed a receive buffer below what it had let its sender send: {squeezes:?}"
    );
    // About 2.0 s here (2.37 s with the stall above). The build before the upward validation
    // took 2.43 s: this bound catches a collapse, the cap above the change.
    assert!(
        t <= 1.5 * ideal(MB),
        "1 MB took {t:.2} s, ideal {:.2} s",
        ideal(MB)
    );
}

#[test]
fn a_new_flow_beside_a_running_one_gets_most_of_the_link_and_neither_stalls() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("geo", false, &[]);
    let bulk = 8 * MB;
    let (old, (new, starts)) = std::thread::scope(|s| {
        let old = s.spawn(|| download(&b, 5511, bulk));
        std::thread::sleep(Duration::from_secs(5));
        let new = with_starts(&b, 5512, || download(&b, 5512, MB));
        (old.join().expect("old flow"), new)
    });
    let start = starts.first().expect("the new flow's start plan");
    eprintln!("old 8 MB in {old:.2} s, new 1 MB in {new:.2} s; start {start}");
    assert_eq!(start["source"], "measured", "{start}");
    assert_eq!(start["busy"], 1, "the running flow is busy: {start}");
    // Least attained service (`pep::priority`): the running flow paces at a quarter of the
    // link while the new one is young. (Measured: 2.5 s when it was written, where the fair
    // share gave 4.4 s: the running BBR flow yielded its half only over its gain cycles, with
    // 250 ms queued. On 2026-12-07 this bed gave 2.58-2.93 s, at 2d3af11 as after it;
    // `starpep-bench split --profile geo --start busy` gives 2.05 s for the same case. The bar
    // sits between the two behaviours, 1.75 × ideal = 3.15 s.)
    assert!(
        new <= 1.75 * ideal(MB),
        "new flow {new:.2} s, ideal {:.2} s",
        ideal(MB)
    );
    // 9 MB over the link in all, with the old flow's own start (about 3 s on GEO).
    let all = (bulk + MB) as f64 * 8.0 / LINK_BPS;
    assert!(
        old <= all + 6.0,
        "old flow {old:.2} s, the link needs {all:.2} s for both"
    );
}

#[test]
fn with_nothing_known_a_flow_starts_from_the_kernels_defaults() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("geo", false, &[("LinkRate", "")]);
    let (mut dump, pcap) = capture(&b.topo, 5521);
    let (t, starts) = with_starts(&b, 5521, || download(&b, 5521, MB));
    dump.stop();
    let start = starts.first().expect("the flow's start plan");
    let (round, _) = first_round(&data_segments(&b.topo, &pcap));
    eprintln!("1 MB in {t:.2} s; start {start}; first round trip {round} segments");
    assert_eq!(start["source"], "default", "{start}");
    assert!(start["init_cwnd"].is_null(), "{start}");
    assert!(
        round <= 20,
        "{round} segments in the first round trip (the kernel's is 10)"
    );
}

#[test]
fn a_tenfold_link_rate_collapses_no_flow_and_stalls_none() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("geo", false, &[("LinkRate", "100mbit")]);
    // Two flows at once on a fresh path: both start from the wrong configuration.
    let (a, (c, starts)) = std::thread::scope(|s| {
        let a = s.spawn(|| download(&b, 5531, 3 * MB));
        std::thread::sleep(Duration::from_millis(300));
        let c = with_starts(&b, 5532, || download(&b, 5532, MB));
        (a.join().expect("first flow"), c)
    });
    let start = starts.first().expect("the second flow's start plan");
    eprintln!("3 MB in {a:.2} s, 1 MB in {c:.2} s alongside; start {start}");
    assert_eq!(start["source"], "configured", "{start}");
    // 4 MB over a 10 Mbit/s link: 3.2 s of link time; the jump's losses cost round trips,
    // not a collapse (a stalled flow waits out RTOs of seconds, backing off: 1 + 2 + 4 s).
    // Measured 5.3-6.4 s over thirty runs here, 7.86 s once in a CI run.
    assert!(
        a <= 3.0 * MB as f64 * 8.0 / LINK_BPS + MB as f64 * 8.0 / LINK_BPS + 6.0,
        "3 MB took {a:.2} s"
    );
    // The kernel's own start takes about 3 × ideal for 1 MB here (5.5 s measured). Alongside
    // a second flow that jumps from the same wrong figure, the 1 MB measured 4.8-6.2 s over
    // thirty runs here and 7.35 s once in CI: the overshoot's losses cost up to a third more
    // than no plan, which the issue's 1.2x does not allow yet. A collapse (RTOs of seconds
    // each, backing off: 1 + 2 + 4 s) costs far more than the 5 × ideal (9 s) allowed here.
    assert!(c <= 5.0 * ideal(MB), "1 MB took {c:.2} s: collapsed");
    // And the flow after them starts from what they measured.
    let (_, starts) = with_starts(&b, 5533, || download(&b, 5533, MB));
    let start = starts.first().expect("the third flow's start plan");
    eprintln!("the third flow's start {start}");
    assert_eq!(start["source"], "measured", "{start}");
    let iw = start["init_cwnd"].as_u64().unwrap_or(0);
    assert!(
        iw <= 700,
        "the measurement replaced the 10x configuration: {iw} segments"
    );
}
