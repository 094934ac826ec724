//! Pump tests on a fake clock, fake sockets and a fake constant-delay link (no root, no I/O).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::pool::Pool;
use super::pump::{FrameIo, Held, Link, Pump, PumpConfig};
use super::stats::{DirSnapshot, LinkCounters};
use super::sys::RxFrame;
use super::EmuError;

const MS: Duration = Duration::from_millis(1);

/// Virtual clock: every `now()` costs 1 µs, `wait` jumps to the next arrival or the timeout.
struct FakeIo {
    now: Duration,
    arrivals: VecDeque<(Duration, Vec<u8>)>,
    sent: Vec<(Duration, Vec<u8>)>,
    /// Time each send call takes.
    send_cost: Duration,
}

impl FakeIo {
    fn new(arrivals: Vec<(Duration, Vec<u8>)>) -> FakeIo {
        FakeIo {
            now: Duration::ZERO,
            arrivals: arrivals.into(),
            sent: Vec::new(),
            send_cost: Duration::ZERO,
        }
    }
}

impl FrameIo for FakeIo {
    fn now(&mut self) -> Duration {
        self.now += Duration::from_micros(1);
        self.now
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), EmuError> {
        let mut t = self.now + timeout;
        if let Some((a, _)) = self.arrivals.front() {
            t = t.min(*a).max(self.now);
        }
        self.now = t;
        Ok(())
    }

    fn recv(&mut self, st: &mut [u8], slot: usize, out: &mut [RxFrame]) -> Result<usize, EmuError> {
        let mut n = 0;
        while n < out.len() && self.arrivals.front().is_some_and(|(a, _)| *a <= self.now) {
            let (_, f) = self.arrivals.pop_front().unwrap_or_default();
            st[n * slot..n * slot + f.len()].copy_from_slice(&f);
            out[n] = RxFrame {
                len: f.len(),
                truncated: false,
            };
            n += 1;
        }
        Ok(n)
    }

    fn send(&mut self, st: &[u8], slot: usize, lens: &[usize]) -> Result<usize, EmuError> {
        self.now += self.send_cost;
        for (i, l) in lens.iter().enumerate() {
            self.sent
                .push((self.now, st[i * slot..i * slot + l].to_vec()));
        }
        Ok(lens.len())
    }
}

/// Constant delay, unlimited rate, FIFO, drop-tail at `limit` frames.
struct FakeLink {
    delay: Duration,
    limit: usize,
    q: VecDeque<(Duration, Held, usize)>,
    c: LinkCounters,
}

impl Link<Held> for FakeLink {
    fn offer(&mut self, now: Duration, len: usize, pkt: Held) -> bool {
        self.c.packets_in += 1;
        if self.q.len() >= self.limit {
            self.c.dropped_queue += 1;
            return false;
        }
        self.q.push_back((now + self.delay, pkt, len));
        true
    }
    fn next_wakeup(&self) -> Option<Duration> {
        self.q.front().map(|e| e.0)
    }
    fn dequeue(&mut self, now: Duration) -> Option<(Held, Duration)> {
        if self.q.front()?.0 > now {
            return None;
        }
        let (_, p, len) = self.q.pop_front()?;
        self.c.delivered_packets += 1;
        self.c.delivered_bytes += len as u64;
        Some((p, Duration::ZERO))
    }
    fn queue_len(&self) -> (usize, usize) {
        (self.q.len(), self.q.iter().map(|e| e.2).sum())
    }
    fn counters(&self) -> LinkCounters {
        self.c
    }
}

fn frame(i: usize) -> Vec<u8> {
    (0..60 + i % 1000).map(|b| (b + i) as u8).collect()
}

fn pump(
    arrivals: Vec<(Duration, Vec<u8>)>,
    limit: usize,
) -> (Pump<FakeIo, FakeLink>, Arc<Mutex<DirSnapshot>>) {
    let shared = Arc::new(Mutex::new(DirSnapshot::default()));
    let link = FakeLink {
        delay: 250 * MS,
        limit,
        q: VecDeque::new(),
        c: LinkCounters::default(),
    };
    let p = Pump::new(
        FakeIo::new(arrivals),
        link,
        Pool::new(2048, 16, 1 << 16),
        Duration::ZERO,
        PumpConfig::default(),
        shared.clone(),
    );
    (p, shared)
}

fn run_until(p: &mut Pump<FakeIo, FakeLink>, t: Duration) {
    while p.io().now < t {
        p.step().expect("step");
    }
}

#[test]
fn frames_leave_after_the_delay_in_order_and_intact() {
    let arrivals: Vec<_> = (0..500)
        .map(|i| (i as u32 * 3 * MS / 2, frame(i)))
        .collect();
    let (mut p, shared) = pump(arrivals.clone(), 1000);
    run_until(&mut p, Duration::from_secs(2));
    let sent = &p.io().sent;
    assert_eq!(sent.len(), 500);
    for ((at, f), (t0, f0)) in sent.iter().zip(&arrivals) {
        assert_eq!(f, f0);
        let d = *at - *t0;
        assert!(
            d >= 250 * MS && d < 250 * MS + Duration::from_micros(100),
            "{d:?}"
        );
    }
    let snap = shared.lock().unwrap().clone();
    assert_eq!(snap.io.rx_frames, 500);
    assert_eq!(snap.io.tx_frames, 500);
    assert_eq!(snap.io.late_releases, 0);
    assert!(snap.series.len() >= 19, "{} samples", snap.series.len());
    let delivered: u64 = snap.series.iter().map(|s| s.delivered_bytes).sum();
    assert_eq!(
        delivered,
        arrivals.iter().map(|a| a.1.len() as u64 - 14).sum::<u64>()
    );
}

#[test]
fn a_burst_larger_than_a_batch_is_taken_whole_and_drops_are_counted() {
    let arrivals: Vec<_> = (0..300).map(|i| (10 * MS, frame(i))).collect();
    let (mut p, shared) = pump(arrivals, 200);
    run_until(&mut p, Duration::from_secs(1));
    assert_eq!(p.io().sent.len(), 200);
    let snap = shared.lock().unwrap().clone();
    assert_eq!(snap.io.rx_frames, 300);
    assert_eq!(snap.link.dropped_queue, 100);
    assert_eq!(snap.queue_pkts, 0);
}

#[test]
fn slow_sends_are_booked_as_late_releases() {
    let arrivals: Vec<_> = (0..20).map(|i| (i as u32 * MS / 10, frame(i))).collect();
    let (mut p, shared) = pump(arrivals, 1000);
    p.io_mut().send_cost = 3 * MS;
    run_until(&mut p, Duration::from_secs(1));
    let snap = shared.lock().unwrap().clone();
    assert_eq!(snap.io.tx_frames, 20);
    assert!(snap.io.late_releases > 0);
    assert!(snap.io.max_late >= 2 * MS);
}
