//! Value syntaxes shared by the config sections: integers, bools, lists, prefixes, durations,
//! bit rates and byte sizes (pure; each returns the message that ends up in a `ConfigError`).

use std::net::IpAddr;
use std::time::Duration;

use ipnet::IpNet;

/// A value parser's error message (becomes `ErrorKind::Invalid`).
pub type ValueResult<T> = Result<T, String>;

/// A decimal integer in `min..=max`.
pub fn int_in<T>(s: &str, min: T, max: T) -> ValueResult<T>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    match s.parse::<T>() {
        Ok(v) if v >= min && v <= max => Ok(v),
        Ok(_) => Err(format!("{s} is out of range ({min}..{max})")),
        Err(_) if is_integer(s) => Err(format!("{s} is out of range ({min}..{max})")),
        Err(_) => Err(format!("{s:?} is not an integer ({min}..{max})")),
    }
}

/// An optional `-` followed by decimal digits.
fn is_integer(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// A decimal or `0x` hexadecimal u32 (as `wg` reads FwMark).
pub fn u32_dec_or_hex(s: &str) -> ValueResult<u32> {
    let r = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u32::from_str_radix(hex, 16),
        None => s.parse(),
    };
    r.map_err(|_| format!("{s:?} is not a 32-bit integer (decimal or 0x hex)"))
}

/// `true|false|yes|no|on|off|1|0`, any case.
/// `IPv4:port` or `[IPv6]:port`, port 1..65535 (an address literal: no name is resolved).
pub fn socket_addr(s: &str) -> ValueResult<std::net::SocketAddr> {
    let a: std::net::SocketAddr = s
        .parse()
        .map_err(|_| format!("{s:?} is not ADDRESS:PORT (IPv4, or [IPv6]:PORT)"))?;
    if a.port() == 0 {
        return Err(format!("{s:?}: port 0 (give a port 1..65535)"));
    }
    Ok(a)
}

pub fn bool_value(s: &str) -> ValueResult<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err(format!(
            "{s:?} is not a boolean (true/false, yes/no, on/off, 1/0)"
        )),
    }
}

/// Splits a comma-separated list, trimming each item; empty items are an error.
pub fn list(s: &str) -> ValueResult<Vec<&str>> {
    let items: Vec<&str> = s.split(',').map(str::trim).collect();
    if items.iter().any(|i| i.is_empty()) {
        return Err(format!("{s:?}: empty item in comma-separated list"));
    }
    Ok(items)
}

/// An interface address: `10.8.0.2/24` (host bits kept) or a bare address (as /32 or /128).
pub fn address(s: &str) -> ValueResult<IpNet> {
    if let Ok(net) = s.parse::<IpNet>() {
        return Ok(net);
    }
    s.parse::<IpAddr>()
        .map(IpNet::from)
        .map_err(|_| format!("{s:?} is not an IP address or prefix"))
}

/// A route prefix: like [`address`], with host bits cleared (`10.0.0.1/8` → `10.0.0.0/8`).
pub fn prefix(s: &str) -> ValueResult<IpNet> {
    address(s).map(|n| n.trunc())
}

/// A duration with a unit: `600ms`, `1.5s`, `250us`, `5m`, `1h`; must be > 0.
pub fn duration(s: &str) -> ValueResult<Duration> {
    let (num, unit) = split_number(s);
    let scale_ns: f64 = match unit.to_ascii_lowercase().as_str() {
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "" => return Err(format!("{s:?}: a duration needs a unit (us, ms, s, m, h)")),
        _ => return Err(format!("{s:?}: unknown duration unit (us, ms, s, m, h)")),
    };
    let v = number(num, s)?;
    let ns = v * scale_ns;
    if !(1.0..=30.0 * 86400e9).contains(&ns) {
        return Err(format!("{s:?}: duration out of range (1ns..30 days)"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// A tc/netem-style bit rate: `10mbit`, `500kbit`, `1gbit`, `9600bit` or a bare number (bit/s);
/// SI multipliers (1000); returns bits per second, > 0.
pub fn bit_rate(s: &str) -> ValueResult<u64> {
    let (num, unit) = split_number(s);
    let scale: f64 = match unit.to_ascii_lowercase().as_str() {
        "" | "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        _ => {
            return Err(format!(
                "{s:?}: unknown rate unit (bit, kbit, mbit, gbit, tbit)"
            ))
        }
    };
    let bps = number(num, s)? * scale;
    if !(1.0..=1e13).contains(&bps) {
        return Err(format!("{s:?}: rate out of range (1bit..10tbit)"));
    }
    Ok(bps.round() as u64)
}

/// A byte size: a bare number of bytes or a `K`, `M`, `G` suffix (also `KB`/`KiB`...), base 1024,
/// within `min..=max` bytes.
pub fn byte_size(s: &str, min: u64, max: u64) -> ValueResult<u64> {
    let (num, unit) = split_number(s);
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        _ => return Err(format!("{s:?}: unknown size unit (K, M, G; base 1024)")),
    };
    let v = number(num, s)? * (1u64 << shift) as f64;
    if v.fract() != 0.0 || v < min as f64 || v > max as f64 {
        return Err(format!(
            "{s:?}: size out of range ({}..{})",
            human_bytes(min),
            human_bytes(max)
        ));
    }
    Ok(v as u64)
}

/// `16384` → `16K`, `1073741824` → `1G` (for messages and docs).
pub fn human_bytes(v: u64) -> String {
    for (shift, suffix) in [(30, "G"), (20, "M"), (10, "K")] {
        if v >= 1 << shift && v.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", v >> shift);
        }
    }
    v.to_string()
}

/// Splits `"1.5ms"` into `("1.5", "ms")`.
fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// A non-negative decimal number (digits, at most one `.`).
fn number(num: &str, whole: &str) -> ValueResult<f64> {
    let ok = !num.is_empty()
        && num.chars().filter(|&c| c == '.').count() <= 1
        && num.chars().any(|c| c.is_ascii_digit());
    match num.parse::<f64>() {
        Ok(v) if ok && v.is_finite() => Ok(v),
        _ => Err(format!("{whole:?} does not start with a number")),
    }
}

/// A Linux interface name as wg-quick accepts it: `^[a-zA-Z0-9_=+.-]{1,15}$`.
pub fn is_interface_name(s: &str) -> bool {
    (1..=15).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'=' | b'+' | b'.' | b'-'))
}
