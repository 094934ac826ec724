//! Statistics of the suite's report (pure): a metric's median and spread (min–max) over the
//! seeds of a setup, and the pivot the report's tables and plots are made from (one value per
//! setup per link, for one application, end-host CC and server RTT).

use std::collections::BTreeMap;

use super::cell::{CellResult, Status, SETUPS};

/// Median and min–max of a metric over a setup's ok cells.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    pub n: usize,
    pub median: f64,
    pub min: f64,
    pub max: f64,
    /// Cells of the same setup and link that failed (their seeds are not in the figures).
    pub failed: usize,
}

impl Spread {
    /// `None` for no values; NaNs are ignored.
    pub fn of(values: &[f64]) -> Option<Spread> {
        let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        let n = v.len();
        let median = if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        };
        Some(Spread {
            n,
            median,
            min: v[0],
            max: v[n - 1],
            failed: 0,
        })
    }

    /// `12.3` for one value, `12.3 (11.0–13.5)` for several.
    pub fn show(&self, digits: usize) -> String {
        if self.n == 1 || self.min == self.max {
            format!("{:.digits$}", self.median)
        } else {
            format!(
                "{:.digits$} ({:.digits$}–{:.digits$})",
                self.median, self.min, self.max
            )
        }
    }
}

/// What a table cell holds: the metric over the seeds, or why there is none.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Value(Spread),
    /// Every cell failed: the first one's reason.
    Failed(String),
    /// Cells ran but none produced this metric.
    NoData,
}

impl Entry {
    pub fn value(&self) -> Option<Spread> {
        match self {
            Entry::Value(s) => Some(*s),
            _ => None,
        }
    }
}

/// Which cells a pivot takes: one application, end-host CC and server RTT.
#[derive(Debug, Clone, PartialEq)]
pub struct Slice<'a> {
    pub app: &'a str,
    pub cc: &'a str,
    pub server_rtt_ms: f64,
}

impl Slice<'_> {
    pub fn holds(&self, c: &CellResult) -> bool {
        c.spec.app == self.app
            && c.spec.cc == self.cc
            && (c.spec.server_rtt_ms - self.server_rtt_ms).abs() < 1e-6
    }
}

/// Setup → link → entry, for one slice and one metric. A setup × link with no cell at all is
/// absent (the report says "not run").
pub type Pivot = BTreeMap<String, BTreeMap<String, Entry>>;

pub fn pivot(cells: &[CellResult], slice: &Slice, f: impl Fn(&CellResult) -> Option<f64>) -> Pivot {
    let mut groups: BTreeMap<(String, String), Vec<&CellResult>> = BTreeMap::new();
    for c in cells.iter().filter(|c| slice.holds(c)) {
        groups
            .entry((c.spec.setup.clone(), c.spec.link.clone()))
            .or_default()
            .push(c);
    }
    let mut p = Pivot::new();
    for ((setup, link), group) in groups {
        let ok: Vec<f64> = group
            .iter()
            .filter(|c| c.status == Status::Ok)
            .filter_map(|c| f(c))
            .collect();
        let failed = group.iter().filter(|c| c.status != Status::Ok).count();
        let entry = match Spread::of(&ok) {
            Some(s) => Entry::Value(Spread { failed, ..s }),
            None => match group.iter().find(|c| c.status == Status::Ok) {
                Some(_) => Entry::NoData,
                None => Entry::Failed(group[0].error.clone().unwrap_or_else(|| "no reason".into())),
            },
        };
        p.entry(setup).or_default().insert(link, entry);
    }
    p
}

/// The median of `setup` on `link`, if measured.
pub fn median(p: &Pivot, setup: &str, link: &str) -> Option<f64> {
    p.get(setup)?.get(link)?.value().map(|s| s.median)
}

/// The links of a pivot, in their name order.
pub fn links(p: &Pivot) -> Vec<String> {
    let mut v: Vec<String> = p.values().flat_map(|m| m.keys().cloned()).collect();
    v.sort();
    v.dedup();
    v
}

/// Setups in contract order, then any others by name.
pub fn setup_order(a: &str) -> (usize, String) {
    (
        SETUPS.iter().position(|s| *s == a).unwrap_or(SETUPS.len()),
        a.to_string(),
    )
}

/// The setups of a pivot in report order.
pub fn setups(p: &Pivot) -> Vec<String> {
    let mut v: Vec<String> = p.keys().cloned().collect();
    v.sort_by_key(|a| setup_order(a));
    v
}

/// The slices (cc, server RTT) present among the cells of `app`, cubic and 0 ms first.
pub fn slices<'a>(cells: &'a [CellResult], app: &'a str) -> Vec<Slice<'a>> {
    let mut v: Vec<(bool, u64, &str)> = cells
        .iter()
        .filter(|c| c.spec.app == app)
        .map(|c| {
            (
                c.spec.cc != "cubic",
                (c.spec.server_rtt_ms * 1000.0).round() as u64,
                c.spec.cc.as_str(),
            )
        })
        .collect();
    v.sort();
    v.dedup();
    v.into_iter()
        .map(|(_, rtt_us, cc)| Slice {
            app,
            cc,
            server_rtt_ms: rtt_us as f64 / 1000.0,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(Spread::of(&[]), None);
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.n, s.median, s.min, s.max), (3, 2.0, 1.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, f64::NAN, 2.0, 3.0]).unwrap();
        assert_eq!((s.n, s.median), (4, 2.5));
        assert_eq!(s.show(1), "2.5 (1.0–4.0)");
        assert_eq!(Spread::of(&[7.0]).unwrap().show(2), "7.00");
    }
}
