//! Fuzz target: arbitrary bytes as a config file into `config::parse` (must never panic).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(errors) = starpep_common::config::parse("fuzz.conf", text) {
            // Every error must point into the input.
            let lines = text.lines().count();
            assert!(errors.iter().all(|e| e.line <= lines));
        }
    }
});
