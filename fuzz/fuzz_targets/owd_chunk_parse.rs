//! Fuzz target: arbitrary bytes as an owd-bulk stream into the receiver's reassembler (split
//! into reads as the first byte says) and the header/confirmation decoders: no panic, and an
//! accepted stream is consistent (chunk indexes 0.., lengths summing to the stream).
#![no_main]

use libfuzzer_sys::fuzz_target;
use starpep_testbed::tools::owd::chunk::{Ack, ChunkHeader};
use starpep_testbed::tools::owd::reasm::Reassembler;

fuzz_target!(|data: &[u8]| {
    let Some((&step, stream)) = data.split_first() else {
        return;
    };
    let _ = ChunkHeader::decode(stream);
    let _ = Ack::decode(stream);
    let step = step as usize + 1;
    let mut r = Reassembler::new();
    let mut out = Vec::new();
    let mut ok = true;
    for (i, piece) in stream.chunks(step).enumerate() {
        if r.push(piece, i as u64, &mut out).is_err() {
            ok = false;
            break;
        }
    }
    if ok && r.finish().is_ok() {
        assert!(out.iter().enumerate().all(|(i, s)| s.index == i as u64));
        assert_eq!(
            out.iter().map(|s| s.len as u64).sum::<u64>(),
            stream.len() as u64
        );
    }
});
