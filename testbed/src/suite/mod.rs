//! The VPN-vs-PEP benchmark suite (`starpep-bench run`): the SATCOM test matrix of setups ×
//! links × applications × end-host congestion control × seeds, one cell at a time. This
//! module holds its pure parts: [`cell`] (what a cell is and its JSON line), [`matrix`] (the
//! TOML matrices of `configs/bench/`), [`report`] (markdown and CSV from the JSON lines),
//! [`quality`] (the E-model, RFC 3550 jitter, Jain's index), [`call`] (a G.711 call's packets
//! and per-direction figures), [`fair`] (goodput over the window competing flows share),
//! [`stats`] (medians and spread over seeds), [`tables`] and [`findings`] (the report's summary
//! and the study's findings), [`plot_data`] (what each plot shows), [`page`] and [`page_load`]
//! (the web application's page and what a load of it measured). `bench::run` runs the
//! cells, `bench::plots` draws.

pub mod call;
pub mod cell;
pub mod fair;
pub mod findings;
pub mod findings_why;
pub mod matrix;
pub mod page;
pub mod page_load;
pub mod plot_data;
pub mod quality;
pub mod report;
pub mod stats;
pub mod tables;

#[cfg(test)]
mod tests_findings;
#[cfg(test)]
mod tests_plot_data;
#[cfg(test)]
mod tests_report;
