//! WireGuard keys: 32-byte newtypes read and written as base64 like `wg genkey`/`wg pubkey` (pure).
//!
//! The crypto is boringtun's x25519 (x25519-dalek 2.x); keys cross that boundary as raw bytes.
//! The secret ones ([`PrivateKey`], [`PresharedKey`]) wipe their bytes when dropped, as
//! x25519-dalek's `StaticSecret` does.

use std::fmt;
use std::str::FromStr;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use boringtun::x25519;
use rand::RngCore as _;
use zeroize::{Zeroize, ZeroizeOnDrop};

/// A key that is not exactly 44 characters of base64 for 32 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a 32-byte base64 key")]
pub struct KeyError;

/// Decodes a WireGuard key: exactly 44 base64 characters (with the trailing `=`), 32 bytes.
fn decode(s: &str) -> Result<[u8; 32], KeyError> {
    if s.len() != 44 {
        return Err(KeyError);
    }
    let mut out = [0u8; 32];
    match STANDARD.decode_slice(s.as_bytes(), &mut out) {
        Ok(32) => Ok(out),
        _ => Err(KeyError),
    }
}

/// 32 raw key bytes of no particular role; its Debug and Display print base64.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key(pub [u8; 32]);

macro_rules! key_type {
    ($name:ident) => {
        impl $name {
            /// Wraps raw key bytes.
            pub const fn from_bytes(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }
            /// The raw key bytes.
            pub const fn as_bytes(&self) -> &[u8; 32] {
                &self.0
            }
            /// A copy of the raw key bytes.
            pub const fn to_bytes(&self) -> [u8; 32] {
                self.0
            }
        }
        impl From<[u8; 32]> for $name {
            fn from(bytes: [u8; 32]) -> Self {
                Self(bytes)
            }
        }
        impl FromStr for $name {
            type Err = KeyError;
            fn from_str(s: &str) -> Result<Self, KeyError> {
                decode(s).map(Self)
            }
        }
        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&STANDARD.encode(self.0))
            }
        }
    };
}

key_type!(Key);
key_type!(PublicKey);
key_type!(PrivateKey);
key_type!(PresharedKey);

/// Secret keys: their bytes are overwritten with zeros when the value is dropped.
macro_rules! wiped_on_drop {
    ($name:ident) => {
        impl Zeroize for $name {
            fn zeroize(&mut self) {
                self.0.zeroize();
            }
        }
        impl Drop for $name {
            fn drop(&mut self) {
                self.0.zeroize();
            }
        }
        impl ZeroizeOnDrop for $name {}
    };
}

wiped_on_drop!(PrivateKey);
wiped_on_drop!(PresharedKey);

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Key({self})")
    }
}

/// A peer's (or our own) X25519 public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PublicKey([u8; 32]);

impl PublicKey {
    /// boringtun's public key type.
    pub fn to_x25519(&self) -> x25519::PublicKey {
        x25519::PublicKey::from(self.0)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// The interface's X25519 private key. Debug never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKey([u8; 32]);

impl PrivateKey {
    /// A random key from the OS RNG, clamped exactly as `wg genkey` does.
    pub fn generate() -> Self {
        let mut k = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut k);
        k[0] &= 248;
        k[31] = (k[31] & 127) | 64;
        Self(k)
    }

    /// X25519(key, 9), as `wg pubkey` computes it (the scalar is clamped first).
    pub fn public_key(&self) -> PublicKey {
        PublicKey(x25519::PublicKey::from(&self.to_static_secret()).to_bytes())
    }

    /// boringtun's static secret type.
    pub fn to_static_secret(&self) -> x25519::StaticSecret {
        x25519::StaticSecret::from(self.0)
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrivateKey(<redacted>)")
    }
}

/// A peer's optional symmetric pre-shared key. Debug never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct PresharedKey([u8; 32]);

impl fmt::Debug for PresharedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PresharedKey(<redacted>)")
    }
}
