//! satlink: the trace-driven satellite link emulator CLI (runs in the `sat` namespace).
fn main() {}
