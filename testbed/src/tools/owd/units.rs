//! owd-bulk command-line units (pure): sizes with binary suffixes and durations.

use std::time::Duration;

/// Parses a byte count: an integer with an optional binary suffix K, M, G or T (case-insensitive,
/// optionally followed by `i`, `iB` or `B`): `30M` = 30 × 2^20, `1G` = 2^30, `1000` = 1000.
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, suffix) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("size {s:?}: expected an integer with an optional K/M/G/T suffix"))?;
    let unit = suffix.to_ascii_lowercase();
    let shift = match unit.trim_end_matches('b').trim_end_matches('i') {
        "" => 0,
        "k" => 10,
        "m" => 20,
        "g" => 30,
        "t" => 40,
        _ => {
            return Err(format!(
                "size {s:?}: unknown suffix {suffix:?} (K, M, G, T)"
            ))
        }
    };
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| format!("size {s:?}: too large"))
}

/// Parses a duration: a number with an optional unit `ms`, `s`, `m` or `h` (no unit: seconds);
/// `20s`, `500ms`, `1.5`, `2m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("duration {s:?}: expected a number with an optional unit ms/s/m/h"))?;
    let secs = match unit {
        "ms" => v / 1e3,
        "" | "s" => v,
        "m" | "min" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "duration {s:?}: unknown unit {unit:?} (ms, s, m, h)"
            ))
        }
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("duration {s:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1000"), Ok(1000));
        assert_eq!(parse_size("30M"), Ok(30 << 20));
        assert_eq!(parse_size("30m"), Ok(30 << 20));
        assert_eq!(parse_size("30MiB"), Ok(30 << 20));
        assert_eq!(parse_size("30MB"), Ok(30 << 20));
        assert_eq!(parse_size("16K"), Ok(16384));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(parse_size("1T"), Ok(1 << 40));
        assert_eq!(parse_size("100B"), Ok(100));
        assert!(parse_size("1.5M").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("10X").is_err());
        assert!(parse_size("99999999999999T").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("20s"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("20"), Ok(Duration::from_secs(20)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert!(parse_duration("s").is_err());
        assert!(parse_duration("5 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
