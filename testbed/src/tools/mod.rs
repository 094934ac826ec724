//! Measurement tools run on the end hosts: owd-bulk (timestamped bulk TCP, OWD from captures).

pub mod owd;
