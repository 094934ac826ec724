//! A 10 s satellite outage in the middle of 1 GB of transfers (root, netns, satlink), in split
//! and in StarPEP mode: every byte arrives (sha256), nothing is reset (neither an end host nor
//! a PEP sees an error, the PEPs count no reset flow), and the flows resume soon after the link
//! returns (printed: when each flow gets its next byte and 2 MB more, and when the total rate
//! is back to half of what it was before the outage; `STARPEP_TEST_TIMELINE=1` prints each
//! flow's rate per second).
//!
//! The link is a profile the test writes: symmetric, one outage that drops what arrives during it
//! (`outage_drop`). Four flows, two each way, start 2 s after the pair is up; the outage starts
//! 10 s later. The link, not the machine, must be the bottleneck: on two shared cores the
//! daemons' crypto tops out near 250-300 Mbit/s in all, and a CPU-bound run shares it among
//! the flows by chance (CI once saw one flow at 11 Mbit/s beside one at 80 before the outage,
//! which then needed 16 s for its next 2 MB).

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_fault_common.rs"]
mod fault;

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use common::*;
use fault::*;
use starpep_tests::{addr, raise_nofile, require_root, TopoSpec, Topology};

/// One satlink at a time: it spins at real-time priority on a 2-core machine.
static LINK: Mutex<()> = Mutex::new(());

const TOTAL: u64 = 400_000_000;
const FLOWS: usize = 4;
/// Per direction: 160 Mbit/s in all, well below what the machine carries.
const RATE: &str = "80mbit";
const ONE_WAY: &str = "20ms";
/// The outage: it starts OUTAGE_AT after the replay start and lasts OUTAGE.
const OUTAGE_AT: Duration = Duration::from_secs(20);
const OUTAGE: Duration = Duration::from_secs(10);
/// Transfers start this long before the outage.
const LEAD: Duration = Duration::from_secs(10);
/// Generous bound on the total rate's recovery to half its level before the outage (measured:
/// 0.2-1.8 s in six runs at 80 Mbit/s; with the kernel's uncapped RTO it took 21 s).
const RESUME_BOUND: Duration = Duration::from_secs(4);
/// A flow has resumed when it received this much more than it had when the link returned
/// (more than its share of what the link queued through the outage).
const RESUMED_BYTES: u64 = 2_000_000;
/// Generous bound per flow (StarPEP: a regulated sender may sit out its persist timer, a few
/// seconds, docs/pep.md "Faults").
const FLOW_RESUME_BOUND: Duration = Duration::from_secs(10);

fn profile() -> String {
    let dir = |d: &str| format!("[{d}]\nrate = \"{RATE}\"\ndelay = \"{ONE_WAY}\"\nlimit = 1000\n");
    format!(
        "description = \"fault test: {RATE}, {ONE_WAY} one-way, one {OUTAGE:?} outage at +{OUTAGE_AT:?}\"\n\
         {}{}[reconfig]\nfirst = \"{}s\"\nperiod = \"3600s\"\noutage = \"{}s\"\noutage_drop = true\n",
        dir("down"),
        dir("up"),
        OUTAGE_AT.as_secs(),
        OUTAGE.as_secs()
    )
}

fn outage(mode: &str) {
    let _one = LINK.lock().unwrap_or_else(|e| e.into_inner());
    raise_nofile();
    let topo = Topology::build(TopoSpec::satlink()).expect("topology");
    let link = start_link(&topo, "outage", &profile());
    let set = [("Mode", mode), ("LinkRate", RATE), ("LinkRtt", "60ms")];
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &set, &set);
    assert!(
        topo.wait_reachable(
            starpep_tests::Node::Pc,
            &addr::SRV.to_string(),
            Duration::from_secs(10)
        ),
        "srv not reachable"
    );
    let down_at = link.start + OUTAGE_AT;
    let back_at = down_at + OUTAGE;
    let begin = down_at - LEAD;
    let wait = begin
        .duration_since(SystemTime::now())
        .expect("the pair took too long to come up");
    std::thread::sleep(wait);
    let t0 = std::time::Instant::now();
    let each = TOTAL / FLOWS as u64;
    let streams: Vec<Stream> = (0..FLOWS)
        .map(|i| {
            let dst = sa(&format!("{}:{}", addr::SRV, 7200 + i));
            start_stream(&topo, dst, each, i % 2 == 0, 40 + i as u64, None)
        })
        .collect();
    let refs: Vec<&Stream> = streams.iter().collect();
    let samples = Sampler::run(&refs, Duration::from_millis(20));
    let ends: Vec<Outcome> = streams.into_iter().map(Stream::join).collect();
    let finished = samples.samples.last().unwrap().0;
    let stats = link.stop();

    let pre = secs(begin + Duration::from_secs(3), down_at);
    let pre_rate =
        (samples.total_at(down_at) - samples.total_at(begin + Duration::from_secs(3))) as f64 / pre;
    let half = samples.rate_reached(back_at, Duration::from_millis(200), pre_rate / 2.0);
    eprintln!(
        "{mode}: {} MB in {:.1} s; before the outage {:.0} Mbit/s; total rate back to half {}",
        TOTAL / 1_000_000,
        secs(begin, finished),
        pre_rate * 8e-6,
        half.map_or("never".into(), |t| format!(
            "{:.2} s after the link returned",
            secs(back_at, t)
        ))
    );
    if std::env::var_os("STARPEP_TEST_TIMELINE").is_some() {
        let mut t = begin;
        while t < finished {
            let n = t + Duration::from_secs(1);
            let r: Vec<String> = (0..FLOWS)
                .map(|i| {
                    format!(
                        "{:6.1}",
                        (samples.at(i, n) - samples.at(i, t)) as f64 * 8e-6
                    )
                })
                .collect();
            eprintln!("  +{:5.1} s {}", secs(begin, t), r.join(" "));
            t = n;
        }
    }
    let mut resumed = Vec::new();
    for (i, o) in ends.iter().enumerate() {
        let at_back = samples.at(i, back_at);
        let next = samples.first_above(i, back_at, at_back);
        // Past what the link's queue held through the outage: the flow's own sender is back.
        let going = samples.first_above(i, back_at, at_back + RESUMED_BYTES);
        eprintln!(
            "  flow {i} ({}): {} of {} bytes by the outage; after the link returned: next byte {}, \
             {} MB more {}; done {:.1} s after the start",
            if i % 2 == 0 { "down" } else { "up" },
            samples.at(i, down_at),
            o.len,
            next.map_or("never".into(), |t| format!("{:.2} s", secs(back_at, t))),
            RESUMED_BYTES / 1_000_000,
            going.map_or("never".into(), |t| format!("{:.2} s", secs(back_at, t))),
            o.receiver.at.duration_since(t0).as_secs_f64()
        );
        resumed.push(going.map(|t| secs(back_at, t)));
    }
    for (i, o) in ends.iter().enumerate() {
        assert!(o.intact(), "{mode}: flow {i} not intact: {o:?}");
        assert!(
            samples.at(i, down_at) < o.len,
            "{mode}: flow {i} ended before the outage: the test proves nothing"
        );
    }
    for d in ["down", "up"] {
        let dropped = stats["directions"][d]["dropped_outage"].as_u64().unwrap();
        assert!(dropped > 0, "{mode}: no {d} frame met the outage: {stats}");
    }
    let half = half.unwrap_or_else(|| panic!("{mode}: the rate never came back"));
    assert!(
        secs(back_at, half) < RESUME_BOUND.as_secs_f64(),
        "{mode}: the total rate took {:.2} s to come back to half",
        secs(back_at, half)
    );
    for (i, r) in resumed.iter().enumerate() {
        let r = r.unwrap_or_else(|| panic!("{mode}: flow {i} never resumed"));
        assert!(
            r < FLOW_RESUME_BOUND.as_secs_f64(),
            "{mode}: flow {i} took {r:.2} s to resume"
        );
    }
    for (name, d) in [("box", &bx), ("POP", &pop)] {
        let p = d.wait_idle(&topo, Duration::from_secs(10));
        assert_eq!(p["reset"], 0, "{mode}: the {name} reset flows: {p}");
        assert!(
            p["closed"].as_u64().unwrap() >= FLOWS as u64,
            "{mode} {name}: {p}"
        );
    }
    bx.stop();
    pop.stop();
}

#[test]
fn a_10s_outage_in_split_mode_loses_nothing_and_resets_nothing() {
    if !require_root() {
        return;
    }
    outage("split");
}

#[test]
fn a_10s_outage_in_starpep_mode_loses_nothing_and_resets_nothing() {
    if !require_root() {
        return;
    }
    outage("starpep");
}
