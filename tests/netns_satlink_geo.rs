//! satlink calibration on `geo` through real namespaces (root): 250 ms each way, 10 Mbit/s.
//!
//! Probes against the constant delay, ping RTT ≈ 500 ms, delivered rate per 1 s window within
//! 3 %, queueing delay saturating at 500 packets (600 ms), queue drops counted by satlink,
//! and iperf3 BBR reaching 85 % of the rate.

use starpep_testbed::calibrate::{self, table, Check, Options};
use starpep_testbed::link::Profile;
use starpep_tests::{bin_path, require_root};

#[test]
fn geo_calibration_is_within_tolerance() {
    if !require_root() {
        return;
    }
    let profile = Profile::find("geo").expect("profile");
    let (rows, steal) = calibrate::calibrate_calm(
        &bin_path("satlink"),
        &profile,
        Options {
            quick: true,
            seed: 1,
        },
        &Check::ALL,
        table::all_pass,
    )
    .expect("calibration ran");
    println!("{}\nhost steal per run: {steal:.3?}", table::render(&rows));
    if !calibrate::last_was_calm(&steal) && !table::all_pass(&rows) {
        eprintln!("INCONCLUSIVE: the host withheld the CPU in every run ({steal:.3?}); not judged");
        return;
    }
    let checks = [
        "one-way delay vs profile",
        "ping RTT",
        "delivered rate per 1 s window",
        "queueing delay at saturation",
        "queue drops counted by satlink",
        "TCP BBR goodput",
    ];
    for c in checks {
        assert!(
            rows.iter()
                .any(|r| r.check.starts_with(c) && r.pass == Some(true)),
            "check {c:?} missing or failed:\n{}",
            table::render(&rows)
        );
    }
    assert!(
        table::all_pass(&rows),
        "out of tolerance:\n{}",
        table::render(&rows)
    );
}
