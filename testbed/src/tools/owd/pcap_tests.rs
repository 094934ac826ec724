//! pcap-owd end to end: on capture files written by the test (known delay, different link
//! types at the two ends, a retransmission, resegmentation), and on real tcpdump captures of a
//! loopback transfer (root with tcpdump only).

use super::pcap_read::tests::{frame, pcap, tcp_packet};
use super::{listen, run_pcap_owd, run_recv, run_send, Endpoint, RecvOpts, SendAmount, SendOpts};
use pcap_file::DataLink;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

const MS: u64 = 1_000_000;
const T0: u64 = 1_700_000_000 * 1_000 * MS;

/// A temporary directory, removed on drop (also when the test fails).
struct TmpDir(PathBuf);

impl TmpDir {
    fn new(test: &str) -> Self {
        let d = std::env::temp_dir().join(format!("owd-bulk-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        Self(d)
    }
    fn join(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn pcap_owd_on_written_captures() {
    // Sender (Ethernet): SYN, 20 segments of 1000 bytes every ms, segment 5 sent again at 40 ms.
    let mut snd = vec![(
        T0,
        frame(DataLink::ETHERNET, &tcp_packet(false, 999, 0, true)),
        9999,
    )];
    for i in 0..20u32 {
        let ip = tcp_packet(false, 1000 + i * 1000, 1000, false);
        snd.push((
            T0 + (i as u64 + 1) * MS,
            frame(DataLink::ETHERNET, &ip),
            9999,
        ));
    }
    let ip5 = tcp_packet(false, 1000 + 5 * 1000, 1000, false);
    snd.push((T0 + 40 * MS, frame(DataLink::ETHERNET, &ip5), 9999));
    // Receiver (Linux cooked v2, snap length 80): 25 ms later; segment 5 only as the
    // retransmission; segments 10 and 11 coalesced (GRO).
    let mut rcv = Vec::new();
    for i in (0..20u32).filter(|&i| i != 5 && i != 11) {
        let len = if i == 10 { 2000 } else { 1000 };
        let ip = tcp_packet(false, 1000 + i * 1000, len, false);
        // The coalesced segment arrives 26 ms after its second half was sent.
        let t = if i == 10 {
            T0 + 38 * MS
        } else {
            T0 + (i as u64 + 1) * MS + 25 * MS
        };
        rcv.push((t, frame(DataLink::LINUX_SLL2, &ip), 80));
    }
    rcv.push((T0 + 65 * MS, frame(DataLink::LINUX_SLL2, &ip5), 80));
    rcv.sort_by_key(|r| r.0);
    let dir = TmpDir::new("written");
    let (sp, rp) = (dir.join("snd.pcap"), dir.join("rcv.pcap"));
    std::fs::write(&sp, pcap(DataLink::ETHERNET, false, &snd)).unwrap();
    std::fs::write(&rp, pcap(DataLink::LINUX_SLL2, true, &rcv)).unwrap();
    let r = run_pcap_owd(&sp, &rp, None, 100).unwrap();
    let c = r.pcap.as_ref().unwrap();
    assert_eq!((c.sender_segments, c.sender_retransmissions), (21, 1));
    assert_eq!((c.receiver_segments, c.matched, c.ambiguous), (19, 18, 1));
    assert_eq!((c.resegmented, c.unmatched, c.duplicates), (1, 0, 0));
    assert_eq!(r.bytes, 20_000);
    let o = r.owd_ms.as_ref().unwrap();
    assert_eq!(o.p50, 25.0);
    assert_eq!(o.min, 25.0);
    assert_eq!(
        o.max, 26.0,
        "coalesced segment timed by its last byte's sender segment"
    );
    let v = serde_json::to_value(&r).unwrap();
    for k in ["goodput_mbps", "owd_ms", "duration_s", "bytes", "series"] {
        assert!(!v[k].is_null(), "{k}: {v}");
    }
    assert!(v["sha256"].is_null());
}

/// A tcpdump capturing loopback traffic of `port` into `file` (stopped by SIGINT on drop);
/// headers only and a large buffer, so a fast loopback transfer is not dropped by the kernel.
struct Tcpdump(std::process::Child, BufReader<std::process::ChildStderr>);

impl Tcpdump {
    fn start(iface: &str, port: u16, file: &std::path::Path) -> Self {
        let mut c = Command::new("tcpdump")
            .args([
                "-i",
                iface,
                "-U",
                "-n",
                "--immediate-mode",
                "-s",
                "128",
                "-B",
                "8192",
            ])
            .args(["--time-stamp-precision=nano", "-w"])
            .arg(file)
            .args(["tcp", "port", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn tcpdump");
        let err = BufReader::new(c.stderr.take().unwrap());
        // Guard first: a failure below still stops tcpdump. The stderr pipe stays open until
        // tcpdump has exited (it prints its statistics there on SIGINT).
        let mut t = Self(c, err);
        let mut seen = String::new();
        while !seen.contains("listening on") {
            let mut line = String::new();
            if t.1.read_line(&mut line).unwrap_or(0) == 0 {
                panic!("tcpdump exited: {seen}");
            }
            seen.push_str(&line);
        }
        t
    }
}

impl Drop for Tcpdump {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let _ = self.0.wait();
    }
}

#[test]
fn pcap_owd_on_tcpdump_loopback_captures() {
    let have = Command::new("tcpdump").arg("--version").output().is_ok();
    if !nix::unistd::geteuid().is_root() || !have {
        eprintln!("skipped: needs root and tcpdump");
        return;
    }
    let l = listen("127.0.0.1:0".parse().unwrap()).unwrap();
    let addr = l.local_addr().unwrap();
    let dir = TmpDir::new("live");
    let (a, b) = (dir.join("lo.pcap"), dir.join("any.pcap"));
    let total = 2u64 << 20;
    {
        let _lo = Tcpdump::start("lo", addr.port(), &a);
        let _any = Tcpdump::start("any", addr.port(), &b);
        let ro = RecvOpts {
            bin_ms: 100,
            timeout: Duration::from_secs(60),
            samples: None,
        };
        let rx = std::thread::spawn(move || run_recv(Endpoint::Listen(l), &ro));
        let so = SendOpts {
            amount: SendAmount::Bytes(total),
            notsent_lowat: 64 * 1024,
            cc: None,
            bin_ms: 100,
            timeout: Duration::from_secs(60),
        };
        run_send(Endpoint::Connect(addr), &so).unwrap();
        rx.join().unwrap().unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    // Ethernet (lo) at one "end", Linux cooked v2 (any) at the other: the same packets.
    let r = run_pcap_owd(&a, &b, Some(addr.port()), 100).unwrap();
    let c = r.pcap.as_ref().unwrap();
    assert_eq!(r.bytes, total, "{c:?}");
    // Every segment is in both captures; only (tail-loss-probe) retransmissions on a busy
    // machine may leave some untimed.
    assert!(
        c.matched > 0 && c.unmatched == 0 && c.duplicates == 0,
        "{c:?}"
    );
    assert_eq!(c.ambiguous > 0, c.sender_retransmissions > 0, "{c:?}");
    assert_eq!(c.sender_segments, c.receiver_segments, "{c:?}");
    assert_eq!(c.resegmented, 0);
    let o = r.owd_ms.as_ref().unwrap();
    assert!(o.min.abs() < 1.0 && o.max.abs() < 1.0, "{o:?}");
}
