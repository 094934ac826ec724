//! Per-client share of the flow table (pure): who a new flow is charged to (its source address,
//! and at the POP also the WireGuard peer whose AllowedIPs hold it), how many flows each one
//! holds, and when one must stop being split or may be split again. The box caps each LAN host
//! at `MaxFlowsPerClient`; the POP caps each peer at `MaxFlowsPerClient` and each address
//! behind it at `MaxFlowsPerHost`, so one host cannot take its whole box's share either. The
//! shell turns a [`CapChange`] into nft set elements (addresses in `capped4`/`capped6`, peers'
//! prefixes in `cappedp4`/`cappedp6`): a capped client's new flows pass the tunnel unsplit,
//! exactly as when the whole table is full.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;

use ipnet::IpNet;

/// Who a flow is charged to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Tenant {
    /// The POP: the peer (index in the config) whose AllowedIPs contain the client.
    Peer(usize),
    /// The box, or a client no peer claims: its own address.
    Addr(IpAddr),
}

/// Maps a client address to its tenant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantMap {
    /// Per peer slot, its AllowedIPs (empty on the box: every address is its own tenant; an
    /// empty slot is a peer a reload removed).
    peers: Vec<Vec<IpNet>>,
}

impl TenantMap {
    /// `peers[i]`: peer i's AllowedIPs (merged: nested and adjacent prefixes of one peer
    /// become one, so its set elements never overlap each other).
    pub fn new(peers: Vec<Vec<IpNet>>) -> TenantMap {
        let peers = peers
            .into_iter()
            .map(|nets| IpNet::aggregate(&nets.iter().map(|n| n.trunc()).collect()))
            .collect();
        TenantMap { peers }
    }

    /// The peers' slots with their prefixes (empty slots left out).
    pub fn peers(&self) -> impl Iterator<Item = (usize, &[IpNet])> {
        self.peers
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.is_empty())
            .map(|(i, n)| (i, n.as_slice()))
    }

    /// How many peer slots.
    pub fn len(&self) -> usize {
        self.peers.len()
    }

    /// No peers (the box, or a PEP without tunnel).
    pub fn is_empty(&self) -> bool {
        self.peers.is_empty()
    }

    /// The peer of a flow from `client` (longest-prefix match, as WireGuard routes), if any.
    pub fn peer(&self, client: IpAddr) -> Option<Tenant> {
        let client = canonical(client);
        self.peers
            .iter()
            .enumerate()
            .flat_map(|(i, nets)| nets.iter().map(move |n| (i, n)))
            .filter(|(_, n)| n.contains(&client))
            .max_by_key(|(_, n)| n.prefix_len())
            .map(|(i, _)| Tenant::Peer(i))
    }

    /// Everyone a flow from `client` is charged to: its address, and its peer if one holds it.
    pub fn tenants(&self, client: IpAddr) -> Vec<Tenant> {
        let mut v = vec![Tenant::Addr(canonical(client))];
        v.extend(self.peer(client));
        v
    }

    /// The source prefixes that stand for `t` in the nft sets.
    pub fn prefixes(&self, t: &Tenant) -> Vec<IpNet> {
        match t {
            Tenant::Peer(i) => self.peers.get(*i).cloned().unwrap_or_default(),
            Tenant::Addr(a) => vec![IpNet::from(*a)],
        }
    }
}

/// An IPv4-mapped IPv6 address as the IPv4 address it is (a dual-stack listener reports them).
fn canonical(a: IpAddr) -> IpAddr {
    match a {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(a),
        v4 => v4,
    }
}

/// What the shell must change for one tenant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapChange {
    /// The tenant holds its whole share: its new flows must pass unsplit.
    Cap(Tenant),
    /// It is below its low watermark again: split its new flows.
    Uncap(Tenant),
}

/// A cap with its low watermark (15/16 of it, as the whole table resumes), so a tenant at its
/// cap does not flip the nft sets on every flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Limit {
    cap: usize,
    resume_at: usize,
}

impl Limit {
    fn new(cap: usize) -> Limit {
        let cap = cap.max(1);
        Limit {
            cap,
            resume_at: (cap - cap / 16).saturating_sub(1),
        }
    }
}

/// Flow counts per tenant against its cap (addresses one, peers another), with hysteresis.
#[derive(Debug, Clone)]
pub struct TenantCaps {
    addr: Limit,
    peer: Limit,
    live: HashMap<Tenant, usize>,
    capped: HashSet<Tenant>,
    /// Flows admitted while their tenant was already at its cap (their SYN raced the cap).
    over_cap: u64,
    caps: u64,
}

impl TenantCaps {
    /// At most `addr_cap` flows per address and `peer_cap` per peer (≥ 1; `usize::MAX`: none).
    pub fn new(addr_cap: usize, peer_cap: usize) -> TenantCaps {
        TenantCaps {
            addr: Limit::new(addr_cap),
            peer: Limit::new(peer_cap),
            live: HashMap::new(),
            capped: HashSet::new(),
            over_cap: 0,
            caps: 0,
        }
    }

    /// New caps (a reload): tenants at or over theirs are capped, capped ones now at or below
    /// the new low watermark are uncapped. Returns the changes.
    pub fn set_limits(&mut self, addr_cap: usize, peer_cap: usize) -> Vec<CapChange> {
        self.addr = Limit::new(addr_cap);
        self.peer = Limit::new(peer_cap);
        let mut changes = Vec::new();
        let mut live: Vec<(&Tenant, &usize)> = self.live.iter().collect();
        live.sort_by_key(|(t, _)| format!("{t:?}"));
        for (t, n) in live {
            if *n >= self.limit(t).cap && !self.capped.contains(t) {
                changes.push(CapChange::Cap(t.clone()));
            }
        }
        let mut capped: Vec<&Tenant> = self.capped.iter().collect();
        capped.sort_by_key(|t| format!("{t:?}"));
        for t in capped {
            if self.live(t) <= self.limit(t).resume_at {
                changes.push(CapChange::Uncap(t.clone()));
            }
        }
        for c in &changes {
            match c {
                CapChange::Cap(t) => {
                    self.capped.insert(t.clone());
                    self.caps += 1;
                }
                CapChange::Uncap(t) => {
                    self.capped.remove(t);
                }
            }
        }
        changes
    }

    /// The caps of an address and of a peer.
    pub fn caps(&self) -> (usize, usize) {
        (self.addr.cap, self.peer.cap)
    }

    fn limit(&self, t: &Tenant) -> Limit {
        match t {
            Tenant::Addr(_) => self.addr,
            Tenant::Peer(_) => self.peer,
        }
    }

    /// A flow charged to `t` was admitted. Returns whether it came over the cap, and a change.
    /// (A flow charged to several tenants is over the cap if it is over any one's: count it
    /// with [`TenantCaps::admit_all`].)
    pub fn admit(&mut self, t: &Tenant) -> (bool, Option<CapChange>) {
        let cap = self.limit(t).cap;
        let n = self.live.entry(t.clone()).or_insert(0);
        let over = *n >= cap;
        *n += 1;
        if *n >= cap && !self.capped.contains(t) {
            self.capped.insert(t.clone());
            self.caps += 1;
            return (over, Some(CapChange::Cap(t.clone())));
        }
        (over, None)
    }

    /// A flow charged to every tenant of `ts`: whether it came over any cap, and the changes.
    pub fn admit_all(&mut self, ts: &[Tenant]) -> (bool, Vec<CapChange>) {
        let mut over = false;
        let mut changes = Vec::new();
        for t in ts {
            let (o, c) = self.admit(t);
            over |= o;
            changes.extend(c);
        }
        if over {
            self.over_cap += 1;
        }
        (over, changes)
    }

    /// A flow of `t` ended.
    pub fn remove(&mut self, t: &Tenant) -> Option<CapChange> {
        let n = self.live.get_mut(t)?;
        *n = n.saturating_sub(1);
        let left = *n;
        if left == 0 {
            self.live.remove(t);
        }
        if left <= self.limit(t).resume_at && self.capped.remove(t) {
            return Some(CapChange::Uncap(t.clone()));
        }
        None
    }

    /// Live flows of `t`.
    pub fn live(&self, t: &Tenant) -> usize {
        self.live.get(t).copied().unwrap_or(0)
    }

    /// Tenants capped now.
    pub fn capped(&self) -> usize {
        self.capped.len()
    }

    /// Which tenants are capped now: what the nft sets must hold.
    pub fn capped_set(&self) -> &HashSet<Tenant> {
        &self.capped
    }

    /// Flows admitted over the cap, and times a tenant was capped, since start.
    pub fn totals(&self) -> (u64, u64) {
        (self.over_cap, self.caps)
    }
}

/// The shell's side of the nft sets: the tenants whose prefixes are in them. The shell brings
/// the sets to the table's current state ([`TenantCaps::capped_set`], read under the table's
/// lock), not by replaying change events (which threads could deliver out of order): each
/// difference is one tenant's element operations, applied on its own so one failure (e.g.
/// two peers' overlapping AllowedIPs) does not hold up the others, and retried until it holds.
#[derive(Debug, Clone, Default)]
pub struct CapSync {
    /// The tenants in the sets, with the prefixes they were added with (a reload may change a
    /// peer's prefixes while it is capped: the old ones are what must be deleted).
    applied: HashMap<Tenant, Vec<IpNet>>,
}

/// Element operations for the nft sets: addresses (`capped4`/`6`) and peers' prefixes
/// (`cappedp4`/`6`, interval sets).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SetOps {
    pub add: Vec<IpNet>,
    pub delete: Vec<IpNet>,
    pub add_peer: Vec<IpNet>,
    pub delete_peer: Vec<IpNet>,
}

impl SetOps {
    pub fn is_empty(&self) -> bool {
        self.add.is_empty()
            && self.delete.is_empty()
            && self.add_peer.is_empty()
            && self.delete_peer.is_empty()
    }
}

/// One tenant to add to (`on`) or remove from the sets, with its element operations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapStep {
    pub tenant: Tenant,
    pub on: bool,
    pub ops: SetOps,
}

impl CapSync {
    /// What differs between the sets and `want` under `map` (removals first), in a stable
    /// order. A tenant in the sets whose prefixes `map` changed is removed and added again.
    pub fn diff(&self, map: &TenantMap, want: &HashSet<Tenant>) -> Vec<CapStep> {
        let mut steps: Vec<CapStep> = Vec::new();
        let mut push = |t: &Tenant, on: bool, p: Vec<IpNet>| {
            let mut ops = SetOps::default();
            match (on, matches!(t, Tenant::Peer(_))) {
                (true, false) => ops.add = p,
                (false, false) => ops.delete = p,
                (true, true) => ops.add_peer = p,
                (false, true) => ops.delete_peer = p,
            }
            steps.push(CapStep {
                tenant: t.clone(),
                on,
                ops,
            });
        };
        let moved = |t: &Tenant, p: &Vec<IpNet>| *p != map.prefixes(t);
        let mut gone: Vec<(&Tenant, &Vec<IpNet>)> = self
            .applied
            .iter()
            .filter(|(t, p)| !want.contains(*t) || moved(t, p))
            .collect();
        let mut new: Vec<&Tenant> = want
            .iter()
            .filter(|t| self.applied.get(*t).is_none_or(|p| moved(t, p)))
            .collect();
        gone.sort_by_key(|(t, _)| format!("{t:?}"));
        new.sort_by_key(|t| format!("{t:?}"));
        for (t, p) in gone {
            push(t, false, p.clone());
        }
        for t in new {
            push(t, true, map.prefixes(t));
        }
        steps
    }

    /// Records that nft took `step`.
    pub fn applied(&mut self, step: &CapStep) {
        if step.on {
            let p = [&step.ops.add[..], &step.ops.add_peer[..]].concat();
            self.applied.insert(step.tenant.clone(), p);
        } else {
            self.applied.remove(&step.tenant);
        }
    }
}

#[cfg(test)]
#[path = "tests_tenants.rs"]
mod tests;
