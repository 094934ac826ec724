//! Fuzz target: arbitrary text as a link profile (TOML, netem-style keys) into `Profile::parse`:
//! no panic; an accepted constant profile renders its `tc` commands without panicking.
#![no_main]

use std::path::Path;

use libfuzzer_sys::fuzz_target;
use starpep_testbed::link::Profile;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = Profile::parse(text, Path::new("/nonexistent/fuzz.toml")) {
        if p.is_constant() {
            let _ = p.tc_commands("left0", "right0");
        }
    }
});
