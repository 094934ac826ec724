//! Config file permissions (pure): a config holds the interface's private key, so `run` refuses a
//! file whose mode gives group or others any access, as ssh does for a private key.
//!
//! wg-quick only warns ("is world accessible"); the daemons refuse, and the error names the file,
//! its mode and the fix. The caller reads the mode (`stat`) and passes it in.

use std::path::{Path, PathBuf};

/// The permission bits that must be clear: every group and other bit (`chmod 600` clears them).
pub const GROUP_OTHER_BITS: u32 = 0o077;

/// A config file that group or others may read, write or execute.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{}: mode {:04o} gives group/others access to the private key (run `chmod 600 {}`)",
    file.display(), mode & 0o7777, file.display()
)]
pub struct PermsError {
    pub file: PathBuf,
    /// The file's `st_mode` (only the permission bits are shown).
    pub mode: u32,
}

/// Ok when `mode` (an `st_mode`) gives group and others no access to `file`.
pub fn check_private(file: &Path, mode: u32) -> Result<(), PermsError> {
    if mode & GROUP_OTHER_BITS == 0 {
        Ok(())
    } else {
        Err(PermsError {
            file: file.to_path_buf(),
            mode,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const REG: u32 = 0o100_000; // S_IFREG

    #[test]
    fn owner_only_modes_pass() {
        for m in [0o600, 0o400, 0o700, 0o000, 0o4600] {
            assert_eq!(check_private(Path::new("a.conf"), REG | m), Ok(()), "{m:o}");
        }
    }

    #[test]
    fn any_group_or_other_bit_is_refused() {
        for m in [
            0o644, 0o640, 0o604, 0o660, 0o606, 0o610, 0o601, 0o666, 0o777,
        ] {
            let e = check_private(Path::new("/etc/starpep/pop0.conf"), REG | m).unwrap_err();
            assert_eq!(e.mode, REG | m);
        }
    }

    #[test]
    fn the_error_names_the_file_its_mode_and_the_fix() {
        let e = check_private(Path::new("/etc/starpep/pop0.conf"), REG | 0o644)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "/etc/starpep/pop0.conf: mode 0644 gives group/others access to the private key \
             (run `chmod 600 /etc/starpep/pop0.conf`)"
        );
    }
}
