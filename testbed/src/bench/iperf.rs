//! iperf3 runs between two nodes of a topology (`-J` output parsed).

use std::time::Duration;

use serde_json::Value;

use crate::topo::{Node, Topology};

/// One iperf3 result.
#[derive(Debug, Clone, serde::Serialize)]
pub struct IperfResult {
    pub bits_per_second: f64,
    pub bytes: u64,
    pub seconds: f64,
    pub retransmits: u64,
}

/// Starts `iperf3 -s -1` in `server`, runs `iperf3 -c ADDR -C cubic -t SECS -J` in `client`.
/// `between` is called right before and right after the client run (CPU sampling).
pub fn run(
    topo: &Topology,
    client: Node,
    server: Node,
    server_addr: &str,
    port: u16,
    secs: u32,
    mut between: impl FnMut(),
) -> anyhow::Result<IperfResult> {
    let port_s = port.to_string();
    let mut srv = topo.spawn(
        server,
        &format!("iperf3-server-{port}"),
        &["iperf3", "-s", "-1", "-p", &port_s],
    )?;
    std::thread::sleep(Duration::from_millis(300));
    let secs_s = secs.to_string();
    between();
    let out = topo.exec(
        client,
        &[
            "iperf3",
            "-c",
            server_addr,
            "-p",
            &port_s,
            "-t",
            &secs_s,
            "-C",
            "cubic",
            "-J",
        ],
    )?;
    between();
    srv.stop();
    let text = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| anyhow::anyhow!("iperf3 -J output: {e}: {text}"))?;
    if let Some(err) = v.get("error") {
        anyhow::bail!("iperf3: {err}");
    }
    let recv = &v["end"]["sum_received"];
    Ok(IperfResult {
        bits_per_second: recv["bits_per_second"].as_f64().unwrap_or(0.0),
        bytes: recv["bytes"].as_u64().unwrap_or(0),
        seconds: recv["seconds"].as_f64().unwrap_or(0.0),
        retransmits: v["end"]["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
    })
}
