//! Profile value syntax (tc/netem style): rates `10mbit`, durations `250ms`, fractions `1%`.
//!
//! The serde newtypes [`Rate`], [`Dur`] and [`Frac`] parse while the TOML is deserialised, so a
//! bad value is reported by the TOML layer with its line and key.

use std::fmt;
use std::time::Duration;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// Parses a tc-style rate into bits per second: `bit kbit mbit gbit` (SI, ×1000) and the byte
/// rates `bps kbps mbps gbps` (tc's meaning: bytes per second). A bare number is rejected.
pub fn parse_rate(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("rate {s:?} has no unit (use e.g. \"10mbit\")"))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("rate {s:?}: {num:?} is not a number"))?;
    let mult = match unit.trim() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "bps" => 8.0,
        "kbps" => 8e3,
        "mbps" => 8e6,
        "gbps" => 8e9,
        u => {
            return Err(format!(
                "rate {s:?}: unknown unit {u:?} (bit, kbit, mbit, gbit; bps, kbps, mbps, gbps are bytes/s)"
            ))
        }
    };
    let bps = (v * mult).round();
    if !(1.0..1e13).contains(&bps) {
        return Err(format!("rate {s:?} out of range (1 bit/s .. 10 Tbit/s)"));
    }
    Ok(bps as u64)
}

/// Parses a duration: a number with `s`, `ms` or `us` (`250ms`, `1.5s`, `500us`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim().to_ascii_lowercase();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("duration {s:?} has no unit (use e.g. \"250ms\")"))?;
    let (num, unit) = t.split_at(split);
    let v: f64 = num
        .parse()
        .map_err(|_| format!("duration {s:?}: {num:?} is not a number"))?;
    let secs = match unit.trim() {
        "s" | "sec" => v,
        "ms" | "msec" => v / 1e3,
        "us" | "usec" => v / 1e6,
        u => return Err(format!("duration {s:?}: unknown unit {u:?} (s, ms, us)")),
    };
    if !(0.0..=1e6).contains(&secs) {
        return Err(format!("duration {s:?} out of range"));
    }
    Ok(Duration::from_nanos((secs * 1e9).round() as u64))
}

/// Parses a probability: `"1%"`, `"0.2%"` or a plain fraction `0.002` (string or number).
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let v = if let Some(p) = t.strip_suffix('%') {
        p.trim()
            .parse::<f64>()
            .map_err(|_| format!("{s:?} is not a percentage"))?
            / 100.0
    } else {
        t.parse::<f64>()
            .map_err(|_| format!("{s:?} is not a probability (use \"1%\" or 0.01)"))?
    };
    check_fraction(v).map_err(|e| format!("{s:?}: {e}"))
}

fn check_fraction(v: f64) -> Result<f64, String> {
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(format!("probability {v} is outside 0..1"))
    }
}

/// Formats bits/s the way tc reads them (`10mbit`, `1500kbit`, `123bit`).
pub fn fmt_rate(bps: u64) -> String {
    if bps.is_multiple_of(1_000_000_000) {
        format!("{}gbit", bps / 1_000_000_000)
    } else if bps.is_multiple_of(1_000_000) {
        format!("{}mbit", bps / 1_000_000)
    } else if bps.is_multiple_of(1_000) {
        format!("{}kbit", bps / 1_000)
    } else {
        format!("{bps}bit")
    }
}

/// Formats a duration the way tc reads it (`250ms`, `1500us`).
pub fn fmt_duration(d: Duration) -> String {
    let us = d.as_micros();
    if us.is_multiple_of(1000) {
        format!("{}ms", us / 1000)
    } else {
        format!("{us}us")
    }
}

/// Formats a probability as a tc percentage (`1%`, `0.2%`).
pub fn fmt_percent(p: f64) -> String {
    let s = format!("{:.6}", p * 100.0);
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s}%")
}

/// A rate in bits per second, deserialised from `"10mbit"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate(pub u64);

/// A duration, deserialised from `"250ms"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

/// A probability in 0..=1, deserialised from `"1%"` or `0.01`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frac(pub f64);

struct StrVisitor<F>(&'static str, F);

impl<T, F: Fn(&str) -> Result<T, String>> Visitor<'_> for StrVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.1)(v).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("a rate such as \"10mbit\"", parse_rate))
            .map(Rate)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_str(StrVisitor("a duration such as \"250ms\"", parse_duration))
            .map(Dur)
    }
}

struct FracVisitor;

impl Visitor<'_> for FracVisitor {
    type Value = f64;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a probability such as \"1%\" or 0.01")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
        parse_fraction(v).map_err(E::custom)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
        check_fraction(v).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
        check_fraction(v as f64).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
        check_fraction(v as f64).map_err(E::custom)
    }
}

impl<'de> Deserialize<'de> for Frac {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(FracVisitor).map(Frac)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10mbit"), Ok(10_000_000));
        assert_eq!(parse_rate("1.5Mbit"), Ok(1_500_000));
        assert_eq!(parse_rate("100kbit"), Ok(100_000));
        assert_eq!(parse_rate("1mbps"), Ok(8_000_000));
        assert!(parse_rate("10").is_err());
        assert!(parse_rate("10 furlongs").is_err());
        assert!(parse_rate("0mbit").is_err());
        assert_eq!(fmt_rate(10_000_000), "10mbit");
        assert_eq!(fmt_rate(1_500_000), "1500kbit");
    }

    #[test]
    fn durations_and_fractions() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("500us"), Ok(Duration::from_micros(500)));
        assert!(parse_duration("250").is_err());
        assert!(parse_duration("-1ms").is_err());
        assert_eq!(fmt_duration(Duration::from_millis(250)), "250ms");
        assert_eq!(fmt_duration(Duration::from_micros(1500)), "1500us");
        assert_eq!(parse_fraction("1%"), Ok(0.01));
        assert_eq!(parse_fraction("0.002"), Ok(0.002));
        assert!(parse_fraction("120%").is_err());
        assert!(parse_fraction("x").is_err());
        assert_eq!(fmt_percent(0.01), "1%");
        assert_eq!(fmt_percent(0.002), "0.2%");
    }
}
