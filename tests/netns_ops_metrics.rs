//! Prometheus metrics (root, netns, no emulation): the POP of the shipped PEP pair with
//! `MetricsListen` is scraped before, during and after a paced download through its split:
//! the peer's byte counters and the PEP's split bytes move by at least what was carried, the
//! flow shows as active during the transfer and as closed after, StarPEP's histograms and
//! phase times grow, and the endpoint answers nothing but `GET /metrics`.

#[path = "netns_pep_common.rs"]
mod pep;

#[path = "netns_ops_common.rs"]
mod ops;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use starpep_tests::{require_root, Node, TopoSpec, Topology};

const METRICS: &str = "127.0.0.1:9586";

/// One HTTP request to the POP's metrics endpoint: (status line, body).
fn http(topo: &Topology, request: &'static str) -> (String, String) {
    let text = topo
        .run_in(Node::Pop, move || {
            let mut c = TcpStream::connect(METRICS).expect("connect to MetricsListen");
            c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            c.write_all(request.as_bytes()).unwrap();
            let mut out = String::new();
            c.read_to_string(&mut out).unwrap();
            out
        })
        .expect("POP namespace");
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    (
        head.lines().next().unwrap_or("").to_string(),
        body.to_string(),
    )
}

fn scrape(topo: &Topology) -> String {
    let (status, body) = http(topo, "GET /metrics HTTP/1.1\r\nHost: pop\r\n\r\n");
    assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
    body
}

/// The value of the series whose line starts with `series` (name and labels, as scraped).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
}

#[test]
fn a_scrape_during_a_transfer_sees_the_counters_move_with_the_traffic() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let pop_text = pep::shipped_conf("pop-pep", &[("Mode", "starpep")]).replacen(
        "[Interface]\n",
        &format!("[Interface]\nMetricsListen = {METRICS}\n"),
        1,
    );
    let pop = pep::start(&topo, Node::Pop, "starpep-pop", "pop-pep", &pop_text);
    let bx = pep::start(
        &topo,
        Node::Box,
        "starpep-client",
        "box-pep",
        &pep::shipped_conf("box-pep", &[("Mode", "starpep")]),
    );
    assert!(
        topo.wait_reachable(Node::Pc, "10.2.0.2", Duration::from_secs(10)),
        "the tunnel did not come up"
    );
    let box_key = "BfWp/tA3pEaOVpsCCBHA384Wnz52+yI9vPrF5IIJlGg=";
    let peer = |name: &str| format!("{name}{{interface=\"pop-pep\",public_key=\"{box_key}\"}}");
    let iface = |name: &str, label: &str| {
        if label.is_empty() {
            format!("{name}{{interface=\"pop-pep\"}}")
        } else {
            format!("{name}{{interface=\"pop-pep\",{label}}}")
        }
    };

    let before = scrape(&topo);
    assert!(value(&before, &peer("starpep_peer_handshakes_total")) >= 1.0);
    assert!(value(&before, &peer("starpep_peer_latest_handshake_seconds")) > 1.0e9);
    assert_eq!(value(&before, &iface("starpep_up", "")), 1.0);

    // ~6 s: 400 chunks of 32 KiB from srv to the box's tunnel address, through the POP's split.
    let (chunk, n) = (32 * 1024, 400);
    let bytes = (chunk * n) as f64;
    let dst: SocketAddr = "10.2.0.2:7100".parse().unwrap();
    let src = "10.8.0.2".parse().unwrap();
    let t = ops::Paced::start(
        &topo,
        src,
        dst,
        chunk * n,
        chunk,
        Duration::from_millis(15),
        true,
        7,
    );
    assert!(
        ops::wait_for(Duration::from_secs(5), || {
            value(&scrape(&topo), &iface("starpep_pep_active_flows", "")) >= 1.0
        }),
        "the flow never showed as active"
    );
    // Mid-transfer: the flow's once-a-second sample has counted part of the payload.
    let split_down = iface("starpep_pep_split_bytes_total", "direction=\"down\"");
    let mut during = String::new();
    assert!(
        ops::wait_for(Duration::from_secs(5), || {
            during = scrape(&topo);
            value(&during, &split_down) > 0.0
        }),
        "no split bytes counted during the transfer"
    );
    assert!(
        value(&during, &split_down) < bytes,
        "the transfer was over: {during}"
    );
    assert_eq!(value(&during, &iface("starpep_pep_active_flows", "")), 1.0);
    let r = t.finish();
    assert!(r.intact(), "download: {r:?}");
    assert!(
        ops::wait_for(Duration::from_secs(5), || {
            value(&scrape(&topo), &iface("starpep_pep_active_flows", "")) == 0.0
        }),
        "the flow did not end"
    );
    let after = scrape(&topo);

    let moved = |name: &str, series: &str| {
        let (a, b, c) = (
            value(&before, series),
            value(&during, series),
            value(&after, series),
        );
        assert!(a <= b && b <= c, "{name} went back: {a} {b} {c}");
        assert!(a < c, "{name} did not move: {a} {b} {c}");
        eprintln!("{name}: {a} -> {b} -> {c}");
        c - a
    };
    let sent = moved("peer sent", &peer("starpep_peer_sent_bytes_total"));
    assert!(sent >= bytes, "sent {sent} < {bytes}");
    let received = moved("peer received", &peer("starpep_peer_received_bytes_total"));
    assert!(received > 0.0 && received < sent, "ACKs only: {received}");
    let down = moved(
        "split down",
        &iface("starpep_pep_split_bytes_total", "direction=\"down\""),
    );
    assert_eq!(down, bytes, "the PEP relayed exactly the payload");
    let closed = moved(
        "closed",
        &iface("starpep_pep_flows_total", "result=\"closed\""),
    );
    assert_eq!(closed, 1.0);
    let accepted = moved("accepted", &iface("starpep_pep_accepted_flows_total", ""));
    assert_eq!(accepted, 1.0);
    let ticks = moved(
        "window ticks",
        &iface("starpep_controller_queue_bytes_count", ""),
    );
    assert!(ticks >= 1.0, "no controller tick counted");
    let steady = moved(
        "steady",
        &iface("starpep_controller_phase_seconds_total", "phase=\"steady\""),
    );
    let phases: f64 = ["guard", "probe", "recover"]
        .iter()
        .map(|p| {
            value(
                &after,
                &iface(
                    "starpep_controller_phase_seconds_total",
                    &format!("phase=\"{p}\""),
                ),
            )
        })
        .sum();
    assert!(steady + phases > 0.0, "no phase time counted");

    let (status, _) = http(&topo, "POST /metrics HTTP/1.1\r\n\r\n");
    assert!(status.starts_with("HTTP/1.1 405"), "{status}");
    let (status, _) = http(&topo, "GET /other HTTP/1.1\r\n\r\n");
    assert!(status.starts_with("HTTP/1.1 404"), "{status}");
    bx.stop();
    pop.stop();
}
