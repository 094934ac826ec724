//! satlink process contract (root): ping RTT over `geo`, stats JSON on SIGTERM with counters
//! that add up, the Starlink-aligned replay start, `tc-commands`, and clean failures.

use std::path::PathBuf;
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_testbed::calibrate::delay::{parse_ping, ping_times};
use starpep_testbed::link::Profile;
use starpep_tests::{addr, bin_path, require_root, Node, TopoSpec, Topology};

/// The emulator needs the CPUs: one satlink test at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn profile(name: &str) -> PathBuf {
    Profile::find(name).expect("profile")
}

fn read_json(p: &std::path::Path, deadline: Duration) -> Value {
    let end = Instant::now() + deadline;
    loop {
        if let Some(v) = std::fs::read_to_string(p)
            .ok()
            .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        {
            return v;
        }
        assert!(Instant::now() < end, "no stats JSON at {}", p.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn u(v: &Value, k: &str) -> u64 {
    v[k].as_u64()
        .unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[test]
fn geo_ping_rtt_and_sigterm_stats_add_up() {
    if !require_root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let topo = Topology::build(TopoSpec::satlink()).expect("topology");
    let stats = topo.tmpdir().join("stats.json");
    let stats_s = stats.to_string_lossy().into_owned();
    let bin = bin_path("satlink");
    let mut sl = topo
        .spawn_satlink(
            &bin,
            &profile("geo"),
            &["--stats-json", &stats_s, "--start", "now"],
        )
        .expect("satlink");
    read_json(&stats, Duration::from_secs(10));
    let pop = addr::POP_WAN.to_string();
    // The first ping resolves ARP across the link; then 10 timed ones.
    let _ = topo.exec(Node::Box, &["ping", "-c", "1", "-W", "3", &pop]);
    let out = topo
        .run_ok(Node::Box, &["ping", "-c", "10", "-i", "0.2", &pop])
        .expect("ping over geo");
    let (min, _avg, _max) = parse_ping(&out).expect(&out);
    let mut rtts = ping_times(&out);
    assert_eq!(rtts.len(), 10, "{out}");
    rtts.sort_by(f64::total_cmp);
    let median = rtts[5];
    // The median: a single multi-ms stall of the VM host must not decide this.
    assert!(
        min >= 500.0 && median < 501.0,
        "geo RTT min {min} median {median} ms (want 500 .. +1 ms): {out}"
    );
    // Leave frames in flight: a burst, then SIGTERM before it arrives.
    let _burst = topo.spawn(
        Node::Box,
        "burst",
        &["ping", "-q", "-c", "50", "-i", "0.002", &pop],
    );
    std::thread::sleep(Duration::from_millis(150));
    // Proc::stop sends SIGTERM and waits (SIGKILL only after 3 s).
    let st = sl.stop().expect("satlink exits on SIGTERM");
    assert!(st.success(), "exit {st:?}: {}", sl.log());
    let v = read_json(&stats, Duration::from_secs(1));
    assert_eq!(v["running"], Value::Bool(false), "final file");
    assert_eq!(v["profile"], "geo");
    let mut held = 0;
    for dir in ["down", "up"] {
        let d = &v["directions"][dir];
        let sum = u(d, "delivered_packets")
            + u(d, "dropped_queue")
            + u(d, "dropped_loss")
            + u(d, "dropped_outage")
            + u(d, "queued_packets")
            + u(d, "in_flight_packets");
        assert_eq!(
            u(d, "packets_in"),
            sum,
            "{dir}: in != delivered + dropped + held: {d}"
        );
        assert!(u(d, "packets_in") >= 11, "{dir}: {d}");
        assert_eq!(u(&d["io"], "tx_frames"), u(d, "delivered_packets"), "{dir}");
        assert!(!d["series"].as_array().unwrap().is_empty());
        assert_eq!(d["base_delay"]["constant_ms"].as_f64(), Some(250.0));
        held += u(d, "queued_packets") + u(d, "in_flight_packets");
    }
    assert!(held > 0, "the burst should have been in flight at SIGTERM");
}

#[test]
fn aligned_start_puts_reconfigurations_on_starlink_seconds() {
    if !require_root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let topo = Topology::build(TopoSpec::satlink()).expect("topology");
    let stats = topo.tmpdir().join("stats.json");
    let stats_s = stats.to_string_lossy().into_owned();
    let t0 = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    let mut sl = topo
        .spawn_satlink(
            &bin_path("satlink"),
            &profile("leo-starlink"),
            &["--stats-json", &stats_s],
        )
        .expect("satlink");
    let v = read_json(&stats, Duration::from_secs(10));
    assert_eq!(v["start_mode"], "aligned");
    let start = v["replay_start_unix"].as_f64().unwrap();
    assert!(
        start >= t0 - 0.01 && start <= t0 + 15.5,
        "wait {} s",
        start - t0
    );
    let inst = v["reconfig"]["instants"].as_array().expect("instants");
    assert!(inst.len() >= 4);
    for i in inst {
        let unix = i["unix"].as_f64().unwrap();
        let sec = unix.rem_euclid(60.0);
        let on = [12.0, 27.0, 42.0, 57.0]
            .iter()
            .any(|s| (sec - s).abs() < 0.001);
        assert!(on, "reconfiguration at second {sec:.4} of the minute");
        let rel = i["t_s"].as_f64().unwrap();
        assert!((unix - start - rel).abs() < 1e-3);
    }
    // SIGTERM during the wait: still a clean exit with a final file.
    let st = sl.stop().expect("exits");
    assert!(st.success(), "{}", sl.log());
    assert_eq!(
        read_json(&stats, Duration::from_secs(1))["running"],
        Value::Bool(false)
    );
}

#[test]
fn tc_commands_only_for_constant_profiles() {
    let bin = bin_path("satlink");
    let ok = Command::new(&bin)
        .args(["tc-commands", "geo"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(
        text.contains("netem delay 250ms") && text.contains("tbf rate 10mbit"),
        "{text}"
    );
    let bad = Command::new(&bin)
        .args(["tc-commands", "leo-starlink"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("constant profiles"));
}

#[test]
fn a_missing_interface_fails_with_its_name() {
    if !require_root() {
        return;
    }
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let topo = Topology::build(TopoSpec::satlink()).expect("topology");
    let bin = bin_path("satlink").to_string_lossy().into_owned();
    let p = profile("geo").to_string_lossy().into_owned();
    let out = topo
        .exec(
            Node::Sat,
            &[
                &bin,
                "run",
                "--profile",
                &p,
                "--left",
                "nosuch0",
                "--right",
                "box0",
            ],
        )
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("nosuch0"), "{err}");
}
