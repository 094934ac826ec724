//! One direction of the emulated link: entry loss/outage checks, drop-tail queue, capacity
//! server, delay line. Pure: virtual time is passed in, frames are opaque payloads `P`.

use std::time::Duration;

use serde::Serialize;

use super::capacity::Server;
use super::delay::DelayLine;
use super::loss::LossProcess;
use super::profile::DirectionSpec;
use super::queue::{Frames, HeldFrame, QueueLimit};
use super::schedule::ReconfigSchedule;

/// What happened to an offered frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Queued,
    /// The bottleneck queue was full (drop-tail).
    DroppedQueue,
    /// Random loss.
    DroppedLoss,
    /// Arrived during an outage of a schedule with `outage_drop`.
    DroppedOutage,
}

impl Verdict {
    pub fn is_queued(self) -> bool {
        self == Verdict::Queued
    }
}

/// Counters of one direction; queue fields are as of the last call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_outage: u64,
    pub queue_pkts: u64,
    pub queue_bytes: u64,
    pub max_queue_pkts: u64,
    pub max_queue_bytes: u64,
    /// Frames past the bottleneck, still propagating.
    pub in_flight_pkts: u64,
}

/// One direction of the link. `P` is the frame payload (a buffer, an index ...).
#[derive(Debug)]
pub struct LinkModel<P> {
    server: Server,
    delay: DelayLine,
    loss: LossProcess,
    limit: QueueLimit,
    sched: Option<ReconfigSchedule>,
    frames: Frames<P>,
    stats: LinkStats,
    now: Duration,
}

/// Derives an independent sub-seed (SplitMix64 finaliser of `seed` and a stream tag).
pub fn sub_seed(seed: u64, stream: u64) -> u64 {
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl<P> LinkModel<P> {
    /// A model at virtual time 0. Loss and jitter draw from separate streams of `seed`.
    pub fn new(spec: &DirectionSpec, schedule: Option<&ReconfigSchedule>, seed: u64) -> Self {
        LinkModel {
            server: Server::new(spec.capacity.clone(), schedule.copied()),
            delay: DelayLine::new(spec.delay.clone(), sub_seed(seed, 2)),
            loss: LossProcess::new(spec.loss, sub_seed(seed, 1)),
            limit: spec.limit,
            sched: schedule.copied(),
            frames: Frames::default(),
            stats: LinkStats::default(),
            now: Duration::ZERO,
        }
    }

    /// Advances the clock (never backwards) and moves served frames into the delay line.
    fn advance(&mut self, now: Duration) {
        self.now = self.now.max(now);
        self.frames.advance(self.now);
        self.sync_stats();
    }

    fn sync_stats(&mut self) {
        let (p, b) = self.frames.queue_len();
        self.stats.queue_pkts = p as u64;
        self.stats.queue_bytes = b as u64;
        self.stats.max_queue_pkts = self.stats.max_queue_pkts.max(p as u64);
        self.stats.max_queue_bytes = self.stats.max_queue_bytes.max(b as u64);
        self.stats.in_flight_pkts = self.frames.in_flight() as u64;
    }

    /// A frame of `len` bytes (count the IP packet: mahimahi's opportunity carries a 1500-byte
    /// MTU packet) arrives at virtual time `now` (Duration since replay start; a `now` earlier
    /// than a previous call's is treated as that call's).
    pub fn enqueue(&mut self, now: Duration, len: usize, pkt: P) -> Verdict {
        self.advance(now);
        self.stats.packets_in += 1;
        self.stats.bytes_in += len as u64;
        let now = self.now;
        let in_outage = self
            .sched
            .as_ref()
            .is_some_and(|s| s.outage_drop && s.outage_end_at(now).is_some());
        let verdict = if in_outage {
            self.stats.dropped_outage += 1;
            Verdict::DroppedOutage
        } else if self.loss.lose() {
            self.stats.dropped_loss += 1;
            Verdict::DroppedLoss
        } else if !self.frames.admits(self.limit, len) {
            self.stats.dropped_queue += 1;
            Verdict::DroppedQueue
        } else {
            let depart = self.server.serve(now, len);
            let release = self.delay.release(depart);
            self.frames.push(HeldFrame {
                arrival: now,
                depart,
                release,
                len,
                pkt,
            });
            Verdict::Queued
        };
        // A frame served at once (depart == now) leaves the queue immediately.
        self.advance(now);
        verdict
    }

    /// Earliest virtual time at which `dequeue` returns a frame (None = nothing held). All
    /// service is computed on arrival, so no other wake-up is ever needed.
    pub fn next_wakeup(&self) -> Option<Duration> {
        self.frames.next_release()
    }

    /// The next frame whose release time is ≤ `now`, in arrival order.
    pub fn dequeue(&mut self, now: Duration) -> Option<P> {
        self.dequeue_held(now).map(|h| h.pkt)
    }

    /// As [`LinkModel::dequeue`], with the frame's arrival, departure and release times.
    pub fn dequeue_held(&mut self, now: Duration) -> Option<HeldFrame<P>> {
        self.advance(now);
        let h = self.frames.pop_released(self.now)?;
        self.stats.delivered_packets += 1;
        self.stats.delivered_bytes += h.len as u64;
        self.sync_stats();
        Some(h)
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// (frames, bytes) waiting in the bottleneck queue as of the last call.
    pub fn queue_len(&self) -> (usize, usize) {
        self.frames.queue_len()
    }

    /// Capacity offered over `[t, t + window)` in bits/s (outages excluded).
    pub fn capacity_bps_at(&self, t: Duration, window: Duration) -> f64 {
        self.server.capacity_bps_at(t, window)
    }

    /// The propagation delay at `t`: the trace's slot delay, or the constant delay without
    /// jitter; no queueing.
    pub fn base_delay_at(&self, t: Duration) -> Duration {
        self.delay.spec().base_at(t)
    }
}
