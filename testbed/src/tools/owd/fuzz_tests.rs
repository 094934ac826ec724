//! Deterministic mutation tests (the stable-toolchain counterpart of fuzz/owd_chunk_parse and
//! fuzz/pcap_owd): mutated streams and captures never panic the reassembler, the capture
//! reader or the matcher, and an accepted stream is always self-consistent.

use super::chunk::{encode_chunk, Amount, ChunkPlan, CHUNK_LEN};
use super::pcap_match::{match_segments, Segment};
use super::pcap_read::read_segments;
use super::pcap_read::tests::{frame, pcap, tcp_packet};
use super::reasm::{Reassembler, Sample};
use pcap_file::DataLink;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use starpep_common::testing::mutate;

fn stream(total: u64) -> Vec<u8> {
    let mut plan = ChunkPlan::new(Amount::Bytes(total)).unwrap();
    let (mut s, mut c) = (Vec::new(), Vec::new());
    while let Some(h) = plan.next(h_stamp(total)) {
        encode_chunk(&h, &mut c);
        s.extend_from_slice(&c);
    }
    s
}

fn h_stamp(x: u64) -> u64 {
    1_700_000_000_000_000_000 + x
}

/// Feeds `s` in random pieces; returns the samples if the stream was accepted whole.
fn feed(rng: &mut StdRng, s: &[u8]) -> Option<(Vec<Sample>, Reassembler)> {
    let mut r = Reassembler::new();
    let mut out = Vec::new();
    let mut rest = s;
    while !rest.is_empty() {
        let n = rng.gen_range(1..=rest.len().min(3 * CHUNK_LEN));
        r.push(&rest[..n], 0, &mut out).ok()?;
        rest = &rest[n..];
    }
    r.finish().ok()?;
    Some((out, r))
}

#[test]
fn mutated_streams_never_panic_and_accepted_ones_are_consistent() {
    let mut rng = StdRng::seed_from_u64(0x0bd_b01c);
    let base = stream(3 * CHUNK_LEN as u64 + 100);
    let (mut accepted, mut rejected) = (0, 0);
    for i in 0..3000 {
        let mut s = if i % 10 == 0 {
            (0..rng.gen_range(0..200)).map(|_| rng.gen()).collect()
        } else {
            base.clone()
        };
        mutate(&mut rng, &mut s);
        match feed(&mut rng, &s) {
            Some((out, r)) => {
                accepted += 1;
                assert!(out.iter().enumerate().all(|(i, x)| x.index == i as u64));
                let sum: u64 = out.iter().map(|x| x.len as u64).sum();
                assert_eq!(sum, s.len() as u64);
                assert_eq!(r.bytes(), s.len() as u64);
            }
            None => rejected += 1,
        }
    }
    // Only mutations of the stamps (or no-op mutations) may pass; most must be caught.
    assert!(rejected > 2500, "accepted {accepted}, rejected {rejected}");
}

fn capture(rng: &mut StdRng) -> Vec<u8> {
    let link = [
        DataLink::ETHERNET,
        DataLink::LINUX_SLL,
        DataLink::LINUX_SLL2,
        DataLink::RAW,
    ][rng.gen_range(0..4)];
    let frames: Vec<(u64, Vec<u8>, usize)> = (0..rng.gen_range(1..12u32))
        .map(|i| {
            let ip = tcp_packet(rng.gen(), 1 + i * 100, rng.gen_range(0..200), i == 0);
            (
                1_000_000_000 + i as u64 * 1000,
                frame(link, &ip),
                rng.gen_range(20..400),
            )
        })
        .collect();
    pcap(link, rng.gen(), &frames)
}

#[test]
fn mutated_captures_never_panic_the_reader_or_matcher() {
    let mut rng = StdRng::seed_from_u64(0x9ca9);
    let mut read_ok = 0;
    for _ in 0..300 {
        let mut a = capture(&mut rng);
        mutate(&mut rng, &mut a);
        let b = capture(&mut rng);
        let (Ok(sa), Ok(sb)) = (read_segments(&a[..], "a"), read_segments(&b[..], "b")) else {
            continue;
        };
        read_ok += 1;
        let shifted: Vec<Segment> = sb
            .iter()
            .map(|s| Segment {
                ts_ns: s.ts_ns.wrapping_add(rng.gen_range(0..1_000_000)),
                seq: s.seq.wrapping_add(rng.gen_range(0..3) * 50),
                ..*s
            })
            .collect();
        for port in [None, Some(5001), Some(1)] {
            if let Ok(m) = match_segments(&sa, &shifted, port) {
                let c = &m.counters;
                assert_eq!(
                    c.matched + c.ambiguous + c.duplicates + c.unmatched,
                    c.receiver_segments
                );
                assert!(m.samples.len() as u64 == c.matched);
            }
        }
    }
    assert!(
        read_ok > 50,
        "only {read_ok} mutated captures were readable"
    );
}
