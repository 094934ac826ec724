//! Kernel setup of the PEP: the nftables table, the fwmark policy rule and local route table,
//! `initcwnd` on the satellite-side routes; all undone on teardown (and on drop).
//!
//! Every change is recorded on disk before it is made (`io::undo_file`), and undone from that
//! record at teardown. Start-up first replays what a previous instance that died left (its
//! record: sysctls, `initcwnd` routes, rules, table; then the same table name, rule and route
//! table in case the record is missing), so a killed daemon never blocks the next start nor
//! leaves the next one to take its changes for the original state.

use crate::io::undo_file::UndoFile;
use crate::io::{cmd, IoError};
use crate::pep::nft;
use crate::pep::plan::{FastOpen, Plan, CONNECT_MARK, FWMARK, ROUTE_TABLE, RULE_PREF};
use crate::pep::routes;
use crate::undo::Change;

use super::error::ProxyError;

/// Runs `nft -f -` with `script` on stdin.
pub fn nft_script(what: &str, script: &str) -> Result<String, ProxyError> {
    tracing::debug!("nft {what}:\n{script}");
    cmd::run_input("nft", &["-f", "-"], Some(script)).map_err(|e| match e {
        IoError::Command { stderr, .. } => ProxyError::Nft {
            what: what.to_string(),
            stderr,
        },
        e => e.into(),
    })
}

/// SYNs counted by the table's rules.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NftCounters {
    /// Passed unsplit: the table was full.
    pub overflow: u64,
    /// TPROXY'd.
    pub intercepted: u64,
    /// Passed unsplit: their client held its `MaxFlowsPerClient`.
    pub capped: u64,
}

/// Packet counts of the table's counters.
pub fn read_counters(table: &str) -> Result<NftCounters, ProxyError> {
    let out = cmd::run("nft", &["-j", "list", "counters", "table", "inet", table])?;
    let v: serde_json::Value = serde_json::from_str(&out).map_err(|e| ProxyError::Nft {
        what: "list counters".into(),
        stderr: format!("unparseable JSON: {e}"),
    })?;
    let mut counts = NftCounters::default();
    for item in v["nftables"].as_array().into_iter().flatten() {
        let c = &item["counter"];
        let packets = c["packets"].as_u64().unwrap_or(0);
        match c["name"].as_str() {
            Some(n) if n == nft::OVERFLOW_COUNTER => counts.overflow = packets,
            Some(n) if n == nft::INTERCEPTED_COUNTER => counts.intercepted = packets,
            Some(n) if n == nft::CAPPED_COUNTER => counts.capped = packets,
            _ => {}
        }
    }
    Ok(counts)
}

fn rule_args(fam: &'static str, op: &'static str) -> Vec<String> {
    [
        fam,
        "rule",
        op,
        "fwmark",
        &format!("{FWMARK:#x}"),
        "lookup",
        &ROUTE_TABLE.to_string(),
        "pref",
        &RULE_PREF.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `fwmark CONNECT_MARK ipproto icmp lookup TABLE`: ICMP errors about our connecting sockets
/// packets are delivered locally (see [`CONNECT_MARK`]).
fn icmp_rule_args(fam: &'static str, op: &'static str) -> Vec<String> {
    let proto = if fam == "-4" { "icmp" } else { "ipv6-icmp" };
    [
        fam,
        "rule",
        op,
        "fwmark",
        &format!("{CONNECT_MARK:#x}"),
        "ipproto",
        proto,
        "lookup",
        &ROUTE_TABLE.to_string(),
        "pref",
        &(RULE_PREF - 1).to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// `fwmark FWMARK iif lo goto RULE_PREF+1` (IPv4): the reverse-path check of a marked packet
/// (a lookup from `lo` toward its source, with the packet's mark when `src_valid_mark` is on,
/// as wg-quick sets it for a default route) skips our local-delivery rule and sees the routes
/// an unmarked packet would. Without it that lookup finds `local default` and the kernel drops
/// every intercepted SYN as a martian (nothing else the box sends is marked `FWMARK`).
fn reverse_rule_args(op: &'static str) -> Vec<String> {
    [
        "-4",
        "rule",
        op,
        "fwmark",
        &format!("{FWMARK:#x}"),
        "iif",
        "lo",
        "goto",
        &(RULE_PREF + 1).to_string(),
        "pref",
        &(RULE_PREF - 2).to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// The `goto` target of [`reverse_rule_args`] (a rule that does nothing).
fn nop_rule_args(op: &'static str) -> Vec<String> {
    [
        "-4",
        "rule",
        op,
        "pref",
        &(RULE_PREF + 1).to_string(),
        "nop",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Sysctls making ICMP errors carry the mark of the packet that caused them.
const REFLECT: [&str; 2] = ["net.ipv4.fwmark_reflect", "net.ipv6.fwmark_reflect"];
/// Lets a lowered receive window retract the right edge (per namespace, since 6.5).
const SHRINK_WINDOW: &str = "net.ipv4.tcp_shrink_window";
/// SYN cookies when a listener's queue overflows (a SYN flood): new flows still complete their
/// handshake with the PEP (their ACK is steered to it, `pep::nft`). On by default in every
/// namespace; an operator's `0` is turned to `1` (and restored), `2` (always) is left.
const SYNCOOKIES: &str = "net.ipv4.tcp_syncookies";

/// TCP Fast Open; bit 2 (`TFO_SERVER_ENABLE`) is the namespace's consent for listeners.
const FASTOPEN: &str = "net.ipv4.tcp_fastopen";
const FASTOPEN_SERVER: u32 = 2;

fn ip(args: &[String]) -> Result<String, ProxyError> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    Ok(cmd::ip(&a)?)
}

/// What was set up, recorded on disk before each change (`io::undo_file`, owner: the table
/// name) and undone from that record, newest first: at teardown, or at the next start after a
/// kill -9.
pub struct NetCfg {
    table: String,
    undo: UndoFile,
    /// Where the satellite-side routes are (`InitCwnd`, careful resume).
    satellite_devs: Vec<String>,
}

/// Removes leftovers of a dead instance: its undo record (sysctls, routes, rules, table) and,
/// for instances older than the record, the table, our rule (any number) and our route table.
/// Returns the record of the new instance.
pub fn remove_stale(table: &str) -> UndoFile {
    let undo = UndoFile::take_over(table);
    if let Err(e) = nft_script("delete stale table", &nft::delete(table)) {
        tracing::debug!("{e}");
    }
    for args in [reverse_rule_args("del"), nop_rule_args("del")] {
        for _ in 0..16 {
            if ip(&args).is_err() {
                break;
            }
        }
    }
    for fam in ["-4", "-6"] {
        for args in [rule_args(fam, "del"), icmp_rule_args(fam, "del")] {
            for _ in 0..16 {
                if ip(&args).is_err() {
                    break;
                }
            }
        }
        let t = ROUTE_TABLE.to_string();
        let _ = cmd::ip(&[fam, "route", "flush", "table", &t]);
    }
    undo
}

impl NetCfg {
    /// Sets everything up for `plan`; on failure what was done is undone before returning.
    /// `shrink_window`: StarPEP applies windows, so `net.ipv4.tcp_shrink_window = 1` lets the
    /// kernel's own window follow a lowered buffer or clamp on the next ACK (restored at
    /// teardown).
    pub fn apply(plan: &Plan, shrink_window: bool) -> Result<NetCfg, ProxyError> {
        let mut n = NetCfg {
            table: plan.table.clone(),
            undo: remove_stale(&plan.table),
            satellite_devs: plan.satellite_devs.clone(),
        };
        let t = ROUTE_TABLE.to_string();
        n.ip_undoable(&nop_rule_args("add"), nop_rule_args("del"))?;
        n.ip_undoable(&reverse_rule_args("add"), reverse_rule_args("del"))?;
        for (fam, any) in [("-4", "0.0.0.0/0"), ("-6", "::/0")] {
            let has = match fam {
                "-4" => !plan.dst4.is_empty(),
                _ => !plan.dst6.is_empty(),
            };
            let route = |op: &str| -> Vec<String> {
                [fam, "route", op, "local", any, "dev", "lo", "table", &t]
                    .iter()
                    .map(|s| s.to_string())
                    .collect()
            };
            // The rule and route are needed for replies to our transparent sockets too, so
            // they are added for both families; IPv6 may be disabled in the namespace.
            let res = n
                .ip_undoable(&rule_args(fam, "add"), rule_args(fam, "del"))
                .and_then(|_| n.ip_undoable(&route("add"), route("del")))
                .and_then(|_| match plan.transparent_connect {
                    true => n.ip_undoable(&icmp_rule_args(fam, "add"), icmp_rule_args(fam, "del")),
                    false => Ok(()),
                });
            match res {
                Ok(()) => {}
                Err(e) if fam == "-6" && !has => tracing::warn!("IPv6 policy routing: {e}"),
                Err(e) => return Err(e),
            }
        }
        let mut ones: Vec<&'static str> = Vec::new();
        if cmd::sysctl_get(SYNCOOKIES).as_deref() == Some("0") {
            tracing::info!(
                "{SYNCOOKIES} = 1: the TPROXY listeners answer a SYN flood with cookies"
            );
            ones.push(SYNCOOKIES);
        }
        if plan.transparent_connect {
            ones.extend(REFLECT);
        }
        if shrink_window {
            ones.push(SHRINK_WINDOW);
        }
        let mut sets: Vec<(&'static str, String)> = Vec::new();
        for key in ones {
            if let Some(old) = cmd::sysctl_get(key).filter(|v| v != "1") {
                sets.push((key, old));
            }
        }
        if let FastOpen::Listen { .. } = plan.fast_open {
            // Bit 2 lets listeners that ask for it (ours) take data in a SYN; the client bit
            // and what other listeners do stay as the operator set them.
            match cmd::sysctl_get(FASTOPEN).and_then(|v| v.trim().parse::<u32>().ok()) {
                Some(v) if v & FASTOPEN_SERVER == 0 => sets.push((FASTOPEN, v.to_string())),
                Some(_) => {}
                None => tracing::warn!("{FASTOPEN} unreadable: Fast Open stays off"),
            }
        }
        for (key, old) in sets {
            let new = match key {
                FASTOPEN => (old.parse::<u32>().unwrap_or(0) | FASTOPEN_SERVER).to_string(),
                _ => "1".to_string(),
            };
            let c = Change::Sysctl {
                key: key.to_string(),
                old,
            };
            n.undo.note(c.clone());
            if let Err(e) = cmd::sysctl(key, &new) {
                tracing::warn!("{e}");
                n.undo.forget(&c);
            }
        }
        let c = Change::NftTable {
            name: plan.table.clone(),
        };
        n.undo.note(c.clone());
        if let Err(e) = nft_script("apply ruleset", &nft::ruleset(plan)) {
            // The transaction failed as a whole: there is no table to delete.
            n.undo.forget(&c);
            return Err(e);
        }
        if let Some(cwnd) = plan.init_cwnd {
            let n_routes = n.set_initcwnd(None, Some(cwnd));
            tracing::info!(
                "InitCwnd {cwnd} on {n_routes} routes of {:?}",
                n.satellite_devs
            );
        }
        Ok(n)
    }

    /// `ip add` after recording the `ip del` that undoes it.
    fn ip_undoable(&mut self, add: &[String], del: Vec<String>) -> Result<(), ProxyError> {
        let c = Change::Ip { undo: del };
        self.undo.note(c.clone());
        ip(add).map(|_| ()).inspect_err(|_| self.undo.forget(&c))
    }

    /// Sets `initcwnd` on the satellite-side routes whose destination lies within one of
    /// `within` (`None`: all of them), or puts them back as they were (`cwnd = None`). Returns
    /// how many routes were changed; failures are logged.
    pub fn set_initcwnd(&mut self, within: Option<&[ipnet::IpNet]>, cwnd: Option<u32>) -> usize {
        let mut changed = 0;
        for dev in self.satellite_devs.clone() {
            for fam in ["-4", "-6"] {
                let Ok(out) = cmd::ip(&[fam, "-o", "route", "show", "dev", &dev]) else {
                    continue;
                };
                for line in out.lines() {
                    let inside = match (within, routes::route_prefix(fam, line)) {
                        (None, _) => true,
                        (Some(nets), Some(p)) => nets.iter().any(|n| n.contains(&p)),
                        (Some(_), None) => false,
                    };
                    let Some(c) = inside
                        .then(|| routes::initcwnd_change(fam, line, &dev, cwnd.unwrap_or(0)))
                        .flatten()
                    else {
                        continue;
                    };
                    let key = routes::route_key(&c);
                    let known = self.undo.record().route(&key).map(<[String]>::to_vec);
                    let record = Change::Route {
                        key,
                        restore: known.clone().unwrap_or(c.restore),
                    };
                    let args = match (cwnd, known) {
                        (Some(_), _) => c.apply,
                        (None, Some(restore)) => restore,
                        (None, None) => continue,
                    };
                    // Recorded before the first change: the original line survives a kill -9.
                    if cwnd.is_some() {
                        self.undo.note(record.clone());
                    }
                    match ip(&args) {
                        Ok(_) => {
                            changed += 1;
                            if cwnd.is_none() {
                                self.undo.forget(&record);
                            }
                        }
                        Err(e) => tracing::warn!("initcwnd: {e}"),
                    }
                }
            }
        }
        changed
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    /// Pauses (`false`) or resumes (`true`) the interception of new flows.
    pub fn set_intercepting(&self, on: bool) -> Result<(), ProxyError> {
        let what = if on { "resume" } else { "pause" };
        nft_script(what, &nft::set_intercepting(&self.table, on)).map(|_| ())
    }

    /// Adds and removes capped clients' prefixes (`MaxFlowsPerClient`).
    pub fn set_capped(&self, ops: &crate::pep::SetOps) -> Result<(), ProxyError> {
        match nft::set_capped(&self.table, ops) {
            Some(script) => nft_script("cap clients", &script).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Undoes everything from the record, newest first (idempotent); failures are logged.
    pub fn teardown(&mut self) {
        self.undo.undo_all();
    }
}

impl Drop for NetCfg {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// The devices the routes toward `nets` leave by (the box without tunnel: its WAN side).
pub fn route_devs(nets: &[ipnet::IpNet]) -> Vec<String> {
    let mut devs = Vec::new();
    for n in nets {
        let fam = if n.addr().is_ipv4() { "-4" } else { "-6" };
        let out = if n.prefix_len() == 0 {
            cmd::ip(&[fam, "-o", "route", "show", "default"])
        } else {
            cmd::ip(&[fam, "-o", "route", "get", &n.network().to_string()])
        };
        for line in out.iter().flat_map(|o| o.lines()) {
            if let Some(d) = routes::route_dev(line) {
                if d != "lo" && !devs.contains(&d) {
                    devs.push(d);
                }
            }
        }
    }
    devs
}
