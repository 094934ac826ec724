//! The local control socket of a running daemon: abstract unix socket `@starpep/<iface>`
//! (per network namespace), peers checked with SO_PEERCRED (root or our own uid).
//!
//! Protocol: the client sends one request line (`show`, `pep`, `reload`), the daemon answers
//! with one JSON document and closes.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use nix::sys::socket::{getsockopt, sockopt};

use super::IoError;

const PREFIX: &str = "starpep/";

fn addr(iface: &str) -> io::Result<SocketAddr> {
    SocketAddr::from_abstract_name(format!("{PREFIX}{iface}").as_bytes())
}

/// A bound control socket.
pub struct ControlServer {
    listener: UnixListener,
    iface: String,
}

impl ControlServer {
    /// Binds `@starpep/<iface>`; fails if a daemon already serves that interface here.
    pub fn bind(iface: &str) -> Result<ControlServer, IoError> {
        let what = format!("control socket @{PREFIX}{iface}");
        let listener = addr(iface)
            .and_then(|a| UnixListener::bind_addr(&a))
            .map_err(|e| {
                let e = if e.kind() == io::ErrorKind::AddrInUse {
                    io::Error::new(e.kind(), "another daemon serves this interface here")
                } else {
                    e
                };
                IoError::sys(what.clone(), e)
            })?;
        listener
            .set_nonblocking(true)
            .map_err(|e| IoError::sys(what, e))?;
        Ok(ControlServer {
            listener,
            iface: iface.to_string(),
        })
    }

    /// Answers requests with `handler(request_line)` until `stop` is set.
    pub fn serve(&self, stop: &AtomicBool, handler: impl Fn(&str) -> String) {
        let me = nix::unistd::geteuid().as_raw();
        // The last accept error, logged once until an accept works again (no descriptor left
        // fails every accept until one is freed).
        let mut failing: Option<io::ErrorKind> = None;
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((conn, _)) => {
                    failing = None;
                    if let Err(e) = answer(conn, me, &handler) {
                        tracing::debug!(iface = %self.iface, "control request: {e}");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    if failing != Some(e.kind()) {
                        tracing::warn!(iface = %self.iface, "control accept: {e}");
                        failing = Some(e.kind());
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
}

fn answer(conn: UnixStream, me: u32, handler: &impl Fn(&str) -> String) -> io::Result<()> {
    let cred = getsockopt(&conn, sockopt::PeerCredentials).map_err(io::Error::from)?;
    if cred.uid() != 0 && cred.uid() != me {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("uid {} is neither root nor {me}", cred.uid()),
        ));
    }
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(2)))?;
    let mut line = String::new();
    BufReader::new(&conn).take(4096).read_line(&mut line)?;
    let reply = handler(line.trim());
    (&conn).write_all(reply.as_bytes())
}

/// Sends `request` to the daemon of `iface` in this namespace and returns its answer.
pub fn request(iface: &str, request: &str) -> Result<String, IoError> {
    request_timeout(iface, request, Duration::from_secs(5))
}

/// [`request`], waiting up to `timeout` for the answer.
pub fn request_timeout(iface: &str, request: &str, timeout: Duration) -> Result<String, IoError> {
    let what = format!("connect to the daemon of {iface} (@{PREFIX}{iface})");
    let conn = addr(iface)
        .and_then(|a| UnixStream::connect_addr(&a))
        .map_err(|e| IoError::sys(what.clone(), e))?;
    conn.set_read_timeout(Some(timeout))
        .map_err(|e| IoError::sys(what.clone(), e))?;
    (&conn)
        .write_all(format!("{request}\n").as_bytes())
        .map_err(|e| IoError::sys(what.clone(), e))?;
    let mut out = String::new();
    (&conn)
        .read_to_string(&mut out)
        .map_err(|e| IoError::sys(what, e))?;
    Ok(out)
}

/// Interfaces with a daemon in this network namespace (from `/proc/net/unix`).
pub fn list() -> Vec<String> {
    let text = std::fs::read_to_string("/proc/net/unix").unwrap_or_default();
    let mut v: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().nth(7))
        .filter_map(|p| p.strip_prefix('@')?.strip_prefix(PREFIX))
        .map(str::to_string)
        .collect();
    v.sort();
    v.dedup();
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn request_reaches_the_handler_and_the_name_is_listed() {
        let iface = format!("t{}", std::process::id());
        let server = ControlServer::bind(&iface).unwrap();
        assert!(
            ControlServer::bind(&iface).is_err(),
            "second daemon refused"
        );
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let t =
            std::thread::spawn(move || server.serve(&s2, |req| format!("{{\"req\":\"{req}\"}}")));
        assert_eq!(request(&iface, "show").unwrap(), "{\"req\":\"show\"}");
        assert!(list().contains(&iface), "{:?}", list());
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
        assert!(request(&format!("{iface}x"), "show").is_err());
    }
}
