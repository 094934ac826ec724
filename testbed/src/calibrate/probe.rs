//! Runs stamped UDP traffic across a bed: senders and receivers in threads moved into the
//! namespaces at both ends of the emulated link, one flow per direction, all concurrently.

use std::net::SocketAddr;
use std::time::Duration;

use super::bed::{Bed, Dir};
use super::udp::{self, Receiver, Rx, SendPlan, SendReport};
use super::CalError;

/// One direction's traffic of a run.
#[derive(Debug, Clone)]
pub struct Flow {
    pub dir: Dir,
    /// UDP payload bytes per datagram.
    pub payload: usize,
    pub interval: Duration,
    pub count: u64,
}

/// What one direction's flow produced.
#[derive(Debug, Clone)]
pub struct FlowResult {
    pub dir: Dir,
    pub sent: SendReport,
    pub rx: Vec<Rx>,
    /// Virtual time of the first datagram.
    pub first: Duration,
}

/// Base port of calibration receivers (one per direction).
const PORT: u16 = 47_000;

/// Sends every flow (they start together at a multiple of `align` plus `phase`, at least
/// 200 ms from now, virtual time) and waits until `linger` after the last one was due.
pub fn run(
    bed: &Bed,
    flows: &[Flow],
    align: Duration,
    phase: Duration,
    linger: Duration,
) -> Result<Vec<FlowResult>, CalError> {
    let soon = bed.vnow() + Duration::from_millis(200);
    let a = align.as_nanos().max(1);
    let first = Duration::from_nanos((soon.as_nanos().div_ceil(a) * a) as u64) + phase;
    let first_unix = bed.replay_start + first;
    let last = flows
        .iter()
        .map(|f| f.interval * f.count as u32)
        .max()
        .unwrap_or_default();
    let until = first_unix + last + linger;
    let mut handles = Vec::new();
    for (i, f) in flows.iter().enumerate() {
        let (snode, sip, rnode, rip) = f.dir.ends();
        let port = PORT + i as u16;
        let dst = SocketAddr::new(rip, port);
        let rx = Receiver::bind_in(&bed.topo.ns(rnode), dst)?;
        let plan = SendPlan {
            bind: SocketAddr::new(sip, 0),
            dst,
            flow: i as u32,
            payload: f.payload,
            interval: f.interval,
            first_unix,
            count: f.count,
            min_sleep: Duration::from_micros(500).min(f.interval),
        };
        let recv = udp::in_netns(&bed.topo.ns(rnode), move || rx.run(until, usize::MAX));
        let send = udp::in_netns(&bed.topo.ns(snode), move || udp::send(&plan));
        handles.push((f.dir, send, recv));
    }
    let mut out = Vec::new();
    for (dir, send, recv) in handles {
        let sent = udp::join(send, "udp sender")?;
        let rx = udp::join(recv, "udp receiver")?;
        out.push(FlowResult {
            dir,
            sent,
            rx,
            first,
        });
    }
    Ok(out)
}
