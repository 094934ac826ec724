//! What a reload changes in the peer table (pure), as `wg syncconf` decides it: peers are told
//! apart by public key; a peer whose key stays keeps its session unless what the session was
//! made with (preshared key, persistent keepalive) changed.

use std::collections::{HashMap, HashSet};

use super::peer::{short_key, PeerSpec};

/// How one kept peer changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerChange {
    /// The peer as the new file describes it.
    pub spec: PeerSpec,
    /// Its AllowedIPs changed (cryptokey routing, routes, the PEP's per-peer accounting).
    pub allowed_ips: bool,
    /// Its configured `Endpoint` changed: the peer is sent to the new one.
    pub endpoint: bool,
    /// Its preshared key or persistent keepalive changed: a new session (one handshake).
    pub session: bool,
}

/// The difference between the running peers and a file's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerDiff {
    /// In the file only: they start (new sessions).
    pub added: Vec<PeerSpec>,
    /// Running only: they stop (public keys).
    pub removed: Vec<[u8; 32]>,
    /// In both, with a difference.
    pub changed: Vec<PeerChange>,
    /// In both, identical: untouched (public keys).
    pub unchanged: Vec<[u8; 32]>,
}

impl PeerDiff {
    /// Nothing changes.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

/// The difference from `old` to `new` (each in file order; the result keeps `new`'s order, and
/// `old`'s for removals). A public key listed twice in `new` is an error.
pub fn diff_peers(old: &[PeerSpec], new: &[PeerSpec]) -> Result<PeerDiff, String> {
    let mut seen = HashSet::new();
    for p in new {
        if !seen.insert(p.public_key) {
            return Err(format!("peer {}: listed twice", short_key(&p.public_key)));
        }
    }
    let running: HashMap<[u8; 32], &PeerSpec> = old.iter().map(|p| (p.public_key, p)).collect();
    let mut d = PeerDiff::default();
    for p in new {
        match running.get(&p.public_key) {
            None => d.added.push(p.clone()),
            Some(o) if *o == p => d.unchanged.push(p.public_key),
            Some(o) => d.changed.push(PeerChange {
                spec: p.clone(),
                allowed_ips: o.allowed_ips != p.allowed_ips,
                endpoint: o.endpoint != p.endpoint,
                session: o.preshared_key != p.preshared_key
                    || o.persistent_keepalive != p.persistent_keepalive,
            }),
        }
    }
    d.removed = old
        .iter()
        .filter(|p| !seen.contains(&p.public_key))
        .map(|p| p.public_key)
        .collect();
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tunnel::tests::{key, spec};

    #[test]
    fn peers_are_matched_by_key_and_each_difference_is_named() {
        let (a, b, c, d) = (key(1).1, key(2).1, key(3).1, key(4).1);
        let old = vec![
            spec(a, None, &["10.1.0.0/24"]),
            spec(b, None, &["10.2.0.0/24"]),
            spec(c, Some("10.99.0.3:1"), &["10.3.0.0/24"]),
        ];
        let mut c2 = spec(c, Some("10.99.0.4:1"), &["10.3.0.0/24", "10.33.0.0/24"]);
        c2.persistent_keepalive = Some(25);
        let new = vec![
            spec(d, None, &["10.4.0.0/24"]),
            c2.clone(),
            spec(a, None, &["10.1.0.0/24"]),
        ];
        let diff = diff_peers(&old, &new).unwrap();
        assert_eq!(diff.added, vec![spec(d, None, &["10.4.0.0/24"])]);
        assert_eq!(diff.removed, vec![b]);
        assert_eq!(diff.unchanged, vec![a], "order in the file does not matter");
        assert_eq!(
            diff.changed,
            vec![PeerChange {
                spec: c2,
                allowed_ips: true,
                endpoint: true,
                session: true,
            }]
        );
        assert!(!diff.is_empty());
    }

    #[test]
    fn only_allowed_ips_changed_keeps_the_session() {
        let a = key(1).1;
        let old = vec![spec(a, None, &["10.1.0.0/24"])];
        let new = vec![spec(a, None, &["10.1.0.0/25"])];
        let d = diff_peers(&old, &new).unwrap();
        assert_eq!(d.changed.len(), 1);
        let ch = &d.changed[0];
        assert!(ch.allowed_ips && !ch.endpoint && !ch.session, "{ch:?}");
        let mut psk = new[0].clone();
        psk.preshared_key = Some([7; 32].into());
        let d = diff_peers(&new, &[psk]).unwrap();
        assert!(d.changed[0].session && !d.changed[0].allowed_ips);
    }

    #[test]
    fn the_same_file_changes_nothing_and_a_duplicate_key_is_refused() {
        let (a, b) = (key(1).1, key(2).1);
        let peers = vec![spec(a, None, &["10.1.0.0/24"]), spec(b, None, &[])];
        let d = diff_peers(&peers, &peers).unwrap();
        assert!(d.is_empty());
        assert_eq!(d.unchanged, vec![a, b]);
        let dup = vec![peers[0].clone(), peers[0].clone()];
        assert!(diff_peers(&peers, &dup)
            .unwrap_err()
            .contains("listed twice"));
        let d = diff_peers(&peers, &[]).unwrap();
        assert_eq!(d.removed, vec![a, b]);
    }
}
