//! Shared helpers of the netns_tunnel_* tests (included with `#[path]`, not a test of its own):
//! keys, configs, daemons (ours and wireguard-go) in a topology, `show --json`, transfers.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_testbed::bench::{uapi, vpn};
use starpep_tests::{addr, bin_path, Node, Proc, Topology};

pub const WG_PORT: u16 = addr::WG_PORT;

/// A key pair made by our own `genkey`/`pubkey`.
pub type Keys = vpn::Key;

/// Runs `prog args` with `stdin`, returns trimmed stdout (panics with stderr on failure).
pub fn pipe(prog: &Path, args: &[&str], stdin: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", prog.display()));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        prog.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

pub fn keys() -> Keys {
    vpn::key(&bin_path("starpep-client")).expect("genkey/pubkey")
}

/// Interface names unique across the machine (wireguard-go's UAPI sockets are global):
/// `<tag><topology number>` from the topology prefix `sp<pid>x<n>`.
pub fn iface(topo: &Topology, tag: &str) -> String {
    let p = topo.prefix().trim_start_matches("sp");
    let mut s = format!("{tag}{p}");
    s.truncate(15);
    s
}

/// The box side of the standard tunnel: addresses 10.8.0.2, fd00:8::2; routes to srv's LAN.
pub fn box_conf(k: &Keys, pop_public: &str, endpoint: &str, allowed: &str, extra: &str) -> String {
    format!(
        "[Interface]\nPrivateKey = {}\nAddress = 10.8.0.2/24, fd00:8::2/64\n{extra}\n\
         [Peer]\nPublicKey = {pop_public}\nEndpoint = {endpoint}\nAllowedIPs = {allowed}\n",
        k.private
    )
}

pub const BOX_ALLOWED: &str = "10.2.0.0/24, fd00:2::/64, 10.8.0.0/24, fd00:8::/64";
pub const POP_ALLOWED: &str = "10.8.0.2/32, fd00:8::2/128, 10.1.0.0/24, fd00:1::/64";

/// The POP side: addresses 10.8.0.1, fd00:8::1, port 51820; the box's tunnel address and LAN.
pub fn pop_conf(k: &Keys, box_public: &str, extra: &str) -> String {
    format!(
        "[Interface]\nPrivateKey = {}\nAddress = 10.8.0.1/24, fd00:8::1/64\nListenPort = {WG_PORT}\n{extra}\n\
         [Peer]\nPublicKey = {box_public}\nAllowedIPs = {POP_ALLOWED}\n",
        k.private
    )
}

/// Writes `text` as `<dir>/<iface>.conf`, mode 0600 (the daemon names the interface after the
/// file and refuses one group/others can access).
pub fn write_conf(topo: &Topology, iface: &str, text: &str) -> PathBuf {
    let p = topo.tmpdir().join(format!("{iface}.conf"));
    starpep_tests::write_private(&p, text);
    p
}

/// Starts `bin run -c conf -v` in `node` and waits until its control socket answers.
pub fn start_daemon(topo: &Topology, node: Node, bin: &str, conf: &Path) -> Proc {
    let path = bin_path(bin);
    let label = format!(
        "{}-{}",
        node.short(),
        conf.file_stem().unwrap().to_string_lossy()
    );
    let mut p = topo
        .spawn(
            node,
            &label,
            &[
                path.as_os_str(),
                "run".as_ref(),
                "-c".as_ref(),
                conf.as_os_str(),
                "-v".as_ref(),
            ],
        )
        .expect("spawn daemon");
    let iface = conf.file_stem().unwrap().to_string_lossy().to_string();
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(st) = p.try_status() {
            panic!("{bin} exited early ({st}):\n{}", p.log());
        }
        let out = topo
            .exec(node, &[path.as_os_str(), "show".as_ref(), iface.as_ref()])
            .unwrap();
        if out.status.success() {
            return p;
        }
        assert!(
            Instant::now() < end,
            "{bin} not up after 10 s:\n{}",
            p.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `bin show IFACE --json` in `node`.
pub fn show_json(topo: &Topology, node: Node, bin: &str, iface: &str) -> Value {
    let path = bin_path(bin);
    let out = topo
        .run_ok(
            node,
            &[
                path.as_os_str(),
                "show".as_ref(),
                iface.as_ref(),
                "--json".as_ref(),
            ],
        )
        .expect("show --json");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("show --json: {e}: {out}"))
}

/// Pings `dst` from `node` until one reply arrives (up to `tries` seconds); panics otherwise.
pub fn ping_ok(topo: &Topology, node: Node, dst: &str, tries: u32) {
    let v6 = dst.contains(':');
    let mut last = String::new();
    for _ in 0..tries {
        let mut args = vec!["ping", "-c", "1", "-W", "1"];
        if v6 {
            args.insert(1, "-6");
        }
        args.push(dst);
        let out = topo.exec(node, &args).unwrap();
        if out.status.success() {
            return;
        }
        last = String::from_utf8_lossy(&out.stdout).into_owned();
    }
    panic!("{:?} cannot ping {dst}: {last}", node);
}

/// wireguard-go in `node` as `iface` (the test bed's start-up: `wg set`, then addresses, MTU
/// and routes by hand as wg-quick would); stopped on drop.
pub type WireguardGo = uapi::UapiDaemon;
pub type WgGoSpec<'a> = uapi::UapiSpec<'a>;

pub fn start_wireguard_go(topo: &Topology, node: Node, iface: &str, s: &WgGoSpec) -> WireguardGo {
    uapi::start_uapi(topo, node, vpn::Setup::WireguardGo, iface, s).expect("wireguard-go")
}

/// Whether `owd-bulk` (the sha256-reporting bulk tool of the test bed) is built.
fn owd_bulk() -> PathBuf {
    bin_path("owd-bulk")
}

/// Sends `bytes` over TCP from `from` to `to_addr:port` (a listener in `to`) with owd-bulk and
/// asserts both ends report the same sha256 and byte count. Returns the sender's report.
pub fn transfer(
    topo: &Topology,
    from: Node,
    to: Node,
    to_addr: &str,
    port: u16,
    bytes: u64,
) -> Value {
    let bin = owd_bulk();
    let dir = topo.tmpdir();
    let tag = format!("{}-{}-{port}", from.short(), to.short());
    let rj = dir.join(format!("recv-{tag}.json"));
    let sj = dir.join(format!("send-{tag}.json"));
    let listen = if to_addr.contains(':') {
        format!("[{to_addr}]:{port}")
    } else {
        format!("{to_addr}:{port}")
    };
    let mut recv = topo
        .spawn(
            to,
            &format!("owd-recv-{tag}"),
            &[
                bin.as_os_str(),
                "recv".as_ref(),
                "--listen".as_ref(),
                listen.as_ref(),
                "--json".as_ref(),
                rj.as_os_str(),
            ],
        )
        .expect("spawn owd-bulk recv");
    std::thread::sleep(Duration::from_millis(300));
    let nbytes = bytes.to_string();
    let out = topo
        .exec(
            from,
            &[
                bin.as_os_str(),
                "send".as_ref(),
                "--connect".as_ref(),
                listen.as_ref(),
                "--bytes".as_ref(),
                nbytes.as_ref(),
                "--json".as_ref(),
                sj.as_os_str(),
            ],
        )
        .unwrap();
    assert!(
        out.status.success(),
        "owd-bulk send failed: {}\nreceiver: {}",
        String::from_utf8_lossy(&out.stderr),
        recv.log()
    );
    let st = recv.wait_timeout(Duration::from_secs(30));
    assert!(
        st.is_some_and(|s| s.success()),
        "owd-bulk recv: {st:?} {}",
        recv.log()
    );
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&sj).unwrap()).unwrap();
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&rj).unwrap()).unwrap();
    let (ss, rs) = (&s["sha256"], &r["sha256"]);
    assert!(
        ss.is_string() && ss.as_str().unwrap().len() == 64,
        "sender sha256: {s}"
    );
    assert_eq!(ss, rs, "payload corrupted: sender {s} receiver {r}");
    s
}

/// `ip -o link show` / routes / rules of `node` mentioning `iface` (for leftover checks).
pub fn leftovers(topo: &Topology, node: Node, iface: &str) -> Vec<String> {
    let mut v = Vec::new();
    for cmd in [
        vec!["ip", "-o", "link", "show"],
        vec!["ip", "-o", "-4", "route", "show", "table", "all"],
        vec!["ip", "-o", "-6", "route", "show", "table", "all"],
    ] {
        let out = topo.run_ok(node, &cmd).unwrap();
        v.extend(
            out.lines()
                .filter(|l| {
                    l.split_whitespace()
                        .any(|w| w.trim_end_matches(':') == iface)
                })
                .map(str::to_string),
        );
    }
    v
}

/// Policy rules other than the three defaults (main, local, default).
pub fn extra_rules(topo: &Topology, node: Node) -> Vec<String> {
    let mut v = Vec::new();
    for fam in ["-4", "-6"] {
        let out = topo.run_ok(node, &["ip", fam, "rule", "show"]).unwrap();
        v.extend(
            out.lines()
                .filter(|l| {
                    !l.ends_with("lookup local")
                        && !l.ends_with("lookup main")
                        && !l.ends_with("lookup default")
                })
                .map(str::to_string),
        );
    }
    v
}

pub fn srv() -> String {
    addr::SRV.to_string()
}

pub fn srv6() -> String {
    addr::SRV6.to_string()
}

/// Brings up the standard pair (POP then box) with fresh keys; `box_peer_extra` lines are added
/// to the box's `[Peer]`. Returns the box and POP interface names and both daemons.
pub fn up_pair(topo: &Topology, box_peer_extra: &str) -> (String, String, Proc, Proc) {
    let (bk, pk) = (keys(), keys());
    let (bi, pi) = (iface(topo, "b"), iface(topo, "p"));
    let pop_conf = write_conf(topo, &pi, &pop_conf(&pk, &bk.public, ""));
    let box_text = box_conf(&bk, &pk.public, "10.99.0.2:51820", BOX_ALLOWED, "") + box_peer_extra;
    let box_conf = write_conf(topo, &bi, &box_text);
    let pop = start_daemon(topo, Node::Pop, "starpep-pop", &pop_conf);
    let bx = start_daemon(topo, Node::Box, "starpep-client", &box_conf);
    (bi, pi, pop, bx)
}
