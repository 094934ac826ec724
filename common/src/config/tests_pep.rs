//! Unit tests of the `[PEP]` section: defaults, every key, and its errors with line and key.

use std::time::Duration;

use super::tests::ok;
use super::tests_errors::one;
use super::*;

const K1: &str = "KLAp2JYd9y2hS/9Nshf5HCHbC7yFnLRaMOqg8t9DvWQ=";

fn pep_text(body: &str) -> String {
    format!("[Interface]\nPrivateKey = {K1}\n[PEP]\n{body}")
}

fn pep(body: &str) -> Pep {
    ok(&pep_text(body)).pep.expect("a [PEP] section")
}

#[test]
fn empty_section_has_the_documented_defaults() {
    let p = pep("");
    assert_eq!(p.line, 3);
    assert_eq!(
        Pep {
            line: 0,
            ..p.clone()
        },
        Pep::default()
    );
    assert_eq!(p.mode, PepMode::Starpep);
    assert_eq!(p.starpep, Starpep::default());
    assert_eq!(p.tunnel, TunnelMode::WireGuard);
    assert_eq!(p.congestion, Congestion::Bbr);
    assert_eq!(p.lan_congestion, None);
    assert_eq!(p.link_rate_bps, 100_000_000);
    assert_eq!(p.link_rtt, Duration::from_millis(600));
    assert_eq!(
        (p.snd_buf, p.rcv_buf, p.init_cwnd, p.notsent_lowat),
        (None, None, None, None)
    );
    assert!(p.no_delay && !p.quick_ack && !p.snat);
    assert!(p.resume && p.fast_open);
    assert_eq!(p.max_flows, 4096);
    assert_eq!(p.max_flows_per_client, None);
    assert_eq!(p.idle_timeout, Duration::from_secs(3600));
    assert_eq!(p.dead_peer_timeout, Duration::from_secs(60));
    assert_eq!(p.flow_buffer, 256 * 1024);
    assert_eq!(p.proxy_port, 8399);
    assert!(p.bypass.is_empty() && p.intercept.is_empty() && p.destinations.is_empty());
    // 100 Mbit/s × 600 ms = 7.5 MB BDP; default buffers are twice that.
    assert_eq!(p.bdp_bytes(), 7_500_000);
    assert_eq!(p.segment_buffer_bytes(), 15_000_000);
    assert_eq!(p.snd_buf_bytes(), 15_000_000);
}

#[test]
fn every_key() {
    let p = pep("mode = Split\n\
         Tunnel = none\n\
         Congestion = cubic\n\
         LanCongestion = reno\n\
         LinkRate = 10mbit\n\
         LinkRtt = 1.5s\n\
         SndBuf = 4M\n\
         RcvBuf = 512k\n\
         InitCwnd = 100\n\
         NoDelay = no\n\
         FastOpen = off\n\
         QuickAck = ON\n\
         NotsentLowat = 128K\n\
         Bypass = 22, 5060-5070\n\
         Bypass = 192.0.2.1/24, 2001:db8::/32\n\
         MaxFlows = 1000000\n\
         MaxFlowsPerClient = 64\n\
         MaxFlowsPerHost = 16\n\
         IdleTimeout = 90s\n\
         DeadPeerTimeout = 20s\n\
         snat = yes\n\
         FlowBuffer = 16K\n\
         ProxyPort = 9000\n\
         Intercept = eth1, veth-lan\n\
         Destinations = 0.0.0.0/0\n\
         Destinations = 10.2.0.0/24, ::/0\n");
    assert_eq!(p.mode, PepMode::Split);
    assert_eq!(p.tunnel, TunnelMode::None);
    assert_eq!(p.congestion, Congestion::Cubic);
    assert_eq!(p.congestion.as_str(), "cubic");
    assert_eq!(p.lan_congestion, Some(Congestion::Reno));
    assert_eq!(p.link_rate_bps, 10_000_000);
    assert_eq!(p.link_rtt, Duration::from_millis(1500));
    assert_eq!(p.snd_buf, Some(4 << 20));
    assert_eq!(p.rcv_buf, Some(512 << 10));
    assert_eq!(p.init_cwnd, Some(100));
    assert!(!p.no_delay && p.quick_ack && p.snat && !p.fast_open);
    assert_eq!(p.notsent_lowat, Some(128 << 10));
    assert_eq!(
        p.bypass,
        [
            BypassRule::Port(22),
            BypassRule::Ports(5060, 5070),
            BypassRule::Prefix("192.0.2.0/24".parse().unwrap()),
            BypassRule::Prefix("2001:db8::/32".parse().unwrap()),
        ]
    );
    assert!(p.bypassed("198.51.100.1".parse().unwrap(), 22));
    assert!(p.bypassed("198.51.100.1".parse().unwrap(), 5065));
    assert!(p.bypassed("192.0.2.200".parse().unwrap(), 80));
    assert!(!p.bypassed("198.51.100.1".parse().unwrap(), 80));
    assert_eq!(p.max_flows, 1_000_000);
    assert_eq!(p.max_flows_per_client, Some(64));
    assert_eq!(p.max_flows_per_host, Some(16));
    assert_eq!(p.idle_timeout, Duration::from_secs(90));
    assert_eq!(p.dead_peer_timeout, Duration::from_secs(20));
    assert_eq!(p.flow_buffer, 16 << 10);
    assert_eq!(p.proxy_port, 9000);
    assert_eq!(p.intercept, ["eth1", "veth-lan"]);
    assert_eq!(p.destinations.len(), 3);
    assert_eq!(p.snd_buf_bytes(), 4 << 20);
    // Explicit SndBuf/RcvBuf win; the computed default follows the link: 10 Mbit/s × 1.5 s.
    assert_eq!(p.bdp_bytes(), 1_875_000);
    assert_eq!(p.segment_buffer_bytes(), 3_750_000);
}

#[test]
fn value_syntaxes() {
    assert_eq!(pep("LinkRate = 50Mbit\n").link_rate_bps, 50_000_000);
    assert_eq!(pep("LinkRate = 1gbit\n").link_rate_bps, 1_000_000_000);
    assert_eq!(pep("LinkRate = 500kbit\n").link_rate_bps, 500_000);
    assert_eq!(pep("LinkRate = 9600\n").link_rate_bps, 9600);
    assert_eq!(
        pep("LinkRtt = 600ms\n").link_rtt,
        Duration::from_millis(600)
    );
    assert_eq!(
        pep("LinkRtt = 2500us\n").link_rtt,
        Duration::from_micros(2500)
    );
    assert_eq!(
        pep("IdleTimeout = 2h\n").idle_timeout,
        Duration::from_secs(7200)
    );
    assert_eq!(
        pep("IdleTimeout = 5m\n").idle_timeout,
        Duration::from_secs(300)
    );
    assert_eq!(pep("SndBuf = 1G\n").snd_buf, Some(1 << 30));
    assert_eq!(pep("SndBuf = 65536\n").snd_buf, Some(65536));
    assert_eq!(pep("SndBuf = 1.5MiB\n").snd_buf, Some(3 << 19));
    // A slow, short link: the computed buffer is floored at 64 KiB.
    assert_eq!(
        pep("LinkRate = 1mbit\nLinkRtt = 10ms\n").segment_buffer_bytes(),
        64 << 10
    );
    for (v, b) in [
        ("true", true),
        ("0", false),
        ("Off", false),
        ("YES", true),
        ("1", true),
    ] {
        assert_eq!(pep(&format!("QuickAck = {v}\n")).quick_ack, b, "{v}");
    }
}

#[test]
fn errors_with_line_and_key() {
    let e = |body: &str, key: &str, msg: &str| one(&pep_text(body), 4, key, msg);
    e("Mode = on\n", "Mode", "not a mode (starpep, split, off)");
    e("Tunnel = ipsec\n", "Tunnel", "not a tunnel mode");
    one(
        &pep_text("Mode = off\nTunnel = none\n"),
        5,
        "Tunnel",
        "Tunnel = none needs Mode = starpep or split",
    );
    e(
        "Congestion = hybla\n",
        "Congestion",
        "hybla is not available in this kernel (available: bbr, cubic, reno)",
    );
    e(
        "LanCongestion = vegas\n",
        "LanCongestion",
        "available: bbr, cubic, reno",
    );
    e("LinkRate = 10mbps\n", "LinkRate", "unknown rate unit");
    e("LinkRate = 0mbit\n", "LinkRate", "out of range");
    e(
        "LinkRate = mbit\n",
        "LinkRate",
        "does not start with a number",
    );
    e("LinkRtt = 600\n", "LinkRtt", "needs a unit");
    e("LinkRtt = 11s\n", "LinkRtt", "out of range");
    e(
        "LinkRtt = 1.2.3s\n",
        "LinkRtt",
        "does not start with a number",
    );
    e("SndBuf = 1T\n", "SndBuf", "unknown size unit");
    e("RcvBuf = 2G\n", "RcvBuf", "out of range");
    e("RcvBuf = 1K\n", "RcvBuf", "out of range");
    e("InitCwnd = 0\n", "InitCwnd", "out of range");
    e("InitCwnd = 1001\n", "InitCwnd", "out of range");
    e("NoDelay = sometimes\n", "NoDelay", "not a boolean");
    e("FastOpen = fast\n", "FastOpen", "not a boolean");
    e("NotsentLowat = 0\n", "NotsentLowat", "out of range");
    e("Bypass = 0\n", "Bypass", "not a port");
    e("Bypass = 5070-5060\n", "Bypass", "empty port range");
    e(
        "Bypass = 22, ssh\n",
        "Bypass",
        "not a port, port range (a-b) or prefix",
    );
    e(
        "Bypass = 10.0.0.0/99\n",
        "Bypass",
        "not an IP address or prefix",
    );
    e("MaxFlows = 0\n", "MaxFlows", "out of range");
    e("MaxFlows = 1000001\n", "MaxFlows", "out of range");
    e(
        "MaxFlowsPerClient = 0\n",
        "MaxFlowsPerClient",
        "out of range",
    );
    e("MaxFlowsPerHost = x\n", "MaxFlowsPerHost", "");
    e("IdleTimeout = 500ms\n", "IdleTimeout", "out of range");
    e("DeadPeerTimeout = 4s\n", "DeadPeerTimeout", "out of range");
    e("DeadPeerTimeout = 2d\n", "DeadPeerTimeout", "");
    e("SNAT = y\n", "SNAT", "not a boolean");
    e("FlowBuffer = 8K\n", "FlowBuffer", "out of range");
    e("ProxyPort = 0\n", "ProxyPort", "out of range");
    e(
        "Intercept = eth0, this-name-is-too-long\n",
        "Intercept",
        "not an interface name",
    );
    e(
        "Destinations = everything\n",
        "Destinations",
        "not an IP address or prefix",
    );
    e("Colour = red\n", "Colour", "unknown key in [PEP]");
    e("Mode =\n", "Mode", "empty value");
    one(
        &pep_text("Mode = split\nmode = off\n"),
        5,
        "Mode",
        "first given at line 4",
    );
}
