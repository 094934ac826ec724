//! The calibration table: one row per check, printed as aligned text (and JSON).

use serde::Serialize;

/// One measured figure against what the profile promises.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub profile: String,
    pub check: String,
    pub dir: String,
    pub measured: String,
    pub expected: String,
    pub tolerance: String,
    /// None: reported only (no tolerance applies).
    pub pass: Option<bool>,
}

impl Row {
    pub fn verdict(&self) -> &'static str {
        match self.pass {
            Some(true) => "ok",
            Some(false) => "FAIL",
            None => "info",
        }
    }
}

/// Whether every checked row passed.
pub fn all_pass(rows: &[Row]) -> bool {
    rows.iter().all(|r| r.pass != Some(false))
}

/// The table as Markdown (it goes into docs and the closing notes as is).
pub fn render(rows: &[Row]) -> String {
    let head = [
        "profile",
        "check",
        "dir",
        "measured",
        "expected",
        "tolerance",
        "result",
    ];
    let cells: Vec<[&str; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.profile.as_str(),
                r.check.as_str(),
                r.dir.as_str(),
                r.measured.as_str(),
                r.expected.as_str(),
                r.tolerance.as_str(),
                r.verdict(),
            ]
        })
        .collect();
    let mut w = head.map(|h| h.chars().count());
    for c in &cells {
        for (i, s) in c.iter().enumerate() {
            w[i] = w[i].max(s.chars().count());
        }
    }
    let line = |c: &[&str; 7]| {
        let mut s = String::from("|");
        for (i, v) in c.iter().enumerate() {
            s.push_str(&format!(" {v:<width$} |", width = w[i]));
        }
        s.push('\n');
        s
    };
    let mut out = line(&head);
    let dashes: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
    let d: [&str; 7] = std::array::from_fn(|i| dashes[i].as_str());
    out.push_str(&line(&d));
    for c in &cells {
        out.push_str(&line(c));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(pass: Option<bool>) -> Row {
        Row {
            profile: "geo".into(),
            check: "capacity".into(),
            dir: "down".into(),
            measured: "9.99 Mbit/s".into(),
            expected: "10 Mbit/s".into(),
            tolerance: "3%".into(),
            pass,
        }
    }

    #[test]
    fn renders_aligned_markdown_and_judges() {
        let rows = [row(Some(true)), row(None)];
        let t = render(&rows);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4);
        assert!(lines
            .iter()
            .all(|l| l.chars().count() == lines[0].chars().count()));
        assert!(t.contains("| ok ") && t.contains("| info "));
        assert!(all_pass(&rows));
        assert!(!all_pass(&[row(Some(false)), row(Some(true))]));
    }
}
