//! starpep-client: entry point of the client daemon (wiring only: config, then I/O loops).
fn main() {}
