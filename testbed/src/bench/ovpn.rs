//! OpenVPN 2.6 (Debian's `/usr/sbin/openvpn`) as a bench setup: point to point in TLS mode
//! (a throwaway CA made with openssl in the topology's tmpdir), AES-256-GCM, over UDP or TCP,
//! at box and POP or (position A, outside a PEP) at pc and srv. The config text is a pure
//! function of [`Conf`]; [`up`] writes it, starts both ends and waits for the tunnel.

use std::net::Ipv4Addr;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::topo::addr::{
    BOX_LAN, BOX_WAN, PC_LAN, POP_LAN, POP_WAN, SRV, TUN_FAR, TUN_NEAR, WAN_IF,
};
use crate::topo::{Node, Proc, Topology};

use super::vpn::{Position, Running};

/// The port the far end listens on.
pub const PORT: u16 = 1194;
/// The tunnel's MTU: WireGuard's, so that every VPN gives the end hosts the same MSS (1380).
pub const TUN_MTU: u32 = 1420;
/// The largest encapsulated packet, IP and UDP headers included (`mssfix N mtu`): a full
/// 1420-byte inner packet plus AES-GCM's framing (opcode + peer id 4, packet id 4, tag 16) and
/// IPv4 + UDP (28) is 1472 bytes, within the link's 1500.
pub const MSSFIX: u32 = 1472;
/// The kernel's `net.core.{w,r}mem_max` in a namespace (read-only there): OpenVPN's
/// SO_SNDBUF/SO_RCVBUF are capped to it.
const BUF_MAX: u64 = 4 << 20;
const BUF_MIN: u64 = 64 << 10;

/// What carries the tunnel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// The socket buffer of each end: 2 × the link's BDP (as the PEP sizes its satellite
/// buffers), within 64 KiB and the namespace's 4 MiB cap.
pub fn socket_buffer(rate_bps: f64, rtt: Duration) -> u64 {
    let bdp = rate_bps / 8.0 * rtt.as_secs_f64();
    ((2.0 * bdp) as u64).clamp(BUF_MIN, BUF_MAX)
}

/// One end's configuration.
#[derive(Debug, Clone)]
pub struct Conf<'a> {
    pub transport: Transport,
    /// The far end (listens, TLS server) or the near one (connects, TLS client).
    pub far: bool,
    /// The far end's underlay address: where it listens, or what the near end connects to.
    pub far_addr: Ipv4Addr,
    /// Networks routed into the tunnel besides its own (CIDR).
    pub routes: &'a [&'a str],
    /// SO_SNDBUF and SO_RCVBUF, bytes.
    pub buf_bytes: u64,
    /// Directory of the PKI (`ca.crt`, `NAME.crt`, `NAME.key`) and this end's name in it.
    pub pki: &'a Path,
    pub name: &'a str,
}

/// The config file text of one end.
pub fn config(c: &Conf) -> anyhow::Result<String> {
    let pki = c.pki.display();
    let (local, remote) = match c.far {
        true => (TUN_FAR, TUN_NEAR),
        false => (TUN_NEAR, TUN_FAR),
    };
    let mut s = format!(
        "dev ovpn0\ndev-type tun\ntopology p2p\nifconfig {local} {remote}\n\
         tun-mtu {TUN_MTU}\nmssfix {MSSFIX} mtu\nsndbuf {b}\nrcvbuf {b}\n\
         ca {pki}/ca.crt\ncert {pki}/{n}.crt\nkey {pki}/{n}.key\n\
         data-ciphers AES-256-GCM\ndata-ciphers-fallback AES-256-GCM\ntls-version-min 1.2\n\
         verb 3\n",
        b = c.buf_bytes,
        n = c.name,
    );
    let (far, port) = (c.far_addr, PORT);
    s += &match (c.far, c.transport) {
        (true, Transport::Udp) => format!("proto udp\nlocal {far}\nlport {port}\n"),
        (true, Transport::Tcp) => format!("proto tcp-server\nlocal {far}\nlport {port}\n"),
        (false, Transport::Udp) => format!("proto udp\nremote {far} {port}\nnobind\n"),
        (false, Transport::Tcp) => {
            format!("proto tcp-client\nremote {far} {port}\nnobind\nconnect-retry 1 1\n")
        }
    };
    if c.transport == Transport::Tcp {
        s += "socket-flags TCP_NODELAY\n";
    }
    s += match c.far {
        true => "tls-server\ndh none\n",
        false => "tls-client\nremote-cert-tls server\n",
    };
    for r in c.routes {
        let n: ipnet::Ipv4Net = r.parse()?;
        s += &format!("route {} {}\n", n.network(), n.netmask());
    }
    Ok(s)
}

/// Makes a CA and a certificate for each end ("far": server, "near": client) in `dir`.
fn make_pki(dir: &Path) -> anyhow::Result<()> {
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut ca = vec![
        "req",
        "-x509",
        "-days",
        "2",
        "-subj",
        "/CN=starpep-bench-ca",
    ];
    ca.extend(ec);
    ca.extend(["-keyout", "ca.key", "-out", "ca.crt"]);
    openssl(dir, &ca)?;
    for (name, eku) in [("far", "serverAuth"), ("near", "clientAuth")] {
        let ext = format!("{name}.ext");
        // `remote-cert-tls server` wants both key usage and extended key usage.
        let text = format!("keyUsage = digitalSignature, keyAgreement\nextendedKeyUsage = {eku}\n");
        std::fs::write(dir.join(&ext), text)?;
        let (key, csr, crt) = (
            format!("{name}.key"),
            format!("{name}.csr"),
            format!("{name}.crt"),
        );
        let subj = format!("/CN={name}");
        let mut req = vec!["req", "-subj", &subj];
        req.extend(ec);
        req.extend(["-keyout", &key, "-out", &csr]);
        openssl(dir, &req)?;
        openssl(
            dir,
            &[
                "x509",
                "-req",
                "-in",
                &csr,
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-set_serial",
                "1",
                "-days",
                "2",
                "-extfile",
                &ext,
                "-out",
                &crt,
            ],
        )?;
    }
    Ok(())
}

fn openssl(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| anyhow::anyhow!("openssl: {e} (apt-get install openssl)"))?;
    anyhow::ensure!(
        out.status.success(),
        "openssl {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    Ok(())
}

/// Brings the tunnel up at `pos` over `transport` with `buf_bytes` socket buffers and waits
/// until both ends completed their handshake and pc reaches srv through it.
pub fn up(
    topo: &Topology,
    transport: Transport,
    pos: Position,
    buf_bytes: u64,
) -> anyhow::Result<Running> {
    let pki = topo.tmpdir().join("ovpn-pki");
    std::fs::create_dir_all(&pki)?;
    make_pki(&pki)?;
    let (near, far) = pos.nodes();
    let (near_routes, far_routes) = pos.routes();
    // The link first: OpenVPN's TLS retries back off, a handshake lost to a link still starting
    // would delay the tunnel for seconds.
    anyhow::ensure!(
        topo.wait_reachable(near, &pos.far_addr().to_string(), super::WARM_UP),
        "openvpn: {} cannot reach {}",
        near.short(),
        pos.far_addr()
    );
    if transport == Transport::Tcp {
        pin_cubic(topo, pos)?;
    }
    let mut procs = Vec::new();
    for (node, is_far, routes) in [(far, true, far_routes), (near, false, near_routes)] {
        let name = if is_far { "far" } else { "near" };
        let text = config(&Conf {
            transport,
            far: is_far,
            far_addr: pos.far_addr(),
            routes,
            buf_bytes,
            pki: &pki,
            name,
        })?;
        let conf = topo.tmpdir().join(format!("ovpn-{name}.conf"));
        std::fs::write(&conf, text)?;
        let label = format!("openvpn-{}", node.short());
        let args = ["openvpn".as_ref(), "--config".as_ref(), conf.as_os_str()];
        procs.push(topo.spawn(node, &label, &args)?);
    }
    for p in &mut procs {
        wait_ready(p)?;
    }
    anyhow::ensure!(
        topo.wait_reachable(Node::Pc, &pos.srv_addr().to_string(), super::WARM_UP),
        "openvpn: pc cannot reach srv"
    );
    Ok(Running::of(procs))
}

/// OpenVPN cannot choose its TCP socket's congestion control and a namespace cannot default to
/// one outside `tcp_allowed_congestion_control`: a host route from each end to the other with
/// `congctl cubic` (Debian's default) pins it whatever this machine's default is. Only
/// OpenVPN's own connection takes these routes (the apps' traffic goes through the tunnel).
fn pin_cubic(topo: &Topology, pos: Position) -> anyhow::Result<()> {
    // (where, the other end, its gateway: none on the satellite link's subnet)
    let hops = match pos {
        Position::BoxPop => [(Node::Box, POP_WAN, None), (Node::Pop, BOX_WAN, None)],
        Position::PcSrv => [
            (Node::Pc, SRV, Some(BOX_LAN)),
            (Node::Srv, PC_LAN, Some(POP_LAN)),
        ],
    };
    for (node, peer, gw) in hops {
        let dst = format!("{peer}/32");
        let via = match gw {
            Some(g) => ["via".to_string(), g.to_string()],
            None => ["dev".to_string(), WAN_IF.to_string()],
        };
        let mut args = vec!["route", "add", dst.as_str()];
        args.extend(via.iter().map(String::as_str));
        args.extend(["congctl", "cubic"]);
        topo.ip(node, &args)?;
    }
    Ok(())
}

/// Waits for "Initialization Sequence Completed" (TLS done, addresses and routes set).
fn wait_ready(p: &mut Proc) -> anyhow::Result<()> {
    let end = Instant::now() + super::WARM_UP;
    loop {
        if let Some(st) = p.try_status() {
            anyhow::bail!("{} exited ({st}): {}", p.label(), p.log());
        }
        if p.log().contains("Initialization Sequence Completed") {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < end, "{} not up: {}", p.label(), p.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(transport: Transport, far: bool) -> String {
        config(&Conf {
            transport,
            far,
            far_addr: Ipv4Addr::new(10, 99, 0, 2),
            routes: &["10.2.0.0/24"],
            buf_bytes: 1_250_000,
            pki: Path::new("/tmp/pki"),
            name: if far { "far" } else { "near" },
        })
        .unwrap()
    }

    #[test]
    fn buffers_are_twice_the_bdp_within_bounds() {
        // GEO: 10 Mbit/s × 500 ms = 625 kB.
        assert_eq!(socket_buffer(10e6, Duration::from_millis(500)), 1_250_000);
        assert_eq!(socket_buffer(1e6, Duration::from_millis(10)), 64 << 10);
        assert_eq!(socket_buffer(1e9, Duration::from_millis(600)), 4 << 20);
    }

    #[test]
    fn far_end_listens_and_serves_tls() {
        let s = conf(Transport::Tcp, true);
        for l in [
            "proto tcp-server",
            "local 10.99.0.2",
            "lport 1194",
            "tls-server",
            "dh none",
            "ifconfig 10.8.0.1 10.8.0.2",
            "route 10.2.0.0 255.255.255.0",
            "sndbuf 1250000",
            "rcvbuf 1250000",
            "socket-flags TCP_NODELAY",
            "data-ciphers AES-256-GCM",
            "cert /tmp/pki/far.crt",
        ] {
            assert!(s.lines().any(|x| x == l), "{l:?} missing in:\n{s}");
        }
        assert!(!s.contains("remote "), "{s}");
    }

    #[test]
    fn near_end_connects_and_checks_the_server_cert() {
        let s = conf(Transport::Udp, false);
        for l in [
            "proto udp",
            "remote 10.99.0.2 1194",
            "tls-client",
            "remote-cert-tls server",
            "ifconfig 10.8.0.2 10.8.0.1",
            "tun-mtu 1420",
            "mssfix 1472 mtu",
        ] {
            assert!(s.lines().any(|x| x == l), "{l:?} missing in:\n{s}");
        }
        assert!(!s.contains("TCP_NODELAY") && !s.contains("lport"), "{s}");
    }

    #[test]
    fn a_bad_route_is_an_error() {
        let c = Conf {
            transport: Transport::Udp,
            far: true,
            far_addr: Ipv4Addr::new(10, 99, 0, 2),
            routes: &["10.2.0.0"],
            buf_bytes: 65536,
            pki: Path::new("/tmp"),
            name: "far",
        };
        assert!(config(&c).is_err());
    }
}
