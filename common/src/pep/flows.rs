//! Flow table (pure): admission against `MaxFlows`, interception pause/resume, per-flow records.
//!
//! A TPROXY'd SYN cannot be handed back to the forwarding path, so the limit is enforced one
//! step earlier: when the table reaches `MaxFlows` the table asks the shell to stop intercepting
//! NEW flows at the nftables level (they then pass the tunnel untouched, counted by an nft
//! counter), and to resume once it has drained below a low watermark (hysteresis, so a full
//! table does not flip the ruleset on every flow). Flows whose SYN was intercepted before the
//! pause took effect are still relayed and counted as `over_limit`. The same holds per tenant
//! (`MaxFlowsPerClient`, [`super::tenants`]): a tenant at its share is capped, and its new
//! flows pass unsplit while the others are still split. Time is passed in.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::buffers::{LinkActivity, LinkId};
use super::relay::FlowState;
use super::starpep::ControlRecord;
use super::tcpinfo::SegmentInfo;
use super::tenants::{CapChange, Tenant, TenantCaps, TenantMap};

/// The intercepted flow's addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FlowKey {
    /// The flow's originator (getpeername of the accepted socket).
    pub client: SocketAddr,
    /// The original destination (getsockname of the accepted socket).
    pub server: SocketAddr,
}

/// A flow's identifier in the table (unique for the daemon's lifetime).
pub type FlowId = u64;

/// What the shell knows about one live flow (refreshed by the flow's task).
#[derive(Debug, Clone, PartialEq)]
pub struct FlowRecord {
    pub key: FlowKey,
    /// Who the flow is charged to (its address, and its peer at the POP).
    pub tenants: Vec<Tenant>,
    pub started: Instant,
    pub state: FlowState,
    /// Bytes relayed accepted → connected and connected → accepted.
    pub bytes_up: u64,
    pub bytes_down: u64,
    /// TCP_INFO of the satellite-segment socket and of the terrestrial one, last sample.
    pub satellite: Option<SegmentInfo>,
    pub terrestrial: Option<SegmentInfo>,
    /// The StarPEP controller's last tick (`Mode = starpep`, controlled direction).
    pub control: Option<ControlRecord>,
    /// How the satellite segment started (careful resume), when it is on.
    pub start: Option<crate::pep::StartPlan>,
    /// The pacing cap (bytes/s) of its jump while the jump lasts (`pep::jump`).
    pub jump_pacing: Option<u64>,
    /// The satellite link the flow shares (its peer at the POP) and whether it moved bytes in
    /// its last period: its buffers' share ([`super::buffers`]).
    pub link: LinkId,
    pub active: bool,
}

/// The shell must change the interception of new flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InterceptChange {
    /// The table is full: new flows must pass untouched.
    Pause,
    /// The table has room again: intercept new flows.
    Resume,
}

/// Result of admitting an accepted flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    pub id: FlowId,
    /// The flow came in although the table was full (its SYN raced the pause).
    pub over_limit: bool,
    /// The flow came in although its tenant held its whole share (its SYN raced the cap).
    pub over_cap: bool,
    pub change: Option<InterceptChange>,
}

/// Totals since start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TableTotals {
    pub accepted: u64,
    pub over_limit: u64,
    pub pauses: u64,
    pub bytes_up: u64,
    pub bytes_down: u64,
    pub closed: u64,
    pub reset: u64,
    pub connect_failed: u64,
    pub idle_timeout: u64,
    pub shutdown: u64,
    pub revoked: u64,
}

/// The live flows of one PEP instance.
#[derive(Debug)]
pub struct FlowTable {
    max: usize,
    resume_at: usize,
    next_id: FlowId,
    intercepting: bool,
    flows: BTreeMap<FlowId, FlowRecord>,
    totals: TableTotals,
    tenants: TenantMap,
    caps: TenantCaps,
    /// Cap changes not yet taken by the shell, in order.
    cap_changes: Vec<CapChange>,
    /// Active flows per satellite link.
    links: LinkActivity,
}

impl FlowTable {
    /// A table for at most `max_flows` (≥ 1) flows; interception resumes at 15/16 of it.
    pub fn new(max_flows: usize) -> FlowTable {
        let max = max_flows.max(1);
        FlowTable {
            max,
            resume_at: (max - max / 16).saturating_sub(1),
            next_id: 1,
            intercepting: true,
            flows: BTreeMap::new(),
            totals: TableTotals::default(),
            tenants: TenantMap::default(),
            caps: TenantCaps::new(usize::MAX, usize::MAX),
            cap_changes: Vec::new(),
            links: LinkActivity::default(),
        }
    }

    /// The same table with at most `per_addr` flows per source address and `per_peer` per peer
    /// of `tenants`.
    pub fn with_client_caps(
        mut self,
        per_addr: usize,
        per_peer: usize,
        tenants: TenantMap,
    ) -> FlowTable {
        self.caps = TenantCaps::new(per_addr, per_peer);
        self.tenants = tenants;
        self
    }

    /// A reload: new limits and tenants for the flows admitted from now on (live flows stay
    /// charged to the tenants they were admitted under). May pause or resume interception at
    /// once, and cap or uncap tenants ([`FlowTable::take_cap_changes`]).
    pub fn set_limits(
        &mut self,
        max_flows: usize,
        per_addr: usize,
        per_peer: usize,
        tenants: TenantMap,
    ) -> Option<InterceptChange> {
        self.max = max_flows.max(1);
        self.resume_at = (self.max - self.max / 16).saturating_sub(1);
        self.tenants = tenants;
        let caps = self.caps.set_limits(per_addr, per_peer);
        self.cap_changes.extend(caps);
        if self.intercepting && self.flows.len() >= self.max {
            self.intercepting = false;
            self.totals.pauses += 1;
            Some(InterceptChange::Pause)
        } else if !self.intercepting && self.flows.len() <= self.resume_at {
            self.intercepting = true;
            Some(InterceptChange::Resume)
        } else {
            None
        }
    }

    /// The per-tenant cap, and how tenants are told apart.
    pub fn client_cap(&self) -> (&TenantCaps, &TenantMap) {
        (&self.caps, &self.tenants)
    }

    /// The cap changes since the last call, in order (the shell updates the nft sets).
    pub fn take_cap_changes(&mut self) -> Vec<CapChange> {
        std::mem::take(&mut self.cap_changes)
    }

    pub fn max(&self) -> usize {
        self.max
    }

    pub fn len(&self) -> usize {
        self.flows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flows.is_empty()
    }

    /// Whether new flows are currently intercepted (as last asked of the shell).
    pub fn intercepting(&self) -> bool {
        self.intercepting
    }

    pub fn totals(&self) -> TableTotals {
        self.totals
    }

    /// Registers an accepted flow. Every accepted flow is admitted (its handshake is done); a
    /// full table asks for a pause.
    pub fn admit(&mut self, key: FlowKey, now: Instant) -> Admission {
        let id = self.next_id;
        self.next_id += 1;
        let over_limit = self.flows.len() >= self.max;
        let tenants = self.tenants.tenants(key.client.ip());
        let (over_cap, caps) = self.caps.admit_all(&tenants);
        self.cap_changes.extend(caps);
        let link = tenants.iter().find_map(|t| match t {
            Tenant::Peer(i) => Some(*i),
            Tenant::Addr(_) => None,
        });
        self.links.admit(link);
        self.flows.insert(
            id,
            FlowRecord {
                key,
                tenants,
                started: now,
                state: FlowState::Connecting,
                bytes_up: 0,
                bytes_down: 0,
                satellite: None,
                terrestrial: None,
                control: None,
                start: None,
                jump_pacing: None,
                link,
                active: true,
            },
        );
        self.totals.accepted += 1;
        if over_limit {
            self.totals.over_limit += 1;
        }
        let change = if self.intercepting && self.flows.len() >= self.max {
            self.intercepting = false;
            self.totals.pauses += 1;
            Some(InterceptChange::Pause)
        } else {
            None
        };
        Admission {
            id,
            over_limit,
            over_cap,
            change,
        }
    }

    /// The live record of `id`, to refresh its state, bytes and segment samples.
    pub fn record_mut(&mut self, id: FlowId) -> Option<&mut FlowRecord> {
        self.flows.get_mut(&id)
    }

    pub fn get(&self, id: FlowId) -> Option<&FlowRecord> {
        self.flows.get(&id)
    }

    /// Removes a finished flow with its final figures; may ask to resume interception.
    pub fn remove(
        &mut self,
        id: FlowId,
        state: FlowState,
        bytes_up: u64,
        bytes_down: u64,
    ) -> Option<InterceptChange> {
        let r = self.flows.remove(&id)?;
        self.links.remove(r.link, r.active);
        for t in &r.tenants {
            self.cap_changes.extend(self.caps.remove(t));
        }
        let t = &mut self.totals;
        t.bytes_up += bytes_up;
        t.bytes_down += bytes_down;
        match state {
            FlowState::Reset => t.reset += 1,
            FlowState::ConnectFailed => t.connect_failed += 1,
            FlowState::IdleTimeout => t.idle_timeout += 1,
            FlowState::Shutdown => t.shutdown += 1,
            FlowState::Revoked => t.revoked += 1,
            _ => t.closed += 1,
        }
        if !self.intercepting && self.flows.len() <= self.resume_at {
            self.intercepting = true;
            return Some(InterceptChange::Resume);
        }
        None
    }

    /// Changes the limit (`MaxFlows`, or what the descriptors allow: [`super::nofile`]); a
    /// lower limit the table already holds pauses interception, a higher one under which it
    /// has drained resumes it.
    pub fn set_max(&mut self, max_flows: usize) -> Option<InterceptChange> {
        let max = max_flows.max(1);
        if max == self.max {
            return None;
        }
        self.max = max;
        self.resume_at = (max - max / 16).saturating_sub(1);
        if self.intercepting && self.flows.len() >= max {
            self.intercepting = false;
            self.totals.pauses += 1;
            return Some(InterceptChange::Pause);
        }
        if !self.intercepting && self.flows.len() <= self.resume_at {
            self.intercepting = true;
            return Some(InterceptChange::Resume);
        }
        None
    }

    /// Records whether flow `id` moved bytes in its last period; returns how many flows its
    /// buffers are shared with now ([`LinkActivity::sharing`]; 1 for an unknown flow).
    pub fn set_active(&mut self, id: FlowId, active: bool) -> usize {
        let Some(r) = self.flows.get_mut(&id) else {
            return 1;
        };
        if r.active != active {
            self.links.set_active(r.link, active);
        }
        r.active = active;
        self.links.sharing(r.link, active)
    }

    /// How many flows the buffers of flow `id` are shared with now (1 for an unknown flow).
    pub fn sharing(&self, id: FlowId) -> usize {
        self.flows
            .get(&id)
            .map_or(1, |r| self.links.sharing(r.link, r.active))
    }

    /// The shell could not apply a change: record the state it is really in.
    pub fn set_intercepting(&mut self, on: bool) {
        self.intercepting = on;
    }

    /// Live flows in id order.
    pub fn iter(&self) -> impl Iterator<Item = (FlowId, &FlowRecord)> {
        self.flows.iter().map(|(id, r)| (*id, r))
    }

    /// Age of a record at `now`.
    pub fn age(record: &FlowRecord, now: Instant) -> Duration {
        now.saturating_duration_since(record.started)
    }
}
