//! The VPN-vs-PEP benchmark suite (`starpep-bench run`): the SATCOM test matrix of setups ×
//! links × applications × end-host congestion control × seeds, one cell at a time. This
//! module holds its pure parts: [`cell`] (what a cell is and its JSON line), [`matrix`] (the
//! TOML matrices of `configs/bench/`), [`report`] (markdown and CSV from the JSON lines),
//! [`quality`] (the E-model, RFC 3550 jitter, Jain's index), [`page`] and
//! [`page_load`] (the web application's page and what a load of it measured). `bench::run` runs the cells.

pub mod cell;
pub mod matrix;
pub mod page;
pub mod page_load;
pub mod quality;
pub mod report;

#[cfg(test)]
mod tests_report;
