//! The fuzz check of the rewrite model (pure): what `fuzz/ebpf_window_rewrite` runs on each
//! input and `model::fuzz_tests` on each mutated seed, so both hold the model to the same rules.

use super::{rewrite, Outcome};

/// Runs one input through [`rewrite`] and panics if an invariant breaks. The input: byte 0 bit 0
/// says Ethernet (else raw IP), bytes 1..4 the map's window (little endian), byte 4 its scale,
/// the rest the frame; the map holds that entry for whatever flow the frame claims to be. The
/// frame keeps its length; only a rewrite changes it, in at most 4 bytes (window and checksum),
/// to a window below the old one and never 0. Inputs under 6 bytes are skipped (`None`).
pub fn check_rewrite(data: &[u8]) -> Option<Outcome> {
    if data.len() < 6 {
        return None;
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
    Some(out)
}
