//! owd-bulk: timestamped bulk TCP sender/receiver (end hosts of every benchmark).
fn main() {}
