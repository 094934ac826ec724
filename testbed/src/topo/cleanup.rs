//! Guaranteed cleanup: on SIGINT/SIGTERM/SIGHUP every process inside this process's live
//! namespaces is stopped and the namespaces are deleted, then the registered interrupt hooks
//! run (e.g. a matrix run records its interrupted cell) and the process exits; namespaces left
//! by a process that died without cleanup are swept.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::{netns, TopoError};

/// Namespaces alive in this process, cleaned by the signal thread on SIGINT/SIGTERM.
pub(super) static LIVE: Mutex<Vec<String>> = Mutex::new(Vec::new());
static SIGNALS: Once = Once::new();
static INTERRUPTED: AtomicBool = AtomicBool::new(false);
type Hook = Box<dyn FnOnce() + Send>;
static HOOKS: Mutex<Vec<Hook>> = Mutex::new(Vec::new());

/// Registers `ns` and creates it, under the lock the signal thread cleans up with (so a
/// namespace is never created behind its back).
pub(super) fn register_and_add(ns: &str) -> Result<(), TopoError> {
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    live.push(ns.to_string());
    netns::add(ns)
}

/// Whether a signal has started the cleanup (work still running is being torn down).
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Runs `hook` on SIGINT/SIGTERM/SIGHUP, after the namespaces and their processes are gone
/// and before the process exits (installs the signal handling if it is not yet).
pub fn on_interrupt(hook: impl FnOnce() + Send + 'static) {
    install_signal_cleanup();
    HOOKS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(Box::new(hook));
}

/// The network-namespace inode of a live namespace (`/run/netns/NS` is its nsfs bind mount).
fn ns_inode(ns: &str) -> Option<u64> {
    std::fs::metadata(format!("/run/netns/{ns}"))
        .ok()
        .map(|m| m.ino())
}

/// Processes (other than this one) whose network namespace is one of `inodes`.
fn pids_in(inodes: &[u64]) -> Vec<i32> {
    let me = std::process::id() as i32;
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/ns/net"))
                .ok()
                .and_then(|l| parse_ns_link(&l.to_string_lossy()))
                .is_some_and(|ino| inodes.contains(&ino))
        })
        .collect()
}

/// `net:[4026532262]` → 4026532262.
fn parse_ns_link(link: &str) -> Option<u64> {
    link.strip_prefix("net:[")?.strip_suffix(']')?.parse().ok()
}

/// SIGTERM to every process in the namespaces, SIGKILL to those left after 2 s.
fn stop_processes(inodes: &[u64]) {
    let signal_all = |sig| {
        let pids = pids_in(inodes);
        for &p in &pids {
            let _ = kill(Pid::from_raw(p), sig);
        }
        !pids.is_empty()
    };
    if !signal_all(Signal::SIGTERM) {
        return;
    }
    let end = Instant::now() + Duration::from_secs(2);
    while Instant::now() < end && !pids_in(inodes).is_empty() {
        std::thread::sleep(Duration::from_millis(50));
    }
    signal_all(Signal::SIGKILL);
}

pub(super) fn unregister(ns: &str) {
    LIVE.lock()
        .unwrap_or_else(|e| e.into_inner())
        .retain(|n| n != ns);
}

/// On SIGINT/SIGTERM/SIGHUP: stop every process in this process's live namespaces, delete
/// them, run the interrupt hooks, then exit 128 + the signal. Later signals are ignored while
/// this runs.
pub(super) fn install_signal_cleanup() {
    SIGNALS.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        std::thread::spawn(move || {
            if let Some(sig) = signals.forever().next() {
                INTERRUPTED.store(true, Ordering::SeqCst);
                // Held until exit: no namespace is created meanwhile.
                let live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
                let inodes: Vec<u64> = live.iter().filter_map(|ns| ns_inode(ns)).collect();
                stop_processes(&inodes);
                for ns in live.iter() {
                    netns::delete(ns);
                }
                let hooks = std::mem::take(&mut *HOOKS.lock().unwrap_or_else(|e| e.into_inner()));
                for h in hooks {
                    h();
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
    fn ns_links_parse() {
        assert_eq!(parse_ns_link("net:[4026532262]"), Some(4026532262));
        assert_eq!(parse_ns_link("mnt:[4026532262]"), None);
        assert_eq!(parse_ns_link("net:[x]"), None);
    }

    #[test]
    fn owner_pid_parses_only_our_names() {
        assert_eq!(owner_pid("sp1234x0-pc"), Some(1234));
        assert_eq!(owner_pid("sp1234x12-sat"), Some(1234));
        assert_eq!(owner_pid("spare-ns"), None);
        assert_eq!(owner_pid("sp12x-pc"), None);
        assert_eq!(owner_pid("other"), None);
    }
}
