//! satlink calibration on `geo-loss1` through real namespaces (root): 1 % random loss both
//! ways measured over 100k datagrams per direction (inside the 95 % binomial interval, and
//! equal to satlink's own counter), and TCP CUBIC far below the rate (BBR reported).

use starpep_testbed::calibrate::{self, table, Check, Options};
use starpep_testbed::link::Profile;
use starpep_tests::{bin_path, require_root};

#[test]
fn geo_loss1_loss_rate_and_cubic_collapse() {
    if !require_root() {
        return;
    }
    let (rows, steal) = calibrate::calibrate_calm(
        &bin_path("satlink"),
        &Profile::find("geo-loss1").expect("profile"),
        Options {
            quick: true,
            seed: 1,
        },
        &[Check::Loss, Check::Tcp],
        table::all_pass,
    )
    .expect("calibration ran");
    println!("{}\nhost steal per run: {steal:.3?}", table::render(&rows));
    if !calibrate::last_was_calm(&steal) && !table::all_pass(&rows) {
        eprintln!("INCONCLUSIVE: the host withheld the CPU in every run ({steal:.3?}); not judged");
        return;
    }
    for dir in ["down", "up"] {
        let r = rows
            .iter()
            .find(|r| r.check.starts_with("random loss") && r.dir == dir)
            .unwrap_or_else(|| panic!("no loss row for {dir}"));
        assert_eq!(r.pass, Some(true), "{dir}: {}", r.measured);
    }
    assert!(
        rows.iter()
            .any(|r| r.check.starts_with("TCP CUBIC") && r.pass == Some(true)),
        "{}",
        table::render(&rows)
    );
    assert!(
        table::all_pass(&rows),
        "out of tolerance:\n{}",
        table::render(&rows)
    );
}
