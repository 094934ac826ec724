//! Build script of both daemon binaries (build time, outside the data path): sets
//! `STARPEP_COMMIT`, the commit `--version` prints.
//!
//! Sources, first that answers: the `STARPEP_COMMIT` environment variable at build time (a
//! packager's override); `git rev-parse --short HEAD` in a git checkout; `packaging/commit`,
//! which `git archive` fills in (`export-subst` in `.gitattributes`), so a release tarball
//! without `.git` still knows its commit; otherwise `unknown`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let subst = manifest.join("../packaging/commit");
    println!("cargo:rerun-if-env-changed=STARPEP_COMMIT");
    println!("cargo:rerun-if-changed={}", subst.display());
    let commit = std::env::var("STARPEP_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .map(|c| c.trim().to_string())
        .or_else(|| from_git(&manifest))
        .or_else(|| from_archive(&subst))
        .unwrap_or_else(|| "unknown".to_string());
    println!("cargo:rustc-env=STARPEP_COMMIT={commit}");
}

/// `git rev-parse --short HEAD`, and the files that change when HEAD moves (rerun triggers).
fn from_git(dir: &Path) -> Option<String> {
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .args(args)
            .current_dir(dir)
            .output()
            .ok()?;
        let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (out.status.success() && !s.is_empty()).then_some(s)
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let mut watch = vec![git(&["rev-parse", "--git-path", "HEAD"])?];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.extend(git(&["rev-parse", "--git-path", &r]));
    }
    watch.extend(git(&["rev-parse", "--git-path", "packed-refs"]));
    for w in watch {
        let p = dir.join(w);
        // A missing file would make cargo rerun this script on every build.
        if p.exists() {
            println!("cargo:rerun-if-changed={}", p.display());
        }
    }
    Some(commit)
}

/// The commit `git archive` wrote into `packaging/commit` (unsubstituted in a checkout).
fn from_archive(path: &Path) -> Option<String> {
    let s = std::fs::read_to_string(path).ok()?;
    let s = s.trim();
    (!s.is_empty() && !s.contains('$')).then(|| s.to_string())
}
