//! The VPN-vs-PEP benchmark suite (`starpep-bench run`): the SATCOM test matrix of setups ×
//! links × applications × end-host congestion control × seeds, one cell at a time. This
//! module holds its pure parts: [`cell`] (what a cell is and its JSON line), [`matrix`] (the
//! TOML matrices of `configs/bench/`), [`report`] (markdown and CSV from the JSON lines),
//! [`quality`] (the E-model, RFC 3550 jitter, Jain's index), [`page`] (the web
//! application's page). `bench::run` runs the cells.

pub mod cell;
pub mod matrix;
pub mod page;
pub mod quality;
pub mod report;

#[cfg(test)]
mod tests_report;
