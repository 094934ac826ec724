//! Host steal during a calibration run: the CPU time the hypervisor withheld from this
//! machine's vCPUs (`steal` in /proc/stat), as a share of the run and as its worst burst. A
//! userspace emulator's release times cannot hold to 1 ms while its vCPU is not running, and one
//! stall of ~100 ms fails a run whose total steal is well under 1 %.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Host steal above this share of the wall-clock time (summed over the vCPUs) makes a
/// calibration run say nothing about the emulator's timing.
pub const STEAL_LIMIT: f64 = 0.01;
/// So does this much steal within any [`BURST_WINDOW`]: a stall, not the background
/// (an idle host here shows about one 10 ms tick in ten seconds).
pub const STALL_LIMIT: Duration = Duration::from_millis(30);
/// The window of [`STALL_LIMIT`].
pub const BURST_WINDOW: Duration = Duration::from_millis(200);
/// How often the watcher reads /proc/stat.
const SAMPLE: Duration = Duration::from_millis(20);

/// The host steal of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Steal {
    /// Steal over wall-clock time.
    pub share: f64,
    /// The most steal within any [`BURST_WINDOW`].
    pub burst: Duration,
}

impl Steal {
    /// Whether the host left the run alone: its timing checks mean something.
    pub fn calm(&self) -> bool {
        self.share <= STEAL_LIMIT && self.burst < STALL_LIMIT
    }
}

/// The most that the cumulative counter `samples` (time, steal so far; in time order) grew
/// within any `window`. The growth across one gap between two samples always counts, however
/// long the gap: a stall long enough to stop the sampler too is the one that matters most.
pub fn worst_burst(samples: &[(Duration, Duration)], window: Duration) -> Duration {
    let mut worst = Duration::ZERO;
    let mut from = 0;
    for (i, &(t, s)) in samples.iter().enumerate() {
        while from + 1 < i && samples[from].0 + window < t {
            from += 1;
        }
        worst = worst.max(s.saturating_sub(samples[from].1));
    }
    worst
}

/// When, and each vCPU's steal so far.
type Sample = (Duration, Vec<Duration>);

/// Samples the host steal in a thread until [`StealWatch::finish`] (or drop).
pub struct StealWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Sample>>>,
    t0: Instant,
}

impl StealWatch {
    pub fn start() -> StealWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let t0 = Instant::now();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            loop {
                let last = flag.load(Ordering::Relaxed);
                if let Some(s) = host_steal_per_cpu() {
                    samples.push((t0.elapsed(), s));
                }
                if last {
                    return samples;
                }
                std::thread::sleep(SAMPLE);
            }
        });
        StealWatch {
            stop,
            thread: Some(thread),
            t0,
        }
    }

    /// The run's steal (none seen when /proc/stat has no steal column): the share summed over
    /// the vCPUs, the burst of the worst vCPU.
    pub fn finish(mut self) -> Steal {
        self.stop.store(true, Ordering::Relaxed);
        let samples = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let cpus = samples.iter().map(|(_, s)| s.len()).min().unwrap_or(0);
        let total =
            |i: usize| -> Duration { samples.get(i).map_or(Duration::ZERO, |s| s.1.iter().sum()) };
        let all = total(samples.len().saturating_sub(1)).saturating_sub(total(0));
        let burst = (0..cpus)
            .map(|c| {
                let one: Vec<(Duration, Duration)> =
                    samples.iter().map(|(t, s)| (*t, s[c])).collect();
                worst_burst(&one, BURST_WINDOW)
            })
            .max()
            .unwrap_or(Duration::ZERO);
        Steal {
            share: all.as_secs_f64() / self.t0.elapsed().as_secs_f64().max(1e-9),
            burst,
        }
    }
}

impl Drop for StealWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// CPU time the hypervisor withheld from this machine's vCPUs so far (the `steal` column of
/// /proc/stat, in USER_HZ = 100 ticks/s): the host stalls that delay releases.
pub fn host_steal() -> Option<Duration> {
    steal_of(
        std::fs::read_to_string("/proc/stat")
            .ok()?
            .lines()
            .find(|l| l.starts_with("cpu "))?,
    )
}

/// The same, per vCPU (the `cpuN` lines).
fn host_steal_per_cpu() -> Option<Vec<Duration>> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    stat.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .map(steal_of)
        .collect()
}

fn steal_of(line: &str) -> Option<Duration> {
    let ticks: u64 = line.split_whitespace().nth(8)?.parse().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// A counter sampled every 20 ms that grows by `steps` (at sample index, by ms).
    fn series(n: u64, steps: &[(u64, u64)]) -> Vec<(Duration, Duration)> {
        let mut s = 0;
        (0..n)
            .map(|i| {
                s += steps
                    .iter()
                    .filter(|(at, _)| *at == i)
                    .map(|(_, v)| v)
                    .sum::<u64>();
                (ms(i * 20), ms(s))
            })
            .collect()
    }

    #[test]
    fn one_stall_is_a_burst_and_spread_ticks_are_not() {
        let stall = series(500, &[(100, 90)]);
        assert_eq!(worst_burst(&stall, BURST_WINDOW), ms(90));
        let spread: Vec<(u64, u64)> = (0..500).step_by(25).map(|i| (i, 10)).collect();
        let background = series(500, &spread);
        assert_eq!(worst_burst(&background, BURST_WINDOW), ms(10));
        let s = Steal {
            share: 0.004,
            burst: ms(90),
        };
        assert!(!s.calm(), "a 90 ms stall under 1 % overall is not calm");
        let s = Steal {
            share: 0.002,
            burst: ms(10),
        };
        assert!(s.calm());
        let s = Steal {
            share: 0.02,
            burst: ms(10),
        };
        assert!(!s.calm(), "2 % overall is not calm");
    }

    #[test]
    fn a_stall_that_stopped_the_sampler_counts_whole() {
        // 300 ms without a sample, 250 ms of steal across that gap.
        let gap = vec![
            (ms(0), ms(0)),
            (ms(20), ms(0)),
            (ms(320), ms(250)),
            (ms(340), ms(250)),
        ];
        assert_eq!(worst_burst(&gap, BURST_WINDOW), ms(250));
    }

    #[test]
    fn a_stall_split_over_two_samples_counts_whole() {
        let split = series(100, &[(50, 40), (52, 40)]);
        assert_eq!(worst_burst(&split, BURST_WINDOW), ms(80));
        assert_eq!(worst_burst(&[], BURST_WINDOW), Duration::ZERO);
    }
}
