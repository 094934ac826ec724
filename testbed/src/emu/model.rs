//! Binds the pure `link::LinkModel` to the pump's [`Link`] interface.

use std::time::Duration;

use crate::link::LinkModel;

use super::pump::{Held, Link};
use super::stats::LinkCounters;

impl Link<Held> for LinkModel<Held> {
    fn offer(&mut self, now: Duration, len: usize, pkt: Held) -> bool {
        self.enqueue(now, len, pkt).is_queued()
    }

    fn next_wakeup(&self) -> Option<Duration> {
        LinkModel::next_wakeup(self)
    }

    fn dequeue(&mut self, now: Duration) -> Option<(Held, Duration)> {
        self.dequeue_held(now)
            .map(|h| (h.pkt, h.depart.saturating_sub(h.arrival)))
    }

    fn queue_len(&self) -> (usize, usize) {
        LinkModel::queue_len(self)
    }

    fn counters(&self) -> LinkCounters {
        let s = self.stats();
        LinkCounters {
            packets_in: s.packets_in,
            bytes_in: s.bytes_in,
            delivered_packets: s.delivered_packets,
            delivered_bytes: s.delivered_bytes,
            dropped_queue: s.dropped_queue,
            dropped_loss: s.dropped_loss,
            dropped_outage: s.dropped_outage,
            in_flight: s.in_flight_pkts,
            max_queue_pkts: s.max_queue_pkts,
        }
    }
}
