//! Preallocated frame buffers for one direction: frames wait here while the link model holds
//! their handle. Grows in whole chunks (never moves a stored frame), so no per-packet allocation.

/// Slots per chunk: one allocation of `CHUNK * slot` bytes when the pool grows.
const CHUNK: usize = 1024;

/// A pool of fixed-size frame slots addressed by `u32` handles.
pub struct Pool {
    slot: usize,
    chunks: Vec<Box<[u8]>>,
    free: Vec<u32>,
    max_slots: usize,
}

impl Pool {
    /// A pool of `slot`-byte buffers with `initial` slots ready and room to grow to `max_slots`.
    pub fn new(slot: usize, initial: usize, max_slots: usize) -> Pool {
        let mut p = Pool {
            slot,
            chunks: Vec::new(),
            free: Vec::with_capacity(max_slots),
            max_slots: max_slots.max(CHUNK),
        };
        while p.capacity() < initial.max(1) && p.grow() {}
        p
    }

    pub fn slot_size(&self) -> usize {
        self.slot
    }

    /// Slots allocated so far (free or in use).
    pub fn capacity(&self) -> usize {
        self.chunks.len() * CHUNK
    }

    pub fn in_use(&self) -> usize {
        self.capacity() - self.free.len()
    }

    fn grow(&mut self) -> bool {
        if self.capacity() + CHUNK > self.max_slots {
            return false;
        }
        let base = self.capacity() as u32;
        self.chunks
            .push(vec![0u8; CHUNK * self.slot].into_boxed_slice());
        // Pop order: lowest handle first (reverse push), purely cosmetic.
        self.free.extend((base..base + CHUNK as u32).rev());
        true
    }

    /// A free slot holding a copy of `frame` (truncated to the slot size), or None when the
    /// pool is at its maximum and every slot is in use.
    pub fn store(&mut self, frame: &[u8]) -> Option<u32> {
        if self.free.is_empty() && !self.grow() {
            return None;
        }
        let h = self.free.pop()?;
        let n = frame.len().min(self.slot);
        self.buf_mut(h)[..n].copy_from_slice(&frame[..n]);
        Some(h)
    }

    /// The bytes of slot `h` (the caller knows the frame length).
    pub fn buf(&self, h: u32) -> &[u8] {
        let (c, i) = (h as usize / CHUNK, h as usize % CHUNK);
        &self.chunks[c][i * self.slot..(i + 1) * self.slot]
    }

    fn buf_mut(&mut self, h: u32) -> &mut [u8] {
        let (c, i) = (h as usize / CHUNK, h as usize % CHUNK);
        &mut self.chunks[c][i * self.slot..(i + 1) * self.slot]
    }

    /// Returns slot `h` to the pool.
    pub fn release(&mut self, h: u32) {
        debug_assert!((h as usize) < self.capacity());
        self.free.push(h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_and_returns_frames_and_grows_by_chunks() {
        let mut p = Pool::new(64, 1, 2 * CHUNK);
        assert_eq!(p.capacity(), CHUNK);
        let hs: Vec<u32> = (0..CHUNK + 1)
            .map(|i| p.store(&[(i % 251) as u8; 10]).expect("room"))
            .collect();
        assert_eq!(p.capacity(), 2 * CHUNK);
        for (i, h) in hs.iter().enumerate() {
            assert_eq!(p.buf(*h)[..10], [(i % 251) as u8; 10]);
        }
        assert_eq!(p.in_use(), CHUNK + 1);
        for h in hs {
            p.release(h);
        }
        assert_eq!(p.in_use(), 0);
    }

    #[test]
    fn refuses_beyond_the_maximum() {
        let mut p = Pool::new(32, CHUNK, CHUNK);
        for _ in 0..CHUNK {
            assert!(p.store(b"x").is_some());
        }
        assert!(p.store(b"x").is_none());
    }
}
