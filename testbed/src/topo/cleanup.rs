//! Guaranteed cleanup: namespaces alive in this process are deleted on SIGINT/SIGTERM/SIGHUP,
//! and namespaces left by a process that died without cleanup are swept.

use std::path::Path;
use std::sync::{Mutex, Once};

use super::netns;

/// Namespaces alive in this process, cleaned by the signal thread on SIGINT/SIGTERM.
pub(super) static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SIGNALS: Once = Once::new();

pub(super) fn register(ns: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(ns.to_string());
}

pub(super) fn unregister(ns: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|n| n != ns);
}

/// On SIGINT/SIGTERM/SIGHUP: delete every live namespace of this process, then exit 130.
pub(super) fn install_signal_cleanup() {
    SIGNALS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                let live: Vec<String> = LIVE.lock().unwrap_or_else(|e| e.into_inner()).clone();
                for ns in live {
                    netns::delete(&ns);
                }
                std::process::exit(128 + sig);
            }
        });
    });
}

/// Deletes namespaces named `sp<pid>x<n>-*` whose creating process no longer exists.
pub fn sweep_stale() {
    for ns in netns::list() {
        if let Some(pid) = owner_pid(&ns) {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                netns::delete(&ns);
            }
        }
    }
}

fn owner_pid(ns: &str) -> Option<u32> {
    let rest = ns.strip_prefix("sp")?;
    let (pid, rest) = rest.split_once('x')?;
    let (n, _node) = rest.split_once('-')?;
    n.parse::<u32>().ok()?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pid_parses_only_our_names() {
        assert_eq!(owner_pid("sp1234x0-pc"), Some(1234));
        assert_eq!(owner_pid("sp1234x12-sat"), Some(1234));
        assert_eq!(owner_pid("spare-ns"), None);
        assert_eq!(owner_pid("sp12x-pc"), None);
        assert_eq!(owner_pid("other"), None);
    }
}
