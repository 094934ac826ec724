//! Propagation after the bottleneck: constant delay (+ seeded jitter) or a 10 ms-slot delay
//! trace, applied at the moment a frame leaves the server, with frame order kept.

use std::sync::Arc;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::trace::DelayTrace;

/// Random variation added to a constant delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// Normal with this standard deviation (netem `distribution normal`).
    Normal(Duration),
    /// Uniform in ±this (netem's default).
    Uniform(Duration),
}

/// A direction's propagation delay.
#[derive(Debug, Clone, PartialEq)]
pub enum DelaySpec {
    Constant {
        delay: Duration,
        jitter: Option<Jitter>,
    },
    /// The delay of the slot in which the frame leaves the bottleneck.
    Trace(Arc<DelayTrace>),
}

impl DelaySpec {
    /// The delay at `t` without jitter or queueing.
    pub fn base_at(&self, t: Duration) -> Duration {
        match self {
            DelaySpec::Constant { delay, .. } => *delay,
            DelaySpec::Trace(tr) => tr.delay_at(t),
        }
    }
}

/// The delay line: computes release times, never earlier than the previous frame's.
#[derive(Debug, Clone)]
pub struct DelayLine {
    spec: DelaySpec,
    rng: StdRng,
    last_release: Duration,
}

impl DelayLine {
    pub fn new(spec: DelaySpec, seed: u64) -> DelayLine {
        DelayLine {
            spec,
            rng: StdRng::seed_from_u64(seed),
            last_release: Duration::ZERO,
        }
    }

    pub fn spec(&self) -> &DelaySpec {
        &self.spec
    }

    /// The release time of a frame leaving the server at `depart` (non-decreasing across
    /// calls): `max(depart + delay(depart), previous release)`.
    pub fn release(&mut self, depart: Duration) -> Duration {
        let d = match &self.spec {
            DelaySpec::Constant { delay, jitter } => match jitter {
                None => *delay,
                Some(j) => {
                    let base = delay.as_secs_f64();
                    let v = match j {
                        Jitter::Normal(sd) => base + sd.as_secs_f64() * self.std_normal(),
                        Jitter::Uniform(w) => {
                            base + w.as_secs_f64() * self.rng.gen_range(-1.0..=1.0)
                        }
                    };
                    Duration::from_secs_f64(v.max(0.0))
                }
            },
            DelaySpec::Trace(tr) => tr.delay_at(depart),
        };
        self.last_release = self.last_release.max(depart + d);
        self.last_release
    }

    /// A standard normal draw (Box-Muller).
    fn std_normal(&mut self) -> f64 {
        let u1: f64 = 1.0 - self.rng.gen::<f64>(); // (0, 1]
        let u2: f64 = self.rng.gen();
        (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn falling_delay_keeps_order() {
        // 60 ms in slot 0, 10 ms afterwards.
        let tr = DelayTrace::parse("60\n10\n10\n10\n", Path::new("d")).unwrap();
        let mut l = DelayLine::new(DelaySpec::Trace(Arc::new(tr)), 1);
        assert_eq!(l.release(ms(9)), ms(69));
        // Would be 12 + 10 = 22 ms, but may not overtake the frame ahead.
        assert_eq!(l.release(ms(12)), ms(69));
        assert_eq!(l.release(ms(30)), ms(69));
        assert_eq!(l.release(ms(35)), ms(45) + ms(24)); // exactly 69 again
        assert_eq!(l.release(ms(40)), ms(100)); // wrapped to slot 0
        assert_eq!(l.spec().base_at(ms(12)), ms(10));
    }

    #[test]
    fn jitter_is_seeded_ordered_and_centred() {
        let spec = DelaySpec::Constant {
            delay: ms(50),
            jitter: Some(Jitter::Normal(ms(5))),
        };
        let draw = |seed| {
            let mut l = DelayLine::new(spec.clone(), seed);
            (0..10_000u64).map(|i| l.release(ms(i))).collect::<Vec<_>>()
        };
        let a = draw(1);
        assert_eq!(a, draw(1));
        assert_ne!(a, draw(2));
        assert!(a.windows(2).all(|w| w[0] <= w[1]));
        // Frames 1 ms apart, jitter 5 ms: the order constraint lifts the mean a little.
        let mean = a
            .iter()
            .enumerate()
            .map(|(i, r)| (*r - ms(i as u64)).as_secs_f64())
            .sum::<f64>()
            / a.len() as f64;
        assert!(mean > 0.050 && mean < 0.060, "mean delay {mean}");
        let mut u = DelayLine::new(
            DelaySpec::Constant {
                delay: ms(50),
                jitter: Some(Jitter::Uniform(ms(5))),
            },
            3,
        );
        for i in 0..1000u64 {
            let d = u.release(ms(i * 100)) - ms(i * 100);
            assert!(d >= ms(45) && d <= ms(55));
        }
    }
}
