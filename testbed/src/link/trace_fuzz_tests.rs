//! Deterministic mutation tests of the trace and profile parsers (the stable-toolchain stand-ins
//! for `fuzz/link_trace_parse` and `fuzz/link_profile_parse`): mutated real traces and shipped
//! profiles never panic the parsers or the lookups, an error names a line of the input, and an
//! accepted trace answers lookups across wraps.

use std::path::Path;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::SeedableRng;
use starpep_common::testing::mutate;

use super::*;

/// The first `n` lines of a shipped trace file.
fn head(file: &str, n: usize) -> String {
    let text =
        std::fs::read_to_string(workspace_root().join("traces/leocc-example").join(file)).unwrap();
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

fn error_line_in_input(e: &TraceError, text: &str) {
    if let TraceError::Parse { line, .. } = e {
        assert!(
            *line >= 1 && *line <= text.lines().count(),
            "{e} for {text:?}"
        );
    }
}

#[test]
fn mutated_traces_never_panic_and_errors_point_into_the_input() {
    let mut rng = StdRng::seed_from_u64(0x7ace);
    let path = Path::new("mutated.trace");
    let seeds = [head("bw.mahimahi", 400), head("delay_10ms.txt", 400)];
    let (mut rate_ok, mut delay_ok, mut errors) = (0, 0, 0);
    for seed in &seeds {
        for _ in 0..3000 {
            let mut b = seed.clone().into_bytes();
            mutate(&mut rng, &mut b);
            let text = String::from_utf8_lossy(&b);
            match RateTrace::parse(&text, path) {
                Ok(t) => {
                    rate_ok += 1;
                    let p = t.period();
                    assert!(p > Duration::ZERO && !t.is_empty());
                    let at = p + p / 3;
                    let k = t.first_at_or_after(at);
                    assert!(t.opportunity_at(k) >= at);
                    assert!(k == 0 || t.opportunity_at(k - 1) < at);
                    // Counting is additive and periodic across wraps.
                    let c = |a: Duration, b: Duration| t.count_in(a, b);
                    assert_eq!(
                        c(Duration::ZERO, p * 2),
                        c(Duration::ZERO, at) + c(at, p * 2)
                    );
                    assert_eq!(c(p, p * 2), c(p * 2, p * 3));
                    assert!(c(p, p * 2) <= t.len() as u64);
                }
                Err(e) => {
                    errors += 1;
                    error_line_in_input(&e, &text);
                }
            }
            match DelayTrace::parse(&text, path) {
                Ok(t) => {
                    delay_ok += 1;
                    let _ = t.delay_at(t.period() * 3 + Duration::from_millis(7));
                    assert!(t.reconfig_instants().iter().all(|&i| i < t.period()));
                }
                Err(e) => {
                    errors += 1;
                    error_line_in_input(&e, &text);
                }
            }
        }
    }
    // Both outcomes are exercised: the mutations are neither all harmless nor all fatal.
    assert!(
        rate_ok > 100 && delay_ok > 100 && errors > 1000,
        "{rate_ok} {delay_ok} {errors}"
    );
}

#[test]
fn mutated_profiles_never_panic() {
    let mut rng = StdRng::seed_from_u64(0x9f0f);
    let dir = workspace_root().join("configs/profiles");
    let mut accepted = 0;
    for name in ["geo", "geo-loss1", "leo-10mbit", "leo-starlink"] {
        let path = dir.join(format!("{name}.toml"));
        let seed = std::fs::read(&path).unwrap();
        for _ in 0..1500 {
            let mut b = seed.clone();
            mutate(&mut rng, &mut b);
            let text = String::from_utf8_lossy(&b);
            if let Ok(p) = Profile::parse(&text, &path) {
                accepted += 1;
                if p.is_constant() {
                    let _ = p.tc_commands("left0", "right0");
                }
            }
        }
    }
    assert!(accepted > 0);
}
