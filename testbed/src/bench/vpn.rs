//! The WireGuard setups a benchmark compares, brought up and down inside one topology: our
//! endpoint pair, wireguard-go (+ `wg`), and boringtun-cli when it is installed, at box and POP
//! or (position A) at pc and srv. Same keys, addresses (`topo::addr`), MTU (1420) and routes for
//! all. Also the one home of a UAPI daemon's start-up (wireguard-go, boringtun-cli), which the
//! netns tests use too.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::topo::addr::{PC_NET, POP_WAN, SRV, SRV_NET, TUN_FAR, TUN_NEAR, TUN_NET, WG_PORT};
use crate::topo::{Node, Proc, Topology};

use super::sibling_bin;

/// One data path under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Setup {
    /// starpep-client on the near end, starpep-pop on the far end.
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

/// Where a VPN's two endpoints run (WireGuard here, OpenVPN in `bench::ovpn`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// box and POP, the two LANs routed through the tunnel.
    BoxPop,
    /// pc and srv themselves, outside a PEP on box and POP (the suite's position A): only the
    /// tunnel's own addresses go through it, so apps reach srv at [`TUN_FAR`].
    PcSrv,
}

impl Position {
    /// (near, far): the endpoint that connects and the one that listens.
    pub fn nodes(self) -> (Node, Node) {
        match self {
            Position::BoxPop => (Node::Box, Node::Pop),
            Position::PcSrv => (Node::Pc, Node::Srv),
        }
    }

    /// The far endpoint's address on the underlay (what the near end connects to).
    pub fn far_addr(self) -> Ipv4Addr {
        match self {
            Position::BoxPop => POP_WAN,
            Position::PcSrv => SRV,
        }
    }

    /// The networks routed into the tunnel besides its own: (at the near end, at the far end).
    pub fn routes(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Position::BoxPop => (&[SRV_NET], &[PC_NET]),
            Position::PcSrv => (&[], &[]),
        }
    }

    /// The address pc's applications reach srv at through this tunnel.
    pub fn srv_addr(self) -> Ipv4Addr {
        match self {
            Position::BoxPop => SRV,
            Position::PcSrv => TUN_FAR,
        }
    }

    /// WireGuard AllowedIPs: (the near end's, the far end's).
    fn allowed(self) -> (String, String) {
        let (near, far) = self.routes();
        let tun_near = format!("{TUN_NEAR}/32");
        let join = |first: &str, rest: &[&str]| {
            std::iter::once(first)
                .chain(rest.iter().copied())
                .collect::<Vec<_>>()
                .join(",")
        };
        (join(TUN_NET, near), join(&tun_near, far))
    }
}

/// A running setup; dropping it stops the daemons (and their interfaces go).
pub struct Running {
    procs: Vec<Proc>,
    uapi: Vec<UapiDaemon>,
}

impl Running {
    /// Daemons started elsewhere (`bench::ovpn`), owned and stopped like these.
    pub(crate) fn of(procs: Vec<Proc>) -> Running {
        Running {
            procs,
            uapi: Vec::new(),
        }
    }

    /// PIDs of the two daemons (near, far), for CPU accounting.
    pub fn pids(&self) -> Vec<u32> {
        let uapi = self.uapi.iter().map(|u| &u.proc);
        self.procs
            .iter()
            .chain(uapi)
            .filter_map(Proc::pid)
            .collect()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        for p in &mut self.procs {
            p.stop();
        }
    }
}

/// A WireGuard key pair.
#[derive(Debug, Clone)]
pub struct Key {
    pub private: String,
    pub public: String,
}

/// A fresh key pair made by `bin genkey` / `bin pubkey` (our daemons or `wg`).
pub fn key(bin: &Path) -> anyhow::Result<Key> {
    use std::io::Write;
    let out = std::process::Command::new(bin).arg("genkey").output()?;
    anyhow::ensure!(out.status.success(), "{} genkey failed", bin.display());
    let private = String::from_utf8(out.stdout)?.trim().to_string();
    let mut c = std::process::Command::new(bin)
        .arg("pubkey")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    c.stdin
        .take()
        .ok_or_else(|| anyhow::anyhow!("pubkey: no stdin"))?
        .write_all(private.as_bytes())?;
    let public = String::from_utf8(c.wait_with_output()?.stdout)?
        .trim()
        .to_string();
    Ok(Key { private, public })
}

/// Brings `setup` up at box and POP; `tag` makes interface names unique (wireguard-go's UAPI
/// is global).
pub fn up(topo: &Topology, setup: Setup, tag: &str) -> anyhow::Result<Running> {
    up_at(topo, setup, Position::BoxPop, tag)
}

/// Brings `setup` up at `pos` and waits until pc reaches srv through it (handshake done).
pub fn up_at(topo: &Topology, setup: Setup, pos: Position, tag: &str) -> anyhow::Result<Running> {
    let client = sibling_bin("starpep-client")?;
    let (nk, fk) = (key(&client)?, key(&client)?);
    let p = topo.prefix().trim_start_matches("sp");
    let mut ni = format!("b{p}{tag}");
    let mut fi = format!("p{p}{tag}");
    ni.truncate(15);
    fi.truncate(15);
    let (near, far) = pos.nodes();
    let (near_allowed, far_allowed) = pos.allowed();
    let endpoint = format!("{}:{WG_PORT}", pos.far_addr());
    let running = match setup {
        Setup::Ours => {
            let dir = topo.tmpdir();
            let far_conf = dir.join(format!("{fi}.conf"));
            std::fs::write(
                &far_conf,
                format!(
                    "[Interface]\nPrivateKey = {}\nAddress = {TUN_FAR}/24\nListenPort = {WG_PORT}\n\
                     [Peer]\nPublicKey = {}\nAllowedIPs = {far_allowed}\n",
                    fk.private, nk.public
                ),
            )?;
            let near_conf = dir.join(format!("{ni}.conf"));
            std::fs::write(
                &near_conf,
                format!(
                    "[Interface]\nPrivateKey = {}\nAddress = {TUN_NEAR}/24\n\
                     [Peer]\nPublicKey = {}\nEndpoint = {endpoint}\nAllowedIPs = {near_allowed}\n",
                    nk.private, fk.public
                ),
            )?;
            let far_p = daemon(topo, far, &sibling_bin("starpep-pop")?, &far_conf, &fi)?;
            let near_p = daemon(topo, near, &client, &near_conf, &ni)?;
            Running::of(vec![near_p, far_p])
        }
        Setup::WireguardGo | Setup::BoringtunCli => {
            let (near_routes, far_routes) = pos.routes();
            let (tun_near, tun_far) = (format!("{TUN_NEAR}/24"), format!("{TUN_FAR}/24"));
            let far_d = start_uapi(
                topo,
                far,
                setup,
                &fi,
                &UapiSpec {
                    keys: &fk,
                    listen_port: Some(WG_PORT),
                    peer_public: &nk.public,
                    endpoint: None,
                    allowed: &far_allowed,
                    addresses: &[&tun_far],
                    routes: far_routes,
                },
            )?;
            let near_d = start_uapi(
                topo,
                near,
                setup,
                &ni,
                &UapiSpec {
                    keys: &nk,
                    listen_port: None,
                    peer_public: &fk.public,
                    endpoint: Some(&endpoint),
                    allowed: &near_allowed,
                    addresses: &[&tun_near],
                    routes: near_routes,
                },
            )?;
            Running {
                procs: Vec::new(),
                uapi: vec![near_d, far_d],
            }
        }
    };
    // Handshake before measuring.
    anyhow::ensure!(
        topo.wait_reachable(Node::Pc, &pos.srv_addr().to_string(), super::WARM_UP),
        "{}: pc cannot reach srv",
        setup.name()
    );
    Ok(running)
}

fn daemon(
    topo: &Topology,
    node: Node,
    bin: &Path,
    conf: &Path,
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

/// One end of a UAPI daemon's tunnel, set as `wg set` and wg-quick would.
pub struct UapiSpec<'a> {
    pub keys: &'a Key,
    pub listen_port: Option<u16>,
    pub peer_public: &'a str,
    pub endpoint: Option<&'a str>,
    /// AllowedIPs, comma-separated (spaces allowed).
    pub allowed: &'a str,
    /// Interface addresses (`ip address add`).
    pub addresses: &'a [&'a str],
    /// Routes into the interface (`ip route add R dev IFACE`).
    pub routes: &'a [&'a str],
}

/// A running wireguard-go or boringtun-cli; dropping it stops it and removes its UAPI socket.
pub struct UapiDaemon {
    pub proc: Proc,
    pub iface: String,
}

impl Drop for UapiDaemon {
    fn drop(&mut self) {
        self.proc.stop();
        let _ = std::fs::remove_file(uapi_socket(&self.iface));
    }
}

fn uapi_socket(iface: &str) -> PathBuf {
    PathBuf::from(format!("/var/run/wireguard/{iface}.sock"))
}

/// Starts wireguard-go or boringtun-cli (`setup`) in `node` as `iface`, then configures it
/// with `wg set` and gives the interface its addresses, MTU 1420 and routes.
pub fn start_uapi(
    topo: &Topology,
    node: Node,
    setup: Setup,
    iface: &str,
    s: &UapiSpec,
) -> anyhow::Result<UapiDaemon> {
    let proc = match setup {
        Setup::WireguardGo => topo.spawn(
            node,
            &format!("wireguard-go-{iface}"),
            &[
                "env",
                "WG_PROCESS_FOREGROUND=1",
                "wireguard-go",
                "-f",
                iface,
            ],
        )?,
        Setup::BoringtunCli => {
            // `cargo install boringtun-cli`; BORINGTUN_CLI names the binary if not on PATH.
            let prog = std::env::var("BORINGTUN_CLI").unwrap_or_else(|_| "boringtun-cli".into());
            let log = topo.tmpdir().join(format!("boringtun-{iface}.out"));
            let log = log.display().to_string();
            topo.spawn(
                node,
                &format!("boringtun-cli-{iface}"),
                &[&prog, "-f", "--disable-drop-privileges", "-l", &log, iface],
            )?
        }
        Setup::Ours => anyhow::bail!("starpep is not a UAPI daemon"),
    };
    let d = UapiDaemon {
        proc,
        iface: iface.to_string(),
    };
    // The daemon creates the TUN first and its UAPI socket after: `wg set` needs both.
    let end = Instant::now() + Duration::from_secs(10);
    while !uapi_socket(iface).exists()
        || !topo
            .exec(node, &["ip", "link", "show", iface])?
            .status
            .success()
    {
        anyhow::ensure!(
            Instant::now() < end,
            "{} {iface} not up: {}",
            setup.name(),
            d.proc.log()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let keyfile = topo.tmpdir().join(format!("{iface}.key"));
    std::fs::write(&keyfile, &s.keys.private)?;
    let kf = keyfile.display().to_string();
    let port = s.listen_port.map(|p| p.to_string());
    let allowed = s.allowed.replace(' ', "");
    let mut args = vec!["wg", "set", iface, "private-key", &kf];
    if let Some(p) = &port {
        args.extend(["listen-port", p]);
    }
    args.extend(["peer", s.peer_public, "allowed-ips", &allowed]);
    if let Some(e) = s.endpoint {
        args.extend(["endpoint", e]);
    }
    topo.run_ok(node, &args)?;
    for a in s.addresses {
        topo.run_ok(node, &["ip", "address", "add", a, "dev", iface])?;
    }
    topo.run_ok(node, &["ip", "link", "set", iface, "mtu", "1420", "up"])?;
    for r in s.routes {
        topo.run_ok(node, &["ip", "route", "add", r, "dev", iface])?;
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_pop_routes_the_lans_pc_srv_only_the_tunnel() {
        assert_eq!(
            Position::BoxPop.allowed(),
            (
                "10.8.0.0/24,10.2.0.0/24".to_string(),
                "10.8.0.2/32,10.1.0.0/24".to_string()
            )
        );
        // The far endpoint's own address (srv's LAN) must stay outside pc's tunnel.
        assert_eq!(
            Position::PcSrv.allowed(),
            ("10.8.0.0/24".to_string(), "10.8.0.2/32".to_string())
        );
        assert_eq!(Position::PcSrv.srv_addr(), TUN_FAR);
        assert_eq!(Position::PcSrv.far_addr(), SRV);
    }
}
