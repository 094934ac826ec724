//! Unit tests of the key types against known vectors (RFC 7748, a `wg genkey`/`wg pubkey` pair).

use std::io::Write as _;
use std::process::{Command, Stdio};

use super::*;

fn hex32(s: &str) -> [u8; 32] {
    let v = hex::decode(s).unwrap();
    v.try_into().unwrap()
}

#[test]
fn rfc7748_section_6_1_alice_and_bob() {
    // RFC 7748 §6.1: X25519(a, 9) and X25519(b, 9), and their shared secret.
    let alice = PrivateKey::from_bytes(hex32(
        "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a",
    ));
    let bob = PrivateKey::from_bytes(hex32(
        "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb",
    ));
    let alice_pub = alice.public_key();
    let bob_pub = bob.public_key();
    assert_eq!(
        hex::encode(alice_pub.as_bytes()),
        "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    );
    assert_eq!(
        hex::encode(bob_pub.as_bytes()),
        "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    );
    // The same vectors in the base64 form `wg` reads and writes.
    assert_eq!(
        alice.to_string(),
        "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo="
    );
    assert_eq!(
        alice_pub.to_string(),
        "hSDwCYkwp1R0i33ctD73Wg2/Og0mOBr066SpjqqbTmo="
    );
    let alice_b64: PrivateKey = "dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo="
        .parse()
        .unwrap();
    assert_eq!(alice_b64, alice);
    let bob_b64: PrivateKey = "XasIfmJKikt54X+Lg4AO5m87sSkmGLb9HC+LJ/+I4Os="
        .parse()
        .unwrap();
    assert_eq!(
        bob_b64.public_key().to_string(),
        "3p7bfXt9wbTTW2HC7OQ1Nz+DQ8hbeGdNrfx+FG+IK08="
    );
    let k1 = alice
        .to_static_secret()
        .diffie_hellman(&bob_pub.to_x25519());
    let k2 = bob
        .to_static_secret()
        .diffie_hellman(&alice_pub.to_x25519());
    let shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742";
    assert_eq!(hex::encode(k1.as_bytes()), shared);
    assert_eq!(hex::encode(k2.as_bytes()), shared);
}

#[test]
fn rfc7748_section_5_2_raw_x25519() {
    // RFC 7748 §5.2, first vector: X25519(scalar, u) with an arbitrary u (not the base point).
    let scalar = PrivateKey::from_bytes(hex32(
        "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
    ));
    let u = PublicKey::from_bytes(hex32(
        "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
    ));
    let out = scalar.to_static_secret().diffie_hellman(&u.to_x25519());
    assert_eq!(
        hex::encode(out.as_bytes()),
        "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"
    );
}

#[test]
fn wg_genkey_pubkey_vector() {
    // Generated on this machine with `wg genkey | tee /dev/stderr | wg pubkey` (wireguard-tools
    // 1.0.20210914).
    let private: PrivateKey = "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXY="
        .parse()
        .unwrap();
    assert_eq!(
        private.public_key().to_string(),
        "WaA/kfm7VPxUQzg1C1p6e37EY24D9P/FJWvm6Sa3iWQ="
    );
}

#[test]
fn base64_round_trip_and_rejects() {
    for s in [
        "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXY=",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        "//////////////////////////////////////////8=",
    ] {
        assert_eq!(s.parse::<PublicKey>().unwrap().to_string(), s);
        assert_eq!(s.parse::<PresharedKey>().unwrap().to_string(), s);
        assert_eq!(s.parse::<Key>().unwrap().to_string(), s);
    }
    for bad in [
        "",
        "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXY", // 43: no padding
        "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXY==", // 45
        "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXZ=", // non-zero trailing bits
        "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJP*XY=", // not base64
        "SNZQiNA-ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXY=", // URL-safe alphabet
        "SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMX==", // 31 bytes
    ] {
        assert_eq!(bad.parse::<PublicKey>(), Err(KeyError), "{bad:?}");
    }
    assert_eq!(KeyError.to_string(), "not a 32-byte base64 key");
}

#[test]
fn generate_is_clamped_random_and_redacted() {
    let a = PrivateKey::generate();
    let b = PrivateKey::generate();
    assert_ne!(a, b);
    for k in [&a, &b] {
        let bytes = k.as_bytes();
        assert_eq!(bytes[0] & 7, 0);
        assert_eq!(bytes[31] & 0x80, 0);
        assert_eq!(bytes[31] & 0x40, 0x40);
        assert_eq!(k.to_string().parse::<PrivateKey>().unwrap(), *k);
    }
    let shown = format!("{a:?} {:?}", PresharedKey::from_bytes(*a.as_bytes()));
    assert!(!shown.contains(&a.to_string()), "{shown}");
    assert!(shown.contains("redacted"));
    let pubkey = a.public_key();
    assert!(format!("{pubkey:?}").contains(&pubkey.to_string()));
}

/// Keys must be interchangeable with wireguard-tools: `wg pubkey` of our key equals ours.
#[test]
fn generated_key_matches_wg_pubkey() {
    let key = PrivateKey::generate();
    let child = Command::new("wg")
        .arg("pubkey")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let Ok(mut child) = child else {
        eprintln!("skipped: `wg` (wireguard-tools) is not installed");
        return;
    };
    writeln!(child.stdin.take().unwrap(), "{key}").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8(out.stdout).unwrap().trim(),
        key.public_key().to_string()
    );
}

/// Compiles only for types that wipe their memory when dropped.
fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>() {}

/// Compiles only for types that can wipe themselves; with `needs_drop`, x25519-dalek's
/// `#[zeroize(drop)]` (its derive implements `Drop`, not the `ZeroizeOnDrop` marker).
fn wipes_itself<T: zeroize::Zeroize>() -> bool {
    std::mem::needs_drop::<T>()
}

#[test]
fn secret_keys_are_wiped_when_dropped() {
    // Ours, the engine's copy (boringtun's x25519-dalek key, its `zeroize` feature on) and the
    // wrapper that holds the config text and the plan's key bytes.
    wiped_on_drop::<PrivateKey>();
    wiped_on_drop::<PresharedKey>();
    assert!(wipes_itself::<boringtun::x25519::StaticSecret>());
    wiped_on_drop::<zeroize::Zeroizing<String>>();
    // What their `Drop` runs:
    use zeroize::Zeroize as _;
    let mut k = PrivateKey::generate();
    assert_ne!(k.as_bytes(), &[0u8; 32]);
    k.zeroize();
    assert_eq!(k.as_bytes(), &[0u8; 32]);
    let mut p: PresharedKey = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
        .parse()
        .unwrap();
    assert_eq!(p.as_bytes()[31], 32);
    p.zeroize();
    assert_eq!(p.as_bytes(), &[0u8; 32]);
}
