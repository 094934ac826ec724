//! The undo record (pure): what a daemon changed in the kernel that outlives its process
//! (sysctls, policy rules, routes it added or rewrote, its nft table), so that the next start
//! puts it back after a kill -9 or a crash, and a clean stop undoes it by the same path.
//!
//! The shell (`io::undo_file`) writes the record to `/run/starpep` before each change, replays
//! it (newest change first) at teardown, and replays what a dead instance left at start-up.
//! Replayed commands are checked ([`Change::is_sane`]): a record only ever deletes rules and
//! routes, changes routes back, restores `net.*` sysctls and deletes its own nft table.

use serde::{Deserialize, Serialize};

/// Format version of the record file.
pub const VERSION: u32 = 1;

/// One change to the kernel, with what undoes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Change {
    /// `key` was set; `old` is its value before the first change.
    Sysctl { key: String, old: String },
    /// A route rewritten in place (`initcwnd`); `restore` (arguments of `ip`) puts it back as it
    /// was before the first rewrite. `key` identifies the route.
    Route { key: String, restore: Vec<String> },
    /// Something added with `ip` (a policy rule, a route of our own table); `undo` (arguments
    /// of `ip`) removes it.
    Ip { undo: Vec<String> },
    /// The nftables table `inet <name>`.
    NftTable { name: String },
}

/// One command of a replay, for the shell to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// `ip ARGS...`
    Ip(Vec<String>),
    /// Write `value` to the sysctl `key`.
    Sysctl { key: String, value: String },
    /// `nft delete table inet NAME`
    DeleteNftTable(String),
}

fn ip_sane(args: &[String], ops: &[&str]) -> bool {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    matches!(a.as_slice(), [fam, obj, op, _, ..]
        if ["-4", "-6"].contains(fam) && ["rule", "route"].contains(obj) && ops.contains(op))
}

fn name_sane(s: &str, extra: &[char]) -> bool {
    !s.is_empty()
        && !s.contains("..")
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-".contains(c) || extra.contains(&c))
}

impl Change {
    /// The same change as `other` (recorded once: the first holds the original state).
    pub fn same(&self, other: &Change) -> bool {
        match (self, other) {
            (Change::Sysctl { key: a, .. }, Change::Sysctl { key: b, .. }) => a == b,
            (Change::Route { key: a, .. }, Change::Route { key: b, .. }) => a == b,
            (Change::Ip { undo: a }, Change::Ip { undo: b }) => a == b,
            (Change::NftTable { name: a }, Change::NftTable { name: b }) => a == b,
            _ => false,
        }
    }

    /// Whether replaying it only undoes what a daemon does: `ip -4|-6 rule|route del|change|
    /// flush`, a `net.*` sysctl set back to a short number, our table deleted.
    pub fn is_sane(&self) -> bool {
        match self {
            Change::Sysctl { key, old } => {
                key.starts_with("net.")
                    && name_sane(key, &['.'])
                    && !old.is_empty()
                    && old.len() <= 20
                    && old.chars().all(|c| c.is_ascii_digit() || c == '-')
            }
            Change::Route { restore, .. } => ip_sane(restore, &["change", "replace"]),
            Change::Ip { undo } => ip_sane(undo, &["del", "delete", "flush"]),
            Change::NftTable { name } => name_sane(name, &['.', '=', '+']),
        }
    }

    /// The command that undoes it.
    pub fn step(&self) -> Step {
        match self {
            Change::Sysctl { key, old } => Step::Sysctl {
                key: key.clone(),
                value: old.clone(),
            },
            Change::Route { restore, .. } => Step::Ip(restore.clone()),
            Change::Ip { undo } => Step::Ip(undo.clone()),
            Change::NftTable { name } => Step::DeleteNftTable(name.clone()),
        }
    }
}

/// Errors reading a record file's text.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum UndoError {
    #[error("not an undo record: {0}")]
    Parse(String),
    #[error("undo record version {found} (this build reads version {VERSION})")]
    Version { found: u32 },
}

/// What one daemon changed, oldest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UndoRecord {
    pub version: u32,
    /// Whose record it is (an interface, or an nft table).
    pub owner: String,
    /// The process that wrote it (for the log of the one that replays it).
    pub pid: u32,
    changes: Vec<Change>,
}

impl UndoRecord {
    pub fn new(owner: &str, pid: u32) -> UndoRecord {
        UndoRecord {
            version: VERSION,
            owner: owner.to_string(),
            pid,
            changes: Vec::new(),
        }
    }

    /// Records `c` before it is made; `false` when the same change is already recorded (its
    /// first record keeps the original state, so nothing needs writing).
    pub fn record(&mut self, c: Change) -> bool {
        if self.changes.iter().any(|x| x.same(&c)) {
            return false;
        }
        self.changes.push(c);
        true
    }

    /// Drops the record of `c` (undone, or it failed and was never made); whether it was there.
    pub fn forget(&mut self, c: &Change) -> bool {
        let n = self.changes.len();
        self.changes.retain(|x| !x.same(c));
        self.changes.len() != n
    }

    /// The recorded route with `key` (its `restore` arguments).
    pub fn route(&self, key: &str) -> Option<&[String]> {
        self.changes.iter().find_map(|c| match c {
            Change::Route { key: k, restore } if k == key => Some(restore.as_slice()),
            _ => None,
        })
    }

    pub fn changes(&self) -> &[Change] {
        &self.changes
    }

    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }

    /// The commands undoing every sane change, newest first, and the changes refused as not
    /// sane (a damaged or forged file).
    pub fn undo_steps(&self) -> (Vec<Step>, Vec<Change>) {
        let (ok, bad): (Vec<&Change>, Vec<&Change>) =
            self.changes.iter().rev().partition(|c| c.is_sane());
        (
            ok.into_iter().map(Change::step).collect(),
            bad.into_iter().cloned().collect(),
        )
    }

    /// Empties the record (everything was undone).
    pub fn clear(&mut self) {
        self.changes.clear();
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("an undo record always serializes")
    }

    pub fn from_json(text: &str) -> Result<UndoRecord, UndoError> {
        #[derive(Deserialize)]
        struct Head {
            version: u32,
        }
        let head: Head = serde_json::from_str(text).map_err(|e| UndoError::Parse(e.to_string()))?;
        if head.version != VERSION {
            return Err(UndoError::Version {
                found: head.version,
            });
        }
        serde_json::from_str(text).map_err(|e| UndoError::Parse(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    fn rule() -> Change {
        Change::Ip {
            undo: v("-4 rule del fwmark 0x5350 lookup 21328 pref 21328"),
        }
    }

    #[test]
    fn the_first_record_of_a_change_keeps_the_original_state() {
        let mut r = UndoRecord::new("starpep_box", 42);
        assert!(r.record(Change::Sysctl {
            key: "net.ipv4.tcp_shrink_window".into(),
            old: "0".into()
        }));
        // A second instance's view ("1", set by the first) never replaces the original.
        assert!(!r.record(Change::Sysctl {
            key: "net.ipv4.tcp_shrink_window".into(),
            old: "1".into()
        }));
        let key = "-4 route change 10.2.0.0/24 via 10.99.0.2 dev wan0".to_string();
        assert!(r.record(Change::Route {
            key: key.clone(),
            restore: v("-4 route change 10.2.0.0/24 via 10.99.0.2 dev wan0"),
        }));
        assert!(!r.record(Change::Route {
            key: key.clone(),
            restore: v("-4 route change 10.2.0.0/24 via 10.99.0.2 dev wan0 initcwnd 40"),
        }));
        assert_eq!(
            r.route(&key).unwrap().last().map(String::as_str),
            Some("wan0")
        );
        assert_eq!(r.changes().len(), 2);
    }

    #[test]
    fn undo_runs_newest_first_and_forgotten_changes_are_not_undone() {
        let mut r = UndoRecord::new("box", 1);
        r.record(rule());
        r.record(Change::Sysctl {
            key: "net.ipv4.fwmark_reflect".into(),
            old: "0".into(),
        });
        r.record(Change::NftTable {
            name: "starpep_box".into(),
        });
        let route = Change::Route {
            key: "k".into(),
            restore: v("-4 route change 10.1.0.0/24 dev wan0"),
        };
        r.record(route.clone());
        let (steps, bad) = r.undo_steps();
        assert!(bad.is_empty());
        assert_eq!(
            steps,
            vec![
                Step::Ip(v("-4 route change 10.1.0.0/24 dev wan0")),
                Step::DeleteNftTable("starpep_box".into()),
                Step::Sysctl {
                    key: "net.ipv4.fwmark_reflect".into(),
                    value: "0".into()
                },
                Step::Ip(v("-4 rule del fwmark 0x5350 lookup 21328 pref 21328")),
            ]
        );
        // The route was put back at run time: nothing left to undo for it.
        assert!(r.forget(&route));
        assert!(!r.forget(&route));
        assert_eq!(r.undo_steps().0.len(), 3);
        r.clear();
        assert!(r.is_empty() && r.undo_steps().0.is_empty());
    }

    #[test]
    fn a_record_survives_its_file_and_other_versions_are_refused() {
        let mut r = UndoRecord::new("box-pep", 7);
        r.record(rule());
        r.record(Change::Sysctl {
            key: "net.ipv4.conf.all.src_valid_mark".into(),
            old: "0".into(),
        });
        let text = r.to_json();
        assert!(text.contains("\"kind\": \"sysctl\""), "{text}");
        assert_eq!(UndoRecord::from_json(&text).unwrap(), r);
        let newer = text.replace("\"version\": 1", "\"version\": 2");
        assert_eq!(
            UndoRecord::from_json(&newer),
            Err(UndoError::Version { found: 2 })
        );
        assert!(matches!(
            UndoRecord::from_json("{\"version\": 1}"),
            Err(UndoError::Parse(_))
        ));
        assert!(matches!(
            UndoRecord::from_json("garbage"),
            Err(UndoError::Parse(_))
        ));
    }

    #[test]
    fn a_replay_only_deletes_restores_and_resets_net_sysctls() {
        let sane = [
            rule(),
            Change::Ip {
                undo: v("-6 route del local ::/0 dev lo table 21328"),
            },
            Change::Route {
                key: "k".into(),
                restore: v("-6 route change fd00:2::/64 metric 1024 dev t"),
            },
            Change::Sysctl {
                key: "net.ipv6.fwmark_reflect".into(),
                old: "0".into(),
            },
            Change::NftTable {
                name: "starpep_box-pep".into(),
            },
        ];
        for c in &sane {
            assert!(c.is_sane(), "{c:?}");
        }
        let insane = [
            Change::Ip {
                undo: v("-4 rule add from all lookup 66"),
            },
            Change::Ip {
                undo: v("link del dev eth0"),
            },
            Change::Ip { undo: v("-4 rule") },
            Change::Route {
                key: "k2".into(),
                restore: v("-4 route del default"),
            },
            Change::Sysctl {
                key: "kernel.core_pattern".into(),
                old: "0".into(),
            },
            Change::Sysctl {
                key: "net.ipv4/../../kernel/x".into(),
                old: "0".into(),
            },
            Change::Sysctl {
                key: "net.ipv4.ip_forward".into(),
                old: "|/bin/sh".into(),
            },
            Change::NftTable {
                name: "x; flush ruleset".into(),
            },
        ];
        let mut r = UndoRecord::new("x", 1);
        for c in insane.iter().chain(&sane) {
            assert!(c.is_sane() == sane.contains(c), "{c:?}");
            r.record(c.clone());
        }
        let (steps, bad) = r.undo_steps();
        assert_eq!(steps.len(), sane.len());
        assert_eq!(bad.len(), insane.len());
    }
}
