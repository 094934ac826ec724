//! satlink calibration on the LEO profiles through real namespaces (root).
//!
//! `leo-10mbit`: probes against the trace's 10 ms-slot delay (constant rate, so no
//! opportunity wait) within 1 ms at p99. `leo-starlink`: probes against an offline replay of
//! the model (capacity trace included) and the delivered rate in every 1 s window within 3 %
//! of the trace's capacity.

use starpep_testbed::calibrate::{self, table, Check, Options, Row};
use starpep_testbed::link::Profile;
use starpep_tests::{bin_path, require_root};

/// The rows of a calm run, or `None` when every run was under host steal and failed.
fn run(name: &str, checks: &[Check]) -> Option<Vec<Row>> {
    let (rows, steal) = calibrate::calibrate_calm(
        &bin_path("satlink"),
        &Profile::find(name).expect("profile"),
        Options {
            quick: true,
            seed: 1,
        },
        checks,
        table::all_pass,
    )
    .expect("calibration ran");
    println!("{}\nhost steal per run: {steal:.3?}", table::render(&rows));
    if !calibrate::last_was_calm(&steal) && !table::all_pass(&rows) {
        eprintln!("INCONCLUSIVE: the host withheld the CPU in every run ({steal:.3?}); not judged");
        return None;
    }
    Some(rows)
}

fn passed(rows: &[Row], check: &str, dir: &str) -> bool {
    rows.iter()
        .any(|r| r.check.starts_with(check) && r.dir == dir && r.pass == Some(true))
}

#[test]
fn leo_trace_delay_and_starlink_capacity_are_within_tolerance() {
    if !require_root() {
        return;
    }
    let Some(mut rows) = run("leo-10mbit", &[Check::Delay]) else {
        return;
    };
    for dir in ["down", "up"] {
        assert!(
            passed(&rows, "one-way delay vs profile", dir),
            "leo-10mbit {dir}:\n{}",
            table::render(&rows)
        );
    }
    let Some(star) = run("leo-starlink", &[Check::Delay, Check::Capacity]) else {
        return;
    };
    for dir in ["down", "up"] {
        assert!(
            passed(&star, "one-way delay vs model replay", dir),
            "leo-starlink {dir}:\n{}",
            table::render(&star)
        );
    }
    assert!(
        passed(&star, "delivered rate per 1 s window", "down"),
        "{}",
        table::render(&star)
    );
    rows.extend(star);
    assert!(
        table::all_pass(&rows),
        "out of tolerance:\n{}",
        table::render(&rows)
    );
}
