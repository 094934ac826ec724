//! The benchmark matrix (pure): a TOML file in `configs/bench/` → the list of cells to run.
//! A file is one cross product (top-level keys), or several `[[block]]` tables, each its own
//! cross product, whose missing keys fall back to the top-level ones, then to the defaults
//! (so "bbr on a subset" is a block). Within a block the order is link, server RTT, app, cc,
//! seed, setup (a setup's neighbours in the report ran minutes apart, not hours); blocks run in
//! file order; a cell that an earlier block already lists is not repeated.
//!
//! ```toml
//! setups = ["wg", "wg+split", "wg+starpep"]
//! links = ["leo-starlink", "leo-starlink-paper"]
//! apps = ["bulk"]
//! ccs = ["cubic"]        # default ["cubic"]
//! seeds = [1]            # default [1]
//! duration = "30s"       # bulk length, default 30 s
//! server_rtt = ["0ms"]   # default ["0ms"]
//!
//! [[block]]              # optional: more cross products
//! setups = ["wg", "wg+starpep"]
//! ccs = ["bbr"]          # links, apps, … from the top level
//! ```

use serde::Deserialize;

use super::cell::CellSpec;
use crate::link::units::parse_duration;

/// One cross product; every key optional (a block inherits what it does not set).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Axes {
    setups: Option<Vec<String>>,
    links: Option<Vec<String>>,
    apps: Option<Vec<String>>,
    ccs: Option<Vec<String>>,
    seeds: Option<Vec<u64>>,
    duration: Option<String>,
    server_rtt: Option<Vec<String>>,
}

impl Axes {
    /// `self`, with what it does not set taken from `base`.
    fn over(&self, base: &Axes) -> Axes {
        Axes {
            setups: self.setups.clone().or_else(|| base.setups.clone()),
            links: self.links.clone().or_else(|| base.links.clone()),
            apps: self.apps.clone().or_else(|| base.apps.clone()),
            ccs: self.ccs.clone().or_else(|| base.ccs.clone()),
            seeds: self.seeds.clone().or_else(|| base.seeds.clone()),
            duration: self.duration.clone().or_else(|| base.duration.clone()),
            server_rtt: self.server_rtt.clone().or_else(|| base.server_rtt.clone()),
        }
    }
}

/// Parses a matrix file; errors name the file (and the block) and what is wrong.
pub fn parse(name: &str, text: &str) -> Result<Vec<CellSpec>, String> {
    let bad = |e: toml::de::Error| format!("{name}: {e}");
    let mut table: toml::Table = toml::from_str(text).map_err(bad)?;
    let block = table.remove("block");
    let top: Axes = table.try_into().map_err(bad)?;
    let blocks: Vec<Axes> = match block {
        Some(b) => b.try_into().map_err(bad)?,
        None => Vec::new(),
    };
    let blocks: Vec<(String, Axes)> = if blocks.is_empty() {
        vec![(name.to_string(), top)]
    } else {
        blocks
            .iter()
            .enumerate()
            .map(|(i, b)| (format!("{name}: block {}", i + 1), b.over(&top)))
            .collect()
    };
    let mut cells: Vec<CellSpec> = Vec::new();
    for (what, axes) in &blocks {
        for c in expand(what, axes)? {
            if !cells.contains(&c) {
                cells.push(c);
            }
        }
    }
    Ok(cells)
}

/// One block's cross product.
fn expand(name: &str, a: &Axes) -> Result<Vec<CellSpec>, String> {
    let need = |what: &str, v: &Option<Vec<String>>| -> Result<Vec<String>, String> {
        v.clone()
            .ok_or_else(|| format!("{name}: {what} is missing"))
    };
    let setups = need("setups", &a.setups)?;
    let links = need("links", &a.links)?;
    let apps = need("apps", &a.apps)?;
    let ccs = a.ccs.clone().unwrap_or_else(|| vec!["cubic".into()]);
    let seeds = a.seeds.clone().unwrap_or_else(|| vec![1]);
    let dur = |s: &str| {
        parse_duration(s)
            .map(|d| d.as_secs_f64())
            .map_err(|e| format!("{name}: {s:?}: {e}"))
    };
    let duration_s = dur(a.duration.as_deref().unwrap_or("30s"))?;
    let rtts: Vec<f64> = a
        .server_rtt
        .clone()
        .unwrap_or_else(|| vec!["0ms".into()])
        .iter()
        .map(|r| dur(r).map(|s| s * 1000.0))
        .collect::<Result<_, _>>()?;
    for (what, v) in [
        ("setups", setups.is_empty()),
        ("links", links.is_empty()),
        ("apps", apps.is_empty()),
        ("ccs", ccs.is_empty()),
        ("seeds", seeds.is_empty()),
        ("server_rtt", rtts.is_empty()),
    ] {
        if v {
            return Err(format!("{name}: {what} is empty"));
        }
    }
    let mut cells = Vec::new();
    for link in &links {
        for &server_rtt_ms in &rtts {
            for app in &apps {
                for cc in &ccs {
                    for &seed in &seeds {
                        for setup in &setups {
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

    #[test]
    fn blocks_are_cross_products_inheriting_the_top_level() {
        let cells = parse(
            "m.toml",
            "links = [\"leo-starlink\"]\napps = [\"file\"]\nseeds = [1, 2]\n\
             [[block]]\nsetups = [\"wg\", \"wg+starpep\"]\n\
             [[block]]\nsetups = [\"wg+starpep\"]\nccs = [\"bbr\"]\nseeds = [1]\n\
             [[block]]\nsetups = [\"wg\"]\napps = [\"bulk\"]\nduration = \"20s\"\n\
             server_rtt = [\"20ms\"]\n\
             [[block]]\nsetups = [\"wg\"]\n",
        )
        .unwrap();
        // 2 setups × 2 seeds, then 1 bbr cell, then 2 bulk seeds; the last block repeats
        // cells of the first and adds none.
        assert_eq!(cells.len(), 4 + 1 + 2, "{cells:#?}");
        assert!(cells[..4]
            .iter()
            .all(|c| c.cc == "cubic" && c.app == "file"));
        assert_eq!(
            (cells[4].setup.as_str(), cells[4].cc.as_str(), cells[4].seed),
            ("wg+starpep", "bbr", 1)
        );
        assert_eq!(
            (
                cells[5].app.as_str(),
                cells[5].duration_s,
                cells[5].server_rtt_ms
            ),
            ("bulk", 20.0, 20.0)
        );
        assert_eq!(cells[0].duration_s, 30.0);
        let e = parse(
            "m.toml",
            "apps = [\"bulk\"]\n[[block]]\nsetups = [\"wg\"]\n",
        )
        .unwrap_err();
        assert_eq!(e, "m.toml: block 1: links is missing");
        let e = parse(
            "m.toml",
            "links = [\"geo\"]\napps = [\"bulk\"]\n[[block]]\nsetups = [\"wg\"]\n\
             [[block]]\nsetups = [\"wg\"]\nccs = [\"reno\"]\n",
        )
        .unwrap_err();
        assert!(e.starts_with("m.toml: block 2: unknown cc \"reno\""), "{e}");
    }

    #[test]
    fn the_shipped_matrices_parse_and_the_report_covers_the_spec() {
        for (name, text) in [
            (
                "check.toml",
                include_str!("../../../configs/bench/check.toml"),
            ),
            ("leo.toml", include_str!("../../../configs/bench/leo.toml")),
            (
                "report.toml",
                include_str!("../../../configs/bench/report.toml"),
            ),
        ] {
            assert!(!parse(name, text).unwrap().is_empty(), "{name}");
        }
        let cells = parse(
            "full.toml",
            include_str!("../../../configs/bench/full.toml"),
        )
        .unwrap();
        let has = |f: &dyn Fn(&CellSpec) -> bool| cells.iter().any(f);
        for s in super::super::cell::SETUPS {
            assert!(has(&|c| c.setup == s), "setup {s}");
        }
        for a in super::super::cell::APPS {
            assert!(has(&|c| c.app == a), "app {a}");
        }
        for l in [
            "geo",
            "geo-loss1",
            "leo-starlink",
            "leo-starlink-loss1",
            "leo-10mbit",
            "leo-10mbit-loss1",
            "leo-starlink-paper",
        ] {
            assert!(has(&|c| c.link == l), "link {l}");
        }
        assert!(has(&|c| c.cc == "bbr"));
        assert!(has(&|c| c.seed == 2));
        assert!(has(&|c| c.server_rtt_ms == 20.0));
    }
}
