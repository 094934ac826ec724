//! The bench's OpenVPN setups end to end (root, netns, satlink, Debian's openvpn): `ovpn-udp`
//! (box ↔ POP) and `ovpn-tcp+pepA` (pc ↔ srv, OpenVPN's TCP split by the PEP without VPN on
//! box and POP) brought up by `Bed::up` over a constant 20 Mbit/s, 40 ms RTT link, each
//! carrying a sha256-checked transfer pc → srv at the address the bench's apps use.

#[path = "netns_tunnel_common.rs"]
mod common;

use std::path::Path;
use std::time::Duration;

use common::*;
use starpep_testbed::bench::bed::{Bed, BedSpec};
use starpep_testbed::bench::setup::Setup;
use starpep_tests::{addr, bin_path, require_root, Node};

fn bed(setup: Setup, profile: &Path) -> Bed {
    let set = ["LinkRate=20mbit".to_string(), "LinkRtt=40ms".to_string()];
    Bed::up(&BedSpec {
        setup,
        profile,
        pep_set: &set,
        seed: None,
        server_rtt: Duration::ZERO,
        aligned: false,
        control_log: false,
    })
    .unwrap_or_else(|e| panic!("{}: {e:#}", setup.name()))
}

#[test]
fn openvpn_udp_and_tcp_split_by_a_pep_outside_carry_checked_bytes() {
    if !require_root() {
        return;
    }
    let dir = std::env::temp_dir().join(format!("starpep-ovpn-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let profile = dir.join("leo-20mbit.toml");
    std::fs::write(
        &profile,
        "description = \"constant 20 Mbit/s, 20 ms one-way\"\n\
         [down]\nrate = \"20mbit\"\ndelay = \"20ms\"\nlimit = 500\n\
         [up]\nrate = \"20mbit\"\ndelay = \"20ms\"\nlimit = 500\n",
    )
    .unwrap();

    let udp = bed(Setup::OvpnUdp, &profile);
    assert_eq!(udp.srv_addr(), addr::SRV);
    let srv = udp.srv_addr().to_string();
    transfer(&udp.topo, Node::Pc, Node::Srv, &srv, 5301, 3_000_000);
    drop(udp);

    let tcp = bed(Setup::OvpnTcpPepA, &profile);
    // Apps reach srv through the tunnel, which runs on the end hosts.
    assert_eq!(tcp.srv_addr(), addr::TUN_FAR);
    let srv = tcp.srv_addr().to_string();
    transfer(&tcp.topo, Node::Pc, Node::Srv, &srv, 5302, 3_000_000);
    // The PEP on the box split OpenVPN's own TCP connection (pc → srv:1194).
    let show = tcp
        .topo
        .run_ok(
            Node::Box,
            &[
                bin_path("starpep-client").as_os_str(),
                "show".as_ref(),
                "box-pep-none".as_ref(),
            ],
        )
        .unwrap();
    let flow = format!("-> {}:1194 established", addr::SRV);
    assert!(show.contains(&flow), "no split OpenVPN flow in:\n{show}");
    drop(tcp);
    let _ = std::fs::remove_dir_all(&dir);
}
