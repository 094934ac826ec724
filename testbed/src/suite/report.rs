//! The suite's report (pure): the cells' JSON lines → a markdown page (the study's findings and
//! ours, generated from the numbers; summary tables per metric with medians and min–max over
//! seeds; the plots; the failed cells; then per-cell-group tables, one per link × server RTT ×
//! application × end-host CC, one row per setup, seeds averaged) and a CSV of every cell.
//! Failed cells say why; setups the matrix ran elsewhere but not in a group say "not run".
//! Numbers come from the cells only.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::cell::{CellResult, Status};
use super::findings;
use super::stats::setup_order as order;
use super::tables::{self, OURS};

/// The reference setup of every ratio column.
pub const REFERENCE: &str = "wg";

/// Parses JSON lines; a line that is not a cell is an error naming its number.
pub fn parse_lines(text: &str) -> Result<Vec<CellResult>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| serde_json::from_str(l).map_err(|e| format!("line {}: {e}", i + 1)))
        .collect()
}

type GroupKey = (String, u64, String, String);

fn key(c: &CellResult) -> GroupKey {
    // Server RTT in µs so the key is ordered and exact.
    (
        c.spec.link.clone(),
        (c.spec.server_rtt_ms * 1000.0).round() as u64,
        c.spec.app.clone(),
        c.spec.cc.clone(),
    )
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Mean of one metric over a setup's ok cells.
fn metric(cells: &[&CellResult], f: impl Fn(&CellResult) -> Option<f64>) -> Option<f64> {
    mean(&cells.iter().filter_map(|c| f(c)).collect::<Vec<_>>())
}

fn num(v: Option<f64>, digits: usize) -> String {
    v.map_or("—".into(), |x| format!("{x:.digits$}"))
}

fn ratio(v: Option<f64>, r: Option<f64>) -> String {
    match (v, r) {
        (Some(v), Some(r)) if r > 0.0 => format!("{:.2}×", v / r),
        _ => "—".into(),
    }
}

/// A plot the report embeds (written next to report.md), under its application's section.
#[derive(Debug, Clone, PartialEq)]
pub struct PlotRef {
    pub app: &'static str,
    pub file: String,
    pub caption: String,
}

/// The sections of the summary, by application.
const SECTIONS: [(&str, &str); 5] = [
    ("file", "Transfer time (the study's metric)"),
    ("bulk", "Bulk download: throughput, one-way delay, queueing"),
    (
        "voip",
        "VoIP quality (G.711, E-model MOS), idle and during a bulk download",
    ),
    ("web", "Page-load time (a real browser)"),
    ("fair", "Fairness of two competing downloads"),
];

/// The markdown page. `header` goes first (the command and commit that produced the cells);
/// `plots` are the figures written for these cells.
pub fn markdown(cells: &[CellResult], header: &str, plots: &[PlotRef]) -> String {
    let mut s = String::new();
    let failed: Vec<&CellResult> = cells
        .iter()
        .filter(|c| c.status == Status::Failed)
        .collect();
    let _ = writeln!(s, "# StarPEP-WG benchmark report\n\n{header}\n");
    let _ = writeln!(
        s,
        "{} cells, {} failed. Values are medians over seeds, min–max in brackets; ratios are \
         against `{REFERENCE}` on the same link.\n",
        cells.len(),
        failed.len()
    );
    let mut setups: Vec<String> = cells.iter().map(|c| c.spec.setup.clone()).collect();
    setups.sort_by_key(|a| order(a));
    setups.dedup();
    let _ = writeln!(
        s,
        "## The study's findings\n\nFrom the 30 MB transfer times (file cells, CUBIC end hosts, \
         server next to the POP; the study's VPN setups, `plain` and `pep` left out of the \
         ranking).\n"
    );
    for f in findings::all(cells) {
        let why = f.why.map(|w| format!(" Why: {w}.")).unwrap_or_default();
        let _ = writeln!(
            s,
            "- **{}**: {} — {}.{why}",
            f.outcome.word(),
            f.claim,
            f.evidence
        );
    }
    let _ = writeln!(
        s,
        "\n## Where `{OURS}` stands\n\n{}",
        tables::standings(cells)
    );
    for (app, title) in SECTIONS {
        let _ = writeln!(s, "## {title}\n");
        let t = tables::app_tables(cells, app, &setups, Some(REFERENCE));
        if t.is_empty() {
            let _ = writeln!(s, "Not measured (no {app} cells).\n");
            continue;
        }
        s.push_str(&t);
        for p in plots.iter().filter(|p| p.app == app) {
            let _ = writeln!(s, "![{}]({})\n", p.caption, p.file);
        }
    }
    if !failed.is_empty() {
        let _ = writeln!(s, "## Failed cells\n\n| cell | why |\n|---|---|");
        for c in &failed {
            let why = c.error.as_deref().unwrap_or("no reason").replace('|', "/");
            let _ = writeln!(s, "| {} | {} |", c.spec.label(), why.replace('\n', " "));
        }
        s.push('\n');
    }
    let _ = writeln!(
        s,
        "## Bulk, file and web cells in detail\n\nOne table per link × application × end-host CC × \
         server RTT; seeds averaged (n = ok cells).\n"
    );
    let mut groups: BTreeMap<GroupKey, Vec<&CellResult>> = BTreeMap::new();
    for c in cells
        .iter()
        .filter(|c| matches!(c.spec.app.as_str(), "bulk" | "file" | "web"))
    {
        groups.entry(key(c)).or_default().push(c);
    }
    for ((link, rtt_us, app, cc), group) in &groups {
        let rtt = *rtt_us as f64 / 1000.0;
        let _ = writeln!(
            s,
            "### {link}, {app}, {cc} end hosts, server RTT {rtt} ms\n"
        );
        let by_setup = |name: &str| -> (Vec<&CellResult>, Vec<&CellResult>) {
            group
                .iter()
                .filter(|c| c.spec.setup == name)
                .partition(|c| c.status == Status::Ok)
        };
        let (ref_ok, _) = by_setup(REFERENCE);
        if app == "file" {
            let _ = writeln!(
                s,
                "| setup | n | 1 MB (s) | 30 MB (s) | 1 MB vs {REFERENCE} | 30 MB vs {REFERENCE} |\n\
                 |---|---|---|---|---|---|"
            );
        } else if app == "web" {
            let _ = writeln!(
                s,
                "| setup | n | page load (s) | requests | bytes | page load vs {REFERENCE} |\n\
                 |---|---|---|---|---|---|"
            );
        } else {
            let _ = writeln!(
                s,
                "| setup | n | goodput (Mbit/s) | utilisation | OWD p50 (ms) | OWD p95 (ms) | \
                 queueing p50 (ms) | queueing p95 (ms) | in the PEP (ms) | satellite queue (ms) | \
                 goodput vs {REFERENCE} | OWD p50 vs {REFERENCE} |\n\
                 |---|---|---|---|---|---|---|---|---|---|---|---|"
            );
        }
        for name in &setups {
            let (ok, bad) = by_setup(name);
            if ok.is_empty() {
                let why = match bad.first() {
                    Some(c) => format!(
                        "failed: {}",
                        c.error.as_deref().unwrap_or("no reason").replace('|', "/")
                    ),
                    None => "not run".into(),
                };
                let _ = writeln!(s, "| {name} | 0 | {why} |");
                continue;
            }
            let n = if bad.is_empty() {
                ok.len().to_string()
            } else {
                format!("{} ({} failed)", ok.len(), bad.len())
            };
            if app == "file" {
                let f1 = metric(&ok, |c| c.file_1mb_s);
                let f30 = metric(&ok, |c| c.file_30mb_s);
                let _ = writeln!(
                    s,
                    "| {name} | {n} | {} | {} | {} | {} |",
                    num(f1, 2),
                    num(f30, 1),
                    ratio(f1, metric(&ref_ok, |c| c.file_1mb_s)),
                    ratio(f30, metric(&ref_ok, |c| c.file_30mb_s)),
                );
            } else if app == "web" {
                let p = metric(&ok, |c| c.page_load_s);
                let _ = writeln!(
                    s,
                    "| {name} | {n} | {} | {} | {} | {} |",
                    num(p, 2),
                    num(metric(&ok, |c| c.page_requests.map(f64::from)), 0),
                    num(metric(&ok, |c| c.page_bytes.map(|b| b as f64)), 0),
                    ratio(p, metric(&ref_ok, |c| c.page_load_s)),
                );
            } else {
                let g = metric(&ok, |c| c.goodput_mbps);
                let o = metric(&ok, |c| c.owd_ms.map(|x| x.p50));
                let _ = writeln!(
                    s,
                    "| {name} | {n} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
                    num(g, 2),
                    metric(&ok, |c| c.utilisation)
                        .map_or("—".into(), |u| format!("{:.0} %", u * 100.0)),
                    num(o, 1),
                    num(metric(&ok, |c| c.owd_ms.map(|x| x.p95)), 1),
                    num(metric(&ok, |c| c.queueing_ms.map(|x| x.p50)), 1),
                    num(metric(&ok, |c| c.queueing_ms.map(|x| x.p95)), 1),
                    num(metric(&ok, |c| c.proxy_queue_ms), 1),
                    num(metric(&ok, |c| c.sat_queue_ms), 1),
                    ratio(g, metric(&ref_ok, |c| c.goodput_mbps)),
                    ratio(o, metric(&ref_ok, |c| c.owd_ms.map(|x| x.p50))),
                );
            }
        }
        s.push('\n');
    }
    s
}

/// Every cell as one CSV row (nested delays flattened: `owd_ms_p50`, …).
pub fn csv(cells: &[CellResult]) -> String {
    let mut s = String::from(
        "setup,link,app,cc,seed,duration_s,server_rtt_ms,status,goodput_mbps,capacity_mbps,\
         utilisation,owd_ms_p50,owd_ms_p95,owd_ms_p99,queueing_ms_p50,queueing_ms_p95,\
         proxy_queue_ms,sat_queue_ms,file_1mb_s,file_30mb_s,iperf_goodput_mbps,upload_mbps,\
         page_load_s,voip_idle_down_mos,voip_idle_up_mos,voip_bulk_down_mos,voip_bulk_up_mos,\
         voip_bulk_down_owd_ms_p50,voip_bulk_down_loss,jain,bytes,sha256_equal,commit,error\n",
    );
    let o = |v: Option<f64>| v.map_or(String::new(), |x| format!("{x}"));
    for c in cells {
        let status = match c.status {
            Status::Ok => "ok",
            Status::Failed => "failed",
        };
        let err = c.error.as_deref().unwrap_or("").replace('"', "'");
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{status},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},\
             {},{},{},{},{},{},\"{err}\"",
            c.spec.setup,
            c.spec.link,
            c.spec.app,
            c.spec.cc,
            c.spec.seed,
            c.spec.duration_s,
            c.spec.server_rtt_ms,
            o(c.goodput_mbps),
            o(c.capacity_mbps),
            o(c.utilisation),
            o(c.owd_ms.map(|x| x.p50)),
            o(c.owd_ms.map(|x| x.p95)),
            o(c.owd_ms.map(|x| x.p99)),
            o(c.queueing_ms.map(|x| x.p50)),
            o(c.queueing_ms.map(|x| x.p95)),
            o(c.proxy_queue_ms),
            o(c.sat_queue_ms),
            o(c.file_1mb_s),
            o(c.file_30mb_s),
            o(c.iperf_goodput_mbps),
            o(c.upload_mbps),
            o(c.page_load_s),
            o(c.voip_idle.map(|v| v.down.mos)),
            o(c.voip_idle.map(|v| v.up.mos)),
            o(c.voip_bulk.map(|v| v.down.mos)),
            o(c.voip_bulk.map(|v| v.up.mos)),
            o(c.voip_bulk.map(|v| v.down.owd_ms.p50)),
            o(c.voip_bulk.map(|v| v.down.loss)),
            o(c.jain),
            c.bytes.map_or(String::new(), |b| b.to_string()),
            c.sha256_equal.map_or(String::new(), |b| b.to_string()),
            c.commit,
        );
    }
    s
}
