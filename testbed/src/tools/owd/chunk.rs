//! owd-bulk wire format (pure): the chunk header every 16 KiB of the bulk stream carries, the
//! deterministic payload pattern, the sender's chunk plan and the confirmation the receiver
//! returns. The receiver side of the stream (reassembly) is in `reasm.rs`.

/// Magic at the start of every chunk header.
pub const MAGIC: [u8; 4] = *b"OWDB";
/// Header format version.
pub const VERSION: u8 = 1;
/// Header length: magic(4) version(1) flags(1) reserved(2) len(4) index(8) stamp_ns(8).
pub const HDR_LEN: usize = 28;
/// Length of a full chunk (header included).
pub const CHUNK_LEN: usize = 16 * 1024;
/// Flag: the last chunk of the stream.
pub const FLAG_LAST: u8 = 1;
/// Magic of the receiver's confirmation.
pub const ACK_MAGIC: [u8; 4] = *b"OWDA";
/// Confirmation length: magic(4) reserved(4) bytes(8) sha256(32).
pub const ACK_LEN: usize = 48;
/// Offset of the send stamp inside the header (the sender patches it right before writing).
pub const STAMP_OFFSET: usize = 20;

/// A decoded chunk header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkHeader {
    /// Flags (`FLAG_LAST`).
    pub flags: u8,
    /// Chunk length, header included (`HDR_LEN..=CHUNK_LEN`).
    pub len: u32,
    /// Chunk index, 0 for the first chunk, +1 per chunk.
    pub index: u64,
    /// Send time, CLOCK_REALTIME nanoseconds.
    pub stamp_ns: u64,
}

impl ChunkHeader {
    /// Whether this is the last chunk of the stream.
    pub fn is_last(&self) -> bool {
        self.flags & FLAG_LAST != 0
    }

    /// Writes the header into `out[..HDR_LEN]`.
    pub fn encode(&self, out: &mut [u8]) {
        out[0..4].copy_from_slice(&MAGIC);
        out[4] = VERSION;
        out[5] = self.flags;
        out[6..8].copy_from_slice(&[0, 0]);
        out[8..12].copy_from_slice(&self.len.to_be_bytes());
        out[12..20].copy_from_slice(&self.index.to_be_bytes());
        out[20..28].copy_from_slice(&self.stamp_ns.to_be_bytes());
    }

    /// Decodes and validates a header (magic, version, reserved bits, length bounds).
    pub fn decode(b: &[u8]) -> Result<Self, HeaderError> {
        if b.len() < HDR_LEN {
            return Err(HeaderError::Truncated(b.len()));
        }
        if b[0..4] != MAGIC {
            return Err(HeaderError::Magic([b[0], b[1], b[2], b[3]]));
        }
        if b[4] != VERSION {
            return Err(HeaderError::Version(b[4]));
        }
        if b[5] & !FLAG_LAST != 0 || b[6] != 0 || b[7] != 0 {
            return Err(HeaderError::Reserved);
        }
        let len = u32::from_be_bytes(b[8..12].try_into().expect("4 bytes"));
        if (len as usize) < HDR_LEN || len as usize > CHUNK_LEN {
            return Err(HeaderError::Length(len));
        }
        Ok(Self {
            flags: b[5],
            len,
            index: u64::from_be_bytes(b[12..20].try_into().expect("8 bytes")),
            stamp_ns: u64::from_be_bytes(b[20..28].try_into().expect("8 bytes")),
        })
    }
}

/// Why a header was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("header truncated ({0} bytes)")]
    Truncated(usize),
    #[error("bad magic {0:02x?}")]
    Magic([u8; 4]),
    #[error("unknown header version {0}")]
    Version(u8),
    #[error("reserved header bits set")]
    Reserved,
    #[error("chunk length {0} outside {HDR_LEN}..={CHUNK_LEN}")]
    Length(u32),
}

/// splitmix64: the generator of the payload pattern.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Fills `out` with the payload of chunk `index` (the bytes after the header). Byte `i` of the
/// payload is byte `i % 8` (little-endian) of `splitmix64(index * K ^ i / 8)`, so any
/// corruption, reordering or splice between chunks shows as a mismatch.
pub fn fill_pattern(index: u64, out: &mut [u8]) {
    let base = index.wrapping_mul(0xD1B5_4A32_D192_ED03);
    let full = out.len() / 8;
    let mut words = out.chunks_exact_mut(8);
    for (w, word) in (&mut words).enumerate() {
        word.copy_from_slice(&splitmix64(base ^ w as u64).to_le_bytes());
    }
    let rest = words.into_remainder();
    if !rest.is_empty() {
        let v = splitmix64(base ^ full as u64).to_le_bytes();
        let n = rest.len();
        rest.copy_from_slice(&v[..n]);
    }
}

/// First payload offset where `payload` differs from the pattern of chunk `index`, if any.
pub fn check_pattern(index: u64, payload: &[u8], scratch: &mut Vec<u8>) -> Option<usize> {
    scratch.resize(payload.len(), 0);
    fill_pattern(index, scratch);
    if scratch[..] == payload[..] {
        return None;
    }
    payload.iter().zip(scratch.iter()).position(|(a, b)| a != b)
}

/// What the sender transfers: a fixed byte count, or chunks until a deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    /// Exactly this many stream bytes (headers included), at least `HDR_LEN`.
    Bytes(u64),
    /// Full chunks until this CLOCK_REALTIME instant (ns); the chunk stamped at or after it is
    /// the last.
    UntilNs(u64),
}

/// The sender's chunk plan: the length and last flag of each chunk.
#[derive(Debug, Clone)]
pub struct ChunkPlan {
    amount: Amount,
    sent: u64,
    next_index: u64,
    done: bool,
}

impl ChunkPlan {
    /// A plan for `amount`; `Bytes` below `HDR_LEN` is rejected.
    pub fn new(amount: Amount) -> Result<Self, String> {
        if let Amount::Bytes(n) = amount {
            if n < HDR_LEN as u64 {
                return Err(format!(
                    "--bytes {n}: the stream needs at least {HDR_LEN} bytes"
                ));
            }
        }
        Ok(Self {
            amount,
            sent: 0,
            next_index: 0,
            done: false,
        })
    }

    /// Whether the last chunk was planned already.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// The next chunk's header, stamped `now_ns`, or None after the last chunk.
    pub fn next(&mut self, now_ns: u64) -> Option<ChunkHeader> {
        if self.done {
            return None;
        }
        let (len, last) = match self.amount {
            Amount::Bytes(total) => {
                let rem = total - self.sent;
                let (full, hdr) = (CHUNK_LEN as u64, HDR_LEN as u64);
                if rem <= full {
                    (rem, true)
                } else if rem < full + hdr {
                    // Keep the final chunk at least a header long.
                    (rem - hdr, false)
                } else {
                    (full, false)
                }
            }
            Amount::UntilNs(end) => (CHUNK_LEN as u64, now_ns >= end),
        };
        let h = ChunkHeader {
            flags: if last { FLAG_LAST } else { 0 },
            len: len as u32,
            index: self.next_index,
            stamp_ns: now_ns,
        };
        self.sent += len;
        self.next_index += 1;
        self.done = last;
        Some(h)
    }
}

/// Writes a whole chunk (header with `h.stamp_ns`, pattern payload) into `out`, resized to
/// `h.len`.
pub fn encode_chunk(h: &ChunkHeader, out: &mut Vec<u8>) {
    out.resize(h.len as usize, 0);
    h.encode(&mut out[..HDR_LEN]);
    fill_pattern(h.index, &mut out[HDR_LEN..]);
}

/// Re-stamps an encoded chunk right before it is written.
pub fn restamp(chunk: &mut [u8], stamp_ns: u64) {
    chunk[STAMP_OFFSET..STAMP_OFFSET + 8].copy_from_slice(&stamp_ns.to_be_bytes());
}

/// The receiver's confirmation: what it received and verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ack {
    /// Stream bytes received.
    pub bytes: u64,
    /// sha256 of the stream.
    pub sha256: [u8; 32],
}

impl Ack {
    /// Encodes the confirmation.
    pub fn encode(&self) -> [u8; ACK_LEN] {
        let mut b = [0u8; ACK_LEN];
        b[0..4].copy_from_slice(&ACK_MAGIC);
        b[8..16].copy_from_slice(&self.bytes.to_be_bytes());
        b[16..48].copy_from_slice(&self.sha256);
        b
    }

    /// Decodes a confirmation.
    pub fn decode(b: &[u8]) -> Result<Self, String> {
        if b.len() != ACK_LEN {
            return Err(format!(
                "confirmation of {} bytes (want {ACK_LEN})",
                b.len()
            ));
        }
        if b[0..4] != ACK_MAGIC || b[4..8] != [0; 4] {
            return Err(format!("bad confirmation header {:02x?}", &b[0..8]));
        }
        Ok(Self {
            bytes: u64::from_be_bytes(b[8..16].try_into().expect("8 bytes")),
            sha256: b[16..48].try_into().expect("32 bytes"),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_roundtrip_and_rejects() {
        let h = ChunkHeader {
            flags: FLAG_LAST,
            len: 1000,
            index: 0x0102_0304_0506_0708,
            stamp_ns: 1_700_000_000_123_456_789,
        };
        let mut b = [0u8; HDR_LEN];
        h.encode(&mut b);
        assert_eq!(ChunkHeader::decode(&b), Ok(h));
        assert!(h.is_last());
        let mut bad = b;
        bad[0] = b'X';
        assert!(matches!(
            ChunkHeader::decode(&bad),
            Err(HeaderError::Magic(_))
        ));
        let mut bad = b;
        bad[5] = 2;
        assert_eq!(ChunkHeader::decode(&bad), Err(HeaderError::Reserved));
        let mut bad = b;
        bad[8..12].copy_from_slice(&(CHUNK_LEN as u32 + 1).to_be_bytes());
        assert!(matches!(
            ChunkHeader::decode(&bad),
            Err(HeaderError::Length(_))
        ));
        bad[8..12].copy_from_slice(&(HDR_LEN as u32 - 1).to_be_bytes());
        assert!(matches!(
            ChunkHeader::decode(&bad),
            Err(HeaderError::Length(_))
        ));
        assert_eq!(ChunkHeader::decode(&b[..5]), Err(HeaderError::Truncated(5)));
    }

    #[test]
    fn pattern_depends_on_index_and_detects_flips() {
        let mut a = vec![0u8; 1003];
        let mut b = vec![0u8; 1003];
        fill_pattern(7, &mut a);
        fill_pattern(8, &mut b);
        assert_ne!(a, b);
        let mut scratch = Vec::new();
        assert_eq!(check_pattern(7, &a, &mut scratch), None);
        a[1001] ^= 0x10;
        assert_eq!(check_pattern(7, &a, &mut scratch), Some(1001));
        // A prefix of the pattern is the pattern of the shorter payload.
        let mut short = vec![0u8; 13];
        fill_pattern(8, &mut short);
        assert_eq!(short[..], b[..13]);
    }

    fn plan_lengths(total: u64) -> Vec<u32> {
        let mut p = ChunkPlan::new(Amount::Bytes(total)).unwrap();
        let mut v = Vec::new();
        while let Some(h) = p.next(0) {
            assert_eq!(h.index as usize, v.len());
            assert_eq!(h.is_last(), p.is_done());
            v.push(h.len);
        }
        v
    }

    #[test]
    fn plan_sums_to_total_and_keeps_last_chunk_a_header_long() {
        for total in [
            28u64,
            29,
            16384,
            16385,
            16384 + 27,
            16384 + 28,
            3 * 16384 + 5,
            20 << 20,
        ] {
            let v = plan_lengths(total);
            assert_eq!(v.iter().map(|&l| l as u64).sum::<u64>(), total, "{total}");
            assert!(v
                .iter()
                .all(|&l| l as usize >= HDR_LEN && l as usize <= CHUNK_LEN));
        }
        assert!(ChunkPlan::new(Amount::Bytes(27)).is_err());
    }

    #[test]
    fn plan_until_deadline() {
        let mut p = ChunkPlan::new(Amount::UntilNs(100)).unwrap();
        assert!(!p.next(50).unwrap().is_last());
        let h = p.next(100).unwrap();
        assert!(h.is_last() && h.index == 1 && h.len as usize == CHUNK_LEN);
        assert!(p.next(200).is_none());
    }

    #[test]
    fn ack_roundtrip() {
        let a = Ack {
            bytes: 12345,
            sha256: [7; 32],
        };
        assert_eq!(Ack::decode(&a.encode()), Ok(a));
        let mut b = a.encode();
        b[1] = 0;
        assert!(Ack::decode(&b).is_err());
        assert!(Ack::decode(&b[..47]).is_err());
    }
}
