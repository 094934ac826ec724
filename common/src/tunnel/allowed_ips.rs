//! Cryptokey routing table (pure): AllowedIPs prefixes → value, longest-prefix match, v4 and v6.
//!
//! One hash map per prefix length present, probed from the longest length down: a lookup costs at
//! most one probe per distinct length (one probe for a box with `0.0.0.0/0`), inserts are rare.

use std::collections::HashMap;
use std::net::IpAddr;

use ipnet::IpNet;

/// Prefix → value table with longest-prefix-match lookups, as WireGuard's AllowedIPs trie.
/// Inserting a prefix that is already present replaces its value (the last peer wins, as in `wg`).
#[derive(Debug, Clone)]
pub struct AllowedIps<T> {
    v4: Vec<(u8, HashMap<u32, T>)>,
    v6: Vec<(u8, HashMap<u128, T>)>,
}

impl<T> Default for AllowedIps<T> {
    fn default() -> Self {
        AllowedIps {
            v4: Vec::new(),
            v6: Vec::new(),
        }
    }
}

fn mask4(a: u32, len: u8) -> u32 {
    if len == 0 {
        0
    } else {
        a & (u32::MAX << (32 - u32::from(len)))
    }
}

fn mask6(a: u128, len: u8) -> u128 {
    if len == 0 {
        0
    } else {
        a & (u128::MAX << (128 - u32::from(len)))
    }
}

/// Returns the map for `len`, creating it and keeping the lengths sorted longest first.
fn bucket<K, T>(buckets: &mut Vec<(u8, HashMap<K, T>)>, len: u8) -> &mut HashMap<K, T> {
    let pos = match buckets.iter().position(|(l, _)| *l <= len) {
        Some(p) if buckets[p].0 == len => p,
        Some(p) => {
            buckets.insert(p, (len, HashMap::new()));
            p
        }
        None => {
            buckets.push((len, HashMap::new()));
            buckets.len() - 1
        }
    };
    &mut buckets[pos].1
}

impl<T> AllowedIps<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Inserts `net` (host bits are ignored); returns the value it replaced, if any.
    pub fn insert(&mut self, net: IpNet, value: T) -> Option<T> {
        match net {
            IpNet::V4(n) => {
                let len = n.prefix_len();
                bucket(&mut self.v4, len).insert(mask4(u32::from(n.addr()), len), value)
            }
            IpNet::V6(n) => {
                let len = n.prefix_len();
                bucket(&mut self.v6, len).insert(mask6(u128::from(n.addr()), len), value)
            }
        }
    }

    /// The value of the longest prefix containing `addr`.
    pub fn lookup(&self, addr: IpAddr) -> Option<&T> {
        match addr {
            IpAddr::V4(a) => {
                let a = u32::from(a);
                self.v4.iter().find_map(|(len, m)| m.get(&mask4(a, *len)))
            }
            IpAddr::V6(a) => {
                let a = u128::from(a);
                self.v6.iter().find_map(|(len, m)| m.get(&mask6(a, *len)))
            }
        }
    }

    /// The exact entry for `net`, if present.
    pub fn get(&self, net: IpNet) -> Option<&T> {
        match net {
            IpNet::V4(n) => {
                let len = n.prefix_len();
                let m = &self.v4.iter().find(|(l, _)| *l == len)?.1;
                m.get(&mask4(u32::from(n.addr()), len))
            }
            IpNet::V6(n) => {
                let len = n.prefix_len();
                let m = &self.v6.iter().find(|(l, _)| *l == len)?.1;
                m.get(&mask6(u128::from(n.addr()), len))
            }
        }
    }

    /// Number of prefixes stored.
    pub fn len(&self) -> usize {
        self.v4.iter().map(|(_, m)| m.len()).sum::<usize>()
            + self.v6.iter().map(|(_, m)| m.len()).sum::<usize>()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> IpNet {
        s.parse().unwrap()
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn longest_prefix_wins_v4() {
        let mut t = AllowedIps::new();
        t.insert(net("0.0.0.0/0"), "default");
        t.insert(net("10.0.0.0/8"), "ten");
        t.insert(net("10.2.0.0/24"), "srv");
        t.insert(net("10.2.0.7/32"), "host");
        assert_eq!(t.lookup(ip("10.2.0.7")), Some(&"host"));
        assert_eq!(t.lookup(ip("10.2.0.8")), Some(&"srv"));
        assert_eq!(t.lookup(ip("10.3.0.1")), Some(&"ten"));
        assert_eq!(t.lookup(ip("192.0.2.1")), Some(&"default"));
        assert_eq!(t.lookup(ip("fd00::1")), None);
        assert_eq!(t.len(), 4);
    }

    #[test]
    fn longest_prefix_wins_v6_and_host_bits_are_ignored() {
        let mut t = AllowedIps::new();
        t.insert(net("fd00:2::55/64"), 1);
        t.insert(net("fd00::/16"), 2);
        t.insert(net("::/0"), 3);
        assert_eq!(t.lookup(ip("fd00:2::2")), Some(&1));
        assert_eq!(t.lookup(ip("fd00:3::2")), Some(&2));
        assert_eq!(t.lookup(ip("2001:db8::1")), Some(&3));
        assert_eq!(t.lookup(ip("10.0.0.1")), None);
        assert_eq!(t.get(net("fd00:2::/64")), Some(&1));
    }

    #[test]
    fn reinserting_a_prefix_replaces_its_value() {
        let mut t = AllowedIps::new();
        assert_eq!(t.insert(net("10.1.0.0/24"), 'a'), None);
        assert_eq!(t.insert(net("10.1.0.9/24"), 'b'), Some('a'));
        assert_eq!(t.lookup(ip("10.1.0.3")), Some(&'b'));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn empty_table_matches_nothing() {
        let t: AllowedIps<u8> = AllowedIps::new();
        assert!(t.is_empty());
        assert_eq!(t.lookup(ip("0.0.0.0")), None);
        assert_eq!(t.lookup(ip("::")), None);
    }

    #[test]
    fn lengths_stay_sorted_whatever_the_insert_order() {
        let mut t = AllowedIps::new();
        for (i, n) in [
            "10.0.0.0/8",
            "10.1.2.0/24",
            "0.0.0.0/0",
            "10.1.0.0/16",
            "10.1.2.3/32",
        ]
        .iter()
        .enumerate()
        {
            t.insert(net(n), i);
        }
        assert_eq!(t.lookup(ip("10.1.2.3")), Some(&4));
        assert_eq!(t.lookup(ip("10.1.2.4")), Some(&1));
        assert_eq!(t.lookup(ip("10.1.3.4")), Some(&3));
        assert_eq!(t.lookup(ip("10.9.3.4")), Some(&0));
        assert_eq!(t.lookup(ip("11.0.0.1")), Some(&2));
    }
}
