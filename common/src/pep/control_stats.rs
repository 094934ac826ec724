//! The StarPEP controllers' statistics for the metrics (pure): histograms of the window W, the
//! queue Q and the queueing delay it makes (Q / R_down) over every tick of every controlled
//! flow, and the flow-seconds spent in each phase. No per-flow series: flows only add to them.

use std::collections::HashMap;
use std::time::Duration;

use super::flows::FlowId;
use super::starpep::{ControlRecord, Phase};

/// Upper bounds of the byte histograms: 1 KiB to 64 MiB, doubling.
pub const BYTE_BOUNDS: [f64; 17] = [
    1024.0, 2048.0, 4096.0, 8192.0, 16384.0, 32768.0, 65536.0, 131072.0, 262144.0, 524288.0,
    1048576.0, 2097152.0, 4194304.0, 8388608.0, 16777216.0, 33554432.0, 67108864.0,
];
/// Upper bounds of the delay histogram, seconds: 1 ms to 5 s.
pub const DELAY_BOUNDS: [f64; 12] = [
    0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0,
];

/// A histogram: per upper bound, the observations at or below it and above the previous one
/// (`+Inf` last), their sum and count.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    pub bounds: &'static [f64],
    counts: Vec<u64>,
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Histogram {
        Histogram {
            bounds,
            counts: vec![0; bounds.len() + 1],
            sum: 0.0,
            count: 0,
        }
    }

    pub fn observe(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        let i = self.bounds.partition_point(|b| *b < v);
        self.counts[i] += 1;
        self.sum += v;
        self.count += 1;
    }

    /// Counts per upper bound, not cumulative, `+Inf` last as `f64::MAX` (what
    /// prometheus-client's histogram encoding takes).
    pub fn buckets(&self) -> Vec<(f64, u64)> {
        self.bounds
            .iter()
            .copied()
            .chain(std::iter::once(f64::MAX))
            .zip(self.counts.iter().copied())
            .collect()
    }
}

/// Every phase, in the order the metrics list them.
pub const PHASES: [Phase; 4] = [Phase::Steady, Phase::Guard, Phase::Probe, Phase::Recover];

/// The controllers' statistics since the PEP started.
#[derive(Debug, Clone)]
pub struct ControlStats {
    /// The window applied (ticks where one is).
    pub window_bytes: Histogram,
    /// Q = unread + pipe + notsent.
    pub queue_bytes: Histogram,
    /// Q / R_down, seconds (ticks where R_down is known).
    pub queue_delay_seconds: Histogram,
    /// Flow-seconds in each phase of [`PHASES`] (each controlled flow adds the time between
    /// its ticks to the phase it was in).
    pub phase_seconds: [f64; 4],
    /// Each live controlled flow's last tick: when, and in which phase.
    last: HashMap<FlowId, (Duration, Phase)>,
}

impl Default for ControlStats {
    fn default() -> Self {
        ControlStats {
            window_bytes: Histogram::new(&BYTE_BOUNDS),
            queue_bytes: Histogram::new(&BYTE_BOUNDS),
            queue_delay_seconds: Histogram::new(&DELAY_BOUNDS),
            phase_seconds: [0.0; 4],
            last: HashMap::new(),
        }
    }
}

fn phase_index(p: Phase) -> usize {
    PHASES.iter().position(|x| *x == p).unwrap_or(0)
}

impl ControlStats {
    /// One tick of flow `id` at `now` (the controllers' clock).
    pub fn observe(&mut self, id: FlowId, now: Duration, r: &ControlRecord) {
        if let Some(w) = r.w_bytes {
            self.window_bytes.observe(f64::from(w));
        }
        self.queue_bytes.observe(f64::from(r.q_bytes));
        if r.r_down_mbps > 0.0 {
            self.queue_delay_seconds.observe(r.proxy_queue_ms / 1000.0);
        }
        if let Some((at, phase)) = self.last.insert(id, (now, r.phase)) {
            self.phase_seconds[phase_index(phase)] += now.saturating_sub(at).as_secs_f64();
        }
    }

    /// Flow `id` ended (its time after its last tick is not counted).
    pub fn end(&mut self, id: FlowId) {
        self.last.remove(&id);
    }

    /// Controlled flows live now.
    pub fn live(&self) -> usize {
        self.last.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pep::starpep::Regime;

    fn rec(phase: Phase, w: Option<u32>, q: u32, queue_ms: f64) -> ControlRecord {
        ControlRecord {
            t_s: 0.0,
            flow: 1,
            client: "10.1.0.2:1".parse().unwrap(),
            server: "10.2.0.2:80".parse().unwrap(),
            backend: "clamp".into(),
            phase,
            regime: Regime::Inside,
            w_bytes: w,
            w_base_bytes: 0,
            w_steady_bytes: 0,
            q_bytes: q,
            q_hat_bytes: 0.0,
            unread_bytes: 0,
            pipe_bytes: 0,
            notsent_bytes: 0,
            r_down_mbps: if queue_ms > 0.0 { 10.0 } else { 0.0 },
            rtt_up_ms: 0.0,
            proxy_queue_ms: queue_ms,
            inflight_bytes: 0,
            link_cap_bytes: None,
            sat_base_ms: None,
            link_probe: false,
            cc_restart: false,
        }
    }

    #[test]
    fn histograms_count_each_observation_in_its_bucket() {
        let mut h = Histogram::new(&DELAY_BOUNDS);
        for v in [0.0005, 0.001, 0.003, 7.0, f64::NAN] {
            h.observe(v);
        }
        assert_eq!(h.count, 4, "NaN is not observed");
        let b = h.buckets();
        assert_eq!(b.len(), DELAY_BOUNDS.len() + 1);
        assert_eq!(b[0], (0.001, 2), "le is inclusive");
        assert_eq!(b[2], (0.005, 1));
        assert_eq!(*b.last().unwrap(), (f64::MAX, 1));
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), h.count);
        assert!((h.sum - 7.0045).abs() < 1e-9);
    }

    #[test]
    fn phase_time_is_the_time_between_a_flows_ticks_in_the_phase_it_was_in() {
        let mut s = ControlStats::default();
        let t = Duration::from_secs;
        s.observe(1, t(10), &rec(Phase::Steady, None, 1000, 0.0));
        s.observe(2, t(10), &rec(Phase::Guard, Some(4096), 5000, 4.0));
        s.observe(1, t(12), &rec(Phase::Probe, Some(8192), 2000, 1.0));
        s.observe(2, t(11), &rec(Phase::Guard, Some(4096), 5000, 4.0));
        s.observe(1, t(13), &rec(Phase::Probe, Some(8192), 2000, 1.0));
        assert_eq!(s.phase_seconds, [2.0, 1.0, 1.0, 0.0]);
        assert_eq!(s.live(), 2);
        s.end(1);
        s.observe(1, t(20), &rec(Phase::Recover, None, 0, 0.0));
        assert_eq!(s.phase_seconds[3], 0.0, "a new first tick adds nothing");
        assert_eq!(
            s.window_bytes.count, 4,
            "ticks without a window are left out"
        );
        assert_eq!(s.queue_bytes.count, 6);
        assert_eq!(
            s.queue_delay_seconds.count, 4,
            "ticks without R_down are left out"
        );
    }
}
