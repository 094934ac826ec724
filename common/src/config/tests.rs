//! Unit tests of the config parser: good files (the shipped examples, stock wg-quick files).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use super::*;

const BOX_PRIV: &str = "KLAp2JYd9y2hS/9Nshf5HCHbC7yFnLRaMOqg8t9DvWQ=";
const BOX_PUB: &str = "BfWp/tA3pEaOVpsCCBHA384Wnz52+yI9vPrF5IIJlGg=";
const POP_PUB: &str = "39V847lFYsv0gkIqcOIlDp6Cd1qRM7A05Q/rnzZorSI=";

pub(super) fn configs_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs")
}

fn nets(list: &[&str]) -> Vec<ipnet::IpNet> {
    list.iter().map(|s| s.parse().unwrap()).collect()
}

pub(super) fn ok(text: &str) -> Config {
    match parse("t.conf", text) {
        Ok(c) => c,
        Err(e) => panic!("unexpected errors:\n{e}"),
    }
}

#[test]
fn box_example_from_disk() {
    let c = load(&configs_dir().join("box.conf")).unwrap();
    assert!(c.file.ends_with("box.conf"));
    assert_eq!(c.interface.private_key.to_string(), BOX_PRIV);
    assert_eq!(c.interface.private_key.public_key().to_string(), BOX_PUB);
    assert_eq!(
        c.interface.addresses,
        nets(&["10.8.0.2/24", "fd00:8::2/64"])
    );
    assert_eq!(c.interface.listen_port, None);
    assert_eq!(c.peers.len(), 1);
    let p = &c.peers[0];
    assert_eq!(p.public_key.to_string(), POP_PUB);
    let ep = p.endpoint.clone().unwrap();
    assert_eq!((ep.host.as_str(), ep.port), ("10.99.0.2", 51820));
    assert_eq!(
        ep.resolve().unwrap(),
        "10.99.0.2:51820".parse::<SocketAddr>().unwrap()
    );
    assert_eq!(
        p.allowed_ips,
        nets(&["10.2.0.0/24", "fd00:2::/64", "10.8.0.0/24", "fd00:8::/64"])
    );
    assert_eq!(p.persistent_keepalive, Some(25));
    assert!(c.pep.is_none());
    assert_eq!(
        interface_name(&configs_dir().join("box.conf")).unwrap(),
        "box"
    );
}

#[test]
fn pop_example_from_disk() {
    let c = load(&configs_dir().join("pop.conf")).unwrap();
    assert_eq!(c.interface.private_key.public_key().to_string(), POP_PUB);
    assert_eq!(
        c.interface.addresses,
        nets(&["10.8.0.1/24", "fd00:8::1/64"])
    );
    assert_eq!(c.interface.listen_port, Some(51820));
    assert_eq!(c.peers.len(), 1);
    let p = &c.peers[0];
    assert_eq!(p.public_key.to_string(), BOX_PUB);
    assert_eq!(p.endpoint, None);
    assert_eq!(
        p.allowed_ips,
        nets(&["10.8.0.2/32", "fd00:8::2/128", "10.1.0.0/24", "fd00:1::/64"])
    );
    assert_eq!(p.persistent_keepalive, None);
    assert!(c.pep.is_none());
}

#[test]
fn stock_wg_quick_file() {
    let c = ok("# a typical wg-quick file\n\
        [Interface]\n\
        Address = 10.200.0.5/32\n\
        PrivateKey = SNZQiNA/ac1lTFbYYPP4AfStPbCfpGG0ZwHXSYJPMXY=\n\
        DNS = 1.1.1.1, 2606:4700:4700::1111, example.com\n\
        DNS = 9.9.9.9\n\
        MTU = 1420\n\
        Table = 1234\n\
        FwMark = 0xca6c\n\
        SaveConfig = true\n\
        PreUp = echo pre\n\
        PostUp = iptables -A FORWARD -i %i -j ACCEPT; iptables -t nat -A POSTROUTING -o eth0 -j MASQUERADE\n\
        PostUp = echo second\n\
        PreDown = echo predown\n\
        PostDown = iptables -D FORWARD -i %i -j ACCEPT\n\
        \n\
        [Peer]\n\
        PublicKey = BfWp/tA3pEaOVpsCCBHA384Wnz52+yI9vPrF5IIJlGg=\n\
        PresharedKey = KLAp2JYd9y2hS/9Nshf5HCHbC7yFnLRaMOqg8t9DvWQ=\n\
        AllowedIPs = 0.0.0.0/0, ::/0\n\
        Endpoint = vpn.example.com:51820\n\
        PersistentKeepalive = off\n");
    let i = &c.interface;
    assert_eq!(
        i.dns,
        ["1.1.1.1", "2606:4700:4700::1111", "example.com", "9.9.9.9"]
    );
    assert_eq!(i.mtu, Some(1420));
    assert_eq!(i.table, Table::Id(1234));
    assert_eq!(i.fwmark, Some(0xca6c));
    assert!(i.save_config);
    assert_eq!(i.pre_up, ["echo pre"]);
    assert_eq!(i.post_up.len(), 2);
    assert!(i.post_up[0].ends_with("-j MASQUERADE"));
    assert_eq!(i.pre_down, ["echo predown"]);
    assert_eq!(i.post_down, ["iptables -D FORWARD -i %i -j ACCEPT"]);
    let p = &c.peers[0];
    assert_eq!(p.line, 17);
    assert!(p.preshared_key.is_some());
    assert_eq!(p.allowed_ips, nets(&["0.0.0.0/0", "::/0"]));
    assert_eq!(p.endpoint.as_ref().unwrap().host, "vpn.example.com");
    assert_eq!(p.persistent_keepalive, None);
}

#[test]
fn table_values() {
    for (v, t) in [
        ("off", Table::Off),
        ("AUTO", Table::Auto),
        ("main", Table::Id(254)),
        ("7", Table::Id(7)),
    ] {
        let c = ok(&format!(
            "[Interface]\nPrivateKey = {BOX_PRIV}\nTable = {v}\n"
        ));
        assert_eq!(c.interface.table, t, "Table = {v}");
    }
    assert_eq!(
        ok(&format!("[Interface]\nPrivateKey = {BOX_PRIV}\n"))
            .interface
            .table,
        Table::Auto
    );
}

#[test]
fn ipv6_endpoint_and_resolve() {
    let c = ok(&format!(
        "[Interface]\nPrivateKey = {BOX_PRIV}\n[Peer]\nPublicKey = {POP_PUB}\n\
         Endpoint = [fd00::1]:51820\nAllowedIPs = fd00::/8\n"
    ));
    let ep = c.peers[0].endpoint.clone().unwrap();
    assert_eq!(ep.host, "fd00::1");
    assert_eq!(ep.port, 51820);
    assert_eq!(ep.to_string(), "[fd00::1]:51820");
    assert_eq!(
        ep.resolve().unwrap(),
        "[fd00::1]:51820".parse::<SocketAddr>().unwrap()
    );
    let back = Endpoint::from("[fd00::1]:51820".parse::<SocketAddr>().unwrap());
    assert_eq!(back, ep);
    let v4 = Endpoint::from("192.0.2.1:9".parse::<SocketAddr>().unwrap());
    assert_eq!(v4.to_string(), "192.0.2.1:9");
    let local: Endpoint = "localhost:51820".parse().unwrap();
    assert!(local.resolve().unwrap().ip().is_loopback());
}

#[test]
fn case_comments_whitespace_and_accumulation() {
    let c = ok(&format!(
        "  # leading comment\n\n[interface]   # trailing comment\n\
         privatekey={BOX_PRIV}\n\
         ADDRESS   =   10.8.0.2/24 ,fd00:8::2/64   # two\n\
         address = 192.0.2.7\n\
         listenport = 0\n\
         [PEER]\n\
         PUBLICKEY = {POP_PUB}\n\
         allowedips = 10.2.0.1/24\n\
         AllowedIps = 2001:db8::1/32, 198.51.100.9\n\
         persistentkeepalive = 0\n"
    ));
    // Address keeps host bits; a bare address is a host prefix.
    assert_eq!(
        c.interface.addresses,
        nets(&["10.8.0.2/24", "fd00:8::2/64", "192.0.2.7/32"])
    );
    assert_eq!(c.interface.listen_port, Some(0));
    // AllowedIPs are masked to the network.
    assert_eq!(
        c.peers[0].allowed_ips,
        nets(&["10.2.0.0/24", "2001:db8::/32", "198.51.100.9/32"])
    );
    assert_eq!(c.peers[0].persistent_keepalive, None);
    assert_eq!(c.peers[0].line, 8);
}

#[test]
fn many_peers_and_no_peers() {
    let c = ok(&format!("[Interface]\nPrivateKey = {BOX_PRIV}\n"));
    assert!(c.peers.is_empty());
    let mut text = format!("[Interface]\nPrivateKey = {BOX_PRIV}\nListenPort = 51820\n");
    let mut keys = Vec::new();
    for n in 0..50u8 {
        let k = PublicKey::from_bytes([n; 32]);
        keys.push(k);
        text += &format!("[Peer]\nPublicKey = {k}\nAllowedIPs = 10.1.{n}.0/24\n");
    }
    let c = ok(&text);
    assert_eq!(
        c.peers.iter().map(|p| p.public_key).collect::<Vec<_>>(),
        keys
    );
}

#[test]
fn interface_names() {
    let name = |p: &str| interface_name(Path::new(p));
    assert_eq!(name("/etc/wireguard/wg0.conf").unwrap(), "wg0");
    assert_eq!(name("a_b=c+d.e-f.conf").unwrap(), "a_b=c+d.e-f");
    assert_eq!(name("123456789012345.conf").unwrap(), "123456789012345");
    for bad in [
        "1234567890123456.conf",
        "box.cfg",
        "box",
        ".conf",
        "a b.conf",
        "ä.conf",
    ] {
        let e = name(bad).unwrap_err();
        assert_eq!((e.line, e.key.as_str()), (0, "-"), "{bad}");
        assert!(e.to_string().starts_with(&format!("{bad}:0: -: ")), "{e}");
    }
}

#[test]
fn load_missing_file_is_one_error_naming_the_path() {
    let path = configs_dir().join("does-not-exist.conf");
    let e = load(&path).unwrap_err();
    assert_eq!(e.len(), 1);
    let e = &e.0[0];
    assert_eq!((e.line, e.key.as_str()), (0, "-"));
    assert!(matches!(e.kind, ErrorKind::Io { .. }));
    let s = e.to_string();
    assert!(
        s.contains("does-not-exist.conf") && s.contains("cannot read"),
        "{s}"
    );
}

#[test]
fn readme_examples_parse_as_documented() {
    let readme = std::fs::read_to_string(configs_dir().join("README.md")).unwrap();
    let blocks: Vec<&str> = readme
        .split("```ini\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    assert_eq!(blocks.len(), 3);
    let from_disk = load(&configs_dir().join("box.conf")).unwrap();
    let c = ok(blocks[0]);
    assert_eq!(c.interface, from_disk.interface);
    assert_eq!(c.peers[0].allowed_ips, from_disk.peers[0].allowed_ips);
    let p = ok(&format!("{}{}", blocks[0], blocks[1])).pep.unwrap();
    assert_eq!(p.mode, PepMode::Split);
    assert_eq!(
        p.bypass,
        [BypassRule::Port(22), BypassRule::Ports(5060, 5070)]
    );
    // The figure the README gives for geo: 2 × 10 Mbit/s / 8 × 500 ms.
    assert_eq!(p.segment_buffer_bytes(), 1_250_000);
    // The StarPEP example spells out the defaults.
    let sp = ok(&format!("{}{}", blocks[0], blocks[2])).pep.unwrap();
    assert_eq!(sp.mode, PepMode::Starpep);
    assert_eq!(sp.starpep, crate::config::Starpep::default());
}

/// `[Interface]` with the box key and `extra` lines (line 3 on).
fn iface_with(extra: &str) -> String {
    format!("[Interface]\nPrivateKey = {BOX_PRIV}\n{extra}")
}

#[test]
fn metrics_listen_is_an_address_and_a_port() {
    super::tests_errors::one(
        &iface_with("MetricsListen = 127.0.0.1\n"),
        3,
        "MetricsListen",
        "is not ADDRESS:PORT",
    );
    super::tests_errors::one(
        &iface_with("MetricsListen = localhost:9586\n"),
        3,
        "MetricsListen",
        "is not ADDRESS:PORT",
    );
    super::tests_errors::one(
        &iface_with("MetricsListen = [::1]:0\n"),
        3,
        "MetricsListen",
        "port 0",
    );
    super::tests_errors::one(
        &iface_with("MetricsListen = 127.0.0.1:9586\nMetricsListen = 127.0.0.1:9587\n"),
        4,
        "MetricsListen",
        "",
    );
    let c = parse("box.conf", &iface_with("MetricsListen = [::1]:9586\n")).unwrap();
    assert_eq!(
        c.interface.metrics_listen,
        Some("[::1]:9586".parse().unwrap())
    );
    let c = parse("box.conf", &iface_with("")).unwrap();
    assert_eq!(c.interface.metrics_listen, None, "off by default");
}
