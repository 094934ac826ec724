//! Netns tests of the tc egress window rewriter on veth: real TCP flows, checked at the sender.
//!
//! Variants: the program on the receiving host's own egress (locally generated segments,
//! CHECKSUM_PARTIAL, with and without tx checksum offload) and on a router's egress
//! (forwarded segments whose checksum is complete: the incremental update must be right or
//! the sender drops them). Each test builds and deletes its own namespaces (`support::Lab`).
//! Root only: without root the tests fail unless `STARPEP_SKIP_NETNS=1` is set.

mod support;

use support::*;

/// Where the rewriter runs.
#[derive(Clone, Copy, PartialEq)]
enum Path {
    /// On the receiver's own veth (the PEP's socket is local there).
    Local,
    /// On a router between sender and receiver (the receiver sends with tx offload off).
    Forwarded,
}

fn window_is_limited(v6: bool, path: Path, tx_csum_off: bool) {
    if !require_root() {
        return;
    }
    let mut lab = Lab::new();
    let snd = lab.ns("snd");
    let rcv = lab.ns("rcv");
    let (snd_if, rcv_if) = (lab.dev("es"), lab.dev("er"));
    let s = Addrs::new(1, 1);
    let (prog_ns, prog_if, r) = match path {
        Path::Local => {
            let r = Addrs::new(1, 2);
            lab.link(&snd, (&snd_if, s), &rcv, (&rcv_if, r));
            (rcv.clone(), rcv_if.clone(), r)
        }
        Path::Forwarded => {
            let rtr = lab.ns("rtr");
            let (to_snd, to_rcv) = (lab.dev("ms"), lab.dev("mr"));
            let (g1, g2, r) = (Addrs::new(1, 254), Addrs::new(2, 254), Addrs::new(2, 2));
            lab.link(&snd, (&snd_if, s), &rtr, (&to_snd, g1));
            lab.link(&rtr, (&to_rcv, g2), &rcv, (&rcv_if, r));
            run(&[
                "ip",
                "netns",
                "exec",
                &rtr,
                "sysctl",
                "-qw",
                "net.ipv4.ip_forward=1",
            ]);
            run(&[
                "ip",
                "netns",
                "exec",
                &rtr,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.forwarding=1",
            ]);
            for (ns, gw) in [(&snd, g1), (&rcv, g2)] {
                run(&[
                    "ip",
                    "-n",
                    ns,
                    "route",
                    "add",
                    "default",
                    "via",
                    &gw.v4.to_string(),
                ]);
                run(&[
                    "ip",
                    "-n",
                    ns,
                    "-6",
                    "route",
                    "add",
                    "default",
                    "via",
                    &gw.v6.to_string(),
                ]);
            }
            (rtr, to_snd, r)
        }
    };
    if tx_csum_off {
        // The receiver's segments then get their checksum in software, after tc egress.
        run(&[
            "ip", "netns", "exec", &rcv, "ethtool", "-K", &rcv_if, "tx", "off",
        ]);
    }

    let mut rw = load_and_attach(&prog_ns, &prog_if);
    check_two_flows(&mut rw, &snd, &rcv, r.pick(v6));

    // Dropping the rewriter detaches its TCX link.
    assert_eq!(tcx_programs(&prog_ns, &prog_if), 1);
    drop(rw);
    assert_eq!(
        tcx_programs_after_drop(&prog_ns, &prog_if),
        0,
        "TCX link left after drop"
    );
}

#[test]
fn local_ipv4_with_tx_offload() {
    window_is_limited(false, Path::Local, false);
}

#[test]
fn local_ipv6_with_software_checksum() {
    window_is_limited(true, Path::Local, true);
}

#[test]
fn forwarded_ipv4_complete_checksum() {
    window_is_limited(false, Path::Forwarded, true);
}

#[test]
fn forwarded_ipv6_complete_checksum() {
    window_is_limited(true, Path::Forwarded, true);
}
