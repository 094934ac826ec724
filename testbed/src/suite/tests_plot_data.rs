//! Tests of what the report's plots show (suite::plot_data), from synthetic cells and series.

use super::cell::{CellResult, CellSpec, Pct3};
use super::plot_data::{
    mos_bars, page_load_bars, series_cells, throughput_owd, time_series, transfer_bars,
};

fn cell(setup: &str, link: &str, app: &str, seed: u64) -> CellResult {
    let spec = CellSpec {
        setup: setup.into(),
        link: link.into(),
        app: app.into(),
        cc: "cubic".into(),
        seed,
        duration_s: 30.0,
        server_rtt_ms: 0.0,
    };
    CellResult::empty(&spec, "abc", 1.0)
}

#[test]
fn figures_without_data_are_skipped() {
    let cells = vec![cell("wg", "geo", "bulk", 1)];
    assert!(transfer_bars(&cells).is_empty());
    assert!(
        throughput_owd(&cells).is_none(),
        "a bulk cell without metrics draws nothing"
    );
    assert!(mos_bars(&cells).is_empty());
    assert!(page_load_bars(&cells).is_none());
    assert!(series_cells(&cells).is_empty());
}

#[test]
fn bars_and_boxes_hold_the_spread_over_seeds() {
    let mut cells = Vec::new();
    for (seed, t, g, o) in [(1, 10.0, 40.0, 50.0), (2, 14.0, 44.0, 70.0)] {
        let mut f = cell("wg", "leo-starlink", "file", seed);
        f.file_30mb_s = Some(t);
        f.file_1mb_s = Some(t / 10.0);
        cells.push(f);
        let mut b = cell("wg+starpep", "leo-starlink", "bulk", seed);
        b.goodput_mbps = Some(g);
        b.owd_ms = Some(Pct3 {
            p50: o,
            p95: o,
            p99: o,
        });
        cells.push(b);
    }
    let mut geo = cell("wg+starpep", "geo", "file", 1);
    geo.file_30mb_s = Some(30.0);
    cells.push(geo);
    let bars = transfer_bars(&cells);
    assert_eq!(bars[0].file, "transfer-30mb.png");
    assert_eq!(bars[0].groups, vec!["geo", "leo-starlink"]);
    let wg = &bars[0].series.iter().find(|s| s.0 == "wg").unwrap().1;
    assert!(wg[0].is_none(), "wg did not run on geo");
    let s = wg[1].unwrap();
    assert_eq!((s.median, s.min, s.max, s.n), (12.0, 10.0, 14.0, 2));
    // The 1 MB figure has no geo value at all: only wg is in it.
    assert_eq!(bars[1].series.len(), 1);
    let sc = throughput_owd(&cells).unwrap();
    assert_eq!(sc.panels.len(), 1);
    let b = &sc.panels[0].1[0];
    assert_eq!(
        (b.goodput_mbps.min, b.goodput_mbps.max, b.owd_ms.median),
        (40.0, 44.0, 60.0)
    );
}

#[test]
fn a_time_series_from_samples_and_the_control_record() {
    // 4 chunks sent at t0, arriving 100 ms later (bin 0), then 2 at 1 s arriving at 1.3 s.
    let samples = "stamp_unix_s,owd_ms\n100.0,100\n100.0,100\n100.0,100\n100.0,100\n\
                   101.0,300\n101.0,300\n";
    let ctl = [
        r#"{"t_s": 100.2, "flow": 1, "phase": "steady", "w_bytes": 50000}"#,
        r#"{"t_s": 100.4, "flow": 1, "phase": "guard", "w_bytes": 40000}"#,
        r#"{"t_s": 100.6, "flow": 1, "phase": "probe", "w_bytes": 20000}"#,
        r#"{"t_s": 100.8, "flow": 1, "phase": "steady", "w_bytes": 50000}"#,
        r#"{"t_s": 100.5, "flow": 2, "phase": "steady", "w_bytes": 1}"#,
    ]
    .join("\n");
    let ts = time_series("wg+starpep", samples, Some(&ctl), 0.5);
    assert_eq!(ts.goodput_mbps.len(), 3);
    let per_chunk = 16384.0 * 8.0 / 0.5 / 1e6;
    assert!((ts.goodput_mbps[0].1 - 4.0 * per_chunk).abs() < 1e-9);
    assert_eq!(ts.goodput_mbps[1].1, 0.0, "an empty bin is zero goodput");
    assert_eq!(ts.owd_ms, vec![(0.25, 100.0), (1.25, 300.0)]);
    // Flow 1 has the most ticks; W in KB, phases as intervals, the probe start marked.
    assert_eq!(ts.w_kb.len(), 4);
    assert_eq!(ts.w_kb[0].1, 50.0);
    assert_eq!(ts.phases.len(), 2, "{:?}", ts.phases);
    assert_eq!(ts.phases[0].2, "guard");
    assert!((ts.phases[1].0 - 0.6).abs() < 1e-6 && (ts.phases[1].1 - 0.8).abs() < 1e-6);
    assert_eq!(ts.reconfigs.len(), 1);
    let none = time_series("wg", "stamp_unix_s,owd_ms\n", None, 0.5);
    assert!(none.goodput_mbps.is_empty() && none.w_kb.is_empty());
}
