//! The typed configuration the daemons run from: `[Interface]`, `[Peer]`s and the optional `[PEP]`.

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::str::FromStr;

use ipnet::IpNet;

use super::keys::{PresharedKey, PrivateKey, PublicKey};
use super::pep::Pep;

/// One parsed configuration file.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The file name it was parsed from (as given to `parse`/`load`).
    pub file: String,
    pub interface: Interface,
    pub peers: Vec<Peer>,
    /// `None`: no `[PEP]` section, the endpoint behaves exactly as stock WireGuard.
    pub pep: Option<Pep>,
}

/// The `[Interface]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Interface {
    pub private_key: PrivateKey,
    /// UDP port to listen on; `None` or `Some(0)`: a random port.
    pub listen_port: Option<u16>,
    /// Interface addresses with their prefix length (host bits kept), in file order.
    pub addresses: Vec<IpNet>,
    /// Tunnel MTU; `None`: the daemon's default.
    pub mtu: Option<u16>,
    /// Firewall mark on outer packets; `None` (also for `off` and `0`): none.
    pub fwmark: Option<u32>,
    pub table: Table,
    /// wg-quick `DNS =` entries (servers or search domains), kept verbatim.
    pub dns: Vec<String>,
    /// wg-quick hook commands, verbatim, in file order.
    pub pre_up: Vec<String>,
    pub post_up: Vec<String>,
    pub pre_down: Vec<String>,
    pub post_down: Vec<String>,
    /// wg-quick `SaveConfig`.
    pub save_config: bool,
    /// Where the Prometheus endpoint (`GET /metrics`) listens; `None`: no endpoint.
    pub metrics_listen: Option<std::net::SocketAddr>,
}

/// wg-quick `Table =`: where AllowedIPs routes go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Table {
    /// `auto` (default): the main table (wg-quick's policy routing for default routes).
    #[default]
    Auto,
    /// `off`: add no routes.
    Off,
    /// A numeric table (`main` = 254, `local` = 255, `default` = 253).
    Id(u32),
}

/// One `[Peer]` section.
#[derive(Debug, Clone, PartialEq)]
pub struct Peer {
    pub public_key: PublicKey,
    pub preshared_key: Option<PresharedKey>,
    pub endpoint: Option<Endpoint>,
    /// Route prefixes (host bits cleared), in file order.
    pub allowed_ips: Vec<IpNet>,
    /// Seconds; `None` for `off` or `0`.
    pub persistent_keepalive: Option<u16>,
    /// Line of the `[Peer]` header (for messages).
    pub line: usize,
}

/// A peer's outer address: an IP literal or a host name, and a UDP port.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// IPv4/IPv6 literal (IPv6 without brackets) or a DNS name.
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// The socket address: the literal, or the first address the name resolves to (blocking).
    pub fn resolve(&self) -> io::Result<SocketAddr> {
        if let Ok(ip) = self.host.parse::<IpAddr>() {
            return Ok(SocketAddr::new(ip, self.port));
        }
        (self.host.as_str(), self.port)
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("resolve {}: no addresses", self.host),
                )
            })
    }
}

impl From<SocketAddr> for Endpoint {
    fn from(a: SocketAddr) -> Self {
        Self {
            host: a.ip().to_string(),
            port: a.port(),
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

impl FromStr for Endpoint {
    type Err = String;

    /// `192.0.2.1:51820`, `[2001:db8::1]:51820` or `vpn.example.com:51820`; port 1..65535.
    fn from_str(s: &str) -> Result<Self, String> {
        let (host, port) = if let Some(rest) = s.strip_prefix('[') {
            let (h, p) = rest
                .split_once("]:")
                .ok_or_else(|| format!("{s:?} is not [IPv6]:port"))?;
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(format!("{h:?} is not an IPv6 address"));
            }
            (h, p)
        } else {
            let (h, p) = s
                .rsplit_once(':')
                .ok_or_else(|| format!("{s:?} has no :port"))?;
            if h.contains(':') {
                return Err(format!(
                    "{s:?}: an IPv6 endpoint needs brackets ([addr]:port)"
                ));
            }
            if h.is_empty()
                || h.len() > 253
                || !h
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
            {
                return Err(format!("{h:?} is not an IPv4 address or host name"));
            }
            let looks_v4 = h.chars().all(|c| c.is_ascii_digit() || c == '.');
            if looks_v4 && h.parse::<std::net::Ipv4Addr>().is_err() {
                return Err(format!("{h:?} is not an IPv4 address"));
            }
            (h, p)
        };
        let port = match port_number(port) {
            Some(p) => p,
            None => return Err(format!("{port:?} is not a port (1..65535)")),
        };
        Ok(Self {
            host: host.to_string(),
            port,
        })
    }
}

fn port_number(p: &str) -> Option<u16> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    p.parse::<u16>().ok().filter(|&p| p != 0)
}
