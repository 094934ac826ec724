//! Running system commands for interface and PEP setup (`ip`, `nft`, `sysctl`, hook scripts),
//! with errors that carry the command line and its stderr. Every command the daemons run goes
//! through here.

use std::io::Write;
use std::process::{Command, Stdio};

use super::IoError;

/// Runs `prog args...`; Ok(stdout) or an error naming the command, exit status and stderr.
pub fn run(prog: &str, args: &[&str]) -> Result<String, IoError> {
    run_input(prog, args, None)
}

/// Runs `prog args...` with `input` on its stdin (none: `/dev/null`), as [`run`].
pub fn run_input(prog: &str, args: &[&str], input: Option<&str>) -> Result<String, IoError> {
    let line = render(prog, args);
    tracing::debug!("exec: {line}");
    let mut child = Command::new(prog)
        .args(args)
        .stdin(match input {
            Some(_) => Stdio::piped(),
            None => Stdio::null(),
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| IoError::sys(format!("run `{line}`"), e))?;
    if let (Some(text), Some(mut stdin)) = (input, child.stdin.take()) {
        stdin
            .write_all(text.as_bytes())
            .map_err(|e| IoError::sys(format!("write the input of `{line}`"), e))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| IoError::sys(format!("wait for `{line}`"), e))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(IoError::Command {
            cmd: line,
            status: out
                .status
                .code()
                .map_or_else(|| "signal".to_string(), |c| c.to_string()),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// `ip ARGS...`.
pub fn ip(args: &[&str]) -> Result<String, IoError> {
    run("ip", args)
}

/// Runs a PreUp/PostUp/PreDown/PostDown hook with `sh -c`, `%i` replaced by the interface name
/// (as wg-quick does).
pub fn hook(script: &str, iface: &str) -> Result<(), IoError> {
    let script = script.replace("%i", iface);
    run("sh", &["-c", &script]).map(|_| ())
}

/// Reads a sysctl from `/proc/sys` (trimmed); `None` if it does not exist or cannot be read.
pub fn sysctl_get(key: &str) -> Option<String> {
    std::fs::read_to_string(format!("/proc/sys/{}", key.replace('.', "/")))
        .ok()
        .map(|s| s.trim().to_string())
}

/// Sets a sysctl by writing `/proc/sys` (per network namespace for net.*).
pub fn sysctl(key: &str, value: &str) -> Result<(), IoError> {
    let path = format!("/proc/sys/{}", key.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| IoError::sys(format!("sysctl {key}={value}"), e))
}

fn render(prog: &str, args: &[&str]) -> String {
    let mut s = prog.to_string();
    for a in args {
        s.push(' ');
        if a.is_empty() || a.contains(char::is_whitespace) {
            s.push_str(&format!("'{a}'"));
        } else {
            s.push_str(a);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_name_the_command_and_its_stderr() {
        let e = run("sh", &["-c", "echo oops >&2; exit 3"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("sh -c 'echo oops >&2; exit 3'"), "{e}");
        assert!(e.contains("exit 3") && e.contains("oops"), "{e}");
        assert_eq!(run("sh", &["-c", "echo hi"]).unwrap(), "hi\n");
    }

    #[test]
    fn input_goes_to_stdin() {
        assert_eq!(run_input("cat", &[], Some("a\nb\n")).unwrap(), "a\nb\n");
        assert_eq!(run_input("cat", &[], None).unwrap(), "");
    }

    #[test]
    fn hooks_substitute_the_interface_name() {
        let dir = std::env::temp_dir().join(format!("starpep-hook-{}", std::process::id()));
        let f = dir.with_extension("out");
        hook(&format!("echo %i > {}", f.display()), "box7").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "box7\n");
        let _ = std::fs::remove_file(f);
    }
}
