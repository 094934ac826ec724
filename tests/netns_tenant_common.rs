//! Shared by the tenant tests (included with `#[path]`, not a test of its own): a connect flood
//! (non-blocking connects at a fixed rate from inside one namespace toward destinations nobody
//! answers, each socket held for a while and then aborted), a paced download whose receiver
//! counts what arrives, and a PEP's flows per client address (`show --json`).

#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};

/// Flows of `pep` (show --json) whose client address is `ip`.
pub fn flows_from(pep: &serde_json::Value, ip: &str) -> u64 {
    pep["flows"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter(|f| {
                    f["client"]
                        .as_str()
                        .and_then(|c| c.parse::<SocketAddr>().ok())
                        .is_some_and(|c| c.ip().to_string() == ip)
                })
                .count() as u64
        })
        .unwrap_or(0)
}

/// What a flood did.
#[derive(Debug, Default, Clone, Copy)]
pub struct FloodStats {
    /// Connects issued.
    pub attempted: u64,
    /// Of those, connects that had completed a handshake (with a PEP: nobody else answers)
    /// when their socket was aborted.
    pub completed: u64,
    /// Connects the host's own stack refused at once (no descriptor or no free port: after a
    /// stall of the flood's thread it catches up in one burst, on top of what it holds).
    pub refused: u64,
    /// The achieved rate of connects sent (refused ones left out), connects/s.
    pub rate: f64,
}

/// A running flood; [`Flood::join`] waits for its end, and dropping it stops it early. Either
/// way every socket it holds is aborted.
pub struct Flood {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<FloodStats>>,
}

/// Starts `rate` non-blocking connects a second for `run` from the namespace `ns` (from its
/// default source address, the kernel choosing each port at connect), round robin over
/// `dsts`. Each socket is held for `hold` and then aborted (`SO_LINGER` 0: an RST if it had
/// connected), as a flood that gives up on its connects would. The connects are issued in
/// batches every millisecond, so the rate holds whatever the sleep granularity.
pub fn sustain(
    ns: String,
    dsts: Vec<SocketAddr>,
    rate: u64,
    hold: Duration,
    run: Duration,
) -> Flood {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::spawn(move || {
        starpep_testbed::topo::netns::run_in(&ns, move || flood_loop(&dsts, rate, hold, run, &flag))
            .expect("enter the flood's namespace")
    });
    Flood {
        stop,
        handle: Some(handle),
    }
}

impl Flood {
    /// Waits until the flood has run its course.
    pub fn join(mut self) -> FloodStats {
        let h = self.handle.take().expect("joined once");
        h.join().expect("flood thread")
    }
}

impl Drop for Flood {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn flood_loop(
    dsts: &[SocketAddr],
    rate: u64,
    hold: Duration,
    run: Duration,
    stop: &AtomicBool,
) -> FloodStats {
    let mut st = FloodStats::default();
    let mut held: VecDeque<(Instant, Socket)> = VecDeque::new();
    let t0 = Instant::now();
    let abort = |s: Socket, st: &mut FloodStats| {
        st.completed += u64::from(s.peer_addr().is_ok());
        let _ = s.set_linger(Some(Duration::ZERO));
    };
    while !stop.load(Relaxed) && t0.elapsed() < run {
        let due = (t0.elapsed().as_secs_f64() * rate as f64) as u64;
        while st.attempted < due {
            let dst = dsts[st.attempted as usize % dsts.len()];
            st.attempted += 1;
            let Ok(s) = Socket::new(Domain::for_address(dst), Type::STREAM, None) else {
                st.refused += 1;
                continue;
            };
            s.set_nonblocking(true).unwrap();
            match s.connect(&dst.into()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(nix::libc::EINPROGRESS) => {}
                Err(_) => {
                    st.refused += 1;
                    continue;
                }
            }
            held.push_back((Instant::now() + hold, s));
        }
        let now = Instant::now();
        while held.front().is_some_and(|(t, _)| *t <= now) {
            let (_, s) = held.pop_front().unwrap();
            abort(s, &mut st);
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    st.rate = (st.attempted - st.refused) as f64 / t0.elapsed().as_secs_f64();
    for (_, s) in held {
        abort(s, &mut st);
    }
    st
}

/// A download paced by its sender: `chunk` bytes every `every` from an accepted connection of
/// `l` until `stop`; the receiver side (`c`) counts what arrives, with its arrival times.
pub struct Paced {
    stop: Arc<AtomicBool>,
    got: Arc<AtomicU64>,
    writer: JoinHandle<u64>,
    reader: JoinHandle<Vec<u8>>,
    marks: Arc<std::sync::Mutex<Vec<(Instant, u64)>>>,
    chunk: usize,
}

/// The paced download's `k`-th chunk: each one different, so a lost, repeated or reordered
/// chunk shows.
fn chunk_data(chunk: usize, k: u32) -> Vec<u8> {
    starpep_tests::payload(chunk, u64::from(k) + 1)
}

/// How a paced download ended.
#[derive(Debug)]
pub struct PacedEnd {
    pub sent: u64,
    pub received: u64,
    /// Every byte arrived, in order, as sent.
    pub intact: bool,
}

impl Paced {
    /// The sender accepts one connection on `l` (the client `c` has connected to it).
    pub fn start(l: TcpListener, mut c: TcpStream, chunk: usize, every: Duration) -> Paced {
        let stop = Arc::new(AtomicBool::new(false));
        let got = Arc::new(AtomicU64::new(0));
        let marks = Arc::new(std::sync::Mutex::new(Vec::new()));
        let flag = stop.clone();
        let writer = std::thread::spawn(move || {
            let (mut s, _) = l.accept().expect("accept the paced download");
            let t0 = Instant::now();
            let mut sent = 0u64;
            let mut k = 0u32;
            while !flag.load(Relaxed) {
                s.write_all(&chunk_data(chunk, k)).expect("paced write");
                sent += chunk as u64;
                k += 1;
                if let Some(d) = (t0 + every * k).checked_duration_since(Instant::now()) {
                    std::thread::sleep(d);
                }
            }
            s.shutdown(std::net::Shutdown::Write).unwrap();
            sent
        });
        let (n, m) = (got.clone(), marks.clone());
        let reader = std::thread::spawn(move || {
            let mut all = Vec::new();
            let mut buf = vec![0u8; 1 << 16];
            loop {
                let k = c.read(&mut buf).expect("paced read");
                if k == 0 {
                    return all;
                }
                all.extend_from_slice(&buf[..k]);
                let total = n.fetch_add(k as u64, Relaxed) + k as u64;
                m.lock().unwrap().push((Instant::now(), total));
            }
        });
        Paced {
            stop,
            got,
            writer,
            reader,
            marks,
            chunk,
        }
    }

    /// Bytes received so far.
    pub fn received(&self) -> u64 {
        self.got.load(Relaxed)
    }

    /// The bytes received between `from` and `to`, a rate in bytes/s.
    pub fn rate_between(&self, from: Instant, to: Instant) -> f64 {
        let m = self.marks.lock().unwrap();
        let at = |t: Instant| {
            m.iter()
                .take_while(|(when, _)| *when <= t)
                .last()
                .map_or(0, |(_, n)| *n)
        };
        (at(to) - at(from)) as f64 / (to - from).as_secs_f64()
    }

    /// Ends the download and checks every chunk.
    pub fn finish(self) -> PacedEnd {
        self.stop.store(true, Relaxed);
        let sent = self.writer.join().expect("paced writer");
        let got = self.reader.join().expect("paced reader");
        let intact = got.len() as u64 == sent
            && got
                .chunks(self.chunk)
                .enumerate()
                .all(|(k, c)| c == chunk_data(self.chunk, k as u32).as_slice());
        PacedEnd {
            sent,
            received: got.len() as u64,
            intact,
        }
    }
}
