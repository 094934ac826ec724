//! Random loss at the link entry: Bernoulli, or a Gilbert-Elliott two-state burst model, seeded.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Which loss process a direction applies to arriving frames.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum LossSpec {
    #[default]
    None,
    /// Each frame lost independently with this probability.
    Bernoulli(f64),
    /// Gilbert-Elliott: `p` = P(Good → Bad), `r` = P(Bad → Good) per frame; `h` = P(delivered |
    /// Bad), `k` = P(delivered | Good). netem's `loss gemodel p r 1-h 1-k` has the same p, r.
    GilbertElliott { p: f64, r: f64, h: f64, k: f64 },
}

impl LossSpec {
    /// The long-run loss rate.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossSpec::None => 0.0,
            LossSpec::Bernoulli(p) => p,
            LossSpec::GilbertElliott { p, r, h, k } => {
                if p + r == 0.0 {
                    return 1.0 - k; // never leaves Good
                }
                let bad = p / (p + r);
                bad * (1.0 - h) + (1.0 - bad) * (1.0 - k)
            }
        }
    }
}

/// The loss process state: its RNG and (for Gilbert-Elliott) the current state.
#[derive(Debug, Clone)]
pub struct LossProcess {
    spec: LossSpec,
    rng: StdRng,
    bad: bool,
}

impl LossProcess {
    /// Starts in the Good state.
    pub fn new(spec: LossSpec, seed: u64) -> LossProcess {
        LossProcess {
            spec,
            rng: StdRng::seed_from_u64(seed),
            bad: false,
        }
    }

    /// Decides the fate of the next frame: true = lost. In Gilbert-Elliott the frame is judged
    /// in the current state, then the state moves.
    pub fn lose(&mut self) -> bool {
        match self.spec {
            LossSpec::None => false,
            LossSpec::Bernoulli(p) => p > 0.0 && self.rng.gen::<f64>() < p,
            LossSpec::GilbertElliott { p, r, h, k } => {
                let deliver = if self.bad { h } else { k };
                let lost = self.rng.gen::<f64>() >= deliver;
                let flip = if self.bad { r } else { p };
                if self.rng.gen::<f64>() < flip {
                    self.bad = !self.bad;
                }
                lost
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 100_000;

    fn run(spec: LossSpec, seed: u64) -> Vec<bool> {
        let mut l = LossProcess::new(spec, seed);
        (0..N).map(|_| l.lose()).collect()
    }

    /// Wald 95 % interval half-width for n trials at rate p.
    fn half95(p: f64, n: f64) -> f64 {
        1.96 * (p * (1.0 - p) / n).sqrt()
    }

    #[test]
    fn bernoulli_rate_in_binomial_interval_and_seeded() {
        let a = run(LossSpec::Bernoulli(0.01), 7);
        let lost = a.iter().filter(|&&x| x).count() as f64;
        let rate = lost / N as f64;
        assert!((rate - 0.01).abs() <= half95(0.01, N as f64), "rate {rate}");
        assert_eq!(a, run(LossSpec::Bernoulli(0.01), 7));
        assert_ne!(a, run(LossSpec::Bernoulli(0.01), 8));
        assert!(run(LossSpec::Bernoulli(0.0), 1).iter().all(|&x| !x));
        assert!(run(LossSpec::None, 1).iter().all(|&x| !x));
    }

    #[test]
    fn gilbert_elliott_mean_and_bursts() {
        let spec = LossSpec::GilbertElliott {
            p: 0.01,
            r: 0.3,
            h: 0.2,
            k: 0.999,
        };
        let theory = spec.mean_loss();
        let mut total = 0.0;
        let mut bursts = 0usize;
        let runs = 10;
        for seed in 0..runs {
            let v = run(spec, seed);
            total += v.iter().filter(|&&x| x).count() as f64;
            bursts += v.windows(2).filter(|w| w[0] && w[1]).count();
        }
        let rate = total / (N as u64 * runs) as f64;
        // Correlated losses: allow 5 % relative error over 1M frames.
        assert!(
            (rate - theory).abs() < 0.05 * theory,
            "rate {rate} theory {theory}"
        );
        // Bursty: consecutive losses far above the independent expectation (rate² · frames).
        let indep = theory * theory * (N as u64 * runs) as f64;
        assert!(bursts as f64 > 5.0 * indep, "{bursts} vs {indep}");
        assert_eq!(run(spec, 3), run(spec, 3));
    }
}
