//! Starts the two direction threads of `satlink run` on real AF_PACKET ports and stops them.
//!
//! left → right is the downlink (POP → box), right → left the uplink. Each thread owns the
//! capture socket of its ingress and the inject socket of its egress interface.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::afpacket::{slot_size, RxPort, TxPort};
use super::pool::Pool;
use super::pump::{FrameIo, Held, Link, Pump, PumpConfig};
use super::stats::DirSnapshot;
use super::sys::{self, RxFrame};
use super::EmuError;

/// Frame slots preallocated per direction, and the most a direction may hold.
const POOL_INITIAL: usize = 4096;
const POOL_MAX: usize = 1 << 17;

/// Clock and ports of one direction.
pub struct PortIo {
    rx: RxPort,
    tx: TxPort,
}

impl FrameIo for PortIo {
    fn now(&mut self) -> Duration {
        sys::mono_now()
    }

    fn wait(&mut self, timeout: Duration) -> Result<(), EmuError> {
        self.rx.wait(Some(timeout)).map(|_| ())
    }

    fn recv(
        &mut self,
        staging: &mut [u8],
        slot: usize,
        out: &mut [RxFrame],
    ) -> Result<usize, EmuError> {
        self.rx.recv(staging, slot, out)
    }

    fn send(&mut self, staging: &[u8], slot: usize, lens: &[usize]) -> Result<usize, EmuError> {
        self.tx.send(staging, slot, lens)
    }
}

/// Index of the downlink and uplink in [`Running`]'s arrays.
pub const DOWN: usize = 0;
pub const UP: usize = 1;

/// The two running directions.
pub struct Running {
    threads: Vec<JoinHandle<Result<(), EmuError>>>,
    shared: [Arc<Mutex<DirSnapshot>>; 2],
    stop: Arc<AtomicBool>,
}

/// Opens the four sockets (errors surface here, before any wait) and starts both directions;
/// each forwards from monotonic time matching UNIX time `start_unix` (frames that arrive
/// earlier are discarded: the link is not up yet).
pub fn start<L: Link<Held> + Send + 'static>(
    left: &str,
    right: &str,
    start_unix: Duration,
    cfg: PumpConfig,
    down: L,
    up: L,
) -> Result<Running, EmuError> {
    let slot = slot_size(left)?.max(slot_size(right)?);
    let down_io = PortIo {
        rx: RxPort::open(left)?,
        tx: TxPort::open(right)?,
    };
    let up_io = PortIo {
        rx: RxPort::open(right)?,
        tx: TxPort::open(left)?,
    };
    // The monotonic instant of `start_unix` (which may lie a little in the past).
    let (mono, real) = (sys::mono_now(), sys::realtime_now());
    let epoch = if start_unix >= real {
        mono + (start_unix - real)
    } else {
        mono.saturating_sub(real - start_unix)
    };
    let stop = Arc::new(AtomicBool::new(false));
    let shared = [
        Arc::new(Mutex::new(DirSnapshot::default())),
        Arc::new(Mutex::new(DirSnapshot::default())),
    ];
    let mut threads = Vec::new();
    for (name, io, link, sh) in [
        ("down", down_io, down, shared[DOWN].clone()),
        ("up", up_io, up, shared[UP].clone()),
    ] {
        let stop = stop.clone();
        let h = std::thread::Builder::new()
            .name(format!("satlink-{name}"))
            .spawn(move || direction(name, io, link, slot, epoch, cfg, sh, &stop))
            .map_err(|e| EmuError::Io {
                what: format!("spawn {name} thread"),
                source: e,
            })?;
        threads.push(h);
    }
    Ok(Running {
        threads,
        shared,
        stop,
    })
}

#[allow(clippy::too_many_arguments)]
fn direction<L: Link<Held>>(
    name: &str,
    io: PortIo,
    link: L,
    slot: usize,
    epoch: Duration,
    cfg: PumpConfig,
    shared: Arc<Mutex<DirSnapshot>>,
    stop: &AtomicBool,
) -> Result<(), EmuError> {
    let _span = tracing::info_span!("dir", name).entered();
    if let Err(e) = sys::set_precise_timers() {
        tracing::warn!("timer slack stays at its default: {e}");
    }
    if let Some(p) = cfg.rt_priority {
        if let Err(e) = sys::set_fifo_priority(p) {
            tracing::warn!("SCHED_FIFO {p} refused, normal scheduling: {e}");
        }
    }
    while sys::mono_now() < epoch {
        if stop.load(Ordering::Relaxed) {
            return Ok(());
        }
        sys::sleep_until_mono(epoch.min(sys::mono_now() + Duration::from_millis(50)));
    }
    let mut scratch = vec![0u8; slot * sys::MAX_BATCH];
    let early = io.rx.drain(&mut scratch, slot)?;
    drop(scratch);
    tracing::info!(
        "{} -> {}: link up, forwarding ({early} earlier frames discarded)",
        io.rx.ifname(),
        io.tx.ifname()
    );
    let pool = Pool::new(slot, POOL_INITIAL, POOL_MAX);
    let mut pump = Pump::new(io, link, pool, epoch, cfg, shared);
    let r = pump.run(stop);
    if r.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    r
}

impl Running {
    /// The latest snapshot of direction `i` ([`DOWN`] or [`UP`]).
    pub fn snapshot(&self, i: usize) -> DirSnapshot {
        self.shared[i]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether a direction has stopped by itself (an I/O error).
    pub fn failed(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Stops both directions and waits for them: their final snapshots, and the first error
    /// of either.
    pub fn stop(self) -> ([DirSnapshot; 2], Option<EmuError>) {
        self.stop.store(true, Ordering::Relaxed);
        let mut first_err = None;
        for h in self.threads {
            match h.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    first_err.get_or_insert(e);
                }
                Err(_) => {
                    first_err.get_or_insert(EmuError::Setup("direction thread panicked".into()));
                }
            }
        }
        let snaps = [
            self.shared[DOWN]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
            self.shared[UP]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        ];
        (snaps, first_err)
    }
}
