//! One cell of the benchmark matrix (pure): what runs (setup × link × application × end-host
//! congestion control × seed) and what it measured, as the one JSON line every output of
//! `starpep-bench run` is made from. Field names are a contract (scripts read them).

use serde::{Deserialize, Serialize};

/// Every setup name of the suite (a contract), in report order.
pub const SETUPS: [&str; 12] = [
    "plain",
    "pep",
    "wg",
    "wg-go",
    "ovpn-udp",
    "ovpn-tcp",
    "ovpn-tcp+pepA",
    "wg+pepA",
    "wg+split-cubic",
    "wg+split",
    "wg+starpep",
    "wg+starpep-clamp",
];

/// The applications (a contract).
pub const APPS: [&str; 5] = ["bulk", "file", "web", "voip", "fair"];

/// The end hosts' congestion controls.
pub const CCS: [&str; 2] = ["cubic", "bbr"];

/// What to run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellSpec {
    pub setup: String,
    /// A profile name (`configs/profiles`) or path.
    pub link: String,
    pub app: String,
    pub cc: String,
    pub seed: u64,
    /// Length of a timed application (bulk), seconds.
    pub duration_s: f64,
    /// Constant RTT between POP and server, ms.
    pub server_rtt_ms: f64,
}

impl CellSpec {
    /// Checks every name against the contract lists.
    pub fn validate(&self) -> Result<(), String> {
        let check = |what: &str, v: &str, all: &[&str]| {
            if all.contains(&v) {
                Ok(())
            } else {
                Err(format!("unknown {what} {v:?} (one of: {})", all.join(", ")))
            }
        };
        check("setup", &self.setup, &SETUPS)?;
        check("app", &self.app, &APPS)?;
        check("cc", &self.cc, &CCS)?;
        if self.duration_s.is_nan() || self.duration_s <= 0.0 {
            return Err(format!(
                "duration must be positive, got {}",
                self.duration_s
            ));
        }
        Ok(())
    }

    /// A short name for logs and file names: `wg+starpep leo-starlink bulk cubic #1`.
    pub fn label(&self) -> String {
        let rtt = if self.server_rtt_ms > 0.0 {
            format!(" srv {}ms", self.server_rtt_ms)
        } else {
            String::new()
        };
        format!(
            "{} {} {} {} #{}{rtt}",
            self.setup, self.link, self.app, self.cc, self.seed
        )
    }
}

impl CellSpec {
    /// A file-name-safe unique name: `leo-starlink_bulk_cubic_s1_rtt0ms_wg+starpep`.
    pub fn id(&self) -> String {
        let link = std::path::Path::new(&self.link)
            .file_stem()
            .map_or(self.link.clone(), |s| s.to_string_lossy().into_owned());
        format!(
            "{link}_{}_{}_s{}_rtt{}ms_{}",
            self.app, self.cc, self.seed, self.server_rtt_ms, self.setup
        )
    }
}

/// p50/p95/p99 of a delay, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pct3 {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
}

/// p50/p95 of a delay, ms.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Pct2 {
    pub p50: f64,
    pub p95: f64,
}

/// One direction of a call: what the listener hears.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CallDir {
    /// One-way delay of the packets that arrived.
    pub owd_ms: Pct3,
    /// RFC 3550 interarrival jitter.
    pub jitter_ms: f64,
    /// Packets lost (never arrived, or too late for the jitter buffer), as a fraction.
    pub loss: f64,
    pub packets_sent: u64,
    /// G.107 R and MOS (suite::quality) from the OWD p50 plus 2 × jitter and the loss.
    pub r: f64,
    pub mos: f64,
}

/// A G.711 call (20 ms packets each way).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// srv → pc (what the user hears).
    pub down: CallDir,
    /// pc → srv.
    pub up: CallDir,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Failed,
}

/// What one cell measured. Metrics an application does not produce, and every metric of a
/// failed cell, are `null`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// What ran (setup, link, app, cc, seed, duration_s, server_rtt_ms: top-level fields of
    /// the JSON line).
    #[serde(flatten)]
    pub spec: CellSpec,
    pub status: Status,
    /// Why a failed cell failed.
    pub error: Option<String>,
    /// bulk: payload goodput of the download, and the capacity the trace offered meanwhile.
    pub goodput_mbps: Option<f64>,
    pub capacity_mbps: Option<f64>,
    pub utilisation: Option<f64>,
    /// bulk: iperf3 `-J` download srv → pc (receiver's goodput), and an owd-bulk upload
    /// pc → srv, each the cell's duration, after the owd-bulk download (not overlapping it).
    pub iperf_goodput_mbps: Option<f64>,
    pub upload_mbps: Option<f64>,
    /// bulk: one-way delay of the data (per chunk), and its queueing part (OWD − the trace's
    /// own delay).
    pub owd_ms: Option<Pct3>,
    pub queueing_ms: Option<Pct2>,
    /// bulk: the POP PEP's own queue (Q / R_down), and satlink's downlink queue, means.
    pub proxy_queue_ms: Option<f64>,
    pub sat_queue_ms: Option<f64>,
    /// file: download times of 1 MB and 30 MB (connect to last byte).
    pub file_1mb_s: Option<f64>,
    pub file_30mb_s: Option<f64>,
    /// web: the page's load time (navigation start to the load event), median of the cell's
    /// loads, each in a fresh browser; what loaded it (`chromium`, or `curl` for `--check`);
    /// requests and bytes of one load.
    pub page_load_s: Option<f64>,
    pub page_loads_s: Option<Vec<f64>>,
    pub page_loader: Option<String>,
    pub page_requests: Option<u32>,
    pub page_bytes: Option<u64>,
    /// voip: a G.711 call each way, alone (`idle`) and during a bulk download (`bulk`).
    pub voip_idle: Option<Call>,
    pub voip_bulk: Option<Call>,
    /// fair: the two competing downloads' goodputs while both run, and Jain's index of them.
    pub fair_mbps: Option<Vec<f64>>,
    pub jain: Option<f64>,
    /// Payload bytes received, and whether their sha256 matched what was sent.
    pub bytes: Option<u64>,
    pub sha256_equal: Option<bool>,
    /// satlink's downlink counters (drops by cause, delivered, queue maximum).
    pub emulator: Option<serde_json::Value>,
    /// bulk: where the run kept the cell's series (owd-bulk's samples.csv, the POP's
    /// control-pop.jsonl, satlink.json), relative to the run's directory.
    pub series_dir: Option<String>,
    /// The `[PEP]` keys the setup set on top of the shipped configs.
    pub configs: Vec<String>,
    /// `git describe` of the tree that ran the cell.
    pub commit: String,
    pub started_unix_s: f64,
}

impl CellResult {
    /// A cell with no metrics yet.
    pub fn empty(spec: &CellSpec, commit: &str, started_unix_s: f64) -> CellResult {
        CellResult {
            spec: spec.clone(),
            status: Status::Ok,
            error: None,
            goodput_mbps: None,
            capacity_mbps: None,
            utilisation: None,
            iperf_goodput_mbps: None,
            upload_mbps: None,
            owd_ms: None,
            queueing_ms: None,
            proxy_queue_ms: None,
            sat_queue_ms: None,
            file_1mb_s: None,
            file_30mb_s: None,
            page_load_s: None,
            page_loads_s: None,
            page_loader: None,
            page_requests: None,
            page_bytes: None,
            voip_idle: None,
            voip_bulk: None,
            fair_mbps: None,
            jain: None,
            bytes: None,
            sha256_equal: None,
            emulator: None,
            series_dir: None,
            configs: Vec::new(),
            commit: commit.to_string(),
            started_unix_s,
        }
    }

    /// The same cell, failed: every metric dropped, the reason kept.
    pub fn failed(spec: &CellSpec, commit: &str, started_unix_s: f64, why: String) -> CellResult {
        CellResult {
            status: Status::Failed,
            error: Some(why),
            ..CellResult::empty(spec, commit, started_unix_s)
        }
    }
}
