//! The frames a direction holds: the drop-tail bottleneck queue (frames whose last byte has
//! not yet left the server) followed by the delay line (left the server, not yet released).

use std::collections::VecDeque;
use std::time::Duration;

/// The bottleneck queue's drop-tail limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    /// At most this many frames waiting (LeoReplayer's default: 500).
    Packets(usize),
    /// At most this many bytes waiting.
    Bytes(usize),
}

impl Default for QueueLimit {
    fn default() -> Self {
        QueueLimit::Packets(500)
    }
}

/// One held frame with its precomputed times.
#[derive(Debug, Clone)]
pub struct HeldFrame<P> {
    pub arrival: Duration,
    /// Its last byte leaves the server.
    pub depart: Duration,
    /// It leaves the model (`depart` + propagation, order kept).
    pub release: Duration,
    pub len: usize,
    pub pkt: P,
}

/// Frames in FIFO order; `entries[..served]` have left the server, the rest are queued.
/// Departures and releases are non-decreasing along the deque.
#[derive(Debug)]
pub struct Frames<P> {
    entries: VecDeque<HeldFrame<P>>,
    served: usize,
    queue_pkts: usize,
    queue_bytes: usize,
}

impl<P> Default for Frames<P> {
    fn default() -> Self {
        Frames {
            entries: VecDeque::new(),
            served: 0,
            queue_pkts: 0,
            queue_bytes: 0,
        }
    }
}

impl<P> Frames<P> {
    /// Moves frames whose departure is ≤ `now` from the queue into the delay line.
    pub fn advance(&mut self, now: Duration) {
        while let Some(e) = self.entries.get(self.served) {
            if e.depart > now {
                break;
            }
            self.queue_pkts -= 1;
            self.queue_bytes -= e.len;
            self.served += 1;
        }
    }

    /// Whether a frame of `len` bytes fits under `limit` now (after [`Frames::advance`]).
    pub fn admits(&self, limit: QueueLimit, len: usize) -> bool {
        match limit {
            QueueLimit::Packets(n) => self.queue_pkts < n,
            QueueLimit::Bytes(b) => self.queue_bytes + len <= b,
        }
    }

    /// Appends a queued frame (its times must not precede the last one's).
    pub fn push(&mut self, h: HeldFrame<P>) {
        debug_assert!(self
            .entries
            .back()
            .is_none_or(|b| b.depart <= h.depart && b.release <= h.release));
        self.queue_pkts += 1;
        self.queue_bytes += h.len;
        self.entries.push_back(h);
    }

    /// The first frame's release time.
    pub fn next_release(&self) -> Option<Duration> {
        self.entries.front().map(|e| e.release)
    }

    /// Removes the first frame if it is released by `now` (after [`Frames::advance`]).
    pub fn pop_released(&mut self, now: Duration) -> Option<HeldFrame<P>> {
        if self.served == 0 || self.entries.front()?.release > now {
            return None;
        }
        self.served -= 1;
        self.entries.pop_front()
    }

    /// (frames, bytes) in the bottleneck queue.
    pub fn queue_len(&self) -> (usize, usize) {
        (self.queue_pkts, self.queue_bytes)
    }

    /// Frames past the server, still propagating.
    pub fn in_flight(&self) -> usize {
        self.served
    }
}
