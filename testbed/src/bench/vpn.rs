//! The WireGuard setups a benchmark compares, brought up and down inside one topology: our
//! endpoint pair, wireguard-go (+ `wg`), and boringtun-cli when it is installed, at box and POP
//! or (position A) at pc and srv. Same keys, addresses (`topo::addr`), MTU (1420) and routes for
//! all (the UAPI daemons' start-up is `bench::uapi`).

use std::net::Ipv4Addr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::topo::addr::{PC_NET, POP_WAN, SRV, SRV_NET, TUN_FAR, TUN_NEAR, TUN_NET, WG_PORT};
use crate::topo::{Node, Proc, Topology};

use super::sibling_bin;
use super::uapi::{start_uapi, UapiDaemon, UapiSpec};

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
            // `run` refuses a config group/others can access.
            std::fs::set_permissions(
                &far_conf,
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
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
            // `run` refuses a config group/others can access.
            std::fs::set_permissions(
                &near_conf,
                std::os::unix::fs::PermissionsExt::from_mode(0o600),
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
