//! The satellite socket's share of its link's buffers (the shell of `pep::buffers`): set when
//! the flow starts, checked again every period as the link's active flows come and go.
//!
//! The listener (POP) and the connecting socket (box) still get the whole link's buffers
//! before the handshake, so the window scale and the window clamp leave room for a flow that
//! ends up alone on its link; the share applies from the first byte. With `Mode = starpep` the
//! controller sizes the satellite socket's send buffer itself once it runs (its in-flight
//! cap): the share then only sets its first value.

use socket2::Socket;

use crate::pep::buffers::{resize, LinkBuffers};
use crate::pep::{Dir, FlowId, Plan, Side};

use super::pump::FlowIo;
use super::sockopt;
use super::state::Shared;

/// One flow's satellite buffers as last set by the share.
pub struct FlowShare {
    link: Option<LinkBuffers>,
    snd: Option<usize>,
    rcv: Option<usize>,
    /// The StarPEP controller owns the send buffer after the first value.
    controller_sends: bool,
    /// Bytes relayed at the last period (both directions).
    last_bytes: u64,
    /// Which of the flow's sockets faces the satellite.
    side: Side,
}

impl FlowShare {
    /// Applies the flow's first share to its satellite socket (`plan`: the flow's own).
    pub fn start(shared: &Shared, plan: &Plan, sat: &Socket, id: FlowId) -> FlowShare {
        let o = &plan.satellite;
        let link = match (o.snd_buf, o.rcv_buf) {
            (Some(snd), Some(rcv)) => Some(LinkBuffers { snd, rcv }),
            _ => None,
        };
        let controller_sends = plan.starpep.as_ref().is_some_and(|s| s.apply);
        let mut s = FlowShare {
            link,
            snd: None,
            rcv: None,
            controller_sends,
            last_bytes: 0,
            side: plan.satellite_side,
        };
        let sharing = shared.table(|t| t.sharing(id));
        s.apply(sat, sharing);
        s
    }

    /// One period: whether the flow moved bytes, and its share again.
    pub fn tick(&mut self, shared: &Shared, io: &FlowIo, id: FlowId) {
        let (bytes, queued) = io.with_relay(|r| {
            (
                r.bytes(Dir::Up) + r.bytes(Dir::Down),
                r.buffered(Dir::Up) + r.buffered(Dir::Down),
            )
        });
        let active = bytes != self.last_bytes || queued > 0;
        self.last_bytes = bytes;
        let sharing = shared.table(|t| t.set_active(id, active));
        self.apply(io.sock(self.side).get_ref(), sharing);
    }

    fn apply(&mut self, sat: &Socket, sharing: usize) {
        let Some(link) = self.link else {
            return;
        };
        let bound = link.per_flow(sharing);
        let snd = match (self.controller_sends, self.snd) {
            (true, Some(_)) => None,
            _ => resize(self.snd, bound.snd),
        };
        let rcv = resize(self.rcv, bound.rcv);
        if snd.is_none() && rcv.is_none() {
            return;
        }
        match sockopt::set_buffers(sat, snd, rcv) {
            Ok(()) => {
                self.snd = snd.or(self.snd);
                self.rcv = rcv.or(self.rcv);
            }
            Err(e) => tracing::debug!("satellite buffers' share: {e}"),
        }
    }
}
