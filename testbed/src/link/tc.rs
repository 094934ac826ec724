//! `tc` equivalents of a constant profile, for machines whose kernel has netem:
//! per device, a netem root (delay, jitter, loss) with a tbf child (rate, drop-tail queue).

use super::capacity::CapacitySpec;
use super::delay::{DelaySpec, Jitter};
use super::loss::LossSpec;
use super::profile::{DirectionSpec, Profile, ProfileError};
use super::queue::QueueLimit;
use super::units::{fmt_duration, fmt_percent, fmt_rate};

/// netem's own limit: large, so only the tbf queue drops (netem holds frames in flight).
pub const NETEM_LIMIT: usize = 100_000;

/// Bytes a full-size frame occupies in tbf (1500-byte IP packet + Ethernet header): a
/// packet limit becomes `limit × FRAME_BYTES` bytes.
pub const FRAME_BYTES: usize = 1514;

pub(super) fn commands(
    p: &Profile,
    dev_down: &str,
    dev_up: &str,
) -> Result<Vec<String>, ProfileError> {
    let not = |what: String| ProfileError::NotConstant {
        path: p.path.clone(),
        what,
    };
    for (name, d) in [("down", p.down()), ("up", p.up())] {
        if matches!(d.capacity, CapacitySpec::Trace(_)) {
            return Err(not(format!("[{name}] uses rate_trace")));
        }
        if matches!(d.delay, DelaySpec::Trace(_)) {
            return Err(not(format!("[{name}] uses delay_trace")));
        }
    }
    if p.reconfig().is_some_and(|s| !s.outage.is_zero()) {
        return Err(not("[reconfig] has outages".into()));
    }
    let mut out = direction(dev_down, p.down());
    out.extend(direction(dev_up, p.up()));
    Ok(out)
}

fn direction(dev: &str, d: &DirectionSpec) -> Vec<String> {
    let mut netem = format!("tc qdisc replace dev {dev} root handle 1: netem");
    if let DelaySpec::Constant { delay, jitter } = &d.delay {
        netem += &format!(" delay {}", fmt_duration(*delay));
        match jitter {
            None => {}
            Some(Jitter::Uniform(j)) => netem += &format!(" {}", fmt_duration(*j)),
            Some(Jitter::Normal(j)) => {
                netem += &format!(" {} distribution normal", fmt_duration(*j))
            }
        }
    }
    match d.loss {
        LossSpec::None => {}
        LossSpec::Bernoulli(p) => netem += &format!(" loss random {}", fmt_percent(p)),
        LossSpec::GilbertElliott { p, r, h, k } => {
            netem += &format!(
                " loss gemodel {} {} {} {}",
                fmt_percent(p),
                fmt_percent(r),
                fmt_percent(1.0 - h),
                fmt_percent(1.0 - k)
            )
        }
    }
    netem += &format!(" limit {NETEM_LIMIT}");
    let CapacitySpec::Rate(bps) = d.capacity else {
        unreachable!("checked constant")
    };
    // At least one full frame, and at least one ms of tokens (tc's rate/HZ rule, HZ = 1000).
    let burst = FRAME_BYTES.max((bps / 8 / 1000) as usize);
    let limit = match d.limit {
        QueueLimit::Packets(n) => n * FRAME_BYTES,
        QueueLimit::Bytes(b) => b,
    };
    let tbf = format!(
        "tc qdisc replace dev {dev} parent 1:1 handle 10: tbf rate {} burst {burst} limit {limit}",
        fmt_rate(bps)
    );
    vec![netem, tbf]
}
