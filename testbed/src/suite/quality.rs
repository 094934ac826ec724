//! Quality figures of the benchmark suite (pure): the ITU-T G.107 E-model for a G.711 call,
//! RFC 3550 interarrival jitter, and Jain's fairness index.

/// RFC 3550 §6.4.1 interarrival jitter of a packet stream, in the unit of its timestamps:
/// `J += (|D(i−1, i)| − J) / 16` over consecutive packets, where `D` is the difference of
/// their transit times (arrival − send).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Jitter {
    j: f64,
    last_transit: Option<f64>,
}

impl Jitter {
    /// One packet's transit time (arrival − send, any fixed offset between the clocks cancels).
    pub fn on_packet(&mut self, transit: f64) {
        if let Some(prev) = self.last_transit {
            let d = (transit - prev).abs();
            self.j += (d - self.j) / 16.0;
        }
        self.last_transit = Some(transit);
    }

    pub fn value(&self) -> f64 {
        self.j
    }
}

/// G.107 transmission rating for G.711 with packet-loss concealment (Ie = 0, Bpl = 25.1,
/// random loss: BurstR = 1), defaults for everything else (R0 − Is = 93.2).
/// `mouth_to_ear_ms`: the absolute one-way delay Ta; `loss`: packet loss as a fraction.
pub fn r_factor(mouth_to_ear_ms: f64, loss: f64) -> f64 {
    const R0_MINUS_IS: f64 = 93.2;
    const IE: f64 = 0.0;
    const BPL: f64 = 25.1;
    let ta = mouth_to_ear_ms.max(0.0);
    let id = 0.024 * ta + if ta > 177.3 { 0.11 * (ta - 177.3) } else { 0.0 };
    let ppl = (loss * 100.0).clamp(0.0, 100.0);
    let ie_eff = IE + (95.0 - IE) * ppl / (ppl + BPL);
    R0_MINUS_IS - id - ie_eff
}

/// G.107 Annex B: R to the estimated mean opinion score (1.0 .. 4.5).
pub fn mos(r: f64) -> f64 {
    if r <= 0.0 {
        1.0
    } else if r >= 100.0 {
        4.5
    } else {
        1.0 + 0.035 * r + 7e-6 * r * (r - 60.0) * (100.0 - r)
    }
}

/// The call's mouth-to-ear delay as the suite reports it: the one-way network delay plus a
/// jitter buffer of twice the RFC 3550 jitter.
pub fn mouth_to_ear_ms(owd_ms: f64, jitter_ms: f64) -> f64 {
    owd_ms + 2.0 * jitter_ms
}

/// Jain's fairness index `(Σx)² / (n · Σx²)`: 1 for equal shares, `1/n` when one takes all;
/// `None` for no values or all zero.
pub fn jain(x: &[f64]) -> Option<f64> {
    let s: f64 = x.iter().sum();
    let s2: f64 = x.iter().map(|v| v * v).sum();
    (s2 > 0.0).then(|| s * s / (x.len() as f64 * s2))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_model_reference_values() {
        // No delay, no loss: R = R0 − Is = 93.2, MOS ≈ 4.41.
        assert!((r_factor(0.0, 0.0) - 93.2).abs() < 1e-9);
        assert!((mos(93.2) - 4.41).abs() < 0.01, "{}", mos(93.2));
        // Id is linear (0.024/ms) up to 177.3 ms and steepens past it.
        let slope_before = r_factor(100.0, 0.0) - r_factor(150.0, 0.0);
        let slope_after = r_factor(200.0, 0.0) - r_factor(250.0, 0.0);
        assert!((slope_before - 1.2).abs() < 1e-9);
        assert!((slope_after - (1.2 + 0.11 * 50.0)).abs() < 1e-9);
        assert!((r_factor(177.3, 0.0) - (93.2 - 0.024 * 177.3)).abs() < 1e-9);
        // 1 % random loss on G.711 with PLC: Ie,eff = 95 · 1/(1 + 25.1) ≈ 3.64.
        assert!((93.2 - r_factor(0.0, 0.01) - 3.6398).abs() < 1e-3);
        // The classic planning points: R 80 ≈ MOS 4.0, R 50 ≈ MOS 2.6, R 100+ = 4.5.
        assert!((mos(80.0) - 4.02).abs() < 0.01, "{}", mos(80.0));
        assert!((mos(50.0) - 2.58).abs() < 0.01, "{}", mos(50.0));
        assert_eq!(mos(120.0), 4.5);
        assert_eq!(mos(-5.0), 1.0);
        assert_eq!(mouth_to_ear_ms(90.0, 5.0), 100.0);
    }

    #[test]
    fn rfc3550_jitter_of_a_steady_and_an_alternating_stream() {
        let mut j = Jitter::default();
        for i in 0..100 {
            j.on_packet(50.0 + i as f64 * 0.0);
        }
        assert_eq!(j.value(), 0.0);
        // Transit alternating by 16 ms: J converges to 16.
        let mut j = Jitter::default();
        for i in 0..2000 {
            j.on_packet(if i % 2 == 0 { 40.0 } else { 56.0 });
        }
        assert!((j.value() - 16.0).abs() < 1e-6, "{}", j.value());
    }

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain(&[2.0, 2.0, 2.0, 2.0]), Some(1.0));
        assert_eq!(jain(&[8.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain(&[5.0]), Some(1.0));
        assert_eq!(jain(&[]), None);
        assert_eq!(jain(&[0.0, 0.0]), None);
        let j = jain(&[1.0, 2.0, 3.0]).unwrap();
        assert!(j > 1.0 / 3.0 && j < 1.0);
    }
}
