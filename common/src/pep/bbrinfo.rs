//! `TCP_CC_INFO` parsing (pure) for BBR: the kernel's `struct tcp_bbr_info` bytes → BBR's own
//! model of the satellite segment (bandwidth, min RTT, gains), which the StarPEP controller
//! reads to see BBR's ProbeRTT coming.

/// `BBR_UNIT`: gains are fixed-point with this as 1.0.
pub const BBR_UNIT: u32 = 256;

/// One `TCP_CC_INFO` sample of a BBR socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BbrInfo {
    /// BBR's max-filtered bandwidth, bytes/s.
    pub bw: u64,
    /// BBR's windowed minimum RTT, µs.
    pub min_rtt_us: u32,
    pub pacing_gain: u32,
    pub cwnd_gain: u32,
}

/// `sizeof(struct tcp_bbr_info)`.
pub const LEN: usize = 20;

impl BbrInfo {
    /// Parses what `getsockopt(TCP_CC_INFO)` returned for a BBR socket; `None` if short.
    pub fn parse(b: &[u8]) -> Option<BbrInfo> {
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
        };
        Some(BbrInfo {
            bw: u32_at(0)? as u64 | (u32_at(4)? as u64) << 32,
            min_rtt_us: u32_at(8)?,
            pacing_gain: u32_at(12)?,
            cwnd_gain: u32_at(16)?,
        })
    }

    /// ProbeRTT is the only BBR state with a cwnd gain of 1 (STARTUP and DRAIN use 2.89,
    /// PROBE_BW 2).
    pub fn in_probe_rtt(&self) -> bool {
        self.cwnd_gain == BBR_UNIT
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(v: [u32; 5]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    #[test]
    fn parses_the_five_fields_and_tells_probe_rtt() {
        let i = BbrInfo::parse(&bytes([7_000_000, 1, 25_000, 320, 512])).unwrap();
        assert_eq!(i.bw, (1u64 << 32) + 7_000_000);
        assert_eq!(i.min_rtt_us, 25_000);
        assert_eq!((i.pacing_gain, i.cwnd_gain), (320, 512));
        assert!(!i.in_probe_rtt());
        let p = BbrInfo::parse(&bytes([1, 0, 25_000, 256, 256])).unwrap();
        assert!(p.in_probe_rtt());
        assert_eq!(BbrInfo::parse(&bytes([1, 0, 2, 3, 4])[..LEN - 1]), None);
    }
}
