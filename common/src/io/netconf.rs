//! Interface configuration like wg-quick: MTU, addresses, link up, AllowedIPs routes and the
//! fwmark policy-routing trick for default routes. Every rule added is recorded and removed again.
//!
//! Routes go through the TUN device, so they disappear with it (also when the process is
//! killed); the policy rules and `src_valid_mark` do not, which is what [`Applied`] undoes (on
//! drop, also when a later step fails). Its undo record is on disk (`io::undo_file`, owner: the
//! interface name), so the next start removes what a killed instance left.
//! A reload adds and removes the AllowedIPs routes of the peers it changes
//! ([`Applied::update_routes`]).

use std::collections::BTreeSet;

use ipnet::IpNet;

use crate::undo::Change;

use super::cmd;
use super::undo_file::UndoFile;
use super::IoError;

/// `Table =` of the config, as far as routing is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteTable {
    /// Routes in `main`; a `/0` goes to table `fwmark` with wg-quick's two policy rules.
    Auto,
    /// No routes at all.
    Off,
    /// Every route, `/0` included, in this table; no rules.
    Id(u32),
}

/// Default table and mark for the default-route trick (wg-quick's 51820).
pub const DEFAULT_FWMARK: u32 = 51820;

/// What to configure on a freshly created TUN interface.
#[derive(Debug, Clone)]
pub struct NetPlan {
    pub iface: String,
    pub addresses: Vec<IpNet>,
    pub mtu: u16,
    /// AllowedIPs of every peer (duplicates are ignored).
    pub routes: Vec<IpNet>,
    pub table: RouteTable,
    /// Mark carried by our own UDP socket; used as table number for `/0` routes with
    /// [`RouteTable::Auto`].
    pub fwmark: u32,
}

impl NetPlan {
    /// Whether the plan needs the fwmark trick (a `/0` route with `Table = auto`): the daemon
    /// then marks its UDP socket with `fwmark` before binding.
    pub fn needs_fwmark(&self) -> bool {
        self.table == RouteTable::Auto && self.routes.iter().any(|n| n.prefix_len() == 0)
    }
}

/// Undo record of a configured interface, and the AllowedIPs routes it added.
pub struct Applied {
    undo: UndoFile,
    routes: BTreeSet<IpNet>,
}

fn fam(net: &IpNet) -> &'static str {
    match net {
        IpNet::V4(_) => "-4",
        IpNet::V6(_) => "-6",
    }
}

impl Applied {
    fn ip_undoable(&mut self, add: &[&str], del: &[&str]) -> Result<(), IoError> {
        let c = Change::Ip {
            undo: del.iter().map(|s| s.to_string()).collect(),
        };
        self.undo.note(c.clone());
        cmd::ip(add)
            .map(|_| ())
            .inspect_err(|_| self.undo.forget(&c))
    }

    /// Sets sysctl `key` to `value`, recording the old value when it differs.
    fn sysctl_undoable(&mut self, key: &str, value: &str) -> Result<(), IoError> {
        let Some(old) = cmd::sysctl_get(key).filter(|old| old != value) else {
            return Ok(());
        };
        let c = Change::Sysctl {
            key: key.to_string(),
            old,
        };
        self.undo.note(c.clone());
        cmd::sysctl(key, value).inspect_err(|_| self.undo.forget(&c))
    }

    /// A reload: adds `add` (most specific last, as at start) and removes the routes of `del`
    /// it had added (`plan` is the running interface's; no `/0` with [`RouteTable::Auto`]:
    /// its policy rules are set up at start only). If an add fails, the routes this call
    /// added are removed again and the error returned; failed removals are logged.
    pub fn update_routes(
        &mut self,
        plan: &NetPlan,
        add: &[IpNet],
        del: &[IpNet],
    ) -> Result<(), IoError> {
        let mut add: Vec<IpNet> = add.iter().map(|n| n.trunc()).collect();
        add.sort_by_key(|n| std::cmp::Reverse(n.prefix_len()));
        let mut done = Vec::new();
        for net in &add {
            if let Err(e) = add_route(self, plan, net) {
                for n in done {
                    self.del_route(plan, &n);
                }
                return Err(e);
            }
            if self.routes.contains(net) {
                done.push(*net);
            }
        }
        for net in del {
            self.del_route(plan, &net.trunc());
        }
        Ok(())
    }

    fn del_route(&mut self, plan: &NetPlan, net: &IpNet) {
        if !self.routes.remove(net) {
            return;
        }
        let prefix = net.to_string();
        let mut args = vec![fam(net), "route", "del", &prefix, "dev", &plan.iface];
        let table = match plan.table {
            RouteTable::Id(t) => Some(t.to_string()),
            _ => None,
        };
        if let Some(t) = &table {
            args.extend(["table", t.as_str()]);
        }
        if let Err(e) = cmd::ip(&args) {
            tracing::warn!("reload: {e}");
        }
    }

    /// Removes what was added and restores the sysctls, newest first; failures are logged.
    pub fn teardown(&mut self) {
        self.undo.undo_all();
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        self.teardown();
    }
}

/// Configures `plan.iface` (which must exist). On error, the rules already added are removed.
/// First undoes what a killed instance of the same interface left in this namespace.
pub fn apply(plan: &NetPlan) -> Result<Applied, IoError> {
    let mut applied = Applied {
        undo: UndoFile::take_over(&plan.iface),
        routes: BTreeSet::new(),
    };
    let dev = plan.iface.as_str();
    let mtu = plan.mtu.to_string();
    cmd::ip(&["link", "set", "dev", dev, "mtu", &mtu])?;
    for a in &plan.addresses {
        cmd::ip(&[fam(a), "address", "add", &a.to_string(), "dev", dev])?;
    }
    cmd::ip(&["link", "set", "dev", dev, "up"])?;
    let mut routes: Vec<IpNet> = plan.routes.iter().map(|n| n.trunc()).collect();
    routes.sort();
    routes.dedup();
    // Most specific last, as wg-quick sorts by prefix length.
    routes.sort_by_key(|n| std::cmp::Reverse(n.prefix_len()));
    for net in &routes {
        add_route(&mut applied, plan, net)?;
    }
    Ok(applied)
}

fn add_route(applied: &mut Applied, plan: &NetPlan, net: &IpNet) -> Result<(), IoError> {
    let dev = plan.iface.as_str();
    let prefix = net.to_string();
    let f = fam(net);
    match plan.table {
        RouteTable::Off => Ok(()),
        RouteTable::Id(t) => {
            let t = t.to_string();
            cmd::ip(&[f, "route", "add", &prefix, "dev", dev, "table", &t])?;
            applied.routes.insert(*net);
            Ok(())
        }
        RouteTable::Auto if net.prefix_len() == 0 => {
            let t = plan.fwmark.to_string();
            cmd::ip(&[f, "route", "add", &prefix, "dev", dev, "table", &t])?;
            let not_mark = [f, "rule", "add", "not", "fwmark", &t, "table", &t];
            let not_mark_del = [f, "rule", "del", "not", "fwmark", &t, "table", &t];
            applied.ip_undoable(&not_mark, &not_mark_del)?;
            let suppress = [
                f,
                "rule",
                "add",
                "table",
                "main",
                "suppress_prefixlength",
                "0",
            ];
            let suppress_del = [
                f,
                "rule",
                "del",
                "table",
                "main",
                "suppress_prefixlength",
                "0",
            ];
            applied.ip_undoable(&suppress, &suppress_del)?;
            if f == "-4" {
                // Replies to marked packets must pass reverse-path checks (as wg-quick does;
                // unlike wg-quick, the old value is restored at stop).
                applied.sysctl_undoable("net.ipv4.conf.all.src_valid_mark", "1")?;
            }
            Ok(())
        }
        RouteTable::Auto => {
            // Skip prefixes an address route on the device already covers (wg-quick's check).
            let covered = cmd::ip(&[f, "-o", "route", "show", "dev", dev, "match", &prefix])?;
            if covered.trim().is_empty() {
                cmd::ip(&[f, "route", "add", &prefix, "dev", dev])?;
                applied.routes.insert(*net);
            }
            Ok(())
        }
    }
}
