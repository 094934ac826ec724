//! Edge cases of the splitting relay (root, netns, tunnel over bare veth): half-close, RST both
//! ways, refused and unreachable servers, idle timeout, no leaked flow state, and what must
//! pass untouched while splitting is on (UDP, ICMP, bypassed TCP with its MSS clamped).

#[path = "netns_pep_common.rs"]
mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::time::{Duration, Instant};

use common::*;
use starpep_tests::{addr, require_root, Node, TopoSpec, Topology};

fn reset(s: TcpStream) {
    use nix::sys::socket::{setsockopt, sockopt};
    let l = nix::libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    setsockopt(&s, sockopt::Linger, &l).unwrap();
    drop(s);
}

fn srv(port: u16) -> std::net::SocketAddr {
    sa(&format!("{}:{port}", addr::SRV))
}

/// The client sends and shuts down its write side; the server reads to EOF and only then
/// replies: the reply still reaches the client, and both PEPs show the half-closed state.
#[test]
fn half_close_is_forwarded_and_the_other_direction_keeps_flowing() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    let dst = srv(5101);
    let l = listen(&topo, Node::Srv, dst);
    let mut c = connect(&topo, Node::Pc, dst).unwrap();
    let (mut s, _) = l.accept().unwrap();
    let data = starpep_tests::payload(300_000, 1);
    c.write_all(&data).unwrap();
    c.shutdown(Shutdown::Write).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).unwrap();
    assert_eq!(got, data, "request intact up to the forwarded EOF");
    std::thread::sleep(Duration::from_millis(1500));
    let me = c.local_addr().unwrap();
    for d in [&bx, &pop] {
        let f = flow_of(&d.pep(&topo), me).expect("flow live while half-closed");
        assert_eq!(f["state"], "half-closed-up", "{:?}: {f}", d.node);
    }
    let reply = starpep_tests::payload(200_000, 2);
    s.write_all(&reply).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let mut back = Vec::new();
    c.read_to_end(&mut back).unwrap();
    assert_eq!(back, reply, "reply after the client's FIN");
    drop((c, s));
    for d in [&bx, &pop] {
        let m = d.wait_idle(&topo, Duration::from_secs(5));
        assert_eq!(
            (m["closed"].as_u64(), m["reset"].as_u64()),
            (Some(1), Some(0)),
            "{m}"
        );
    }
}

/// A reset from the server reaches the client as a reset, and the reverse.
#[test]
fn resets_are_forwarded_both_ways() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    let dst = srv(5102);
    let l = listen(&topo, Node::Srv, dst);
    // Server resets.
    let mut c = connect(&topo, Node::Pc, dst).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(b"hi").unwrap();
    let mut b2 = [0u8; 2];
    s.read_exact(&mut b2).unwrap();
    reset(s);
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let e = c
        .read(&mut b2)
        .expect_err("client must see the reset, not EOF");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    // Client resets.
    let mut c = connect(&topo, Node::Pc, dst).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(b"hi").unwrap();
    s.read_exact(&mut b2).unwrap();
    reset(c);
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let e = s
        .read(&mut b2)
        .expect_err("server must see the reset, not EOF");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    for d in [&bx, &pop] {
        let m = d.wait_idle(&topo, Duration::from_secs(5));
        assert_eq!(m["reset"], 2, "{:?}: {m}", d.node);
    }
}

/// Time until a connect+read to `dst` from pc fails, and how.
fn failing_attempt(topo: &Topology, dst: std::net::SocketAddr) -> (Duration, ErrorKind) {
    let t0 = Instant::now();
    let kind = match connect(topo, Node::Pc, dst) {
        Err(e) => e.kind(),
        Ok(mut c) => {
            c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
            let mut b = [0u8; 1];
            match c.read(&mut b) {
                Err(e) => e.kind(),
                Ok(n) => panic!("{dst}: read {n} bytes from a server that does not exist"),
            }
        }
    };
    (t0.elapsed(), kind)
}

/// A closed port: the user is reset at once. A host that does not answer ARP: the user is
/// reset as soon as a direct (unsplit) attempt fails with host unreachable. No flow stays.
#[test]
fn unreachable_servers_reset_the_user_without_leaking_flows() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[], &[]);
    let (t, kind) = failing_attempt(&topo, srv(5999));
    assert_eq!(kind, ErrorKind::ConnectionReset, "closed port");
    assert!(t < Duration::from_secs(2), "closed port took {t:?}");
    // Split attempt to one absent host, direct attempt (Bypass = 22 passes unsplit) to another.
    let (split, kind) = failing_attempt(&topo, sa("10.2.0.99:80"));
    assert_eq!(
        kind,
        ErrorKind::ConnectionReset,
        "split attempt to an absent host"
    );
    let (direct, dkind) = failing_attempt(&topo, sa("10.2.0.98:22"));
    assert_eq!(dkind, ErrorKind::HostUnreachable, "direct attempt");
    eprintln!("absent host: split reset after {split:?}, direct unreachable after {direct:?}");
    assert!(
        split < direct + Duration::from_secs(2),
        "split {split:?} much slower than direct {direct:?}"
    );
    let p = pop.wait_idle(&topo, Duration::from_secs(5));
    assert_eq!(p["connect_failed"], 2, "{p}");
    let b = bx.wait_idle(&topo, Duration::from_secs(5));
    assert_eq!(b["accepted"], 2, "the bypassed attempt is not split: {b}");
    assert_eq!(b["reset"], 2, "{b}");
}

/// A flow idle for longer than IdleTimeout is reset on both ends.
#[test]
fn idle_flows_time_out_with_a_reset_both_ways() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, _pop) = start_pair(&topo, Carry::Tunnel, &[("IdleTimeout", "2s")], &[]);
    let dst = srv(5103);
    let l = listen(&topo, Node::Srv, dst);
    let mut c = connect(&topo, Node::Pc, dst).unwrap();
    let (mut s, _) = l.accept().unwrap();
    c.write_all(b"x").unwrap();
    let mut b = [0u8; 1];
    s.read_exact(&mut b).unwrap();
    for sock in [&mut c, &mut s] {
        sock.set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
    }
    let t0 = Instant::now();
    let e = c
        .read(&mut b)
        .expect_err("client reset by the idle timeout");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    assert!(
        t0.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        t0.elapsed()
    );
    let e = s.read(&mut b).expect_err("server reset too");
    assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}");
    let m = bx.wait_idle(&topo, Duration::from_secs(5));
    assert_eq!(m["idle_timeout"], 1, "{m}");
}

/// While splitting: ping (v4, v6) and UDP pass the tunnel untouched; TCP to a Bypass port is
/// not split on either side and its SYN's MSS is clamped to the tunnel MTU; a port bypassed
/// only on the box is split by the POP alone (a box without PEP against a POP with PEP).
#[test]
fn udp_icmp_and_bypassed_tcp_pass_untouched() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let (bx, pop) = start_pair(&topo, Carry::Tunnel, &[("Bypass", "22, 5100-5199")], &[]);
    for dst in [addr::SRV.to_string(), addr::SRV6.to_string()] {
        let mut args = vec!["ping", "-c", "3", "-i", "0.2", "-W", "2"];
        if dst.contains(':') {
            args.push("-6");
        }
        args.push(&dst);
        topo.run_ok(Node::Pc, &args)
            .expect("ping through the tunnel");
    }
    let u_srv = udp(&topo, Node::Srv, srv(6000));
    let u_pc = udp(&topo, Node::Pc, sa("0.0.0.0:0"));
    u_pc.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let echo = std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        for _ in 0..50 {
            let (n, from) = u_srv.recv_from(&mut buf).unwrap();
            u_srv.send_to(&buf[..n], from).unwrap();
        }
    });
    let mut buf = [0u8; 2048];
    for i in 0..50u32 {
        let msg = format!("voip frame {i}");
        u_pc.send_to(msg.as_bytes(), srv(6000)).unwrap();
        let (n, _) = u_pc
            .recv_from(&mut buf)
            .expect("UDP echo through the tunnel");
        assert_eq!(&buf[..n], msg.as_bytes());
    }
    echo.join().unwrap();

    let cap = topo.tmpdir().join("srv-syn.pcap");
    let mut dump = topo
        .spawn(
            Node::Srv,
            "tcpdump-srv",
            &[
                "tcpdump",
                "-i",
                "lan0",
                "-nn",
                "-U",
                "-w",
                &cap.display().to_string(),
                "tcp[tcpflags] & tcp-syn != 0 and tcp port 22",
            ],
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    checked(&topo, srv(22), 1_000_000, true);
    let b = bx.pep(&topo);
    let p = pop.pep(&topo);
    assert_eq!(b["accepted"], 0, "port 22 split by the box: {b}");
    assert_eq!(p["accepted"], 0, "port 22 split by the POP: {p}");
    std::thread::sleep(Duration::from_millis(300));
    dump.stop();
    let syn = topo
        .run_ok(
            Node::Srv,
            &["tcpdump", "-nn", "-v", "-r", &cap.display().to_string()],
        )
        .unwrap();
    assert!(
        syn.contains("mss 1380"),
        "pc's SYN not clamped to the tunnel MTU: {syn}"
    );

    checked(&topo, srv(5150), 1_000_000, false);
    let b = bx.wait_idle(&topo, Duration::from_secs(5));
    let p = pop.wait_idle(&topo, Duration::from_secs(5));
    assert_eq!(b["accepted"], 0, "5150 is bypassed on the box: {b}");
    assert_eq!(p["accepted"], 1, "the POP splits what the box passed: {p}");
    assert_eq!(p["closed"], 1, "{p}");
}
