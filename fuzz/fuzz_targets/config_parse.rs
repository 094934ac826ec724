//! Fuzz target: arbitrary bytes as a config file into `config::parse`: no panic, and every error
//! points at a line of the input with its key (`config::check_parse`, which `config::tests_fuzz`
//! runs on mutated examples in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        starpep_common::config::check_parse("fuzz.conf", text);
    }
});
