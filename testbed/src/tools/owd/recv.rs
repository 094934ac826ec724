//! owd-bulk receiver (socket shell around `Reassembler`): reads the stream, stamps each read
//! with CLOCK_REALTIME, confirms the verified stream to the sender and then requires EOF.

use super::chunk::Ack;
use super::net::{abort_on_close, establish, now_ns, wait, would_block, Deadline, Endpoint};
use super::reasm::{Reassembler, Sample};
use super::report::Report;
use super::OwdError;
use nix::poll::PollFlags;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// Receiver options.
#[derive(Debug, Clone)]
pub struct RecvOpts {
    /// Series bin width, ms.
    pub bin_ms: u64,
    /// Whole-transfer timeout.
    pub timeout: Duration,
    /// Per-chunk CSV (`stamp_unix_s,owd_ms`), written after the transfer.
    pub samples: Option<std::path::PathBuf>,
}

/// Writes one line per chunk: the sender's stamp (UNIX s) and the one-way delay (ms).
fn write_samples(path: &std::path::Path, samples: &[Sample]) -> Result<(), OwdError> {
    let mut out = String::with_capacity(samples.len() * 32 + 32);
    out.push_str("stamp_unix_s,owd_ms\n");
    for s in samples {
        use std::fmt::Write as _;
        let _ = writeln!(
            out,
            "{:.6},{:.3}",
            s.stamp_ns as f64 / 1e9,
            s.owd_ns() as f64 / 1e6
        );
    }
    std::fs::write(path, out)
        .map_err(|e| OwdError::io(format!("write samples {}", path.display()), e))
}

/// Runs one transfer as the receiver.
pub fn run_recv(ep: Endpoint, opts: &RecvOpts) -> Result<Report, OwdError> {
    let dl = Deadline::after(opts.timeout);
    let (s, start_ns) = establish(ep, &dl)?;
    let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let r = recv_on(&s, start_ns, opts, &dl);
    if r.is_err() {
        abort_on_close(&s);
    }
    let mut r = r.map_err(|e| e.context(&format!("receive from {peer}")))?;
    r.peer = Some(peer);
    Ok(r)
}

fn recv_on(
    s: &TcpStream,
    start_ns: u64,
    opts: &RecvOpts,
    dl: &Deadline,
) -> Result<Report, OwdError> {
    let mut re = Reassembler::new();
    let mut samples: Vec<Sample> = Vec::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut end_ns = start_ns;
    let mut rd = s;
    loop {
        wait(s, PollFlags::POLLIN, dl, "read")?;
        let n = match rd.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if would_block(&e) => continue,
            Err(e) => return Err(OwdError::io(format!("read after {} bytes", re.bytes()), e)),
        };
        let t = now_ns();
        let was_finished = re.is_finished();
        re.push(&buf[..n], t, &mut samples)
            .map_err(OwdError::Stream)?;
        if re.is_finished() && !was_finished {
            end_ns = t;
            let ack = Ack {
                bytes: re.bytes(),
                sha256: re.sha256(),
            };
            write_all(s, &ack.encode(), dl)?;
            tracing::debug!(
                bytes = re.bytes(),
                chunks = re.chunks(),
                "stream verified, confirmed"
            );
        }
    }
    re.finish().map_err(OwdError::Stream)?;
    if let Some(p) = &opts.samples {
        write_samples(p, &samples)?;
    }
    Ok(Report::receiver(
        &samples,
        re.bytes(),
        &re.sha256(),
        start_ns,
        end_ns,
        opts.bin_ms,
    ))
}

fn write_all(s: &TcpStream, mut data: &[u8], dl: &Deadline) -> Result<(), OwdError> {
    let mut w = s;
    while !data.is_empty() {
        wait(s, PollFlags::POLLOUT, dl, "write confirmation")?;
        match w.write(data) {
            Ok(n) => data = &data[n..],
            Err(e) if would_block(&e) => {}
            Err(e) => return Err(OwdError::io("write confirmation", e)),
        }
    }
    Ok(())
}
