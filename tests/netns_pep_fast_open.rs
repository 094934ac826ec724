//! Fast Open on the satellite segment (root, netns, satlink `geo`, 500 ms RTT): in a
//! client-first exchange (a request, then the response) the first response byte reaches the
//! client one satellite round trip after its connect with the default `FastOpen = on` (the
//! request crossed with the box's SYN, and both kernels count it), two round trips with
//! `FastOpen = off`. With the link configured (`LinkRate`), the whole response (more than the
//! kernel's initial window, less than the SYN's 64 KiB window) arrives within that round trip
//! too: the POP's Fast Open child sends it before the handshake's ACK. Requests and responses
//! are sha256-checked; a server-first download and an upload longer than a SYN stay intact.
//! A client that writes its request 60 ms after its connect still gets it across with the SYN:
//! the box waits a quarter of the satellite round trip its connects saw.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_starpep_common.rs"]
mod sp;

use std::time::Duration;

use common::*;
use sp::*;
use starpep_tests::{addr, require_root, Node};

/// geo's round trip.
const RTT: f64 = 0.5;
/// Over the kernel's initial window (10 segments), within the SYN's unscaled window.
const RESPONSE: usize = 48_000;

/// A client busy elsewhere (a browser opening 20 connections at once was measured here
/// writing 10-35 ms after its handshakes): on GEO the box still waits for it.
const LATE: Duration = Duration::from_millis(60);

/// After a short warm-up exchange (the path's first SYN, its tunnel and the box's resolver are
/// then past their first use, and the box saw the satellite round trip; a 1 KB answer moves
/// too little to be measured as the path's rate), one exchange's first- and last-byte times,
/// the first-byte time of a client that writes [`LATE`], and the Fast Open counters (box, POP).
fn measure(b: &Bed, base_port: u16) -> (f64, f64, f64, u64, u64) {
    let warm = exchange(&b.topo, base_port, 1000, Duration::ZERO);
    let (first, last) = exchange(&b.topo, base_port + 1, RESPONSE, Duration::ZERO);
    let (late, _) = exchange(&b.topo, base_port + 2, 1000, LATE);
    eprintln!(
        "warm-up {warm:?} s; first response byte after {first:.3} s, last after {last:.3} s; \
         written {LATE:?} late: first byte after {late:.3} s"
    );
    // Intact both ways with a server-first download and a long upload.
    for (i, down) in [(10, true), (11, false)] {
        let dst = sa(&format!("{}:{}", addr::SRV, base_port + i));
        let x = transfer(&b.topo, dst, 200_000, down, base_port as u64 + i as u64);
        assert_eq!(x.sent_sha, x.recv_sha, "transfer (down {down}) corrupted");
    }
    (
        first,
        last,
        late,
        b.topo
            .tcp_ext(Node::Box, "TCPFastOpenActive")
            .expect("netstat"),
        b.topo
            .tcp_ext(Node::Pop, "TCPFastOpenPassive")
            .expect("netstat"),
    )
}

#[test]
fn a_request_crosses_with_the_syn_and_saves_a_round_trip() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    // The link configured as an operator would: a new flow's window (careful resume) then
    // covers the response; with the kernel's 10 segments only those could leave early.
    let link = [("LinkRate", "10mbit"), ("LinkRtt", "500ms")];
    let (on, on_end, on_late, active, passive) = measure(&bed("geo", false, &link), 6100);
    eprintln!("FastOpen on: {on:.3} / {on_end:.3} s, box active {active}, POP passive {passive}");
    let (off, off_end, off_late, active_off, passive_off) = measure(
        &bed("geo", false, &[link[0], link[1], ("FastOpen", "off")]),
        6200,
    );
    eprintln!(
        "FastOpen off: {off:.3} / {off_end:.3} s, box active {active_off}, POP passive {passive_off}"
    );
    // The three exchanges and the upload open with data; the download's server speaks first.
    assert!(active >= 4 && passive >= 4, "{active} / {passive}");
    assert_eq!((active_off, passive_off), (0, 0));
    assert!(on < 1.5 * RTT, "FastOpen on: first byte after {on:.3} s");
    // A request written 60 ms late still rides on the SYN (the box waits a quarter of the
    // round trip it saw), and without Fast Open it pays the handshake's round trip.
    assert!(
        on_late < 1.5 * RTT,
        "FastOpen on, late: first byte after {on_late:.3} s"
    );
    assert!(
        off_late > 1.5 * RTT,
        "FastOpen off, late: first byte after {off_late:.3} s"
    );
    assert!(off > 1.5 * RTT, "FastOpen off: first byte after {off:.3} s");
    assert!(
        off - on > 0.8 * RTT,
        "saved {:.3} s of a {RTT} s round trip",
        off - on
    );
    // The rest of the response followed the first bytes before the handshake's ACK (without
    // the POP's push it waited for that ACK: one more round trip).
    assert!(
        on_end < 1.5 * RTT,
        "FastOpen on: the {RESPONSE} B response ended after {on_end:.3} s"
    );
    assert!(
        off_end > 1.5 * RTT,
        "FastOpen off: ended after {off_end:.3} s"
    );
}
