//! Per-flow socket buffers of the satellite segment (pure): the link's buffer (2 × BDP, or
//! `SndBuf`/`RcvBuf`) shared by the flows on the same link, so one flow alone gets all of it
//! and many flows stay bounded together.
//!
//! A link is what the flows of one satellite terminal share: at the POP the WireGuard peer
//! whose AllowedIPs hold the client, at the box the box's own link (every flow). A flow is
//! active while it moves bytes (its task says so once a second); a new flow counts as active.
//! An active flow's bound is the link's buffer over the link's active flows, an idle flow's
//! the link's buffer over all the link's flows (never below [`FLOOR`]): a busy flow beside idle
//! ones (a browser's kept-alive connections) gets the whole link, and an idle one that wakes
//! has its part of it. A flow's buffer is resized only when it is off by more than [`SLACK`]
//! times, so no flow is resized at every arrival, and the flows of one link hold at most
//! `2 × SLACK` times its buffer (`SLACK` for the active ones, `SLACK` for the idle ones).

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

/// Flows per link: all of them, and the active ones.
#[derive(Debug, Clone, Default)]
pub struct LinkActivity {
    links: HashMap<LinkId, Counts>,
}

#[derive(Debug, Clone, Copy, Default)]
struct Counts {
    live: usize,
    active: usize,
}

impl LinkActivity {
    /// A new flow on `link` (active).
    pub fn admit(&mut self, link: LinkId) {
        let c = self.links.entry(link).or_default();
        c.live += 1;
        c.active += 1;
    }

    /// A flow leaves `link`.
    pub fn remove(&mut self, link: LinkId, active: bool) {
        if let Some(c) = self.links.get_mut(&link) {
            c.live = c.live.saturating_sub(1);
            if active {
                c.active = c.active.saturating_sub(1);
            }
            if c.live == 0 {
                self.links.remove(&link);
            }
        }
    }

    /// A flow on `link` became active (`true`) or idle.
    pub fn set_active(&mut self, link: LinkId, active: bool) {
        if let Some(c) = self.links.get_mut(&link) {
            if active {
                c.active = (c.active + 1).min(c.live);
            } else {
                c.active = c.active.saturating_sub(1);
            }
        }
    }

    /// Flows on `link`, all and active.
    pub fn counts(&self, link: LinkId) -> (usize, usize) {
        self.links.get(&link).map_or((0, 0), |c| (c.live, c.active))
    }

    /// How many flows a flow's bound is shared with: the link's active flows for an active
    /// flow, all its flows for an idle one (at least 1).
    pub fn sharing(&self, link: LinkId, flow_active: bool) -> usize {
        let (live, active) = self.counts(link);
        if flow_active { active } else { live }.max(1)
    }
}
