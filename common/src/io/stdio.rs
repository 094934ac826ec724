//! What the daemon's standard streams are connected to (a terminal, the journal, a file), for
//! the log style and `genkey`'s warning.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::os::unix::fs::MetadataExt;

/// Device and inode of an open descriptor (`fstat`).
fn dev_ino(fd: std::os::fd::BorrowedFd<'_>) -> Option<(u64, u64)> {
    let f = std::fs::File::from(fd.try_clone_to_owned().ok()?);
    let md = f.metadata().ok()?;
    Some((md.dev(), md.ino()))
}

/// Whether stderr is a terminal.
pub fn stderr_is_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// Whether stderr is the journal's stream: systemd sets `JOURNAL_STREAM=DEV:INO` for a service
/// whose stdout or stderr goes to journald, and the pair matches stderr's own.
pub fn stderr_is_journal() -> bool {
    let Some(want) = std::env::var("JOURNAL_STREAM")
        .ok()
        .and_then(|v| parse_journal_stream(&v))
    else {
        return false;
    };
    dev_ino(std::io::stderr().as_fd()) == Some(want)
}

/// `DEV:INO` of `JOURNAL_STREAM` (both decimal).
pub fn parse_journal_stream(v: &str) -> Option<(u64, u64)> {
    let (d, i) = v.trim().split_once(':')?;
    Some((d.parse().ok()?, i.parse().ok()?))
}

/// Whether stdout is a regular file that others can read (`genkey` warns, as `wg genkey`).
pub fn stdout_is_world_readable_file() -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(fd) = std::io::stdout().as_fd().try_clone_to_owned() else {
        return false;
    };
    match std::fs::File::from(fd).metadata() {
        Ok(md) => md.is_file() && md.permissions().mode() & 0o007 != 0,
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn journal_stream_is_device_and_inode() {
        assert_eq!(parse_journal_stream("8:12345\n"), Some((8, 12345)));
        assert_eq!(parse_journal_stream("8-12345"), None);
        assert_eq!(parse_journal_stream("x:1"), None);
    }
}
