//! Helpers of netns_package (included with `#[path]`, not a test of its own): the .deb files,
//! dpkg on the host, and the installed systemd unit read back (commands, user, capabilities).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use starpep_tests::privilege::RunAs;
use starpep_tests::Proc;

/// Where the packages put the configs and the units.
pub const ETC: &str = "/etc/starpep";
pub const UNIT_DIR: &str = "/usr/lib/systemd/system";

/// The workspace root.
pub fn repo() -> PathBuf {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR"));
    tests.parent().unwrap_or(tests).to_path_buf()
}

/// `target/debian/<pkg>_*.deb` for every package; `None` (with a printed reason) when one is
/// missing, a panic instead when `STARPEP_TEST_PACKAGES=1`.
pub fn debs(pkgs: &[&str]) -> Option<Vec<PathBuf>> {
    let dir = repo().join("target/debian");
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for p in pkgs {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| {
                let n = f.file_name().unwrap().to_string_lossy().into_owned();
                n.starts_with(&format!("{p}_")) && n.ends_with(".deb")
            })
            .collect();
        v.sort();
        match v.len() {
            0 => missing.push(*p),
            1 => found.push(v.remove(0)),
            _ => panic!("several {p} packages in {}: {v:?}", dir.display()),
        }
    }
    if missing.is_empty() {
        return Some(found);
    }
    let why = format!(
        "{missing:?} not in {} (bash scripts/package.sh builds them)",
        dir.display()
    );
    if std::env::var("STARPEP_TEST_PACKAGES").is_ok_and(|v| v == "1") {
        panic!("STARPEP_TEST_PACKAGES=1: {why}");
    }
    eprintln!("skipping the package test: {why}; STARPEP_TEST_PACKAGES=1 makes this a failure");
    None
}

/// Runs a command on the host (not in a namespace).
pub fn host<S: AsRef<str>>(prog: &str, args: &[S]) -> Output {
    let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    Command::new(prog)
        .args(&args)
        .output()
        .unwrap_or_else(|e| panic!("{prog} {args:?}: {e}"))
}

/// [`host`] that must succeed; its stdout.
pub fn host_ok<S: AsRef<str>>(prog: &str, args: &[S]) -> String {
    let out = host(prog, args);
    let argv: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    assert!(
        out.status.success(),
        "{prog} {argv:?}: {:?}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn on_path(prog: &str) -> bool {
    host("sh", &["-c", &format!("command -v {prog}")])
        .status
        .success()
}

/// Whether dpkg has `pkg` installed.
pub fn installed(pkg: &str) -> bool {
    let out = host("dpkg-query", &["-W", "-f", "${Status}", pkg]);
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains("ok installed")
}

/// Every path a .deb holds (files and directories), as absolute paths.
pub fn deb_paths(deb: &Path) -> Vec<PathBuf> {
    host_ok("dpkg-deb", &["-c", deb.to_str().unwrap()])
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(|p| PathBuf::from(p.trim_start_matches('.').trim_end_matches('/')))
        .filter(|p| p != Path::new(""))
        .collect()
}

/// Purges the packages when dropped (a failed test leaves the machine as it found it).
pub struct Purge<const N: usize>(pub [&'static str; N]);

impl<const N: usize> Drop for Purge<N> {
    fn drop(&mut self) {
        if self.0.iter().any(|p| installed(p)) {
            let mut args = vec!["--purge"];
            args.extend(self.0);
            let out = host("dpkg", &args);
            eprintln!("cleanup: dpkg --purge: {:?}", out.status);
        }
    }
}

pub fn mode_of(p: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .permissions()
        .mode()
}

pub fn chmod(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// The installed template unit of package `p`.
pub fn unit_text(p: &str) -> String {
    let f = format!("{UNIT_DIR}/{p}@.service");
    std::fs::read_to_string(&f).unwrap_or_else(|e| panic!("{f}: {e}"))
}

/// What the test takes from a unit: its command lines and its privileges.
#[derive(Debug)]
pub struct Unit {
    pub exec_start: Vec<String>,
    /// `ExecStartPre=` and `ExecReload=` lines, in order (a `+` prefix kept).
    pub exec_start_pre: Vec<String>,
    pub exec_reload: Vec<String>,
    /// `User=` and `Group=`.
    pub user: String,
    pub group: String,
    /// `AmbientCapabilities=` names (`CAP_NET_ADMIN`, ...), the same as `CapabilityBoundingSet=`.
    pub caps: Vec<String>,
    pub no_new_privs: bool,
    /// `RuntimeDirectory=` names (under /run) and `RuntimeDirectoryMode=` (octal, 0755 unset).
    pub runtime_dirs: Vec<String>,
    pub runtime_mode: u32,
}

impl Unit {
    pub fn parse(text: &str) -> Unit {
        let values = |key: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
                .map(|v| v.trim().to_string())
                .collect()
        };
        let one = |key: &str| -> String {
            let v = values(key);
            assert_eq!(v.len(), 1, "one {key}: {v:?}");
            v[0].clone()
        };
        let words =
            |v: String| -> Vec<String> { v.split_whitespace().map(str::to_string).collect() };
        let caps = words(one("AmbientCapabilities"));
        let mut bounding = words(one("CapabilityBoundingSet"));
        let mut ambient = caps.clone();
        bounding.sort();
        ambient.sort();
        assert_eq!(ambient, bounding, "ambient = bounding capabilities");
        Unit {
            exec_start: words(one("ExecStart")),
            exec_start_pre: values("ExecStartPre"),
            exec_reload: values("ExecReload"),
            user: one("User"),
            group: one("Group"),
            caps,
            no_new_privs: values("NoNewPrivileges") == ["yes"],
            runtime_dirs: values("RuntimeDirectory")
                .into_iter()
                .flat_map(words)
                .collect(),
            runtime_mode: values("RuntimeDirectoryMode")
                .first()
                .map_or(0o755, |m| u32::from_str_radix(m, 8).expect("octal mode")),
        }
    }

    /// ExecStart for instance `inst` (`%i`) with /etc/starpep replaced by `etc`.
    pub fn exec_start(&self, inst: &str, etc: &Path) -> Vec<String> {
        let argv = command(&self.exec_start.join(" "), inst, etc);
        let conf = etc.join(format!("{inst}.conf")).display().to_string();
        assert_eq!(argv.iter().filter(|w| **w == conf).count(), 1, "{argv:?}");
        argv
    }

    /// The commands systemd runs as root before ExecStart (`+`), for `inst` in `etc`.
    pub fn root_pre(&self, inst: &str, etc: &Path) -> Vec<Vec<String>> {
        self.exec_start_pre
            .iter()
            .map(|l| {
                let l = l
                    .strip_prefix('+')
                    .unwrap_or_else(|| panic!("not as root: {l}"));
                command(l, inst, etc)
            })
            .collect()
    }

    /// ExecReload's lines for `inst` in `etc`: (as root, argv).
    pub fn reload(&self, inst: &str, etc: &Path) -> Vec<(bool, Vec<String>)> {
        self.exec_reload
            .iter()
            .map(|l| match l.strip_prefix('+') {
                Some(l) => (true, command(l, inst, etc)),
                None => (false, command(l, inst, etc)),
            })
            .collect()
    }

    /// Who the unit runs the daemon as: its user (which the package made) and capabilities.
    pub fn run_as(&self) -> RunAs {
        let id = |db: &str, name: &str| -> u32 {
            let line = host_ok("getent", &[db, name]);
            line.split(':').nth(2).unwrap().parse().unwrap()
        };
        RunAs {
            uid: id("passwd", &self.user),
            gid: id("group", &self.group),
            caps: self.caps.clone(),
            no_new_privs: self.no_new_privs,
        }
    }

    /// The running daemon is `/usr/bin/<p>`, as the unit's user with exactly its capabilities
    /// (within this machine's bounding set).
    pub fn check_process(&self, d: &Proc, p: &str) {
        let pid = d.pid().expect("pid");
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert_eq!(exe, PathBuf::from(format!("/usr/bin/{p}")));
        self.run_as().check(pid, p);
    }
}

/// A unit's command line for instance `inst` (`%i`), /etc/starpep replaced by `etc`; the
/// program is a plain absolute path.
fn command(line: &str, inst: &str, etc: &Path) -> Vec<String> {
    let etc = etc.display().to_string();
    let argv: Vec<String> = line
        .split_whitespace()
        .map(|w| w.replace("%i", inst).replace("%I", inst).replace(ETC, &etc))
        .collect();
    assert!(
        argv[0].starts_with("/usr/bin/") || argv[0].starts_with("/bin/"),
        "plain absolute binary: {argv:?}"
    );
    argv
}

/// The unit's `RuntimeDirectory=` directories made as systemd makes them before ExecStart (owned
/// by the unit's user, with its mode); those the test made go when dropped.
pub struct RuntimeDirs(Vec<PathBuf>);

impl RuntimeDirs {
    pub fn create(unit: &Unit) -> RuntimeDirs {
        let who = unit.run_as();
        let mut made = Vec::new();
        for d in &unit.runtime_dirs {
            let p = Path::new("/run").join(d);
            if !p.exists() {
                std::fs::create_dir_all(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                made.push(p.clone());
            }
            std::os::unix::fs::chown(&p, Some(who.uid), Some(who.gid)).unwrap();
            chmod(&p, unit.runtime_mode);
        }
        RuntimeDirs(made)
    }
}

impl Drop for RuntimeDirs {
    fn drop(&mut self) {
        for p in &self.0 {
            let _ = std::fs::remove_dir_all(p);
        }
    }
}
