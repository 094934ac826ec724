//! Tests of the pcap segment matcher on synthetic segment lists.

use super::*;

const MS: u64 = 1_000_000;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn seg(ts_ms: u64, seq: u32, len: u32) -> Segment {
    Segment {
        ts_ns: 1_000 * MS + ts_ms * MS,
        src: addr("10.0.0.1:40000"),
        dst: addr("10.0.1.1:5001"),
        seq,
        len,
        syn: false,
    }
}

fn syn(seq: u32) -> Segment {
    Segment {
        syn: true,
        ..seg(0, seq, 0)
    }
}

fn owds(r: &MatchResult) -> Vec<u64> {
    r.samples
        .iter()
        .map(|s| (s.recv_ns - s.send_ns) / MS)
        .collect()
}

#[test]
fn one_to_one_with_constant_delay() {
    let isn = 1000;
    let mut snd = vec![syn(isn)];
    let mut rcv = vec![syn(isn)];
    for i in 0..10u32 {
        snd.push(seg(i as u64, isn + 1 + i * 1000, 1000));
        rcv.push(seg(i as u64 + 50, isn + 1 + i * 1000, 1000));
    }
    let r = match_segments(&snd, &rcv, None).unwrap();
    assert_eq!(r.counters.matched, 10);
    assert_eq!(r.counters.resegmented, 0);
    assert_eq!(r.counters.sender_segments, 10);
    assert_eq!(owds(&r), vec![50; 10]);
    assert_eq!(r.bytes, 10_000);
    assert_eq!(r.last_ns - r.first_ns, 9 * MS);
    assert_eq!(r.counters.sender_flow, "10.0.0.1:40000 -> 10.0.1.1:5001");
}

#[test]
fn retransmissions_are_counted_not_timed() {
    let mut snd: Vec<Segment> = (0..5).map(|i| seg(i, i as u32 * 100, 100)).collect();
    snd.push(seg(300, 200, 100)); // segment 2 again after an RTO
    let rcv: Vec<Segment> = [0u32, 1, 3, 4]
        .iter()
        .map(|&i| seg(i as u64 + 20, i * 100, 100))
        .chain([seg(320, 200, 100)])
        .collect();
    let r = match_segments(&snd, &rcv, None).unwrap();
    let c = &r.counters;
    assert_eq!(
        (c.sender_retransmissions, c.ambiguous, c.matched),
        (1, 1, 4)
    );
    assert_eq!(owds(&r), vec![20; 4]);
    assert_eq!(r.bytes, 500);
}

#[test]
fn resegmented_segments_use_the_one_holding_their_last_byte() {
    let snd = vec![seg(0, 0, 2000), seg(10, 2000, 2000)];
    let rcv: Vec<Segment> = (0..4).map(|i| seg(30 + i, i as u32 * 1000, 1000)).collect();
    let r = match_segments(&snd, &rcv, None).unwrap();
    assert_eq!((r.counters.matched, r.counters.resegmented), (4, 4));
    assert_eq!(owds(&r), vec![30, 31, 22, 23]);
}

#[test]
fn duplicates_unmatched_and_wrap() {
    let base = u32::MAX - 1500;
    let snd: Vec<Segment> = (1..4u32)
        .map(|i| seg(i as u64, base.wrapping_add(i * 1000), 1000))
        .collect();
    let mut rcv = vec![seg(5, base, 1000)]; // sent before the sender capture started
    rcv.extend((1..4u32).map(|i| seg(i as u64 + 7, base.wrapping_add(i * 1000), 1000)));
    rcv.push(seg(30, base.wrapping_add(3000), 1000)); // duplicate delivery
    let r = match_segments(&snd, &rcv, None).unwrap();
    let c = &r.counters;
    assert_eq!((c.matched, c.duplicates, c.unmatched), (3, 1, 1), "{c:?}");
    assert_eq!(owds(&r), vec![7; 3]);
    assert_eq!(r.bytes, 4000);
}

#[test]
fn picks_the_bulk_flow_and_follows_nat() {
    let other = |s: Segment| Segment {
        src: addr("10.0.0.1:40001"),
        dst: addr("10.0.1.1:22"),
        ..s
    };
    let mut snd: Vec<Segment> = (0..4).map(|i| seg(i, i as u32 * 1000, 1000)).collect();
    snd.push(other(seg(1, 0, 100)));
    snd.push(Segment {
        src: addr("10.0.1.1:5001"),
        dst: addr("10.0.0.1:40000"),
        ..seg(2, 7, 0)
    }); // ACK, no payload
        // The receiver sees the flow behind a NAT (other addresses).
    let nat = |s: Segment| Segment {
        src: addr("192.0.2.1:6000"),
        dst: addr("192.0.2.9:5001"),
        ..s
    };
    let rcv: Vec<Segment> = (0..4)
        .map(|i| nat(seg(i + 3, i as u32 * 1000, 1000)))
        .collect();
    let r = match_segments(&snd, &rcv, None).unwrap();
    assert_eq!(r.counters.matched, 4);
    assert_eq!(r.counters.receiver_flow, "192.0.2.1:6000 -> 192.0.2.9:5001");
    // The port filter selects the small flow, which the receiver capture lacks.
    let e = match_segments(&snd, &rcv, Some(22)).unwrap_err();
    assert!(
        matches!(
            e,
            MatchError::NoFlow {
                side: "receiver",
                ..
            }
        ),
        "{e}"
    );
    assert!(match_segments(&[], &rcv, None).is_err());
}

#[test]
fn range_set_counts_new_bytes() {
    let mut r = RangeSet::default();
    assert_eq!(r.insert(10, 20), 10);
    assert_eq!(r.insert(30, 40), 10);
    assert_eq!(r.insert(15, 35), 10);
    assert_eq!(r.0.len(), 1);
    assert_eq!(r.insert(10, 40), 0);
    assert_eq!(r.insert(40, 41), 1);
    assert!(r.overlaps(39, 45));
    assert!(!r.overlaps(41, 50));
    assert!(!r.overlaps(0, 10));
}
