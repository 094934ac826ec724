//! owd-bulk receiver core (pure): bytes of the stream in, verified chunks and one-way-delay
//! samples out, plus the sha256 of everything received. The socket loop in `recv.rs` feeds it
//! each read with the time the read returned.

use super::chunk::{check_pattern, ChunkHeader, HeaderError, CHUNK_LEN, HDR_LEN};
use sha2::{Digest, Sha256};

/// One verified chunk: when it was stamped and when its last byte was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// Chunk index.
    pub index: u64,
    /// Chunk length, header included.
    pub len: u32,
    /// Sender's stamp (CLOCK_REALTIME ns).
    pub stamp_ns: u64,
    /// Time the read holding the chunk's last byte returned (CLOCK_REALTIME ns).
    pub recv_ns: u64,
}

impl Sample {
    /// One-way delay in ns (negative only if the two clocks disagree).
    pub fn owd_ns(&self) -> i64 {
        self.recv_ns as i64 - self.stamp_ns as i64
    }
}

/// Why the stream was rejected. `offset` is the stream offset of the chunk concerned.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("chunk {index} at stream offset {offset}: {err}")]
    Header {
        index: u64,
        offset: u64,
        err: HeaderError,
    },
    #[error("chunk at stream offset {offset}: index {got}, expected {expected}")]
    Index {
        offset: u64,
        expected: u64,
        got: u64,
    },
    #[error(
        "chunk {index} at stream offset {offset}: payload corrupted at byte {at} of the chunk"
    )]
    Corrupt { index: u64, offset: u64, at: usize },
    #[error("{extra} bytes after the last chunk (stream offset {offset})")]
    Trailing { offset: u64, extra: usize },
    #[error("stream ended after {bytes} bytes without the last chunk ({partial} bytes of chunk {index} pending)")]
    Short {
        bytes: u64,
        index: u64,
        partial: usize,
    },
}

/// Reassembles chunk boundaries from arbitrary reads and verifies every chunk.
#[derive(Debug)]
pub struct Reassembler {
    buf: Vec<u8>,
    /// Stream offset of the chunk in `buf`.
    chunk_offset: u64,
    /// Length of the chunk in `buf`, once its header is complete.
    want: Option<usize>,
    next_index: u64,
    bytes: u64,
    finished: bool,
    sha: Sha256,
    scratch: Vec<u8>,
}

impl Default for Reassembler {
    fn default() -> Self {
        Self::new()
    }
}

impl Reassembler {
    /// An empty reassembler waiting for chunk 0.
    pub fn new() -> Self {
        Self {
            buf: Vec::with_capacity(CHUNK_LEN),
            chunk_offset: 0,
            want: None,
            next_index: 0,
            bytes: 0,
            finished: false,
            sha: Sha256::new(),
            scratch: Vec::with_capacity(CHUNK_LEN),
        }
    }

    /// Stream bytes accepted so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Verified chunks so far.
    pub fn chunks(&self) -> u64 {
        self.next_index
    }

    /// Whether the last chunk has been received and verified.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// sha256 of the bytes accepted so far.
    pub fn sha256(&self) -> [u8; 32] {
        self.sha.clone().finalize().into()
    }

    /// Feeds the bytes of one read that returned at `recv_ns`; appends a sample per chunk
    /// completed. After an error the reassembler must not be fed again.
    pub fn push(
        &mut self,
        mut data: &[u8],
        recv_ns: u64,
        out: &mut Vec<Sample>,
    ) -> Result<(), StreamError> {
        if self.finished && !data.is_empty() {
            return Err(StreamError::Trailing {
                offset: self.bytes,
                extra: data.len(),
            });
        }
        self.sha.update(data);
        while !data.is_empty() {
            let need = self.want.unwrap_or(HDR_LEN) - self.buf.len();
            let take = need.min(data.len());
            self.buf.extend_from_slice(&data[..take]);
            data = &data[take..];
            self.bytes += take as u64;
            if self.buf.len() < self.want.unwrap_or(HDR_LEN) {
                break;
            }
            if self.want.is_none() {
                let h = self.header()?;
                self.want = Some(h.len as usize);
                if self.buf.len() < h.len as usize {
                    continue;
                }
            }
            out.push(self.complete(recv_ns)?);
            if self.finished && !data.is_empty() {
                return Err(StreamError::Trailing {
                    offset: self.bytes,
                    extra: data.len(),
                });
            }
        }
        Ok(())
    }

    /// Checks the stream at EOF: it must end right after the last chunk.
    pub fn finish(&self) -> Result<(), StreamError> {
        if self.finished {
            Ok(())
        } else {
            Err(StreamError::Short {
                bytes: self.bytes,
                index: self.next_index,
                partial: self.buf.len(),
            })
        }
    }

    fn header(&self) -> Result<ChunkHeader, StreamError> {
        let h = ChunkHeader::decode(&self.buf).map_err(|err| StreamError::Header {
            index: self.next_index,
            offset: self.chunk_offset,
            err,
        })?;
        if h.index != self.next_index {
            return Err(StreamError::Index {
                offset: self.chunk_offset,
                expected: self.next_index,
                got: h.index,
            });
        }
        Ok(h)
    }

    fn complete(&mut self, recv_ns: u64) -> Result<Sample, StreamError> {
        let h = ChunkHeader::decode(&self.buf).expect("header checked on arrival");
        if let Some(at) = check_pattern(h.index, &self.buf[HDR_LEN..], &mut self.scratch) {
            return Err(StreamError::Corrupt {
                index: h.index,
                offset: self.chunk_offset,
                at: HDR_LEN + at,
            });
        }
        self.chunk_offset += h.len as u64;
        self.next_index += 1;
        self.finished = h.is_last();
        self.buf.clear();
        self.want = None;
        Ok(Sample {
            index: h.index,
            len: h.len,
            stamp_ns: h.stamp_ns,
            recv_ns,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::owd::chunk::{encode_chunk, Amount, ChunkPlan};

    /// The whole stream of a `Bytes(total)` plan, chunk i stamped 1000 + i.
    pub(crate) fn stream(total: u64) -> Vec<u8> {
        let mut plan = ChunkPlan::new(Amount::Bytes(total)).unwrap();
        let (mut s, mut c) = (Vec::new(), Vec::new());
        let mut t = 1000;
        while let Some(h) = plan.next(t) {
            encode_chunk(&h, &mut c);
            s.extend_from_slice(&c);
            t += 1;
        }
        s
    }

    fn feed(r: &mut Reassembler, s: &[u8], step: usize) -> Result<Vec<Sample>, StreamError> {
        let mut out = Vec::new();
        for (i, piece) in s.chunks(step).enumerate() {
            r.push(piece, 5000 + i as u64, &mut out)?;
        }
        Ok(out)
    }

    #[test]
    fn reassembles_any_split_and_hashes_the_stream() {
        let s = stream(5 * CHUNK_LEN as u64 + 40);
        let want: [u8; 32] = Sha256::digest(&s).into();
        for step in [1, 7, 27, 28, 29, 4096, CHUNK_LEN, CHUNK_LEN + 1, s.len()] {
            let mut r = Reassembler::new();
            let out = feed(&mut r, &s, step).unwrap();
            r.finish().unwrap();
            assert_eq!(out.len(), 6, "step {step}");
            assert!(out.iter().enumerate().all(|(i, x)| x.index == i as u64));
            assert_eq!(out[5].len, 12 + HDR_LEN as u32);
            assert_eq!(out[0].stamp_ns, 1000);
            assert_eq!(r.bytes(), s.len() as u64);
            assert_eq!(r.sha256(), want);
            // recv time is that of the read holding the chunk's last byte.
            let last_read = (s.len() - 1) / step;
            assert_eq!(out[5].recv_ns, 5000 + last_read as u64);
        }
    }

    #[test]
    fn detects_corruption_gaps_truncation_and_trailing_bytes() {
        let s = stream(3 * CHUNK_LEN as u64);
        let mut bad = s.clone();
        bad[CHUNK_LEN + 100] ^= 1;
        let e = feed(&mut Reassembler::new(), &bad, 1000).unwrap_err();
        assert_eq!(
            e,
            StreamError::Corrupt {
                index: 1,
                offset: CHUNK_LEN as u64,
                at: 100
            }
        );
        // Chunk 1 missing: chunk 2's header follows chunk 0.
        let mut gap = s[..CHUNK_LEN].to_vec();
        gap.extend_from_slice(&s[2 * CHUNK_LEN..]);
        let e = feed(&mut Reassembler::new(), &gap, 999).unwrap_err();
        assert!(
            matches!(
                e,
                StreamError::Index {
                    expected: 1,
                    got: 2,
                    ..
                }
            ),
            "{e}"
        );
        // Short stream.
        let mut r = Reassembler::new();
        feed(&mut r, &s[..s.len() - 1], 4096).unwrap();
        assert!(matches!(
            r.finish(),
            Err(StreamError::Short { index: 2, .. })
        ));
        // Trailing bytes, in the same read and in a later one.
        let mut t = s.clone();
        t.push(0);
        let e = feed(&mut Reassembler::new(), &t, t.len()).unwrap_err();
        assert!(matches!(e, StreamError::Trailing { extra: 1, .. }));
        let mut r = Reassembler::new();
        feed(&mut r, &s, 512).unwrap();
        assert!(r.push(&[1], 0, &mut Vec::new()).is_err());
        // Garbage instead of a header.
        let e = feed(&mut Reassembler::new(), &[0u8; 100], 100).unwrap_err();
        assert!(matches!(e, StreamError::Header { index: 0, .. }));
    }

    #[test]
    fn empty_stream_is_short() {
        let r = Reassembler::new();
        assert!(matches!(
            r.finish(),
            Err(StreamError::Short { bytes: 0, .. })
        ));
    }
}
