//! Whole segments toward the satellite (pure): how much of a relay direction's buffer to write
//! into its sink now, so that the sink's send queue ends on a segment boundary.
//!
//! The satellite socket's send queue is kept short (StarPEP's low-water mark and in-flight cap),
//! so whatever the relay writes is sent at once: a write that ends mid-segment leaves a short
//! tail that `TCP_NODELAY` sends as its own packet. The server's 1448-byte segments arrive at a
//! PEP whose tunnel segments are 1368 bytes, so about a quarter of the satellite packets were
//! short (measured on the Starlink trace: 1200 bytes per packet on average), each paying the
//! tunnel's 112 bytes of headers. Writes here end on a segment boundary of the stream (counted
//! from its first byte, so one short write is made up by the next), a tail shorter than a
//! segment waits for more data, and the shell flushes it when the source stays quiet for
//! [`HOLD`], at EOF, or when the buffer is full: a short message is delayed by at most that.

use std::time::Duration;

/// How long a tail shorter than a segment may wait for the rest of its segment. At 10 Mbit/s
/// a segment arrives every 1.2 ms from a sender that keeps up; a source quiet for longer has
/// finished its burst.
pub const HOLD: Duration = Duration::from_millis(1);

/// What the relay does with its buffered bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteStep {
    /// Write this many bytes now.
    Write(usize),
    /// Keep the tail (shorter than a segment) until more arrives or [`HOLD`] passes.
    Hold,
    /// The sink has no room for a whole segment: wait for it to send.
    WaitRoom,
}

/// The step for `buffered` bytes when the sink takes `room` bytes now, `written` bytes of the
/// stream were written so far, and segments are `segment` bytes (0: no coalescing). `flush`:
/// write whatever fits (the source is quiet, at EOF or the buffer is full).
pub fn write_step(
    buffered: usize,
    room: usize,
    written: u64,
    segment: u32,
    flush: bool,
) -> WriteStep {
    let fits = buffered.min(room);
    if segment == 0 || flush {
        return if fits == 0 {
            WriteStep::WaitRoom
        } else {
            WriteStep::Write(fits)
        };
    }
    let seg = segment as u64;
    let end = (written + fits as u64) / seg * seg;
    if end > written {
        return WriteStep::Write((end - written) as usize);
    }
    // Not one boundary within reach: either too little is buffered, or too little room.
    let to_boundary = (seg - written % seg) as usize;
    if buffered < to_boundary {
        WriteStep::Hold
    } else {
        WriteStep::WaitRoom
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u32 = 1368;

    #[test]
    fn off_writes_what_fits() {
        assert_eq!(
            write_step(1448, 10_000, 0, 0, false),
            WriteStep::Write(1448)
        );
        assert_eq!(write_step(1448, 1000, 0, 0, false), WriteStep::Write(1000));
        assert_eq!(write_step(1448, 0, 0, 0, false), WriteStep::WaitRoom);
    }

    #[test]
    fn a_server_segment_sends_one_whole_segment_and_holds_the_tail() {
        assert_eq!(
            write_step(1448, 10_000, 0, S, false),
            WriteStep::Write(1368)
        );
        // The 80-byte tail waits for the next read.
        assert_eq!(write_step(80, 10_000, 1368, S, false), WriteStep::Hold);
        // The next server segment completes it and leaves 160 bytes held.
        assert_eq!(
            write_step(80 + 1448, 10_000, 1368, S, false),
            WriteStep::Write(1368)
        );
    }

    #[test]
    fn a_stream_of_reads_only_ever_ends_writes_on_boundaries() {
        let (mut written, mut buffered) = (0u64, 0usize);
        for read in [1448usize, 2896, 700, 1, 1447, 65536, 3] {
            buffered += read;
            if let WriteStep::Write(n) = write_step(buffered, usize::MAX, written, S, false) {
                written += n as u64;
                buffered -= n;
            }
            assert_eq!(written % S as u64, 0, "after a read of {read}");
            assert!(buffered < S as usize);
        }
    }

    #[test]
    fn a_short_write_is_made_up_by_the_next() {
        // The kernel took 1000 of 1368 bytes: the next write ends the segment.
        assert_eq!(
            write_step(5000, 10_000, 1000, S, false),
            WriteStep::Write(4472)
        );
        assert_eq!((1000 + 4472) % S as usize, 0);
    }

    #[test]
    fn little_room_waits_for_a_whole_segment() {
        assert_eq!(write_step(5000, 1000, 0, S, false), WriteStep::WaitRoom);
        assert_eq!(write_step(5000, 3000, 0, S, false), WriteStep::Write(2736));
    }

    #[test]
    fn flush_writes_the_tail() {
        assert_eq!(write_step(80, 10_000, 1368, S, true), WriteStep::Write(80));
        assert_eq!(write_step(80, 0, 1368, S, true), WriteStep::WaitRoom);
    }
}
