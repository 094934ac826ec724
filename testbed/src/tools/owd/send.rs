//! owd-bulk sender (socket shell around `ChunkPlan`): waits for POLLOUT under a low
//! TCP_NOTSENT_LOWAT, stamps each chunk right before its first byte is written, then waits for
//! the receiver's confirmation (byte count + sha256) and checks it.

use super::chunk::{encode_chunk, restamp, Ack, Amount, ChunkPlan, ACK_LEN};
use super::net::{
    abort_on_close, establish, now_ns, sender_options, wait, would_block, Deadline, Endpoint,
};
use super::report::Report;
use super::OwdError;
use nix::poll::PollFlags;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How much to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendAmount {
    /// Exactly this many stream bytes.
    Bytes(u64),
    /// Full chunks for this long after the connection is established.
    Duration(Duration),
}

/// Sender options.
#[derive(Debug, Clone)]
pub struct SendOpts {
    pub amount: SendAmount,
    /// TCP_NOTSENT_LOWAT, bytes.
    pub notsent_lowat: u32,
    /// TCP_CONGESTION (None: the system default).
    pub cc: Option<String>,
    /// Series bin width, ms.
    pub bin_ms: u64,
    /// Whole-transfer timeout.
    pub timeout: Duration,
}

/// Runs one transfer as the sender.
pub fn run_send(ep: Endpoint, opts: &SendOpts) -> Result<Report, OwdError> {
    let dl = Deadline::after(opts.timeout);
    let (s, start_ns) = establish(ep, &dl)?;
    let peer = s.peer_addr().map(|a| a.to_string()).unwrap_or_default();
    let r = send_on(&s, start_ns, opts, &dl);
    if r.is_err() {
        abort_on_close(&s);
    }
    let mut r = r.map_err(|e| e.context(&format!("send to {peer}")))?;
    r.peer = Some(peer);
    Ok(r)
}

fn send_on(
    s: &TcpStream,
    start_ns: u64,
    opts: &SendOpts,
    dl: &Deadline,
) -> Result<Report, OwdError> {
    let (cc, lowat) = sender_options(s, opts.notsent_lowat, opts.cc.as_deref())?;
    tracing::debug!(%cc, lowat, amount = ?opts.amount, "sending");
    let amount = match opts.amount {
        SendAmount::Bytes(n) => Amount::Bytes(n),
        SendAmount::Duration(d) => Amount::UntilNs(start_ns + d.as_nanos() as u64),
    };
    let mut plan = ChunkPlan::new(amount).map_err(OwdError::Usage)?;
    let mut sha = Sha256::new();
    let (mut chunk, mut writes) = (Vec::new(), Vec::new());
    let (mut bytes, mut chunks) = (0u64, 0u64);
    let mut w = s;
    while let Some(h) = plan.next(now_ns()) {
        encode_chunk(&h, &mut chunk);
        let mut off = 0;
        while off < chunk.len() {
            wait(s, PollFlags::POLLOUT, dl, "write")?;
            if off == 0 {
                // The stamp: the moment the socket accepts the chunk's first byte.
                restamp(&mut chunk, now_ns());
            }
            match w.write(&chunk[off..]) {
                Ok(n) => {
                    off += n;
                    writes.push((now_ns(), n as u64));
                }
                Err(e) if would_block(&e) => {}
                Err(e) => {
                    return Err(OwdError::io(
                        format!("write chunk {} after {bytes} bytes", h.index),
                        e,
                    ))
                }
            }
        }
        sha.update(&chunk);
        bytes += chunk.len() as u64;
        chunks += 1;
    }
    let sha: [u8; 32] = sha.finalize().into();
    tracing::debug!(
        bytes,
        chunks,
        "last chunk written, waiting for the confirmation"
    );
    let ack = read_ack(s, dl)?;
    let end_ns = now_ns();
    if ack.bytes != bytes || ack.sha256 != sha {
        return Err(OwdError::Protocol(format!(
            "receiver confirms {} bytes sha256 {}, sent {bytes} bytes sha256 {}",
            ack.bytes,
            hex::encode(ack.sha256),
            hex::encode(sha)
        )));
    }
    let mut r = Report::sender(&writes, bytes, chunks, &sha, start_ns, end_ns, opts.bin_ms);
    r.cc = Some(cc);
    r.notsent_lowat = Some(lowat);
    Ok(r)
}

/// Reads the receiver's confirmation (it sends it once the last chunk has been verified).
fn read_ack(s: &TcpStream, dl: &Deadline) -> Result<Ack, OwdError> {
    let mut buf = [0u8; ACK_LEN];
    let mut got = 0;
    let mut r = s;
    while got < ACK_LEN {
        wait(s, PollFlags::POLLIN, dl, "receiver confirmation")?;
        match r.read(&mut buf[got..]) {
            Ok(0) => {
                return Err(OwdError::Protocol(format!(
                    "receiver closed after {got} of {ACK_LEN} confirmation bytes \
                     (it rejected the stream: see its error)"
                )))
            }
            Ok(n) => got += n,
            Err(e) if would_block(&e) => {}
            Err(e) => return Err(OwdError::io("read receiver confirmation", e)),
        }
    }
    Ack::decode(&buf).map_err(OwdError::Protocol)
}
