//! Helpers of netns_package (included with `#[path]`, not a test of its own): the .deb files,
//! dpkg on the host, and the installed systemd unit read back (ExecStart, capabilities).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// What the test takes from a unit: its command line and its privileges.
#[derive(Debug)]
pub struct Unit {
    pub exec_start: Vec<String>,
    /// `CapabilityBoundingSet=` names (`CAP_NET_ADMIN`, ...).
    pub caps: Vec<String>,
    pub no_new_privs: bool,
}

/// Capability numbers (linux/capability.h) of the names a unit may list.
const CAP_BITS: [(&str, u32); 8] = [
    ("CAP_NET_BIND_SERVICE", 10),
    ("CAP_NET_BROADCAST", 11),
    ("CAP_NET_ADMIN", 12),
    ("CAP_NET_RAW", 13),
    ("CAP_SYS_ADMIN", 21),
    ("CAP_SYS_RESOURCE", 24),
    ("CAP_PERFMON", 38),
    ("CAP_BPF", 39),
];

/// The test process's own capability bounding set (`CapBnd:` of /proc/self/status).
fn own_bounding_set() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix("CapBnd:"))
        .expect("CapBnd in /proc/self/status")
        .trim();
    u64::from_str_radix(hex, 16).expect("CapBnd is hex")
}

impl Unit {
    pub fn parse(text: &str) -> Unit {
        let values = |key: &str| -> Vec<String> {
            text.lines()
                .filter_map(|l| l.trim().strip_prefix(key)?.strip_prefix('='))
                .map(|v| v.trim().to_string())
                .collect()
        };
        let exec = values("ExecStart");
        assert_eq!(exec.len(), 1, "one ExecStart: {exec:?}");
        let caps = values("CapabilityBoundingSet");
        assert_eq!(caps.len(), 1, "one CapabilityBoundingSet: {caps:?}");
        Unit {
            exec_start: exec[0].split_whitespace().map(str::to_string).collect(),
            caps: caps[0].split_whitespace().map(str::to_string).collect(),
            no_new_privs: values("NoNewPrivileges") == ["yes"],
        }
    }

    /// ExecStart for instance `inst` (`%i`) with /etc/starpep replaced by `etc`.
    pub fn exec_start(&self, inst: &str, etc: &Path) -> Vec<String> {
        let argv: Vec<String> = self
            .exec_start
            .iter()
            .map(|w| w.replace("%i", inst).replace("%I", inst))
            .collect();
        assert!(
            argv[0].starts_with("/usr/bin/"),
            "plain absolute binary: {argv:?}"
        );
        let conf = format!("{ETC}/{inst}.conf");
        assert_eq!(argv.iter().filter(|w| **w == conf).count(), 1, "{argv:?}");
        argv.into_iter()
            .map(|w| {
                if w == conf {
                    etc.join(format!("{inst}.conf")).display().to_string()
                } else {
                    w
                }
            })
            .collect()
    }

    /// `argv` under the unit's privileges as systemd would apply them to a root service:
    /// `setpriv` limits the bounding set (root then holds exactly those capabilities, and so
    /// do the `ip`/`nft` it runs), clears the inheritable and ambient sets, sets no_new_privs.
    pub fn sandboxed(&self, argv: &[String]) -> Vec<String> {
        let keep: Vec<String> = self
            .caps
            .iter()
            .map(|c| {
                let name = c.strip_prefix("CAP_").expect("CAP_ name").to_lowercase();
                format!("+{name}")
            })
            .collect();
        let mut v = vec![
            "setpriv".to_string(),
            format!("--bounding-set=-all,{}", keep.join(",")),
            "--inh-caps=-all".to_string(),
            "--ambient-caps=-all".to_string(),
        ];
        if self.no_new_privs {
            v.push("--no-new-privs".to_string());
        }
        v.push("--".to_string());
        v.extend(argv.iter().cloned());
        v
    }

    /// The capability mask the unit allows.
    pub fn mask(&self) -> u64 {
        self.caps
            .iter()
            .map(|c| {
                let bit = CAP_BITS
                    .iter()
                    .find(|(n, _)| n == c)
                    .unwrap_or_else(|| panic!("{c}: add it to CAP_BITS"))
                    .1;
                1u64 << bit
            })
            .fold(0, |a, b| a | b)
    }

    /// The running daemon is `/usr/bin/<p>` with exactly the unit's capabilities.
    pub fn check_process(&self, d: &Proc, p: &str) {
        let pid = d.pid().expect("pid");
        let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap();
        assert_eq!(exe, PathBuf::from(format!("/usr/bin/{p}")));
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |k: &str| -> String {
            status
                .lines()
                .find_map(|l| l.strip_prefix(k))
                .unwrap_or_else(|| panic!("{k} in {status}"))
                .trim()
                .to_string()
        };
        // systemd (and setpriv here) can only keep what it holds itself: a container's bounding
        // set may lack some of the unit's capabilities (this CI machine has no CAP_SYS_RESOURCE).
        let want = format!("{:016x}", self.mask() & own_bounding_set());
        for k in ["CapEff:", "CapPrm:", "CapBnd:"] {
            assert_eq!(field(k), want, "{p} {k}");
        }
        if self.no_new_privs {
            assert_eq!(field("NoNewPrivs:"), "1");
        }
    }
}
