//! What the profile promises, computed from the pure model: capacity per window, base delay,
//! and offline replays of the exact traffic a check sent (the ideal emulator's answer).

use std::time::Duration;

use crate::link::{CapacitySpec, Direction, DirectionSpec, LinkModel, Profile, QueueLimit};

use super::bed::Dir;

/// The model's direction for a calibration direction.
pub fn direction(d: Dir) -> Direction {
    match d {
        Dir::Down => Direction::Down,
        Dir::Up => Direction::Up,
    }
}

/// A pristine model of one direction, for capacity and delay queries.
pub fn model(p: &Profile, d: Dir, seed: u64) -> LinkModel<u64> {
    p.model(direction(d), seed)
}

/// The constant rate of a direction, if its capacity is not a trace.
pub fn constant_rate(spec: &DirectionSpec) -> Option<u64> {
    match spec.capacity {
        CapacitySpec::Rate(bps) => Some(bps),
        CapacitySpec::Trace(_) => None,
    }
}

/// The queueing delay a full drop-tail queue gives a `len`-byte packet at constant `bps`:
/// the whole limit ahead of it drains first.
pub fn full_queue_delay(limit: QueueLimit, len: usize, bps: u64) -> Duration {
    let bytes = match limit {
        QueueLimit::Packets(n) => n * len,
        QueueLimit::Bytes(b) => b,
    };
    Duration::from_secs_f64(bytes as f64 * 8.0 / bps as f64)
}

/// The highest capacity of any `window` in `[from, to)` (bits/s).
pub fn peak_capacity(m: &LinkModel<u64>, from: Duration, to: Duration, window: Duration) -> f64 {
    let mut t = from;
    let mut peak: f64 = 0.0;
    while t < to {
        peak = peak.max(m.capacity_bps_at(t, window));
        t += window;
    }
    peak
}

/// Replays `arrivals` (virtual time, bytes charged; ascending) through a fresh model of the
/// direction and returns each frame's release time (None: the model dropped it).
pub fn replay(
    p: &Profile,
    d: Dir,
    seed: u64,
    arrivals: &[(Duration, usize)],
) -> Vec<Option<Duration>> {
    let mut m = model(p, d, seed);
    let mut out = vec![None; arrivals.len()];
    for (i, (t, len)) in arrivals.iter().enumerate() {
        drain(&mut m, &mut out, Some(*t));
        m.enqueue(*t, *len, i as u64);
    }
    drain(&mut m, &mut out, None);
    out
}

/// Dequeues every frame released by `until` (None: all), booking its release time.
fn drain(m: &mut LinkModel<u64>, out: &mut [Option<Duration>], until: Option<Duration>) {
    while let Some(w) = m.next_wakeup() {
        if until.is_some_and(|u| w > u) {
            break;
        }
        match m.dequeue(w) {
            Some(i) => out[i as usize] = Some(w),
            None => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_queue_delay_of_the_geo_default() {
        let d = full_queue_delay(QueueLimit::Packets(500), 1500, 10_000_000);
        assert_eq!(d, Duration::from_millis(600));
        let d = full_queue_delay(QueueLimit::Bytes(150_000), 1500, 10_000_000);
        assert_eq!(d, Duration::from_millis(120));
    }
}
