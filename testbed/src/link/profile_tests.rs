//! Tests of profile loading (shipped profiles, errors with file:line, tc commands) and of the
//! model against the real LeoCC Starlink trace.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;

fn profiles_dir() -> PathBuf {
    workspace_root().join("configs/profiles")
}

fn load(name: &str) -> Profile {
    Profile::load(&profiles_dir().join(format!("{name}.toml"))).unwrap()
}

const SHIPPED: [&str; 7] = [
    "geo",
    "geo-loss1",
    "leo-10mbit",
    "leo-10mbit-loss1",
    "leo-starlink",
    "leo-starlink-loss1",
    "leo-starlink-paper",
];

#[test]
fn every_shipped_profile_loads() {
    let mut found: Vec<String> = std::fs::read_dir(profiles_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .map(|p| Profile::load(&p).unwrap().name)
        .collect();
    found.sort();
    let mut want: Vec<String> = SHIPPED.iter().map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(found, want);
    for name in SHIPPED {
        let p = load(name);
        assert!(!p.description.is_empty(), "{name}");
        assert_eq!(
            Profile::find(name).unwrap(),
            profiles_dir().join(format!("{name}.toml"))
        );
    }
    let geo = load("geo");
    assert_eq!(geo.down().capacity, CapacitySpec::Rate(10_000_000));
    assert_eq!(geo.up().limit, QueueLimit::Packets(500));
    assert!(geo.is_constant() && geo.reconfig().is_none());
    assert_eq!(load("geo-loss1").up().loss, LossSpec::Bernoulli(0.01));
    let paper = load("leo-starlink-paper");
    assert_eq!(paper.down().loss, LossSpec::Bernoulli(0.005));
    assert_eq!(paper.up().loss, LossSpec::Bernoulli(0.005));
    let r = paper.reconfig().expect("paper profile has a schedule");
    assert_eq!(r.outage, Duration::from_millis(50));
    assert_eq!(r.period, Duration::from_secs(15));
    let sl = load("leo-starlink");
    assert_eq!(sl.up().loss, LossSpec::Bernoulli(0.002));
    assert_eq!(sl.down().loss, LossSpec::None);
    // Both directions share one loaded trace.
    match (&sl.down().capacity, &sl.up().capacity) {
        (CapacitySpec::Trace(a), CapacitySpec::Trace(b)) => assert!(std::sync::Arc::ptr_eq(a, b)),
        _ => panic!("leo-starlink must be trace-driven"),
    }
    assert!(matches!(
        Profile::find("nope"),
        Err(ProfileError::NotFound { .. })
    ));
}

#[test]
fn tc_commands_for_constant_profiles_only() {
    let cmds = load("geo").tc_commands("veth-box", "veth-pop").unwrap();
    assert_eq!(
        cmds,
        [
            "tc qdisc replace dev veth-box root handle 1: netem delay 250ms limit 100000",
            "tc qdisc replace dev veth-box parent 1:1 handle 10: tbf rate 10mbit burst 1514 limit 757000",
            "tc qdisc replace dev veth-pop root handle 1: netem delay 250ms limit 100000",
            "tc qdisc replace dev veth-pop parent 1:1 handle 10: tbf rate 10mbit burst 1514 limit 757000",
        ]
    );
    let lossy = load("geo-loss1").tc_commands("a", "b").unwrap();
    assert!(lossy[0].contains(" loss random 1% "), "{}", lossy[0]);
    for name in ["leo-10mbit", "leo-starlink", "leo-starlink-loss1"] {
        let e = load(name).tc_commands("a", "b").unwrap_err();
        assert!(matches!(e, ProfileError::NotConstant { .. }), "{name}: {e}");
        assert!(e.to_string().contains("delay_trace") || e.to_string().contains("rate_trace"));
    }
    let ge = r#"
[down]
rate = "1gbit"
delay = "10ms"
jitter = "2ms"
jitter_dist = "normal"
limit_bytes = 100000
loss_model = { type = "gilbert-elliott", p = "1%", r = "30%", h = "20%", k = "99.9%" }
[up]
rate = "1mbit"
delay = "10ms"
jitter = "1ms"
"#;
    let p = Profile::parse(ge, Path::new("/x/ge.toml")).unwrap();
    let c = p.tc_commands("d", "u").unwrap();
    assert_eq!(
        c[0],
        "tc qdisc replace dev d root handle 1: netem delay 10ms 2ms distribution normal \
         loss gemodel 1% 30% 80% 0.1% limit 100000"
    );
    assert_eq!(
        c[1],
        "tc qdisc replace dev d parent 1:1 handle 10: tbf rate 1gbit burst 125000 limit 100000"
    );
    assert_eq!(
        c[2],
        "tc qdisc replace dev u root handle 1: netem delay 10ms 1ms limit 100000"
    );
}

fn err(text: &str) -> String {
    Profile::parse(text, &profiles_dir().join("t.toml"))
        .unwrap_err()
        .to_string()
        .replace(&profiles_dir().display().to_string(), "P")
}

const UP: &str = "[up]\nrate = \"1mbit\"\ndelay = \"1ms\"\n";

#[test]
fn errors_name_file_line_and_key() {
    let e = err(&format!(
        "[down]\nrate = \"1mbit\"\ndelay = \"5 parsecs\"\n{UP}"
    ));
    assert!(e.starts_with("P/t.toml:3: "), "{e}");
    assert!(e.contains("unknown unit"), "{e}");
    let e = err(&format!(
        "[down]\nrate = \"1mbit\"\ndelay = \"1ms\"\nlimt = 5\n{UP}"
    ));
    assert!(e.starts_with("P/t.toml:4: unknown field `limt`"), "{e}");
    let e = err(&format!(
        "\n[down]\nrate = \"1mbit\"\nrate_trace = \"x\"\ndelay = \"1ms\"\n{UP}"
    ));
    assert_eq!(
        e,
        "P/t.toml:2: [down]: give exactly one of rate, rate_trace"
    );
    let e = err(&format!(
        "[down]\nrate_trace = \"missing.bw\"\ndelay = \"1ms\"\n{UP}"
    ));
    assert!(
        e.starts_with(
            "P/t.toml:1: [down] rate_trace: trace \"missing.bw\" not found (tried P/missing.bw, "
        ),
        "{e}"
    );
    let e = err(&format!("[down]\nrate = \"1mbit\"\ndelay = \"1ms\"\nloss = \"1%\"\nloss_model = {{ type = \"bernoulli\", p = 0.1 }}\n{UP}"));
    assert!(
        e.contains("[down] loss: give at most one of loss, loss_model"),
        "{e}"
    );
    let e = err(&format!(
        "[down]\nrate = \"1mbit\"\ndelay = \"1ms\"\n{UP}[reconfig]\nfrom_trace = true\n"
    ));
    assert!(
        e.contains("[reconfig] from_trace: needs a delay_trace"),
        "{e}"
    );
    let e = err(&format!("[down]\nrate = \"1mbit\"\ndelay = \"1ms\"\n{UP}[reconfig]\nfirst = \"1s\"\nperiod = \"1s\"\noutage = \"2s\"\n"));
    assert!(
        e.contains("[reconfig] outage: must be shorter than the period"),
        "{e}"
    );
    let e = err("[down]\nrate = \"1mbit\"\ndelay = \"1ms\"\n");
    assert!(e.contains("missing field `up`"), "{e}");
    // A bad trace line is reported with the trace's file and line.
    let dir = std::env::temp_dir().join(format!("satlink-prof-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("bad.bw"), "1\n2\nthree\n").unwrap();
    let text = format!("[down]\nrate_trace = \"bad.bw\"\ndelay = \"1ms\"\n{UP}");
    let e = Profile::parse(&text, &dir.join("p.toml"))
        .unwrap_err()
        .to_string();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(
        e.ends_with("bad.bw:3: \"three\" is not a non-negative integer (milliseconds)"),
        "{e}"
    );
}

#[test]
fn real_trace_capacity_matches_its_description() {
    let p = load("leo-starlink");
    let CapacitySpec::Trace(tr) = &p.down().capacity else {
        panic!()
    };
    let mean = tr.mean_bps() / 1e6;
    let m: LinkModel<()> = p.model(Direction::Down, 1);
    let per_s: Vec<f64> = (0..120)
        .map(|s| m.capacity_bps_at(Duration::from_secs(s), Duration::from_secs(1)) / 1e6)
        .collect();
    let (lo, hi) = per_s
        .iter()
        .fold((f64::MAX, 0.0f64), |(a, b), &v| (a.min(v), b.max(v)));
    println!("leo-starlink capacity: mean {mean:.2} Mbit/s, per-second {lo:.1} .. {hi:.1} Mbit/s");
    assert!((mean - 48.7).abs() < 0.2, "mean {mean}");
    assert!(
        (28.0..38.0).contains(&lo) && (70.0..76.0).contains(&hi),
        "{lo} .. {hi}"
    );
    let whole = m.capacity_bps_at(Duration::ZERO, tr.period()) / 1e6;
    assert!((whole - mean).abs() < 0.01);
}

#[test]
fn real_trace_reconfigurations_every_15s_from_8_75s() {
    let p = load("leo-starlink");
    let det = p.detected_instants();
    println!("detected: {det:?}; fitted: {:?}", p.reconfig());
    assert_eq!(det.len(), 8, "{det:?}");
    for (k, t) in det.iter().enumerate() {
        let want = 8.75 + 15.0 * k as f64;
        assert!((t.as_secs_f64() - want).abs() <= 0.3, "instant {k}: {t:?}");
    }
    let s = p.reconfig().unwrap();
    assert_eq!(s.period, Duration::from_secs(15));
    assert!((s.first.as_secs_f64() - 8.75).abs() <= 0.3, "{:?}", s.first);
    // Aligned to Starlink's grid from an arbitrary wall-clock moment.
    let start = starlink_aligned_start(Duration::from_millis(1_764_700_000_777), s);
    for i in s.instants().take(4) {
        let sec = (start + i).as_secs_f64() % 60.0;
        assert!(
            [12.0, 27.0, 42.0, 57.0]
                .iter()
                .any(|x| (sec - x).abs() < 1e-6),
            "{sec}"
        );
    }
}

#[test]
fn flooded_real_trace_delivers_its_capacity_and_fills_the_queue() {
    let p = load("leo-starlink");
    let mut m: LinkModel<u32> = p.model(Direction::Down, 7);
    // 1500-byte frames every 100 us (120 Mbit/s) for 20 s: always backlogged.
    let mut delivered = [0u64; 21];
    let mut last_release = Duration::ZERO;
    for i in 0..200_000u32 {
        let now = Duration::from_micros(100 * u64::from(i));
        m.enqueue(now, 1500, i);
        while let Some(h) = m.dequeue_held(now) {
            assert!(h.release >= last_release);
            last_release = h.release;
            delivered[(h.depart.as_millis() / 1000) as usize] += h.len as u64 * 8;
        }
    }
    let s = *m.stats();
    assert_eq!(s.max_queue_pkts, 500);
    assert!(s.dropped_queue > 0 && s.dropped_loss == 0);
    assert_eq!(
        s.packets_in,
        s.delivered_packets + s.dropped_queue + s.queue_pkts + s.in_flight_pkts
    );
    for sec in 1..19u64 {
        let cap = m.capacity_bps_at(Duration::from_secs(sec), Duration::from_secs(1));
        let got = delivered[sec as usize] as f64;
        assert!(
            (got - cap).abs() <= 12_000.0,
            "second {sec}: served {got} of {cap}"
        );
    }
}
