//! A matrix run's progress on stderr: an indicatif bar (the cell being run, cells done/total,
//! time left) on a terminal, plain log lines otherwise (CI). The time left is estimated from
//! the cells already run (pure: [`time_left`]).

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Seconds left: each remaining cell costs the mean of the finished cells of its application,
/// or of all finished cells when none of its application has run yet. `None` before any cell.
pub fn time_left(done: &[(String, f64)], remaining: &[&str]) -> Option<f64> {
    if done.is_empty() {
        return None;
    }
    let mean = |f: &dyn Fn(&str) -> bool| {
        let v: Vec<f64> = done.iter().filter(|(a, _)| f(a)).map(|d| d.1).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let all = mean(&|_| true)?;
    Some(
        remaining
            .iter()
            .map(|app| mean(&|a| a == *app).unwrap_or(all))
            .sum(),
    )
}

fn minutes(s: f64) -> String {
    if s < 90.0 {
        format!("{s:.0} s")
    } else {
        format!("{:.0} min", s / 60.0)
    }
}

pub struct Progress {
    bar: Option<ProgressBar>,
    total: usize,
    done: Vec<(String, f64)>,
}

impl Progress {
    pub fn new(total: usize) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::new(total as u64);
            let style = ProgressStyle::with_template(
                "[{elapsed_precise}] {bar:30.cyan/blue} {pos}/{len} cells · {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar());
            b.set_style(style.progress_chars("=> "));
            b.enable_steady_tick(Duration::from_millis(500));
            b
        });
        Progress {
            bar,
            total,
            done: Vec::new(),
        }
    }

    /// Cell `i` (from 0) starts; `remaining` are the apps of it and every later cell.
    pub fn start(&self, i: usize, label: &str, remaining: &[&str]) {
        let left = time_left(&self.done, remaining)
            .map_or(String::new(), |s| format!(", about {} left", minutes(s)));
        match &self.bar {
            Some(b) => b.set_message(format!("{label}{left}")),
            None => eprintln!("[{}/{}{left}] {label}", i + 1, self.total),
        }
    }

    /// The cell ended after `secs`; `failed` is its error.
    pub fn end(&mut self, app: &str, secs: f64, failed: Option<&str>) {
        self.done.push((app.to_string(), secs));
        if let Some(e) = failed {
            self.println(&format!("  failed: {e}"));
        }
        if let Some(b) = &self.bar {
            b.inc(1);
        }
    }

    /// A line above the bar (or on stderr).
    pub fn println(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => eprintln!("{line}"),
        }
    }

    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_left_uses_each_apps_mean_then_the_overall_one() {
        assert_eq!(time_left(&[], &["bulk"]), None);
        let done = vec![
            ("bulk".to_string(), 40.0),
            ("bulk".to_string(), 50.0),
            ("file".to_string(), 30.0),
        ];
        // 2 bulk at 45 s, 1 file at 30 s, 1 web at the overall mean 40 s.
        assert_eq!(
            time_left(&done, &["bulk", "file", "bulk", "web"]),
            Some(160.0)
        );
        assert_eq!(time_left(&done, &[]), Some(0.0));
        assert_eq!(minutes(75.0), "75 s");
        assert_eq!(minutes(600.0), "10 min");
    }
}
