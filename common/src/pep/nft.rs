//! nftables ruleset text of the PEP (pure): TPROXY interception, the `socket transparent` rule,
//! the pause flag for `MaxFlows`, bypass sets and the MSS clamp, rendered from a [`Plan`].
//!
//! One `inet` table per daemon. The text replaces a stale table of the same name atomically
//! (`add table` + `delete table` + definition in one `nft -f` transaction). Only pure SYNs of
//! new flows reach the TPROXY rule, so flows that passed untouched while interception was
//! paused are never caught later; packets of intercepted flows (and replies to the PEP's own
//! transparent sockets) are delivered locally by the `socket transparent 1` rule, which also
//! matches handshakes still in SYN_RECV (request sockets of a transparent listener). A
//! handshake the listener answered with a SYN cookie has no request socket: its ACK is steered
//! to the listener when its SYN was intercepted in the last seconds (sets `syn4`/`syn6`).

use std::fmt::Write;

use ipnet::IpNet;

use super::plan::{Intercept, Plan, FWMARK};
use super::tenants::SetOps;

/// The set holding `tcp` while new flows are intercepted (empty while paused).
pub const ENABLED_SET: &str = "enabled";
/// Counter of SYNs that would have been intercepted but passed because the table was full.
pub const OVERFLOW_COUNTER: &str = "overflow";
/// Counter of intercepted SYNs (TPROXY'd).
pub const INTERCEPTED_COUNTER: &str = "intercepted";
/// Counter of connections refused at the listener's own port (not steered there by TPROXY).
pub const OWN_PORT_COUNTER: &str = "own_port";
/// Counter of SYNs that passed unsplit because their client held its `MaxFlowsPerClient`.
pub const CAPPED_COUNTER: &str = "capped";
/// The source addresses at their share (one set per family), and the prefixes of peers at
/// theirs (interval sets).
pub const CAPPED4_SET: &str = "capped4";
pub const CAPPED6_SET: &str = "capped6";
pub const CAPPED_PEER4_SET: &str = "cappedp4";
pub const CAPPED_PEER6_SET: &str = "cappedp6";
/// The 4-tuples of recently intercepted SYNs (one set per family), to steer their SYN-cookie
/// ACKs to the listener.
pub const SYN4_SET: &str = "syn4";
pub const SYN6_SET: &str = "syn6";
/// How long an intercepted SYN's tuple is remembered: its ACK comes one round trip after the
/// SYN-ACK (a satellite round trip at the POP).
pub const SYN_SET_TIMEOUT_S: u32 = 3;
/// At most this many tuples per family: the kernel memory they take is bounded, and they cover
/// `SYN_SET_SIZE / SYN_SET_TIMEOUT_S` (about 21,800) new SYNs a second.
pub const SYN_SET_SIZE: u32 = 65536;
/// Counter of ACKs steered to the listener by [`SYN4_SET`]/[`SYN6_SET`] (SYN-cookie handshakes).
pub const COOKIE_COUNTER: &str = "cookie_acks";
/// Counter of SYNs that passed unsplit because their family's set of recent SYNs was full (a
/// flood beyond what [`SYN_SET_SIZE`] covers): split, a SYN-cookie handshake would fail.
pub const SYN_SET_FULL_COUNTER: &str = "syn_set_full";

fn quoted_list(names: &[String]) -> String {
    let q: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    format!("{{ {} }}", q.join(", "))
}

fn elements<T: ToString>(items: &[T]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let s: Vec<String> = items.iter().map(|i| i.to_string()).collect();
    format!(" elements = {{ {} }};", s.join(", "))
}

fn ports(r: &[(u16, u16)]) -> Vec<String> {
    r.iter()
        .map(|&(lo, hi)| {
            if lo == hi {
                lo.to_string()
            } else {
                format!("{lo}-{hi}")
            }
        })
        .collect()
}

/// The whole table, replacing any table of the same name (one atomic `nft -f -` input).
pub fn ruleset(p: &Plan) -> String {
    let t = &p.table;
    let mark = format!("{FWMARK:#x}");
    let port = p.proxy_port;
    let mut s = String::new();
    // `add` + `delete` first: removes a stale table (or the just-added empty one) atomically.
    let _ = writeln!(
        s,
        "add table inet {t}\ndelete table inet {t}\ntable inet {t} {{"
    );
    let _ = writeln!(
        s,
        "  set {ENABLED_SET} {{ type inet_proto; elements = {{ tcp }}; }}"
    );
    let _ = writeln!(
        s,
        "  set dst4 {{ type ipv4_addr; flags interval;{} }}",
        elements(&p.dst4)
    );
    let _ = writeln!(
        s,
        "  set dst6 {{ type ipv6_addr; flags interval;{} }}",
        elements(&p.dst6)
    );
    let _ = writeln!(
        s,
        "  set bypass_ports {{ type inet_service; flags interval;{} }}",
        elements(&ports(&p.bypass_ports))
    );
    let _ = writeln!(
        s,
        "  set bypass4 {{ type ipv4_addr; flags interval;{} }}",
        elements(&p.bypass4)
    );
    let _ = writeln!(
        s,
        "  set bypass6 {{ type ipv6_addr; flags interval;{} }}",
        elements(&p.bypass6)
    );
    let _ = writeln!(s, "  counter {OVERFLOW_COUNTER} {{ }}");
    let _ = writeln!(s, "  counter {INTERCEPTED_COUNTER} {{ }}");
    let _ = writeln!(s, "  counter {OWN_PORT_COUNTER} {{ }}");
    let _ = writeln!(s, "  counter {CAPPED_COUNTER} {{ }}");
    let _ = writeln!(s, "  counter {COOKIE_COUNTER} {{ }}");
    let _ = writeln!(s, "  counter {SYN_SET_FULL_COUNTER} {{ }}");
    for (set, key) in [
        (
            SYN4_SET,
            "ipv4_addr . inet_service . ipv4_addr . inet_service",
        ),
        (
            SYN6_SET,
            "ipv6_addr . inet_service . ipv6_addr . inet_service",
        ),
    ] {
        let _ = writeln!(
            s,
            "  set {set} {{ type {key}; size {SYN_SET_SIZE}; flags dynamic,timeout; \
             timeout {SYN_SET_TIMEOUT_S}s; }}"
        );
    }
    let _ = writeln!(
        s,
        "  set {CAPPED4_SET} {{ type ipv4_addr; }}\n  set {CAPPED6_SET} {{ type ipv6_addr; }}\n  \
         set {CAPPED_PEER4_SET} {{ type ipv4_addr; flags interval; }}\n  \
         set {CAPPED_PEER6_SET} {{ type ipv6_addr; flags interval; }}"
    );
    let _ = writeln!(
        s,
        "  chain prerouting {{\n    type filter hook prerouting priority mangle; policy accept;"
    );
    // Packets of intercepted flows and replies to our transparent sockets: deliver locally.
    let _ = writeln!(
        s,
        "    meta l4proto tcp socket transparent 1 meta mark set {mark} accept"
    );
    // The ACK completing a handshake the listener answered with a SYN cookie (its queue was
    // full: a SYN flood) finds no request socket for the rule above, and would be forwarded to
    // the server. It is steered to the listener if its SYN was intercepted moments ago; other
    // packets without a socket (flows that started unsplit) never are.
    for (fam, proto, set) in [("ipv4", "ip", SYN4_SET), ("ipv6", "ip6", SYN6_SET)] {
        let _ = writeln!(
            s,
            "    meta nfproto {fam} tcp flags & (fin | syn | rst | ack) == ack \
             {proto} saddr . tcp sport . {proto} daddr . tcp dport @{set} \
             counter name {COOKIE_COUNTER} tproxy {proto} to :{port} meta mark set {mark} accept"
        );
    }
    let _ = writeln!(
        s,
        "    meta l4proto tcp tcp flags & (fin | syn | rst | ack) == syn jump new_flow\n  }}"
    );
    let _ = writeln!(s, "  chain new_flow {{");
    match &p.intercept {
        Intercept::Only(ifs) => {
            let _ = writeln!(s, "    iifname != {} return", quoted_list(ifs));
        }
        Intercept::AllExcept(ifs) => {
            let _ = writeln!(s, "    iifname {} return", quoted_list(ifs));
        }
    }
    let _ = writeln!(s, "    fib daddr type local return");
    let _ = writeln!(s, "    ip daddr != @dst4 return");
    let _ = writeln!(s, "    ip6 daddr != @dst6 return");
    let _ = writeln!(s, "    tcp dport @bypass_ports return");
    let _ = writeln!(s, "    ip daddr @bypass4 return");
    let _ = writeln!(s, "    ip6 daddr @bypass6 return");
    let _ = writeln!(
        s,
        "    meta l4proto != @{ENABLED_SET} counter name {OVERFLOW_COUNTER} return"
    );
    let _ = writeln!(
        s,
        "    ip saddr @{CAPPED4_SET} counter name {CAPPED_COUNTER} return\n    \
         ip6 saddr @{CAPPED6_SET} counter name {CAPPED_COUNTER} return\n    \
         ip saddr @{CAPPED_PEER4_SET} counter name {CAPPED_COUNTER} return\n    \
         ip6 saddr @{CAPPED_PEER6_SET} counter name {CAPPED_COUNTER} return"
    );
    for (fam, proto, set) in [("ipv4", "ip", SYN4_SET), ("ipv6", "ip6", SYN6_SET)] {
        // The SYN's tuple is remembered as it is intercepted. A full set fails the update and
        // ends the rule: the SYN then passes unsplit (next rule), as under the `MaxFlows`
        // pause, since its handshake may be answered with a cookie whose ACK would not be
        // steered.
        let _ = writeln!(
            s,
            "    meta nfproto {fam} meta l4proto tcp update @{set} {{ {proto} saddr . tcp sport . \
             {proto} daddr . tcp dport }} counter name {INTERCEPTED_COUNTER} tproxy {proto} to \
             :{port} meta mark set {mark} accept\n    \
             meta nfproto {fam} counter name {SYN_SET_FULL_COUNTER} return"
        );
    }
    let _ = writeln!(s, "  }}");
    // Only TPROXY-steered flows reach the listener: a connection addressed to the PEP's own
    // port (from the LAN, through the tunnel, or local) would become a "split flow" to the
    // PEP itself and hold a slot for minutes of SYN retries. TPROXY'd packets keep their
    // original, non-local destination; a packet to this port addressed to one of our own
    // addresses was not steered, and is refused as a closed port would be. (The mark cannot
    // tell them apart: `socket transparent` also matches the transparent listener itself.)
    // The mark is cleared first: with `fwmark_reflect` the reset would inherit it and be
    // routed to the TPROXY table, i.e. to ourselves.
    let _ = writeln!(
        s,
        "  chain input {{\n    type filter hook input priority mangle; policy accept;\n    \
         meta l4proto tcp tcp dport {port} fib daddr type local counter name \
         {OWN_PORT_COUNTER} meta mark set 0 reject with tcp reset\n  }}"
    );
    if let Some((dev, mtu)) = &p.mss_clamp {
        // Unsplit TCP (bypass, overflow, PEP off on the peer) through the tunnel: the SYN going
        // in takes the route MTU; the SYN-ACK coming out is capped to the tunnel MTU.
        let mss4 = mtu.saturating_sub(40);
        let mss6 = mtu.saturating_sub(60);
        let syn = "tcp flags & (syn | rst) == syn";
        let _ = writeln!(
            s,
            "  chain forward {{\n    type filter hook forward priority mangle; policy accept;"
        );
        let _ = writeln!(
            s,
            "    oifname \"{dev}\" {syn} tcp option maxseg size set rt mtu"
        );
        for (fam, mss) in [("ipv4", mss4), ("ipv6", mss6)] {
            let _ = writeln!(
                s,
                "    iifname \"{dev}\" meta nfproto {fam} {syn} tcp option maxseg size > {mss} \
                 tcp option maxseg size set {mss}"
            );
        }
        let _ = writeln!(s, "  }}");
    }
    let _ = writeln!(s, "}}");
    s
}

/// Removes the table (never fails on a missing one).
pub fn delete(table: &str) -> String {
    format!("add table inet {table}\ndelete table inet {table}\n")
}

/// Adds and removes capped clients' source prefixes (one transaction; `None` if nothing to do).
pub fn set_capped(table: &str, ops: &SetOps) -> Option<String> {
    let mut s = String::new();
    let addr = (CAPPED4_SET, CAPPED6_SET);
    let peer = (CAPPED_PEER4_SET, CAPPED_PEER6_SET);
    for (verb, nets, (set4, set6)) in [
        ("delete", &ops.delete, addr),
        ("delete", &ops.delete_peer, peer),
        ("add", &ops.add, addr),
        ("add", &ops.add_peer, peer),
    ] {
        // The address sets take addresses (a prefix needs an interval set).
        let fam = |v4: bool| -> Vec<String> {
            nets.iter()
                .filter(|n| matches!(n, IpNet::V4(_)) == v4)
                .map(|n| match n.prefix_len() == n.max_prefix_len() {
                    true => n.addr().to_string(),
                    false => n.to_string(),
                })
                .collect()
        };
        for (set, items) in [(set4, fam(true)), (set6, fam(false))] {
            if !items.is_empty() {
                let _ = writeln!(
                    s,
                    "{verb} element inet {table} {set} {{ {} }}",
                    items.join(", ")
                );
            }
        }
    }
    (!s.is_empty()).then_some(s)
}

/// Stops (`false`) or resumes (`true`) the interception of new flows.
pub fn set_intercepting(table: &str, on: bool) -> String {
    if on {
        format!("add element inet {table} {ENABLED_SET} {{ tcp }}\n")
    } else {
        format!("flush set inet {table} {ENABLED_SET}\n")
    }
}

/// What the flow table shows of the activity the nft SYN counters count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterActivity {
    /// Flows admitted since start (each came through the intercepting rule).
    pub accepted: u64,
    /// Interception is paused (`MaxFlows`): unsplit SYNs count as overflow.
    pub paused: bool,
    /// Clients at their share: their SYNs count as capped.
    pub capped: usize,
}

/// When the daemon reads the table's counters (running `nft`): only when they may have moved
/// since the last read, so an idle PEP never spawns `nft` and `show` reads the daemon's copy.
/// Overflow and capped SYNs move without any accept, so a paused or capping table is read on
/// every poll; otherwise a read follows new accepts or a change of state (the last counts
/// after a resume or uncap).
#[derive(Debug, Default)]
pub struct CounterPoll {
    last: Option<CounterActivity>,
}

impl CounterPoll {
    /// Whether to read the counters now; the activity is recorded as read.
    pub fn due(&mut self, now: CounterActivity) -> bool {
        let due = now.paused || now.capped > 0 || self.last != Some(now);
        if due {
            self.last = Some(now);
        }
        due
    }
}

#[cfg(test)]
mod counter_tests {
    use super::*;

    fn act(accepted: u64, paused: bool, capped: usize) -> CounterActivity {
        CounterActivity {
            accepted,
            paused,
            capped,
        }
    }

    #[test]
    fn counters_are_read_only_when_they_may_have_moved() {
        let mut p = CounterPoll::default();
        assert!(p.due(act(0, false, 0)), "the first poll reads");
        assert!(!p.due(act(0, false, 0)), "idle: no read");
        assert!(p.due(act(3, false, 0)), "new accepts");
        assert!(!p.due(act(3, false, 0)));
        assert!(
            p.due(act(3, true, 0)) && p.due(act(3, true, 0)),
            "paused: every poll"
        );
        assert!(
            p.due(act(3, false, 0)),
            "the resume reads the last overflow"
        );
        assert!(!p.due(act(3, false, 0)));
        assert!(
            p.due(act(3, false, 1)) && p.due(act(3, false, 1)),
            "capped: every poll"
        );
        assert!(
            p.due(act(3, false, 0)),
            "the uncap reads the last capped SYNs"
        );
        assert!(!p.due(act(3, false, 0)));
    }
}
