//! Before a calibration run: wait until this machine's CPUs are quiet. Work left over from an
//! earlier test (a deleted namespace is torn down by a kernel worker after the test returned)
//! delays satlink's releases by milliseconds on two cores, which says nothing about the
//! emulator. CI saw a probe p99 of 1.18 ms after the netns tests with no host steal to speak
//! of, against 0.16-0.29 ms on an idle machine; what held the CPU then is not known.

use std::time::{Duration, Instant};

/// The CPUs count as quiet below this busy share (all CPUs together) ...
pub const QUIET_BUSY: f64 = 0.15;
/// ... over this long ...
pub const QUIET_WINDOW: Duration = Duration::from_millis(500);
/// ... and a run starts after this much waiting in any case.
pub const QUIET_MAX_WAIT: Duration = Duration::from_secs(30);

/// Busy and total ticks of the aggregate `cpu` line of /proc/stat (busy: all but idle, iowait
/// and steal; the hypervisor's steal is [`super::steal`]'s).
pub fn cpu_ticks(line: &str) -> Option<(u64, u64)> {
    let v: Vec<u64> = line
        .strip_prefix("cpu ")?
        .split_whitespace()
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let field = |i: usize| v.get(i).copied().unwrap_or(0);
    let total: u64 = v.iter().take(8).sum();
    let (idle, iowait, steal) = (field(3), field(4), field(7));
    Some((total.saturating_sub(idle + iowait + steal), total))
}

/// The busy share between two readings of [`cpu_ticks`].
pub fn busy_share(before: (u64, u64), after: (u64, u64)) -> f64 {
    let busy = after.0.saturating_sub(before.0) as f64;
    let total = after.1.saturating_sub(before.1) as f64;
    if total > 0.0 {
        busy / total
    } else {
        0.0
    }
}

fn read() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    cpu_ticks(stat.lines().find(|l| l.starts_with("cpu "))?)
}

/// Waits until the CPUs were quiet over one [`QUIET_WINDOW`] (at most [`QUIET_MAX_WAIT`]).
/// Returns how long it waited, or `None` when they never were.
pub fn wait_quiet() -> Option<Duration> {
    let t0 = Instant::now();
    let mut before = read()?;
    while t0.elapsed() < QUIET_MAX_WAIT {
        std::thread::sleep(QUIET_WINDOW);
        let after = read()?;
        if busy_share(before, after) < QUIET_BUSY {
            return Some(t0.elapsed());
        }
        before = after;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_all_but_idle_iowait_and_steal() {
        // user nice system idle iowait irq softirq steal guest guest_nice
        let a = cpu_ticks("cpu  100 0 50 800 10 5 5 30 0 0").unwrap();
        assert_eq!(a, (160, 1000));
        let b = cpu_ticks("cpu  150 0 100 850 10 5 5 30 0 0").unwrap();
        assert!((busy_share(a, b) - 100.0 / 150.0).abs() < 1e-9);
        assert_eq!(busy_share(b, b), 0.0);
        assert_eq!(
            cpu_ticks("cpu0 1 2 3"),
            None,
            "the per-CPU lines are not the total"
        );
        assert_eq!(cpu_ticks("cpu  1 x 3"), None);
    }
}
