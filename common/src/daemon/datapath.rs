//! The data-path workers: TUN → encrypt → UDP (batched, GSO trains) and UDP → decrypt → TUN
//! (recvmmsg, GRO trains). Worker `k` owns TUN queue `k` and UDP socket `k` and runs one thread
//! per direction; all share the engine (each peer behind its own mutex). Threading model and
//! figures: docs/datapath.md.
//!
//! A peer's datagrams reach the worker of its slot (`slot % workers`, the UDP group's steering
//! program), which decrypts them in order and writes them on its own TUN queue; the kernel then
//! hands the replies of those flows to the same queue, so the same worker encrypts them.

use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::io::udp::{OutMsg, RecvBatch};
use crate::io::{Tun, Udp, UdpGroup};
use crate::tunnel::{Engine, Inbound, Outbound, DATA_OVERHEAD, MIN_DST};

/// Packets read from the TUN per batch (one sendmmsg).
const TX_BATCH: usize = 64;
/// Datagrams (or GRO trains) per recvmmsg.
const RX_BATCH: usize = 32;
/// Largest UDP payload a GRO train or a GSO send may carry.
const MAX_TRAIN: usize = 65507;
/// Sets the number of workers (default: the cores this process may run on).
pub const WORKERS_ENV: &str = "STARPEP_WORKERS";
/// The kernel's limit of queues per TUN.
const MAX_WORKERS: usize = 256;

/// Counters of the I/O loops (the engine counts protocol events).
#[derive(Debug, Default)]
pub struct IoCounters {
    pub tun_read_errors: AtomicU64,
    pub tun_write_errors: AtomicU64,
    pub udp_send_dropped: AtomicU64,
    pub udp_recv_errors: AtomicU64,
}

/// What every worker shares.
#[derive(Clone)]
pub struct Shared {
    pub engine: Arc<Engine>,
    /// One queue per worker.
    pub tun: Arc<Vec<Tun>>,
    pub udp: Arc<UdpGroup>,
    pub stop: Arc<AtomicBool>,
    pub counters: Arc<IoCounters>,
    pub mtu: usize,
}

/// How many workers: [`WORKERS_ENV`] if set, else the cores available (with the reason when
/// the variable is set but unusable).
pub fn workers() -> (usize, Option<String>) {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match workers_from(std::env::var(WORKERS_ENV).ok().as_deref(), cores) {
        Ok(n) => (n, None),
        Err(e) => (cores.min(MAX_WORKERS), Some(e)),
    }
}

fn workers_from(env: Option<&str>, cores: usize) -> Result<usize, String> {
    match env.map(str::trim) {
        None | Some("") => Ok(cores.clamp(1, MAX_WORKERS)),
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=MAX_WORKERS).contains(&n) => Ok(n),
            _ => Err(format!(
                "{WORKERS_ENV}={v:?}: not a number of workers (1..={MAX_WORKERS}); using {cores}"
            )),
        },
    }
}

/// Starts every worker's threads (one per TUN queue sending, one per UDP socket receiving);
/// they return once `stop` is set (within ~200 ms).
pub fn spawn(shared: &Shared) -> std::io::Result<Vec<JoinHandle<()>>> {
    let mut threads = Vec::new();
    for k in 0..shared.tun.len() {
        let s = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("tun-to-udp-{k}"))
                .spawn(move || tx_loop(&s, k))?,
        );
    }
    for k in 0..shared.udp.len() {
        let s = shared.clone();
        threads.push(
            std::thread::Builder::new()
                .name(format!("udp-to-tun-{k}"))
                .spawn(move || rx_loop(&s, k))?,
        );
    }
    Ok(threads)
}

/// Worker `k`'s TUN queue → engine → UDP. Reads until the queue is empty or the batch full,
/// then sends the batch with one sendmmsg; runs of equal-size datagrams to one endpoint go as
/// one GSO train.
fn tx_loop(s: &Shared, k: usize) {
    let (tun, udp) = (&s.tun[k], s.udp.socket(k));
    let slot = (s.mtu + DATA_OVERHEAD + 16).max(MIN_DST);
    // Never more than a slot can encrypt (a TUN read is cut to the buffer).
    let mut input = vec![0u8; slot - DATA_OVERHEAD];
    let mut out: Vec<Vec<u8>> = (0..TX_BATCH).map(|_| vec![0u8; slot]).collect();
    let mut lens = [0usize; TX_BATCH];
    let mut dests: [Option<SocketAddr>; TX_BATCH] = [None; TX_BATCH];
    let mut msgs: Vec<OutMsg> = Vec::with_capacity(TX_BATCH);
    let mut batch = udp.send_batch(TX_BATCH);
    loop {
        let mut n = 0;
        while n < TX_BATCH {
            match tun.read(&mut input) {
                Ok(len) => {
                    let base = out[n].as_ptr() as usize;
                    if let Outbound::Send { to, datagram } =
                        s.engine.encapsulate(&input[..len], &mut out[n])
                    {
                        // boringtun writes every message from the start of `dst`.
                        debug_assert_eq!(datagram.as_ptr() as usize, base);
                        lens[n] = datagram.len();
                        dests[n] = Some(to);
                        n += 1;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    s.counters.tun_read_errors.fetch_add(1, Relaxed);
                    tracing::warn!("TUN read: {e}");
                    std::thread::sleep(Duration::from_millis(10));
                    break;
                }
            }
        }
        if n > 0 {
            let segs: Vec<IoSlice> = (0..n).map(|i| IoSlice::new(&out[i][..lens[i]])).collect();
            group(&dests[..n], &lens[..n], udp.gso_enabled(), &mut msgs);
            let (_, dropped) = udp.send_all(&mut batch, &segs, &mut msgs);
            if dropped > 0 {
                s.counters
                    .udp_send_dropped
                    .fetch_add(dropped as u64, Relaxed);
            }
            continue;
        }
        if s.stop.load(Relaxed) {
            return;
        }
        if let Err(e) = tun.wait_readable(Duration::from_millis(200)) {
            tracing::warn!("TUN poll: {e}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Splits a batch into messages: with `gso`, consecutive datagrams to the same endpoint and of
/// the same size form one train (its last datagram may be shorter).
fn group(dests: &[Option<SocketAddr>], lens: &[usize], gso: bool, msgs: &mut Vec<OutMsg>) {
    msgs.clear();
    let mut i = 0;
    while i < dests.len() {
        let to = dests[i].expect("filled slot");
        let size = lens[i];
        let mut j = i + 1;
        if gso {
            let max = (MAX_TRAIN / size.max(1)).min(64);
            while j < dests.len() && j - i < max && dests[j] == Some(to) && lens[j] <= size {
                j += 1;
                if lens[j - 1] < size {
                    break; // a shorter datagram ends the train
                }
            }
        }
        let count = j - i;
        msgs.push(OutMsg {
            to,
            first: i,
            count,
            gso: (count > 1).then_some(size as u16),
        });
        i = j;
    }
}

/// Worker `k`'s UDP socket → engine → its TUN queue.
fn rx_loop(s: &Shared, k: usize) {
    let (udp, tun) = (s.udp.socket(k), &s.tun[k % s.tun.len()]);
    let buf_len = if udp.gro_enabled() {
        MAX_TRAIN + 1
    } else {
        s.mtu + DATA_OVERHEAD + 64
    };
    let mut bufs: Vec<Vec<u8>> = (0..RX_BATCH).map(|_| vec![0u8; buf_len]).collect();
    let mut dst = vec![0u8; buf_len.max(MIN_DST)];
    let mut batch = RecvBatch::new(RX_BATCH);
    while !s.stop.load(Relaxed) {
        let n = match udp.recv(&mut batch, &mut bufs) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
                ) =>
            {
                continue
            }
            Err(e) => {
                s.counters.udp_recv_errors.fetch_add(1, Relaxed);
                tracing::warn!("UDP receive: {e}");
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        for (i, buf) in bufs.iter().enumerate().take(n) {
            let Some(from) = batch.addr(i) else { continue };
            let data = &buf[..batch.len(i)];
            if data.is_empty() {
                continue;
            }
            let seg = batch.gro_segment(i).unwrap_or(data.len());
            for d in data.chunks(seg) {
                handle_datagram(s, udp, tun, from, d, &mut dst);
            }
        }
    }
}

fn handle_datagram(s: &Shared, udp: &Udp, tun: &Tun, from: SocketAddr, d: &[u8], dst: &mut [u8]) {
    match s.engine.decapsulate(from, d, dst) {
        Inbound::Tunnel(p) => {
            if let Err(e) = tun.write(p) {
                s.counters.tun_write_errors.fetch_add(1, Relaxed);
                tracing::debug!("TUN write: {e}");
            }
        }
        Inbound::Network {
            to,
            datagram,
            flush,
        } => {
            send_one(s, udp, datagram, to);
            if let Some(peer) = flush {
                while let Some((to, d)) = s.engine.flush(peer, dst) {
                    send_one(s, udp, d, to);
                }
            }
        }
        Inbound::Nothing => {}
    }
}

/// Sends one control datagram (handshake, cookie, keepalive, flushed packet).
pub fn send_one(s: &Shared, udp: &Udp, d: &[u8], to: SocketAddr) {
    if let Err(e) = udp.send_to(d, to) {
        s.counters.udp_send_dropped.fetch_add(1, Relaxed);
        tracing::debug!(%to, "UDP send: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Option<SocketAddr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn workers_default_to_the_cores_and_the_variable_overrides() {
        assert_eq!(workers_from(None, 8), Ok(8));
        assert_eq!(workers_from(Some(""), 2), Ok(2));
        assert_eq!(workers_from(Some(" 3 "), 2), Ok(3));
        assert_eq!(workers_from(None, 1000), Ok(MAX_WORKERS));
        for bad in ["0", "-1", "x", "257"] {
            let e = workers_from(Some(bad), 2).unwrap_err();
            assert!(e.contains(WORKERS_ENV) && e.contains("using 2"), "{e}");
        }
    }

    #[test]
    fn trains_group_equal_sizes_to_one_endpoint() {
        let (x, y) = (a("10.0.0.1:1"), a("10.0.0.2:2"));
        let dests = [x, x, x, x, y, y, x];
        let lens = [100, 100, 100, 60, 100, 100, 100];
        let mut msgs = Vec::new();
        group(&dests, &lens, true, &mut msgs);
        let got: Vec<(usize, usize, Option<u16>)> =
            msgs.iter().map(|m| (m.first, m.count, m.gso)).collect();
        assert_eq!(
            got,
            vec![(0, 4, Some(100)), (4, 2, Some(100)), (6, 1, None)]
        );
        group(&dests, &lens, false, &mut msgs);
        assert_eq!(msgs.len(), 7);
        assert!(msgs.iter().all(|m| m.count == 1 && m.gso.is_none()));
    }

    #[test]
    fn a_longer_datagram_starts_a_new_train() {
        let x = a("10.0.0.1:1");
        let mut msgs = Vec::new();
        group(&[x, x, x], &[60, 100, 100], true, &mut msgs);
        let got: Vec<(usize, usize)> = msgs.iter().map(|m| (m.first, m.count)).collect();
        assert_eq!(got, vec![(0, 1), (1, 2)]);
    }

    #[test]
    fn trains_stay_below_the_udp_limit() {
        let x = a("10.0.0.1:1");
        let mut msgs = Vec::new();
        group(&[x; 64], &[1452; 64], true, &mut msgs);
        assert!(msgs.iter().all(|m| m.count * 1452 <= MAX_TRAIN), "{msgs:?}");
        assert_eq!(msgs.iter().map(|m| m.count).sum::<usize>(), 64);
    }
}
