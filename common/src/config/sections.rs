//! `[Interface]` and `[Peer]` sections: their keys and value checks (pure; driven by `parse.rs`).

use super::error::ErrorKind;
use super::model::{Endpoint, Interface, Peer, Table};
use super::parse::{check_key, Ctx, SectionSpec, Seen};
use super::values::{self, ValueResult};

const INTERFACE: SectionSpec = SectionSpec {
    name: "Interface",
    known: INTERFACE_KEYS,
    multi: MULTI_KEYS,
};
const PEER: SectionSpec = SectionSpec {
    name: "Peer",
    known: PEER_KEYS,
    multi: MULTI_KEYS,
};

#[rustfmt::skip]
const INTERFACE_KEYS: &[&str] = &[
    "PrivateKey",
    "ListenPort",
    "Address",
    "MTU",
    "FwMark",
    "Table",
    "DNS",
    "PreUp",
    "PostUp",
    "PreDown",
    "PostDown",
    "SaveConfig",
    "MetricsListen",
];
#[rustfmt::skip]
const PEER_KEYS: &[&str] = &[
    "PublicKey",
    "PresharedKey",
    "Endpoint",
    "AllowedIPs",
    "PersistentKeepalive",
];
#[rustfmt::skip]
const MULTI_KEYS: &[&str] = &[
    "Address",
    "DNS",
    "PreUp",
    "PostUp",
    "PreDown",
    "PostDown",
    "AllowedIPs",
];

pub(super) struct IfaceBuilder {
    pub(super) line: usize,
    pub(super) seen: Seen,
    pub(super) iface: Interface,
    /// A valid PrivateKey was read.
    pub(super) has_key: bool,
    /// A PrivateKey line was given (valid or reported as invalid).
    pub(super) key_given: bool,
    pub(super) mtu_line: usize,
}

pub(super) struct PeerBuilder {
    pub(super) seen: Seen,
    pub(super) peer: Peer,
    pub(super) has_key: bool,
    pub(super) key_line: usize,
}

impl IfaceBuilder {
    pub(super) fn new(line: usize) -> Self {
        Self {
            line,
            seen: Seen::default(),
            iface: Interface {
                private_key: [0u8; 32].into(),
                listen_port: None,
                addresses: Vec::new(),
                mtu: None,
                fwmark: None,
                table: Table::Auto,
                dns: Vec::new(),
                pre_up: Vec::new(),
                post_up: Vec::new(),
                pre_down: Vec::new(),
                post_down: Vec::new(),
                save_config: false,
                metrics_listen: None,
            },
            has_key: false,
            key_given: false,
            mtu_line: 0,
        }
    }
}

pub(super) fn iface_entry(
    ctx: &mut Ctx<'_>,
    b: &mut IfaceBuilder,
    key: &str,
    v: &str,
    line: usize,
) {
    let Some(k) = check_key(ctx, &mut b.seen, &INTERFACE, key, v, line) else {
        return;
    };
    let i = &mut b.iface;
    match k {
        "PrivateKey" => match v.parse() {
            Ok(key) => {
                i.private_key = key;
                b.has_key = true;
                b.key_given = true;
            }
            Err(e) => {
                // Reported here; do not also report it as missing.
                b.key_given = true;
                ctx.err(line, k, ErrorKind::Invalid(format!("{e}")));
            }
        },
        "ListenPort" => i.listen_port = ctx.value(line, k, values::int_in(v, 0u16, 65535)),
        "Address" => {
            if let Some(items) = ctx.value(line, k, values::list(v)) {
                for a in items {
                    if let Some(net) = ctx.value(line, k, values::address(a)) {
                        i.addresses.push(net);
                    }
                }
            }
        }
        "MTU" => {
            i.mtu = ctx.value(line, k, values::int_in(v, 576u16, 9000));
            b.mtu_line = line;
        }
        "FwMark" => {
            i.fwmark = if v.eq_ignore_ascii_case("off") {
                None
            } else {
                ctx.value(line, k, values::u32_dec_or_hex(v))
                    .filter(|&m| m != 0)
            }
        }
        "Table" => {
            if let Some(t) = ctx.value(line, k, table(v)) {
                i.table = t;
            }
        }
        "DNS" => {
            if let Some(items) = ctx.value(line, k, values::list(v)) {
                for d in items {
                    if d.contains(char::is_whitespace) {
                        ctx.err(
                            line,
                            k,
                            ErrorKind::Invalid(format!("{d:?} contains spaces")),
                        );
                    } else {
                        i.dns.push(d.to_string());
                    }
                }
            }
        }
        "PreUp" => i.pre_up.push(v.to_string()),
        "PostUp" => i.post_up.push(v.to_string()),
        "PreDown" => i.pre_down.push(v.to_string()),
        "PostDown" => i.post_down.push(v.to_string()),
        "SaveConfig" => {
            if let Some(s) = ctx.value(line, k, values::bool_value(v)) {
                i.save_config = s;
            }
        }
        "MetricsListen" => i.metrics_listen = ctx.value(line, k, values::socket_addr(v)),
        _ => unreachable!("key {k} listed but not handled"),
    }
}

/// `auto`, `off`, `main`/`local`/`default` or a table number 1..2^32-1.
fn table(v: &str) -> ValueResult<Table> {
    match v.to_ascii_lowercase().as_str() {
        "auto" => Ok(Table::Auto),
        "off" => Ok(Table::Off),
        "main" => Ok(Table::Id(254)),
        "local" => Ok(Table::Id(255)),
        "default" => Ok(Table::Id(253)),
        _ => values::int_in(v, 1u32, u32::MAX)
            .map(Table::Id)
            .map_err(|_| format!("{v:?} is not auto, off, main, local, default or a table number")),
    }
}

impl PeerBuilder {
    pub(super) fn new(line: usize) -> Self {
        Self {
            seen: Seen::default(),
            peer: Peer {
                public_key: [0u8; 32].into(),
                preshared_key: None,
                endpoint: None,
                allowed_ips: Vec::new(),
                persistent_keepalive: None,
                line,
            },
            has_key: false,
            key_line: line,
        }
    }
}

pub(super) fn peer_entry(ctx: &mut Ctx<'_>, b: &mut PeerBuilder, key: &str, v: &str, line: usize) {
    let Some(k) = check_key(ctx, &mut b.seen, &PEER, key, v, line) else {
        return;
    };
    let p = &mut b.peer;
    match k {
        "PublicKey" => match v.parse() {
            Ok(key) => {
                p.public_key = key;
                b.has_key = true;
                b.key_line = line;
            }
            Err(e) => {
                // Reported here; do not also report it as missing.
                b.has_key = true;
                b.key_line = 0;
                ctx.err(line, k, ErrorKind::Invalid(format!("{e}")));
            }
        },
        "PresharedKey" => match v.parse() {
            Ok(key) => p.preshared_key = Some(key),
            Err(e) => ctx.err(line, k, ErrorKind::Invalid(format!("{e}"))),
        },
        "Endpoint" => p.endpoint = ctx.value(line, k, v.parse::<Endpoint>()),
        "AllowedIPs" => {
            if let Some(items) = ctx.value(line, k, values::list(v)) {
                for a in items {
                    if let Some(net) = ctx.value(line, k, values::prefix(a)) {
                        p.allowed_ips.push(net);
                    }
                }
            }
        }
        "PersistentKeepalive" => {
            p.persistent_keepalive = if v.eq_ignore_ascii_case("off") {
                None
            } else {
                ctx.value(line, k, values::int_in(v, 0u16, 65535))
                    .filter(|&s| s != 0)
            }
        }
        _ => unreachable!("key {k} listed but not handled"),
    }
}
