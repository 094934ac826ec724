//! The study's findings (CNES/OpenBACH "VPN over SATCOM"), checked against the cells (pure):
//! each is computed from the 30 MB transfer times of the file cells (CUBIC end hosts, server
//! next to the POP) and stated with its figures, or "not measured" when the cells are missing.

use super::cell::CellResult;
use super::findings_why as why;
use super::stats::{links, median, pivot, Pivot, Slice};

/// Whether the cells bear a finding out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Reproduced,
    NotReproduced,
    NotMeasured,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Reproduced => "reproduced",
            Outcome::NotReproduced => "not reproduced",
            Outcome::NotMeasured => "not measured",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The study's claim.
    pub claim: &'static str,
    pub outcome: Outcome,
    /// What the cells show, with their figures.
    pub evidence: String,
    /// When not reproduced: what the cells show differs from the study's bed, with figures.
    pub why: Option<String>,
}

/// The worst setup must be at least this much slower than the next one (the study: 10 %).
pub const WORST_MARGIN: f64 = 0.10;
/// `wg+pepA` "equals" `wg` when their 30 MB medians are within this fraction on every link.
pub const EQUAL_WITHIN: f64 = 0.05;
/// The study's cut on lossy LEO (about 30 %): reproduced within 20–40 %.
pub const CUT_RANGE: (f64, f64) = (0.20, 0.40);

/// The VPN setups the study compares (no-VPN references left out).
fn is_vpn(setup: &str) -> bool {
    setup != "plain" && setup != "pep"
}

/// The TCP-in-TCP setup of the study's worst case.
pub const OVPN_TCP_PEP_A: &str = "ovpn-tcp+pepA";

/// Position B (the PEP inside the tunnel) and position A (outside it).
pub const POSITION_B: [&str; 2] = ["wg+split", "wg+starpep"];
pub const POSITION_A: [&str; 2] = ["ovpn-tcp+pepA", "wg+pepA"];

/// A lossy LEO link, by the profiles' names (`leo-…-loss…`).
pub fn lossy_leo(link: &str) -> bool {
    link.starts_with("leo") && link.contains("loss")
}

fn pct(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

/// The file cells the findings read: CUBIC end hosts, the server next to the POP.
const FILE_CELLS: Slice<'static> = Slice {
    app: "file",
    cc: "cubic",
    server_rtt_ms: 0.0,
};

/// The 30 MB pivot the findings read.
pub fn file_30mb(cells: &[CellResult]) -> Pivot {
    pivot(cells, &FILE_CELLS, |c| c.file_30mb_s)
}

/// The 1 MB pivot (the start dominates), for the explanations.
pub fn file_1mb(cells: &[CellResult]) -> Pivot {
    pivot(cells, &FILE_CELLS, |c| c.file_1mb_s)
}

pub fn all(cells: &[CellResult]) -> Vec<Finding> {
    let (p, p1) = (file_30mb(cells), file_1mb(cells));
    let explain = |f: Finding, why: Option<String>| Finding {
        why: why.filter(|_| f.outcome == Outcome::NotReproduced),
        ..f
    };
    vec![
        explain(worst(&p), why::worst(&p)),
        explain(
            position_b(&p),
            why::position_b(&p, &p1, &POSITION_B, &POSITION_A),
        ),
        pep_a_on_wg(&p),
        explain(lossy_leo_cut(&p), why::lossy_cut(&p)),
    ]
}

/// `ovpn-tcp+pepA` is the slowest VPN setup on every link, ≥ 10 % behind the next slowest.
pub fn worst(p: &Pivot) -> Finding {
    let claim =
        "`ovpn-tcp+pepA` (TCP-in-TCP) is the worst setup, at least 10 % slower than the others";
    let mut notes = Vec::new();
    let mut ok = true;
    let mut measured = 0;
    for link in links(p) {
        let mut v: Vec<(f64, &str)> = p
            .iter()
            .filter(|(s, _)| is_vpn(s))
            .filter_map(|(s, m)| Some((m.get(&link)?.value()?.median, s.as_str())))
            .collect();
        if v.len() < 2 || !v.iter().any(|(_, s)| *s == OVPN_TCP_PEP_A) {
            continue;
        }
        measured += 1;
        v.sort_by(|a, b| b.0.total_cmp(&a.0));
        let (worst_s, worst) = (v[0].0, v[0].1);
        let next = v[1];
        let margin = worst_s / next.0 - 1.0;
        ok &= worst == OVPN_TCP_PEP_A && margin >= WORST_MARGIN;
        notes.push(format!(
            "{link}: slowest `{worst}` {worst_s:.1} s, next `{}` {:.1} s (+{})",
            next.1,
            next.0,
            pct(margin)
        ));
    }
    finish(claim, measured, ok, notes)
}

/// The best of position B (`wg+split`, `wg+starpep`) beats the best of position A
/// (`ovpn-tcp+pepA`, `wg+pepA`) on every link.
pub fn position_b(p: &Pivot) -> Finding {
    let claim = "the PEP inside the tunnel (position B: `wg+split`, `wg+starpep`) beats the PEP outside it (position A: `ovpn-tcp+pepA`, `wg+pepA`)";
    let best = |link: &str, set: &[&'static str]| {
        set.iter()
            .filter_map(|s| Some((median(p, s, link)?, *s)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    let mut notes = Vec::new();
    let (mut ok, mut measured) = (true, 0);
    for link in links(p) {
        let (Some(b), Some(a)) = (best(&link, &POSITION_B), best(&link, &POSITION_A)) else {
            continue;
        };
        measured += 1;
        ok &= b.0 < a.0;
        notes.push(format!(
            "{link}: B `{}` {:.1} s vs A `{}` {:.1} s ({:.2}×)",
            b.1,
            b.0,
            a.1,
            a.0,
            b.0 / a.0
        ));
    }
    finish(claim, measured, ok, notes)
}

/// `wg+pepA` within 5 % of `wg` on every link: a PEP that sees only UDP changes nothing.
pub fn pep_a_on_wg(p: &Pivot) -> Finding {
    let claim = "`wg+pepA` equals `wg` (a PEP outside the tunnel sees only UDP)";
    let mut notes = Vec::new();
    let (mut ok, mut measured) = (true, 0);
    for link in links(p) {
        let (Some(a), Some(w)) = (median(p, "wg+pepA", &link), median(p, "wg", &link)) else {
            continue;
        };
        measured += 1;
        let r = a / w;
        ok &= (r - 1.0).abs() <= EQUAL_WITHIN;
        notes.push(format!("{link}: {a:.1} s vs {w:.1} s ({r:.2}×)"));
    }
    notes.push(format!("equal means within {}", pct(EQUAL_WITHIN)));
    finish(claim, measured, ok, notes)
}

/// On each lossy LEO link the fastest setup cuts the 30 MB time of `wg` by 20–40 %.
pub fn lossy_leo_cut(p: &Pivot) -> Finding {
    let claim = "with CUBIC end hosts on lossy LEO, the best setup cuts transfer time by about 30 % (vs `wg`)";
    let mut notes = Vec::new();
    let (mut ok, mut measured) = (true, 0);
    for link in links(p).into_iter().filter(|l| lossy_leo(l)) {
        let Some(w) = median(p, "wg", &link) else {
            continue;
        };
        let Some((b, s)) = p
            .keys()
            .filter(|s| *s != "wg" && is_vpn(s))
            .filter_map(|s| Some((median(p, s, &link)?, s.as_str())))
            .min_by(|a, b| a.0.total_cmp(&b.0))
        else {
            continue;
        };
        measured += 1;
        let cut = 1.0 - b / w;
        ok &= (CUT_RANGE.0..=CUT_RANGE.1).contains(&cut);
        notes.push(format!(
            "{link}: best `{s}` {b:.1} s vs `wg` {w:.1} s: {} shorter",
            pct(cut)
        ));
    }
    finish(claim, measured, ok, notes)
}

fn finish(claim: &'static str, measured: usize, ok: bool, notes: Vec<String>) -> Finding {
    let outcome = match (measured, ok) {
        (0, _) => Outcome::NotMeasured,
        (_, true) => Outcome::Reproduced,
        (_, false) => Outcome::NotReproduced,
    };
    let evidence = if measured == 0 {
        "the file cells this needs are missing or failed".to_string()
    } else {
        notes.join("; ")
    };
    Finding {
        claim,
        outcome,
        evidence,
        why: None,
    }
}
