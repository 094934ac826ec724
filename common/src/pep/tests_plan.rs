//! Unit tests of plan resolution (defaults per role and tunnel) and of the nftables text.

use super::nft;
use super::plan::*;
use super::relay::Side;
use crate::config::{self, BypassRule, Congestion, PepMode, TunnelMode};

fn split() -> config::Pep {
    config::Pep {
        mode: PepMode::Split,
        ..config::Pep::default()
    }
}

fn input(tun: Option<&str>) -> PlanInput {
    PlanInput {
        name: "box-pep".into(),
        tunnel_if: tun.map(String::from),
        tunnel_mtu: tun.map(|_| 1420),
        destinations_default: vec![
            "10.2.0.0/24".parse().unwrap(),
            "fd00:2::/64".parse().unwrap(),
        ],
        wg_fwmark: None,
        peers: Vec::new(),
    }
}

#[test]
fn box_with_tunnel_intercepts_everything_but_the_tunnel_toward_the_peers_allowed_ips() {
    let p = Plan::new(&split(), Role::Box, &input(Some("box-pep"))).unwrap();
    assert_eq!(p.table, "starpep_box_pep");
    assert_eq!(
        p.intercept,
        Intercept::AllExcept(vec!["box-pep".into(), "lo".into()])
    );
    assert_eq!(p.dst4, vec!["10.2.0.0/24".parse().unwrap()]);
    assert_eq!(p.dst6, vec!["fd00:2::/64".parse().unwrap()]);
    assert_eq!(p.satellite_side, Side::Connected);
    assert_eq!(p.mss_clamp, Some(("box-pep".into(), 1420)));
    assert_eq!(p.satellite_devs, vec!["box-pep".to_string()]);
    assert!(p.transparent_connect);
    // Default satellite buffers: 2 × BDP of 100 Mbit/s × 600 ms = 15 MB.
    assert_eq!(p.satellite.snd_buf, Some(15_000_000));
    assert_eq!(p.satellite.congestion, Some("bbr"));
    assert_eq!(p.terrestrial.congestion, None);
    assert_eq!(p.opts(Side::Connected), &p.satellite);
    assert_eq!(p.opts(Side::Accepted), &p.terrestrial);
}

#[test]
fn pop_intercepts_the_tunnel_and_its_accepted_socket_is_the_satellite_segment() {
    let mut c = split();
    c.congestion = Congestion::Cubic;
    c.lan_congestion = Some(Congestion::Reno);
    c.snat = true;
    let p = Plan::new(&c, Role::Pop, &input(Some("pop-pep"))).unwrap();
    assert_eq!(p.intercept, Intercept::Only(vec!["pop-pep".into()]));
    assert_eq!(
        p.dst4,
        vec!["0.0.0.0/0".parse().unwrap()],
        "POP: every destination"
    );
    assert_eq!(p.dst6, vec!["::/0".parse().unwrap()]);
    assert_eq!(p.satellite_side, Side::Accepted);
    assert_eq!(p.opts(Side::Accepted).congestion, Some("cubic"));
    assert_eq!(p.opts(Side::Connected).congestion, Some("reno"));
    assert!(!p.transparent_connect, "SNAT");
}

#[test]
fn without_tunnel_the_pop_needs_intercept_and_the_box_takes_all_destinations() {
    let mut c = split();
    c.tunnel = TunnelMode::None;
    assert_eq!(
        Plan::new(&c, Role::Pop, &input(None)),
        Err(PlanError::InterceptRequired)
    );
    let b = Plan::new(&c, Role::Box, &input(None)).unwrap();
    assert_eq!(b.intercept, Intercept::AllExcept(vec!["lo".into()]));
    assert_eq!(b.dst4, vec!["0.0.0.0/0".parse().unwrap()]);
    assert_eq!(b.mss_clamp, None);
    assert!(b.satellite_devs.is_empty(), "resolved from routes at start");
    c.intercept = vec!["wan0".into()];
    let p = Plan::new(&c, Role::Pop, &input(None)).unwrap();
    assert_eq!(p.intercept, Intercept::Only(vec!["wan0".into()]));
    assert_eq!(p.satellite_devs, vec!["wan0".to_string()]);
}

#[test]
fn refusals() {
    assert_eq!(
        Plan::new(
            &config::Pep {
                mode: PepMode::Off,
                ..config::Pep::default()
            },
            Role::Box,
            &input(Some("t"))
        ),
        Err(PlanError::ModeOff)
    );
    assert_eq!(
        Plan::new(&split(), Role::Box, &input(None)),
        Err(PlanError::NoTunnel)
    );
    let mut i = input(Some("t"));
    i.wg_fwmark = Some(FWMARK);
    assert!(matches!(
        Plan::new(&split(), Role::Box, &i),
        Err(PlanError::FwMarkCollision(_))
    ));
    let mut c = split();
    c.intercept = vec!["a\"b".into()];
    assert!(matches!(
        Plan::new(&c, Role::Box, &input(Some("t"))),
        Err(PlanError::BadInterface(_))
    ));
}

#[test]
fn destinations_and_bypass_are_merged() {
    let mut c = split();
    c.destinations = vec![
        "10.2.0.0/25".parse().unwrap(),
        "10.2.0.128/25".parse().unwrap(),
        "192.0.2.7/24".parse().unwrap(),
    ];
    c.bypass = vec![
        BypassRule::Port(22),
        BypassRule::Ports(5000, 5100),
        BypassRule::Ports(5050, 5200),
        BypassRule::Port(23),
        BypassRule::Prefix("10.2.0.9/32".parse().unwrap()),
        BypassRule::Prefix("fd00:2::9/128".parse().unwrap()),
    ];
    let p = Plan::new(&c, Role::Box, &input(Some("t"))).unwrap();
    assert_eq!(
        p.dst4,
        vec![
            "10.2.0.0/24".parse().unwrap(),
            "192.0.2.0/24".parse().unwrap()
        ]
    );
    assert!(
        p.dst6.is_empty(),
        "explicit v4-only destinations: no v6 interception"
    );
    assert_eq!(p.bypass_ports, vec![(22, 23), (5000, 5200)]);
    assert_eq!(p.bypass4, vec!["10.2.0.9/32".parse().unwrap()]);
    assert_eq!(p.bypass6, vec!["fd00:2::9/128".parse().unwrap()]);
    let text = nft::ruleset(&p);
    assert!(
        text.contains("elements = { 10.2.0.0/24, 192.0.2.0/24 }"),
        "{text}"
    );
    assert!(
        text.contains("set dst6 { type ipv6_addr; flags interval; }"),
        "{text}"
    );
    assert!(text.contains("elements = { 22-23, 5000-5200 }"), "{text}");
    assert!(text.contains("elements = { fd00:2::9/128 }"), "{text}");
}

#[test]
fn ruleset_orders_the_transparent_rule_first_and_tproxies_only_syns() {
    let p = Plan::new(&split(), Role::Box, &input(Some("box-pep"))).unwrap();
    let text = nft::ruleset(&p);
    let pos = |needle: &str| {
        text.find(needle)
            .unwrap_or_else(|| panic!("{needle:?} missing from\n{text}"))
    };
    assert!(text.starts_with("add table inet starpep_box_pep\ndelete table inet starpep_box_pep\n"));
    let transparent = pos("meta l4proto tcp socket transparent 1 meta mark set 0x5350 accept");
    let syn_jump = pos("tcp flags & (fin | syn | rst | ack) == syn jump new_flow");
    assert!(transparent < syn_jump);
    // SYN-cookie ACKs: only those of intercepted SYNs' tuples, after the socket rule.
    let cookie4 = pos(
        "meta nfproto ipv4 tcp flags & (fin | syn | rst | ack) == ack ip saddr . tcp sport . \
         ip daddr . tcp dport @syn4 counter name cookie_acks tproxy ip to :8399 meta mark set \
         0x5350 accept",
    );
    let cookie6 = pos("ip6 saddr . tcp sport . ip6 daddr . tcp dport @syn6 counter name cookie_acks tproxy ip6 to :8399");
    assert!(transparent < cookie4 && cookie4 < cookie6 && cookie6 < syn_jump);
    assert!(text.contains(
        "set syn4 { type ipv4_addr . inet_service . ipv4_addr . inet_service; size 65536; \
         flags dynamic,timeout; timeout 3s; }"
    ));
    let ifs = pos("iifname { \"box-pep\", \"lo\" } return");
    let local = pos("fib daddr type local return");
    let bypass = pos("tcp dport @bypass_ports return");
    let paused = pos("meta l4proto != @enabled counter name overflow return");
    let capped4 = pos("ip saddr @capped4 counter name capped return");
    let capped6 = pos("ip6 saddr @capped6 counter name capped return");
    // The SYN's tuple is remembered in the rule that intercepts it; with the set full, it
    // passes unsplit (the rule after).
    let tproxy4 = pos(
        "meta nfproto ipv4 meta l4proto tcp update @syn4 { ip saddr . tcp sport . ip daddr . tcp \
         dport } counter name intercepted tproxy ip to :8399 meta mark set 0x5350 accept\n    \
         meta nfproto ipv4 counter name syn_set_full return\n",
    );
    let tproxy6 = pos(
        "meta nfproto ipv6 meta l4proto tcp update @syn6 { ip6 saddr . tcp sport . ip6 daddr . \
         tcp dport } counter name intercepted tproxy ip6 to :8399 meta mark set 0x5350 accept\n    \
         meta nfproto ipv6 counter name syn_set_full return\n  }",
    );
    assert!(ifs < local && local < bypass && bypass < paused && paused < tproxy4);
    assert!(paused < capped4 && capped4 < capped6 && capped6 < tproxy4);
    assert!(tproxy4 < tproxy6);
    assert!(text.contains("  counter syn_set_full { }\n"));
    assert!(text.contains(
        "oifname \"box-pep\" tcp flags & (syn | rst) == syn tcp option maxseg size set rt mtu"
    ));
    assert!(text.contains("meta nfproto ipv4 tcp flags & (syn | rst) == syn tcp option maxseg size > 1380 tcp option maxseg size set 1380"));
    assert!(text.contains("size > 1360 tcp option maxseg size set 1360"));
    // The listener's own port refuses what TPROXY did not steer there.
    assert!(text.contains(
        "type filter hook input priority mangle; policy accept;\n    meta l4proto tcp tcp dport \
         8399 fib daddr type local counter name own_port meta mark set 0 reject with tcp reset"
    ));
    assert_eq!(text.matches('{').count(), text.matches('}').count());
}

#[test]
fn the_per_client_share_defaults_by_role_and_charges_peers_at_the_pop() {
    use super::tenants::Tenant;
    let b = Plan::new(&split(), Role::Box, &input(Some("box-pep"))).unwrap();
    assert_eq!((b.max_flows_per_host, b.max_flows_per_peer), (256, 4096));
    let mut i = input(Some("pop-pep"));
    i.peers = vec![vec!["10.1.0.0/24".parse().unwrap()]];
    let p = Plan::new(&split(), Role::Pop, &i).unwrap();
    assert_eq!((p.max_flows_per_host, p.max_flows_per_peer), (256, 1024));
    let a = "10.1.0.7".parse().unwrap();
    assert_eq!(p.tenants.tenants(a), vec![Tenant::Addr(a), Tenant::Peer(0)]);
    // The box never charges peers, whatever the daemon passes.
    let b = Plan::new(&split(), Role::Box, &i).unwrap();
    assert_eq!(b.tenants.tenants(a), vec![Tenant::Addr(a)]);
    // Configured, and never above MaxFlows.
    let mut c = split();
    c.max_flows = 100;
    c.max_flows_per_client = Some(500);
    c.max_flows_per_host = Some(10);
    let p = Plan::new(&c, Role::Pop, &i).unwrap();
    assert_eq!((p.max_flows_per_host, p.max_flows_per_peer), (10, 100));
    c.max_flows_per_client = Some(8);
    let b = Plan::new(&c, Role::Box, &i).unwrap();
    assert_eq!((b.max_flows_per_host, b.max_flows_per_peer), (8, 100));
}

#[test]
fn capped_clients_become_set_elements_per_family() {
    use super::tenants::SetOps;
    let ops = SetOps {
        add: vec![
            "10.1.0.3/32".parse().unwrap(),
            "fd00:1::3/128".parse().unwrap(),
        ],
        delete: vec!["10.1.0.9/32".parse().unwrap()],
        add_peer: vec!["10.1.0.0/24".parse().unwrap()],
        delete_peer: vec!["fd00:1::/64".parse().unwrap()],
    };
    assert_eq!(
        nft::set_capped("t", &ops).unwrap(),
        "delete element inet t capped4 { 10.1.0.9 }\n\
         delete element inet t cappedp6 { fd00:1::/64 }\n\
         add element inet t capped4 { 10.1.0.3 }\n\
         add element inet t capped6 { fd00:1::3 }\n\
         add element inet t cappedp4 { 10.1.0.0/24 }\n"
    );
    assert_eq!(nft::set_capped("t", &SetOps::default()), None);
}

#[test]
fn pause_resume_and_delete_commands() {
    assert_eq!(
        nft::set_intercepting("starpep_x", false),
        "flush set inet starpep_x enabled\n"
    );
    assert_eq!(
        nft::set_intercepting("starpep_x", true),
        "add element inet starpep_x enabled { tcp }\n"
    );
    assert_eq!(
        nft::delete("starpep_x"),
        "add table inet starpep_x\ndelete table inet starpep_x\n"
    );
    let mut c = split();
    c.tunnel = TunnelMode::None;
    c.intercept = vec!["wan0".into()];
    let p = Plan::new(&c, Role::Pop, &input(None)).unwrap();
    let text = nft::ruleset(&p);
    assert!(text.contains("iifname != { \"wan0\" } return"), "{text}");
    assert!(
        !text.contains("chain forward"),
        "no tunnel, no clamp: {text}"
    );
}

#[test]
fn table_names_are_nft_identifiers() {
    assert_eq!(table_name("wg0"), "starpep_wg0");
    assert_eq!(table_name("a.b-c=d+e"), "starpep_a_b_c_d_e");
}

#[test]
fn the_box_without_tunnel_never_intercepts_on_its_satellite_devices() {
    let mut c = split();
    c.tunnel = TunnelMode::None;
    let p = Plan::new(&c, Role::Box, &input(None))
        .unwrap()
        .with_satellite_devs(&["wan0".into(), "wan0".into()]);
    assert_eq!(p.satellite_devs, vec!["wan0".to_string()]);
    assert_eq!(
        p.intercept,
        Intercept::AllExcept(vec!["lo".into(), "wan0".into()])
    );
    // An explicit Intercept list stays as configured.
    c.intercept = vec!["lan0".into()];
    let p = Plan::new(&c, Role::Box, &input(None))
        .unwrap()
        .with_satellite_devs(&["wan0".into()]);
    assert_eq!(p.intercept, Intercept::Only(vec!["lan0".into()]));
}

#[test]
fn fast_open_connects_at_the_box_and_listens_at_the_pop_without_cookie_only_behind_the_tunnel() {
    let box_ = Plan::new(&split(), Role::Box, &input(Some("box-pep"))).unwrap();
    assert_eq!(box_.fast_open, FastOpen::Connect);
    let pop = Plan::new(&split(), Role::Pop, &input(Some("pop-pep"))).unwrap();
    assert_eq!(pop.fast_open, FastOpen::Listen { cookie: false });
    let bare = config::Pep {
        tunnel: TunnelMode::None,
        intercept: vec!["sat0".into()],
        ..split()
    };
    let pop = Plan::new(&bare, Role::Pop, &input(None)).unwrap();
    assert_eq!(pop.fast_open, FastOpen::Listen { cookie: true });
    let off = config::Pep {
        fast_open: false,
        ..split()
    };
    for role in [Role::Box, Role::Pop] {
        let p = Plan::new(&off, role, &input(Some("t0"))).unwrap();
        assert_eq!(p.fast_open, FastOpen::Off);
    }
}
