//! What a pump publishes while it runs: I/O counters, the model's counters, occupancy samples.

use std::time::Duration;

/// Upper bounds (µs) of the release-lateness histogram buckets; the last bucket is open.
pub const LATENESS_BUCKETS_US: [u64; 7] = [10, 50, 100, 200, 500, 1000, 10000];

/// Counters of the I/O side of one direction (the model's own counters are in [`LinkCounters`]).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct IoCounters {
    /// Frames read from the ingress interface.
    pub rx_frames: u64,
    /// Frames larger than a buffer slot (dropped before the model saw them).
    pub rx_truncated: u64,
    /// Frames dropped because the buffer pool was exhausted.
    pub dropped_pool: u64,
    /// Frames written to the egress interface.
    pub tx_frames: u64,
    /// Frames the kernel refused on the egress interface.
    pub tx_errors: u64,
    /// Releases later than due by more than the late threshold (1 ms).
    pub late_releases: u64,
    pub max_late: Duration,
    pub lateness_sum: Duration,
    /// Counts per bucket of [`LATENESS_BUCKETS_US`] plus one open bucket.
    pub lateness_hist: [u64; LATENESS_BUCKETS_US.len() + 1],
}

impl IoCounters {
    pub fn record_lateness(&mut self, late: Duration) {
        self.max_late = self.max_late.max(late);
        self.lateness_sum += late;
        let us = late.as_micros() as u64;
        let i = LATENESS_BUCKETS_US
            .iter()
            .position(|b| us < *b)
            .unwrap_or(LATENESS_BUCKETS_US.len());
        self.lateness_hist[i] += 1;
    }

    /// Releases booked in the lateness histogram.
    pub fn releases(&self) -> u64 {
        self.lateness_hist.iter().sum()
    }
}

/// The link model's counters for one direction (copied out of `link::LinkStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinkCounters {
    pub packets_in: u64,
    pub bytes_in: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_outage: u64,
    /// Frames past the bottleneck, still propagating.
    pub in_flight: u64,
    pub max_queue_pkts: u64,
}

/// One occupancy sample, taken every `sample_every` (100 ms) of virtual time.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Sample {
    /// End of the sample's bin, ms since the replay start.
    pub t_ms: u64,
    pub queue_pkts: u64,
    pub queue_bytes: u64,
    /// Bytes released during the bin, as the model charges them (IP packet, no Ethernet header).
    pub delivered_bytes: u64,
    /// Queueing delay (arrival to leaving the bottleneck) of frames released in the bin.
    pub qdelay_mean_ms: f64,
    pub qdelay_max_ms: f64,
}

/// The latest state of one direction, shared between its pump thread and the reporter.
#[derive(Debug, Clone, Default)]
pub struct DirSnapshot {
    pub io: IoCounters,
    pub link: LinkCounters,
    pub queue_pkts: u64,
    pub queue_bytes: u64,
    pub pool_slots: u64,
    /// Virtual time of the snapshot (since the replay start).
    pub vtime: Duration,
    pub series: Vec<Sample>,
}
