//! PEP cores (pure): flow table, per-direction relay state, bypass rules, buffer sizing, and
//! the StarPEP window controller ([`starpep`]).
//!
//! Nothing here touches a socket or reads the clock: `proxy` (the I/O shell) feeds events and
//! time in and executes what comes out. [`plan`] resolves the `[PEP]` section for a role,
//! [`nft`] renders its nftables ruleset, [`relay`] is the per-flow state machine ([`segments`]:
//! its writes toward the satellite end on segment boundaries), [`flows`] the flow table with
//! the `MaxFlows` pause, [`nofile`] how many flows the descriptors allow, [`buffers`] each
//! flow's share of its link's socket buffers, [`start`] what a new flow's satellite segment
//! starts with ([`jump`]: its validation, [`priority`]: young and old flows), [`liveness`] when
//! a silent satellite segment is given up, [`tcpinfo`] parses `TCP_INFO` ([`bbrinfo`] BBR's
//! `TCP_CC_INFO`), [`metrics`] is what `show` prints, [`reload`] what a reload may change. The
//! design is documented in `docs/pep.md`.

pub mod bbrinfo;
pub mod buffers;
pub mod control_stats;
pub mod flows;
pub mod hysteresis;
pub mod jump;
pub mod liveness;
pub mod metrics;
pub mod nft;
pub mod nofile;
pub mod plan;
pub mod priority;
pub mod relay;
pub mod reload;
pub mod routes;
pub mod segments;
pub mod starpep;
pub mod start;
pub mod tcpinfo;
pub mod tenants;

#[cfg(test)]
mod tests_buffers;
#[cfg(test)]
mod tests_flows;
#[cfg(test)]
mod tests_jump;
#[cfg(test)]
mod tests_plan;
#[cfg(test)]
mod tests_relay;
#[cfg(test)]
mod tests_start;

pub use bbrinfo::BbrInfo;
pub use flows::{Admission, FlowId, FlowKey, FlowRecord, FlowTable, InterceptChange};
pub use jump::{Jump, JumpAction, JumpSample};
pub use liveness::Liveness;
pub use metrics::{FlowMetrics, MetricsHeader, PepMetrics};
pub use plan::{FastOpen, Intercept, Plan, PlanError, PlanInput, Role, SocketOpts, StarpepPlan};
pub use relay::{Action, Actions, Dir, Event, FlowState, Relay, Side};
pub use start::{PathKey, RateSample, StartParams, StartPlan, Starts};
pub use tcpinfo::{SegmentInfo, TcpInfo};
pub use tenants::{CapChange, CapStep, CapSync, SetOps, Tenant, TenantCaps, TenantMap};
