//! StarPEP's reconfiguration phases on the real clock (root, netns, satlink): satlink replays
//! `leo-10mbit` aligned to Starlink's grid and the PEP runs `Reconfig = starlink`; during a
//! download across a reconfiguration the POP's per-tick record enters guard, probe, recover
//! and steady at T_k − 100 ms, T_k, T_k + 200 ms and T_k + 500 ms, each within one control
//! period, and satlink's reconfiguration instants agree with T_k to within 5 ms.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_starpep_common.rs"]
mod sp;

use std::time::Duration;

use common::*;
use serde_json::Value;
use sp::*;
use starpep_tests::{addr, require_root};

/// One control period (common/src/pep/starpep/controller.rs: CONTROL_PERIOD).
const PERIOD_S: f64 = 0.005;

/// The first record at or after `from` (UNIX s) in phase `phase`.
fn first_in(recs: &[Value], phase: &str, from: f64) -> Option<f64> {
    recs.iter()
        .filter_map(|r| Some((r["t_s"].as_f64()?, r["phase"].as_str()?)))
        .find(|(t, p)| *t >= from && *p == phase)
        .map(|(t, _)| t)
}

#[test]
fn phases_happen_on_time_and_satlink_agrees() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("leo-10mbit", true, &[("Reconfig", "starlink")]);
    // 20 s at 10 Mbit/s: at least one reconfiguration (every 15 s) falls inside.
    let dst = sa(&format!("{}:5411", addr::SRV));
    let t = transfer_cc(&b.topo, dst, 25_000_000, true, 5, Some("cubic"));
    assert_eq!(t.sent_sha, t.recv_sha);
    std::thread::sleep(Duration::from_millis(500));
    let recs: Vec<Value> = records(&b.pop_log)
        .into_iter()
        .filter(|r| r["server"] == dst.to_string())
        .collect();
    let (t0, t1) = (
        recs.first().unwrap()["t_s"].as_f64().unwrap(),
        recs.last().unwrap()["t_s"].as_f64().unwrap(),
    );
    // Starlink's instants: 12 s past each multiple of 15 s (UTC).
    let instants: Vec<f64> = ((t0 / 15.0).floor() as i64..=(t1 / 15.0).ceil() as i64)
        .map(|k| k as f64 * 15.0 + 12.0)
        .filter(|&tk| tk - 0.2 > t0 && tk + 0.6 < t1)
        .collect();
    assert!(!instants.is_empty(), "no instant within {t0}..{t1}");
    for tk in &instants {
        for (phase, at) in [
            ("guard", tk - 0.1),
            ("probe", *tk),
            ("recover", tk + 0.2),
            ("steady", tk + 0.5),
        ] {
            let seen = first_in(&recs, phase, at - 0.05)
                .unwrap_or_else(|| panic!("no {phase} record after {at}"));
            let late = seen - at;
            eprintln!("T_k {tk}: {phase} at {late:+.4} s");
            assert!(
                (-1e-4..=PERIOD_S).contains(&late),
                "{phase} of T_k {tk} began {late:+.4} s from its boundary"
            );
        }
    }
    // satlink's replay puts the trace's reconfigurations on the same grid.
    drop(b.link);
    std::thread::sleep(Duration::from_millis(300));
    let stats: Value = serde_json::from_str(&std::fs::read_to_string(&b.stats).unwrap()).unwrap();
    assert_eq!(stats["start_mode"], "aligned", "{stats}");
    let emu: Vec<f64> = stats["reconfig"]["instants"]
        .as_array()
        .expect("satlink reports its instants")
        .iter()
        .filter_map(|i| i["unix"].as_f64())
        .collect();
    assert!(!emu.is_empty());
    for u in emu {
        let off = (u - 12.0).rem_euclid(15.0);
        let err = off.min(15.0 - off);
        assert!(
            err < 0.005,
            "satlink instant {u} is {err:.4} s off the PEP's grid"
        );
    }
}
