//! Downloads from the server to every box of a [`Fleet`] (shell of `pop-scale` and its test):
//! `per_box` flows per box, all connected before any data moves, their bytes counted per box as
//! they arrive. A checked load sends each flow a seeded pseudo-random payload of a fixed size
//! and both ends compute its sha256; an open-ended one sends until [`Load::stop`].

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rand::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use socket2::{Domain, Socket, Type};

use crate::topo::{addr, Node};

use super::fleet::Fleet;

const CHUNK: usize = 64 * 1024;
/// How long connecting and accepting every flow may take.
const OPEN_WITHIN: Duration = Duration::from_secs(120);
/// A flow that receives nothing this long has failed.
const STALL: Duration = Duration::from_secs(120);

/// How much each flow carries.
#[derive(Debug, Clone, Copy)]
pub enum Amount {
    /// This many bytes of a seeded payload, sha256-checked at both ends.
    Checked(usize),
    /// Until [`Load::stop`], unchecked.
    Open,
}

#[derive(Debug, Clone, Copy)]
pub struct LoadSpec {
    pub per_box: usize,
    /// The server's port (one listener for every flow).
    pub port: u16,
    pub amount: Amount,
}

/// One flow's end at the box.
struct Received {
    index: u32,
    bytes: u64,
    sha: String,
}

/// The running load.
pub struct Load {
    per_box: Arc<Vec<AtomicU64>>,
    go: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    server: JoinHandle<anyhow::Result<Vec<(u32, String)>>>,
    clients: Vec<JoinHandle<anyhow::Result<Received>>>,
}

/// What the load delivered.
#[derive(Debug, Clone)]
pub struct LoadResult {
    pub flows: usize,
    /// Flows whose sha256 at the box equals the server's.
    pub intact: usize,
    pub bytes_per_box: Vec<u64>,
}

/// The flow's payload, chunk by chunk (seeded by its index).
struct Payload {
    rng: rand::rngs::StdRng,
    left: usize,
}

impl Payload {
    fn new(index: u32, len: usize) -> Payload {
        Payload {
            rng: rand::rngs::StdRng::seed_from_u64(u64::from(index)),
            left: len,
        }
    }

    fn next<'a>(&mut self, buf: &'a mut [u8]) -> Option<&'a [u8]> {
        let n = self.left.min(buf.len());
        if n == 0 {
            return None;
        }
        self.rng.fill_bytes(&mut buf[..n]);
        self.left -= n;
        Some(&buf[..n])
    }
}

/// Serves one flow: reads its index, waits for `go`, sends, and returns what it sent's sha256.
fn serve(
    mut c: TcpStream,
    amount: Amount,
    go: &AtomicBool,
    stop: &AtomicBool,
) -> anyhow::Result<(u32, String)> {
    let mut idx = [0u8; 4];
    c.read_exact(&mut idx)?;
    let index = u32::from_be_bytes(idx);
    while !go.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut buf = vec![0u8; CHUNK];
    let mut sha = Sha256::new();
    match amount {
        Amount::Checked(len) => {
            let mut p = Payload::new(index, len);
            while let Some(chunk) = p.next(&mut buf) {
                sha.update(chunk);
                c.write_all(chunk)?;
            }
        }
        Amount::Open => {
            buf.iter_mut().enumerate().for_each(|(i, b)| *b = i as u8);
            while !stop.load(Relaxed) {
                if c.write_all(&buf).is_err() {
                    break;
                }
            }
        }
    }
    c.shutdown(Shutdown::Write)?;
    let _ = c.read_to_end(&mut Vec::new());
    Ok((index, hex::encode(sha.finalize())))
}

/// Receives one flow to its end, counting into `counter` as bytes arrive.
fn receive(
    s: Socket,
    dst: SocketAddr,
    index: u32,
    counter: &AtomicU64,
    checked: bool,
) -> anyhow::Result<Received> {
    s.connect_timeout(&dst.into(), OPEN_WITHIN)?;
    let mut c = TcpStream::from(s);
    c.write_all(&index.to_be_bytes())?;
    c.set_read_timeout(Some(STALL))?;
    let mut buf = vec![0u8; CHUNK];
    let mut sha = Sha256::new();
    let mut bytes = 0u64;
    loop {
        let n = c.read(&mut buf)?;
        if n == 0 {
            break;
        }
        if checked {
            sha.update(&buf[..n]);
        }
        bytes += n as u64;
        counter.fetch_add(n as u64, Relaxed);
    }
    Ok(Received {
        index,
        bytes,
        sha: hex::encode(sha.finalize()),
    })
}

/// Lifts this process's descriptor limit to its hard limit (two sockets per flow, and more).
pub fn raise_nofile() -> anyhow::Result<()> {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE)?;
    setrlimit(Resource::RLIMIT_NOFILE, hard, hard)?;
    Ok(())
}

impl Load {
    /// Opens every flow (connected and accepted, no data yet); [`Load::go`] starts them.
    pub fn open(fleet: &Fleet, spec: &LoadSpec) -> anyhow::Result<Load> {
        raise_nofile()?;
        let boxes = fleet.star.len();
        let n = boxes * spec.per_box;
        let dst = SocketAddr::from((addr::SRV, spec.port));
        let l: TcpListener = fleet.star.topo.run_in(Node::Srv, move || {
            let s = Socket::new(Domain::IPV4, Type::STREAM, None)?;
            s.set_reuse_address(true)?;
            s.bind(&dst.into())?;
            s.listen(4096)?;
            Ok::<_, std::io::Error>(TcpListener::from(s))
        })??;
        let go = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let server = {
            let (go, stop, accepted, amount) =
                (go.clone(), stop.clone(), accepted.clone(), spec.amount);
            std::thread::spawn(move || -> anyhow::Result<Vec<(u32, String)>> {
                l.set_nonblocking(true)?;
                let end = Instant::now() + OPEN_WITHIN;
                let mut handlers = Vec::with_capacity(n);
                while handlers.len() < n {
                    match l.accept() {
                        Ok((c, _)) => {
                            c.set_nonblocking(false)?;
                            let (go, stop) = (go.clone(), stop.clone());
                            handlers.push(std::thread::spawn(move || serve(c, amount, &go, &stop)));
                            accepted.fetch_add(1, Relaxed);
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            anyhow::ensure!(
                                Instant::now() < end,
                                "server accepted {} of {n} flows",
                                handlers.len()
                            );
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(e) => return Err(e.into()),
                    }
                }
                handlers
                    .into_iter()
                    .map(|h| {
                        h.join()
                            .map_err(|_| anyhow::anyhow!("server thread panicked"))?
                    })
                    .collect()
            })
        };
        let per_box: Arc<Vec<AtomicU64>> =
            Arc::new((0..boxes).map(|_| AtomicU64::new(0)).collect());
        let checked = matches!(spec.amount, Amount::Checked(_));
        let mut clients = Vec::with_capacity(n);
        let per = spec.per_box;
        for b in 0..boxes {
            let socks = fleet.star.run_in_box(b, move || {
                (0..per)
                    .map(|_| Socket::new(Domain::IPV4, Type::STREAM, None))
                    .collect::<std::io::Result<Vec<Socket>>>()
            })??;
            for (k, s) in socks.into_iter().enumerate() {
                let index = (b * spec.per_box + k) as u32;
                let per_box = per_box.clone();
                clients.push(std::thread::spawn(move || {
                    receive(s, dst, index, &per_box[b], checked)
                }));
            }
        }
        let end = Instant::now() + OPEN_WITHIN;
        while accepted.load(Relaxed) < n {
            if server.is_finished() || Instant::now() >= end {
                let got = accepted.load(Relaxed);
                stop.store(true, Relaxed);
                go.store(true, Relaxed);
                let why = match server.join() {
                    Ok(Err(e)) => e.to_string(),
                    _ => "timed out".into(),
                };
                anyhow::bail!("{got} of {n} flows accepted by the server: {why}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(Load {
            per_box,
            go,
            stop,
            server,
            clients,
        })
    }

    /// Every flow starts sending.
    pub fn go(&self) {
        self.go.store(true, Relaxed);
    }

    /// Bytes received so far, per box.
    pub fn bytes_per_box(&self) -> Vec<u64> {
        self.per_box.iter().map(|c| c.load(Relaxed)).collect()
    }

    /// Open-ended flows stop sending (and end).
    pub fn stop(&self) {
        self.stop.store(true, Relaxed);
        self.go.store(true, Relaxed);
    }

    /// Waits for every flow to end; compares each flow's sha256 at both ends.
    pub fn finish(self) -> anyhow::Result<LoadResult> {
        let got: Vec<Received> = self
            .clients
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| anyhow::anyhow!("client thread panicked"))?
            })
            .collect::<anyhow::Result<_>>()?;
        let sent: std::collections::HashMap<u32, String> = self
            .server
            .join()
            .map_err(|_| anyhow::anyhow!("server thread panicked"))??
            .into_iter()
            .collect();
        let intact = got
            .iter()
            .filter(|r| r.bytes > 0 && sent.get(&r.index) == Some(&r.sha))
            .count();
        Ok(LoadResult {
            flows: got.len(),
            intact,
            bytes_per_box: self.per_box.iter().map(|c| c.load(Relaxed)).collect(),
        })
    }
}

/// One echo flow from box `b` to `srv:port` (`len` bytes there and back); whether they came
/// back intact. The flow is unsplit when the POP's table is full.
pub fn echo(fleet: &Fleet, b: usize, port: u16, len: usize) -> anyhow::Result<bool> {
    let dst = SocketAddr::from((addr::SRV, port));
    let l: TcpListener = fleet
        .star
        .topo
        .run_in(Node::Srv, move || TcpListener::bind(dst))??;
    let server = std::thread::spawn(move || -> std::io::Result<()> {
        let (mut c, _) = l.accept()?;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = c.read(&mut buf)?;
            if n == 0 {
                return c.shutdown(Shutdown::Write);
            }
            c.write_all(&buf[..n])?;
        }
    });
    let s = fleet
        .star
        .run_in_box(b, || Socket::new(Domain::IPV4, Type::STREAM, None))??;
    s.connect_timeout(&dst.into(), OPEN_WITHIN)?;
    let mut c = TcpStream::from(s);
    c.set_read_timeout(Some(STALL))?;
    let mut data = vec![0u8; len];
    Payload::new(u32::MAX, len).next(&mut data);
    let writer = {
        let mut w = c.try_clone()?;
        let data = data.clone();
        std::thread::spawn(move || -> std::io::Result<()> {
            w.write_all(&data)?;
            w.shutdown(Shutdown::Write)
        })
    };
    let mut back = Vec::with_capacity(len);
    c.read_to_end(&mut back)?;
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("echo writer panicked"))??;
    server
        .join()
        .map_err(|_| anyhow::anyhow!("echo server panicked"))??;
    Ok(back == data)
}
