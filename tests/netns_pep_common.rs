//! Shared helpers of the netns_pep_* tests (included with `#[path]`, not a test of its own):
//! the PEP daemon pair from the shipped configs, sockets opened inside a namespace from the
//! test process itself, sha256-checked transfers, `show --json` of the PEP.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_tests::{bin_path, payload, sha256_hex, Node, Proc, Topology};

/// How the satellite segment is carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Carry {
    /// `configs/{box,pop}-pep.conf`: WireGuard tunnel + split.
    Tunnel,
    /// `configs/{box,pop}-pep-none.conf`: split without VPN (topology with plain routes).
    NoTunnel,
}

impl Carry {
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Carry::Tunnel => ("box-pep", "pop-pep"),
            Carry::NoTunnel => ("box-pep-none", "pop-pep-none"),
        }
    }
}

pub use starpep_tests::in_ns;

pub fn listen(topo: &Topology, node: Node, addr: SocketAddr) -> TcpListener {
    listen_cc(topo, node, addr, None)
}

pub fn connect(topo: &Topology, node: Node, addr: SocketAddr) -> std::io::Result<TcpStream> {
    connect_cc(topo, node, addr, None)
}

/// A TCP socket in `node` with congestion control `cc` (the namespaces' default is bbr and
/// cannot be changed there; root may set it per socket).
fn tcp_socket(addr: SocketAddr, cc: Option<&str>) -> socket2::Socket {
    let dom = if addr.is_ipv4() {
        socket2::Domain::IPV4
    } else {
        socket2::Domain::IPV6
    };
    let s = socket2::Socket::new(dom, socket2::Type::STREAM, None).expect("socket");
    if let Some(cc) = cc {
        s.set_tcp_congestion(cc.as_bytes())
            .unwrap_or_else(|e| panic!("TCP_CONGESTION {cc}: {e}"));
    }
    s
}

/// [`listen`] with the accepted sockets' congestion control set to `cc`.
pub fn listen_cc(topo: &Topology, node: Node, addr: SocketAddr, cc: Option<&str>) -> TcpListener {
    let cc = cc.map(str::to_string);
    in_ns(topo, node, move || {
        let s = tcp_socket(addr, cc.as_deref());
        s.set_reuse_address(true).unwrap();
        s.bind(&addr.into())
            .unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        s.listen(128).unwrap();
        s.into()
    })
}

/// [`connect`] with congestion control `cc`.
pub fn connect_cc(
    topo: &Topology,
    node: Node,
    addr: SocketAddr,
    cc: Option<&str>,
) -> std::io::Result<TcpStream> {
    let cc = cc.map(str::to_string);
    in_ns(topo, node, move || {
        let s = tcp_socket(addr, cc.as_deref());
        s.connect_timeout(&addr.into(), Duration::from_secs(20))?;
        Ok(s.into())
    })
}

pub fn udp(topo: &Topology, node: Node, addr: SocketAddr) -> UdpSocket {
    in_ns(topo, node, move || UdpSocket::bind(addr).expect("bind udp"))
}

/// The shipped config `configs/NAME.conf` with `[PEP]` keys replaced or added (the `[PEP]`
/// section is the file's last). `STARPEP_TEST_MODE=split` (or `starpep`) sets `Mode` unless
/// `set` does: `scripts/test.sh` runs the PEP tests in both modes. A key set to an empty value
/// is removed.
pub fn shipped_conf(name: &str, set: &[(&str, &str)]) -> String {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../configs/{name}.conf"));
    let mut text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let pep_at = text.find("[PEP]").expect("[PEP] section");
    let mode = std::env::var("STARPEP_TEST_MODE")
        .ok()
        .filter(|m| !m.is_empty());
    let mut set: Vec<(&str, &str)> = set.to_vec();
    if let Some(m) = mode.as_deref() {
        if !set.iter().any(|(k, _)| k.eq_ignore_ascii_case("Mode")) {
            set.insert(0, ("Mode", m));
        }
    }
    for (k, v) in &set {
        let (head, tail) = text.split_at(pep_at);
        let mut found = false;
        let tail: Vec<String> = tail
            .lines()
            .filter_map(|l| {
                let key = l.split('=').next().unwrap_or("").trim();
                if !l.trim_start().starts_with('#') && key.eq_ignore_ascii_case(k) {
                    found = true;
                    (!v.is_empty()).then(|| format!("{k} = {v}"))
                } else {
                    Some(l.to_string())
                }
            })
            .collect();
        let mut tail = tail.join("\n");
        if !found && !v.is_empty() {
            tail.push_str(&format!("\n{k} = {v}"));
        }
        text = format!("{head}{tail}\n");
    }
    text
}

/// A running daemon.
pub struct Daemon {
    pub proc: Proc,
    pub node: Node,
    pub bin: &'static str,
    pub iface: String,
}

impl Daemon {
    /// `show IFACE --json` of the daemon.
    pub fn show(&self, topo: &Topology) -> Value {
        let path = bin_path(self.bin);
        let out = topo
            .run_ok(
                self.node,
                &[
                    path.as_os_str(),
                    "show".as_ref(),
                    self.iface.as_ref(),
                    "--json".as_ref(),
                ],
            )
            .expect("show --json");
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("show --json: {e}: {out}"))
    }

    /// The `pep` member of `show --json`.
    pub fn pep(&self, topo: &Topology) -> Value {
        let v = self.show(topo);
        assert!(v["pep"].is_object(), "no pep in show --json: {v}");
        v["pep"].clone()
    }

    /// Waits until the PEP has no live flow (flows update their record about once a second).
    pub fn wait_idle(&self, topo: &Topology, within: Duration) -> Value {
        self.wait_pep(topo, within, "flows still live", |p| p["active_flows"] == 0)
    }

    /// Waits until the `pep` member of `show --json` satisfies `ok` (the daemon reads the nft
    /// SYN counters about once a second; flows update their record as often); panics with
    /// `what` and the last answer after `within`.
    pub fn wait_pep(
        &self,
        topo: &Topology,
        within: Duration,
        what: &str,
        ok: impl Fn(&Value) -> bool,
    ) -> Value {
        let end = Instant::now() + within;
        loop {
            let p = self.pep(topo);
            if ok(&p) {
                return p;
            }
            assert!(
                Instant::now() < end,
                "{:?}: {what} after {within:?}: {p}",
                self.node
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the daemon (SIGTERM) and returns its log.
    pub fn stop(mut self) -> String {
        let st = self.proc.stop();
        let log = self.proc.log();
        assert!(
            st.is_some_and(|s| s.success()),
            "{} exit {st:?}:\n{log}",
            self.bin
        );
        log
    }
}

/// Starts `bin run -c DIR/NAME.conf -v` in `node` with `text`, and waits for its PEP.
pub fn start(topo: &Topology, node: Node, bin: &'static str, name: &str, text: &str) -> Daemon {
    start_wrapped(topo, node, bin, name, text, true, &|_, argv| argv)
}

/// [`start`] for a config without `[PEP]`: waits until `show` answers.
pub fn start_plain(
    topo: &Topology,
    node: Node,
    bin: &'static str,
    name: &str,
    text: &str,
) -> Daemon {
    start_wrapped(topo, node, bin, name, text, false, &|_, argv| argv)
}

/// [`start`] with the command line passed through `wrap` (given the config's path and the
/// daemon's argv; e.g. `setpriv` to another user, who then must own the config); waits for the
/// PEP if `pep`, else until `show` answers.
pub fn start_wrapped(
    topo: &Topology,
    node: Node,
    bin: &'static str,
    name: &str,
    text: &str,
    pep: bool,
    wrap: &dyn Fn(&Path, Vec<String>) -> Vec<String>,
) -> Daemon {
    let conf: PathBuf = topo.tmpdir().join(format!("{name}.conf"));
    starpep_tests::write_private(&conf, text);
    let path = bin_path(bin);
    let argv = [
        path.as_path(),
        Path::new("run"),
        Path::new("-c"),
        &conf,
        Path::new("-v"),
    ]
    .map(|a| a.display().to_string())
    .to_vec();
    let label = format!("{}-{name}", node.short());
    let mut proc = topo
        .spawn(node, &label, &wrap(&conf, argv))
        .expect("spawn daemon");
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(st) = proc.try_status() {
            panic!("{bin} exited early ({st}):\n{}", proc.log());
        }
        let out = topo
            .exec(
                node,
                &[
                    path.as_os_str(),
                    "show".as_ref(),
                    name.as_ref(),
                    "--json".as_ref(),
                ],
            )
            .unwrap();
        let up = String::from_utf8_lossy(&out.stdout).contains("\"pep\"") || !pep;
        if out.status.success() && up {
            return Daemon {
                proc,
                node,
                bin,
                iface: name.to_string(),
            };
        }
        assert!(Instant::now() < end, "{bin} PEP not up:\n{}", proc.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The box and POP daemons from the shipped configs, `[PEP]` keys patched per side.
pub fn start_pair(
    topo: &Topology,
    carry: Carry,
    box_set: &[(&str, &str)],
    pop_set: &[(&str, &str)],
) -> (Daemon, Daemon) {
    let (b, p) = carry.names();
    let pop = start(topo, Node::Pop, "starpep-pop", p, &shipped_conf(p, pop_set));
    let bx = start(
        topo,
        Node::Box,
        "starpep-client",
        b,
        &shipped_conf(b, box_set),
    );
    (bx, pop)
}

/// One sha256-checked transfer's outcome.
#[derive(Debug)]
pub struct Transfer {
    pub bytes: usize,
    pub sent_sha: String,
    pub recv_sha: String,
    /// The connect as the client saw it (a split flow is answered by the box).
    pub connect_time: Duration,
    pub total_time: Duration,
    /// The client address the server saw.
    pub server_saw: SocketAddr,
}

/// `bytes` from srv to pc (`down`) or pc to srv, through whatever is in between; the
/// receiver reads to EOF, then the sender sees EOF too.
pub fn transfer(topo: &Topology, dst: SocketAddr, bytes: usize, down: bool, seed: u64) -> Transfer {
    transfer_cc(topo, dst, bytes, down, seed, None)
}

/// [`transfer`] with both end hosts on congestion control `cc`.
pub fn transfer_cc(
    topo: &Topology,
    dst: SocketAddr,
    bytes: usize,
    down: bool,
    seed: u64,
    cc: Option<&str>,
) -> Transfer {
    let l = listen_cc(topo, Node::Srv, dst, cc);
    let data = payload(bytes, seed);
    let sent_sha = sha256_hex(&data);
    let srv = std::thread::spawn(move || {
        let (mut c, peer) = l.accept().expect("accept");
        let got = if down {
            c.write_all(&data).expect("server write");
            c.shutdown(Shutdown::Write).unwrap();
            let mut rest = Vec::new();
            c.read_to_end(&mut rest).expect("server drain");
            None
        } else {
            let mut v = Vec::with_capacity(data.len());
            c.read_to_end(&mut v).expect("server read");
            c.shutdown(Shutdown::Write).unwrap();
            Some(v)
        };
        (peer, got)
    });
    let t0 = Instant::now();
    let mut c = connect_cc(topo, Node::Pc, dst, cc).expect("connect");
    let connect_time = t0.elapsed();
    let recv = if down {
        let mut v = Vec::with_capacity(bytes);
        c.read_to_end(&mut v).expect("client read");
        c.shutdown(Shutdown::Write).unwrap();
        Some(v)
    } else {
        let data = payload(bytes, seed);
        c.write_all(&data).expect("client write");
        c.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        c.read_to_end(&mut rest).expect("client drain");
        None
    };
    let (server_saw, got) = srv.join().expect("server thread");
    let total_time = t0.elapsed();
    let recv_sha = sha256_hex(&recv.or(got).expect("receiver data"));
    Transfer {
        bytes,
        sent_sha,
        recv_sha,
        connect_time,
        total_time,
        server_saw,
    }
}

/// [`transfer`] and assert the payload arrived intact.
pub fn checked(topo: &Topology, dst: SocketAddr, bytes: usize, down: bool) -> Transfer {
    let t = transfer(topo, dst, bytes, down, bytes as u64 ^ down as u64);
    assert_eq!(
        t.sent_sha,
        t.recv_sha,
        "{} {bytes} bytes to {dst}: payload corrupted",
        if down { "download" } else { "upload" }
    );
    t
}

pub fn sa(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// The PEP's flow record for the originator address `client`, if live.
pub fn flow_of(pep: &Value, client: SocketAddr) -> Option<Value> {
    pep["flows"]
        .as_array()?
        .iter()
        .find(|f| f["client"] == client.to_string())
        .cloned()
}
