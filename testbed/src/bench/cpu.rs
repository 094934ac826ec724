//! CPU time of processes and of their threads from `/proc/PID/stat` (utime + stime), for
//! CPU-per-Gbit figures and the load of each data-path worker, and their memory from
//! `/proc/PID/status`.

use std::time::Duration;

/// User + system CPU time consumed so far by `pid` (all its threads).
pub fn cpu_time(pid: u32) -> anyhow::Result<Duration> {
    stat_time(&format!("/proc/{pid}/stat"))
}

/// Each thread of `pid`: its name (`comm`) and the CPU time it consumed so far.
pub fn thread_times(pid: u32) -> anyhow::Result<Vec<(String, Duration)>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(format!("/proc/{pid}/task"))? {
        let dir = e?.path();
        // A thread may end between the listing and the reads.
        let (Ok(name), Ok(t)) = (
            std::fs::read_to_string(dir.join("comm")),
            stat_time(&dir.join("stat").to_string_lossy()),
        ) else {
            continue;
        };
        out.push((name.trim().to_string(), t));
    }
    out.sort();
    Ok(out)
}

/// utime + stime of a `/proc/.../stat` file.
fn stat_time(path: &str) -> anyhow::Result<Duration> {
    let stat = std::fs::read_to_string(path)?;
    // The command name (field 2) may contain spaces: fields are counted after its ')'.
    let rest = stat
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or_else(|| anyhow::anyhow!("{path}: no ')'"))?;
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After ')': field 3 is f[0], so utime (14) is f[11] and stime (15) is f[12].
    let ticks: u64 = f
        .get(11)
        .zip(f.get(12))
        .and_then(|(u, s)| Some(u.parse::<u64>().ok()? + s.parse::<u64>().ok()?))
        .ok_or_else(|| anyhow::anyhow!("{path}: no utime/stime"))?;
    let hz = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK)?.unwrap_or(100) as u64;
    Ok(Duration::from_secs_f64(ticks as f64 / hz as f64))
}

/// `VmRSS` and `VmHWM` (the peak) of `pid`, in KiB.
pub fn rss_kib(pid: u32) -> anyhow::Result<(u64, u64)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |k: &str| -> anyhow::Result<u64> {
        s.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("/proc/{pid}/status: no {k}"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Sum of [`cpu_time`] over `pids`.
pub fn total(pids: &[u32]) -> anyhow::Result<Duration> {
    pids.iter().map(|p| cpu_time(*p)).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_cpu_time_grows_with_work() {
        let me = std::process::id();
        let a = cpu_time(me).unwrap();
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(150) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let b = cpu_time(me).unwrap();
        assert!(b > a, "{a:?} -> {b:?}");
    }

    #[test]
    fn a_busy_thread_is_named_and_its_time_grows() {
        let me = std::process::id();
        let h = std::thread::Builder::new()
            .name("cpu-test-spin".into())
            .spawn(|| {
                let mut x = 0u64;
                let t = std::time::Instant::now();
                while t.elapsed() < Duration::from_millis(150) {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                }
                std::hint::black_box(x);
                let v = thread_times(std::process::id()).unwrap();
                v.into_iter().find(|(n, _)| n == "cpu-test-spin")
            })
            .unwrap();
        let (_, t) = h.join().unwrap().expect("the thread lists itself");
        assert!(t > Duration::ZERO, "{t:?}");
        assert!(!thread_times(me).unwrap().is_empty());
    }

    #[test]
    fn own_memory_is_read_and_the_peak_is_not_below_it() {
        let (rss, hwm) = rss_kib(std::process::id()).unwrap();
        assert!(rss > 0 && hwm >= rss, "{rss} {hwm}");
    }
}
