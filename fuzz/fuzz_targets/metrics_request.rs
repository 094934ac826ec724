//! Fuzz target: arbitrary bytes as a request to the metrics endpoint (`MetricsListen`, reachable
//! from the network): no panic; every answer is one HTTP/1.1 response whose Content-Length is its
//! body's, and only `GET /metrics` gets the rendered metrics (`io::http::check_response`, which
//! the mutation test in `io::http` runs on mutated requests in `cargo test`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use starpep_common::io::http::{check_response, respond};

const BODY: &str = "starpep_up 1\n# EOF\n";

fuzz_target!(|data: &[u8]| {
    if let Ok(out) = respond(data, &|| BODY.to_string()) {
        check_response(data, &out, BODY);
    }
});
