//! From a parsed config to what the daemon will set up (pure apart from endpoint resolution,
//! which is passed in): role checks, peer specs for the engine, the interface plan.

use std::io;
use std::net::SocketAddr;

use zeroize::Zeroizing;

use crate::config::{Config, Endpoint, Table};
use crate::io::netconf::{NetPlan, RouteTable, DEFAULT_FWMARK};
use crate::tunnel::PeerSpec;

use super::Role;

/// MTU when the config has none (wg-quick's default for a 1500-byte path).
pub const DEFAULT_MTU: u16 = 1420;

/// wg-quick hook commands, in order.
#[derive(Debug, Clone, Default)]
pub struct Hooks {
    pub pre_up: Vec<String>,
    pub post_up: Vec<String>,
    pub pre_down: Vec<String>,
    pub post_down: Vec<String>,
}

/// Everything needed to bring the interface up, validated.
#[derive(Debug, Clone)]
pub struct Plan {
    pub iface: String,
    /// Wiped when the plan is dropped (Debug does not print it).
    pub private_key: Zeroizing<[u8; 32]>,
    pub peers: Vec<PeerSpec>,
    pub net: NetPlan,
    pub listen_port: u16,
    /// SO_MARK of the UDP socket: the config's FwMark, or the route table mark when a `/0`
    /// route needs the policy-routing trick.
    pub socket_mark: Option<u32>,
    pub hooks: Hooks,
    /// The `[PEP]` section, for what runs on top of the tunnel (`daemon::pep`).
    pub pep: Option<crate::config::Pep>,
    /// Where the Prometheus endpoint listens (`MetricsListen`).
    pub metrics_listen: Option<SocketAddr>,
}

/// Checks role rules and resolves endpoints. Every problem is reported, as
/// `FILE:LINE: KEY: message` like the parser's errors.
pub fn plan(
    role: Role,
    iface: &str,
    cfg: &Config,
    resolve: impl Fn(&Endpoint) -> io::Result<SocketAddr>,
) -> Result<Plan, Vec<String>> {
    let mut errors = Vec::new();
    let file = &cfg.file;
    if role == Role::Client && cfg.peers.len() != 1 {
        errors.push(format!(
            "{file}:0: [Peer]: the client box needs exactly one [Peer] (the POP), found {}",
            cfg.peers.len()
        ));
    }
    let mut peers = Vec::with_capacity(cfg.peers.len());
    for p in &cfg.peers {
        let endpoint = match &p.endpoint {
            Some(e) => match resolve(e) {
                Ok(a) => Some(a),
                Err(err) => {
                    errors.push(format!("{file}:{}: Endpoint: {e}: {err}", p.line));
                    None
                }
            },
            None => {
                if role == Role::Client {
                    errors.push(format!(
                        "{file}:{}: Endpoint: the client box must know where its POP is",
                        p.line
                    ));
                }
                None
            }
        };
        peers.push(PeerSpec {
            public_key: p.public_key.to_bytes(),
            preshared_key: p
                .preshared_key
                .as_ref()
                .map(|k| Zeroizing::new(k.to_bytes())),
            endpoint,
            allowed_ips: p.allowed_ips.clone(),
            persistent_keepalive: p.persistent_keepalive,
        });
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let i = &cfg.interface;
    let table = match i.table {
        Table::Auto => RouteTable::Auto,
        Table::Off => RouteTable::Off,
        Table::Id(t) => RouteTable::Id(t),
    };
    let net = NetPlan {
        iface: iface.to_string(),
        addresses: i.addresses.clone(),
        mtu: i.mtu.unwrap_or(DEFAULT_MTU),
        routes: peers.iter().flat_map(|p| p.allowed_ips.clone()).collect(),
        table,
        fwmark: i.fwmark.unwrap_or(DEFAULT_FWMARK),
    };
    let socket_mark = i.fwmark.or(net.needs_fwmark().then_some(net.fwmark));
    Ok(Plan {
        iface: iface.to_string(),
        private_key: Zeroizing::new(i.private_key.to_bytes()),
        peers,
        listen_port: i.listen_port.unwrap_or(0),
        socket_mark,
        hooks: Hooks {
            pre_up: i.pre_up.clone(),
            post_up: i.post_up.clone(),
            pre_down: i.pre_down.clone(),
            post_down: i.post_down.clone(),
        },
        pep: cfg.pep.clone(),
        metrics_listen: i.metrics_listen,
        net,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{parse, PrivateKey};

    fn conf(peers: &[(&str, Option<&str>)], extra_iface: &str) -> Config {
        let mut s = format!(
            "[Interface]\nPrivateKey = {}\nAddress = 10.100.0.1/24\n{extra_iface}\n",
            PrivateKey::generate()
        );
        for (ips, ep) in peers {
            s.push_str(&format!(
                "[Peer]\nPublicKey = {}\nAllowedIPs = {ips}\n",
                PrivateKey::generate().public_key()
            ));
            if let Some(ep) = ep {
                s.push_str(&format!("Endpoint = {ep}\n"));
            }
        }
        parse("t.conf", &s).unwrap()
    }

    fn literal(e: &Endpoint) -> io::Result<SocketAddr> {
        e.resolve()
    }

    #[test]
    fn the_client_needs_one_peer_with_an_endpoint() {
        let two = conf(
            &[
                ("10.2.0.0/24", Some("10.99.0.2:51820")),
                ("10.3.0.0/24", None),
            ],
            "",
        );
        let errs = plan(Role::Client, "box", &two, literal).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[0].contains("exactly one [Peer]"), "{errs:?}");
        assert!(
            errs[1].starts_with("t.conf:") && errs[1].contains("Endpoint"),
            "{errs:?}"
        );
        assert!(
            plan(Role::Pop, "pop", &two, literal).is_ok(),
            "the POP takes many"
        );
        let none = conf(&[], "");
        assert!(plan(Role::Client, "box", &none, literal).is_err());
    }

    #[test]
    fn resolution_failures_name_the_line() {
        let c = conf(&[("10.2.0.0/24", Some("pop.invalid:51820"))], "");
        let fail = |_: &Endpoint| Err(io::Error::other("no such host"));
        let errs = plan(Role::Client, "box", &c, fail).unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(
            errs[0].contains(":5: Endpoint: pop.invalid:51820: no such host"),
            "{errs:?}"
        );
    }

    #[test]
    fn a_default_route_marks_the_socket_unless_table_is_set() {
        let c = conf(&[("0.0.0.0/0, ::/0", Some("10.99.0.2:51820"))], "");
        let p = plan(Role::Client, "box", &c, literal).unwrap();
        assert_eq!(p.socket_mark, Some(DEFAULT_FWMARK));
        assert_eq!(p.net.mtu, DEFAULT_MTU);
        let c = conf(
            &[("0.0.0.0/0", Some("10.99.0.2:51820"))],
            "Table = 1234\nMTU = 1380",
        );
        let p = plan(Role::Client, "box", &c, literal).unwrap();
        assert_eq!(p.socket_mark, None);
        assert_eq!(p.net.table, RouteTable::Id(1234));
        assert_eq!(p.net.mtu, 1380);
        let c = conf(&[("10.2.0.0/24", Some("10.99.0.2:51820"))], "FwMark = 0x77");
        let p = plan(Role::Client, "box", &c, literal).unwrap();
        assert_eq!(p.socket_mark, Some(0x77));
        assert_eq!(
            p.peers[0].endpoint,
            Some("10.99.0.2:51820".parse().unwrap())
        );
    }
}
