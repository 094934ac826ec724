//! Descriptor exhaustion in the proxy shell: the flow table's limit follows the process's
//! `RLIMIT_NOFILE` (`pep::nofile`, read again every second by `tasks::flow_budget`, so
//! `prlimit` on a running daemon counts), and an `accept` that finds no descriptor left
//! refuses the pending connection cleanly: a spare descriptor held for that is given up, the
//! connection is accepted and reset, and the spare is taken again. Without it the connection
//! would wait in the backlog, its client sending into a socket nobody reads, and the accept
//! loop would wake for it again and again.

use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Duration;

use tokio::net::TcpListener;

use crate::pep::nofile::table_limit;

use super::pump::RelayMode;

/// How often the limit is read again.
pub const REREAD: Duration = Duration::from_secs(1);
/// How long a refusal waits for the pending connection once a descriptor is free.
const TAKE: Duration = Duration::from_millis(50);

/// The soft `RLIMIT_NOFILE` now.
pub fn soft_limit() -> Option<u64> {
    nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
        .ok()
        .map(|(soft, _)| soft)
}

/// `accept` failed for want of a descriptor (this process's, or the system's).
pub fn exhausted(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE) | Some(libc::ENFILE))
}

/// The flow table's limit for `max_flows` now: `MaxFlows`, or fewer when the descriptors allow
/// fewer.
pub fn flow_limit(max_flows: usize, mode: RelayMode) -> usize {
    soft_limit().map_or(max_flows, |soft| {
        table_limit(max_flows, soft, mode == RelayMode::Splice)
    })
}

/// A descriptor held in reserve to take and reset a connection when there is none left.
#[derive(Default)]
pub struct Spare(Mutex<Option<File>>);

fn open_spare() -> Option<File> {
    File::open("/dev/null").ok()
}

impl Spare {
    pub fn new() -> Spare {
        Spare(Mutex::new(open_spare()))
    }

    /// Takes one pending connection of `l` with the spare descriptor and resets it; false if
    /// there was no spare (the caller backs off) or nothing was taken.
    pub async fn refuse(&self, l: &TcpListener) -> bool {
        let had = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .is_some();
        if !had {
            *self.0.lock().unwrap_or_else(|e| e.into_inner()) = open_spare();
            return false;
        }
        let taken = match tokio::time::timeout(TAKE, l.accept()).await {
            Ok(Ok((stream, _))) => match stream.into_std() {
                Ok(s) => {
                    let s = socket2::Socket::from(s);
                    let _ = s.set_linger(Some(Duration::ZERO));
                    true
                }
                Err(_) => false,
            },
            _ => false,
        };
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = open_spare();
        taken
    }
}

/// Counts a refusal in `refused` and logs the first of an episode.
pub fn note_refused(refused: &AtomicU64, episode: &mut bool) {
    let n = refused.fetch_add(1, Relaxed) + 1;
    if !*episode {
        *episode = true;
        tracing::warn!(
            "no descriptor left (RLIMIT_NOFILE {}): new flows are refused (reset) until some \
             are free ({n} so far)",
            soft_limit().map_or("?".into(), |s| s.to_string())
        );
    }
}

/// An accept worked again after an episode (`refused`: the flows refused so far).
pub fn note_recovered(refused: &AtomicU64, episode: &mut bool) {
    if std::mem::take(episode) {
        tracing::info!(
            "descriptors free again ({} flows refused since start)",
            refused.load(Relaxed)
        );
    }
}
