//! StarPEP-WG shared library: the pure cores of both endpoints and their thin I/O layer.
//!
//! Pure modules (`config`, `tunnel`, `pep`, `reconfig`, `undo`) take inputs and a clock and return decisions; they never
//! touch sockets. `io` owns every system call (TUN, UDP, routes, nftables), `unsafe` only in
//! `io::sys` (and `proxy::sys` for the splitting proxy). `proxy` is the I/O shell of the TCP-splitting PEP. `daemon` wires them into the event loops both binaries run.

pub mod config;
pub mod daemon;
pub mod io;
pub mod pep;
pub mod proxy;
pub mod reconfig;
pub mod testing;
pub mod tunnel;
pub mod undo;
