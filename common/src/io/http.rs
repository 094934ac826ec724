//! The metrics endpoint's HTTP server: a TCP listener answering `GET /metrics` with what the
//! daemon renders (one request per connection, `Connection: close`), on the caller's thread.
//! Not a web framework: anything but `GET /metrics` is 404 or 405.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use super::IoError;

/// The content type of prometheus-client's text encoding.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A bound metrics listener.
pub struct MetricsServer {
    listener: TcpListener,
    addr: SocketAddr,
}

impl MetricsServer {
    /// Binds `addr` (fails if the port is in use).
    pub fn bind(addr: SocketAddr) -> Result<MetricsServer, IoError> {
        let what = format!("metrics listener {addr} (MetricsListen)");
        let listener = TcpListener::bind(addr).map_err(|e| IoError::sys(what.clone(), e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| IoError::sys(what.clone(), e))?;
        let addr = listener.local_addr().map_err(|e| IoError::sys(what, e))?;
        Ok(MetricsServer { listener, addr })
    }

    /// The address actually bound.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers requests until `stop`; `render` makes the body of `GET /metrics`.
    pub fn serve(&self, stop: &AtomicBool, render: impl Fn() -> String) {
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((conn, peer)) => {
                    if let Err(e) = answer(conn, &render) {
                        tracing::debug!(%peer, "metrics request: {e}");
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    tracing::warn!(addr = %self.addr, "metrics accept: {e}");
                    std::thread::sleep(Duration::from_millis(200));
                }
            }
        }
    }
}

/// The status line and body for a request line.
fn route(request_line: &str, render: &impl Fn() -> String) -> (&'static str, &'static str, String) {
    let mut parts = request_line.split_whitespace();
    let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let path = target.split('?').next().unwrap_or("");
    match (method, path) {
        ("GET", "/metrics") => ("200 OK", OPENMETRICS, render()),
        (_, "/metrics") => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
        _ => (
            "404 Not Found",
            "text/plain",
            "metrics are at /metrics\n".into(),
        ),
    }
}

/// The most a request may send (request line and headers) before it is answered.
pub const MAX_REQUEST: u64 = 16 * 1024;

/// Reads one request from `input` (request line, then headers up to the blank line, at most
/// [`MAX_REQUEST`] bytes in all) and returns the whole response. Not UTF-8: an error.
pub fn respond(input: impl Read, render: &impl Fn() -> String) -> io::Result<Vec<u8>> {
    let mut reader = BufReader::new(input.take(MAX_REQUEST));
    let mut line = String::new();
    reader.read_line(&mut line)?;
    // The headers are read and ignored (up to the blank line).
    let mut h = String::new();
    while reader.read_line(&mut h)? > 2 {
        h.clear();
    }
    let (status, ctype, body) = route(line.trim(), render);
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body.as_bytes());
    Ok(out)
}

/// The fuzz check of [`respond`] (what `fuzz/metrics_request` runs on each input and the
/// mutation test below on each mutated request): `response`, the answer to `request` with
/// metrics `body`, is one HTTP/1.1 response whose Content-Length is its body's, holding the
/// metrics only for a GET. Panics otherwise; returns whether the metrics were served.
pub fn check_response(request: &[u8], response: &[u8], body: &str) -> bool {
    let text = std::str::from_utf8(response).expect("responses are text");
    assert!(text.starts_with("HTTP/1.1 "), "{text:?}");
    let (head, got) = text.split_once("\r\n\r\n").expect("head and body");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .expect("a length");
    assert_eq!(len, got.len(), "{text:?}");
    let served = head.starts_with("HTTP/1.1 200");
    if served {
        assert_eq!(got, body);
        let req = String::from_utf8_lossy(request);
        assert_eq!(req.split_whitespace().next(), Some("GET"), "{req:?}");
    } else {
        assert_ne!(got, body);
    }
    served
}

fn answer(conn: TcpStream, render: &impl Fn() -> String) -> io::Result<()> {
    conn.set_nonblocking(false)?;
    conn.set_read_timeout(Some(Duration::from_secs(2)))?;
    conn.set_write_timeout(Some(Duration::from_secs(5)))?;
    let out = respond(&conn, render)?;
    (&conn).write_all(&out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn get(addr: SocketAddr, req: &str) -> String {
        let mut c = TcpStream::connect(addr).unwrap();
        c.write_all(req.as_bytes()).unwrap();
        let mut out = String::new();
        c.read_to_string(&mut out).unwrap();
        out
    }

    #[test]
    fn get_metrics_is_answered_and_the_rest_refused() {
        let s = MetricsServer::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = s.addr();
        assert!(MetricsServer::bind(addr).is_err(), "the port is taken");
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = stop.clone();
        let t = std::thread::spawn(move || s.serve(&s2, || "x_total 1\n# EOF\n".to_string()));
        let ok = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(
            ok.contains(OPENMETRICS) && ok.contains("Content-Length: 16\r\n"),
            "{ok}"
        );
        assert!(ok.ends_with("\r\n\r\nx_total 1\n# EOF\n"), "{ok}");
        assert!(get(addr, "POST /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        assert!(get(addr, "GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        stop.store(true, Ordering::Relaxed);
        t.join().unwrap();
    }

    /// The stable-toolchain stand-in for `fuzz/metrics_request` ([`check_response`] on mutated
    /// requests): always one well-formed response, and the metrics only for a GET of /metrics.
    #[test]
    fn mutated_requests_get_one_well_formed_response() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(0x4854_5450);
        let seeds: [&[u8]; 3] = [
            b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n",
            b"POST /metrics?x=1 HTTP/1.0\r\n\r\nbody",
            b"GET / HTTP/1.1\r\n\r\n",
        ];
        let (mut ok, mut metrics) = (0, 0);
        let body = "x_total 1\n";
        for seed in seeds {
            for _ in 0..3000 {
                let mut req = seed.to_vec();
                crate::testing::mutate(&mut rng, &mut req);
                let Ok(out) = respond(&req[..], &|| body.to_string()) else {
                    continue;
                };
                ok += 1;
                metrics += usize::from(check_response(&req, &out, body));
            }
        }
        assert!(
            ok > 5000 && metrics > 100,
            "{ok} answered, {metrics} with metrics"
        );
        // More than MAX_REQUEST of headers is cut off, not read for ever.
        let mut big = b"GET /metrics HTTP/1.1\r\n".to_vec();
        big.extend(std::iter::repeat_n(b'a', 1 << 20));
        assert!(respond(&big[..], &String::new).is_ok());
    }
}
