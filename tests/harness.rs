//! Shared harness for the netns integration tests: built binaries, root check, payload helpers.

use std::path::PathBuf;

pub mod privilege;

pub use starpep_testbed::topo::{addr, Node, Proc, TopoSpec, Topology, Wan};

/// [`Topology::run_in`], for tests: a failure to enter the namespace is a test failure.
pub fn in_ns<T: Send + 'static>(
    topo: &Topology,
    node: Node,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    topo.run_in(node, f)
        .unwrap_or_else(|e| panic!("{node:?}: {e}"))
}

/// Path of a workspace binary in the same profile directory as the running test
/// (`target/<profile>/NAME`). `scripts/test.sh` builds them before the tests run.
pub fn bin_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test>-<hash> -> target/<profile>/
    let dir = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("test binary lives in target/<profile>/deps");
    let p = dir.join(name);
    assert!(
        p.exists(),
        "{} not built: run `cargo build --workspace --bins` with the same profile first (scripts/test.sh does)",
        p.display()
    );
    p
}

/// Netns tests need root. They are NOT skipped silently: without root they fail, unless
/// `STARPEP_SKIP_NETNS=1` is set explicitly (then they print a skip line and pass).
pub fn require_root() -> bool {
    if nix_is_root() {
        return true;
    }
    if std::env::var_os("STARPEP_SKIP_NETNS").is_some() {
        eprintln!("skipping netns test: not root and STARPEP_SKIP_NETNS is set");
        return false;
    }
    panic!("netns tests need root (set STARPEP_SKIP_NETNS=1 to skip them explicitly)");
}

fn nix_is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|e| e == "0"))
        })
        .unwrap_or(false)
}

/// Writes a daemon config with mode 0600 (`run` refuses one group/others can access).
pub fn write_private(path: &std::path::Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))
        .unwrap_or_else(|e| panic!("chmod 600 {}: {e}", path.display()));
}

/// Deterministic pseudo-random payload of `len` bytes (seeded), for sha256-checked transfers.
pub fn payload(len: usize, seed: u64) -> Vec<u8> {
    use rand::{RngCore, SeedableRng};
    let mut v = vec![0u8; len];
    rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
    v
}

/// Hex sha256 of `data`.
pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

/// `VmRSS` and `VmHWM` (peak) of a process, in KiB.
pub fn rss_kib(pid: u32) -> (u64, u64) {
    starpep_testbed::bench::cpu::rss_kib(pid).expect("read /proc/PID/status")
}

/// Lifts this process's descriptor limit to its hard limit (many concurrent flows).
pub fn raise_nofile() {
    starpep_testbed::bench::fleet_load::raise_nofile().expect("RLIMIT_NOFILE");
}
