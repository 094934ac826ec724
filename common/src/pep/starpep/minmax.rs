//! Windowed running min / max over time (pure), Kathleen Nichols' three-sample algorithm as in
//! the kernel's `lib/minmax.c` (BBR's bandwidth and min-RTT filters): O(1) per sample, the best
//! value seen within the last `window`, with sub-window candidates so an old extreme expires
//! smoothly.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq)]
struct Sample {
    t: Duration,
    v: f64,
}

/// Which extreme the filter keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    Max,
    Min,
}

/// A windowed extreme filter; empty until the first sample.
#[derive(Debug, Clone)]
pub struct Windowed {
    keep: Keep,
    s: Option<[Sample; 3]>,
}

impl Windowed {
    pub fn new(keep: Keep) -> Windowed {
        Windowed { keep, s: None }
    }

    /// The current extreme, if any sample was taken.
    pub fn get(&self) -> Option<f64> {
        self.s.map(|s| s[0].v)
    }

    /// Forgets everything.
    pub fn clear(&mut self) {
        self.s = None;
    }

    /// Restarts the filter at one sample.
    pub fn reset(&mut self, t: Duration, v: f64) -> f64 {
        let x = Sample { t, v };
        self.s = Some([x; 3]);
        v
    }

    fn better(&self, a: f64, b: f64) -> bool {
        match self.keep {
            Keep::Max => a >= b,
            Keep::Min => a <= b,
        }
    }

    /// Adds a sample at `t` (non-decreasing) and returns the extreme over the last `window`.
    pub fn update(&mut self, window: Duration, t: Duration, v: f64) -> f64 {
        let Some(mut s) = self.s else {
            return self.reset(t, v);
        };
        let x = Sample { t, v };
        if self.better(v, s[0].v) || t.saturating_sub(s[2].t) > window {
            return self.reset(t, v);
        }
        if self.better(v, s[1].v) {
            s[2] = x;
            s[1] = x;
        } else if self.better(v, s[2].v) {
            s[2] = x;
        }
        let dt = t.saturating_sub(s[0].t);
        if dt > window {
            s[0] = s[1];
            s[1] = s[2];
            s[2] = x;
            if t.saturating_sub(s[0].t) > window {
                s[0] = s[1];
                s[1] = s[2];
                s[2] = x;
            }
        } else if s[1].t == s[0].t && dt > window / 4 {
            s[2] = x;
            s[1] = x;
        } else if s[2].t == s[1].t && dt > window / 2 {
            s[2] = x;
        }
        self.s = Some(s);
        s[0].v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn max_holds_for_the_window_then_expires() {
        let mut f = Windowed::new(Keep::Max);
        assert_eq!(f.get(), None);
        let w = ms(100);
        assert_eq!(f.update(w, ms(0), 10.0), 10.0);
        assert_eq!(f.update(w, ms(10), 5.0), 10.0);
        assert_eq!(f.update(w, ms(90), 6.0), 10.0);
        // 10.0 is older than the window now: the best younger candidate takes over.
        let v = f.update(w, ms(120), 4.0);
        assert!(v == 6.0 || v == 5.0, "{v}");
        assert_eq!(f.update(w, ms(400), 3.0), 3.0);
        assert_eq!(f.update(w, ms(401), 8.0), 8.0);
    }

    #[test]
    fn min_tracks_lower_values_at_once() {
        let mut f = Windowed::new(Keep::Min);
        let w = ms(1000);
        f.update(w, ms(0), 20.0);
        assert_eq!(f.update(w, ms(5), 25.0), 20.0);
        assert_eq!(f.update(w, ms(6), 15.0), 15.0);
        assert_eq!(f.update(w, ms(3000), 30.0), 30.0);
        f.clear();
        assert_eq!(f.get(), None);
    }

    #[test]
    fn a_steady_series_stays_exact() {
        let mut f = Windowed::new(Keep::Max);
        for i in 0..1000u64 {
            assert_eq!(f.update(ms(50), ms(i), 7.0), 7.0);
        }
    }
}
