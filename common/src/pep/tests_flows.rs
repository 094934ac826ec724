//! Unit tests of the flow table (MaxFlows pause/resume, totals), TCP_INFO parsing and metrics.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::flows::*;
use super::metrics::{MetricsHeader, PepMetrics};
use super::plan::Role;
use super::relay::FlowState;
use super::starpep::ControlRecord;
use super::tcpinfo::{TcpInfo, MIN_LEN};

fn key(port: u16) -> FlowKey {
    FlowKey {
        client: SocketAddr::from(([10, 1, 0, 2], port)),
        server: SocketAddr::from(([10, 2, 0, 2], 80)),
    }
}

#[test]
fn a_full_table_pauses_interception_and_resumes_below_the_low_watermark() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(32);
    let mut ids = Vec::new();
    for i in 0..31 {
        let a = t.admit(key(1000 + i), t0);
        assert_eq!(a.change, None);
        assert!(!a.over_limit);
        ids.push(a.id);
    }
    let a = t.admit(key(2000), t0);
    assert_eq!(
        a.change,
        Some(InterceptChange::Pause),
        "32nd flow fills the table"
    );
    ids.push(a.id);
    assert!(!t.intercepting());
    // A SYN that raced the pause is still relayed, and counted.
    let late = t.admit(key(2001), t0);
    assert!(late.over_limit);
    assert_eq!(late.change, None, "already paused");
    ids.push(late.id);
    assert_eq!(t.len(), 33);
    // Resume at 32 - 32/16 - 1 = 29 flows.
    let mut resumed_at = None;
    for id in ids.clone() {
        if let Some(c) = t.remove(id, FlowState::Closed, 10, 20) {
            assert_eq!(c, InterceptChange::Resume);
            resumed_at = Some(t.len());
            break;
        }
    }
    assert_eq!(resumed_at, Some(29));
    assert!(t.intercepting());
    let tot = t.totals();
    assert_eq!((tot.accepted, tot.over_limit, tot.pauses), (33, 1, 1));
    assert_eq!((tot.closed, tot.bytes_up, tot.bytes_down), (4, 40, 80));
}

#[test]
fn max_one_pauses_on_the_first_flow_and_resumes_when_it_ends() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(1);
    let a = t.admit(key(1), t0);
    assert_eq!(a.change, Some(InterceptChange::Pause));
    assert_eq!(
        t.remove(a.id, FlowState::Reset, 0, 0),
        Some(InterceptChange::Resume)
    );
    assert_eq!(t.remove(a.id, FlowState::Reset, 0, 0), None, "removed once");
    assert_eq!(t.totals().reset, 1);
    assert!(t.is_empty());
}

#[test]
fn a_lower_limit_pauses_a_table_that_holds_it_and_a_higher_one_resumes() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(100);
    let ids: Vec<FlowId> = (0..20).map(|i| t.admit(key(3000 + i), t0).id).collect();
    assert_eq!(t.set_max(100), None, "unchanged");
    // Fewer descriptors: the table already holds more than the new limit.
    assert_eq!(t.set_max(16), Some(InterceptChange::Pause));
    assert!(!t.intercepting());
    assert_eq!(t.set_max(18), None, "still above the new low watermark");
    // Flows end: below 15/16 of the limit interception resumes.
    let mut change = None;
    for id in &ids[..4] {
        change = change.or(t.remove(*id, FlowState::Closed, 0, 0));
    }
    assert_eq!(change, Some(InterceptChange::Resume));
    assert_eq!(t.set_max(12), Some(InterceptChange::Pause));
    // More descriptors again.
    assert_eq!(t.set_max(1000), Some(InterceptChange::Resume));
    assert_eq!(t.max(), 1000);
    assert_eq!(t.totals().pauses, 2);
    assert_eq!(t.set_max(0), Some(InterceptChange::Pause), "at least one");
    assert_eq!(t.max(), 1);
}

#[test]
fn outcomes_are_counted_by_kind() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(100);
    for (i, s) in [
        FlowState::Closed,
        FlowState::Reset,
        FlowState::ConnectFailed,
        FlowState::IdleTimeout,
        FlowState::Shutdown,
    ]
    .into_iter()
    .enumerate()
    {
        let a = t.admit(key(i as u16 + 1), t0);
        t.remove(a.id, s, 0, 0);
    }
    let tot = t.totals();
    assert_eq!(
        (
            tot.closed,
            tot.reset,
            tot.connect_failed,
            tot.idle_timeout,
            tot.shutdown
        ),
        (1, 1, 1, 1, 1)
    );
}

fn tcp_info_bytes(len: usize) -> Vec<u8> {
    let mut b = vec![0u8; len];
    let put32 = |b: &mut Vec<u8>, o: usize, v: u32| {
        if o + 4 <= b.len() {
            b[o..o + 4].copy_from_slice(&v.to_ne_bytes())
        }
    };
    let put64 = |b: &mut Vec<u8>, o: usize, v: u64| {
        if o + 8 <= b.len() {
            b[o..o + 8].copy_from_slice(&v.to_ne_bytes())
        }
    };
    b[0] = 1; // TCP_ESTABLISHED
    b[1] = 3; // TCP_CA_Recovery
    b[3] = 2; // probes
    b[6] = (9 << 4) | 7; // rcv_wscale 9, snd_wscale 7
    b[7] = 1; // delivery_rate_app_limited
    put32(&mut b, 16, 1368);
    put32(&mut b, 20, 1448);
    put32(&mut b, 24, 17);
    put32(&mut b, 32, 2);
    put32(&mut b, 52, 9_000);
    put32(&mut b, 56, 31_000);
    put32(&mut b, 92, 20_500);
    put32(&mut b, 68, 512_000);
    put32(&mut b, 72, 3_000);
    put32(&mut b, 80, 42);
    put32(&mut b, 100, 7);
    put64(&mut b, 120, 123_456);
    put32(&mut b, 140, 4_321);
    put32(&mut b, 148, 500_100);
    put64(&mut b, 160, 1_250_000);
    put32(&mut b, 228, 65_535);
    b
}

#[test]
fn delivered_bytes_count_the_sacked_segments_so_a_filled_hole_is_no_jump() {
    let mut i = TcpInfo::parse(&tcp_info_bytes(280)).expect("parse");
    i.snd_mss = 1000;
    // A recovery: the hole at 100 kB holds the cumulative ACK while 50 segments are SACKed
    // above it, then its retransmission arrives and the ACK jumps.
    let steps = [(100_000, 0), (100_000, 20), (100_000, 50), (151_000, 0)];
    let delivered: Vec<u64> = steps
        .iter()
        .map(|&(acked, sacked)| {
            i.bytes_acked = Some(acked);
            i.sacked = sacked;
            i.delivered_bytes().expect("bytes_acked is known")
        })
        .collect();
    assert_eq!(delivered, vec![100_000, 120_000, 150_000, 151_000]);
    let jump = delivered.windows(2).map(|w| w[1] - w[0]).max().unwrap();
    assert_eq!(
        jump, 30_000,
        "the largest step is what arrived, not the 51 kB ACK"
    );
    i.bytes_acked = None;
    assert_eq!(i.delivered_bytes(), None);
}

#[test]
fn tcp_info_is_parsed_by_offset_and_short_structs_lack_the_new_fields() {
    let i = TcpInfo::parse(&tcp_info_bytes(280)).expect("parse");
    assert_eq!(i.state, 1);
    assert_eq!(
        (i.snd_mss, i.rtt_us, i.rttvar_us, i.snd_cwnd),
        (1368, 512_000, 3_000, 42)
    );
    assert_eq!(i.total_retrans, 7);
    assert_eq!((i.snd_wscale, i.rcv_wscale, i.app_limited), (7, 9, true));
    assert_eq!((i.ca_state, i.lost, i.probes), (3, 2, 2));
    assert_eq!((i.last_data_recv_ms, i.last_ack_recv_ms), (9_000, 31_000));
    assert_eq!((i.rcv_mss, i.unacked, i.rcv_rtt_us), (1448, 17, 20_500));
    assert_eq!(i.bytes_acked, Some(123_456));
    assert_eq!(i.segs_in, Some(4_321));
    assert_eq!(i.min_rtt_us, Some(500_100));
    assert_eq!(i.delivery_rate, Some(1_250_000));
    assert_eq!(i.snd_wnd, Some(65_535));
    let old = TcpInfo::parse(&tcp_info_bytes(148)).expect("parse 148");
    assert_eq!(old.min_rtt_us, None, "min_rtt is bytes 148..152");
    assert_eq!(old.delivery_rate, None);
    assert_eq!(old.rtt_us, 512_000);
    assert!(TcpInfo::parse(&tcp_info_bytes(MIN_LEN - 1)).is_none());
    let seg = i.to_segment("bbr");
    assert_eq!((seg.congestion.as_str(), seg.cwnd), ("bbr", 42));
}

#[test]
fn metrics_snapshot_adds_live_flows_to_the_totals_and_renders() {
    let t0 = Instant::now();
    let mut t = FlowTable::new(10);
    let a = t.admit(key(5), t0);
    let b = t.admit(key(6), t0);
    t.remove(b.id, FlowState::Closed, 1000, 2000);
    let r = t.record_mut(a.id).unwrap();
    r.state = FlowState::Established;
    r.bytes_up = 5;
    r.bytes_down = 7;
    r.satellite = TcpInfo::parse(&tcp_info_bytes(280)).map(|i| i.to_segment("cubic"));
    r.control = Some(control_record(a.id));
    r.terrestrial = r.satellite.clone();
    r.start = Some(crate::pep::StartPlan {
        init_cwnd: Some(300),
        pacing: Some(1_250_000),
        source: crate::pep::start::Source::Measured,
        busy: 1,
        young: 0,
    });
    let h = MetricsHeader {
        role: Role::Box,
        mode: "starpep".into(),
        window_backend: Some("clamp".into()),
        tunnel: "wireguard".into(),
        table: "starpep_box".into(),
        proxy_port: 8399,
        overflow_syns: 3,
        intercepted_syns: 2,
        capped_syns: 0,
        refused_flows: 0,
    };
    let m = PepMetrics::snapshot(&h, &t, t0 + Duration::from_millis(1500));
    assert_eq!(m.active_flows, 1);
    assert_eq!((m.bytes_up, m.bytes_down), (1005, 2007));
    assert_eq!(m.flows[0].age_ms, 1500);
    assert_eq!(m.flows[0].state, FlowState::Established);
    let json = serde_json::to_value(&m).unwrap();
    assert_eq!(json["role"], "box");
    assert_eq!(json["flows"][0]["state"], "established");
    assert_eq!(json["flows"][0]["satellite"]["congestion"], "cubic");
    assert_eq!(json["mode"], "starpep");
    assert_eq!(json["window_backend"], "clamp");
    assert_eq!(json["flows"][0]["control"]["w_bytes"], 20_000);
    assert_eq!(json["flows"][0]["control"]["phase"], "probe");
    let doc = include_str!("../../../docs/show-json.md");
    let undocumented = crate::testing::undocumented_keys(&json, doc);
    assert!(
        undocumented.is_empty(),
        "not in docs/show-json.md: {undocumented:?}"
    );
    let back: PepMetrics = serde_json::from_value(json).unwrap();
    assert_eq!(back, m, "show parses what the daemon sends");
    let text = m.render();
    assert!(text.contains("1 active / 10 max"), "{text}");
    assert!(
        text.contains("10.1.0.2:5 -> 10.2.0.2:80 established"),
        "{text}"
    );
    assert!(
        text.contains("satellite cubic rtt 512.0/500.1 ms cwnd 42"),
        "{text}"
    );
    assert!(
        text.contains("pep: Box starpep (window back-end clamp)"),
        "{text}"
    );
    assert!(
        text.contains("starpep probe inside: W 19.53 KiB (W_base 61.04 KiB)"),
        "{text}"
    );
}

fn control_record(flow: u64) -> ControlRecord {
    use super::starpep::{Decision, FlowSamples, Phase, Regime};
    let d = Decision {
        window: Some(20_000),
        w_base: 62_500,
        w_steady: 62_500,
        q: 30_000,
        q_hat: 28_000.0,
        r_down: 6_250_000.0,
        rtt_up: Duration::from_millis(10),
        phase: Phase::Probe,
        regime: Regime::Inside,
        rcv_buf: Some(70_000),
        link_cap: Some(150_000),
        sat_lowat: Some(12_500),
        sat_base: Some(Duration::from_millis(20)),
        link_probe: true,
        restart_cc: false,
    };
    let s = FlowSamples {
        unread: 20_000,
        pipe: 4_000,
        notsent: 6_000,
        ..FlowSamples::default()
    };
    let k = key(5);
    let r = ControlRecord::new(
        Duration::from_secs(1),
        flow,
        k.client,
        k.server,
        "clamp",
        &d,
        &s,
    );
    assert_eq!(r.proxy_queue_ms, 4.8);
    assert_eq!(r.r_down_mbps, 50.0);
    r
}
