//! eBPF back-end of the PEP window controller (egress of the LAN-side interface): reserved.
//!
//! A later issue adds a tc classifier written in C (`tc_window.c`) that lowers the receive
//! window of TCP segments sent toward the data sender, and an aya 0.14 loader here. Until
//! then the crate is empty so the workspace layout is stable.
