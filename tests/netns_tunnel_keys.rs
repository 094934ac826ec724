//! Keys are interchangeable with wireguard-tools: `wg pubkey` of our `genkey` equals our
//! `pubkey`, and the reverse, for both binaries.

#[path = "netns_tunnel_common.rs"]
mod common;

use std::path::Path;

use common::pipe;
use starpep_tests::bin_path;

fn wg() -> &'static Path {
    Path::new("wg")
}

#[test]
fn our_keys_and_wg_keys_agree_both_ways() {
    for bin in ["starpep-client", "starpep-pop"] {
        let ours = bin_path(bin);
        for _ in 0..5 {
            let k = pipe(&ours, &["genkey"], "");
            assert_eq!(k.len(), 44, "{k}");
            assert_eq!(
                pipe(wg(), &["pubkey"], &k),
                pipe(&ours, &["pubkey"], &k),
                "{bin} genkey"
            );
            let w = pipe(wg(), &["genkey"], "");
            assert_eq!(
                pipe(&ours, &["pubkey"], &w),
                pipe(wg(), &["pubkey"], &w),
                "wg genkey"
            );
        }
    }
}

#[test]
fn pubkey_refuses_garbage() {
    let out = std::process::Command::new(bin_path("starpep-client"))
        .arg("pubkey")
        .stdin(std::fs::File::open("/dev/null").unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a 32-byte base64"));
}

#[test]
fn genkey_keys_are_fresh() {
    let ours = bin_path("starpep-client");
    let a = pipe(&ours, &["genkey"], "");
    let b = pipe(&ours, &["genkey"], "");
    assert_ne!(a, b);
    assert!(a.ends_with('=') && b.ends_with('='));
}
