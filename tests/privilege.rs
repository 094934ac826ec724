//! Running a daemon as an unprivileged user with ambient capabilities (as systemd does for a unit
//! with `User=` and `AmbientCapabilities=`), and checking what a running process holds.

use std::path::{Path, PathBuf};

/// Capability numbers (linux/capability.h) of the names a unit or a test may list.
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

/// The bit of capability `name` (`CAP_NET_ADMIN`, ...).
pub fn cap_bit(name: &str) -> u64 {
    let bit = CAP_BITS
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("{name}: add it to CAP_BITS"))
        .1;
    1 << bit
}

/// The mask of capabilities `names`.
pub fn cap_mask<S: AsRef<str>>(names: &[S]) -> u64 {
    names.iter().fold(0, |m, n| m | cap_bit(n.as_ref()))
}

/// The test process's own capability bounding set (`CapBnd:` of /proc/self/status): what it
/// (or systemd in a container like this one, which lacks CAP_SYS_RESOURCE) can grant at all.
pub fn own_bounding_set() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    status_hex(&status, "CapBnd:")
}

fn status_hex(status: &str, key: &str) -> u64 {
    let hex = status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .unwrap_or_else(|| panic!("{key} in {status}"))
        .trim();
    u64::from_str_radix(hex, 16).expect("hex capability set")
}

/// Who a daemon runs as: a user and group id, its capabilities (raised as ambient ones, also
/// inherited by the `ip` and `nft` it runs), and no_new_privs.
#[derive(Debug, Clone)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    /// `CAP_` names; those outside the test's own bounding set are left out (nobody could grant
    /// them here).
    pub caps: Vec<String>,
    pub no_new_privs: bool,
}

impl RunAs {
    /// The capabilities the process will hold.
    pub fn mask(&self) -> u64 {
        cap_mask(&self.caps) & own_bounding_set()
    }

    /// `argv` under `setpriv` as this user with only these capabilities (bounding, inheritable,
    /// ambient), the rest of the environment as the caller's. `/dev/net/tun` must be usable by
    /// the user: Debian's udev rules make it 0666; a machine without udev (this container: 0600)
    /// gets a 0666 node bind-mounted over it in a private mount namespace of the process, made
    /// in `dir`.
    pub fn argv(&self, dir: &Path, argv: &[String]) -> Vec<String> {
        let caps: Vec<String> = CAP_BITS
            .iter()
            .filter(|(n, b)| self.caps.iter().any(|c| c == n) && own_bounding_set() >> b & 1 == 1)
            .map(|(n, _)| format!("+{}", n.trim_start_matches("CAP_").to_lowercase()))
            .collect();
        let set = if caps.is_empty() {
            "-all".to_string()
        } else {
            format!("-all,{}", caps.join(","))
        };
        let mut v = Vec::new();
        if let Some(node) = tun_node(dir) {
            v.extend(
                [
                    "unshare",
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    "mount --bind \"$0\" /dev/net/tun && exec \"$@\"",
                ]
                .map(String::from),
            );
            v.push(node.display().to_string());
        }
        v.extend([
            "setpriv".to_string(),
            format!("--reuid={}", self.uid),
            format!("--regid={}", self.gid),
            "--clear-groups".to_string(),
            format!("--bounding-set={set}"),
            format!("--inh-caps={set}"),
            format!("--ambient-caps={set}"),
        ]);
        if self.no_new_privs {
            v.push("--no-new-privs".to_string());
        }
        v.push("--".to_string());
        v.extend(argv.iter().cloned());
        v
    }

    /// Process `pid` runs as this user with exactly these capabilities (effective, permitted,
    /// ambient and bounding), and with no_new_privs if asked.
    pub fn check(&self, pid: u32, what: &str) {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let ids = |k: &str| -> Vec<String> {
            let l = status.lines().find_map(|l| l.strip_prefix(k)).unwrap();
            l.split_whitespace().map(str::to_string).collect()
        };
        assert_eq!(ids("Uid:"), vec![self.uid.to_string(); 4], "{what} Uid");
        assert_eq!(ids("Gid:"), vec![self.gid.to_string(); 4], "{what} Gid");
        for k in ["CapEff:", "CapPrm:", "CapAmb:", "CapBnd:"] {
            assert_eq!(
                status_hex(&status, k),
                self.mask(),
                "{what} {k} (want {:016x})",
                self.mask()
            );
        }
        if self.no_new_privs {
            assert_eq!(ids("NoNewPrivs:"), ["1"], "{what}");
        }
    }
}

/// A 0666 TUN device node in `dir` when /dev/net/tun is not usable by every user, else `None`.
fn tun_node(dir: &Path) -> Option<PathBuf> {
    use nix::sys::stat::{mknod, Mode, SFlag};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let md = std::fs::metadata("/dev/net/tun").expect("/dev/net/tun");
    if md.mode() & 0o006 == 0o006 {
        return None;
    }
    let node = dir.join("net-tun");
    if !node.exists() {
        mknod(
            &node,
            SFlag::S_IFCHR,
            Mode::from_bits_truncate(0o666),
            md.rdev(),
        )
        .unwrap_or_else(|e| panic!("mknod {}: {e}", node.display()));
        std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o666)).unwrap();
    }
    Some(node)
}

/// Makes `path` owned by `uid`:`gid` (a config the daemon's user reads).
pub fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid))
        .unwrap_or_else(|e| panic!("chown {}: {e}", path.display()));
}
