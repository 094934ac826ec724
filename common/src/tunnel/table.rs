//! The engine's peer table (pure): peers in stable slots, by public key, and the cryptokey
//! routing between them. A slot is a peer's for its whole life: a reload that removes a peer
//! leaves its slot empty and adds new peers at the end, so the session indices of the peers it
//! keeps (slot << 8) stay valid, and so do the slots the PEP charges flows to.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;

use super::allowed_ips::AllowedIps;
use super::diff::PeerDiff;
use super::peer::{Peer, PeerSpec};

/// Slots are the high 24 bits of a session index.
pub const MAX_SLOTS: usize = 1 << 24;

#[derive(Default)]
pub(crate) struct PeerTable {
    slots: Vec<Option<Arc<Peer>>>,
    by_key: HashMap<[u8; 32], usize>,
    routes: AllowedIps<usize>,
}

impl PeerTable {
    pub fn get(&self, slot: usize) -> Option<&Arc<Peer>> {
        self.slots.get(slot)?.as_ref()
    }

    pub fn slot_of(&self, key: &[u8; 32]) -> Option<usize> {
        self.by_key.get(key).copied()
    }

    /// The peer whose AllowedIPs hold `addr` (longest prefix).
    pub fn route(&self, addr: IpAddr) -> Option<usize> {
        self.routes.lookup(addr).copied()
    }

    /// Slots ever used (live peers and the empty slots of removed ones).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// The slot the next added peer takes.
    pub fn next_slot(&self) -> usize {
        self.slots.len()
    }

    /// Live peers in slot order.
    pub fn live(&self) -> impl Iterator<Item = &Arc<Peer>> {
        self.slots.iter().flatten()
    }

    pub fn insert(&mut self, peer: Peer) {
        let slot = peer.index as usize;
        debug_assert_eq!(slot, self.slots.len());
        self.by_key.insert(peer.public_key, slot);
        self.slots.push(Some(Arc::new(peer)));
    }

    pub fn remove(&mut self, key: &[u8; 32]) -> Option<Arc<Peer>> {
        let slot = self.by_key.remove(key)?;
        self.slots.get_mut(slot)?.take()
    }

    /// Rebuilds the cryptokey routing from `order` (the file's order: a prefix two peers list
    /// goes to the later one, as with `wg setconf`).
    pub fn reroute(&mut self, order: &[PeerSpec]) {
        let mut routes = AllowedIps::new();
        for p in order {
            if let Some(slot) = self.slot_of(&p.public_key) {
                for net in &p.allowed_ips {
                    routes.insert(*net, slot);
                }
            }
        }
        self.routes = routes;
    }

    /// Each slot's AllowedIPs (empty for an empty slot).
    pub fn allowed_ips(&self) -> Vec<Vec<IpNet>> {
        self.slots
            .iter()
            .map(|s| s.as_ref().map(|p| p.lock().spec.allowed_ips.clone()))
            .map(Option::unwrap_or_default)
            .collect()
    }

    /// [`PeerTable::allowed_ips`] as it will be once `diff` is applied.
    pub fn allowed_ips_after(&self, diff: &PeerDiff) -> Vec<Vec<IpNet>> {
        let mut v = self.allowed_ips();
        for key in &diff.removed {
            if let Some(i) = self.slot_of(key) {
                v[i].clear();
            }
        }
        for ch in &diff.changed {
            if let Some(i) = self.slot_of(&ch.spec.public_key) {
                v[i] = ch.spec.allowed_ips.clone();
            }
        }
        v.extend(diff.added.iter().map(|p| p.allowed_ips.clone()));
        v
    }
}
