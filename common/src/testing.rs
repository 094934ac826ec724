//! Test support (no I/O): byte mutations for the deterministic mutation tests that stand in for
//! the cargo-fuzz targets (`fuzz/`) on the stable toolchain, and the check that a JSON
//! document's fields are documented. Used by this workspace's tests.

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

/// The object keys anywhere in `v` that `doc` never names as `` `key` `` (a schema document's
/// tables), sorted and without repeats.
pub fn undocumented_keys(v: &serde_json::Value, doc: &str) -> Vec<String> {
    fn walk(v: &serde_json::Value, out: &mut std::collections::BTreeSet<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, x) in m {
                    out.insert(k.clone());
                    walk(x, out);
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|x| walk(x, out)),
            _ => {}
        }
    }
    let mut keys = std::collections::BTreeSet::new();
    walk(v, &mut keys);
    keys.into_iter()
        .filter(|k| !doc.contains(&format!("`{k}`")))
        .collect()
}
