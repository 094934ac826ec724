//! Fuzz target: arbitrary bytes as two captures (split where the first two bytes say) into the
//! pcap-owd reader and segment matcher: no panic, and every receiver segment is accounted for.
#![no_main]

use libfuzzer_sys::fuzz_target;
use starpep_testbed::tools::owd::pcap_match::match_segments;
use starpep_testbed::tools::owd::pcap_read::read_segments;

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let cut = (u16::from_le_bytes([data[0], data[1]]) as usize).min(data.len() - 2);
    let (a, b) = data[2..].split_at(cut);
    let (Ok(sa), Ok(sb)) = (read_segments(a, "a"), read_segments(b, "b")) else {
        return;
    };
    if let Ok(m) = match_segments(&sa, &sb, None) {
        let c = &m.counters;
        assert_eq!(
            c.matched + c.ambiguous + c.duplicates + c.unmatched,
            c.receiver_segments
        );
        assert_eq!(m.samples.len() as u64, c.matched);
    }
});
