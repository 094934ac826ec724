//! owd-bulk over 127.0.0.1 (no root): real send/recv pairs in threads, the download direction,
//! and the failures that must make a side exit non-zero (corruption, short stream, refused
//! connection, rejected stream, timeout).

use super::chunk::{encode_chunk, Amount, ChunkPlan, CHUNK_LEN};
use super::net::{listen, Endpoint};
use super::reasm::StreamError;
use super::{run_recv, run_send, OwdError, RecvOpts, Report, SendAmount, SendOpts};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread;
use std::time::Duration;

fn send_opts(amount: SendAmount) -> SendOpts {
    SendOpts {
        amount,
        notsent_lowat: 64 * 1024,
        cc: None,
        bin_ms: 100,
        timeout: Duration::from_secs(60),
    }
}

fn recv_opts() -> RecvOpts {
    RecvOpts {
        bin_ms: 100,
        timeout: Duration::from_secs(60),
        samples: None,
    }
}

fn local() -> (Endpoint, SocketAddr) {
    let l = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let a = l.local_addr().unwrap();
    (Endpoint::Listen(l), a)
}

/// A valid stream of `total` bytes (stamps = 0), as raw bytes.
fn raw_stream(total: u64) -> Vec<u8> {
    let mut plan = ChunkPlan::new(Amount::Bytes(total)).unwrap();
    let (mut s, mut c) = (Vec::new(), Vec::new());
    while let Some(h) = plan.next(super::net::now_ns()) {
        encode_chunk(&h, &mut c);
        s.extend_from_slice(&c);
    }
    s
}

fn check_pair(s: &Report, r: &Report, total: u64) {
    assert_eq!(s.bytes, total);
    assert_eq!(r.bytes, total);
    assert_eq!(s.sha256, r.sha256);
    assert_eq!(s.sha256.as_ref().unwrap().len(), 64);
    let chunks = total.div_ceil(CHUNK_LEN as u64);
    assert_eq!(r.chunks, chunks, "every chunk verified");
    assert_eq!(s.chunks, chunks);
    let o = r.owd_ms.as_ref().expect("receiver OWD");
    assert_eq!(o.samples, chunks);
    assert!(o.min >= 0.0, "negative OWD on one clock: {o:?}");
    assert!(o.max < 1000.0, "loopback OWD above the sanity bound: {o:?}");
    assert!(o.min <= o.p50 && o.p50 <= o.p95 && o.p95 <= o.p99 && o.p99 <= o.max);
    assert!(r.goodput_mbps > 0.0 && r.duration_s > 0.0);
    // The sender ends only once the receiver has verified everything and confirmed it: its
    // end is not before the receiver's (on one clock; a few ms for the confirmation's stamp
    // rounding). Compared as instants, not durations: their starts differ by a scheduling
    // delay that a loaded machine makes longer than a short transfer.
    let end = |x: &Report| x.start_unix_s.expect("start stamp") + x.duration_s;
    assert!(
        end(s) + 0.005 >= end(r),
        "sender waits for the confirmation: sender ended {:.4} s, receiver {:.4} s",
        end(s),
        end(r)
    );
    assert!(s.owd_ms.is_none());
    let binned: f64 = r
        .series
        .iter()
        .map(|b| b.goodput_mbps * (r.bin_ms as f64 / 1e3))
        .sum();
    assert!(binned > 0.0);
    let v: serde_json::Value = serde_json::to_value(r).unwrap();
    for k in [
        "goodput_mbps",
        "owd_ms",
        "duration_s",
        "bytes",
        "sha256",
        "series",
    ] {
        assert!(!v[k].is_null(), "receiver JSON lacks {k}: {v}");
    }
    for k in ["p50", "p95", "p99", "min", "max", "mean"] {
        assert!(v["owd_ms"][k].is_number(), "owd_ms.{k}");
    }
    let last_full = &v["series"][0];
    for k in ["t_s", "goodput_mbps", "owd_ms_p50", "owd_ms_max"] {
        assert!(last_full.get(k).is_some(), "series[0].{k}");
    }
    let sv: serde_json::Value = serde_json::to_value(s).unwrap();
    for k in ["bytes", "duration_s", "sha256", "goodput_mbps", "series"] {
        assert!(!sv[k].is_null(), "sender JSON lacks {k}: {sv}");
    }
}

#[test]
fn upload_20mb_verified() {
    let total = 20u64 << 20;
    let (ep, addr) = local();
    let rx = thread::spawn(move || run_recv(ep, &recv_opts()));
    let s = run_send(
        Endpoint::Connect(addr),
        &send_opts(SendAmount::Bytes(total)),
    )
    .unwrap();
    let r = rx.join().unwrap().unwrap();
    check_pair(&s, &r, total);
    assert_eq!(s.notsent_lowat, Some(64 * 1024));
    assert!(s.cc.as_deref().is_some_and(|c| !c.is_empty()));
}

#[test]
fn per_chunk_samples_file_has_every_chunk() {
    let total = 40 * CHUNK_LEN as u64;
    let dir = std::env::temp_dir().join(format!("owd-samples-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("samples.csv");
    let (ep, addr) = local();
    let tx = thread::spawn(move || run_send(ep, &send_opts(SendAmount::Bytes(total))));
    let opts = RecvOpts {
        samples: Some(path.clone()),
        ..recv_opts()
    };
    let r = run_recv(Endpoint::Connect(addr), &opts);
    let s = tx.join().unwrap().unwrap();
    let text = std::fs::read_to_string(&path);
    let _ = std::fs::remove_dir_all(&dir);
    let r = r.unwrap();
    check_pair(&s, &r, total);
    let text = text.unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("stamp_unix_s,owd_ms"));
    let rows: Vec<(f64, f64)> = lines
        .map(|l| {
            let (a, b) = l.split_once(',').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len() as u64, r.chunks);
    let start = r.start_unix_s.unwrap();
    for (stamp, owd) in &rows {
        assert!(*stamp >= start - 1.0 && *stamp < start + 60.0, "{stamp}");
        assert!((0.0..1000.0).contains(owd), "{owd}");
    }
}

#[test]
fn download_odd_size_verified() {
    let total = 3 * CHUNK_LEN as u64 + 5;
    let (ep, addr) = local();
    let tx = thread::spawn(move || run_send(ep, &send_opts(SendAmount::Bytes(total))));
    let r = run_recv(Endpoint::Connect(addr), &recv_opts()).unwrap();
    let s = tx.join().unwrap().unwrap();
    check_pair(&s, &r, total);
}

#[test]
fn duration_mode_stops() {
    let (ep, addr) = local();
    let rx = thread::spawn(move || run_recv(ep, &recv_opts()));
    let d = Duration::from_millis(300);
    let s = run_send(Endpoint::Connect(addr), &send_opts(SendAmount::Duration(d))).unwrap();
    let r = rx.join().unwrap().unwrap();
    assert_eq!(s.sha256, r.sha256);
    assert_eq!(s.bytes % CHUNK_LEN as u64, 0);
    assert!(s.duration_s >= 0.3, "{}", s.duration_s);
    assert!(r.series.len() >= 3, "{} bins", r.series.len());
}

/// Feeds `bytes` to a receiver from a plain socket and returns the receiver's result.
fn recv_raw(bytes: Vec<u8>) -> Result<Report, OwdError> {
    let (ep, addr) = local();
    let rx = thread::spawn(move || run_recv(ep, &recv_opts()));
    let mut c = TcpStream::connect(addr).unwrap();
    let _ = c.write_all(&bytes);
    let _ = c.shutdown(std::net::Shutdown::Write);
    let mut sink = Vec::new();
    let _ = c.read_to_end(&mut sink);
    rx.join().unwrap()
}

fn stream_error(r: Result<Report, OwdError>) -> StreamError {
    match r {
        Err(OwdError::Context { source, .. }) => match *source {
            OwdError::Stream(e) => e,
            e => panic!("not a stream error: {e}"),
        },
        Err(e) => panic!("not a stream error: {e}"),
        Ok(r) => panic!("receiver accepted a bad stream: {}", r.summary()),
    }
}

#[test]
fn corrupted_payload_fails_the_receiver() {
    let mut s = raw_stream(4 * CHUNK_LEN as u64);
    s[2 * CHUNK_LEN + 1000] ^= 0x40;
    let e = stream_error(recv_raw(s));
    assert!(
        matches!(
            e,
            StreamError::Corrupt {
                index: 2,
                at: 1000,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn short_stream_fails_the_receiver() {
    let s = raw_stream(4 * CHUNK_LEN as u64);
    let e = stream_error(recv_raw(s[..s.len() - 100].to_vec()));
    assert!(matches!(e, StreamError::Short { index: 3, .. }), "{e}");
    // A stream without its last chunk but ending on a chunk boundary is short too.
    let e = stream_error(recv_raw(s[..3 * CHUNK_LEN].to_vec()));
    assert!(matches!(e, StreamError::Short { partial: 0, .. }), "{e}");
}

#[test]
fn sender_fails_when_the_receiver_rejects() {
    let l = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = l.local_addr().unwrap();
    // A "receiver" that reads 100 KiB, then closes without confirming.
    let fake = thread::spawn(move || {
        let (mut c, _) = l.accept().unwrap();
        let mut b = vec![0u8; 100 * 1024];
        c.read_exact(&mut b).unwrap();
    });
    let r = run_send(
        Endpoint::Connect(addr),
        &send_opts(SendAmount::Bytes(1 << 20)),
    );
    fake.join().unwrap();
    assert!(r.is_err(), "sender succeeded without a confirmation");
}

#[test]
fn refused_connection_and_timeout_are_errors() {
    let addr = {
        let l = listen("127.0.0.1:0".parse().unwrap()).unwrap();
        l.local_addr().unwrap()
    };
    let e = run_send(Endpoint::Connect(addr), &send_opts(SendAmount::Bytes(1000))).unwrap_err();
    assert!(matches!(e, OwdError::Io { .. }), "{e}");
    let (ep, _addr) = local();
    let mut o = recv_opts();
    o.timeout = Duration::from_millis(200);
    let e = run_recv(ep, &o).unwrap_err();
    assert!(matches!(e, OwdError::Timeout { .. }), "{e}");
}
