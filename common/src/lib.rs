//! StarPEP-WG shared library: the pure cores of both endpoints and their thin I/O shells.
//!
//! Pure modules (`config`, `tunnel`, `pep`, `reconfig`, `undo`) take inputs and a clock and
//! return decisions; they never touch sockets. Two I/O shells make the system calls: `io` for the
//! tunnel (TUN, UDP, addresses and routes, the control socket, the standard streams, the undo
//! record's file) and `proxy` for the PEP (TPROXY and relay sockets, their options, splice and
//! pipes, the descriptor limit, the eBPF window program). Every external command (`ip`, `nft`,
//! hooks) runs through `io::cmd`. Each shell uses the safe wrappers of std, nix and socket2 where
//! they exist; what they lack is in the shell's `sys` module (`io::sys`, `proxy::sys`), the only
//! `unsafe`.
//! `daemon` wires cores and shells into the event loops both binaries run.

pub mod config;
pub mod daemon;
pub mod io;
pub mod pep;
pub mod proxy;
pub mod reconfig;
pub mod testing;
pub mod tunnel;
pub mod undo;
