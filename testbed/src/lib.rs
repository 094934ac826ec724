//! StarPEP-WG test bed: the satlink emulator (pure link model + AF_PACKET pump), the
//! namespace topology used by every netns test and benchmark, and the measurement tools.

pub mod bench;
pub mod calibrate;
pub mod emu;
pub mod link;
pub mod suite;
pub mod tools;
pub mod topo;
