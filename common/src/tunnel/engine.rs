//! The tunnel engine (pure): peer table + cryptokey routing around boringtun, one call per packet.
//!
//! TUN → [`Engine::encapsulate`] → UDP and UDP → [`Engine::decapsulate`] → TUN. The engine never
//! does I/O: it returns what to send where, and the daemon's loops do the system calls. It is
//! `Sync`; each peer's state has its own mutex, so both directions run on their own threads.

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, RwLock};

use boringtun::noise::errors::WireGuardError;
use boringtun::noise::handshake::parse_handshake_anon;
use boringtun::noise::rate_limiter::RateLimiter;
use boringtun::noise::{Packet, Tunn, TunnResult};
use boringtun::x25519::{PublicKey, StaticSecret};

use super::peer::{canonical, Peer, PeerState};
use super::table::PeerTable;

/// Handshake messages per second before cookies are demanded. Each handshake message passes the
/// shared limiter twice (once here to find the peer, once inside `Tunn`), so this is 2 × 100/s.
pub const HANDSHAKE_RATE_LIMIT: u64 = 200;

/// Outer overhead of a data message (type, index, counter, tag).
pub const DATA_OVERHEAD: usize = 32;
/// The smallest `dst` buffer any engine call accepts (a handshake initiation).
pub const MIN_DST: usize = 148;

const HANDSHAKE_INIT_TYPE: u8 = 1;
const HANDSHAKE_RESPONSE_TYPE: u8 = 2;
const COOKIE_REPLY_TYPE: u8 = 3;
const DATA_TYPE: u8 = 4;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("peer {0}: listed twice")]
    DuplicatePeer(String),
    #[error("too many peers ({0}; at most 2^24 over the daemon's life, removed ones included)")]
    TooManyPeers(usize),
}

/// Interface-wide drop and event counters.
#[derive(Debug, Default)]
pub struct EngineCounters {
    /// TUN packets whose destination matches no peer's AllowedIPs.
    pub dropped_no_route: AtomicU64,
    /// Packets for a peer whose endpoint is not known yet (no Endpoint, no datagram received).
    pub dropped_no_endpoint: AtomicU64,
    /// Unparseable TUN packets or UDP datagrams, and decrypted packets whose IP header is
    /// shorter than its own length fields say (see [`well_formed`]).
    pub dropped_invalid: AtomicU64,
    /// Datagrams for an index or public key that is not one of our peers.
    pub dropped_unknown_peer: AtomicU64,
    /// Cookie replies sent because handshakes arrived faster than the rate limit.
    pub cookie_replies: AtomicU64,
}

/// What to do with one packet read from the TUN.
#[derive(Debug)]
pub enum Outbound<'a> {
    /// Send `datagram` (data, or a handshake initiation while the packet waits) to `to`.
    Send { to: SocketAddr, datagram: &'a [u8] },
    /// Nothing to send (queued inside the peer, or dropped and counted).
    Nothing,
}

/// What to do with one datagram read from the UDP socket.
#[derive(Debug)]
pub enum Inbound<'a> {
    /// Write this decrypted inner packet to the TUN (its source passed cryptokey routing).
    Tunnel(&'a [u8]),
    /// Send `datagram` to `to` (handshake response, keepalive, cookie). If `flush` names a peer,
    /// call [`Engine::flush`] for it until it returns `None` to send the packets it queued.
    Network {
        to: SocketAddr,
        datagram: &'a [u8],
        flush: Option<usize>,
    },
    /// Consumed (keepalive, handshake response) or dropped and counted.
    Nothing,
}

/// The peers of one interface and the cryptokey routing between them. The table changes only
/// on a reload ([`Engine::apply`]); every packet takes its read lock.
pub struct Engine {
    pub(super) public: PublicKey,
    pub(super) secret: StaticSecret,
    pub(super) table: RwLock<PeerTable>,
    pub(super) limiter: Arc<RateLimiter>,
    pub counters: EngineCounters,
}

/// The engine's building, its reloads and its views of the peers are in `engine_peers.rs`.
impl Engine {
    /// The peer whose AllowedIPs hold `addr` (longest prefix).
    pub fn route(&self, addr: IpAddr) -> Option<usize> {
        self.table().route(addr)
    }

    /// Encrypts one packet read from the TUN for the peer its destination routes to.
    /// `dst` must hold `packet.len() + DATA_OVERHEAD` and at least [`MIN_DST`] bytes.
    pub fn encapsulate<'a>(&self, packet: &[u8], dst: &'a mut [u8]) -> Outbound<'a> {
        let Some(addr) = Tunn::dst_address(packet) else {
            self.counters.dropped_invalid.fetch_add(1, Relaxed);
            return Outbound::Nothing;
        };
        let t = self.table();
        let Some(peer) = t.route(addr).and_then(|i| t.get(i)) else {
            self.counters.dropped_no_route.fetch_add(1, Relaxed);
            return Outbound::Nothing;
        };
        let mut st = peer.lock();
        let st = &mut *st;
        match st.tunn.encapsulate(packet, dst) {
            TunnResult::WriteToNetwork(d) => {
                if d.first() == Some(&DATA_TYPE) {
                    st.stats.tx_packets += 1;
                }
                self.send_to_endpoint(st, d)
            }
            TunnResult::Err(e) => {
                peer.span.in_scope(|| tracing::debug!("encapsulate: {e:?}"));
                Outbound::Nothing
            }
            _ => Outbound::Nothing,
        }
    }

    fn send_to_endpoint<'a>(&self, st: &mut PeerState, d: &'a [u8]) -> Outbound<'a> {
        match st.endpoint {
            Some(to) => {
                st.stats.tx_bytes += d.len() as u64;
                Outbound::Send { to, datagram: d }
            }
            None => {
                self.counters.dropped_no_endpoint.fetch_add(1, Relaxed);
                Outbound::Nothing
            }
        }
    }

    /// Finds the peer a datagram belongs to; `Err(Some(len))`: a cookie reply of `len` bytes
    /// is in `dst`, to send back.
    fn peer_of(
        &self,
        t: &PeerTable,
        from: SocketAddr,
        datagram: &[u8],
        dst: &mut [u8],
    ) -> Result<usize, Option<usize>> {
        let idx = match Tunn::parse_incoming_packet(datagram) {
            Err(_) => {
                self.counters.dropped_invalid.fetch_add(1, Relaxed);
                return Err(None);
            }
            Ok(Packet::HandshakeInit(_)) => {
                // mac1 check and rate limiting before the expensive DH that names the peer.
                match self.limiter.verify_packet(Some(from.ip()), datagram, dst) {
                    Ok(Packet::HandshakeInit(p)) => {
                        match parse_handshake_anon(&self.secret, &self.public, &p) {
                            Ok(hh) => match t.slot_of(&hh.peer_static_public) {
                                Some(i) => i,
                                None => {
                                    self.counters.dropped_unknown_peer.fetch_add(1, Relaxed);
                                    return Err(None);
                                }
                            },
                            Err(_) => {
                                self.counters.dropped_invalid.fetch_add(1, Relaxed);
                                return Err(None);
                            }
                        }
                    }
                    Err(TunnResult::WriteToNetwork(cookie)) => {
                        self.counters.cookie_replies.fetch_add(1, Relaxed);
                        return Err(Some(cookie.len()));
                    }
                    _ => {
                        self.counters.dropped_invalid.fetch_add(1, Relaxed);
                        return Err(None);
                    }
                }
            }
            Ok(Packet::HandshakeResponse(p)) => (p.receiver_idx >> 8) as usize,
            Ok(Packet::PacketCookieReply(p)) => (p.receiver_idx >> 8) as usize,
            Ok(Packet::PacketData(p)) => (p.receiver_idx >> 8) as usize,
        };
        if t.get(idx).is_none() {
            self.counters.dropped_unknown_peer.fetch_add(1, Relaxed);
            return Err(None);
        }
        Ok(idx)
    }

    /// Handles one datagram received from `from`. `dst` must be at least as long as the datagram
    /// and [`MIN_DST`]. Any authenticated datagram moves the peer's endpoint to `from` (roaming).
    pub fn decapsulate<'a>(
        &self,
        from: SocketAddr,
        datagram: &[u8],
        dst: &'a mut [u8],
    ) -> Inbound<'a> {
        let from = canonical(from);
        let t = self.table();
        let idx = match self.peer_of(&t, from, datagram, dst) {
            Ok(i) => i,
            Err(Some(cookie_len)) => {
                return Inbound::Network {
                    to: from,
                    datagram: &dst[..cookie_len],
                    flush: None,
                }
            }
            Err(None) => return Inbound::Nothing,
        };
        let Some(peer) = t.get(idx) else {
            return Inbound::Nothing;
        };
        let mut guard = peer.lock();
        let st = &mut *guard;
        let kind = datagram.first().copied();
        match st.tunn.decapsulate(Some(from.ip()), datagram, dst) {
            TunnResult::Done => {
                if kind == Some(HANDSHAKE_RESPONSE_TYPE) {
                    st.stats.handshakes += 1;
                }
                self.authenticated(peer, st, from, datagram.len());
                Inbound::Nothing
            }
            TunnResult::Err(e) => {
                st.stats.dropped_decrypt += 1;
                match e {
                    WireGuardError::DuplicateCounter | WireGuardError::InvalidCounter => {
                        st.stats.dropped_replay += 1
                    }
                    WireGuardError::InvalidMac | WireGuardError::InvalidAeadTag => {
                        st.stats.dropped_bad_mac += 1
                    }
                    _ => {}
                }
                if !matches!(e, WireGuardError::DuplicateCounter) {
                    peer.span
                        .in_scope(|| tracing::debug!(%from, "decapsulate: {e:?}"));
                }
                Inbound::Nothing
            }
            TunnResult::WriteToNetwork(d) => {
                if d.first() == Some(&COOKIE_REPLY_TYPE) {
                    // From the limiter inside Tunn: the sender is not authenticated yet.
                    self.counters.cookie_replies.fetch_add(1, Relaxed);
                    return Inbound::Network {
                        to: from,
                        datagram: d,
                        flush: None,
                    };
                }
                // An initiation answered, or a response accepted (its keepalive goes out).
                if (kind == Some(HANDSHAKE_INIT_TYPE)
                    && d.first() == Some(&HANDSHAKE_RESPONSE_TYPE))
                    || kind == Some(HANDSHAKE_RESPONSE_TYPE)
                {
                    st.stats.handshakes += 1;
                }
                self.authenticated(peer, st, from, datagram.len());
                st.stats.tx_bytes += d.len() as u64;
                Inbound::Network {
                    to: from,
                    datagram: d,
                    flush: Some(idx),
                }
            }
            TunnResult::WriteToTunnelV4(p, src) => {
                self.authenticated(peer, st, from, datagram.len());
                self.check_source(&t, idx, st, IpAddr::V4(src), p)
            }
            TunnResult::WriteToTunnelV6(p, src) => {
                self.authenticated(peer, st, from, datagram.len());
                self.check_source(&t, idx, st, IpAddr::V6(src), p)
            }
        }
    }

    fn authenticated(&self, peer: &Peer, st: &mut PeerState, from: SocketAddr, len: usize) {
        st.stats.rx_bytes += len as u64;
        if st.endpoint != Some(from) {
            if let Some(old) = st.endpoint {
                st.stats.endpoint_changes += 1;
                peer.span
                    .in_scope(|| tracing::info!(%old, new = %from, "endpoint changed"));
            } else {
                peer.span
                    .in_scope(|| tracing::info!(new = %from, "endpoint learnt"));
            }
            st.endpoint = Some(from);
        }
    }

    /// Next packet that peer `idx` queued while it had no session, ready to send.
    pub fn flush<'a>(&self, idx: usize, dst: &'a mut [u8]) -> Option<(SocketAddr, &'a [u8])> {
        let t = self.table();
        let peer = t.get(idx)?;
        let mut guard = peer.lock();
        let st = &mut *guard;
        let Some(to) = st.endpoint else {
            while let TunnResult::WriteToNetwork(_) = st.tunn.decapsulate(None, &[], dst) {
                self.counters.dropped_no_endpoint.fetch_add(1, Relaxed);
            }
            return None;
        };
        match st.tunn.decapsulate(None, &[], dst) {
            TunnResult::WriteToNetwork(d) => {
                st.stats.tx_packets += 1;
                st.stats.tx_bytes += d.len() as u64;
                Some((to, d))
            }
            _ => None,
        }
    }

    /// Runs peer `idx`'s timers (handshake retries, rekey, keepalives); call every ~100–250 ms.
    /// Returns a datagram to send, if the timers want one.
    pub fn tick<'a>(&self, idx: usize, dst: &'a mut [u8]) -> Option<(SocketAddr, &'a [u8])> {
        let t = self.table();
        let peer = t.get(idx)?;
        let mut guard = peer.lock();
        let st = &mut *guard;
        match st.tunn.update_timers(dst) {
            TunnResult::WriteToNetwork(d) => match self.send_to_endpoint(st, d) {
                Outbound::Send { to, datagram } => Some((to, datagram)),
                Outbound::Nothing => None,
            },
            TunnResult::Err(WireGuardError::ConnectionExpired) => None,
            TunnResult::Err(e) => {
                peer.span.in_scope(|| tracing::debug!("timers: {e:?}"));
                None
            }
            _ => None,
        }
    }

    /// Resets the shared handshake rate limiter's count (it resets at most once per second).
    pub fn reset_rate_limiter(&self) {
        self.limiter.reset_count();
    }
}

impl Engine {
    /// Cryptokey routing of a decrypted packet: its source must be one of the peer's
    /// AllowedIPs, and the packet must hold the header its length says it has.
    fn check_source<'a>(
        &self,
        t: &PeerTable,
        idx: usize,
        st: &mut PeerState,
        src: IpAddr,
        packet: &'a [u8],
    ) -> Inbound<'a> {
        if !well_formed(packet) {
            self.counters.dropped_invalid.fetch_add(1, Relaxed);
            Inbound::Nothing
        } else if t.route(src) == Some(idx) {
            st.stats.rx_packets += 1;
            Inbound::Tunnel(packet)
        } else {
            st.stats.dropped_source_not_allowed += 1;
            Inbound::Nothing
        }
    }
}

/// Whether a decrypted packet, cut by boringtun to its IP length field, still holds its whole
/// header: an IPv4 total length below 20 (or below IHL × 4) would otherwise be written to the
/// TUN as a stub of a packet, its source checked on bytes past the cut (found by fuzzing). As
/// the kernel's WireGuard ("dishonest packet size"). IPv6 lengths are 40 plus the payload's.
pub fn well_formed(packet: &[u8]) -> bool {
    match packet.first().map(|b| (b >> 4, usize::from(b & 0x0f) * 4)) {
        Some((4, ihl)) => ihl >= 20 && packet.len() >= ihl,
        Some((6, _)) => packet.len() >= 40,
        _ => false,
    }
}
