//! The reconfiguration schedule of a replayed link: the one implementation the emulator shares
//! with the PEP's controller (`starpep_common::reconfig`), re-exported here.

pub use starpep_common::reconfig::*;
