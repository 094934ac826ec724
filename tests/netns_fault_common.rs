//! Shared helpers of the netns_fault_* tests (included with `#[path]` next to
//! `netns_pep_common.rs`, not a test of its own): long sha256-checked streams between pc and srv
//! whose receive progress is sampled, their outcome (intact, cut, or reset), and satlink with a
//! profile written by the test.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use rand::{RngCore, SeedableRng};
use serde_json::Value;
use sha2::{Digest, Sha256};
use starpep_tests::{bin_path, Node, Proc, Topology};

use crate::common::{connect, listen};

const CHUNK: usize = 64 * 1024;

/// How a stream ended, seen from one side.
#[derive(Debug, Clone)]
pub struct SideEnd {
    pub bytes: u64,
    pub sha: String,
    /// The read or write error that ended it (`None`: it ended with EOF after everything).
    pub error: Option<String>,
    pub at: Instant,
}

/// One stream's outcome.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub len: u64,
    pub sender: SideEnd,
    pub receiver: SideEnd,
}

impl Outcome {
    /// Every byte arrived, hashes equal, and neither side saw an error.
    pub fn intact(&self) -> bool {
        self.sender.error.is_none()
            && self.receiver.error.is_none()
            && self.receiver.bytes == self.len
            && self.sender.sha == self.receiver.sha
    }

    /// Both sides ended with an error (a reset or a timeout), not with a clean EOF.
    pub fn failed_both_sides(&self) -> bool {
        self.sender.error.is_some() && self.receiver.error.is_some()
    }
}

/// A running stream.
pub struct Stream {
    pub len: u64,
    /// Bytes the receiver has read so far.
    pub received: Arc<AtomicU64>,
    pub done: Arc<AtomicBool>,
    /// The pc side's local address (the flow's client address in `show --json`).
    pub client: SocketAddr,
    threads: Option<(JoinHandle<SideEnd>, JoinHandle<SideEnd>)>,
}

impl Stream {
    /// Both sides have ended.
    pub fn ended(&self) -> bool {
        self.threads
            .as_ref()
            .is_none_or(|(s, r)| s.is_finished() && r.is_finished())
    }

    /// Waits up to `within` for both sides to end; `None` if one still runs (it hangs).
    pub fn join_within(self, within: Duration) -> Option<Outcome> {
        let end = Instant::now() + within;
        while !self.ended() {
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(self.join())
    }

    /// Waits for both sides (they end by themselves: EOF or error).
    pub fn join(mut self) -> Outcome {
        let (s, r) = self.threads.take().expect("joined once");
        Outcome {
            len: self.len,
            sender: s.join().expect("sender thread"),
            receiver: r.join().expect("receiver thread"),
        }
    }
}

fn send_side(mut s: TcpStream, len: u64, seed: u64, rate: Option<u64>) -> SideEnd {
    let t0 = Instant::now();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut sent = 0u64;
    let mut error = None;
    while sent < len {
        let n = (len - sent).min(CHUNK as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        if let Err(e) = s.write_all(&buf[..n]) {
            error = Some(format!("write: {e}"));
            break;
        }
        h.update(&buf[..n]);
        sent += n as u64;
        if let Some(r) = rate {
            let due = t0 + Duration::from_secs_f64(sent as f64 / r as f64);
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
        }
    }
    if error.is_none() {
        let _ = s.shutdown(Shutdown::Write);
        // Wait for the receiver's close: a reset after our last byte still counts.
        let mut rest = [0u8; 4096];
        loop {
            match s.read(&mut rest) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    error = Some(format!("drain: {e}"));
                    break;
                }
            }
        }
    }
    SideEnd {
        bytes: sent,
        sha: hex::encode(h.finalize()),
        error,
        at: Instant::now(),
    }
}

fn receive_side(mut s: TcpStream, len: u64, received: &AtomicU64) -> SideEnd {
    let mut h = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut got = 0u64;
    let mut error = None;
    loop {
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                h.update(&buf[..n]);
                got += n as u64;
                received.store(got, Relaxed);
            }
            Err(e) => {
                error = Some(format!("read: {e}"));
                break;
            }
        }
    }
    if error.is_none() && got < len {
        error = Some(format!("EOF after {got} of {len} bytes"));
    }
    let _ = s.shutdown(Shutdown::Write);
    SideEnd {
        bytes: got,
        sha: hex::encode(h.finalize()),
        error,
        at: Instant::now(),
    }
}

/// Starts a stream of `len` seeded bytes between pc and srv (`dst` on srv), srv → pc when
/// `down`. Sockets get `timeout` as read/write timeout (a hang becomes an error).
pub fn start_stream(
    topo: &Topology,
    dst: SocketAddr,
    len: u64,
    down: bool,
    seed: u64,
    timeout: Option<Duration>,
) -> Stream {
    start_stream_paced(topo, dst, len, down, seed, timeout, None)
}

/// [`start_stream`] whose sender writes at most `rate` bytes/s.
pub fn start_stream_paced(
    topo: &Topology,
    dst: SocketAddr,
    len: u64,
    down: bool,
    seed: u64,
    timeout: Option<Duration>,
    rate: Option<u64>,
) -> Stream {
    try_start_stream(topo, dst, len, down, seed, timeout, rate).expect("start a stream")
}

/// [`start_stream_paced`], or why the connection did not come up: pc's connect failed, or srv
/// accepted nothing within `timeout` (20 s without one; a split flow is answered by the box
/// before the PEPs' own connects reach srv).
pub fn try_start_stream(
    topo: &Topology,
    dst: SocketAddr,
    len: u64,
    down: bool,
    seed: u64,
    timeout: Option<Duration>,
    rate: Option<u64>,
) -> Result<Stream, String> {
    let l = listen(topo, Node::Srv, dst);
    let pc = connect(topo, Node::Pc, dst).map_err(|e| format!("connect from pc: {e}"))?;
    l.set_nonblocking(true).unwrap();
    let end = Instant::now() + timeout.unwrap_or(Duration::from_secs(20));
    let srv = loop {
        match l.accept() {
            Ok((s, _)) => break s,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < end => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => return Err(format!("accept at srv: {e}")),
        }
    };
    srv.set_nonblocking(false).unwrap();
    for s in [&pc, &srv] {
        s.set_read_timeout(timeout).unwrap();
        s.set_write_timeout(timeout).unwrap();
    }
    let client = pc.local_addr().unwrap();
    let (tx, rx) = if down { (srv, pc) } else { (pc, srv) };
    let received = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let (r2, d2) = (received.clone(), done.clone());
    let sender = std::thread::spawn(move || send_side(tx, len, seed, rate));
    let receiver = std::thread::spawn(move || {
        let end = receive_side(rx, len, &r2);
        d2.store(true, Relaxed);
        end
    });
    Ok(Stream {
        len,
        received,
        done,
        client,
        threads: Some((sender, receiver)),
    })
}

/// Samples every stream's received bytes every `every` until all are done.
pub struct Sampler {
    pub samples: Vec<(SystemTime, Vec<u64>)>,
}

impl Sampler {
    pub fn run(streams: &[&Stream], every: Duration) -> Sampler {
        let mut samples = Vec::new();
        loop {
            let v: Vec<u64> = streams.iter().map(|s| s.received.load(Relaxed)).collect();
            samples.push((SystemTime::now(), v));
            if streams.iter().all(|s| s.done.load(Relaxed)) {
                return Sampler { samples };
            }
            std::thread::sleep(every);
        }
    }

    /// Total bytes received by time `t` (the last sample at or before it).
    pub fn total_at(&self, t: SystemTime) -> u64 {
        self.samples
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .map_or(0, |(_, v)| v.iter().sum())
    }

    /// The first sample time at or after `from` when stream `i` had more than `base` bytes.
    pub fn first_above(&self, i: usize, from: SystemTime, base: u64) -> Option<SystemTime> {
        self.samples
            .iter()
            .find(|(at, v)| *at >= from && v[i] > base)
            .map(|(at, _)| *at)
    }

    /// Stream `i`'s bytes at time `t`.
    pub fn at(&self, i: usize, t: SystemTime) -> u64 {
        self.samples
            .iter()
            .take_while(|(at, _)| *at <= t)
            .last()
            .map_or(0, |(_, v)| v[i])
    }

    /// The first time at or after `from` when the total rate over `window` reached `rate`
    /// bytes/s.
    pub fn rate_reached(
        &self,
        from: SystemTime,
        window: Duration,
        rate: f64,
    ) -> Option<SystemTime> {
        self.samples
            .iter()
            .filter(|(at, _)| *at >= from + window)
            .find(|(at, _)| {
                let d = self.total_at(*at) - self.total_at(*at - window);
                d as f64 / window.as_secs_f64() >= rate
            })
            .map(|(at, _)| *at)
    }
}

/// satlink running a profile the test wrote (`text`), with its stats file.
pub struct Link {
    pub proc: Proc,
    pub stats: PathBuf,
    /// UNIX time of the replay start (the profile's times count from it).
    pub start: SystemTime,
}

pub fn start_link(topo: &Topology, name: &str, text: &str) -> Link {
    let profile = topo.tmpdir().join(format!("{name}.toml"));
    std::fs::write(&profile, text).unwrap();
    let stats = topo.tmpdir().join(format!("{name}-stats.json"));
    let stats_s = stats.display().to_string();
    let mut proc = topo
        .spawn_satlink(
            &bin_path("satlink"),
            &profile,
            &["--start", "now", "--stats-json", &stats_s],
        )
        .expect("satlink");
    let end = Instant::now() + Duration::from_secs(20);
    let start = loop {
        if let Some(s) = read_json(&stats).and_then(|v| v["replay_start_unix"].as_f64()) {
            break SystemTime::UNIX_EPOCH + Duration::from_secs_f64(s);
        }
        assert!(
            proc.try_status().is_none() && Instant::now() < end,
            "satlink did not start: {}",
            proc.log()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    Link { proc, stats, start }
}

impl Link {
    /// Stops satlink and returns its final report.
    pub fn stop(mut self) -> Value {
        self.proc.stop();
        read_json(&self.stats).expect("satlink stats")
    }
}

fn read_json(p: &Path) -> Option<Value> {
    serde_json::from_str(&std::fs::read_to_string(p).ok()?).ok()
}

/// Seconds between two instants of the wall clock (negative if `b` is before `a`).
pub fn secs(a: SystemTime, b: SystemTime) -> f64 {
    match b.duration_since(a) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}
