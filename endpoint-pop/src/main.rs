//! starpep-pop: entry point of the pop daemon (wiring only: config, then I/O loops).
fn main() {}
