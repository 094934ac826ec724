//! The undo record on disk (shell of `crate::undo`): `/run/starpep/<owner>.<netns>.json`,
//! written before each change to the kernel, replayed at teardown, and replayed at the next
//! start when a dead instance left it (kill -9, crash, power cut of the process).
//!
//! `<netns>` is the inode of the network namespace, so daemons of the same interface name in
//! different namespaces keep apart. `STARPEP_RUN_DIR` overrides the directory. The caller must
//! own the name first (the control socket `@starpep/<iface>` is bound before anything here
//! runs), so a live instance's record is never replayed by another.

use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::undo::{Change, Step, UndoRecord};

use super::{cmd, IoError};

/// Where the records live (tmpfs: a reboot clears them with the state they describe).
pub const RUN_DIR: &str = "/run/starpep";

/// The record directory (`STARPEP_RUN_DIR` or [`RUN_DIR`]).
pub fn run_dir() -> PathBuf {
    std::env::var_os("STARPEP_RUN_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(RUN_DIR))
}

/// The inode of this thread's network namespace (0 if unreadable).
fn netns_id() -> u64 {
    std::fs::metadata("/proc/thread-self/ns/net")
        .map(|m| m.ino())
        .unwrap_or(0)
}

/// The record file of `owner` in this network namespace under `dir`.
pub fn record_path(dir: &Path, owner: &str) -> PathBuf {
    dir.join(format!("{owner}.{}.json", netns_id()))
}

/// Runs one undo step.
pub fn execute(step: &Step) -> Result<(), IoError> {
    match step {
        Step::Ip(args) => {
            let a: Vec<&str> = args.iter().map(String::as_str).collect();
            cmd::ip(&a).map(|_| ())
        }
        Step::Sysctl { key, value } => cmd::sysctl(key, value),
        Step::DeleteNftTable(name) => {
            cmd::run("nft", &["delete", "table", "inet", name]).map(|_| ())
        }
    }
}

/// A daemon's undo record and its file.
pub struct UndoFile {
    path: PathBuf,
    record: UndoRecord,
    /// A write failed (logged once): a crash now would leave changes behind.
    warned: bool,
}

impl UndoFile {
    /// Replays and removes what a dead instance of `owner` left in this namespace, then starts
    /// an empty record (the file is written at the first change).
    pub fn take_over(owner: &str) -> UndoFile {
        Self::take_over_in(&run_dir(), owner, execute)
    }

    /// [`UndoFile::take_over`] in `dir`, running steps with `exec`.
    pub fn take_over_in(
        dir: &Path,
        owner: &str,
        mut exec: impl FnMut(&Step) -> Result<(), IoError>,
    ) -> UndoFile {
        let path = record_path(dir, owner);
        match std::fs::read_to_string(&path) {
            Ok(text) => {
                match UndoRecord::from_json(&text) {
                    Ok(stale) => {
                        tracing::warn!(
                            "{owner}: undoing {} change(s) a previous instance (pid {}) left \
                             ({})",
                            stale.changes().len(),
                            stale.pid,
                            path.display()
                        );
                        replay(&stale, &mut exec);
                    }
                    Err(e) => tracing::warn!("{}: {e}; ignored", path.display()),
                }
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!("remove {}: {e}", path.display());
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("read {}: {e}", path.display()),
        }
        UndoFile {
            path,
            record: UndoRecord::new(owner, std::process::id()),
            warned: false,
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn record(&self) -> &UndoRecord {
        &self.record
    }

    /// Records `c` and writes the file; call before making the change.
    pub fn note(&mut self, c: Change) {
        if self.record.record(c) {
            self.save();
        }
    }

    /// Forgets `c` (undone, or never made) and writes the file.
    pub fn forget(&mut self, c: &Change) {
        if self.record.forget(c) {
            self.save();
        }
    }

    /// Undoes every recorded change, newest first (failures are logged), and removes the file.
    pub fn undo_all(&mut self) {
        self.undo_all_with(execute);
    }

    /// [`UndoFile::undo_all`] running steps with `exec`.
    pub fn undo_all_with(&mut self, mut exec: impl FnMut(&Step) -> Result<(), IoError>) {
        replay(&self.record, &mut exec);
        self.record.clear();
        match std::fs::remove_file(&self.path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => tracing::warn!("remove {}: {e}", self.path.display()),
        }
    }

    fn save(&mut self) {
        if let Err(e) = self.write() {
            if !self.warned {
                tracing::warn!(
                    "undo record {}: {e} (a crash now would leave changes behind)",
                    self.path.display()
                );
                self.warned = true;
            }
        }
    }

    /// Writes the record atomically (temporary file + rename).
    fn write(&self) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let tmp = self.path.with_extension("json.tmp");
        std::fs::write(&tmp, self.record.to_json())?;
        std::fs::rename(&tmp, &self.path)
    }
}

fn replay(r: &UndoRecord, exec: &mut impl FnMut(&Step) -> Result<(), IoError>) {
    let (steps, refused) = r.undo_steps();
    for c in refused {
        tracing::warn!("{}: not replaying {c:?} (not an undo step)", r.owner);
    }
    for s in steps {
        if let Err(e) = exec(&s) {
            tracing::debug!("undo {}: {e}", r.owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(tag: &str) -> PathBuf {
        std::env::temp_dir().join(format!("starpep-undo-{tag}-{}", std::process::id()))
    }

    #[test]
    fn a_dead_instances_record_is_replayed_once_and_a_clean_stop_leaves_no_file() {
        let d = dir("replay");
        let _ = std::fs::remove_dir_all(&d);
        let sysctl = Change::Sysctl {
            key: "net.ipv4.tcp_shrink_window".into(),
            old: "0".into(),
        };
        let table = Change::NftTable {
            name: "starpep_t".into(),
        };
        // The first instance records two changes, then "dies" (the file stays).
        let mut first = UndoFile::take_over_in(&d, "t", |_| panic!("nothing to replay"));
        first.note(sysctl.clone());
        first.note(table.clone());
        assert!(first.path().exists());
        drop(first);
        // The next one replays them, newest first, and starts an empty record.
        let mut ran = Vec::new();
        let mut next = UndoFile::take_over_in(&d, "t", |s| {
            ran.push(s.clone());
            Ok(())
        });
        assert_eq!(ran, vec![table.step(), sysctl.step()]);
        assert!(!next.path().exists() && next.record().is_empty());
        next.note(sysctl.clone());
        next.forget(&sysctl);
        assert!(next.record().is_empty());
        next.note(table.clone());
        let mut undone = Vec::new();
        next.undo_all_with(|s| {
            undone.push(s.clone());
            Err(IoError::sys(
                "x",
                std::io::Error::other("failures are logged"),
            ))
        });
        assert_eq!(undone, vec![table.step()]);
        assert!(!next.path().exists());
        // Nothing is replayed twice.
        UndoFile::take_over_in(&d, "t", |_| panic!("replayed twice"));
        // A damaged file is ignored and removed.
        std::fs::write(record_path(&d, "t"), "{").unwrap();
        UndoFile::take_over_in(&d, "t", |_| panic!("damaged file replayed"));
        assert!(!record_path(&d, "t").exists());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn records_are_per_owner_and_per_namespace() {
        let d = Path::new("/run/x");
        let a = record_path(d, "box");
        assert_ne!(a, record_path(d, "starpep_box"));
        let name = a.file_name().unwrap().to_string_lossy().to_string();
        assert!(
            name.starts_with("box.") && name.ends_with(".json"),
            "{name}"
        );
        assert_eq!(name, format!("box.{}.json", netns_id()));
        assert_ne!(netns_id(), 0);
    }
}
