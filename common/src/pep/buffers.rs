//! Per-flow socket buffers of the satellite segment (pure): the link's buffer (2 × BDP, or
//! `SndBuf`/`RcvBuf`) shared by the flows active on the same link, so one flow alone gets all
//! of it and many flows stay bounded together.
//!
//! A link is what the flows of one satellite terminal share: at the POP the WireGuard peer
//! whose AllowedIPs hold the client, at the box the box's own link (every flow). A flow is
//! active while it moves bytes (its task says so once a second); a new flow counts as active.
//! Each flow's bound is the link's buffer over the link's active flows (never below
//! [`FLOOR`]); a flow's buffer is resized only when it is off by more than [`SLACK`] times, so
//! a link's active flows hold at most `SLACK` × its buffer, and no flow is resized at every
//! arrival. An idle flow keeps a bound for one more active flow: it holds no data while idle,
//! and has room when it wakes.

use std::collections::HashMap;

/// The smallest per-flow bound (a few segments of room at any rate).
pub const FLOOR: usize = 64 * 1024;
/// A buffer is resized only when its bound moved by more than this factor.
pub const SLACK: usize = 2;

/// Which link a flow uses: the peer index at the POP, `None` for the box's one link (or a
/// client no peer claims).
pub type LinkId = Option<usize>;

/// The satellite segment's buffers of one whole link, in bytes as `SO_SNDBUF`/`SO_RCVBUF`
/// take them (the kernel doubles them for its overhead).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkBuffers {
    pub snd: usize,
    pub rcv: usize,
}

/// One flow's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlowBuffers {
    pub snd: usize,
    pub rcv: usize,
}

impl LinkBuffers {
    /// The bounds of one flow among `sharing` active flows of its link (itself included).
    pub fn per_flow(&self, sharing: usize) -> FlowBuffers {
        let share = |total: usize| (total / sharing.max(1)).max(FLOOR.min(total));
        FlowBuffers {
            snd: share(self.snd),
            rcv: share(self.rcv),
        }
    }
}

/// The value to set when a buffer now at `current` (`None`: never set by the share) should
/// follow `bound`; `None`: leave it.
pub fn resize(current: Option<usize>, bound: usize) -> Option<usize> {
    match current {
        None => Some(bound),
        Some(c) if bound > c.saturating_mul(SLACK) || bound.saturating_mul(SLACK) < c => {
            Some(bound)
        }
        Some(_) => None,
    }
}

/// Active flows per link.
#[derive(Debug, Clone, Default)]
pub struct LinkActivity {
    active: HashMap<LinkId, usize>,
}

impl LinkActivity {
    /// A flow becomes active on `link`.
    pub fn start(&mut self, link: LinkId) {
        *self.active.entry(link).or_default() += 1;
    }

    /// A flow stops being active on `link`.
    pub fn stop(&mut self, link: LinkId) {
        if let Some(n) = self.active.get_mut(&link) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                self.active.remove(&link);
            }
        }
    }

    /// Active flows on `link`.
    pub fn active(&self, link: LinkId) -> usize {
        self.active.get(&link).copied().unwrap_or(0)
    }

    /// How many flows a flow's bound is shared with: the link's active flows, and the flow
    /// itself when it is idle (it may wake).
    pub fn sharing(&self, link: LinkId, flow_active: bool) -> usize {
        self.active(link) + usize::from(!flow_active)
    }
}
