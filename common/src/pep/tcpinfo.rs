//! `TCP_INFO` parsing (pure): the kernel's `struct tcp_info` bytes → the figures `show` reports.
//!
//! The struct grows with kernel versions (280 bytes on this 6.18 kernel, newer than the libc
//! headers), so it is parsed by offset from the bytes the kernel returned; fields beyond the
//! returned length read as absent. Offsets follow `include/uapi/linux/tcp.h`.

use serde::{Deserialize, Serialize};

/// The figures of one segment socket, from one `TCP_INFO` sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentInfo {
    /// Congestion control in use (`TCP_CONGESTION`).
    pub congestion: String,
    /// Smoothed RTT, its variance and the minimum RTT, microseconds.
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub min_rtt_us: Option<u32>,
    /// Congestion window (segments) and send MSS (bytes).
    pub cwnd: u32,
    pub snd_mss: u32,
    pub total_retrans: u32,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    /// Bytes/s, as the kernel estimates.
    pub delivery_rate: Option<u64>,
    pub pacing_rate: Option<u64>,
    pub notsent_bytes: Option<u32>,
    pub snd_wnd: Option<u32>,
    pub rcv_wnd: Option<u32>,
}

/// `TCP_SYN_RECV` in `tcpi_state` (`include/net/tcp_states.h`).
const TCP_SYN_RECV: u8 = 3;

/// The raw fields we use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TcpInfo {
    pub state: u8,
    /// `tcpi_ca_state`: 0 open, 1 disorder, 2 CWR, 3 recovery, 4 loss.
    pub ca_state: u8,
    /// `tcpi_probes`: keepalive or zero-window probes sent and not answered.
    pub probes: u8,
    /// `tcpi_snd_wscale` / `tcpi_rcv_wscale` (the 4-bit fields of byte 6).
    pub snd_wscale: u8,
    pub rcv_wscale: u8,
    /// `tcpi_delivery_rate_app_limited`: the last rate sample was app-limited.
    pub app_limited: bool,
    pub snd_mss: u32,
    pub rcv_mss: u32,
    /// Segments sent and not yet acknowledged, and of them those selectively acknowledged
    /// (received beyond a hole) and those deemed lost.
    pub unacked: u32,
    pub sacked: u32,
    pub lost: u32,
    /// Milliseconds since data and since an acknowledgement last arrived.
    pub last_data_recv_ms: u32,
    pub last_ack_recv_ms: u32,
    /// Receiver-side RTT estimate (µs; 0 until measured).
    pub rcv_rtt_us: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub pacing_rate: Option<u64>,
    pub bytes_acked: Option<u64>,
    pub bytes_received: Option<u64>,
    /// `tcpi_segs_in`: segments received (for a sender, its ACKs).
    pub segs_in: Option<u32>,
    pub notsent_bytes: Option<u32>,
    pub min_rtt_us: Option<u32>,
    pub delivery_rate: Option<u64>,
    pub snd_wnd: Option<u32>,
    pub rcv_wnd: Option<u32>,
}

/// Byte offsets in `struct tcp_info`.
mod off {
    pub const STATE: usize = 0;
    pub const CA_STATE: usize = 1;
    pub const PROBES: usize = 3;
    pub const WSCALE: usize = 6;
    pub const FLAGS: usize = 7;
    pub const SND_MSS: usize = 16;
    pub const RCV_MSS: usize = 20;
    pub const UNACKED: usize = 24;
    pub const SACKED: usize = 28;
    pub const LOST: usize = 32;
    pub const LAST_DATA_RECV: usize = 52;
    pub const LAST_ACK_RECV: usize = 56;
    pub const RTT: usize = 68;
    pub const RTTVAR: usize = 72;
    pub const SND_CWND: usize = 80;
    pub const RCV_RTT: usize = 92;
    pub const TOTAL_RETRANS: usize = 100;
    pub const PACING_RATE: usize = 104;
    pub const BYTES_ACKED: usize = 120;
    pub const BYTES_RECEIVED: usize = 128;
    pub const SEGS_IN: usize = 140;
    pub const NOTSENT_BYTES: usize = 144;
    pub const MIN_RTT: usize = 148;
    pub const DELIVERY_RATE: usize = 160;
    pub const SND_WND: usize = 228;
    pub const RCV_WND: usize = 232;
}

/// The shortest `tcp_info` accepted (up to `tcpi_total_retrans`, Linux 2.6).
pub const MIN_LEN: usize = 104;

impl TcpInfo {
    /// `tcpi_state` is `TCP_SYN_RECV`: a passive socket waiting for its handshake's last ACK
    /// (a Fast Open child can already send).
    pub fn syn_recv(&self) -> bool {
        self.state == TCP_SYN_RECV
    }

    /// Parses the bytes `getsockopt(TCP_INFO)` returned; `None` if shorter than [`MIN_LEN`].
    pub fn parse(b: &[u8]) -> Option<TcpInfo> {
        if b.len() < MIN_LEN {
            return None;
        }
        let u32_at = |o: usize| {
            b.get(o..o + 4)
                .map(|s| u32::from_ne_bytes(s.try_into().expect("4 bytes")))
        };
        let u64_at = |o: usize| {
            b.get(o..o + 8)
                .map(|s| u64::from_ne_bytes(s.try_into().expect("8 bytes")))
        };
        let need = |o: usize| u32_at(o).unwrap_or(0);
        Some(TcpInfo {
            state: b[off::STATE],
            ca_state: b[off::CA_STATE],
            probes: b[off::PROBES],
            snd_wscale: b[off::WSCALE] & 0x0f,
            rcv_wscale: b[off::WSCALE] >> 4,
            app_limited: b[off::FLAGS] & 1 == 1,
            snd_mss: need(off::SND_MSS),
            rcv_mss: need(off::RCV_MSS),
            unacked: need(off::UNACKED),
            sacked: need(off::SACKED),
            lost: need(off::LOST),
            last_data_recv_ms: need(off::LAST_DATA_RECV),
            last_ack_recv_ms: need(off::LAST_ACK_RECV),
            rcv_rtt_us: need(off::RCV_RTT),
            rtt_us: need(off::RTT),
            rttvar_us: need(off::RTTVAR),
            snd_cwnd: need(off::SND_CWND),
            total_retrans: need(off::TOTAL_RETRANS),
            pacing_rate: u64_at(off::PACING_RATE),
            bytes_acked: u64_at(off::BYTES_ACKED),
            bytes_received: u64_at(off::BYTES_RECEIVED),
            segs_in: u32_at(off::SEGS_IN),
            notsent_bytes: u32_at(off::NOTSENT_BYTES),
            min_rtt_us: u32_at(off::MIN_RTT),
            delivery_rate: u64_at(off::DELIVERY_RATE),
            snd_wnd: u32_at(off::SND_WND),
            rcv_wnd: u32_at(off::RCV_WND),
        })
    }

    /// Bytes the peer has received: the cumulatively acknowledged ones and the SACKed segments
    /// above a hole. `tcpi_bytes_acked` alone stalls during a loss recovery and then jumps by
    /// everything SACKed meanwhile when the hole fills: over one round trip that jump reads as
    /// up to twice the link's rate. (The kernel's own `delivered` counts SACKed segments the
    /// same way, in packets.)
    pub fn delivered_bytes(&self) -> Option<u64> {
        self.bytes_acked
            .map(|a| a.saturating_add(self.sacked as u64 * self.snd_mss as u64))
    }

    /// The `show` figures, with the socket's congestion control name.
    pub fn to_segment(&self, congestion: &str) -> SegmentInfo {
        SegmentInfo {
            congestion: congestion.to_string(),
            rtt_us: self.rtt_us,
            rttvar_us: self.rttvar_us,
            min_rtt_us: self.min_rtt_us,
            cwnd: self.snd_cwnd,
            snd_mss: self.snd_mss,
            total_retrans: self.total_retrans,
            bytes_acked: self.bytes_acked,
            bytes_received: self.bytes_received,
            delivery_rate: self.delivery_rate,
            pacing_rate: self.pacing_rate,
            notsent_bytes: self.notsent_bytes,
            snd_wnd: self.snd_wnd,
            rcv_wnd: self.rcv_wnd,
        }
    }
}
