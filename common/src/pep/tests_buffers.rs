//! Unit tests of the per-flow share of a link's socket buffers (`buffers.rs`) and of the flow
//! table's per-link activity.

use std::net::SocketAddr;
use std::time::Instant;

use ipnet::IpNet;

use super::buffers::*;
use super::flows::{FlowKey, FlowTable};
use super::relay::FlowState;
use super::tenants::TenantMap;

const LINK: LinkBuffers = LinkBuffers {
    snd: 1_500_000,
    rcv: 3_000_000,
};

#[test]
fn one_flow_alone_gets_the_whole_link_and_many_share_it_above_a_floor() {
    assert_eq!(
        LINK.per_flow(1),
        FlowBuffers {
            snd: 1_500_000,
            rcv: 3_000_000
        }
    );
    assert_eq!(LINK.per_flow(0), LINK.per_flow(1));
    assert_eq!(LINK.per_flow(10).snd, 150_000);
    assert_eq!(LINK.per_flow(10).rcv, 300_000);
    assert_eq!(LINK.per_flow(1000).snd, FLOOR);
    // A link smaller than the floor is never exceeded.
    let small = LinkBuffers {
        snd: 16_384,
        rcv: 16_384,
    };
    assert_eq!(small.per_flow(1).snd, 16_384);
    assert_eq!(small.per_flow(50).snd, 16_384);
}

#[test]
fn a_buffer_moves_only_when_its_bound_is_off_by_more_than_the_slack() {
    assert_eq!(resize(None, 100_000), Some(100_000));
    assert_eq!(resize(Some(100_000), 100_000), None);
    assert_eq!(resize(Some(100_000), 51_000), None);
    assert_eq!(resize(Some(100_000), 199_000), None);
    assert_eq!(resize(Some(100_000), 49_000), Some(49_000));
    assert_eq!(resize(Some(100_000), 201_000), Some(201_000));
}

fn peers(n: u8) -> TenantMap {
    TenantMap::new(
        (0..n)
            .map(|i| vec![format!("10.8.{i}.0/24").parse::<IpNet>().unwrap()])
            .collect(),
    )
}

fn key(peer: u8, port: u16) -> FlowKey {
    FlowKey {
        client: SocketAddr::from(([10, 8, peer, 2], port)),
        server: SocketAddr::from(([10, 2, 0, 2], 80)),
    }
}

#[test]
fn the_pop_shares_each_peers_link_among_that_peers_active_flows_only() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(100).with_client_caps(100, 100, peers(2));
    let a: Vec<_> = (0..4).map(|i| t.admit(key(0, 1000 + i), t0).id).collect();
    let b = t.admit(key(1, 2000), t0).id;
    assert_eq!(t.sharing(a[0]), 4, "peer 0: four new flows, all active");
    assert_eq!(t.sharing(b), 1, "peer 1's flow has its link alone");
    // Three of peer 0's flows go idle: the busy one gets the link; an idle one shares it
    // with all four.
    for id in &a[1..] {
        t.set_active(*id, false);
    }
    assert_eq!(t.sharing(a[0]), 1);
    assert_eq!(t.sharing(a[1]), 4);
    assert_eq!(t.set_active(a[1], true), 2, "a flow wakes up");
    t.remove(a[1], FlowState::Closed, 0, 0);
    t.remove(a[2], FlowState::Closed, 0, 0);
    assert_eq!(
        t.sharing(a[0]),
        1,
        "removing idle and active flows keeps the counts"
    );
    assert_eq!(t.sharing(a[3]), 2);
    assert_eq!(t.sharing(999), 1, "unknown flow");
}

#[test]
fn the_box_shares_its_one_link_among_every_active_flow() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(100);
    let ids: Vec<_> = (0..3).map(|i| t.admit(key(0, 1000 + i), t0).id).collect();
    assert_eq!(t.sharing(ids[2]), 3);
}

/// 1000 flows on 100 links arriving one by one, each flow re-sizing itself after every arrival
/// (as its once-a-second tick would), then going idle: every flow is within the slack of its
/// share, and the buffers of one link add up to at most `SLACK` × the link's, busy or idle.
#[test]
fn a_full_table_holds_at_most_the_slack_times_each_links_buffer() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(2000).with_client_caps(2000, 2000, peers(100));
    let mut set: Vec<(u64, u8, Option<usize>)> = Vec::new();
    for i in 0..1000u16 {
        let peer = (i % 100) as u8;
        let id = t.admit(key(peer, 1000 + i), t0).id;
        set.push((id, peer, None));
        for (id, _, cur) in set.iter_mut() {
            let bound = LINK.per_flow(t.sharing(*id)).snd;
            if let Some(v) = resize(*cur, bound) {
                *cur = Some(v);
            }
        }
    }
    let check = |set: &[(u64, u8, Option<usize>)], per_flow: usize| {
        for peer in 0..100u8 {
            let sum: usize = set
                .iter()
                .filter(|(_, p, _)| *p == peer)
                .map(|(_, _, c)| c.unwrap())
                .sum();
            assert!(sum <= SLACK * LINK.snd, "peer {peer}: {sum}");
        }
        let biggest = set.iter().map(|(_, _, c)| c.unwrap()).max().unwrap();
        assert!(biggest <= SLACK * per_flow, "{biggest}");
    };
    check(&set, LINK.per_flow(10).snd);
    // All go idle: an idle flow shares its link with all the link's flows.
    for (id, _, cur) in set.iter_mut() {
        let bound = LINK.per_flow(t.set_active(*id, false)).snd;
        if let Some(v) = resize(*cur, bound) {
            *cur = Some(v);
        }
    }
    check(&set, LINK.per_flow(10).snd);
}
