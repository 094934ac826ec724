//! owd-bulk transfers between pc and srv of a bench topology (the benches' one wrapper of the
//! tool): a timed download srv → pc or upload pc → srv, started in the background (srv
//! listens, pc connects, as a client would) and finished into both ends' JSON results.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::tools::owd::Report;
use crate::topo::{Node, Proc, Topology};

use super::sibling_bin;

/// Which way the data flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    /// srv → pc.
    Down,
    /// pc → srv.
    Up,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct TransferSpec<'a> {
    pub way: Way,
    /// srv's TCP port (one per concurrent transfer).
    pub port: u16,
    pub duration: Duration,
    /// The sending end's congestion control.
    pub cc: &'a str,
    /// Also write the receiver's per-chunk samples here.
    pub samples: Option<&'a Path>,
}

/// A running transfer.
pub struct Transfer {
    sender: Proc,
    receiver: Proc,
    send_json: PathBuf,
    recv_json: PathBuf,
    duration: Duration,
}

/// Both ends' results.
pub struct Ends {
    pub recv: Value,
    pub send: Value,
}

impl Ends {
    /// The receiver's result, typed.
    pub fn recv_report(&self) -> anyhow::Result<Report> {
        Ok(serde_json::from_value(self.recv.clone())?)
    }

    /// Whether what arrived is what was sent (both ends' sha256 of the whole stream).
    pub fn sha256_equal(&self) -> bool {
        self.recv["sha256"].is_string() && self.recv["sha256"] == self.send["sha256"]
    }
}

impl Transfer {
    /// Starts the listening end in srv, waits until it listens, then the connecting end in pc.
    pub fn start(topo: &Topology, srv: IpAddr, spec: &TransferSpec) -> anyhow::Result<Transfer> {
        let owd = sibling_bin("owd-bulk")?.display().to_string();
        let port = spec.port;
        let send_json = topo.tmpdir().join(format!("send-{port}.json"));
        let recv_json = topo.tmpdir().join(format!("recv-{port}.json"));
        let listen = format!("--listen=0.0.0.0:{port}");
        let connect = format!("--connect={}", SocketAddr::new(srv, port));
        let (send_conn, recv_conn) = match spec.way {
            Way::Down => (&listen, &connect),
            Way::Up => (&connect, &listen),
        };
        let duration = format!("{}ms", spec.duration.as_millis());
        let send_json_s = format!("--json={}", send_json.display());
        let cc = format!("--cc={}", spec.cc);
        // A chunk waits behind at most this much unsent data in the sender's own socket
        // (16 KiB is 3 ms at 45 Mbit/s; owd-bulk's 64 KiB default would add up to 12 ms of
        // sender-side wait to every setup's figure; docs/owd-bulk.md).
        let send_args = [
            owd.as_str(),
            "send",
            send_conn,
            "--duration",
            &duration,
            &cc,
            "--notsent-lowat",
            "16K",
            &send_json_s,
        ];
        let mut recv_args = vec![
            owd.clone(),
            "recv".into(),
            recv_conn.clone(),
            format!("--json={}", recv_json.display()),
        ];
        if let Some(s) = spec.samples {
            recv_args.push(format!("--samples={}", s.display()));
        }
        let send_label = format!("owd-send-{port}");
        let recv_label = format!("owd-recv-{port}");
        let (sender, receiver) = match spec.way {
            Way::Down => {
                let s = topo.spawn(Node::Srv, &send_label, &send_args)?;
                wait_listening(topo, port)?;
                (s, topo.spawn(Node::Pc, &recv_label, &recv_args)?)
            }
            Way::Up => {
                let r = topo.spawn(Node::Srv, &recv_label, &recv_args)?;
                wait_listening(topo, port)?;
                (topo.spawn(Node::Pc, &send_label, &send_args)?, r)
            }
        };
        Ok(Transfer {
            sender,
            receiver,
            send_json,
            recv_json,
            duration: spec.duration,
        })
    }

    /// Waits for both ends (the receiver first: it ends when the sender's confirmation is
    /// read) and reads their results.
    pub fn finish(mut self) -> anyhow::Result<Ends> {
        let slack = Duration::from_secs(60);
        for (p, what) in [
            (&mut self.receiver, "receiver"),
            (&mut self.sender, "sender"),
        ] {
            let st = p
                .wait_timeout(self.duration + slack)
                .ok_or_else(|| anyhow::anyhow!("owd-bulk {what} did not finish"))?;
            anyhow::ensure!(st.success(), "owd-bulk {what} failed: {}", p.log());
        }
        let read = |p: &Path| -> anyhow::Result<Value> {
            let text = std::fs::read_to_string(p)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))?;
            Ok(serde_json::from_str(&text)?)
        };
        Ok(Ends {
            recv: read(&self.recv_json)?,
            send: read(&self.send_json)?,
        })
    }
}

/// Waits until something listens on TCP `port` in srv.
pub(crate) fn wait_listening(topo: &Topology, port: u16) -> anyhow::Result<()> {
    let filter = format!("sport = :{port}");
    for _ in 0..100 {
        let out = topo.run_ok(Node::Srv, &["ss", "-Hltn", &filter])?;
        if !out.trim().is_empty() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    anyhow::bail!("nothing listens on srv:{port}")
}
