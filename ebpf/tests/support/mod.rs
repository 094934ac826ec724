//! Shared helpers of the eBPF netns tests: namespaces with cleanup, setns threads, ss, transfers.
#![allow(dead_code)] // each test file uses a subset

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aya::programs::{SchedClassifier, TcAttachType};
use nix::sched::CloneFlags;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use sha2::{Digest, Sha256};
use starpep_ebpf::WindowRewriter;

/// The window limit of the controlled flow, in bytes.
pub const WINDOW: u32 = 20_000;
/// Bytes per transfer.
pub const PAYLOAD: usize = 5 << 20;
static NEXT: AtomicU32 = AtomicU32::new(100);

/// Root check of the project: fail without root unless `STARPEP_SKIP_NETNS` is set.
pub fn require_root() -> bool {
    if nix::unistd::Uid::effective().is_root() {
        return true;
    }
    if std::env::var_os("STARPEP_SKIP_NETNS").is_some() {
        eprintln!("skipping netns test: not root and STARPEP_SKIP_NETNS is set");
        return false;
    }
    panic!("netns tests need root (set STARPEP_SKIP_NETNS=1 to skip them explicitly)");
}

/// Runs a command, panics with its stderr if it fails, returns its stdout.
pub fn run(args: &[&str]) -> String {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", args.join(" ")));
    assert!(
        out.status.success(),
        "{}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Namespaces and daemons of one test: on drop (also while unwinding from a failed assertion)
/// the daemons get SIGTERM (SIGKILL after 2 s) and the namespaces are deleted.
pub struct Lab {
    id: u32,
    names: Vec<String>,
    procs: Vec<Child>,
    tmp: Option<std::path::PathBuf>,
}

impl Lab {
    pub fn new() -> Lab {
        Lab {
            id: NEXT.fetch_add(1, Ordering::Relaxed),
            names: Vec::new(),
            procs: Vec::new(),
            tmp: None,
        }
    }

    /// A scratch directory of this test (removed on drop).
    pub fn tmpdir(&mut self) -> std::path::PathBuf {
        let id = self.id;
        self.tmp
            .get_or_insert_with(|| {
                let d =
                    std::env::temp_dir().join(format!("starpep-ebpf-{}-{id}", std::process::id()));
                std::fs::create_dir_all(&d).expect("create tmpdir");
                d
            })
            .clone()
    }

    /// Creates the namespace `sp<pid>x<id>-<node>` (the test bed's naming) with lo up.
    pub fn ns(&mut self, node: &str) -> String {
        let name = format!("sp{}x{}-{node}", std::process::id(), self.id);
        run(&["ip", "netns", "add", &name]);
        self.names.push(name.clone());
        run(&["ip", "-n", &name, "link", "set", "lo", "up"]);
        name
    }

    /// A unique interface name `<tag><pid><id>` (at most 15 characters).
    pub fn dev(&self, tag: &str) -> String {
        format!("{tag}{}{}", std::process::id(), self.id)
    }

    /// A veth pair `a` (in `ns_a`) <-> `b` (in `ns_b`), up, each end with a /24 and a /64.
    pub fn link(&self, ns_a: &str, a: (&str, Addrs), ns_b: &str, b: (&str, Addrs)) {
        run(&[
            "ip", "link", "add", a.0, "netns", ns_a, "type", "veth", "peer", "name", b.0, "netns",
            ns_b,
        ]);
        for (ns, (dev, addrs)) in [(ns_a, a), (ns_b, b)] {
            addr_up(ns, dev, addrs, 24, 64);
        }
    }

    /// Starts `args` inside `ns` (via `ip netns exec`, output discarded); stopped on drop.
    pub fn spawn(&mut self, ns: &str, args: &[&str]) {
        let child = Command::new("ip")
            .args(["netns", "exec", ns])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", args.join(" ")));
        self.procs.push(child);
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for child in &mut self.procs {
            let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
            let deadline = Instant::now() + Duration::from_secs(2);
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in &self.names {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if let Some(d) = &self.tmp {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// An IPv4 and an IPv6 address of one interface.
#[derive(Clone, Copy, Debug)]
pub struct Addrs {
    pub v4: IpAddr,
    pub v6: IpAddr,
}

impl Addrs {
    /// `10.201.<net>.<host>` and `fd00:<net>::<host>`.
    pub fn new(net: u8, host: u8) -> Addrs {
        Addrs {
            v4: IpAddr::V4([10, 201, net, host].into()),
            v6: format!("fd00:{net}::{host}").parse().unwrap(),
        }
    }
    pub fn pick(&self, v6: bool) -> IpAddr {
        if v6 {
            self.v6
        } else {
            self.v4
        }
    }
}

/// Adds both addresses to `dev` in `ns` and sets it up.
pub fn addr_up(ns: &str, dev: &str, a: Addrs, len4: u8, len6: u8) {
    run(&[
        "ip",
        "-n",
        ns,
        "addr",
        "add",
        &format!("{}/{len4}", a.v4),
        "dev",
        dev,
    ]);
    let v6 = format!("{}/{len6}", a.v6);
    run(&["ip", "-n", ns, "addr", "add", &v6, "dev", dev, "nodad"]);
    run(&["ip", "-n", ns, "link", "set", dev, "up"]);
}

/// Runs `f` on a thread that entered the network namespace `ns`.
pub fn in_netns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let path = format!("/run/netns/{ns}");
    let handle = std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).unwrap_or_else(|e| panic!("open {path}: {e}"));
        nix::sched::setns(&fd, CloneFlags::CLONE_NEWNET).expect("setns");
        f()
    });
    handle
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Loads the rewriter and attaches it on `iface` inside `ns`.
pub fn load_and_attach(ns: &str, iface: &str) -> WindowRewriter {
    let dev = iface.to_string();
    let mut rw = in_netns(ns, move || {
        let mut rw = WindowRewriter::load().expect("load");
        rw.attach(&dev).expect("attach");
        rw
    });
    assert_eq!(rw.interfaces(), vec![iface.to_string()]);
    rw.attach(iface).expect("second attach is a no-op");
    assert_eq!(rw.interfaces(), vec![iface.to_string()]);
    rw
}

/// Number of TCX egress programs on `iface` in `ns` once a dropped link is gone: polled for up
/// to 2 s. A child that another test thread forks at the moment of the drop holds a copy of
/// the link's descriptor until it execs (the descriptor is close-on-exec), and the link lives
/// until the last copy closes; CI once saw it still attached right after the drop.
pub fn tcx_programs_after_drop(ns: &str, iface: &str) -> usize {
    let end = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let n = tcx_programs(ns, iface);
        if n == 0 || std::time::Instant::now() >= end {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Number of TCX egress programs on `iface` in `ns`.
pub fn tcx_programs(ns: &str, iface: &str) -> usize {
    let dev = iface.to_string();
    in_netns(ns, move || {
        SchedClassifier::query_tcx(&dev, TcAttachType::Egress)
            .expect("query tcx")
            .1
            .len()
    })
}

fn ss_addr(a: SocketAddr) -> String {
    match a {
        SocketAddr::V4(v4) => v4.to_string(),
        SocketAddr::V6(v6) => format!("[{}]:{}", v6.ip(), v6.port()),
    }
}

/// A `key:value` field of `ss -ti` for the socket `local -> remote` in `ns`.
pub fn ss_field(ns: &str, local: SocketAddr, remote: SocketAddr, field: &str) -> String {
    let (src, dst) = (ss_addr(local), ss_addr(remote));
    let out = run(&[
        "ip", "netns", "exec", ns, "ss", "-tinH", "src", &src, "dst", &dst,
    ]);
    let prefix = format!("{field}:");
    out.split_whitespace()
        .find_map(|t| t.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {field} in ss output for {local} -> {remote}: {out}"))
        .to_string()
}

/// The peer's advertised window as the socket `s` (in `ns`) sees it.
pub fn snd_wnd(ns: &str, s: &TcpStream) -> u32 {
    let (l, r) = (s.local_addr().unwrap(), s.peer_addr().unwrap());
    ss_field(ns, l, r, "snd_wnd").parse().unwrap()
}

/// Tcp InCsumErrors of the namespace (segments dropped for a bad checksum).
pub fn csum_errors(ns: &str) -> u64 {
    let snmp = run(&["ip", "netns", "exec", ns, "cat", "/proc/net/snmp"]);
    let mut tcp = snmp.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next().unwrap(), tcp.next().unwrap());
    let i = names
        .split_whitespace()
        .position(|n| n == "InCsumErrors")
        .unwrap();
    values.split_whitespace().nth(i).unwrap().parse().unwrap()
}

/// `PAYLOAD` deterministic pseudo-random bytes.
pub fn payload(seed: u32) -> Arc<Vec<u8>> {
    let mut x: u32 = 0x9e37_79b9 ^ seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x as u8
    };
    Arc::new((0..PAYLOAD).map(|_| next()).collect())
}

fn sha(data: &[u8]) -> String {
    hex::encode(Sha256::digest(data))
}

/// Sends `data` client -> server while sampling the client's snd_wnd (in `snd_ns`); returns
/// the sha256 of what arrived and the samples. Both sockets stay open.
fn transfer(
    snd_ns: &str,
    client: &TcpStream,
    server: &TcpStream,
    data: &Arc<Vec<u8>>,
) -> (String, Vec<u32>) {
    let (mut c, mut s) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    let d = Arc::clone(data);
    let sender = std::thread::spawn(move || c.write_all(&d).expect("send"));
    let done = Arc::new(AtomicBool::new(false));
    let (stop, ns, probe) = (
        Arc::clone(&done),
        snd_ns.to_string(),
        client.try_clone().unwrap(),
    );
    let sampler = std::thread::spawn(move || {
        let mut samples = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            samples.push(snd_wnd(&ns, &probe));
            std::thread::sleep(Duration::from_millis(5));
        }
        samples
    });
    let mut got = vec![0u8; data.len()];
    let received = s.read_exact(&mut got);
    done.store(true, Ordering::Relaxed);
    let samples = sampler.join().unwrap();
    received.expect("receive (a stalled flow here usually means bad TCP checksums)");
    sender.join().unwrap();
    (sha(&got), samples)
}

/// One byte `client` -> `server` and back, so that each side has sent and acknowledged data.
fn warm_up(client: &TcpStream, server: &TcpStream) {
    let (mut c, mut s) = (client, server);
    let mut b = [0u8; 1];
    c.write_all(b"w").expect("warm-up send");
    s.read_exact(&mut b).expect("warm-up receive");
    s.write_all(&b).expect("warm-up echo");
    c.read_exact(&mut b).expect("warm-up echo receive");
}

/// Two flows `snd` -> `rcv` (listening on `listen_ip`): the first limited to [`WINDOW`]
/// through `rw`, the second without an entry. Checks data, the sender's window, the counters,
/// the sender's checksum errors, and remove().
pub fn check_two_flows(rw: &mut WindowRewriter, snd: &str, rcv: &str, listen_ip: IpAddr) {
    let listener = in_netns(rcv, move || {
        TcpListener::bind((listen_ip, 0)).expect("bind")
    });
    let target = listener.local_addr().unwrap();
    let clients: Vec<TcpStream> = in_netns(snd, move || {
        (0..2)
            .map(|_| TcpStream::connect_timeout(&target, Duration::from_secs(5)).expect("connect"))
            .collect()
    });
    let mut servers: Vec<TcpStream> = (0..2).map(|_| listener.accept().unwrap().0).collect();
    for s in clients.iter().chain(&servers) {
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.set_write_timeout(Some(Duration::from_secs(10))).unwrap();
    }
    // Accepted sockets in client order.
    servers.sort_by_key(|s| {
        let peer = s.peer_addr().unwrap();
        clients.iter().position(|c| c.local_addr().unwrap() == peer)
    });
    let (c1, c2, s1, s2) = (&clients[0], &clients[1], &servers[0], &servers[1]);
    // The PEP's view: local = its socket, remote = the data sender.
    let flow1 = (s1.local_addr().unwrap(), s1.peer_addr().unwrap());
    let flow2 = (s2.local_addr().unwrap(), s2.peer_addr().unwrap());
    let wscale: u8 = ss_field(rcv, flow1.0, flow1.1, "wscale")
        .split(',')
        .nth(1)
        .and_then(|w| w.parse().ok())
        .expect("rcv_wscale from ss");
    let csum_before = csum_errors(snd);

    rw.set(flow1.0, flow1.1, WINDOW, wscale).expect("set");
    let unit = 1u32 << wscale;
    // Until an ACK passes the rewriter, the sender still holds the handshake's window: one
    // byte each way of warm-up makes the next ACK carry the limit, before sampling starts.
    warm_up(c1, s1);
    let deadline = Instant::now() + Duration::from_secs(3);
    while snd_wnd(snd, c1) > WINDOW + unit {
        assert!(
            Instant::now() < deadline,
            "the rewritten window never reached the sender: snd_wnd {}",
            snd_wnd(snd, c1)
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let data = payload(1);
    let (got, samples) = transfer(snd, c1, s1, &data);
    assert_eq!(got, sha(&data), "flow 1 data corrupted");
    let last = snd_wnd(snd, c1);
    let max = samples.iter().copied().max().unwrap_or(0).max(last);
    assert!(
        max <= WINDOW + unit,
        "limited flow: snd_wnd {max} > {WINDOW} + {unit}"
    );
    assert!(last > 0);
    let (seen, rewritten) = rw.counters(flow1.0, flow1.1).expect("counters of flow 1");
    assert!(rewritten > 0, "no segment rewritten (seen {seen})");
    assert!(rewritten <= seen);
    eprintln!(
        "limited flow {} -> {}: rcv_wscale {wscale}, snd_wnd last {last} max {max} over {} samples, seen {seen}, rewritten {rewritten}",
        flow1.0, flow1.1, samples.len()
    );

    // The second flow has no entry: its window is the kernel's own.
    let data2 = payload(2);
    let (got2, _) = transfer(snd, c2, s2, &data2);
    assert_eq!(got2, sha(&data2), "flow 2 data corrupted");
    let w2 = snd_wnd(snd, c2);
    assert!(w2 > WINDOW, "unlimited flow: snd_wnd {w2} <= {WINDOW}");
    assert_eq!(rw.counters(flow2.0, flow2.1), None);
    assert_eq!(
        csum_errors(snd),
        csum_before,
        "sender saw bad TCP checksums"
    );
    eprintln!("unlimited flow {} -> {}: snd_wnd {w2}", flow2.0, flow2.1);

    rw.remove(flow1.0, flow1.1).expect("remove");
    rw.remove(flow1.0, flow1.1)
        .expect("remove of a missing flow");
    assert_eq!(rw.counters(flow1.0, flow1.1), None);
    assert!(rw.is_empty());
}
