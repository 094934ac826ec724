//! The Debian packages end to end (root, netns; `target/debian/*.deb` from scripts/package.sh):
//! `dpkg -i` both, files, units and the user starpep in place, `systemd-analyze verify`, the
//! installed daemons run as their unit's ExecStartPre and ExecStart say (as its User= with its
//! AmbientCapabilities, CapabilityBoundingSet and NoNewPrivileges, applied by setpriv) on a
//! packaged example config, a sha256-checked transfer split by both PEPs, ExecReload, then
//! `dpkg -r` and `--purge` leave nothing behind (the user included).
//!
//! Without the packages the test prints why and passes, unless `STARPEP_TEST_PACKAGES=1` (CI),
//! which makes their absence a failure. It refuses to run where the packages are installed
//! already (it purges them at the end).

#[path = "netns_pep_common.rs"]
mod common;

#[path = "netns_package_common.rs"]
mod pkg;

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{checked, sa};
use pkg::*;

/// The user the units run the daemons as (made by the packages' postinst).
const USER: &str = "starpep";
use starpep_tests::{addr, require_root, Node, Proc, TopoSpec, Topology};

/// (package = binary, packaged example config, instance = interface name, node).
const PKGS: [(&str, &str, &str, Node); 2] = [
    ("starpep-pop", "pop-pep.conf", "pkgpop", Node::Pop),
    ("starpep-client", "box-pep.conf", "pkgbox", Node::Box),
];

#[test]
fn the_packages_install_run_as_their_units_say_and_purge_clean() {
    if !require_root() {
        return;
    }
    let Some(debs) = debs(&PKGS.map(|p| p.0)) else {
        return;
    };
    for (p, ..) in PKGS {
        assert!(
            !installed(p),
            "{p} is installed on this machine: this test installs and purges it (dpkg --purge {p} first)"
        );
    }
    let etc_existed = Path::new(ETC).exists();
    let user_existed = host("getent", &["passwd", USER]).status.success();
    let listed: Vec<PathBuf> = debs.iter().flat_map(|d| deb_paths(d)).collect();
    let before: HashSet<PathBuf> = listed.iter().filter(|p| p.exists()).cloned().collect();

    let guard = Purge(PKGS.map(|p| p.0));
    let mut args = vec!["-i".to_string()];
    args.extend(debs.iter().map(|d| d.display().to_string()));
    host_ok("dpkg", &args);
    for (p, ..) in PKGS {
        installed_files_are_in_place(p);
        verify_unit(p);
    }
    let user = host_ok("getent", &["passwd", USER]);
    assert!(user.contains(":/nonexistent:"), "{USER}: no home: {user}");
    if !etc_existed {
        let mode = mode_of(Path::new(ETC));
        assert_eq!(mode & 0o7777, 0o710, "{ETC} mode {mode:o}");
        let owner = host_ok("stat", &["-c", "%U:%G", ETC]);
        assert_eq!(owner.trim(), format!("root:{USER}"), "{ETC}");
    }

    run_from_the_units();

    host_ok("dpkg", &["-r", PKGS[0].0, PKGS[1].0]);
    let left: Vec<&PathBuf> = listed
        .iter()
        .filter(|p| !before.contains(*p) && p.exists())
        .collect();
    assert!(left.is_empty(), "dpkg -r left {left:?}");
    host_ok("dpkg", &["--purge", PKGS[0].0, PKGS[1].0]);
    for (p, ..) in PKGS {
        assert!(!installed(p), "{p} still known to dpkg after --purge");
        let doc = PathBuf::from(format!("/usr/share/doc/{p}"));
        assert!(!doc.exists(), "{} left after purge", doc.display());
    }
    if !etc_existed {
        assert!(!Path::new(ETC).exists(), "{ETC} left after purge");
    }
    if !user_existed {
        for db in ["passwd", "group"] {
            let out = host("getent", &[db, USER]);
            assert!(!out.status.success(), "{db} {USER} left after purge");
        }
    }
    drop(guard);
}

/// Binary, man pages, completions, unit and examples of package `p`, as installed.
fn installed_files_are_in_place(p: &str) {
    let bin = PathBuf::from(format!("/usr/bin/{p}"));
    assert_eq!(
        mode_of(&bin) & 0o111,
        0o111,
        "{} not executable",
        bin.display()
    );
    let v = host_ok(bin.to_str().unwrap(), &["--version"]);
    assert!(v.starts_with(&format!("{p} ")), "{v}");
    for page in ["", "-run", "-check", "-genkey", "-pubkey", "-show"] {
        let gz = format!("/usr/share/man/man1/{p}{page}.1.gz");
        let roff = host_ok("gzip", &["-dc", &gz]);
        assert!(roff.contains(&format!(".TH {p}{page} 1")), "{gz}: {roff}");
    }
    for c in [
        format!("/usr/share/bash-completion/completions/{p}"),
        format!("/usr/share/zsh/vendor-completions/_{p}"),
        format!("/usr/share/fish/vendor_completions.d/{p}.fish"),
    ] {
        let text = std::fs::read_to_string(&c).unwrap_or_else(|e| panic!("{c}: {e}"));
        assert!(text.contains(p) && text.contains("genkey"), "{c}: {text}");
    }
    let unit = unit_text(p);
    assert!(
        unit.contains("ExecStart=") && unit.contains("ExecReload="),
        "{unit}"
    );
    let examples = format!("/usr/share/doc/{p}/examples");
    let side = if p == "starpep-pop" { "pop" } else { "box" };
    let mut shipped = vec!["README.md".to_string()];
    for e in std::fs::read_dir(repo().join("configs")).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        if name.starts_with(side) && name.ends_with(".conf") {
            shipped.push(name);
        }
    }
    assert!(shipped.len() >= 3, "{shipped:?}");
    for f in &shipped {
        let got = std::fs::read(format!("{examples}/{f}"))
            .unwrap_or_else(|e| panic!("{examples}/{f}: {e}"));
        assert_eq!(
            got,
            std::fs::read(repo().join("configs").join(f)).unwrap(),
            "{f}"
        );
    }
    let deps = host_ok("dpkg-query", &["-W", "-f", "${Depends}", p]);
    for d in ["iproute2", "nftables", "libc6"] {
        assert!(deps.contains(d), "{p} Depends: {deps}");
    }
}

/// `systemd-analyze verify` on an instance of the installed template, when systemd-analyze is
/// there: no warning about our unit (unknown keys, missing binary or man pages).
fn verify_unit(p: &str) {
    if !on_path("systemd-analyze") {
        eprintln!("systemd-analyze not installed: {p}@.service not verified");
        return;
    }
    let instance = format!("{UNIT_DIR}/{p}@verify0.service");
    let out = host("systemd-analyze", &["verify", &instance]);
    let err = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = err.lines().filter(|l| l.contains(p)).collect();
    assert!(
        out.status.success() && ours.is_empty(),
        "systemd-analyze verify {instance}: {:?}\n{err}",
        out.status
    );
    // The sandbox's score, for the log (offline: no running systemd needed).
    let sec = host("systemd-analyze", &["security", "--offline=yes", &instance]);
    let text = String::from_utf8_lossy(&sec.stdout);
    if let Some(l) = text.lines().find(|l| l.contains("Overall exposure level")) {
        eprintln!("{l}");
    }
}

/// Both daemons from /usr/bin, each started as its unit's ExecStartPre and ExecStart lines say
/// on a packaged example config in a private etc dir (as /etc/starpep: root:starpep 0710),
/// carry a checked transfer through the tunnel, both PEPs split it with the eBPF window
/// back-end, ExecReload succeeds, and they stop cleanly on SIGTERM.
fn run_from_the_units() {
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let etc = topo.tmpdir().join("etc-starpep");
    std::fs::create_dir(&etc).unwrap();
    let units = PKGS.map(|(p, ..)| Unit::parse(&unit_text(p)));
    let gid = units[0].run_as().gid;
    std::os::unix::fs::chown(&etc, Some(0), Some(gid)).unwrap();
    chmod(&etc, 0o710);
    let mut daemons: Vec<(Proc, &Unit, &str, &str, Node)> = Vec::new();
    let _run: Vec<RuntimeDirs> = units.iter().map(RuntimeDirs::create).collect();
    for ((p, example, inst, node), unit) in PKGS.into_iter().zip(&units) {
        let conf = etc.join(format!("{inst}.conf"));
        let text =
            std::fs::read_to_string(format!("/usr/share/doc/{p}/examples/{example}")).unwrap();
        std::fs::write(&conf, adapt(&text)).unwrap();
        chmod(&conf, 0o644);
        let argv = unit.exec_start(inst, &etc);
        let cmd = unit.run_as().argv(topo.tmpdir(), &argv);
        let pre = || {
            for c in unit.root_pre(inst, &etc) {
                host_ok(&c[0], &c[1..]);
            }
        };
        // As shipped by git (0644): refused, with the file, its mode and the fix.
        pre();
        let out = topo.exec(node, &cmd).unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{p} ran a 0644 config: {err}");
        let fix = format!("chmod 600 {}", conf.display());
        assert!(err.contains("mode 0644") && err.contains(&fix), "{err}");
        let bin = format!("/usr/bin/{p}");
        let conf_s = conf.display().to_string();
        let out = topo
            .exec(node, &[bin.as_str(), "check", "-c", &conf_s])
            .unwrap();
        assert!(out.status.success(), "check: {out:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&fix),
            "{out:?}"
        );
        chmod(&conf, 0o600);
        pre();
        let mut d = topo.spawn(node, &format!("{p}-unit"), &cmd).expect("spawn");
        wait_pep(&topo, node, p, inst, &mut d);
        unit.check_process(&d, p);
        daemons.push((d, unit, p, inst, node));
    }
    for (dst, bytes, down) in [(5601, 4_000_000, true), (5602, 1_000_000, false)] {
        let t = checked(&topo, sa(&format!("{}:{dst}", addr::SRV)), bytes, down);
        assert_eq!(t.bytes, bytes);
    }
    for (d, unit, p, inst, node) in &mut daemons {
        let pep = show(&topo, *node, p, inst)["pep"].clone();
        assert_eq!(pep["accepted"], 2, "{p} split both flows: {pep}");
        assert_eq!(pep["window_backend"], "ebpf", "{p}: {pep}");
        for (root, c) in unit.reload(inst, &etc) {
            let c = if root {
                c
            } else {
                unit.run_as().argv(topo.tmpdir(), &c)
            };
            let out = topo.exec(*node, &c).unwrap();
            assert!(out.status.success(), "ExecReload {c:?}: {out:?}");
        }
        let st = d.stop();
        assert!(st.is_some_and(|s| s.success()), "{p}: {st:?}\n{}", d.log());
        let links = topo.run_ok(*node, &["ip", "-o", "link", "show"]).unwrap();
        assert!(
            !links.contains(&format!(": {inst}:")),
            "{inst} left: {links}"
        );
    }
}

/// The example config for the test's topology: the box's Endpoint is the POP's WAN address.
fn adapt(text: &str) -> String {
    text.lines()
        .map(|l| {
            if l.trim_start().starts_with("Endpoint") {
                format!("Endpoint = {}:{}", addr::POP_WAN, addr::WG_PORT)
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// Waits until `p show INST --json` reports the PEP (the daemon is up and splitting).
fn wait_pep(topo: &Topology, node: Node, p: &str, inst: &str, d: &mut Proc) {
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(st) = d.try_status() {
            panic!("{p} exited early ({st}):\n{}", d.log());
        }
        let bin = format!("/usr/bin/{p}");
        let out = topo
            .exec(node, &[bin.as_str(), "show", inst, "--json"])
            .unwrap();
        if out.status.success() && String::from_utf8_lossy(&out.stdout).contains("\"pep\"") {
            return;
        }
        assert!(Instant::now() < end, "{p} PEP not up:\n{}", d.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn show(topo: &Topology, node: Node, p: &str, inst: &str) -> serde_json::Value {
    let bin = format!("/usr/bin/{p}");
    let out = topo
        .run_ok(node, &[bin.as_str(), "show", inst, "--json"])
        .unwrap();
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("show --json: {e}: {out}"))
}
