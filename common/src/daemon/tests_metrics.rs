//! Unit tests of the metrics' encoding: every catalogued name appears with its type, values
//! come from the snapshot, and `docs/operations.md` documents every metric.

use super::*;
use crate::pep::starpep::{ControlRecord, Phase, Regime};
use crate::tunnel::PeerMetrics;

fn peer(key: &str, tx: u64) -> PeerMetrics {
    PeerMetrics {
        public_key: key.into(),
        endpoint: None,
        allowed_ips: vec![],
        latest_handshake_unix: Some(1_700_000_000),
        latest_handshake_secs_ago: Some(3),
        handshake_rtt_ms: None,
        rx_bytes: 7,
        tx_bytes: tx,
        rx_packets: 1,
        tx_packets: 1,
        dropped_source_not_allowed: 2,
        dropped_decrypt: 6,
        endpoint_changes: 0,
        persistent_keepalive: None,
        dropped_replay: 3,
        dropped_bad_mac: 1,
        handshakes: 4,
    }
}

fn iface() -> InterfaceMetrics {
    InterfaceMetrics {
        schema_version: 1,
        interface: "pop0".into(),
        public_key: "k".into(),
        listen_port: 51820,
        fwmark: None,
        dropped_no_route: 0,
        dropped_no_endpoint: 0,
        dropped_invalid: 5,
        dropped_unknown_peer: 0,
        cookie_replies: 9,
        peers: vec![peer("AAA=", 100), peer("BBB=", 200)],
    }
}

fn pep() -> PepMetrics {
    serde_json::from_value(serde_json::json!({
        "role": "pop", "tunnel": "wireguard", "table": "t", "proxy_port": 1,
        "intercepting": true, "max_flows": 10, "active_flows": 2, "accepted": 12,
        "over_limit": 0, "pauses": 0, "overflow_syns": 3, "intercepted_syns": 12,
        "max_flows_per_host": 1, "max_flows_per_peer": 1, "capped_clients": 0,
        "over_cap": 0, "client_caps": 0, "capped_syns": 4, "closed": 8, "reset": 1,
        "connect_failed": 0, "idle_timeout": 0, "shutdown": 0, "revoked": 1,
        "bytes_up": 1000, "bytes_down": 2000, "flows": []
    }))
    .unwrap()
}

fn control() -> ControlStats {
    let mut c = ControlStats::default();
    let r = ControlRecord {
        t_s: 0.0,
        flow: 1,
        client: "10.1.0.2:1".parse().unwrap(),
        server: "10.2.0.2:80".parse().unwrap(),
        backend: "clamp".into(),
        phase: Phase::Probe,
        regime: Regime::Inside,
        w_bytes: Some(3000),
        w_base_bytes: 0,
        w_steady_bytes: 0,
        q_bytes: 1500,
        q_hat_bytes: 0.0,
        unread_bytes: 0,
        pipe_bytes: 0,
        notsent_bytes: 0,
        r_down_mbps: 10.0,
        rtt_up_ms: 0.0,
        proxy_queue_ms: 1.2,
        inflight_bytes: 0,
        link_cap_bytes: None,
        sat_base_ms: None,
        link_probe: false,
        cc_restart: false,
    };
    c.observe(1, std::time::Duration::from_secs(1), &r);
    c.observe(1, std::time::Duration::from_millis(1500), &r);
    c
}

#[test]
fn every_metric_is_encoded_with_its_type_and_the_snapshots_values() {
    let text = Exported {
        iface: iface(),
        pep: Some(pep()),
        control: Some(control()),
    }
    .encode();
    for d in METRICS {
        let family = match d.kind {
            Kind::Counter => d.name.trim_end_matches("_total"),
            _ => d.name,
        };
        assert!(
            text.contains(&format!("# TYPE {family} {}\n", d.kind.as_str())),
            "{} missing:\n{text}",
            d.name
        );
    }
    for line in [
        "starpep_peer_sent_bytes_total{interface=\"pop0\",public_key=\"BBB=\"} 200",
        "starpep_peer_received_bytes_total{interface=\"pop0\",public_key=\"AAA=\"} 7",
        "starpep_peer_latest_handshake_seconds{interface=\"pop0\",public_key=\"AAA=\"} 1700000000.0",
        "starpep_peer_handshakes_total{interface=\"pop0\",public_key=\"AAA=\"} 4",
        "starpep_peer_dropped_packets_total{interface=\"pop0\",public_key=\"AAA=\",cause=\"spoofed_source\"} 2",
        "starpep_peer_dropped_packets_total{interface=\"pop0\",public_key=\"AAA=\",cause=\"replay\"} 3",
        "starpep_peer_dropped_packets_total{interface=\"pop0\",public_key=\"AAA=\",cause=\"other\"} 2",
        "starpep_dropped_packets_total{interface=\"pop0\",cause=\"cookie\"} 9",
        "starpep_pep_active_flows{interface=\"pop0\"} 2.0",
        "starpep_pep_flows_total{interface=\"pop0\",result=\"revoked\"} 1",
        "starpep_pep_overflow_syns_total{interface=\"pop0\"} 3",
        "starpep_pep_split_bytes_total{interface=\"pop0\",direction=\"down\"} 2000",
        "starpep_controller_window_bytes_count{interface=\"pop0\"} 2",
        "starpep_controller_window_bytes_bucket{interface=\"pop0\",le=\"4096.0\"} 2",
        "starpep_controller_phase_seconds_total{interface=\"pop0\",phase=\"probe\"} 0.5",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    assert!(text.ends_with("# EOF\n"), "{text}");
}

#[test]
fn without_a_pep_only_the_tunnels_metrics_are_there() {
    let text = Exported {
        iface: iface(),
        pep: None,
        control: None,
    }
    .encode();
    assert!(text.contains("starpep_peer_sent_bytes_total"));
    assert!(!text.contains("starpep_pep_") && !text.contains("starpep_controller_"));
}

#[test]
fn the_docs_list_every_metric_with_its_type() {
    let doc = include_str!("../../../docs/operations.md");
    for d in METRICS {
        assert!(
            doc.contains(&format!("| `{}` | {} |", d.name, d.kind.as_str())),
            "docs/operations.md lacks `| `{}` | {} |`",
            d.name,
            d.kind.as_str()
        );
    }
}
