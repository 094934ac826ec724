//! Unit tests of the per-client share of the flow table (tenants, caps, nft set sync).

use std::net::IpAddr;

use super::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn net(s: &str) -> IpNet {
    s.parse().unwrap()
}

#[test]
fn the_box_charges_each_address_and_the_pop_each_peer() {
    let the_box = TenantMap::default();
    assert_eq!(
        the_box.tenants(ip("10.1.0.2")),
        vec![Tenant::Addr(ip("10.1.0.2"))]
    );
    // A dual-stack listener's IPv4-mapped address is the IPv4 host.
    assert_eq!(
        the_box.tenants(ip("::ffff:10.1.0.2")),
        vec![Tenant::Addr(ip("10.1.0.2"))]
    );
    assert_eq!(
        the_box.prefixes(&Tenant::Addr(ip("fd00:1::2"))),
        vec![net("fd00:1::2/128")]
    );

    let pop = TenantMap::new(vec![
        vec![net("10.8.0.2/32"), net("10.1.0.0/24"), net("fd00:1::/64")],
        vec![net("10.1.0.128/25")],
    ]);
    assert_eq!(
        pop.tenants(ip("10.1.0.2")),
        vec![Tenant::Addr(ip("10.1.0.2")), Tenant::Peer(0)]
    );
    assert_eq!(pop.peer(ip("fd00:1::9")), Some(Tenant::Peer(0)));
    // Longest prefix wins, as WireGuard's cryptokey routing does.
    assert_eq!(pop.peer(ip("10.1.0.200")), Some(Tenant::Peer(1)));
    assert_eq!(
        pop.tenants(ip("192.0.2.1")),
        vec![Tenant::Addr(ip("192.0.2.1"))]
    );
    assert_eq!(pop.prefixes(&Tenant::Peer(1)), vec![net("10.1.0.128/25")]);
}

#[test]
fn a_tenant_is_capped_at_its_share_and_uncapped_below_the_low_watermark() {
    let mut c = TenantCaps::new(32, usize::MAX);
    let a = Tenant::Addr(ip("10.1.0.2"));
    let b = Tenant::Addr(ip("10.1.0.3"));
    for i in 0..31 {
        assert_eq!(c.admit(&a), (false, None), "flow {i}");
    }
    assert_eq!(c.admit(&a), (false, Some(CapChange::Cap(a.clone()))));
    // SYNs that raced the nft update still come in: counted, no second change.
    assert_eq!(c.admit_all(std::slice::from_ref(&a)), (true, vec![]));
    assert_eq!(c.live(&a), 33);
    // Another tenant is not affected.
    assert_eq!(c.admit(&b), (false, None));
    assert_eq!(c.capped(), 1);
    // 32 - 32/16 - 1 = 29: uncapped once a holds 29 flows.
    let mut uncapped_at = None;
    for _ in 0..10 {
        if let Some(ch) = c.remove(&a) {
            assert_eq!(ch, CapChange::Uncap(a.clone()));
            uncapped_at = Some(c.live(&a));
            break;
        }
    }
    assert_eq!(uncapped_at, Some(29));
    assert_eq!(c.capped(), 0);
    assert_eq!(c.totals(), (1, 1));
    // Removing flows of an unknown tenant changes nothing.
    assert_eq!(c.remove(&Tenant::Peer(7)), None);
}

#[test]
fn a_cap_of_one_caps_at_the_first_flow_and_uncaps_when_it_ends() {
    let mut c = TenantCaps::new(usize::MAX, 1);
    let a = Tenant::Peer(0);
    assert_eq!(c.admit(&a), (false, Some(CapChange::Cap(a.clone()))));
    assert_eq!(c.remove(&a), Some(CapChange::Uncap(a.clone())));
    assert_eq!(c.live(&a), 0);
}

#[test]
fn at_the_pop_a_host_is_capped_before_its_peer_and_the_peer_before_the_table() {
    // Per host 4, per peer 6: host 1 stops at 4, host 2 brings the peer to 6.
    let mut c = TenantCaps::new(4, 6);
    let h1 = [Tenant::Addr(ip("10.1.0.2")), Tenant::Peer(0)];
    let h2 = [Tenant::Addr(ip("10.1.0.3")), Tenant::Peer(0)];
    for _ in 0..3 {
        assert_eq!(c.admit_all(&h1), (false, vec![]));
    }
    assert_eq!(
        c.admit_all(&h1),
        (false, vec![CapChange::Cap(h1[0].clone())])
    );
    assert_eq!(c.admit_all(&h2), (false, vec![]));
    assert_eq!(
        c.admit_all(&h2),
        (false, vec![CapChange::Cap(Tenant::Peer(0))])
    );
    assert_eq!(c.capped(), 2);
    // Another peer's host is not affected.
    assert_eq!(
        c.admit_all(&[Tenant::Addr(ip("10.3.0.2")), Tenant::Peer(1)]),
        (false, vec![])
    );
    assert_eq!(c.caps(), (4, 6));
}

#[test]
fn set_sync_brings_the_sets_to_the_wanted_state_one_tenant_at_a_time() {
    use std::collections::HashSet;
    let map = TenantMap::new(vec![vec![
        net("10.1.0.0/24"),
        net("10.1.0.0/25"),
        net("fd00:1::/64"),
    ]]);
    // A peer's nested prefixes are merged: its elements never overlap.
    assert_eq!(
        map.prefixes(&Tenant::Peer(0)),
        vec![net("10.1.0.0/24"), net("fd00:1::/64")]
    );
    let p = Tenant::Peer(0);
    let a = Tenant::Addr(ip("192.0.2.1"));
    let mut s = CapSync::default();
    assert!(s.diff(&map, &HashSet::new()).is_empty());
    let want: HashSet<Tenant> = [p.clone(), a.clone()].into_iter().collect();
    let steps = s.diff(&map, &want);
    assert_eq!(steps.len(), 2);
    let peer = steps.iter().find(|x| x.tenant == p).unwrap();
    assert!(peer.on);
    assert_eq!(
        peer.ops.add_peer,
        vec![net("10.1.0.0/24"), net("fd00:1::/64")]
    );
    let addr = steps.iter().find(|x| x.tenant == a).unwrap();
    assert_eq!(addr.ops.add, vec![net("192.0.2.1/32")]);
    // Only the address step went through (say the peer's failed): the peer is retried.
    s.applied(addr);
    let again = s.diff(&map, &want);
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].tenant, p);
    s.applied(&again[0]);
    assert!(s.diff(&map, &want).is_empty());
    // Uncapped: removed, and never a delete of what is not there.
    let want: HashSet<Tenant> = [a.clone()].into_iter().collect();
    let steps = s.diff(&map, &want);
    assert_eq!(steps.len(), 1);
    assert!(!steps[0].on);
    assert_eq!(
        steps[0].ops.delete_peer,
        vec![net("10.1.0.0/24"), net("fd00:1::/64")]
    );
    s.applied(&steps[0]);
    assert!(s.diff(&map, &want).is_empty());
}
