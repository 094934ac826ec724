//! What each plot of the report shows (pure): the cells (and a bulk cell's kept series: owd-bulk's
//! per-chunk samples, the POP's per-tick control record) → the figures `bench::plots` draws.
//! A figure with no data is `None` (skipped, not an error).

use std::collections::BTreeMap;

use serde_json::Value;

use super::cell::CellResult;
use super::stats::{links, pivot, setups, Pivot, Slice, Spread};
use crate::tools::owd::chunk::CHUNK_LEN;

/// Clustered bars with min–max whiskers: one cluster per group, one bar per series.
#[derive(Debug, Clone, PartialEq)]
pub struct Bars {
    pub file: String,
    pub title: String,
    pub y_label: String,
    pub groups: Vec<String>,
    /// (legend name, one value per group).
    pub series: Vec<(String, Vec<Option<Spread>>)>,
}

/// One setup in a throughput-vs-delay panel: a box spanning the seeds' OWD p50 and goodput.
#[derive(Debug, Clone, PartialEq)]
pub struct SetupBox {
    pub setup: String,
    pub owd_ms: Spread,
    pub goodput_mbps: Spread,
}

/// Throughput vs one-way delay, one panel per link (StarPEP paper, Fig. 6 style).
#[derive(Debug, Clone, PartialEq)]
pub struct Scatter {
    pub file: String,
    pub title: String,
    pub panels: Vec<(String, Vec<SetupBox>)>,
}

/// One bulk cell's time series, seconds since its first chunk was sent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TimeSeries {
    pub setup: String,
    pub goodput_mbps: Vec<(f64, f64)>,
    pub owd_ms: Vec<(f64, f64)>,
    /// The POP controller's window W (KB) and its phases (start, end, phase name).
    pub w_kb: Vec<(f64, f64)>,
    pub phases: Vec<(f64, f64, String)>,
    /// Reconfiguration instants (where the controller entered its probe phase).
    pub reconfigs: Vec<f64>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SeriesFigure {
    pub file: String,
    pub title: String,
    pub runs: Vec<TimeSeries>,
}

const FILE_SLICE: Slice = Slice {
    app: "file",
    cc: "cubic",
    server_rtt_ms: 0.0,
};

/// Bars with groups = the pivot's links and a series per setup; `None` without any value.
fn link_bars(p: &Pivot, file: &str, title: &str, y_label: &str) -> Option<Bars> {
    let groups = links(p);
    let series: Vec<(String, Vec<Option<Spread>>)> = setups(p)
        .into_iter()
        .map(|s| {
            let v = groups
                .iter()
                .map(|l| p.get(&s).and_then(|m| m.get(l)).and_then(|e| e.value()))
                .collect();
            (s, v)
        })
        .filter(|(_, v): &(String, Vec<Option<Spread>>)| v.iter().any(Option::is_some))
        .collect();
    (!series.is_empty()).then(|| Bars {
        file: file.into(),
        title: title.into(),
        y_label: y_label.into(),
        groups,
        series,
    })
}

/// Transfer time per setup per link, 30 MB and 1 MB (CUBIC end hosts, server RTT 0).
pub fn transfer_bars(cells: &[CellResult]) -> Vec<Bars> {
    type Get = fn(&CellResult) -> Option<f64>;
    let figures: [(&str, &str, Get); 2] = [
        (
            "transfer-30mb.png",
            "30 MB download time (CUBIC end hosts)",
            |c| c.file_30mb_s,
        ),
        (
            "transfer-1mb.png",
            "1 MB download time (CUBIC end hosts)",
            |c| c.file_1mb_s,
        ),
    ];
    figures
        .into_iter()
        .filter_map(|(file, title, f)| {
            link_bars(&pivot(cells, &FILE_SLICE, f), file, title, "seconds")
        })
        .collect()
}

/// Page-load time per setup per link (CUBIC end hosts, server RTT 0).
pub fn page_load_bars(cells: &[CellResult]) -> Option<Bars> {
    let slice = Slice {
        app: "web",
        ..FILE_SLICE
    };
    let p = pivot(cells, &slice, |c| c.page_load_s);
    link_bars(
        &p,
        "page-load.png",
        "Page-load time (navigation start to load event)",
        "seconds",
    )
}

/// MOS (what pc hears) per setup, idle and during bulk: one figure per link.
pub fn mos_bars(cells: &[CellResult]) -> Vec<Bars> {
    let slice = Slice {
        app: "voip",
        ..FILE_SLICE
    };
    let idle = pivot(cells, &slice, |c| c.voip_idle.map(|v| v.down.mos));
    let bulk = pivot(cells, &slice, |c| c.voip_bulk.map(|v| v.down.mos));
    let mut all = idle.clone();
    all.extend(bulk.clone());
    links(&all)
        .into_iter()
        .filter_map(|link| {
            let groups = setups(&all);
            let get = |p: &Pivot| -> Vec<Option<Spread>> {
                groups
                    .iter()
                    .map(|s| p.get(s).and_then(|m| m.get(&link)).and_then(|e| e.value()))
                    .collect()
            };
            let series = vec![
                ("idle".to_string(), get(&idle)),
                ("during bulk".to_string(), get(&bulk)),
            ];
            series
                .iter()
                .any(|(_, v)| v.iter().any(Option::is_some))
                .then(|| Bars {
                    file: format!("mos-{link}.png"),
                    title: format!("VoIP MOS srv → pc on {link} (G.711, E-model)"),
                    y_label: "MOS".into(),
                    groups,
                    series,
                })
        })
        .collect()
}

/// Goodput vs OWD p50 per setup, one panel per link (bulk, CUBIC, server RTT 0).
pub fn throughput_owd(cells: &[CellResult]) -> Option<Scatter> {
    let slice = Slice {
        app: "bulk",
        ..FILE_SLICE
    };
    let g = pivot(cells, &slice, |c| c.goodput_mbps);
    let o = pivot(cells, &slice, |c| c.owd_ms.map(|x| x.p50));
    let panels: Vec<(String, Vec<SetupBox>)> = links(&g)
        .into_iter()
        .map(|link| {
            let boxes = setups(&g)
                .into_iter()
                .filter_map(|s| {
                    let v = |p: &Pivot| p.get(&s)?.get(&link)?.value();
                    Some(SetupBox {
                        owd_ms: v(&o)?,
                        goodput_mbps: v(&g)?,
                        setup: s.clone(),
                    })
                })
                .collect::<Vec<_>>();
            (link, boxes)
        })
        .filter(|(_, b)| !b.is_empty())
        .collect();
    (!panels.is_empty()).then(|| Scatter {
        file: "throughput-owd.png".into(),
        title: "Bulk download: goodput vs one-way delay p50 (box: min–max over seeds)".into(),
        panels,
    })
}

/// The cells whose series a time-series figure shows: bulk, CUBIC, server RTT 0, the lowest
/// seed, with a series directory; grouped by link.
pub fn series_cells(cells: &[CellResult]) -> BTreeMap<String, Vec<&CellResult>> {
    let slice = Slice {
        app: "bulk",
        ..FILE_SLICE
    };
    let mut by_link: BTreeMap<String, Vec<&CellResult>> = BTreeMap::new();
    for c in cells
        .iter()
        .filter(|c| slice.holds(c) && c.series_dir.is_some())
    {
        let v = by_link.entry(c.spec.link.clone()).or_default();
        match v.iter().position(|o| o.spec.setup == c.spec.setup) {
            Some(i) if v[i].spec.seed > c.spec.seed => v[i] = c,
            Some(_) => {}
            None => v.push(c),
        }
    }
    for v in by_link.values_mut() {
        v.sort_by_key(|c| super::stats::setup_order(&c.spec.setup));
    }
    by_link
}

/// One cell's series from owd-bulk's `stamp_unix_s,owd_ms` samples and the POP's control
/// record (JSON lines; the flow with the most ticks), in bins of `bin_s`.
pub fn time_series(
    setup: &str,
    samples_csv: &str,
    control: Option<&str>,
    bin_s: f64,
) -> TimeSeries {
    let chunks: Vec<(f64, f64)> = samples_csv
        .lines()
        .skip(1)
        .filter_map(|l| {
            let (a, b) = l.split_once(',')?;
            Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
        })
        .collect();
    let mut ts = TimeSeries {
        setup: setup.into(),
        ..TimeSeries::default()
    };
    let Some(t0) = chunks.iter().map(|c| c.0).min_by(f64::total_cmp) else {
        return ts;
    };
    let mut bins: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for &(stamp, owd) in &chunks {
        let arrival = stamp - t0 + owd / 1000.0;
        bins.entry((arrival / bin_s) as usize)
            .or_default()
            .push(owd);
    }
    let last = bins.keys().next_back().copied().unwrap_or(0);
    for i in 0..=last {
        let t = (i as f64 + 0.5) * bin_s;
        let v = bins.get(&i).map(Vec::as_slice).unwrap_or(&[]);
        ts.goodput_mbps
            .push((t, v.len() as f64 * CHUNK_LEN as f64 * 8.0 / bin_s / 1e6));
        if let Some(s) = Spread::of(v) {
            ts.owd_ms.push((t, s.median));
        }
    }
    let end = (last + 1) as f64 * bin_s;
    let recs: Vec<Value> = control
        .unwrap_or("")
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let mut per_flow: BTreeMap<u64, usize> = BTreeMap::new();
    for r in &recs {
        *per_flow.entry(r["flow"].as_u64().unwrap_or(0)).or_default() += 1;
    }
    let Some((&flow, _)) = per_flow.iter().max_by_key(|(_, n)| **n) else {
        return ts;
    };
    let mut open: Option<(f64, String)> = None;
    for r in recs.iter().filter(|r| r["flow"].as_u64() == Some(flow)) {
        let t = r["t_s"].as_f64().unwrap_or(f64::NAN) - t0;
        if !(0.0..=end).contains(&t) {
            continue;
        }
        if let Some(w) = r["w_bytes"].as_f64() {
            ts.w_kb.push((t, w / 1000.0));
        }
        let phase = r["phase"].as_str().unwrap_or("steady").to_string();
        if open.as_ref().map(|o| &o.1) != Some(&phase) {
            if let Some((start, p)) = open.take() {
                ts.phases.push((start, t, p));
            }
            if phase == "probe" {
                ts.reconfigs.push(t);
            }
            if phase != "steady" {
                open = Some((t, phase));
            }
        }
    }
    if let Some((start, p)) = open {
        ts.phases.push((start, end, p));
    }
    ts
}
