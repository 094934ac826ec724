//! The daemon's Prometheus metrics (pure): the catalogue of every metric it exports ([`METRICS`],
//! a contract: names, types and meaning are documented in `docs/operations.md`), the typed
//! snapshot a scrape reads ([`Exported`]), and its encoding in the OpenMetrics text format with
//! prometheus-client. Peers are labelled by public key, as prometheus_wireguard_exporter does;
//! nothing is labelled per flow.

use std::fmt::Write as _;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeMetric, NoLabelSet,
};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::pep::control_stats::{ControlStats, Histogram, PHASES};
use crate::pep::PepMetrics;
use crate::tunnel::InterfaceMetrics;

/// One exported metric: its name as scraped (counters end in `_total`), type and help.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    pub name: &'static str,
    pub kind: Kind,
    pub help: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
    Histogram,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        }
    }
}

const fn def(name: &'static str, kind: Kind, help: &'static str) -> MetricDef {
    MetricDef { name, kind, help }
}

pub const PEER_SENT: MetricDef = def(
    "starpep_peer_sent_bytes_total",
    Kind::Counter,
    "Bytes sent to the peer (UDP payload).",
);
pub const PEER_RECEIVED: MetricDef = def(
    "starpep_peer_received_bytes_total",
    Kind::Counter,
    "Bytes received from the peer (UDP payload, authenticated).",
);
pub const PEER_HANDSHAKE: MetricDef = def(
    "starpep_peer_latest_handshake_seconds",
    Kind::Gauge,
    "UNIX time of the latest completed handshake (0: none yet).",
);
pub const PEER_HANDSHAKES: MetricDef = def(
    "starpep_peer_handshakes_total",
    Kind::Counter,
    "Handshakes completed with the peer.",
);
pub const PEER_DROPS: MetricDef = def("starpep_peer_dropped_packets_total", Kind::Counter, "Packets of the peer dropped, by cause: spoofed_source (inner source outside its AllowedIPs), bad_mac, replay, other (other decryption failures).");
pub const DROPS: MetricDef = def("starpep_dropped_packets_total", Kind::Counter, "Packets dropped before any peer, by cause: cookie (a handshake answered with a cookie under load), no_route, no_endpoint, invalid, unknown_peer.");
pub const PEERS: MetricDef = def("starpep_peers", Kind::Gauge, "Peers configured.");
pub const FLOWS_ACTIVE: MetricDef = def(
    "starpep_pep_active_flows",
    Kind::Gauge,
    "Split flows live now.",
);
pub const FLOWS: MetricDef = def(
    "starpep_pep_flows_total",
    Kind::Counter,
    "Split flows ended, by result: closed, reset, connect_failed, idle_timeout, shutdown, revoked.",
);
pub const FLOWS_ACCEPTED: MetricDef = def(
    "starpep_pep_accepted_flows_total",
    Kind::Counter,
    "Flows intercepted and split.",
);
pub const OVERFLOW_SYNS: MetricDef = def(
    "starpep_pep_overflow_syns_total",
    Kind::Counter,
    "SYNs that passed unsplit because the flow table was full (MaxFlows).",
);
pub const CAPPED_SYNS: MetricDef = def(
    "starpep_pep_capped_syns_total",
    Kind::Counter,
    "SYNs that passed unsplit because their client held its share (MaxFlowsPerClient/Host).",
);
pub const SPLIT_BYTES: MetricDef = def(
    "starpep_pep_split_bytes_total",
    Kind::Counter,
    "Bytes relayed by split flows, by direction (up: toward the server, down: toward the client).",
);
pub const WINDOW: MetricDef = def(
    "starpep_controller_window_bytes",
    Kind::Histogram,
    "StarPEP: the window W applied, per controller tick.",
);
pub const QUEUE: MetricDef = def(
    "starpep_controller_queue_bytes",
    Kind::Histogram,
    "StarPEP: the PEP's queue Q (unread + pipe + notsent), per controller tick.",
);
pub const QUEUE_DELAY: MetricDef = def(
    "starpep_controller_queue_delay_seconds",
    Kind::Histogram,
    "StarPEP: the queueing delay Q / R_down the PEP adds, per controller tick.",
);
pub const PHASE_TIME: MetricDef = def("starpep_controller_phase_seconds_total", Kind::Counter, "StarPEP: flow-seconds the controlled flows spent in each phase (steady, guard, probe, recover).");

/// Every metric, in the order a scrape lists them.
pub const METRICS: [MetricDef; 18] = [
    PEER_SENT,
    PEER_RECEIVED,
    PEER_HANDSHAKE,
    PEER_HANDSHAKES,
    PEER_DROPS,
    DROPS,
    PEERS,
    FLOWS_ACTIVE,
    FLOWS,
    FLOWS_ACCEPTED,
    OVERFLOW_SYNS,
    CAPPED_SYNS,
    SPLIT_BYTES,
    WINDOW,
    QUEUE,
    QUEUE_DELAY,
    PHASE_TIME,
    def("starpep_up", Kind::Gauge, "1: the daemon answers."),
];

/// What one scrape reports: the interface as `show --json` has it, and the PEP's figures.
#[derive(Debug, Clone)]
pub struct Exported {
    pub iface: InterfaceMetrics,
    pub pep: Option<PepMetrics>,
    pub control: Option<ControlStats>,
}

type Fmt = std::fmt::Result;

fn descriptor<'a>(
    enc: &'a mut DescriptorEncoder,
    d: &'static MetricDef,
) -> Result<prometheus_client::encoding::MetricEncoder<'a>, std::fmt::Error> {
    let (name, t) = match d.kind {
        // prometheus-client appends `_total` to counters.
        Kind::Counter => (d.name.trim_end_matches("_total"), MetricType::Counter),
        Kind::Gauge => (d.name, MetricType::Gauge),
        Kind::Histogram => (d.name, MetricType::Histogram),
    };
    enc.encode_descriptor(name, d.help, None, t)
}

/// A counter family: one series per label set.
fn counters<const N: usize, V: EncodeCounterValue + std::fmt::Debug>(
    enc: &mut DescriptorEncoder,
    d: &'static MetricDef,
    series: impl IntoIterator<Item = ([(&'static str, String); N], V)>,
) -> Fmt {
    let mut m = descriptor(enc, d)?;
    for (labels, v) in series {
        ConstCounter::new(v).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

fn gauge(enc: &mut DescriptorEncoder, d: &'static MetricDef, v: f64) -> Fmt {
    ConstGauge::new(v).encode(descriptor(enc, d)?)
}

fn histogram(enc: &mut DescriptorEncoder, d: &'static MetricDef, h: &Histogram) -> Fmt {
    descriptor(enc, d)?.encode_histogram::<NoLabelSet>(h.sum, h.count, &h.buckets(), None)
}

#[derive(Debug)]
struct Scrape(Exported);

impl Collector for Scrape {
    fn encode(&self, mut enc: DescriptorEncoder) -> Fmt {
        let e = &self.0;
        let peers = &e.iface.peers;
        let key = |p: &crate::tunnel::PeerMetrics| [("public_key", p.public_key.clone())];
        counters(
            &mut enc,
            &PEER_SENT,
            peers.iter().map(|p| (key(p), p.tx_bytes)),
        )?;
        counters(
            &mut enc,
            &PEER_RECEIVED,
            peers.iter().map(|p| (key(p), p.rx_bytes)),
        )?;
        let mut m = descriptor(&mut enc, &PEER_HANDSHAKE)?;
        for p in peers {
            let at = p.latest_handshake_unix.unwrap_or(0) as f64;
            ConstGauge::new(at).encode(m.encode_family(&key(p))?)?;
        }
        counters(
            &mut enc,
            &PEER_HANDSHAKES,
            peers.iter().map(|p| (key(p), p.handshakes)),
        )?;
        counters(
            &mut enc,
            &PEER_DROPS,
            peers.iter().flat_map(|p| {
                let other = p
                    .dropped_decrypt
                    .saturating_sub(p.dropped_replay + p.dropped_bad_mac);
                [
                    ("spoofed_source", p.dropped_source_not_allowed),
                    ("bad_mac", p.dropped_bad_mac),
                    ("replay", p.dropped_replay),
                    ("other", other),
                ]
                .map(|(c, v)| {
                    (
                        [
                            ("public_key", p.public_key.clone()),
                            ("cause", c.to_string()),
                        ],
                        v as f64,
                    )
                })
            }),
        )?;
        let i = &e.iface;
        counters(
            &mut enc,
            &DROPS,
            [
                ("cookie", i.cookie_replies),
                ("no_route", i.dropped_no_route),
                ("no_endpoint", i.dropped_no_endpoint),
                ("invalid", i.dropped_invalid),
                ("unknown_peer", i.dropped_unknown_peer),
            ]
            .map(|(c, v)| ([("cause", c.to_string())], v)),
        )?;
        gauge(&mut enc, &PEERS, peers.len() as f64)?;
        if let Some(p) = &e.pep {
            gauge(&mut enc, &FLOWS_ACTIVE, p.active_flows as f64)?;
            counters(
                &mut enc,
                &FLOWS,
                [
                    ("closed", p.closed),
                    ("reset", p.reset),
                    ("connect_failed", p.connect_failed),
                    ("idle_timeout", p.idle_timeout),
                    ("shutdown", p.shutdown),
                    ("revoked", p.revoked),
                ]
                .map(|(r, v)| ([("result", r.to_string())], v)),
            )?;
            counters(&mut enc, &FLOWS_ACCEPTED, [([], p.accepted)])?;
            counters(&mut enc, &OVERFLOW_SYNS, [([], p.overflow_syns)])?;
            counters(&mut enc, &CAPPED_SYNS, [([], p.capped_syns)])?;
            counters(
                &mut enc,
                &SPLIT_BYTES,
                [("up", p.bytes_up), ("down", p.bytes_down)]
                    .map(|(d, v)| ([("direction", d.to_string())], v)),
            )?;
        }
        if let Some(c) = &e.control {
            histogram(&mut enc, &WINDOW, &c.window_bytes)?;
            histogram(&mut enc, &QUEUE, &c.queue_bytes)?;
            histogram(&mut enc, &QUEUE_DELAY, &c.queue_delay_seconds)?;
            counters(
                &mut enc,
                &PHASE_TIME,
                PHASES
                    .iter()
                    .zip(c.phase_seconds)
                    .map(|(ph, s)| ([("phase", ph.as_str().to_string())], s)),
            )?;
        }
        gauge(&mut enc, &METRICS[17], 1.0)
    }
}

impl Exported {
    /// The OpenMetrics text of this snapshot; every series carries `interface`.
    pub fn encode(self) -> String {
        let iface = self.iface.interface.clone();
        let mut reg = Registry::with_labels(std::iter::once((
            std::borrow::Cow::Borrowed("interface"),
            std::borrow::Cow::Owned(iface),
        )));
        reg.register_collector(Box::new(Scrape(self)));
        let mut out = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut out, &reg) {
            out.clear();
            let _ = writeln!(out, "# encoding failed: {e}");
        }
        out
    }
}

#[cfg(test)]
#[path = "tests_metrics.rs"]
mod tests;
