//! The benchmark matrix (pure): a TOML file in `configs/bench/` → the list of cells to run,
//! in a stable order (link, server RTT, app, cc, seed, setup: a setup's neighbours in the
//! report ran minutes apart, not hours).
//!
//! ```toml
//! setups = ["wg", "wg+split", "wg+starpep"]
//! links = ["leo-starlink", "leo-starlink-paper"]
//! apps = ["bulk"]
//! ccs = ["cubic"]        # default ["cubic"]
//! seeds = [1]            # default [1]
//! duration = "30s"       # bulk length, default 30 s
//! server_rtt = ["0ms"]   # default ["0ms"]
//! ```

use serde::Deserialize;

use super::cell::CellSpec;
use crate::link::units::parse_duration;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MatrixFile {
    setups: Vec<String>,
    links: Vec<String>,
    apps: Vec<String>,
    #[serde(default = "default_ccs")]
    ccs: Vec<String>,
    #[serde(default = "default_seeds")]
    seeds: Vec<u64>,
    #[serde(default = "default_duration")]
    duration: String,
    #[serde(default = "default_rtt")]
    server_rtt: Vec<String>,
}

fn default_ccs() -> Vec<String> {
    vec!["cubic".into()]
}
fn default_seeds() -> Vec<u64> {
    vec![1]
}
fn default_duration() -> String {
    "30s".into()
}
fn default_rtt() -> Vec<String> {
    vec!["0ms".into()]
}

/// Parses a matrix file; errors name the file and what is wrong.
pub fn parse(name: &str, text: &str) -> Result<Vec<CellSpec>, String> {
    let m: MatrixFile = toml::from_str(text).map_err(|e| format!("{name}: {e}"))?;
    let dur = |s: &str| {
        parse_duration(s)
            .map(|d| d.as_secs_f64())
            .map_err(|e| format!("{name}: {s:?}: {e}"))
    };
    let duration_s = dur(&m.duration)?;
    let rtts: Vec<f64> = m
        .server_rtt
        .iter()
        .map(|r| dur(r).map(|s| s * 1000.0))
        .collect::<Result<_, _>>()?;
    for (what, v) in [
        ("setups", m.setups.is_empty()),
        ("links", m.links.is_empty()),
        ("apps", m.apps.is_empty()),
        ("ccs", m.ccs.is_empty()),
        ("seeds", m.seeds.is_empty()),
        ("server_rtt", rtts.is_empty()),
    ] {
        if v {
            return Err(format!("{name}: {what} is empty"));
        }
    }
    let mut cells = Vec::new();
    for link in &m.links {
        for &server_rtt_ms in &rtts {
            for app in &m.apps {
                for cc in &m.ccs {
                    for &seed in &m.seeds {
                        for setup in &m.setups {
                            let c = CellSpec {
                                setup: setup.clone(),
                                link: link.clone(),
                                app: app.clone(),
                                cc: cc.clone(),
                                seed,
                                duration_s,
                                server_rtt_ms,
                            };
                            c.validate().map_err(|e| format!("{name}: {e}"))?;
                            cells.push(c);
                        }
                    }
                }
            }
        }
    }
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expands_in_report_order_with_defaults() {
        let cells = parse(
            "m.toml",
            "setups = [\"wg\", \"wg+starpep\"]\nlinks = [\"geo\", \"leo-starlink\"]\n\
             apps = [\"bulk\"]\nserver_rtt = [\"0ms\", \"20ms\"]\n",
        )
        .unwrap();
        assert_eq!(cells.len(), 8);
        assert_eq!(
            (cells[0].link.as_str(), cells[0].setup.as_str()),
            ("geo", "wg")
        );
        assert_eq!(cells[1].setup, "wg+starpep");
        assert_eq!(cells[2].server_rtt_ms, 20.0);
        assert_eq!((cells[0].cc.as_str(), cells[0].seed), ("cubic", 1));
        assert_eq!(cells[0].duration_s, 30.0);
    }

    #[test]
    fn bad_names_and_keys_are_errors_naming_the_file() {
        let e = parse(
            "m.toml",
            "setups=[\"wg+pepB\"]\nlinks=[\"geo\"]\napps=[\"bulk\"]\n",
        )
        .unwrap_err();
        assert!(e.starts_with("m.toml: unknown setup \"wg+pepB\""), "{e}");
        let e = parse(
            "m.toml",
            "setups=[\"wg\"]\nlinks=[\"geo\"]\napps=[\"bulk\"]\nrounds=2\n",
        )
        .unwrap_err();
        assert!(e.contains("rounds"), "{e}");
        let e = parse("m.toml", "setups=[]\nlinks=[\"geo\"]\napps=[\"bulk\"]\n").unwrap_err();
        assert!(e.contains("setups is empty"), "{e}");
        let e = parse(
            "m.toml",
            "setups=[\"wg\"]\nlinks=[\"geo\"]\napps=[\"bulk\"]\nduration=\"soon\"\n",
        )
        .unwrap_err();
        assert!(e.contains("soon"), "{e}");
    }
}
