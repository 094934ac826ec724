//! The tunnel engine's peers (pure): building the engine, a reload's changes to its peer table
//! ([`Engine::apply`]), and what the daemon and `show` read of the peers.

use std::sync::{Arc, RwLock, RwLockReadGuard};

use boringtun::noise::rate_limiter::RateLimiter;
use boringtun::noise::Tunn;
use boringtun::x25519::{PublicKey, StaticSecret};

use super::diff::{diff_peers, PeerDiff};
use super::engine::{Engine, EngineCounters, EngineError, HANDSHAKE_RATE_LIMIT};
use super::peer::{Peer, PeerSpec};
use super::table::{PeerTable, MAX_SLOTS};

impl Engine {
    /// Builds the engine for `private_key` and `peers`. AllowedIPs shared by two peers go to the
    /// later one, as with `wg setconf`.
    pub fn new(private_key: [u8; 32], peers: Vec<PeerSpec>) -> Result<Engine, EngineError> {
        let secret = StaticSecret::from(private_key);
        let public = PublicKey::from(&secret);
        let limiter = Arc::new(RateLimiter::new(&public, HANDSHAKE_RATE_LIMIT));
        let engine = Engine {
            public,
            secret,
            table: RwLock::default(),
            limiter,
            counters: EngineCounters::default(),
        };
        let diff = diff_peers(&[], &peers).map_err(|_| duplicate(&peers))?;
        engine.apply(&diff, &peers)?;
        Ok(engine)
    }

    /// Applies a reload: `diff` from the running peers to `order` (the new file's peers, in
    /// its order). Removed peers stop at once (their slot stays empty), added ones take new
    /// slots, changed ones are updated in place (a new session only if their preshared key or
    /// keepalive changed); untouched peers keep their sessions.
    pub fn apply(&self, diff: &PeerDiff, order: &[PeerSpec]) -> Result<(), EngineError> {
        let mut t = self.table.write().unwrap_or_else(|e| e.into_inner());
        if t.len() + diff.added.len() > MAX_SLOTS {
            return Err(EngineError::TooManyPeers(t.len() + diff.added.len()));
        }
        for key in &diff.removed {
            if let Some(p) = t.remove(key) {
                p.span.in_scope(|| tracing::info!("peer removed"));
            }
        }
        for ch in &diff.changed {
            let Some(peer) = t.slot_of(&ch.spec.public_key).and_then(|i| t.get(i)) else {
                continue;
            };
            let mut st = peer.lock();
            if ch.session {
                st.tunn = self.tunn(&ch.spec, peer.index);
            }
            if ch.endpoint && ch.spec.endpoint.is_some() {
                st.endpoint = ch.spec.endpoint;
            }
            st.spec = ch.spec.clone();
            peer.span.in_scope(|| {
                tracing::info!(
                    allowed_ips = ch.allowed_ips,
                    endpoint = ch.endpoint,
                    new_session = ch.session,
                    "peer changed"
                )
            });
        }
        for spec in &diff.added {
            let slot = t.next_slot() as u32;
            let peer = Peer::new(slot, spec.clone(), self.tunn(spec, slot));
            peer.span.in_scope(|| tracing::debug!(slot, "peer added"));
            t.insert(peer);
        }
        t.reroute(order);
        Ok(())
    }

    fn tunn(&self, spec: &PeerSpec, slot: u32) -> Tunn {
        Tunn::new(
            self.secret.clone(),
            PublicKey::from(spec.public_key),
            spec.preshared_key.as_deref().copied(),
            spec.persistent_keepalive,
            slot,
            Some(self.limiter.clone()),
        )
    }

    pub(super) fn table(&self) -> RwLockReadGuard<'_, PeerTable> {
        self.table.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn public_key(&self) -> [u8; 32] {
        *self.public.as_bytes()
    }

    /// The live peers, in slot order.
    pub fn peers(&self) -> Vec<Arc<Peer>> {
        self.table().live().cloned().collect()
    }

    /// Slots ever used: the timers run `0..slots()` ([`Engine::tick`] skips empty slots).
    pub fn slots(&self) -> usize {
        self.table().len()
    }

    /// Each slot's AllowedIPs (empty for a removed peer's slot): who carries which addresses.
    pub fn slot_allowed_ips(&self) -> Vec<Vec<ipnet::IpNet>> {
        self.table().allowed_ips()
    }

    /// [`Engine::slot_allowed_ips`] as it will be once `diff` is applied.
    pub fn slot_allowed_ips_after(&self, diff: &PeerDiff) -> Vec<Vec<ipnet::IpNet>> {
        self.table().allowed_ips_after(diff)
    }

    /// Latest handshake age and handshake round-trip time (ms) of peer `idx`.
    pub fn handshake_info(&self, idx: usize) -> (Option<std::time::Duration>, Option<u32>) {
        match self.table().get(idx) {
            Some(p) => {
                let st = p.lock();
                let (ago, _, _, _, rtt) = st.tunn.stats();
                (ago, rtt)
            }
            None => (None, None),
        }
    }
}

fn duplicate(peers: &[PeerSpec]) -> EngineError {
    let mut seen = std::collections::HashSet::new();
    let key = peers
        .iter()
        .find(|p| !seen.insert(p.public_key))
        .map(|p| p.public_key)
        .unwrap_or_default();
    EngineError::DuplicatePeer(super::peer::short_key(&key))
}
