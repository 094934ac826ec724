//! Unit tests of the config parser's errors: each kind with its line and key, and a file with many.

use super::*;

const K1: &str = "KLAp2JYd9y2hS/9Nshf5HCHbC7yFnLRaMOqg8t9DvWQ=";
const K1_PUB: &str = "BfWp/tA3pEaOVpsCCBHA384Wnz52+yI9vPrF5IIJlGg=";
const K2_PUB: &str = "39V847lFYsv0gkIqcOIlDp6Cd1qRM7A05Q/rnzZorSI=";

/// `(line, key, display)` of every error.
pub(super) fn errs(text: &str) -> Vec<(usize, String, String)> {
    match parse("box.conf", text) {
        Ok(c) => panic!("parsed but should not: {c:?}"),
        Err(e) => e
            .iter()
            .map(|e| (e.line, e.key.clone(), e.to_string()))
            .collect(),
    }
}

/// Exactly one error, at `line` with `key`, whose message contains `msg`.
pub(super) fn one(text: &str, line: usize, key: &str, msg: &str) {
    let e = errs(text);
    assert_eq!(e.len(), 1, "expected one error, got {e:#?}");
    assert_eq!((e[0].0, e[0].1.as_str()), (line, key), "{e:#?}");
    assert!(
        e[0].2.starts_with(&format!("box.conf:{line}: {key}: ")),
        "{}",
        e[0].2
    );
    assert!(
        e[0].2.contains(msg),
        "{:?} does not contain {msg:?}",
        e[0].2
    );
}

fn iface(extra: &str) -> String {
    format!("[Interface]\nPrivateKey = {K1}\n{extra}")
}

fn peer(extra: &str) -> String {
    format!("[Interface]\nPrivateKey = {K1}\n[Peer]\nPublicKey = {K2_PUB}\n{extra}")
}

#[test]
fn display_format_of_a_bad_key() {
    let e = parse(
        "box.conf",
        &format!("[Interface]\nPrivateKey = {K1}\n\n\n\n[Peer]\nPublicKey = abc\n"),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "box.conf:7: PublicKey: not a 32-byte base64 key"
    );
}

#[test]
fn syntax_errors() {
    one(
        &iface("just some words\n"),
        3,
        "-",
        "expected \"Key = Value\"",
    );
    one(&iface("[Peer\n"), 3, "-", "malformed section header");
    one(&iface("[]\n"), 3, "-", "malformed section header");
    one(&iface("Bad Key = 1\n"), 3, "-", "is not a key name");
    one(&iface("= 1\n"), 3, "-", "is not a key name");
}

#[test]
fn unknown_section_key_and_key_outside_section() {
    one(
        &iface("[Foo]\nBar = 1\nBaz = 2\n"),
        3,
        "[Foo]",
        "unknown section",
    );
    one(
        &iface("Colour = blue\n"),
        3,
        "Colour",
        "unknown key in [Interface]",
    );
    one(
        &peer("ListenPort = 1\n"),
        5,
        "ListenPort",
        "unknown key in [Peer]",
    );
    one(
        &format!("# c\nPrivateKey = {K1}\n[Interface]\nPrivateKey = {K1}\n"),
        2,
        "PrivateKey",
        "outside of any section",
    );
}

#[test]
fn duplicates() {
    one(
        &iface("ListenPort = 1\nlistenport = 2\n"),
        4,
        "ListenPort",
        "duplicate key (first given at line 3)",
    );
    one(
        &peer("Endpoint = 1.2.3.4:5\nEndpoint = 1.2.3.4:6\n"),
        6,
        "Endpoint",
        "first given at line 5",
    );
    one(
        &iface("[Interface]\nPrivateKey = x\n"),
        3,
        "[Interface]",
        "duplicate section (first given at line 1)",
    );
    one(
        &iface("[PEP]\n[pep]\nMode = bad\n"),
        4,
        "[PEP]",
        "duplicate section (first given at line 3)",
    );
    let text = format!("{}[Peer]\nPublicKey = {K2_PUB}\n", peer(""));
    one(
        &text,
        6,
        "PublicKey",
        "duplicate peer public key (first given at line 4)",
    );
}

#[test]
fn missing_parts() {
    one("", 0, "-", "missing [Interface] section");
    one("# only a comment\n", 0, "-", "missing [Interface] section");
    one(
        &format!("[Peer]\nPublicKey = {K2_PUB}\n"),
        0,
        "-",
        "missing [Interface]",
    );
    one(
        "\n[Interface]\nListenPort = 1\n",
        2,
        "PrivateKey",
        "missing in [Interface]",
    );
    one(
        &iface("[Peer]\nAllowedIPs = 10.0.0.0/8\n"),
        3,
        "PublicKey",
        "missing in [Peer]",
    );
}

#[test]
fn own_public_key_as_peer() {
    one(
        &iface(&format!("[Peer]\nPublicKey = {K1_PUB}\n")),
        4,
        "PublicKey",
        "own public key",
    );
}

#[test]
fn empty_values() {
    one(&iface("ListenPort =\n"), 3, "ListenPort", "empty value");
    one(&peer("AllowedIPs = \n"), 5, "AllowedIPs", "empty value");
    one(
        &peer("AllowedIPs = 10.0.0.0/8,,10.1.0.0/16\n"),
        5,
        "AllowedIPs",
        "empty item",
    );
}

#[test]
fn interface_values() {
    one(
        "[Interface]\nPrivateKey = abc\n",
        2,
        "PrivateKey",
        "not a 32-byte base64 key",
    );
    // 43 characters + '=': right length, but the last character has non-zero trailing bits.
    one(
        "[Interface]\nPrivateKey = KLAp2JYd9y2hS/9Nshf5HCHbC7yFnLRaMOqg8t9DvWR=\n",
        2,
        "PrivateKey",
        "not a 32-byte",
    );
    one(
        &iface("ListenPort = 65536\n"),
        3,
        "ListenPort",
        "out of range",
    );
    one(
        &iface("ListenPort = 80x\n"),
        3,
        "ListenPort",
        "not an integer",
    );
    one(
        &iface("Address = 10.0.0.300/24\n"),
        3,
        "Address",
        "not an IP address or prefix",
    );
    one(
        &iface("Address = 10.0.0.1/33\n"),
        3,
        "Address",
        "not an IP address or prefix",
    );
    one(&iface("MTU = 575\n"), 3, "MTU", "out of range");
    one(&iface("MTU = 9001\n"), 3, "MTU", "out of range");
    one(
        &iface("Address = fd00::1/64\nMTU = 1279\n"),
        4,
        "MTU",
        "IPv6 minimum",
    );
    assert!(parse("t", &iface("Address = 10.0.0.1/24\nMTU = 1279\n")).is_ok());
    one(
        &iface("FwMark = 0xg\n"),
        3,
        "FwMark",
        "not a 32-bit integer",
    );
    one(&iface("Table = mainly\n"), 3, "Table", "is not auto, off");
    one(&iface("Table = 0\n"), 3, "Table", "is not auto, off");
    one(
        &iface("SaveConfig = maybe\n"),
        3,
        "SaveConfig",
        "not a boolean",
    );
    one(&iface("DNS = 1.1.1.1, a b\n"), 3, "DNS", "contains spaces");
}

#[test]
fn peer_values() {
    one(
        &peer("PresharedKey = AAAA\n"),
        5,
        "PresharedKey",
        "not a 32-byte base64 key",
    );
    one(
        &peer("Endpoint = 10.0.0.1\n"),
        5,
        "Endpoint",
        "has no :port",
    );
    one(
        &peer("Endpoint = 10.0.0.1:0\n"),
        5,
        "Endpoint",
        "not a port",
    );
    one(
        &peer("Endpoint = 10.0.0.1:70000\n"),
        5,
        "Endpoint",
        "not a port",
    );
    one(
        &peer("Endpoint = 10.0.0.256:1\n"),
        5,
        "Endpoint",
        "not an IPv4 address",
    );
    one(
        &peer("Endpoint = fd00::1:51820\n"),
        5,
        "Endpoint",
        "needs brackets",
    );
    one(
        &peer("Endpoint = [fd00::g]:51820\n"),
        5,
        "Endpoint",
        "not an IPv6 address",
    );
    one(
        &peer("Endpoint = [fd00::1]51820\n"),
        5,
        "Endpoint",
        "is not [IPv6]:port",
    );
    one(
        &peer("Endpoint = bad_host!:1\n"),
        5,
        "Endpoint",
        "not an IPv4 address or host name",
    );
    one(
        &peer("AllowedIPs = 10.0.0.0/8, banana\n"),
        5,
        "AllowedIPs",
        "not an IP address or prefix",
    );
    one(
        &peer("PersistentKeepalive = 65536\n"),
        5,
        "PersistentKeepalive",
        "out of range",
    );
    one(
        &peer("PersistentKeepalive = often\n"),
        5,
        "PersistentKeepalive",
        "not an integer",
    );
}

#[test]
fn malformed_file_reports_every_bad_line() {
    let text = format!(
        "Stray = 1\n\
         [Interface]\n\
         PrivateKey = not-a-key\n\
         ListenPort = 99999\n\
         Address = 10.0.0.1/24, nonsense\n\
         Colour = red\n\
         this line is garbage\n\
         [Peer]\n\
         PublicKey = {K2_PUB}\n\
         Endpoint = nowhere\n\
         AllowedIPs = 10.0.0.0/40\n\
         PersistentKeepalive = -3\n\
         [Peer]\n\
         AllowedIPs = 10.9.0.0/16\n\
         [Weird]\n\
         [PEP]\n\
         Mode = pepsal\n\
         Congestion = hybla\n\
         LinkRate = fast\n"
    );
    let e = errs(&text);
    let got: Vec<(usize, &str)> = e.iter().map(|(l, k, _)| (*l, k.as_str())).collect();
    assert_eq!(
        got,
        [
            (1, "Stray"),
            (3, "PrivateKey"),
            (4, "ListenPort"),
            (5, "Address"),
            (6, "Colour"),
            (7, "-"),
            (10, "Endpoint"),
            (11, "AllowedIPs"),
            (12, "PersistentKeepalive"),
            (13, "PublicKey"),
            (15, "[Weird]"),
            (17, "Mode"),
            (18, "Congestion"),
            (19, "LinkRate"),
        ],
        "{e:#?}"
    );
    // Display: one error per line, in line order.
    let shown = parse("box.conf", &text).unwrap_err().to_string();
    assert_eq!(shown.lines().count(), 14);
    assert!(shown
        .lines()
        .next()
        .unwrap()
        .starts_with("box.conf:1: Stray: "));
    assert!(shown.contains("box.conf:17: Mode: \"pepsal\" is not a mode (starpep, split, off)"));
}
