//! Fuzz target: arbitrary frames through the userspace model of the eBPF window rewriter
//! (`starpep_ebpf::model`, byte for byte the tc program's logic), Ethernet and raw IP, with a
//! map entry for whatever flow the frame claims to be: no panic, the frame keeps its length,
//! only the window and checksum bytes may change, and a window is never raised or set to 0.
#![no_main]

use libfuzzer_sys::fuzz_target;
use starpep_ebpf::model::{rewrite, Outcome};

fuzz_target!(|data: &[u8]| {
    if data.len() < 6 {
        return;
    }
    let l2 = data[0] & 1 == 1;
    let window = u32::from_le_bytes([data[1], data[2], data[3], 0]);
    let wscale = data[4] & 0x0f;
    let mut frame = data[5..].to_vec();
    let before = frame.clone();
    let out = rewrite(&mut frame, l2, |_| Some((window, wscale)));
    assert_eq!(frame.len(), before.len());
    match out {
        Outcome::Rewritten { old, new } => {
            assert!(new < old && new >= 1, "{old} -> {new}");
            let changed = frame.iter().zip(&before).filter(|(a, b)| a != b).count();
            assert!(changed <= 4, "{changed} bytes changed");
        }
        _ => assert_eq!(frame, before, "{out:?} but the frame changed"),
    }
});
