//! StarPEP's window on the real stack (root, netns, satlink `leo-10mbit`): with both back-ends
//! the sender's `snd_wnd` (srv's `ss -ti`) stays at the controller's W while a CUBIC sender
//! pushes, where plain splitting lets it open a hundred times wider; the PEP's queue stays bounded;
//! transfers are byte-exact; the PEP's SYN and SYN-ACK windows are not rewritten; the upload
//! is controlled at the box (IPv4 and IPv6); a POP-only deployment still controls downloads.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_starpep_common.rs"]
mod sp;

use std::time::Duration;

use common::*;
use sp::*;
use starpep_tests::{addr, require_root, Node};

const MB: usize = 1_000_000;

/// One window-scale unit of slack on top of W (the field is W >> wscale, rounded down; the
/// clamp rounds up to a unit).
const UNIT: u64 = 1024;

fn dst(port: u16) -> std::net::SocketAddr {
    sa(&format!("{}:{port}", addr::SRV))
}

/// A CUBIC download of `bytes` through `b`, sampling srv's snd_wnd of the flow every 50 ms.
fn download_sampling(b: &Bed, port: u16, bytes: usize) -> (Transfer, Vec<u64>) {
    let topo = &b.topo;
    sampled(
        Duration::from_millis(20),
        || transfer_cc(topo, dst(port), bytes, true, 7, Some("cubic")),
        || snd_wnd(topo, Node::Srv, "sport", port).into_iter().max(),
    )
}

fn window_is_applied(backend: &str) {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("leo-10mbit", false, &[("WindowControl", backend)]);
    let pep = b.pop.pep(&b.topo);
    assert_eq!(pep["mode"], "starpep");
    assert_eq!(pep["window_backend"], backend, "{pep}");
    let (t, wnds) = download_sampling(&b, 5401, 6 * MB);
    assert_eq!(
        t.sent_sha, t.recv_sha,
        "payload corrupted through {backend}"
    );
    std::thread::sleep(Duration::from_millis(300));
    let recs = records(&b.pop_log);
    let ws: Vec<u64> = recs
        .iter()
        .filter(|r| r["server"] == dst(5401).to_string())
        .filter_map(|r| r["w_bytes"].as_u64())
        .collect();
    assert!(ws.len() > 100, "{} controlled ticks", ws.len());
    let w_max = *ws.iter().max().unwrap();
    let steady: Vec<u64> = wnds.iter().copied().skip(wnds.len() / 5).collect();
    assert!(!steady.is_empty(), "no snd_wnd samples");
    eprintln!(
        "{backend}: W {}..{w_max}, srv snd_wnd samples {:?}",
        ws.iter().min().unwrap(),
        &steady[..steady.len().min(12)]
    );
    for w in &steady {
        assert!(
            *w <= w_max + UNIT,
            "{backend}: srv snd_wnd {w} above the controller's largest W {w_max}"
        );
    }
    // The PEP's queue stays bounded while CUBIC pushes (10 Mbit/s: 64 KB is 52 ms).
    let qs: Vec<f64> = recs
        .iter()
        .skip(recs.len() / 5)
        .filter_map(|r| r["q_bytes"].as_f64())
        .collect();
    let q99 = pct(qs, 99.0);
    eprintln!("{backend}: PEP queue p99 {q99} bytes");
    assert!(q99 < 192_000.0, "{backend}: PEP queue p99 {q99} bytes");
}

#[test]
fn the_ebpf_back_end_applies_the_window_and_bounds_the_queue() {
    window_is_applied("ebpf");
}

#[test]
fn the_clamp_back_end_applies_the_window_and_bounds_the_queue() {
    window_is_applied("clamp");
}

#[test]
fn plain_splitting_lets_the_window_open_a_hundred_times_wider() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("leo-10mbit", false, &[("Mode", "split")]);
    assert_eq!(b.pop.pep(&b.topo)["mode"], "split");
    let (t, wnds) = download_sampling(&b, 5402, 20 * MB);
    assert_eq!(t.sent_sha, t.recv_sha);
    let top = wnds.iter().copied().max().unwrap_or(0);
    eprintln!("split: srv snd_wnd up to {top} bytes");
    // Where autotuning ends is the kernel's choice and is bimodal here: three runs of this
    // test reached 0.80, 18.6 and 22.1 MB (the 0.8 MB runs never grew the receive buffer).
    // Either is a hundred times what StarPEP lets this sender have on this link (its W is
    // the 4-segment floor, 5.8 KB, since srv sits next to the POP), so the bar is 500 KB,
    // ten of this link's 50 KB BDPs.
    assert!(
        top > 500_000,
        "split: srv snd_wnd only reached {top} ({} samples, last {:?})",
        wnds.len(),
        &wnds[wnds.len().saturating_sub(8)..]
    );
}

/// The window field of the first segment matching `filter` in a capture (`tcpdump -v`).
fn syn_window(b: &Bed, node: Node, iface: &str, filter: &str, port: u16) -> u64 {
    let pcap = b
        .topo
        .tmpdir()
        .join(format!("{}-{iface}.pcap", node.short()));
    let mut dump = b
        .topo
        .spawn(
            node,
            &format!("tcpdump-{}", node.short()),
            &[
                "tcpdump",
                "-i",
                iface,
                "-nn",
                "-U",
                "-w",
                &pcap.display().to_string(),
                &format!("tcp port {port}"),
            ],
        )
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    let t = transfer_cc(&b.topo, dst(port), 200_000, true, 3, Some("cubic"));
    assert_eq!(t.sent_sha, t.recv_sha);
    std::thread::sleep(Duration::from_millis(300));
    dump.stop();
    let out = b
        .topo
        .run_ok(
            node,
            &["tcpdump", "-nn", "-r", &pcap.display().to_string(), filter],
        )
        .unwrap();
    let line = out
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no match: {out}"));
    let win = line
        .split(", win ")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .unwrap_or_else(|| panic!("no window in {line}"));
    win.parse().unwrap()
}

#[test]
fn syn_and_syn_ack_windows_are_not_rewritten() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("leo-10mbit", false, &[("WindowControl", "ebpf")]);
    // The POP's SYN toward the server, and the box's SYN-ACK toward the PC, leave through
    // the interfaces the program is attached to; their windows are unscaled and untouched.
    let syn = syn_window(
        &b,
        Node::Pop,
        "lan0",
        "tcp[tcpflags] & (tcp-syn|tcp-ack) == tcp-syn",
        5403,
    );
    let syn_ack = syn_window(
        &b,
        Node::Box,
        "lan0",
        "tcp[tcpflags] & (tcp-syn|tcp-ack) == (tcp-syn|tcp-ack)",
        5404,
    );
    eprintln!("SYN window {syn}, SYN-ACK window {syn_ack}");
    for w in [syn, syn_ack] {
        assert!(w >= 14_000, "a SYN carried window {w}: rewritten");
    }
}

fn upload_controlled_at_the_box(dst: std::net::SocketAddr) {
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("leo-10mbit", false, &[]);
    let topo = &b.topo;
    let port = dst.port();
    let (t, wnds) = sampled(
        Duration::from_millis(50),
        || transfer_cc(topo, dst, 3 * MB, false, 9, Some("cubic")),
        || snd_wnd(topo, Node::Pc, "dport", port).into_iter().max(),
    );
    assert_eq!(t.sent_sha, t.recv_sha, "upload to {dst} corrupted");
    std::thread::sleep(Duration::from_millis(300));
    let ws: Vec<u64> = records(&b.box_log)
        .iter()
        .filter(|r| r["server"] == dst.to_string())
        .filter_map(|r| r["w_bytes"].as_u64())
        .collect();
    assert!(
        ws.len() > 50,
        "box controlled {} ticks of the upload",
        ws.len()
    );
    let w_max = *ws.iter().max().unwrap();
    let steady: Vec<u64> = wnds.iter().copied().skip(wnds.len() / 5).collect();
    eprintln!("upload {dst}: box W up to {w_max}, pc snd_wnd {steady:?}");
    assert!(!steady.is_empty());
    for w in steady {
        assert!(
            w <= w_max + UNIT,
            "pc snd_wnd {w} above the box's W {w_max}"
        );
    }
}

#[test]
fn uploads_are_controlled_at_the_box_over_ipv4() {
    if require_root() {
        upload_controlled_at_the_box(dst(5405));
    }
}

#[test]
fn uploads_are_controlled_at_the_box_over_ipv6() {
    if require_root() {
        upload_controlled_at_the_box(sa(&format!("[{}]:5406", addr::SRV6)));
    }
}

#[test]
fn a_pop_only_deployment_controls_the_downlink() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let topo = starpep_tests::Topology::build(starpep_tests::TopoSpec::satlink()).unwrap();
    let _link = topo
        .spawn_satlink(
            &starpep_tests::bin_path("satlink"),
            &profile("leo-10mbit"),
            &["--start", "now"],
        )
        .unwrap();
    let log = topo.tmpdir().join("control-pop.jsonl");
    let l = log.display().to_string();
    let pop_text = shipped_conf("pop-pep", &[("ControlLog", &l)]);
    let pop = start(&topo, Node::Pop, "starpep-pop", "pop-pep", &pop_text);
    // The box runs plain WireGuard (no [PEP]): the user's flow crosses the tunnel unsplit
    // and the POP splits it as it leaves the tunnel.
    let box_text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../configs/box.conf"),
    )
    .unwrap();
    let _bx = common::start_plain(&topo, Node::Box, "starpep-client", "box", &box_text);
    let (t, wnds) = sampled(
        Duration::from_millis(50),
        || transfer_cc(&topo, dst(5407), 4 * MB, true, 11, Some("cubic")),
        || snd_wnd(&topo, Node::Srv, "sport", 5407).into_iter().max(),
    );
    assert_eq!(t.sent_sha, t.recv_sha);
    std::thread::sleep(Duration::from_millis(300));
    let ws: Vec<u64> = records(&log)
        .iter()
        .filter_map(|r| r["w_bytes"].as_u64())
        .collect();
    assert!(ws.len() > 50, "POP controlled {} ticks", ws.len());
    let w_max = *ws.iter().max().unwrap();
    let steady: Vec<u64> = wnds.iter().copied().skip(wnds.len() / 5).collect();
    eprintln!("POP only: W up to {w_max}, srv snd_wnd {steady:?}");
    for w in steady {
        assert!(
            w <= w_max + UNIT,
            "srv snd_wnd {w} above the POP's W {w_max}"
        );
    }
    assert_eq!(pop.pep(&topo)["accepted"], 1, "the POP split the flow");
}
