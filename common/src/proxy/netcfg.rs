//! Kernel setup of the PEP: the nftables table, the fwmark policy rule and local route table,
//! `initcwnd` on the satellite-side routes; all undone on teardown (and on drop).
//!
//! Start-up first removes what a previous instance that died may have left (same table name,
//! same rule and table), so a crashed daemon never blocks the next start.

use crate::io::{cmd, IoError};
use crate::pep::nft;
use crate::pep::plan::{Plan, CONNECT_MARK, FWMARK, ROUTE_TABLE, RULE_PREF};
use crate::pep::routes;

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

/// Sysctls making ICMP errors carry the mark of the packet that caused them.
const REFLECT: [&str; 2] = ["net.ipv4.fwmark_reflect", "net.ipv6.fwmark_reflect"];
/// Lets a lowered receive window retract the right edge (per namespace, since 6.5).
const SHRINK_WINDOW: &str = "net.ipv4.tcp_shrink_window";

fn read_sysctl(key: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/")))
        .ok()
        .map(|s| s.trim().to_string())
}

fn ip(args: &[String]) -> Result<String, ProxyError> {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    Ok(cmd::ip(&a)?)
}

/// What was set up, in the order to undo it.
pub struct NetCfg {
    table: String,
    undo_ip: Vec<Vec<String>>,
    /// Per route changed for `initcwnd` (its key: `routes::route_key`), the line that puts it
    /// back as it was before the first change.
    restore_routes: Vec<(String, Vec<String>)>,
    /// Where the satellite-side routes are (`InitCwnd`, careful resume).
    satellite_devs: Vec<String>,
    restore_sysctls: Vec<(&'static str, String)>,
    nft_applied: bool,
}

/// Removes leftovers of a dead instance: the table, our rule (any number), our route table.
pub fn remove_stale(table: &str) {
    if let Err(e) = nft_script("delete stale table", &nft::delete(table)) {
        tracing::debug!("{e}");
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
}

impl NetCfg {
    /// Sets everything up for `plan`; on failure what was done is undone before returning.
    /// `shrink_window`: the StarPEP socket clamp is in use, so `net.ipv4.tcp_shrink_window = 1`
    /// lets a lower clamp take effect on the next ACK (restored at teardown).
    pub fn apply(plan: &Plan, shrink_window: bool) -> Result<NetCfg, ProxyError> {
        remove_stale(&plan.table);
        let mut n = NetCfg {
            table: plan.table.clone(),
            undo_ip: Vec::new(),
            restore_routes: Vec::new(),
            satellite_devs: plan.satellite_devs.clone(),
            restore_sysctls: Vec::new(),
            nft_applied: false,
        };
        let t = ROUTE_TABLE.to_string();
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
            let res = ip(&rule_args(fam, "add")).and_then(|_| {
                n.undo_ip.push(rule_args(fam, "del"));
                ip(&route("add"))?;
                n.undo_ip.push(route("del"));
                if plan.transparent_connect {
                    ip(&icmp_rule_args(fam, "add"))?;
                    n.undo_ip.push(icmp_rule_args(fam, "del"));
                }
                Ok(())
            });
            match res {
                Ok(()) => {}
                Err(e) if fam == "-6" && !has => tracing::warn!("IPv6 policy routing: {e}"),
                Err(e) => return Err(e),
            }
        }
        let mut ones: Vec<&'static str> = Vec::new();
        if plan.transparent_connect {
            ones.extend(REFLECT);
        }
        if shrink_window {
            ones.push(SHRINK_WINDOW);
        }
        for key in ones {
            match read_sysctl(key) {
                Some(old) if old != "1" => match cmd::sysctl(key, "1") {
                    Ok(()) => n.restore_sysctls.push((key, old)),
                    Err(e) => tracing::warn!("{e}"),
                },
                _ => {}
            }
        }
        nft_script("apply ruleset", &nft::ruleset(plan))?;
        n.nft_applied = true;
        if let Some(cwnd) = plan.init_cwnd {
            let n_routes = n.set_initcwnd(None, Some(cwnd));
            tracing::info!(
                "InitCwnd {cwnd} on {n_routes} routes of {:?}",
                n.satellite_devs
            );
        }
        Ok(n)
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
                    let known = self.restore_routes.iter().position(|(k, _)| *k == key);
                    let args = match (cwnd, known) {
                        (Some(_), _) => c.apply.clone(),
                        (None, Some(i)) => self.restore_routes[i].1.clone(),
                        (None, None) => continue,
                    };
                    match ip(&args) {
                        Ok(_) => {
                            changed += 1;
                            match (cwnd, known) {
                                (Some(_), None) => self.restore_routes.push((key, c.restore)),
                                (None, Some(i)) => {
                                    self.restore_routes.remove(i);
                                }
                                _ => {}
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

    /// Undoes everything (idempotent); failures are logged.
    pub fn teardown(&mut self) {
        while let Some((_, r)) = self.restore_routes.pop() {
            if let Err(e) = ip(&r) {
                tracing::debug!("restore route: {e}");
            }
        }
        if self.nft_applied {
            if let Err(e) = nft_script("delete table", &nft::delete(&self.table)) {
                tracing::warn!("{e}");
            }
            self.nft_applied = false;
        }
        while let Some((key, old)) = self.restore_sysctls.pop() {
            if let Err(e) = cmd::sysctl(key, &old) {
                tracing::warn!("teardown: {e}");
            }
        }
        while let Some(u) = self.undo_ip.pop() {
            if let Err(e) = ip(&u) {
                tracing::warn!("teardown: {e}");
            }
        }
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
