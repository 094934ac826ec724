//! Pure link model of one satellite-link direction (capacity, delay, queue, loss, outages),
//! clock passed in, and the profiles and traces that configure it. See docs/satlink-profiles.md.

pub mod capacity;
pub mod delay;
pub mod loss;
pub mod model;
mod parse;
pub mod profile;
pub mod queue;
pub mod retrace;
pub mod schedule;
mod tc;
pub mod trace;
pub mod units;

pub use capacity::CapacitySpec;
pub use delay::{DelaySpec, Jitter};
pub use loss::LossSpec;
pub use model::{LinkModel, LinkStats, Verdict};
pub use profile::{workspace_root, Direction, DirectionSpec, Profile, ProfileError};
pub use queue::{HeldFrame, QueueLimit};
pub use schedule::{starlink_aligned_start, ReconfigSchedule, STARLINK_OFFSET, STARLINK_PERIOD};
pub use trace::{DelayTrace, RateTrace, TraceError, DELAY_SLOT, OPPORTUNITY_BYTES};

#[cfg(test)]
mod model_tests;
#[cfg(test)]
mod profile_tests;
#[cfg(test)]
mod trace_fuzz_tests;
