//! Careful resume in the proxy shell (`pep::start`): a task keeps each satellite path's routes
//! at the initial window a new flow of that path gets (`initcwnd`, read by the kernel when the
//! connection is set up), and each flow paces its jump until it is validated
//! (`SO_MAX_PACING_RATE`) and reports its satellite delivery rate to its path. A flow tells
//! its path when it moves its first byte (it is young, `pep::priority`), and a busy old flow
//! paces at the cap its path gives it while another flow is young.

use std::collections::HashMap;
use std::os::fd::AsFd;
use std::sync::{Arc, Mutex};

use std::time::Duration;

use ipnet::IpNet;

use crate::pep::hysteresis;
use crate::pep::start::{busy, route_update};
use crate::pep::{
    Dir, FlowId, Jump, JumpAction, JumpSample, PathKey, RateSample, StartPlan, Starts, TcpInfo,
    Tenant,
};

use super::control::{FlowControl, BBR};
use super::netcfg::NetCfg;
use super::pump::FlowIo;
use super::sockopt::{congestion_name, restart_congestion};
use super::state::{Shared, SharedStarts};
use super::sys;
use super::tcp_info::info;

/// How often the paths' plans are recomputed.
const REFRESH: Duration = Duration::from_millis(100);
/// How often an unvalidated jump, a young flow's waiting bytes, and a busy flow's yield to
/// young flows are looked at.
pub const JUMP_CHECK: Duration = Duration::from_millis(10);

fn lock(s: &SharedStarts) -> std::sync::MutexGuard<'_, Starts<PathKey>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// What a path's routes were set to, when, and within which prefixes (`None`: all routes).
type Applied = (Option<u32>, Duration, Option<Vec<IpNet>>);

/// Keeps every path's routes at its plan's initial window (careful resume on).
pub async fn routes_task(shared: Arc<Shared>, net: Arc<Mutex<NetCfg>>) {
    let Some(starts) = shared.starts.as_ref() else {
        return;
    };
    // What each path's routes were set to, with the prefixes they were set within.
    let mut applied: HashMap<PathKey, Applied> = HashMap::new();
    let mut shutdown = shared.shutdown_rx.clone();
    let mut tick = tokio::time::interval(REFRESH);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = super::until_shutdown(&mut shutdown) => return,
        }
        // The peers may change with a reload: their paths are taken afresh each time.
        let tenants = shared.plan().tenants.clone();
        let paths: Vec<(PathKey, Option<Vec<IpNet>>)> = if tenants.is_empty() {
            vec![(PathKey::All, None)]
        } else {
            let prefixes = |i| Some(tenants.prefixes(&Tenant::Peer(i)));
            tenants
                .peers()
                .map(|(i, _)| (PathKey::Peer(i), prefixes(i)))
                .collect()
        };
        applied.retain(|k, _| paths.iter().any(|(p, _)| p == k));
        let now = shared.clock.now();
        let plans: Vec<(PathKey, Option<Vec<IpNet>>, StartPlan)> = {
            let mut s = lock(starts);
            s.expire(now);
            paths
                .into_iter()
                .map(|(p, within)| (p, within, s.plan(&p, now)))
                .collect()
        };
        for (path, within, plan) in plans {
            let want = plan.init_cwnd;
            // Routes set within other prefixes (a reload moved the peer) count as never set.
            let last = applied
                .get(&path)
                .filter(|(_, _, w)| *w == within)
                .map(|(c, at, _)| (*c, *at));
            if !route_update(last, want, now) {
                continue;
            }
            let n = net.clone();
            let inside = within.clone();
            let res = tokio::task::spawn_blocking(move || {
                n.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .set_initcwnd(inside.as_deref(), want)
            })
            .await;
            match res {
                Ok(routes) => tracing::debug!(
                    ?path,
                    source = ?plan.source,
                    init_cwnd = ?want,
                    busy = plan.busy,
                    routes,
                    "new flows' initial window"
                ),
                Err(e) => tracing::error!("initcwnd task: {e}"),
            }
            applied.insert(path, (want, now, within));
        }
    }
}

/// One flow's part: its path, its jump, and what it last reported.
pub struct FlowStart {
    path: PathKey,
    id: FlowId,
    jump: Option<Jump>,
    delivered: u64,
    at: Duration,
    /// `delivered` when the flow last became busy: what it carried since is its busy stretch
    /// (a keep-alive connection's earlier answers do not make a later short one long).
    busy_from: u64,
    /// The flow has not moved a byte yet: its first makes it young.
    before_first_byte: bool,
    /// The flow is young: its path is told whether bytes of its wait (a new flow shares the
    /// link with the young flows that send).
    young: bool,
    /// The flow kept its satellite segment busy at its last report: it may have to yield.
    busy: bool,
    /// The pacing cap of its yield to young flows, when one is set.
    yielded: Option<u64>,
}

impl FlowStart {
    /// At connect: the flow's plan, and its jump's pacing on the satellite socket `sat`.
    /// `None` when careful resume is off or the flow's client belongs to no path.
    pub fn begin(
        shared: &Shared,
        sat: &socket2::Socket,
        client: std::net::IpAddr,
        id: FlowId,
    ) -> Option<FlowStart> {
        let starts = shared.starts.as_ref()?;
        let path = PathKey::of(&shared.plan().tenants, client)?;
        let now = shared.clock.now();
        let plan = lock(starts).plan(&path, now);
        let i = info(sat);
        let mss = i.as_ref().map_or(0, |i| i.snd_mss).max(536);
        // A Fast Open child already sending before its handshake's last ACK.
        let before_handshake = i.as_ref().is_some_and(TcpInfo::syn_recv);
        let mut jump = Jump::new(&plan, mss, before_handshake);
        if let Some(j) = &jump {
            if let Err(e) = sys::set_max_pacing_rate(sat.as_fd(), Some(j.pacing())) {
                tracing::warn!("SO_MAX_PACING_RATE {}: {e}", j.pacing());
                jump = None;
            }
        }
        tracing::debug!(?path, source = ?plan.source, init_cwnd = ?plan.init_cwnd, pacing = ?plan.pacing, "start");
        let jump_pacing = jump.as_ref().map(Jump::pacing);
        shared.table(|t| {
            if let Some(r) = t.record_mut(id) {
                r.start = Some(plan);
                r.jump_pacing = jump_pacing;
            }
        });
        Some(FlowStart {
            path,
            id,
            jump,
            delivered: 0,
            at: now,
            busy_from: 0,
            before_first_byte: true,
            young: false,
            busy: false,
            yielded: None,
        })
    }

    /// The rate (bytes/s) of the first acknowledgements when they refuted the believed rate
    /// of the flow's jump ([`Jump::refuted`]).
    pub fn refuted(&self) -> Option<u64> {
        self.jump.as_ref().and_then(Jump::refuted)
    }

    /// The flow has not moved its first byte yet (wait on [`FlowIo::read`]).
    pub fn before_first_byte(&self) -> bool {
        self.before_first_byte
    }

    /// The flow moved its first byte: its path counts it young for a few round trips.
    pub fn on_first_byte(&mut self, shared: &Shared) {
        self.before_first_byte = false;
        if let Some(starts) = shared.starts.as_ref() {
            self.young = lock(starts).on_first_byte(&self.path, self.id, shared.clock.now());
        }
    }

    /// The jump is still to be validated, the flow is young (its path wants to know whether it
    /// sends), or it is busy and may have to yield to a young one: look every [`JUMP_CHECK`].
    pub fn watching(&self) -> bool {
        self.jump.as_ref().is_some_and(|j| !j.done())
            || self.young
            || self.busy
            || self.yielded.is_some()
    }

    /// Tells the path whether a young flow sends; validates or retreats the jump; once it is
    /// over, paces at the yield its path asks for.
    pub fn tick(&mut self, shared: &Shared, io: &FlowIo) {
        let Some(starts) = shared.starts.as_ref() else {
            return;
        };
        let now = shared.clock.now();
        let side = shared.plan().satellite_side;
        let sat = io.sock(side).get_ref();
        let jumping = self.jump.as_ref().is_some_and(|j| !j.done());
        let looked = jumping || self.young;
        let i = looked.then(|| info(sat)).flatten();
        // The bytes waiting for the satellite segment: its socket's unsent ones, or the
        // relay's (the controlled direction keeps the socket's unsent bytes low).
        let toward = Dir::BOTH.into_iter().find(|d| d.sink() == side);
        let waiting = looked
            && (i.as_ref().and_then(|i| i.notsent_bytes).unwrap_or(0) > 0
                || toward.is_some_and(|d| io.with_relay(|r| r.buffered(d)) > 0));
        let cap = {
            let mut s = lock(starts);
            if self.young {
                self.young = s.on_look(&self.path, self.id, now, waiting);
            }
            (!jumping).then(|| s.yield_cap(&self.path, self.id, now))
        };
        let Some(cap) = cap else {
            if let Some(i) = &i {
                self.jump_tick(shared, sat, i, waiting, now);
            }
            return;
        };
        let moved = match (self.yielded, cap) {
            (Some(a), Some(b)) => hysteresis::moved(a, b),
            (a, b) => a != b,
        };
        if !moved {
            return;
        }
        tracing::debug!(pacing = ?cap, "yield to young flows");
        match sys::set_max_pacing_rate(sat.as_fd(), cap) {
            Ok(()) => self.yielded = cap,
            Err(e) => tracing::warn!("SO_MAX_PACING_RATE {cap:?}: {e}"),
        }
    }

    /// Validates or retreats the jump.
    fn jump_tick(
        &mut self,
        shared: &Shared,
        sat: &socket2::Socket,
        i: &TcpInfo,
        backlogged: bool,
        now: Duration,
    ) {
        let Some(j) = self.jump.as_mut() else {
            return;
        };
        let s = JumpSample {
            bytes_acked: i.bytes_acked.unwrap_or(0),
            lost: i.total_retrans.saturating_add(i.lost),
            delivery_rate: i.delivery_rate.unwrap_or(0),
            srtt: Duration::from_micros(i.rtt_us as u64),
            handshake: i.syn_recv(),
            backlogged,
        };
        let action = j.on_sample(now, &s);
        tracing::trace!(?s, ?action, "jump sample");
        let rate = match action {
            JumpAction::Keep => return,
            JumpAction::Pace(r) | JumpAction::Raise(r) => Some(r),
            JumpAction::Release | JumpAction::Restart => None,
        };
        tracing::debug!(pacing = ?rate, acked = s.bytes_acked, lost = s.lost, ?action, "jump");
        if let Err(e) = sys::set_max_pacing_rate(sat.as_fd(), rate) {
            tracing::warn!("SO_MAX_PACING_RATE: {e}");
        }
        shared.table(|t| {
            if let Some(r) = t.record_mut(self.id) {
                r.jump_pacing = rate;
            }
        });
        // Only BBR learns its bandwidth from the paced jump (and a name that could not be read
        // must not leave the socket on reno).
        let restart = matches!(action, JumpAction::Restart | JumpAction::Raise(_));
        if restart && congestion_name(sat) == BBR {
            if let Err(e) = restart_congestion(sat, BBR) {
                tracing::error!("restarting BBR on the satellite segment: {e}");
            }
        }
    }

    /// Every few hundred milliseconds or more: the flow's satellite delivery rate goes to its
    /// path if the flow kept the link busy (StarPEP's estimate where the flow is controlled,
    /// else the kernel's non-application-limited delivery rate).
    pub fn sample(&mut self, shared: &Shared, io: &FlowIo, control: Option<&FlowControl>) {
        let (Some(starts), Some(i)) = (
            shared.starts.as_ref(),
            info(io.sock(shared.plan().satellite_side).get_ref()),
        ) else {
            return;
        };
        let now = shared.clock.now();
        let delivered = i.delivered_bytes().unwrap_or(0);
        let period = now.saturating_sub(self.at);
        let delta = delivered.saturating_sub(self.delivered);
        (self.delivered, self.at) = (delivered, now);
        let measured = match control {
            Some(c) => c.measured(),
            None => (!i.app_limited)
                .then_some(i.delivery_rate)
                .flatten()
                .map(|r| r as f64)
                .zip(i.min_rtt_us.map(|us| Duration::from_micros(us as u64))),
        };
        let Some((rate, rtt)) = measured.filter(|(r, _)| busy(delta, period, *r)) else {
            self.busy_from = delivered;
            self.busy = false;
            return;
        };
        self.busy = true;
        let s = RateSample {
            capacity: rate,
            delivered: delta as f64 / period.as_secs_f64().max(1e-3),
            rtt,
            total: delivered.saturating_sub(self.busy_from),
            congested: self.jump.as_ref().is_some_and(Jump::retreated),
        };
        tracing::debug!(
            capacity = s.capacity,
            delivered = s.delivered,
            rtt_ms = s.rtt.as_secs_f64() * 1e3,
            controlled = control.is_some(),
            "start sample"
        );
        lock(starts).on_sample(&self.path, self.id, now, s);
    }

    /// The flow ended.
    pub fn end(&self, shared: &Shared) {
        if let Some(s) = shared.starts.as_ref() {
            lock(s).on_end(&self.path, self.id);
        }
    }
}
