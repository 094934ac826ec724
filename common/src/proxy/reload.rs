//! A reload of the running PEP (`pep::reload` decides): the new plan is prepared and checked
//! before anything changes, then committed at once: new flows start with it, the flow table
//! takes its shares and tenants, careful resume its parameters, the accept loops its listener
//! options, and the flows a reload takes from their peer are revoked (they reset themselves).

use std::collections::HashSet;
use std::sync::Arc;

use tokio::sync::watch;

use crate::config;
use crate::pep::reload::{live_changes, orphans};
use crate::pep::{FlowId, Plan, Role};

use super::runner::PepMonitor;
use super::state::Shared;
use super::{PepContext, ProxyError};

/// A plan checked against the running one, ready to commit.
#[derive(Debug, Clone)]
pub struct PreparedPlan(Plan);

impl PepMonitor {
    /// Resolves `cfg` for `ctx` and checks it can apply live; nothing changes yet.
    pub fn prepare(&self, cfg: &config::Pep, ctx: &PepContext) -> Result<PreparedPlan, ProxyError> {
        let old = self.shared.plan();
        let mut new = Plan::new(cfg, ctx.role, &ctx.plan_input())?;
        if ctx.role == Role::Box && ctx.tunnel_if.is_none() {
            // The devices its destination routes used at start (they are not looked up again).
            new = new.with_satellite_devs(&old.satellite_devs);
        }
        live_changes(&old, &new).map_err(ProxyError::Reload)?;
        Ok(PreparedPlan(new))
    }

    /// Makes `p` the running plan. Returns how many live flows were revoked.
    pub fn commit(&self, p: PreparedPlan) -> usize {
        let s = &self.shared;
        let old = s.plan();
        let new = Arc::new(p.0);
        let (change, caps, gone) = s.table(|t| {
            let c = t.set_limits(
                super::nofile::flow_limit(new.max_flows, s.mode),
                new.max_flows_per_host,
                new.max_flows_per_peer,
                new.tenants.clone(),
            );
            (c, t.take_cap_changes(), orphans(t, &old, &new))
        });
        if let (Some(starts), Some(params)) = (s.starts.as_ref(), new.start.clone()) {
            starts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .set_params(params);
        }
        s.plan.send_replace(new);
        s.intercept_change(change);
        s.cap_changes(caps);
        // A capped peer's prefixes may have moved: the cap task brings the sets to them.
        s.cap_notify.notify_one();
        if !gone.is_empty() {
            tracing::info!(flows = gone.len(), "resetting the flows of removed peers");
            s.revoked.send_modify(|r| r.extend(gone.iter().copied()));
        }
        gone.len()
    }
}

/// A flow's watch on the revocations of reloads.
pub struct Revocation {
    rx: watch::Receiver<HashSet<FlowId>>,
    id: FlowId,
}

impl Revocation {
    pub fn new(shared: &Shared, id: FlowId) -> Revocation {
        Revocation {
            rx: shared.revoked.subscribe(),
            id,
        }
    }

    pub fn is_revoked(&self) -> bool {
        self.rx.borrow().contains(&self.id)
    }

    /// Resolves once the flow is revoked (at once if it already is). No guard is held across
    /// the await, so the future stays `Send`.
    pub async fn wait(&mut self) {
        loop {
            if self.rx.borrow_and_update().contains(&self.id) {
                return;
            }
            if self.rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
