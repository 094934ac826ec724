//! A process started inside a test namespace: output to a log file, stopped on drop.

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

use super::TopoError;

/// A running process; SIGTERM then SIGKILL when dropped. Stdout and stderr go to `log_path`.
pub struct Proc {
    label: String,
    child: Option<Child>,
    log_path: PathBuf,
}

impl Proc {
    pub(super) fn start(
        label: &str,
        mut cmd: std::process::Command,
        log_path: PathBuf,
    ) -> Result<Proc, TopoError> {
        let log = File::create(&log_path).map_err(|e| TopoError::Io {
            what: format!("create log {}", log_path.display()),
            source: e,
        })?;
        let log2 = log.try_clone().map_err(|e| TopoError::Io {
            what: format!("dup log {}", log_path.display()),
            source: e,
        })?;
        cmd.stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log2);
        let child = cmd.spawn().map_err(|e| TopoError::Spawn {
            what: format!("{label}: {cmd:?}"),
            source: e,
        })?;
        Ok(Proc {
            label: label.to_string(),
            child: Some(child),
            log_path,
        })
    }

    pub fn label(&self) -> &str {
        &self.label
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// Everything the process wrote so far (stdout and stderr interleaved).
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log_path).unwrap_or_default()
    }

    pub fn log_path(&self) -> &std::path::Path {
        &self.log_path
    }

    /// Whether the process has exited (without reaping the status for later callers).
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Waits up to `timeout` for the process to exit by itself.
    pub fn wait_timeout(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + timeout;
        loop {
            if let Some(s) = self.try_status() {
                return Some(s);
            }
            if Instant::now() >= end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Sends `sig` to the process (e.g. SIGINT for a graceful daemon shutdown).
    pub fn signal(&self, sig: Signal) {
        if let Some(pid) = self.pid() {
            let _ = kill(Pid::from_raw(pid as i32), sig);
        }
    }

    /// SIGTERM, up to 3 s grace, then SIGKILL. Returns the exit status.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.try_status().or_else(|| {
            self.signal(Signal::SIGTERM);
            self.wait_timeout(Duration::from_secs(3)).or_else(|| {
                self.signal(Signal::SIGKILL);
                self.child.as_mut().and_then(|c| c.wait().ok())
            })
        })
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}
