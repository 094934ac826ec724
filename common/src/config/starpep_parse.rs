//! Parser of the StarPEP keys of `[PEP]` (pure): values, ranges and the cross-key checks of the
//! controller (thresholds in order, phases that fit in the period).

use std::time::Duration;

use super::error::ErrorKind;
use super::parse::Ctx;
use super::starpep::{ProbeWindow, Reconfig, Starpep, WindowControl};
use super::values::{self, ValueResult};

/// Lines of the keys the cross-key checks report on (0: not given).
#[derive(Debug, Default)]
pub(super) struct StarpepLines {
    reconfig: usize,
    period: usize,
    offset: usize,
    queue_high: usize,
    recover: usize,
}

/// Handles one StarPEP key; returns false if `k` is not one.
pub(super) fn entry(
    ctx: &mut Ctx<'_>,
    s: &mut Starpep,
    lines: &mut StarpepLines,
    k: &'static str,
    v: &str,
    line: usize,
) -> bool {
    macro_rules! set {
        ($field:expr, $r:expr) => {
            if let Some(x) = ctx.value(line, k, $r) {
                $field = x;
            }
        };
    }
    let ms = Duration::from_millis;
    match k {
        "Reconfig" => {
            set!(s.reconfig, reconfig(v));
            lines.reconfig = line;
        }
        "ReconfigPeriod" => {
            set!(
                s.reconfig_period,
                duration_in(v, ms(100), Duration::from_secs(3600))
            );
            lines.period = line;
        }
        "ReconfigOffset" => {
            set!(s.reconfig_offset, offset(v));
            lines.offset = line;
        }
        "Alpha" => set!(s.alpha, fraction(v)),
        "Beta" => set!(s.beta, fraction(v)),
        "QueueLow" => set!(s.queue_low, duration_in(v, Duration::ZERO, ms(10_000))),
        "QueueHigh" => {
            set!(s.queue_high, duration_in(v, ms(0), ms(10_000)));
            lines.queue_high = line;
        }
        "GuardTime" => set!(s.guard, duration_in(v, Duration::ZERO, ms(10_000))),
        "ProbeTime" => set!(s.probe, duration_in(v, Duration::ZERO, ms(10_000))),
        "RecoverTime" => {
            set!(s.recover, duration_in(v, Duration::ZERO, ms(10_000)));
            lines.recover = line;
        }
        "ProbeWindow" => set!(s.probe_window, probe_window(v)),
        "WindowControl" => set!(s.window_control, window_control(v)),
        "LinkQueue" => set!(s.link_queue, duration_in(v, Duration::ZERO, ms(10_000))),
        "ControlLog" => s.control_log = Some(v.into()),
        _ => return false,
    }
    true
}

/// Cross-key checks of the StarPEP keys.
pub(super) fn finish(ctx: &mut Ctx<'_>, s: &Starpep, lines: &StarpepLines, pep_line: usize) {
    let at = |l: usize| if l == 0 { pep_line } else { l };
    if s.queue_low > s.queue_high {
        let msg = format!(
            "QueueHigh ({:?}) is below QueueLow ({:?})",
            s.queue_high, s.queue_low
        );
        ctx.err(at(lines.queue_high), "QueueHigh", ErrorKind::Invalid(msg));
    }
    let periodic_only = [
        ("ReconfigPeriod", lines.period),
        ("ReconfigOffset", lines.offset),
    ];
    for (key, line) in periodic_only {
        if line != 0 && s.reconfig != Reconfig::Periodic {
            let msg = "only used with Reconfig = periodic".to_string();
            ctx.err(line, key, ErrorKind::Invalid(msg));
        }
    }
    if s.reconfig == Reconfig::Periodic && lines.period == 0 {
        let msg = "Reconfig = periodic needs ReconfigPeriod".to_string();
        ctx.err(at(lines.reconfig), "Reconfig", ErrorKind::Invalid(msg));
    }
    if let Some((period, off)) = s.schedule() {
        if off >= period && lines.offset != 0 {
            let msg = format!("{off:?} is not below ReconfigPeriod ({period:?})");
            ctx.err(lines.offset, "ReconfigOffset", ErrorKind::Invalid(msg));
        }
        let phases = s.guard + s.probe + s.recover;
        if phases >= period {
            let msg = format!(
                "GuardTime + ProbeTime + RecoverTime ({phases:?}) must be shorter than the \
                 reconfiguration period ({period:?})"
            );
            let line = [lines.recover, lines.period, lines.reconfig]
                .into_iter()
                .find(|&l| l != 0)
                .unwrap_or(pep_line);
            ctx.err(line, "RecoverTime", ErrorKind::Invalid(msg));
        }
    }
}

fn reconfig(v: &str) -> ValueResult<Reconfig> {
    match v.to_ascii_lowercase().as_str() {
        "off" => Ok(Reconfig::Off),
        "starlink" => Ok(Reconfig::Starlink),
        "periodic" => Ok(Reconfig::Periodic),
        _ => Err(format!("{v:?} is not a schedule (starlink, periodic, off)")),
    }
}

fn window_control(v: &str) -> ValueResult<WindowControl> {
    match v.to_ascii_lowercase().as_str() {
        "auto" => Ok(WindowControl::Auto),
        "ebpf" => Ok(WindowControl::Ebpf),
        "clamp" => Ok(WindowControl::Clamp),
        _ => Err(format!(
            "{v:?} is not a window back-end (auto, ebpf, clamp)"
        )),
    }
}

/// A number in (0, 1].
fn fraction(v: &str) -> ValueResult<f64> {
    match v.parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        Ok(_) => Err(format!("{v} is out of range (0 < x <= 1)")),
        Err(_) => Err(format!("{v:?} is not a number (0 < x <= 1)")),
    }
}

/// A duration (zero allowed: `0`, `0ms`) within `min..=max`.
fn duration_in(v: &str, min: Duration, max: Duration) -> ValueResult<Duration> {
    let zero = v
        .trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        .is_ok_and(|x| x == 0.0);
    let d = if zero {
        Duration::ZERO
    } else {
        values::duration(v)?
    };
    if d < min || d > max {
        return Err(format!("{v:?} is out of range ({min:?}..{max:?})"));
    }
    Ok(d)
}

/// `ReconfigOffset`: `0` or a duration below an hour (checked against the period later).
fn offset(v: &str) -> ValueResult<Duration> {
    duration_in(v, Duration::ZERO, Duration::from_secs(3600))
}

/// `4` (segments) or a size `6K` (bytes), at least one segment / 1 KiB.
fn probe_window(v: &str) -> ValueResult<ProbeWindow> {
    if v.bytes().all(|b| b.is_ascii_digit()) {
        return values::int_in(v, 1u32, 1000).map(ProbeWindow::Segments);
    }
    values::byte_size(v, 1024, 64 << 20)
        .map(|b| ProbeWindow::Bytes(b as u32))
        .map_err(|e| format!("{e}; or a number of segments (1..1000)"))
}
