//! Fuzz target: arbitrary frames through the userspace model of the eBPF window rewriter
//! (`starpep_ebpf::model`, byte for byte the tc program's logic), Ethernet and raw IP, with a
//! map entry for whatever flow the frame claims to be: no panic, the frame keeps its length,
//! only the window and checksum bytes may change, and a window is never raised or set to 0
//! (`model::check_rewrite`, which `model::fuzz_tests` runs on mutated frames in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = starpep_ebpf::model::check_rewrite(data);
});
