//! The two data-path threads: TUN → encrypt → UDP (batched, GSO trains) and UDP → decrypt → TUN
//! (recvmmsg, GRO trains). Each direction runs on its own thread; they share the engine.

use std::io::{ErrorKind, IoSlice};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::io::udp::{OutMsg, RecvBatch};
use crate::io::{Tun, Udp};
use crate::tunnel::{Engine, Inbound, Outbound, DATA_OVERHEAD, MIN_DST};

/// Packets read from the TUN per batch (one sendmmsg).
const TX_BATCH: usize = 64;
/// Datagrams (or GRO trains) per recvmmsg.
const RX_BATCH: usize = 32;
/// Largest UDP payload a GRO train or a GSO send may carry.
const MAX_TRAIN: usize = 65507;

/// Counters of the I/O loops (the engine counts protocol events).
#[derive(Debug, Default)]
pub struct IoCounters {
    pub tun_read_errors: AtomicU64,
    pub tun_write_errors: AtomicU64,
    pub udp_send_dropped: AtomicU64,
    pub udp_recv_errors: AtomicU64,
}

/// What both loops share.
pub struct Shared {
    pub engine: Arc<Engine>,
    pub tun: Arc<Tun>,
    pub udp: Arc<Udp>,
    pub stop: Arc<AtomicBool>,
    pub counters: Arc<IoCounters>,
    pub mtu: usize,
}

impl Clone for Shared {
    fn clone(&self) -> Self {
        Shared {
            engine: self.engine.clone(),
            tun: self.tun.clone(),
            udp: self.udp.clone(),
            stop: self.stop.clone(),
            counters: self.counters.clone(),
            mtu: self.mtu,
        }
    }
}

/// Starts both threads; they return once `stop` is set (within ~200 ms).
pub fn spawn(shared: &Shared) -> std::io::Result<Vec<JoinHandle<()>>> {
    let tx = shared.clone();
    let rx = shared.clone();
    Ok(vec![
        std::thread::Builder::new()
            .name("tun-to-udp".into())
            .spawn(move || tx_loop(&tx))?,
        std::thread::Builder::new()
            .name("udp-to-tun".into())
            .spawn(move || rx_loop(&rx))?,
    ])
}

/// TUN → engine → UDP. Reads until the TUN queue is empty or the batch full, then sends the
/// batch with one sendmmsg; runs of equal-size datagrams to one endpoint go as one GSO train.
fn tx_loop(s: &Shared) {
    let slot = (s.mtu + DATA_OVERHEAD + 16).max(MIN_DST);
    // Never more than a slot can encrypt (a TUN read is cut to the buffer).
    let mut input = vec![0u8; slot - DATA_OVERHEAD];
    let mut out: Vec<Vec<u8>> = (0..TX_BATCH).map(|_| vec![0u8; slot]).collect();
    let mut lens = [0usize; TX_BATCH];
    let mut dests: [Option<SocketAddr>; TX_BATCH] = [None; TX_BATCH];
    let mut msgs: Vec<OutMsg> = Vec::with_capacity(TX_BATCH);
    let mut batch = s.udp.send_batch(TX_BATCH);
    loop {
        let mut n = 0;
        while n < TX_BATCH {
            match s.tun.read(&mut input) {
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
            group(&dests[..n], &lens[..n], s.udp.gso_enabled(), &mut msgs);
            let (_, dropped) = s.udp.send_all(&mut batch, &segs, &mut msgs);
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
        if let Err(e) = s.tun.wait_readable(Duration::from_millis(200)) {
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

/// UDP → engine → TUN.
fn rx_loop(s: &Shared) {
    let buf_len = if s.udp.gro_enabled() {
        MAX_TRAIN + 1
    } else {
        s.mtu + DATA_OVERHEAD + 64
    };
    let mut bufs: Vec<Vec<u8>> = (0..RX_BATCH).map(|_| vec![0u8; buf_len]).collect();
    let mut dst = vec![0u8; buf_len.max(MIN_DST)];
    let mut batch = RecvBatch::new(RX_BATCH);
    while !s.stop.load(Relaxed) {
        let n = match s.udp.recv(&mut batch, &mut bufs) {
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
                handle_datagram(s, from, d, &mut dst);
            }
        }
    }
}

fn handle_datagram(s: &Shared, from: SocketAddr, d: &[u8], dst: &mut [u8]) {
    match s.engine.decapsulate(from, d, dst) {
        Inbound::Tunnel(p) => {
            if let Err(e) = s.tun.write(p) {
                s.counters.tun_write_errors.fetch_add(1, Relaxed);
                tracing::debug!("TUN write: {e}");
            }
        }
        Inbound::Network {
            to,
            datagram,
            flush,
        } => {
            send_one(s, datagram, to);
            if let Some(peer) = flush {
                while let Some((to, d)) = s.engine.flush(peer, dst) {
                    send_one(s, d, to);
                }
            }
        }
        Inbound::Nothing => {}
    }
}

/// Sends one control datagram (handshake, cookie, keepalive, flushed packet).
pub fn send_one(s: &Shared, d: &[u8], to: SocketAddr) {
    if let Err(e) = s.udp.send_to(d, to) {
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
