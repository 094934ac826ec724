//! Thin wrappers over `ip netns`: create, delete (killing what runs inside), exec and spawn,
//! and entering one from a thread.

use std::ffi::OsStr;
use std::process::{Command, Output, Stdio};

use super::TopoError;

/// Runs `ip ARGS` in the root namespace; an error carries the command line and its stderr.
pub fn ip<S: AsRef<OsStr>>(args: &[S]) -> Result<(), TopoError> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| TopoError::Spawn {
            what: render("ip", args),
            source: e,
        })?;
    check(render("ip", args), out).map(|_| ())
}

/// Turns a finished command into its stdout, or a `TopoError::Failed` with its stderr.
pub fn check(what: String, out: Output) -> Result<String, TopoError> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(TopoError::Failed {
            what,
            status: out.status.code(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// The command line as text, for error messages and logs.
pub fn render<S: AsRef<OsStr>>(prog: &str, args: &[S]) -> String {
    let mut s = prog.to_string();
    for a in args {
        s.push(' ');
        s.push_str(&a.as_ref().to_string_lossy());
    }
    s
}

/// A `Command` that runs `args` inside namespace `ns` (`ip netns exec NS ...`).
pub fn command<S: AsRef<OsStr>>(ns: &str, args: &[S]) -> Command {
    let mut c = Command::new("ip");
    c.args(["netns", "exec", ns]).args(args);
    c
}

pub fn add(ns: &str) -> Result<(), TopoError> {
    ip(&["netns", "add", ns])
}

/// Removes the daemons' undo records of namespace `ns` (`/run/starpep/<owner>.<netns inode>.json`):
/// the processes killed with the namespace leave theirs, and nothing will replay them.
fn remove_undo_records(ns: &str) {
    use std::os::unix::fs::MetadataExt;
    let Ok(ino) = std::fs::metadata(std::path::Path::new("/run/netns").join(ns)).map(|m| m.ino())
    else {
        return;
    };
    let suffix = format!(".{ino}.json");
    let dir = std::path::Path::new("/run/starpep");
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.file_name().to_string_lossy().ends_with(&suffix) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// Kills every process inside `ns` (SIGKILL), then deletes the namespace and the daemons' undo
/// records of it. Never fails loudly: cleanup must go on for the other namespaces; returns
/// whether the namespace is gone.
pub fn delete(ns: &str) -> bool {
    if let Ok(out) = Command::new("ip").args(["netns", "pids", ns]).output() {
        for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
            if let Ok(pid) = pid.parse::<i32>() {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
    }
    remove_undo_records(ns);
    for _ in 0..50 {
        let ok = Command::new("ip")
            .args(["netns", "del", ns])
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if ok || !exists(ns) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    !exists(ns)
}

pub fn exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Namespaces present on the machine (`ip netns list`, first word of each line).
pub fn list() -> Vec<String> {
    Command::new("ip")
        .args(["netns", "list"])
        .output()
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.split_whitespace().next().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs `f` on a thread that entered namespace `ns` (sockets it creates live there).
pub fn run_in<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> Result<T, TopoError> {
    let path = format!("/run/netns/{ns}");
    let what = format!("entering {path}");
    std::thread::spawn(move || -> std::io::Result<T> {
        let fd = std::fs::File::open(&path)?;
        nix::sched::setns(
            std::os::fd::AsFd::as_fd(&fd),
            nix::sched::CloneFlags::CLONE_NEWNET,
        )
        .map_err(std::io::Error::from)?;
        Ok(f())
    })
    .join()
    .map_err(|_| TopoError::Io {
        what: what.clone(),
        source: std::io::Error::other("namespace thread panicked"),
    })?
    .map_err(|source| TopoError::Io { what, source })
}
