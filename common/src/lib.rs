//! StarPEP-WG shared library: the pure cores of both endpoints and their thin I/O layer.
//!
//! Pure modules (`config`, `tunnel`) take inputs and a clock and return decisions; they never
//! touch sockets. `io` owns every system call (TUN, UDP, routes, nftables), `unsafe` only in
//! `io::sys`. `daemon` wires them into the event loops both binaries run.

pub mod config;
pub mod daemon;
pub mod io;
pub mod tunnel;
