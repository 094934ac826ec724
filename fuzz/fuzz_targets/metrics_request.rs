//! Fuzz target: arbitrary bytes as a request to the metrics endpoint (`MetricsListen`, reachable
//! from the network): no panic; every answer is one HTTP/1.1 response whose Content-Length is its
//! body's, and only `GET /metrics` gets the rendered metrics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use starpep_common::io::http::respond;

const BODY: &str = "starpep_up 1\n# EOF\n";

fuzz_target!(|data: &[u8]| {
    let Ok(out) = respond(data, &|| BODY.to_string()) else {
        return;
    };
    let text = String::from_utf8(out).expect("responses are text");
    assert!(text.starts_with("HTTP/1.1 "), "{text:?}");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .unwrap();
    assert_eq!(len, body.len());
    if text.starts_with("HTTP/1.1 200") {
        assert_eq!(body, BODY);
        let text = String::from_utf8_lossy(data);
        assert_eq!(text.split_whitespace().next(), Some("GET"), "{text:?}");
    } else {
        assert_ne!(body, BODY);
    }
});
