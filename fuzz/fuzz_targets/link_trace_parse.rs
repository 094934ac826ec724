//! Fuzz target: arbitrary text as a mahimahi capacity trace and as a 10 ms delay trace (files the
//! emulator loads): no panic; an accepted trace is usable (non-empty, positive period, lookups
//! across two periods never panic) and every error names a line of the input.
#![no_main]

use std::path::Path;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use starpep_testbed::link::trace::{DelayTrace, RateTrace, TraceError};

fn check_err(e: &TraceError, lines: usize) {
    if let TraceError::Parse { line, .. } = e {
        assert!(*line >= 1 && *line <= lines.max(1));
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.lines().count();
    let path = Path::new("fuzz.trace");
    match RateTrace::parse(text, path) {
        Ok(t) => {
            assert!(!t.is_empty() && t.period() > Duration::ZERO);
            let p = t.period();
            let _ = t.count_in(Duration::ZERO, p * 2);
            let k = t.first_at_or_after(p + p / 3);
            assert!(t.opportunity_at(k) >= p + p / 3);
            assert!(t.mean_bps() > 0.0);
        }
        Err(e) => check_err(&e, lines),
    }
    match DelayTrace::parse(text, path) {
        Ok(t) => {
            assert!(t.period() > Duration::ZERO);
            let _ = t.delay_at(t.period() * 2 + Duration::from_millis(3));
            let _ = t.reconfig_instants();
        }
        Err(e) => check_err(&e, lines),
    }
});
