//! The report's PNG plots (I/O): draws the figures of `suite::plot_data` with plotters (pure-Rust
//! bitmap backend and PNG encoder, text with DejaVu Sans from `fonts-dejavu-core`) into
//! `DIR/plots/`. Figures without data are skipped.

use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::suite::cell::{CellResult, SETUPS};
use crate::suite::plot_data::{self, Bars, Scatter, SeriesFigure, TimeSeries};
use crate::suite::report::PlotRef;
use crate::suite::tables;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
const SANS: &str = "sans-serif";
/// Time-series bins.
const BIN_S: f64 = 0.25;

/// One colour per setup (the contract's order), the same in every plot.
const COLOURS: [RGBColor; 12] = [
    RGBColor(120, 120, 120),
    RGBColor(188, 189, 34),
    RGBColor(31, 119, 180),
    RGBColor(23, 190, 207),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(214, 39, 40),
    RGBColor(227, 119, 194),
    RGBColor(255, 127, 14),
    RGBColor(255, 187, 120),
    RGBColor(44, 160, 44),
    RGBColor(152, 223, 138),
];

fn colour(name: &str, i: usize) -> RGBColor {
    let k = SETUPS.iter().position(|s| *s == name).unwrap_or(i);
    COLOURS[k % COLOURS.len()]
}

/// DejaVu Sans as plotters' `sans-serif` (once per process).
fn register_font() -> anyhow::Result<()> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let bytes = std::fs::read(FONT)
            .map_err(|e| format!("{FONT}: {e} (apt-get install fonts-dejavu-core)"))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font(SANS, FontStyle::Normal, bytes)
            .map_err(|_| format!("{FONT}: not a font"))
    })
    .clone()
    .map_err(anyhow::Error::msg)
}

/// Draws every figure the cells have data for; the plots written, for the report.
pub fn draw_all(dir: &Path, cells: &[CellResult]) -> anyhow::Result<Vec<PlotRef>> {
    register_font()?;
    let out = dir.join("plots");
    std::fs::create_dir_all(&out)?;
    let mut refs = Vec::new();
    let mut add = |app: &'static str, file: &str, caption: &str| {
        refs.push(PlotRef {
            app,
            file: format!("plots/{file}"),
            caption: caption.to_string(),
        })
    };
    for b in plot_data::transfer_bars(cells) {
        bars(&out.join(&b.file), &b)?;
        add("file", &b.file, &b.title);
    }
    if let Some(s) = plot_data::throughput_owd(cells) {
        scatter(&out.join(&s.file), &s)?;
        add("bulk", &s.file, &s.title);
    }
    for f in series_figures(dir, cells) {
        series(&out.join(&f.file), &f)?;
        add("bulk", &f.file, &f.title);
    }
    for b in plot_data::mos_bars(cells) {
        bars(&out.join(&b.file), &b)?;
        add("voip", &b.file, &b.title);
    }
    if let Some(b) = plot_data::page_load_bars(cells) {
        bars(&out.join(&b.file), &b)?;
        add("web", &b.file, &b.title);
    }
    Ok(refs)
}

/// The kept series of the bulk cells, one figure per link (unreadable files are skipped).
fn series_figures(dir: &Path, cells: &[CellResult]) -> Vec<SeriesFigure> {
    plot_data::series_cells(cells)
        .into_iter()
        .filter_map(|(link, cs)| {
            let runs: Vec<TimeSeries> = cs
                .iter()
                .filter_map(|c| {
                    let d = dir.join(c.series_dir.as_ref()?);
                    let samples = std::fs::read_to_string(d.join("samples.csv")).ok()?;
                    let ctl = std::fs::read_to_string(d.join("control-pop.jsonl")).ok();
                    Some(plot_data::time_series(&c.spec.setup, &samples, ctl.as_deref(), BIN_S))
                })
                .filter(|t| !t.goodput_mbps.is_empty())
                .collect();
            (!runs.is_empty()).then(|| SeriesFigure {
                file: format!("series-{link}.png"),
                title: format!("Bulk download on {link}: goodput, one-way delay and StarPEP's window W around reconfigurations (CUBIC end hosts, seed {})", cs[0].spec.seed),
                runs,
            })
        })
        .collect()
}

fn max_of(v: impl Iterator<Item = f64>) -> f64 {
    v.fold(0.0, f64::max)
}

/// Clustered bars with min–max whiskers.
fn bars(path: &Path, b: &Bars) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (1200, 560)).into_drawing_area();
    root.fill(&WHITE)?;
    let n = b.groups.len() as f64;
    let k = b.series.len() as f64;
    let ymax = max_of(
        b.series
            .iter()
            .flat_map(|(_, v)| v.iter().flatten().map(|s| s.max)),
    ) * 1.15;
    let mut chart = ChartBuilder::on(&root)
        .caption(&b.title, (SANS, 22))
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(0f64..n, 0f64..ymax.max(1e-3))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(&b.y_label)
        .label_style((SANS, 15))
        .draw()?;
    let width = 0.8 / k;
    for (j, (name, values)) in b.series.iter().enumerate() {
        let c = colour(name, j);
        let at = |i: usize| i as f64 + 0.1 + j as f64 * width;
        chart
            .draw_series(values.iter().enumerate().filter_map(|(i, v)| {
                let v = (*v)?;
                Some(Rectangle::new(
                    [(at(i), 0.0), (at(i) + width * 0.9, v.median)],
                    c.filled(),
                ))
            }))?
            .label(name)
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 12, y + 6)], c.filled()));
        for (i, v) in values.iter().enumerate() {
            let Some(v) = v else { continue };
            if v.max > v.min {
                let x = at(i) + width * 0.45;
                let cap = width * 0.2;
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(x, v.min), (x, v.max)],
                    BLACK.stroke_width(1),
                )))?;
                for y in [v.min, v.max] {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(x - cap, y), (x + cap, y)],
                        BLACK.stroke_width(1),
                    )))?;
                }
            }
        }
    }
    for (i, g) in b.groups.iter().enumerate() {
        let (x, y) = chart.backend_coord(&(i as f64 + 0.5, 0.0));
        let style = TextStyle::from((SANS, 15).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        root.draw(&Text::new(g.clone(), (x, y + 8), style))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((SANS, 14))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Throughput vs one-way delay, a panel per link: a box per setup over its seeds.
fn scatter(path: &Path, s: &Scatter) -> anyhow::Result<()> {
    let cols = s.panels.len().min(2);
    let rows = s.panels.len().div_ceil(cols);
    let root =
        BitMapBackend::new(path, (640 * cols as u32, 40 + 460 * rows as u32)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(40);
    title.titled(&s.title, (SANS, 20))?;
    for (area, (link, boxes)) in body.split_evenly((rows, cols)).iter().zip(&s.panels) {
        scatter_panel(area, link, boxes)?;
    }
    root.present()?;
    Ok(())
}

fn scatter_panel(
    area: &DrawingArea<BitMapBackend, Shift>,
    link: &str,
    boxes: &[plot_data::SetupBox],
) -> anyhow::Result<()> {
    let xmax = max_of(boxes.iter().map(|b| b.owd_ms.max)) * 1.15;
    let ymax = max_of(boxes.iter().map(|b| b.goodput_mbps.max)) * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption(link, (SANS, 18))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(56)
        .build_cartesian_2d(0f64..xmax.max(1.0), 0f64..ymax.max(0.1))?;
    chart
        .configure_mesh()
        .x_desc("one-way delay p50 (ms)")
        .y_desc("goodput (Mbit/s)")
        .label_style((SANS, 14))
        .draw()?;
    for (i, b) in boxes.iter().enumerate() {
        let c = colour(&b.setup, i);
        let (o, g) = (b.owd_ms, b.goodput_mbps);
        chart.draw_series(std::iter::once(Rectangle::new(
            [(o.min, g.min), (o.max, g.max)],
            c.mix(0.25).filled(),
        )))?;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(o.min, g.min), (o.max, g.max)],
            c.stroke_width(2),
        )))?;
        chart
            .draw_series(std::iter::once(Circle::new(
                (o.median, g.median),
                5,
                c.filled(),
            )))?
            .label(format!(
                "{}  {:.1} Mbit/s, {:.0} ms",
                b.setup, g.median, o.median
            ))
            .legend(move |(x, y)| Circle::new((x + 6, y), 5, c.filled()));
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .label_font((SANS, 13))
        .draw()?;
    Ok(())
}

/// Goodput, OWD and W over time, reconfigurations marked, phases shaded.
fn series(path: &Path, f: &SeriesFigure) -> anyhow::Result<()> {
    let root = BitMapBackend::new(path, (1300, 1030)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title, body) = root.split_vertically(36);
    title.titled(&f.title, (SANS, 17))?;
    let (body, _note) = body.split_vertically(964);
    let panels = body.split_evenly((3, 1));
    let tmax = max_of(
        f.runs
            .iter()
            .flat_map(|r| r.goodput_mbps.iter().map(|p| p.0)),
    ) + 0.5;
    // The reconfigurations and phases of the first run that has a controller record.
    let marked = |r: &&TimeSeries| !r.reconfigs.is_empty() || !r.phases.is_empty();
    let marks = f
        .runs
        .iter()
        .filter(marked)
        .find(|r| r.setup == tables::OURS)
        .or_else(|| f.runs.iter().find(marked));
    type Pick = fn(&TimeSeries) -> &Vec<(f64, f64)>;
    let rows: [(&str, Pick); 3] = [
        ("goodput (Mbit/s)", |r| &r.goodput_mbps),
        ("one-way delay (ms)", |r| &r.owd_ms),
        ("StarPEP window W (KB)", |r| &r.w_kb),
    ];
    for (area, (label, pick)) in panels.iter().zip(rows) {
        let ymax = max_of(f.runs.iter().flat_map(|r| pick(r).iter().map(|p| p.1))) * 1.1;
        let mut chart = ChartBuilder::on(area)
            .margin(8)
            .x_label_area_size(34)
            .y_label_area_size(64)
            .build_cartesian_2d(0f64..tmax, 0f64..ymax.max(1.0))?;
        chart
            .configure_mesh()
            .x_desc("seconds since the download started")
            .y_desc(label)
            .label_style((SANS, 14))
            .draw()?;
        if let Some(m) = marks {
            let shade = |p: &str| match p {
                "guard" => RGBColor(255, 220, 150),
                "probe" => RGBColor(255, 170, 170),
                _ => RGBColor(200, 230, 200),
            };
            chart.draw_series(m.phases.iter().map(|(a, b, p)| {
                Rectangle::new([(*a, 0.0), (*b, ymax)], shade(p).mix(0.5).filled())
            }))?;
            chart.draw_series(m.reconfigs.iter().map(|t| {
                PathElement::new(
                    vec![(*t, 0.0), (*t, ymax)],
                    RGBColor(90, 90, 90).stroke_width(1),
                )
            }))?;
        }
        for (i, r) in f.runs.iter().enumerate() {
            let v = pick(r);
            if v.is_empty() {
                continue;
            }
            let c = colour(&r.setup, i);
            chart
                .draw_series(LineSeries::new(v.iter().copied(), c.stroke_width(2)))?
                .label(&r.setup)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], c.stroke_width(3))
                });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font((SANS, 13))
            .draw()?;
    }
    if marks.is_some() {
        let note = "grey lines: reconfigurations (controller enters probe); shading: guard (orange), probe (red), recover (green)";
        root.draw(&Text::new(note, (80, 1008), (SANS, 14).into_font()))?;
    }
    root.present()?;
    Ok(())
}
