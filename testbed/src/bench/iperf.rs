//! iperf3 runs between two nodes of a topology, `-J` output parsed: the one iperf3 wrapper of
//! the benches (`tunnel`, the suite's `bulk`) and of satlink's calibration (`calibrate::tcp`).

use std::time::Duration;

use serde_json::Value;

use crate::topo::{Node, Topology};

/// One iperf3 result.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IperfResult {
    /// Receiver side: payload bits per second over the measured (non-omitted) seconds.
    pub bits_per_second: f64,
    pub bytes: u64,
    pub seconds: f64,
    pub retransmits: u64,
}

/// What to run: `iperf3 -s -1` in `server`, `iperf3 -c` in `client`.
#[derive(Debug, Clone)]
pub struct IperfSpec<'a> {
    pub client: Node,
    pub server: Node,
    /// The address the client connects to.
    pub server_addr: &'a str,
    /// Bind the server to this address (`-B`).
    pub bind: Option<&'a str>,
    pub port: u16,
    pub secs: u32,
    /// Seconds at the start left out of the result (`-O`, slow start).
    pub omit: u32,
    /// The sender's congestion control (`-C`).
    pub cc: &'a str,
    /// The server sends (`-R`): a download toward the client.
    pub reverse: bool,
}

/// Runs `spec`; `between` is called right before and right after the client run (CPU
/// sampling).
pub fn run(
    topo: &Topology,
    spec: &IperfSpec,
    mut between: impl FnMut(),
) -> anyhow::Result<IperfResult> {
    let port = spec.port.to_string();
    let mut server_args = vec!["iperf3", "-s", "-1", "-p", &port];
    if let Some(b) = spec.bind {
        server_args.extend(["-B", b]);
    }
    let mut srv = topo.spawn(spec.server, &format!("iperf3-server-{port}"), &server_args)?;
    std::thread::sleep(Duration::from_millis(300));
    let (secs, omit) = (spec.secs.to_string(), spec.omit.to_string());
    let mut client_args = vec![
        "iperf3",
        "-c",
        spec.server_addr,
        "-p",
        &port,
        "-t",
        &secs,
        "-O",
        &omit,
        "-C",
        spec.cc,
        "-J",
    ];
    if spec.reverse {
        client_args.push("-R");
    }
    between();
    let out = topo.exec(spec.client, &client_args)?;
    between();
    srv.stop();
    parse(&String::from_utf8_lossy(&out.stdout))
}

/// The receiver's figures of one `iperf3 -J` report (an error if iperf3 reported one).
pub fn parse(text: &str) -> anyhow::Result<IperfResult> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| anyhow::anyhow!("iperf3 -J output: {e}: {text:.300}"))?;
    if let Some(err) = v.get("error") {
        anyhow::bail!("iperf3: {err}");
    }
    let recv = &v["end"]["sum_received"];
    let bits_per_second = recv["bits_per_second"]
        .as_f64()
        .ok_or_else(|| anyhow::anyhow!("iperf3: no end.sum_received in {text:.300}"))?;
    Ok(IperfResult {
        bits_per_second,
        bytes: recv["bytes"].as_u64().unwrap_or(0),
        seconds: recv["seconds"].as_f64().unwrap_or(0.0),
        retransmits: v["end"]["sum_sent"]["retransmits"].as_u64().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_receiver_sum_and_refuses_errors() {
        let ok = r#"{"start": {}, "end": {
            "sum_sent": {"bytes": 12600000, "bits_per_second": 1.01e7, "retransmits": 17},
            "sum_received": {"seconds": 10.02, "bytes": 12500000, "bits_per_second": 9.98e6}}}"#;
        let r = parse(ok).unwrap();
        assert_eq!(
            r,
            IperfResult {
                bits_per_second: 9.98e6,
                bytes: 12_500_000,
                seconds: 10.02,
                retransmits: 17,
            }
        );
        let e = parse(r#"{"start": {}, "error": "unable to connect to server"}"#);
        assert!(format!("{:#}", e.unwrap_err()).contains("unable to connect"));
        assert!(parse(r#"{"end": {}}"#).is_err());
        assert!(parse("iperf3: not json").is_err());
    }
}
