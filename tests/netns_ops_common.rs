//! Shared helpers of the netns_ops_* tests (included with `#[path]`, not a test of its own):
//! several boxes in the box namespace (one client daemon each, with its own tunnel address and
//! routing table) behind one POP, and paced sha256-checked transfers that outlast a reload.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_testbed::bench::vpn;
use starpep_tests::{bin_path, in_ns, payload, sha256_hex, Node, Topology};

/// One box of the test: its keys, its tunnel addresses (the first is its routing source) and
/// its routing table number in the box namespace.
pub struct BoxSpec {
    pub keys: vpn::Key,
    pub addrs: Vec<IpAddr>,
    pub table: u32,
}

impl BoxSpec {
    pub fn new(addrs: &[&str], table: u32) -> BoxSpec {
        BoxSpec {
            keys: vpn::key(&bin_path("starpep-client")).expect("genkey/pubkey"),
            addrs: addrs.iter().map(|a| a.parse().unwrap()).collect(),
            table,
        }
    }

    /// The box's client config: its addresses as /32, its routes to srv's LAN in its own
    /// table, used by the traffic its addresses send (policy rules in PostUp/PostDown).
    pub fn conf(&self, pop_public: &str) -> String {
        let addrs: Vec<String> = self.addrs.iter().map(|a| format!("{a}/32")).collect();
        let mut s = format!(
            "[Interface]\nPrivateKey = {}\nAddress = {}\nTable = {}\n",
            self.keys.private,
            addrs.join(", "),
            self.table
        );
        for a in &self.addrs {
            s.push_str(&format!(
                "PostUp = ip rule add from {a} lookup {t}\nPostDown = ip rule del from {a} lookup {t}\n",
                t = self.table
            ));
        }
        s.push_str(&format!(
            "[Peer]\nPublicKey = {pop_public}\nEndpoint = 10.99.0.2:51820\nAllowedIPs = 10.2.0.0/24\n"
        ));
        s
    }
}

/// The POP's `[Peer]` of a box with `allowed` AllowedIPs.
pub fn pop_peer(b: &BoxSpec, allowed: &str) -> String {
    format!(
        "[Peer]\nPublicKey = {}\nAllowedIPs = {allowed}\n",
        b.keys.public
    )
}

/// Writes `text` as `<tmp>/<name>.conf`, mode 0600.
pub fn write_conf(topo: &Topology, name: &str, text: &str) -> PathBuf {
    let p = topo.tmpdir().join(format!("{name}.conf"));
    starpep_tests::write_private(&p, text);
    p
}

/// `bin args...` in `node`: (success, stdout, stderr).
pub fn run_bin(topo: &Topology, node: Node, bin: &str, args: &[&str]) -> (bool, String, String) {
    let path = bin_path(bin);
    let mut v: Vec<&std::ffi::OsStr> = vec![path.as_os_str()];
    v.extend(args.iter().map(|a| std::ffi::OsStr::new(*a)));
    let out = topo.exec(node, &v).expect("exec");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A TCP connection from `src` (port chosen by the kernel) in `node` to `dst`.
pub fn connect_from(
    topo: &Topology,
    node: Node,
    src: IpAddr,
    dst: SocketAddr,
) -> std::io::Result<TcpStream> {
    in_ns(topo, node, move || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
        s.bind(&SocketAddr::new(src, 0).into())?;
        s.connect_timeout(&dst.into(), Duration::from_secs(10))?;
        Ok(s.into())
    })
}

/// A listener on `addr` in `node`.
pub fn listen(topo: &Topology, node: Node, addr: SocketAddr) -> TcpListener {
    in_ns(topo, node, move || {
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
            .expect("socket");
        s.set_reuse_address(true).unwrap();
        s.bind(&addr.into())
            .unwrap_or_else(|e| panic!("bind {addr}: {e}"));
        s.listen(16).unwrap();
        s.into()
    })
}

/// What a paced transfer's receiver got.
#[derive(Debug)]
pub struct Received {
    /// The payload's sha256 and length.
    pub sent: (String, usize),
    /// The receiver's sha256 and length of what it read to EOF, or how reading failed.
    pub got: Result<(String, usize), String>,
    /// The connection's address as the server saw it.
    pub client: SocketAddr,
}

impl Received {
    pub fn intact(&self) -> bool {
        self.got.as_ref().is_ok_and(|g| *g == self.sent)
    }
}

/// A transfer of `bytes` between a box address `src` and srv's `dst`, written in `chunk`s every
/// `pause` (so it lasts `bytes / chunk × pause`), upload (`down` false) or download.
pub struct Paced {
    handle: JoinHandle<Received>,
    pub local: SocketAddr,
}

fn read_all(s: &mut TcpStream) -> Result<(String, usize), String> {
    let mut v = Vec::new();
    s.set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    s.read_to_end(&mut v).map_err(|e| e.to_string())?;
    Ok((sha256_hex(&v), v.len()))
}

fn write_paced(s: &mut TcpStream, data: &[u8], chunk: usize, pause: Duration) {
    let _ = s.set_write_timeout(Some(Duration::from_secs(10)));
    for c in data.chunks(chunk) {
        if s.write_all(c).is_err() {
            return;
        }
        std::thread::sleep(pause);
    }
    let _ = s.shutdown(Shutdown::Write);
}

impl Paced {
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        topo: &Topology,
        src: IpAddr,
        dst: SocketAddr,
        bytes: usize,
        chunk: usize,
        pause: Duration,
        down: bool,
        seed: u64,
    ) -> Paced {
        let l = listen(topo, Node::Srv, dst);
        let mut c = connect_from(topo, Node::Box, src, dst)
            .unwrap_or_else(|e| panic!("connect {src} -> {dst}: {e}"));
        let local = c.local_addr().unwrap();
        let (mut s, client) = l.accept().expect("accept");
        let data = payload(bytes, seed);
        let sent = (sha256_hex(&data), data.len());
        let handle = std::thread::spawn(move || {
            let got = if down {
                let w = std::thread::spawn(move || write_paced(&mut s, &data, chunk, pause));
                let got = read_all(&mut c);
                let _ = w.join();
                got
            } else {
                let w = std::thread::spawn(move || write_paced(&mut c, &data, chunk, pause));
                let got = read_all(&mut s);
                let _ = w.join();
                got
            };
            Received { sent, got, client }
        });
        Paced { handle, local }
    }

    pub fn finish(self) -> Received {
        self.handle.join().expect("transfer thread")
    }
}

/// Waits until `f` holds (polling every 100 ms) or `within` passes; whether it held.
pub fn wait_for(within: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + within;
    loop {
        if f() {
            return true;
        }
        if Instant::now() > end {
            return false;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Pings `dst` from `src` in the box namespace (one try of `secs` seconds); whether it answered.
pub fn ping_from(topo: &Topology, src: &str, dst: &str, secs: u32) -> bool {
    let w = secs.to_string();
    topo.exec(Node::Box, &["ping", "-c", "1", "-W", &w, "-I", src, dst])
        .map(|o| o.status.success())
        .unwrap_or(false)
}

/// The path of a file in the topology's directory.
pub fn conf_path(topo: &Topology, name: &str) -> PathBuf {
    topo.tmpdir().join(format!("{name}.conf"))
}

pub fn stem(p: &Path) -> String {
    p.file_stem().unwrap().to_string_lossy().into_owned()
}

/// `starpep-pop show IFACE --json` in the POP namespace.
pub fn show(topo: &Topology, iface: &str) -> Value {
    let (ok, out, err) = run_bin(topo, Node::Pop, "starpep-pop", &["show", iface, "--json"]);
    assert!(ok, "show: {err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("show --json: {e}: {out}"))
}

/// The peer of `show --json` with public key `key`.
pub fn peer<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v["peers"]
        .as_array()?
        .iter()
        .find(|p| p["public_key"] == key)
}

/// The POP's split flows whose client address is `ip`.
pub fn flows_from(v: &Value, ip: &str) -> Vec<Value> {
    v["pep"]["flows"]
        .as_array()
        .map(|fs| {
            fs.iter()
                .filter(|f| {
                    f["client"]
                        .as_str()
                        .and_then(|c| c.parse::<SocketAddr>().ok())
                        .is_some_and(|c| c.ip().to_string() == ip)
                })
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}
