//! Property tests of the pure rewrite model: random windows and payloads, garbage input.

use super::tests::{map, tcp_checksum_ok, tcp_v4, tcp_v6, v4_key, v6_key, Kind};
use super::*;
use crate::flow::FlowKey;

/// xorshift64*: deterministic bytes without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn incremental_checksum_matches_recomputation() {
    let mut rng = Rng(0x5eed);
    for i in 0..2000u32 {
        let len = (rng.next() % 64) as usize;
        let payload: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let orig_w = (rng.next() as u16).max(2);
        let w = (rng.next() % u64::from(orig_w)) as u32;
        let v6 = i.is_multiple_of(2);
        let mut f = if v6 {
            tcp_v6(false, Kind::Ack, orig_w, &payload)
        } else {
            tcp_v4(false, Kind::Ack, orig_w, &payload)
        };
        let key = if v6 { v6_key() } else { v4_key() };
        let out = rewrite(&mut f, false, map(key, w, 0));
        assert_eq!(
            out,
            Outcome::Rewritten {
                old: orig_w,
                new: w.max(1) as u16
            }
        );
        assert!(tcp_checksum_ok(&f, 0), "case {i}: bad checksum");
    }
}

#[test]
fn truncated_and_garbage_input_never_panics() {
    let any = |_: &FlowKey| Some((100u32, 0u8));
    for (frame, eth) in [
        (tcp_v4(true, Kind::Ack, 1000, b"p"), true),
        (tcp_v6(true, Kind::Ack, 1000, b"p"), true),
        (tcp_v4(false, Kind::Ack, 1000, b"p"), false),
        (tcp_v6(false, Kind::Ack, 1000, b"p"), false),
    ] {
        let l4_end = frame.len() - 1; // TCP header end (1 byte of payload)
        for cut in 0..l4_end {
            let mut f = frame[..cut].to_vec();
            assert_eq!(
                rewrite(&mut f, eth, any),
                Outcome::Skipped(Skip::Truncated),
                "cut at {cut}"
            );
        }
    }
    let mut rng = Rng(42);
    let mut rewritten = 0;
    for _ in 0..20000 {
        let len = (rng.next() % 120) as usize;
        let mut f: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        // Bias toward plausible headers so the deeper paths run too.
        if len > 20 && rng.next().is_multiple_of(2) {
            if rng.next().is_multiple_of(2) {
                (f[0], f[6], f[7], f[9]) = (0x45, 0x40, 0, 6);
            } else {
                (f[0], f[6]) = (0x60, 6);
            }
        }
        let before = f.clone();
        match rewrite(&mut f, false, any) {
            Outcome::Rewritten { old, new } => {
                rewritten += 1;
                assert!(new < old && new >= 1);
            }
            _ => assert_eq!(f, before),
        }
        let _ = rewrite(&mut f, true, any);
    }
    assert!(
        rewritten > 0,
        "the random inputs never reached the rewrite path"
    );
}
