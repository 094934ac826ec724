//! Test support (no I/O): byte mutations for the deterministic mutation tests that stand in for
//! the cargo-fuzz targets (`fuzz/`) on the stable toolchain. Used by this workspace's tests.

use rand::Rng;

/// Applies 1..4 random mutations: bit flips, inserted or removed bytes, truncation, a duplicated
/// range (up to 64 bytes) pasted elsewhere.
pub fn mutate(rng: &mut impl Rng, v: &mut Vec<u8>) {
    for _ in 0..rng.gen_range(1..4) {
        if v.is_empty() {
            v.push(rng.gen());
            continue;
        }
        let at = rng.gen_range(0..v.len());
        match rng.gen_range(0..5) {
            0 => v[at] ^= 1 << rng.gen_range(0..8),
            1 => v.insert(at, rng.gen()),
            2 => {
                v.remove(at);
            }
            3 => v.truncate(at),
            _ => {
                let end = (at + rng.gen_range(1..64)).min(v.len());
                let dup = v[at..end].to_vec();
                let to = rng.gen_range(0..v.len());
                v.splice(to..to, dup);
            }
        }
    }
}
