//! Profiles with their traces replaced (`--trace-bw FILE` / `--trace-delay FILE` of the
//! benchmarks): the profile's TOML text rewritten so both directions replay the given capacity
//! and/or delay trace, every other trace path made absolute, and — with a new delay trace — the
//! reconfiguration schedule detected in it (`[reconfig] from_trace = true`).

use std::path::{Path, PathBuf};

use toml::{Table, Value};

use super::profile::ProfileError;

fn invalid(path: &Path, msg: impl Into<String>) -> ProfileError {
    ProfileError::Toml {
        path: path.to_path_buf(),
        line: 1,
        msg: msg.into(),
    }
}

fn absolute(base: &Path, p: &str) -> String {
    let p = Path::new(p);
    let abs: PathBuf = if p.is_absolute() {
        p.to_path_buf()
    } else {
        base.join(p)
    };
    abs.display().to_string()
}

/// The text of `profile` (read from `path`) with `bw` and/or `delay` replayed in both
/// directions. The result parses as a profile from any directory.
pub fn with_traces(
    path: &Path,
    text: &str,
    bw: Option<&Path>,
    delay: Option<&Path>,
) -> Result<String, ProfileError> {
    let mut t: Table = toml::from_str(text).map_err(|e| invalid(path, e.message().trim()))?;
    let base = path.parent().unwrap_or(Path::new("."));
    let cwd = std::env::current_dir().unwrap_or_default();
    for dir in ["down", "up"] {
        let Some(Value::Table(d)) = t.get_mut(dir) else {
            return Err(invalid(path, format!("no [{dir}] table")));
        };
        for key in ["rate_trace", "delay_trace"] {
            if let Some(Value::String(p)) = d.get(key) {
                let abs = absolute(base, p);
                d.insert(key.into(), Value::String(abs));
            }
        }
        if let Some(bw) = bw {
            d.remove("rate");
            let abs = absolute(&cwd, &bw.display().to_string());
            d.insert("rate_trace".into(), Value::String(abs));
        }
        if let Some(delay) = delay {
            for k in ["delay", "jitter", "jitter_dist"] {
                d.remove(k);
            }
            let abs = absolute(&cwd, &delay.display().to_string());
            d.insert("delay_trace".into(), Value::String(abs));
        }
    }
    if delay.is_some() {
        let mut r = Table::new();
        r.insert("from_trace".into(), Value::Boolean(true));
        r.insert("period".into(), Value::String("15s".into()));
        let outage = t
            .get("reconfig")
            .and_then(|v| v.get("outage"))
            .cloned()
            .unwrap_or(Value::String("0ms".into()));
        r.insert("outage".into(), outage);
        t.insert("reconfig".into(), Value::Table(r));
    }
    let mut desc = t
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    for (what, p) in [("capacity", bw), ("delay", delay)] {
        if let Some(p) = p {
            desc.push_str(&format!("; {what} trace {}", p.display()));
        }
    }
    t.insert("description".into(), Value::String(desc));
    Ok(toml::to_string(&t).expect("a TOML table serialises"))
}

#[cfg(test)]
mod tests {
    use super::super::{CapacitySpec, DelaySpec, Profile};
    use super::*;

    fn root() -> PathBuf {
        super::super::workspace_root()
    }

    #[test]
    fn geo_with_the_starlink_traces_replays_them_with_their_schedule() {
        let path = root().join("configs/profiles/geo.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let bw = root().join("traces/leocc-example/bw.mahimahi");
        let delay = root().join("traces/leocc-example/delay_10ms.txt");
        let out = with_traces(&path, &text, Some(&bw), Some(&delay)).unwrap();
        let p = Profile::parse(&out, Path::new("/elsewhere/x.toml")).unwrap();
        assert!(matches!(p.down().capacity, CapacitySpec::Trace(_)));
        assert!(matches!(p.up().delay, DelaySpec::Trace(_)));
        let s = p.reconfig().expect("schedule from the delay trace");
        assert!(s.first > Duration::from_millis(8700) && s.first < Duration::from_millis(8800));
        assert!(p.description.contains("capacity trace"));
    }

    #[test]
    fn only_the_capacity_keeps_the_delay_and_relative_traces_resolve() {
        let path = root().join("configs/profiles/leo-starlink.toml");
        let text = std::fs::read_to_string(&path).unwrap();
        let bw = root().join("traces/leocc-example/bw.mahimahi");
        let out = with_traces(&path, &text, Some(&bw), None).unwrap();
        // Parsed from another directory: the delay trace path was made absolute.
        let p = Profile::parse(&out, Path::new("/tmp/somewhere/x.toml")).unwrap();
        assert!(matches!(p.down().delay, DelaySpec::Trace(_)));
        assert!(p.reconfig().is_some(), "the profile's own schedule stays");
        let geo = root().join("configs/profiles/geo.toml");
        let gtext = std::fs::read_to_string(&geo).unwrap();
        let out = with_traces(&geo, &gtext, Some(&bw), None).unwrap();
        let p = Profile::parse(&out, Path::new("/tmp/x.toml")).unwrap();
        assert!(matches!(p.down().delay, DelaySpec::Constant { .. }));
        assert!(p.reconfig().is_none());
    }

    #[test]
    fn a_missing_direction_is_an_error() {
        let e = with_traces(
            Path::new("/p/x.toml"),
            "[down]\nrate = \"1mbit\"\n",
            None,
            None,
        );
        assert!(e.unwrap_err().to_string().contains("no [up] table"));
    }

    use std::time::Duration;
}
