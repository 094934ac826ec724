//! A UAPI WireGuard daemon (wireguard-go or boringtun-cli) at one end of a tunnel in a test
//! topology: started, configured with `wg set`, given addresses, MTU 1420 and routes as
//! wg-quick would, stopped on drop. The one home of this start-up: `bench::vpn` and the netns
//! tests use it.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::topo::{Node, Proc, Topology};

use super::vpn::{Key, Setup};

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
