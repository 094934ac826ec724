//! Netns tests of the L3 (TUN) program: TCP through a wireguard-go tunnel, limited at the TUN.
//!
//! The receiver's wireguard-go TUN (link type none) gets `starpep_window_l3` on egress, so its
//! ACKs are rewritten before wireguard-go encrypts them; the sender's kernel then verifies the
//! checksum of the decrypted segments. Root only (see `netns_rewrite.rs`).

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::*;

/// A WireGuard key pair (private, public) in base64, from `wg genkey` / `wg pubkey`.
fn keypair() -> (String, String) {
    let private = run(&["wg", "genkey"]).trim().to_string();
    let mut child = Command::new("wg")
        .arg("pubkey")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn wg pubkey");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(private.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("wg pubkey");
    assert!(out.status.success(), "wg pubkey failed");
    (
        private,
        String::from_utf8(out.stdout).unwrap().trim().to_string(),
    )
}

fn wait_for_link(ns: &str, dev: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let ok = Command::new("ip")
            .args(["-n", ns, "link", "show", "dev", dev])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("wireguard-go did not create {dev} in {ns}");
}

fn tun_window_is_limited(v6: bool) {
    if !require_root() {
        return;
    }
    let mut lab = Lab::new();
    let snd = lab.ns("snd");
    let rcv = lab.ns("rcv");
    let (under_s, under_r) = (Addrs::new(1, 1), Addrs::new(1, 2));
    lab.link(
        &snd,
        (&lab.dev("es"), under_s),
        &rcv,
        (&lab.dev("er"), under_r),
    );
    // wireguard-go's UAPI sockets are global (/var/run/wireguard): the names are unique.
    let (wg_s, wg_r) = (lab.dev("ws"), lab.dev("wr"));
    let keys = [keypair(), keypair()];
    let tmp = lab.tmpdir();
    let ends = [
        (&snd, &wg_s, Addrs::new(9, 1), under_r, &keys[0], &keys[1]),
        (&rcv, &wg_r, Addrs::new(9, 2), under_s, &keys[1], &keys[0]),
    ];
    for (ns, dev, addrs, peer_ip, (private, _), (_, peer_public)) in ends {
        lab.spawn(ns, &["wireguard-go", "-f", dev]);
        wait_for_link(ns, dev);
        let key_file = tmp.join(format!("{dev}.key"));
        std::fs::write(&key_file, private).unwrap();
        let endpoint = format!("{}:51820", peer_ip.v4);
        run(&[
            "ip",
            "netns",
            "exec",
            ns,
            "wg",
            "set",
            dev,
            "listen-port",
            "51820",
            "private-key",
            key_file.to_str().unwrap(),
            "peer",
            peer_public,
            "allowed-ips",
            "0.0.0.0/0,::/0",
            "endpoint",
            &endpoint,
        ]);
        addr_up(ns, dev, addrs, 24, 64);
    }

    let mut rw = load_and_attach(&rcv, &wg_r);
    check_two_flows(&mut rw, &snd, &rcv, Addrs::new(9, 2).pick(v6));
    assert_eq!(tcx_programs(&rcv, &wg_r), 1);
    drop(rw);
    assert_eq!(
        tcx_programs_after_drop(&rcv, &wg_r),
        0,
        "TCX link left after drop"
    );
}

#[test]
fn tun_ipv4_through_wireguard_go() {
    tun_window_is_limited(false);
}

#[test]
fn tun_ipv6_through_wireguard_go() {
    tun_window_is_limited(true);
}
