//! The VPN-vs-PEP benchmark suite (`starpep-bench run`): the SATCOM test matrix of setups ×
//! links × applications × end-host congestion control × seeds, one cell at a time. This
//! module holds its pure parts; [`quality`]: the E-model, RFC 3550 jitter, Jain's index.

pub mod quality;
