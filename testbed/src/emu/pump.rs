//! The real-time driver of one direction: frames in → `LinkModel` → frames out at their due time.
//!
//! Generic over [`FrameIo`] (clock + capture + inject), so it runs against AF_PACKET ports in
//! `satlink run` and against a fake clock and fake sockets in unit tests.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::pool::Pool;
use super::stats::{DirSnapshot, IoCounters, LinkCounters, Sample};
use super::sys::{RxFrame, MAX_BATCH};
use super::EmuError;

/// The outside world of a pump.
pub trait FrameIo {
    /// The monotonic clock (any origin; the pump subtracts its epoch).
    fn now(&mut self) -> Duration;
    /// Blocks until a frame may be waiting or `timeout` passes.
    fn wait(&mut self, timeout: Duration) -> Result<(), EmuError>;
    /// Non-blocking: frames now waiting, frame i into `staging[i * slot..]`.
    fn recv(
        &mut self,
        staging: &mut [u8],
        slot: usize,
        out: &mut [RxFrame],
    ) -> Result<usize, EmuError>;
    /// Sends frames i < lens.len() from `staging[i * slot..]`; how many were taken.
    fn send(&mut self, staging: &[u8], slot: usize, lens: &[usize]) -> Result<usize, EmuError>;
}

/// What the pump needs from a link model (implemented by `link::LinkModel` in `model.rs`).
pub trait Link<P> {
    /// Offers a frame (`len` = bytes the model charges) arriving at `now`; false if dropped.
    fn offer(&mut self, now: Duration, len: usize, pkt: P) -> bool;
    /// When the next frame is due out, if any is held.
    fn next_wakeup(&self) -> Option<Duration>;
    /// The next frame due at or before `now`, with its queueing delay (arrival to the moment
    /// its last byte left the bottleneck).
    fn dequeue(&mut self, now: Duration) -> Option<(P, Duration)>;
    /// Frames and bytes waiting in the bottleneck queue.
    fn queue_len(&self) -> (usize, usize);
    fn counters(&self) -> LinkCounters;
}

/// Timing knobs of a pump.
#[derive(Debug, Clone, Copy)]
pub struct PumpConfig {
    /// Sleep until this long before a release, then spin (and keep receiving).
    pub spin: Duration,
    /// Queue occupancy sample period (and stats publication period).
    pub sample_every: Duration,
    /// A release later than due by more than this counts as late (and warns, rate-limited).
    pub late_threshold: Duration,
    /// Never block longer than this (the stop flag is checked at least this often).
    pub max_wait: Duration,
    /// SCHED_FIFO priority of the direction threads (None: normal scheduling).
    pub rt_priority: Option<i32>,
}

impl Default for PumpConfig {
    fn default() -> Self {
        PumpConfig {
            spin: Duration::from_micros(30),
            sample_every: Duration::from_millis(100),
            late_threshold: Duration::from_millis(1),
            max_wait: Duration::from_millis(20),
            rt_priority: Some(10),
        }
    }
}

/// A frame held by the model: its pool slot and frame length.
#[derive(Debug, Clone, Copy)]
pub struct Held {
    slot: u32,
    len: u32,
}

/// Ethernet header bytes: the model is charged the IP packet (mahimahi's opportunities carry
/// 1500-byte MTU packets), not the frame.
const ETH_HEADER: usize = 14;

/// Per-bin accumulators between two samples.
#[derive(Debug, Default, Clone, Copy)]
struct Bin {
    delivered_pkts: u64,
    delivered_bytes: u64,
    qdelay_sum: Duration,
    qdelay_max: Duration,
}

/// One direction's pump.
pub struct Pump<I: FrameIo, L: Link<Held>> {
    io: I,
    model: L,
    pool: Pool,
    epoch: Duration,
    cfg: PumpConfig,
    rx_stage: Vec<u8>,
    tx_stage: Vec<u8>,
    tx_lens: [usize; MAX_BATCH],
    tx_due: [Duration; MAX_BATCH],
    tx_n: usize,
    io_stats: IoCounters,
    bin: Bin,
    next_sample: Duration,
    last_warn: Option<Duration>,
    late_since_warn: u64,
    /// Samples not yet handed to `shared` (its lock was busy).
    pending: Vec<Sample>,
    shared: Arc<Mutex<DirSnapshot>>,
}

impl<I: FrameIo, L: Link<Held>> Pump<I, L> {
    /// A pump whose virtual time 0 is monotonic time `epoch`.
    pub fn new(
        io: I,
        model: L,
        pool: Pool,
        epoch: Duration,
        cfg: PumpConfig,
        shared: Arc<Mutex<DirSnapshot>>,
    ) -> Pump<I, L> {
        let slot = pool.slot_size();
        Pump {
            io,
            model,
            epoch,
            cfg,
            rx_stage: vec![0u8; slot * MAX_BATCH],
            tx_stage: vec![0u8; slot * MAX_BATCH],
            pool,
            tx_lens: [0; MAX_BATCH],
            tx_due: [Duration::ZERO; MAX_BATCH],
            tx_n: 0,
            io_stats: IoCounters::default(),
            bin: Bin::default(),
            next_sample: cfg.sample_every,
            last_warn: None,
            late_since_warn: 0,
            pending: Vec::with_capacity(64),
            shared,
        }
    }

    /// Virtual (model) time now.
    fn vnow(&mut self) -> Duration {
        self.io.now().saturating_sub(self.epoch)
    }

    pub fn model(&self) -> &L {
        &self.model
    }

    pub fn io(&self) -> &I {
        &self.io
    }

    pub fn io_mut(&mut self) -> &mut I {
        &mut self.io
    }

    /// Runs until `stop` is set, then publishes the final snapshot.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), EmuError> {
        while !stop.load(Ordering::Relaxed) {
            self.step()?;
        }
        let now = self.vnow();
        self.publish(now, false, true);
        Ok(())
    }

    /// One turn: release what is due, take in what arrived, then sleep or spin until the next
    /// event (release, sample, or `max_wait`).
    pub fn step(&mut self) -> Result<(), EmuError> {
        let now = self.vnow();
        self.release_due(now)?;
        let got = self.receive()?;
        let now = self.vnow();
        if now >= self.next_sample {
            self.publish(now, true, false);
        }
        if got == MAX_BATCH {
            return Ok(()); // more may be waiting: no sleep
        }
        let mut deadline = self.next_sample.min(now + self.cfg.max_wait);
        if let Some(w) = self.model.next_wakeup() {
            deadline = deadline.min(w);
        }
        if deadline > now + self.cfg.spin {
            self.io.wait(deadline - self.cfg.spin - now)?;
        } else {
            std::hint::spin_loop();
        }
        Ok(())
    }

    fn receive(&mut self) -> Result<usize, EmuError> {
        let slot = self.pool.slot_size();
        let mut frames = [RxFrame::default(); MAX_BATCH];
        let got = self.io.recv(&mut self.rx_stage, slot, &mut frames)?;
        if got == 0 {
            return Ok(0);
        }
        let now = self.vnow();
        for (i, f) in frames.iter().take(got).enumerate() {
            self.io_stats.rx_frames += 1;
            if f.truncated {
                self.io_stats.rx_truncated += 1;
                continue;
            }
            let frame = &self.rx_stage[i * slot..i * slot + f.len];
            let Some(h) = self.pool.store(frame) else {
                self.io_stats.dropped_pool += 1;
                continue;
            };
            let held = Held {
                slot: h,
                len: f.len as u32,
            };
            let charged = f.len.saturating_sub(ETH_HEADER).max(1);
            if !self.model.offer(now, charged, held) {
                self.pool.release(h);
            }
        }
        Ok(got)
    }

    fn release_due(&mut self, now: Duration) -> Result<(), EmuError> {
        while let Some(due) = self.model.next_wakeup() {
            if due > now {
                break;
            }
            let Some((held, qdelay)) = self.model.dequeue(now) else {
                break;
            };
            let slot = self.pool.slot_size();
            let n = self.tx_n;
            let len = held.len as usize;
            self.tx_stage[n * slot..n * slot + len]
                .copy_from_slice(&self.pool.buf(held.slot)[..len]);
            self.pool.release(held.slot);
            self.tx_lens[n] = len;
            self.tx_due[n] = due;
            self.tx_n += 1;
            self.bin.delivered_pkts += 1;
            self.bin.delivered_bytes += len.saturating_sub(ETH_HEADER).max(1) as u64;
            self.bin.qdelay_sum += qdelay;
            self.bin.qdelay_max = self.bin.qdelay_max.max(qdelay);
            if self.tx_n == MAX_BATCH {
                self.flush()?;
            }
        }
        self.flush()
    }

    /// Sends the staged frames (retrying the remainder once) and books their lateness.
    fn flush(&mut self) -> Result<(), EmuError> {
        let n = self.tx_n;
        if n == 0 {
            return Ok(());
        }
        self.tx_n = 0;
        let slot = self.pool.slot_size();
        let mut done = 0;
        for _attempt in 0..2 {
            if done == n {
                break;
            }
            let stage = &self.tx_stage[done * slot..n * slot];
            match self.io.send(stage, slot, &self.tx_lens[done..n]) {
                Ok(k) => done += k,
                Err(e) => tracing::debug!("{e}"),
            }
        }
        self.io_stats.tx_frames += done as u64;
        self.io_stats.tx_errors += (n - done) as u64;
        let sent_at = self.vnow();
        for due in self.tx_due[..n].iter().copied() {
            let late = sent_at.saturating_sub(due);
            self.io_stats.record_lateness(late);
            if late > self.cfg.late_threshold {
                self.io_stats.late_releases += 1;
                self.late_since_warn += 1;
            }
        }
        if self.late_since_warn > 0
            && self
                .last_warn
                .is_none_or(|t| sent_at >= t + Duration::from_secs(1))
        {
            tracing::warn!(
                late_releases = self.late_since_warn,
                max_late_ms = self.io_stats.max_late.as_secs_f64() * 1e3,
                "satlink is behind the trace (releases > {:?} late)",
                self.cfg.late_threshold
            );
            self.last_warn = Some(sent_at);
            self.late_since_warn = 0;
        }
        Ok(())
    }

    /// Closes the current occupancy bin if `sample`, then publishes counters and the pending
    /// samples. Never waits for the lock unless `wait` (the final publication): a reporter
    /// holding it (a normal-priority thread, possibly preempted) must not delay a release.
    fn publish(&mut self, now: Duration, sample: bool, wait: bool) {
        let (pkts, bytes) = self.model.queue_len();
        if sample {
            let b = std::mem::take(&mut self.bin);
            self.pending.push(Sample {
                t_ms: self.next_sample.as_millis() as u64,
                queue_pkts: pkts as u64,
                queue_bytes: bytes as u64,
                delivered_bytes: b.delivered_bytes,
                qdelay_mean_ms: if b.delivered_pkts > 0 {
                    b.qdelay_sum.as_secs_f64() * 1e3 / b.delivered_pkts as f64
                } else {
                    0.0
                },
                qdelay_max_ms: b.qdelay_max.as_secs_f64() * 1e3,
            });
            while self.next_sample <= now {
                self.next_sample += self.cfg.sample_every;
            }
        }
        let mut snap = match self.shared.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if !wait => return,
            Err(std::sync::TryLockError::WouldBlock) => {
                self.shared.lock().unwrap_or_else(|e| e.into_inner())
            }
        };
        snap.series.append(&mut self.pending);
        snap.io = self.io_stats;
        snap.link = self.model.counters();
        snap.queue_pkts = pkts as u64;
        snap.queue_bytes = bytes as u64;
        snap.pool_slots = self.pool.capacity() as u64;
        snap.vtime = now;
    }
}
