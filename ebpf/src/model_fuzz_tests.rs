//! Deterministic mutation test of the rewrite model (the stable-toolchain stand-in for
//! `fuzz/ebpf_window_rewrite`): real TCP frames, Ethernet and raw, IPv4 and IPv6, with a map
//! entry, mutated thousands of times through [`check_rewrite`], the fuzz target's own check.

use super::check::check_rewrite;
use super::tests::{tcp_v4, tcp_v6, Kind};
use super::Outcome;

/// xorshift64*: deterministic bytes without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// One to four edits: flip a bit, set a byte, insert, delete or truncate.
fn mutate(rng: &mut Rng, v: &mut Vec<u8>) {
    for _ in 0..=rng.below(4) {
        let i = rng.below(v.len());
        match rng.below(5) {
            0 if !v.is_empty() => v[i] ^= 1 << rng.below(8),
            1 if !v.is_empty() => v[i] = rng.next() as u8,
            2 => v.insert(i, rng.next() as u8),
            3 if !v.is_empty() => {
                v.remove(i);
            }
            _ => v.truncate(i.max(6)),
        }
    }
}

#[test]
fn mutated_frames_keep_the_rewrite_rules() {
    let mut seeds = Vec::new();
    for eth in [true, false] {
        for (kind, w) in [(Kind::Ack, 60_000), (Kind::Syn, 5000), (Kind::Ack, 300)] {
            for frame in [tcp_v4(eth, kind, w, b"data"), tcp_v6(eth, kind, w, b"")] {
                // Ethernet flag, window 1000 scaled by 2^3, the frame.
                let mut s = vec![u8::from(eth), 0xe8, 0x03, 0, 3];
                s.extend(frame);
                seeds.push(s);
            }
        }
    }
    let mut rng = Rng(0xeb9f_5eed);
    let rewrites = |out: Option<Outcome>| matches!(out, Some(Outcome::Rewritten { .. }));
    let seeds_rewritten = seeds.iter().filter(|s| rewrites(check_rewrite(s))).count();
    assert!(seeds_rewritten >= 4, "{seeds_rewritten} seeds rewritten");
    let (mut runs, mut rewritten) = (0, 0);
    for seed in &seeds {
        for _ in 0..2000 {
            let mut input = seed.clone();
            mutate(&mut rng, &mut input);
            let out = check_rewrite(&input);
            runs += usize::from(out.is_some());
            rewritten += usize::from(rewrites(out));
        }
    }
    assert!(
        runs > 20_000 && rewritten > 1000,
        "{rewritten} of {runs} mutated frames rewritten"
    );
}
