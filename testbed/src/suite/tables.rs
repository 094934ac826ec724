//! The report's summary tables (pure): one table per metric, a row per setup and a column per
//! link (median over seeds, min–max in brackets), for each application's slices (end-host CC ×
//! server RTT); and where `wg+starpep` stands on each axis against every other setup.

use std::fmt::Write;

use super::cell::CellResult;
use super::stats::{links, pivot, setups, slices, Entry, Pivot, Slice};

/// The setup our own findings are about.
pub const OURS: &str = "wg+starpep";

/// One metric of one application.
pub struct Metric {
    pub app: &'static str,
    pub title: &'static str,
    pub digits: usize,
    pub lower_is_better: bool,
    pub get: fn(&CellResult) -> Option<f64>,
}

/// Every metric the summary tables and the standings show, in report order.
pub const METRICS: [Metric; 10] = [
    Metric {
        app: "file",
        title: "30 MB transfer time (s)",
        digits: 1,
        lower_is_better: true,
        get: |c| c.file_30mb_s,
    },
    Metric {
        app: "file",
        title: "1 MB transfer time (s)",
        digits: 2,
        lower_is_better: true,
        get: |c| c.file_1mb_s,
    },
    Metric {
        app: "bulk",
        title: "bulk goodput (Mbit/s)",
        digits: 1,
        lower_is_better: false,
        get: |c| c.goodput_mbps,
    },
    Metric {
        app: "bulk",
        title: "bulk one-way delay p50 (ms)",
        digits: 0,
        lower_is_better: true,
        get: |c| c.owd_ms.map(|x| x.p50),
    },
    Metric {
        app: "bulk",
        title: "bulk queueing delay p95 (ms)",
        digits: 0,
        lower_is_better: true,
        get: |c| c.queueing_ms.map(|x| x.p95),
    },
    Metric {
        app: "voip",
        title: "MOS idle, srv → pc",
        digits: 2,
        lower_is_better: false,
        get: |c| c.voip_idle.map(|v| v.down.mos),
    },
    Metric {
        app: "voip",
        title: "MOS during bulk, srv → pc",
        digits: 2,
        lower_is_better: false,
        get: |c| c.voip_bulk.map(|v| v.down.mos),
    },
    Metric {
        app: "voip",
        title: "MOS during bulk, pc → srv",
        digits: 2,
        lower_is_better: false,
        get: |c| c.voip_bulk.map(|v| v.up.mos),
    },
    Metric {
        app: "web",
        title: "page-load time (s)",
        digits: 2,
        lower_is_better: true,
        get: |c| c.page_load_s,
    },
    Metric {
        app: "fair",
        title: "fairness, Jain's index",
        digits: 3,
        lower_is_better: false,
        get: |c| c.jain,
    },
];

fn slice_name(s: &Slice) -> String {
    format!("{} end hosts, server RTT {} ms", s.cc, s.server_rtt_ms)
}

fn entry(e: Option<&Entry>, digits: usize, reference: Option<f64>) -> String {
    match e {
        None => "not run".into(),
        Some(Entry::Failed(_)) => "failed".into(),
        Some(Entry::NoData) => "—".into(),
        Some(Entry::Value(s)) => {
            let v = match reference {
                Some(r) if r > 0.0 => format!("{} ({:.2}×)", s.show(digits), s.median / r),
                _ => s.show(digits),
            };
            match s.failed {
                0 => v,
                k => format!("{v}, {k} of {} failed", k + s.n),
            }
        }
    }
}

/// A setup × link table; `ratio_vs`: a setup whose median each value is also divided by.
pub fn table(p: &Pivot, all_setups: &[String], digits: usize, ratio_vs: Option<&str>) -> String {
    let links = links(p);
    let mut s = String::from("| setup |");
    for l in &links {
        let _ = write!(s, " {l} |");
    }
    s.push_str("\n|---|");
    s.push_str(&"---|".repeat(links.len()));
    s.push('\n');
    for name in all_setups {
        let _ = write!(s, "| {name} |");
        for l in &links {
            let r = ratio_vs.and_then(|v| super::stats::median(p, v, l));
            let r = if Some(name.as_str()) == ratio_vs {
                None
            } else {
                r
            };
            let _ = write!(
                s,
                " {} |",
                entry(p.get(name).and_then(|m| m.get(l)), digits, r)
            );
        }
        s.push('\n');
    }
    s
}

/// Every summary table of `app` (one per metric per slice), under a `###` heading each.
pub fn app_tables(
    cells: &[CellResult],
    app: &str,
    all_setups: &[String],
    ratio_vs: Option<&str>,
) -> String {
    let mut s = String::new();
    for slice in slices(cells, app) {
        for m in METRICS.iter().filter(|m| m.app == app) {
            let p = pivot(cells, &slice, m.get);
            let _ = writeln!(s, "### {}, {}\n", m.title, slice_name(&slice));
            s.push_str(&table(&p, all_setups, m.digits, ratio_vs));
            s.push('\n');
        }
    }
    s
}

/// Where `OURS` stands on each metric, link and slice: its median, its rank among the setups
/// measured there, and the best other setup.
pub fn standings(cells: &[CellResult]) -> String {
    let mut rows = String::new();
    for m in &METRICS {
        for slice in slices(cells, m.app) {
            let p = pivot(cells, &slice, m.get);
            for link in links(&p) {
                let mut v: Vec<(f64, &str)> = setups(&p)
                    .iter()
                    .filter_map(|s| {
                        let x = p.get(s)?.get(&link)?.value()?.median;
                        Some((x, p.get_key_value(s)?.0.as_str()))
                    })
                    .collect();
                v.sort_by(|a, b| {
                    if m.lower_is_better {
                        a.0.total_cmp(&b.0)
                    } else {
                        b.0.total_cmp(&a.0)
                    }
                });
                let Some(rank) = v.iter().position(|(_, s)| *s == OURS) else {
                    continue;
                };
                let ours = v[rank].0;
                let best_other = v.iter().find(|(_, s)| *s != OURS);
                let other = best_other.map_or("—".into(), |(x, s)| {
                    format!("`{s}` {x:.d$}", d = m.digits)
                });
                let _ = writeln!(
                    rows,
                    "| {} | {link}, {} | {ours:.d$} | {} of {} | {other} |",
                    m.title,
                    slice_name(&slice),
                    rank + 1,
                    v.len(),
                    d = m.digits
                );
            }
        }
    }
    if rows.is_empty() {
        return format!("`{OURS}`: not measured.\n");
    }
    format!(
        "| axis | link, slice | `{OURS}` | rank | best other setup |\n|---|---|---|---|---|\n{rows}"
    )
}
