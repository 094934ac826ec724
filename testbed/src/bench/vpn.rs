//! The VPN setups a benchmark compares, brought up and down inside one topology: our endpoint
//! pair, wireguard-go (+ `wg`), and boringtun-cli when it is installed. Same keys, addresses,
//! MTU (1420) and routes for all.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::topo::{addr, Node, Proc, Topology};

use super::sibling_bin;

/// One data path under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Setup {
    /// starpep-client on the box, starpep-pop on the POP.
    Ours,
    /// wireguard-go on both, configured with `wg set`.
    WireguardGo,
    /// boringtun-cli on both (same UAPI as wireguard-go).
    BoringtunCli,
}

impl Setup {
    pub fn name(self) -> &'static str {
        match self {
            Setup::Ours => "starpep",
            Setup::WireguardGo => "wireguard-go",
            Setup::BoringtunCli => "boringtun-cli",
        }
    }

    pub fn parse(s: &str) -> anyhow::Result<Setup> {
        Ok(match s {
            "starpep" | "ours" => Setup::Ours,
            "wireguard-go" => Setup::WireguardGo,
            "boringtun-cli" | "boringtun" => Setup::BoringtunCli,
            other => {
                anyhow::bail!("unknown setup {other:?} (starpep, wireguard-go, boringtun-cli)")
            }
        })
    }
}

/// A running setup; dropping it stops the daemons (and their interfaces go).
pub struct Running {
    procs: Vec<Proc>,
    uapi: Vec<PathBuf>,
}

impl Running {
    /// PIDs of the two daemons (box, POP), for CPU accounting.
    pub fn pids(&self) -> Vec<u32> {
        self.procs.iter().filter_map(Proc::pid).collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for p in &mut self.procs {
            p.stop();
        }
        for u in &self.uapi {
            let _ = std::fs::remove_file(u);
        }
    }
}

struct Key {
    private: String,
    public: String,
}

fn key(bin: &std::path::Path) -> anyhow::Result<Key> {
    use std::io::Write;
    let out = std::process::Command::new(bin).arg("genkey").output()?;
    let private = String::from_utf8(out.stdout)?.trim().to_string();
    let mut c = std::process::Command::new(bin)
        .arg("pubkey")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    c.stdin.take().unwrap().write_all(private.as_bytes())?;
    let public = String::from_utf8(c.wait_with_output()?.stdout)?
        .trim()
        .to_string();
    Ok(Key { private, public })
}

const BOX_ALLOWED: &str = "10.2.0.0/24,10.8.0.0/24";
const POP_ALLOWED: &str = "10.8.0.2/32,10.1.0.0/24";

/// Brings `setup` up; `tag` makes interface names unique (wireguard-go's UAPI is global).
pub fn up(topo: &Topology, setup: Setup, tag: &str) -> anyhow::Result<Running> {
    let client = sibling_bin("starpep-client")?;
    let (bk, pk) = (key(&client)?, key(&client)?);
    let p = topo.prefix().trim_start_matches("sp");
    let mut bi = format!("b{p}{tag}");
    let mut pi = format!("p{p}{tag}");
    bi.truncate(15);
    pi.truncate(15);
    let running = match setup {
        Setup::Ours => {
            let dir = topo.tmpdir();
            let pop_conf = dir.join(format!("{pi}.conf"));
            std::fs::write(
                &pop_conf,
                format!(
                    "[Interface]\nPrivateKey = {}\nAddress = 10.8.0.1/24\nListenPort = 51820\n\
                     [Peer]\nPublicKey = {}\nAllowedIPs = {POP_ALLOWED}\n",
                    pk.private, bk.public
                ),
            )?;
            let box_conf = dir.join(format!("{bi}.conf"));
            std::fs::write(
                &box_conf,
                format!(
                    "[Interface]\nPrivateKey = {}\nAddress = 10.8.0.2/24\n\
                     [Peer]\nPublicKey = {}\nEndpoint = 10.99.0.2:51820\nAllowedIPs = {BOX_ALLOWED}\n",
                    bk.private, pk.public
                ),
            )?;
            let pop_bin = sibling_bin("starpep-pop")?;
            let pop = daemon(topo, Node::Pop, &pop_bin, &pop_conf, &pi)?;
            let bx = daemon(topo, Node::Box, &client, &box_conf, &bi)?;
            Running {
                procs: vec![bx, pop],
                uapi: vec![],
            }
        }
        Setup::WireguardGo | Setup::BoringtunCli => {
            let bx = uapi_daemon(topo, Node::Box, setup, &bi)?;
            let pop = uapi_daemon(topo, Node::Pop, setup, &pi)?;
            let run = Running {
                procs: vec![bx, pop],
                uapi: [&bi, &pi]
                    .iter()
                    .map(|i| PathBuf::from(format!("/var/run/wireguard/{i}.sock")))
                    .collect(),
            };
            wg_set(
                topo,
                Node::Pop,
                &pi,
                &pk,
                Some(51820),
                &bk.public,
                None,
                POP_ALLOWED,
            )?;
            wg_set(
                topo,
                Node::Box,
                &bi,
                &bk,
                None,
                &pk.public,
                Some("10.99.0.2:51820"),
                BOX_ALLOWED,
            )?;
            for (node, i, a, routes) in [
                (Node::Box, &bi, "10.8.0.2/24", ["10.2.0.0/24"]),
                (Node::Pop, &pi, "10.8.0.1/24", ["10.1.0.0/24"]),
            ] {
                topo.run_ok(node, &["ip", "address", "add", a, "dev", i])?;
                topo.run_ok(node, &["ip", "link", "set", i, "mtu", "1420", "up"])?;
                for r in routes {
                    topo.run_ok(node, &["ip", "route", "add", r, "dev", i])?;
                }
            }
            run
        }
    };
    // Handshake before measuring.
    anyhow::ensure!(
        topo.wait_reachable(Node::Pc, &addr::SRV.to_string(), super::WARM_UP),
        "{}: pc cannot reach srv",
        setup.name()
    );
    Ok(running)
}

fn daemon(
    topo: &Topology,
    node: Node,
    bin: &std::path::Path,
    conf: &std::path::Path,
    iface: &str,
) -> anyhow::Result<Proc> {
    let mut p = topo.spawn(
        node,
        &format!("daemon-{iface}"),
        &[
            bin.as_os_str(),
            "run".as_ref(),
            "-q".as_ref(),
            "-c".as_ref(),
            conf.as_os_str(),
        ],
    )?;
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if p.try_status().is_some() {
            anyhow::bail!("{} exited: {}", bin.display(), p.log());
        }
        if topo
            .exec(node, &[bin.as_os_str(), "show".as_ref(), iface.as_ref()])?
            .status
            .success()
        {
            return Ok(p);
        }
        anyhow::ensure!(Instant::now() < end, "{iface} not up: {}", p.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn uapi_daemon(topo: &Topology, node: Node, setup: Setup, iface: &str) -> anyhow::Result<Proc> {
    let p = if setup == Setup::WireguardGo {
        topo.spawn(
            node,
            &format!("wireguard-go-{iface}"),
            &[
                "env",
                "WG_PROCESS_FOREGROUND=1",
                "wireguard-go",
                "-f",
                iface,
            ],
        )?
    } else {
        // `cargo install boringtun-cli`; BORINGTUN_CLI names the binary if not on PATH.
        let prog = std::env::var("BORINGTUN_CLI").unwrap_or_else(|_| "boringtun-cli".into());
        let log = topo.tmpdir().join(format!("boringtun-{iface}.out"));
        let log = log.display().to_string();
        topo.spawn(
            node,
            &format!("boringtun-cli-{iface}"),
            &[&prog, "-f", "--disable-drop-privileges", "-l", &log, iface],
        )?
    };
    let prog = setup.name();
    let end = Instant::now() + Duration::from_secs(10);
    while !std::path::Path::new(&format!("/var/run/wireguard/{iface}.sock")).exists() {
        anyhow::ensure!(Instant::now() < end, "{prog} {iface} not up: {}", p.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(p)
}

#[allow(clippy::too_many_arguments)]
fn wg_set(
    topo: &Topology,
    node: Node,
    iface: &str,
    k: &Key,
    port: Option<u16>,
    peer: &str,
    endpoint: Option<&str>,
    allowed: &str,
) -> anyhow::Result<()> {
    let keyfile = topo.tmpdir().join(format!("{iface}.key"));
    std::fs::write(&keyfile, &k.private)?;
    let kf = keyfile.display().to_string();
    let port_s = port.map(|p| p.to_string());
    let mut args = vec!["wg", "set", iface, "private-key", &kf];
    if let Some(p) = &port_s {
        args.extend(["listen-port", p]);
    }
    args.extend(["peer", peer, "allowed-ips", allowed]);
    if let Some(e) = endpoint {
        args.extend(["endpoint", e]);
    }
    topo.run_ok(node, &args)?;
    Ok(())
}
