//! One WireGuard peer (pure state): its boringtun `Tunn`, current endpoint and counters.
//!
//! The `Tunn`, the endpoint and the counters share one mutex: every packet of the peer takes it
//! once (the TUN→UDP thread to encrypt, the UDP→TUN thread to decrypt), so a roaming update and
//! the counters never need a second lock.

use std::net::SocketAddr;
use std::sync::{Mutex, MutexGuard};

use boringtun::noise::Tunn;
use ipnet::IpNet;
use zeroize::Zeroizing;

/// What a peer is configured with (taken from a `[Peer]` section by the daemon).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerSpec {
    pub public_key: [u8; 32],
    /// Wiped when the spec is dropped (Debug does not print it).
    pub preshared_key: Option<Zeroizing<[u8; 32]>>,
    /// Where to send until the peer's first authenticated datagram tells us otherwise.
    pub endpoint: Option<SocketAddr>,
    pub allowed_ips: Vec<IpNet>,
    pub persistent_keepalive: Option<u16>,
}

/// Per-peer counters. Bytes are outer UDP payload bytes (like `wg show`'s transfer), packets are
/// inner IP packets carried.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct PeerStats {
    pub rx_bytes: u64,
    pub tx_bytes: u64,
    pub rx_packets: u64,
    pub tx_packets: u64,
    /// Decrypted packets whose inner source is not in this peer's AllowedIPs (cryptokey routing).
    pub dropped_source_not_allowed: u64,
    /// Datagrams that named this peer but failed authentication/decryption (or were replays).
    pub dropped_decrypt: u64,
    /// Of those: replays (a counter already seen or too old) ...
    pub dropped_replay: u64,
    /// ... and datagrams whose MAC or authentication tag did not verify.
    pub dropped_bad_mac: u64,
    /// Handshakes completed with this peer: initiations answered and responses accepted.
    pub handshakes: u64,
    /// How often the endpoint moved to a new source address (roaming).
    pub endpoint_changes: u64,
}

/// The mutable part of a peer, behind its mutex (a reload changes its spec in place).
pub(crate) struct PeerState {
    pub tunn: Tunn,
    pub endpoint: Option<SocketAddr>,
    pub stats: PeerStats,
    pub spec: PeerSpec,
}

/// A peer of the engine: configuration plus locked state.
pub struct Peer {
    /// Slot in the engine's table (kept for the peer's life, across reloads); also the high 24
    /// bits of boringtun's session indices.
    pub index: u32,
    pub public_key: [u8; 32],
    pub(crate) state: Mutex<PeerState>,
    pub(crate) span: tracing::Span,
}

impl Peer {
    pub(crate) fn new(index: u32, spec: PeerSpec, tunn: Tunn) -> Peer {
        let span = tracing::info_span!("peer", key = %short_key(&spec.public_key));
        Peer {
            index,
            public_key: spec.public_key,
            state: Mutex::new(PeerState {
                tunn,
                endpoint: spec.endpoint,
                stats: PeerStats::default(),
                spec,
            }),
            span,
        }
    }

    /// What the peer is configured with now.
    pub fn spec(&self) -> PeerSpec {
        self.lock().spec.clone()
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, PeerState> {
        // A panic while holding the lock leaves the state usable: recover it.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The current endpoint (configured, or learnt from the last authenticated datagram).
    pub fn endpoint(&self) -> Option<SocketAddr> {
        self.lock().endpoint
    }

    pub fn stats(&self) -> PeerStats {
        self.lock().stats
    }
}

/// First 8 base64 characters of a key, for log spans.
pub fn short_key(key: &[u8; 32]) -> String {
    use base64::Engine as _;
    let mut s = base64::engine::general_purpose::STANDARD.encode(key);
    s.truncate(8);
    s
}

/// A v4-mapped IPv6 source (from a dual-stack socket) as the plain IPv4 address it is.
pub fn canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(v4) => SocketAddr::new(v4.into(), a.port()),
            None => addr,
        },
        SocketAddr::V4(_) => addr,
    }
}
