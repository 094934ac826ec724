//! The satellite segment's ACK spacing (pure): the bytes its receiver acknowledges per ACK,
//! which sizes how much the satellite socket keeps unsent.
//!
//! The relay refills the satellite socket when the kernel reports write space, and the kernel
//! does that when an ACK frees room (`TCP_NOTSENT_LOWAT` wakes at half the mark). Between two
//! ACKs the socket can send only what it holds unsent; with a mark below one ACK's worth it
//! runs dry and waits for the next ACK while the PEP still holds the data. The tunnel's
//! receive offloads make that worth a lot: the box's stack sees coalesced segments and ACKs
//! every 10–16 of them (measured on the Starlink trace), where a 6 KB mark holds four.

/// EWMA gain per sample.
const GAIN: f64 = 0.1;

/// Bytes delivered per ACK received, smoothed.
#[derive(Debug, Clone, Copy, Default)]
pub struct AckSpacing {
    last: Option<(u64, u32)>,
    per_ack: Option<f64>,
}

impl AckSpacing {
    /// Feeds the socket's delivered bytes and its segments received (`tcpi_segs_in`: for a
    /// sender, its ACKs); returns the smoothed bytes per ACK once known.
    pub fn on_sample(&mut self, delivered: u64, acks: u32) -> Option<u32> {
        if let Some((d0, a0)) = self.last {
            let (dd, da) = (delivered.saturating_sub(d0), acks.wrapping_sub(a0));
            if da > 0 && dd > 0 {
                let x = dd as f64 / da as f64;
                self.per_ack = Some(self.per_ack.map_or(x, |p| p + GAIN * (x - p)));
            }
        }
        self.last = Some((delivered, acks));
        self.get()
    }

    pub fn get(&self) -> Option<u32> {
        self.per_ack.map(|p| p.min(u32::MAX as f64) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_per_ack_follow_the_receiver() {
        let mut a = AckSpacing::default();
        assert_eq!(a.on_sample(0, 0), None);
        // One ACK per two segments.
        assert_eq!(a.on_sample(2736 * 10, 10), Some(2736));
        // A tick without ACKs changes nothing.
        assert_eq!(a.on_sample(2736 * 10, 10), Some(2736));
        // A receiver behind GRO: one ACK per 12 segments; the estimate converges.
        let (mut d, mut n) = (27_360u64, 10u32);
        for _ in 0..100 {
            d += 16_416 * 3;
            n += 3;
            a.on_sample(d, n);
        }
        assert!(
            (16_000..=16_416).contains(&a.get().unwrap()),
            "{:?}",
            a.get()
        );
    }

    #[test]
    fn a_wrapped_counter_is_one_step() {
        let mut a = AckSpacing::default();
        a.on_sample(0, u32::MAX);
        assert_eq!(a.on_sample(3000, 1), Some(1500));
    }
}
