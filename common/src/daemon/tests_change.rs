//! Unit tests of what a reload changes: peers and routes apply, `[Interface]` changes are
//! refused by name, hooks are noted.

use super::*;
use crate::config::{parse, PrivateKey};
use crate::daemon::plan::plan;
use crate::daemon::Role;

struct Keys {
    private: PrivateKey,
    peers: Vec<String>,
}

fn keys() -> Keys {
    Keys {
        private: PrivateKey::generate(),
        peers: (0..4)
            .map(|_| PrivateKey::generate().public_key().to_string())
            .collect(),
    }
}

/// A POP config with `iface` lines added to `[Interface]` and peers `(key index, AllowedIPs)`.
fn pop(k: &Keys, iface: &str, peers: &[(usize, &str)]) -> Plan {
    let mut s = format!(
        "[Interface]\nPrivateKey = {}\nAddress = 10.8.0.1/24\nListenPort = 51820\n{iface}\n",
        k.private
    );
    for (i, ips) in peers {
        s.push_str(&format!(
            "[Peer]\nPublicKey = {}\nAllowedIPs = {ips}\n",
            k.peers[*i]
        ));
    }
    let cfg = parse("pop0.conf", &s).unwrap();
    plan(Role::Pop, "pop0", &cfg, |e| e.resolve()).unwrap()
}

fn nets(v: &[&str]) -> Vec<IpNet> {
    v.iter().map(|s| s.parse().unwrap()).collect()
}

#[test]
fn peers_and_their_routes_change_and_the_rest_stays() {
    let k = keys();
    let old = pop(&k, "", &[(0, "10.1.0.0/24"), (1, "10.3.0.0/24")]);
    let new = pop(
        &k,
        "",
        &[(0, "10.1.0.0/24, 10.5.0.0/24"), (2, "10.4.0.0/24")],
    );
    let c = change(&old, &new, "pop0.conf").unwrap();
    assert_eq!(c.peers.added.len(), 1);
    assert_eq!(c.peers.removed.len(), 1);
    assert_eq!(c.peers.changed.len(), 1);
    assert!(c.peers.changed[0].allowed_ips);
    assert_eq!(c.routes_add, nets(&["10.4.0.0/24", "10.5.0.0/24"]));
    assert_eq!(c.routes_del, nets(&["10.3.0.0/24"]));
    assert!(c.notes.is_empty());
    let same = change(&old, &old, "pop0.conf").unwrap();
    assert!(same.peers.is_empty() && same.routes_add.is_empty() && same.routes_del.is_empty());
}

#[test]
fn interface_settings_the_interface_was_set_up_with_are_refused_by_name() {
    let k = keys();
    let old = pop(&k, "", &[(0, "10.1.0.0/24")]);
    let mut other = pop(
        &k,
        "MTU = 1380\nFwMark = 0x99\nTable = 1234\nMetricsListen = 127.0.0.1:9586",
        &[(0, "10.1.0.0/24")],
    );
    other.listen_port = 51821;
    other.net.addresses = nets(&["10.9.0.1/24"]);
    other.private_key = [7; 32].into();
    let errs = change(&old, &other, "pop0.conf").unwrap_err();
    for key in [
        "PrivateKey",
        "ListenPort",
        "Address",
        "MTU",
        "Table",
        "FwMark",
        "MetricsListen",
    ] {
        assert!(
            errs.iter()
                .any(|e| e.starts_with(&format!("pop0.conf: [Interface] {key}: "))),
            "{key} not named: {errs:?}"
        );
    }
    assert!(errs.iter().all(|e| e.ends_with("this takes a restart")));
}

#[test]
fn a_default_route_or_a_pep_section_coming_or_going_is_refused() {
    let k = keys();
    let old = pop(&k, "", &[(0, "10.1.0.0/24")]);
    let with_default = pop(&k, "", &[(0, "10.1.0.0/24"), (1, "0.0.0.0/0")]);
    let errs = change(&old, &with_default, "pop0.conf").unwrap_err();
    assert!(errs[0].contains("default route"), "{errs:?}");
    // Table = off adds no routes: a /0 is just cryptokey routing there.
    let off = pop(&k, "Table = off", &[(0, "10.1.0.0/24")]);
    let off_default = pop(&k, "Table = off", &[(0, "10.1.0.0/24"), (1, "0.0.0.0/0")]);
    assert!(change(&off, &off_default, "pop0.conf").is_ok());
    let mut with_pep = old.clone();
    with_pep.pep = Some(crate::config::Pep::default());
    let errs = change(&old, &with_pep, "pop0.conf").unwrap_err();
    assert!(errs[0].contains("[PEP]"), "{errs:?}");
}

#[test]
fn changed_hooks_are_noted_not_run() {
    let k = keys();
    let old = pop(&k, "PostUp = true", &[(0, "10.1.0.0/24")]);
    let new = pop(&k, "PostUp = echo new", &[(0, "10.1.0.0/24")]);
    let c = change(&old, &new, "pop0.conf").unwrap();
    assert_eq!(c.notes.len(), 1);
    assert!(c.notes[0].contains("PostUp"), "{:?}", c.notes);
}
