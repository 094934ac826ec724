//! The satellite segment's start (pure): what a new split flow's satellite socket starts with,
//! its initial window and its pacing rate, and when that start is validated or must retreat.
//!
//! A careful resume (in the spirit of the IETF's careful-resume draft, with RFC 9040's shared
//! TCB): the PEP sees every flow of a path (a WireGuard peer at the POP, the tunnel at the box),
//! so a new flow starts at its fair share of what that path delivers now, or delivered recently
//! ([`Source::Measured`]); from `LinkRate`/`LinkRtt` at half the configured BDP when nothing was
//! measured ([`Source::Configured`]); and from the kernel's defaults otherwise, or while the path
//! is being reconfigured ([`Source::Default`]). The jump is paced at the rate it assumes; a flow
//! that sees loss before its jump is validated retreats to what it measured
//! ([`super::jump::Jump`]).
//!
//! Nothing here touches a socket or reads a clock: the proxy shell feeds rate samples and time
//! in, writes the plan's initial window to the path's routes (`initcwnd`) and its pacing to the
//! new socket (`SO_MAX_PACING_RATE`).

use std::collections::HashMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::priority::{new_flow_share, old_flow_cap, Ages};
use super::starpep::{Phases, LEO_MAX_RTT};
use super::tenants::{Tenant, TenantMap};
use crate::config::{self, Reconfig};
use crate::reconfig::ReconfigSchedule;

/// The kernel's initial window (RFC 6928): a plan at or below it is the kernel's default.
pub const KERNEL_INIT_CWND: u32 = 10;
/// The largest initial window a plan asks for (segments): about 5.6 MB, a 90 Mbit/s GEO BDP.
pub const MAX_INIT_CWND: u32 = 4096;
/// A flow's rate sample stands for the path this long (busy flows report every second).
pub const FRESH: Duration = Duration::from_secs(3);
/// A path's measurement is used this long after its last sample (RFC 9040 temporal sharing);
/// older, the configured link (or the kernel) decides again.
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// Careful resume's unvalidated jump: half of what the path is believed to carry, when the
/// belief was not measured on the path as it is now (configured, or measured before a
/// reconfiguration).
pub const UNVALIDATED_SHARE: f64 = 0.5;

/// A satellite path: the flows that share one satellite link, and the routes a new flow of it
/// takes its initial window from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PathKey {
    /// The POP: one WireGuard peer (index in the config), routed by its AllowedIPs.
    Peer(usize),
    /// The box, or a PEP without peers: every route toward the satellite.
    All,
}

impl PathKey {
    /// The path of a flow from `client`; `None` at a POP for a client no peer holds.
    pub fn of(map: &TenantMap, client: std::net::IpAddr) -> Option<PathKey> {
        if map.is_empty() {
            return Some(PathKey::All);
        }
        match map.peer(client) {
            Some(Tenant::Peer(i)) => Some(PathKey::Peer(i)),
            _ => None,
        }
    }
}

/// A satellite link: rate in bytes/s and round-trip time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Link {
    pub rate: f64,
    pub rtt: Duration,
}

impl Link {
    pub fn bdp(&self) -> f64 {
        self.rate * self.rtt.as_secs_f64()
    }
}

/// Where a plan's figures come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The path's own flows, measured since its last reconfiguration: the fair share.
    Measured,
    /// Measured before the path's last reconfiguration: half the share.
    Stale,
    /// `LinkRate`/`LinkRtt`: half the configured BDP.
    Configured,
    /// The kernel's initial window, unpaced.
    Default,
}

/// What a new flow of a path starts with.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct StartPlan {
    /// Initial window in segments (`None`: the kernel's).
    pub init_cwnd: Option<u32>,
    /// Pacing rate of the jump in bytes/s (`None`: unpaced beyond the CC's own).
    pub pacing: Option<u64>,
    pub source: Source,
    /// Flows of the path already busy.
    pub busy: u32,
    /// Of those and of the flows that just started, the young ones still sending
    /// (`pep::priority`): the new flow shares with these and with the busy flows that are not
    /// old yet; the old ones (a BDP of the path carried) yield to it.
    #[serde(default)]
    pub young: u32,
}

impl StartPlan {
    const DEFAULT: StartPlan = StartPlan {
        init_cwnd: None,
        pacing: None,
        source: Source::Default,
        busy: 0,
        young: 0,
    };
}

/// The starts' parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct StartParams {
    /// `LinkRate`/`LinkRtt` when the operator gave them.
    pub configured: Option<Link>,
    /// Segment size that converts a window in bytes to segments.
    pub mss: u32,
    /// The reconfiguration schedule and its phases: around each instant the path changes, so
    /// a new flow starts from the kernel's defaults, and a measurement from before it is stale.
    pub phases: Phases,
    /// The schedule concerns LEO paths only (`Reconfig = starlink`): a path whose RTT is above
    /// this is not reconfigured by it.
    pub leo_max_rtt: Option<Duration>,
}

impl StartParams {
    /// From the `[PEP]` section; `mss` is the satellite segment's (the tunnel's MTU less the
    /// IP and TCP headers with timestamps).
    pub fn new(pep: &config::Pep, mss: u32) -> StartParams {
        let cfg = &pep.starpep;
        StartParams {
            configured: pep.link_rate_given.then(|| Link {
                rate: pep.link_rate_bps as f64 / 8.0,
                rtt: pep.link_rtt,
            }),
            mss,
            phases: Phases {
                schedule: cfg
                    .schedule()
                    .map(|(period, offset)| ReconfigSchedule::utc(period, offset)),
                guard: cfg.guard,
                probe: cfg.probe,
                recover: cfg.recover,
            },
            leo_max_rtt: (cfg.reconfig == Reconfig::Starlink).then_some(LEO_MAX_RTT),
        }
    }
}

/// One busy flow's report to its path.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSample {
    /// What the flow estimates its satellite segment carries (bytes/s): StarPEP's R_down, or the
    /// kernel's delivery rate. A filtered estimate remembers a flow's rate from before another
    /// flow took its share, so two flows' estimates may each be the whole link.
    pub capacity: f64,
    /// What the flow delivered since its last report (bytes/s): the flows' deliveries add up.
    pub delivered: f64,
    /// The flow's base RTT.
    pub rtt: Duration,
    /// What the flow delivered since it last became busy (bytes): a flow that has not yet
    /// carried a few round trips cannot have measured the path.
    pub total: u64,
    /// The flow's careful-resume jump met loss (it retreated): its rate is evidence that the
    /// path carries less than planned, however short the flow.
    pub congested: bool,
}

impl RateSample {
    /// A long-running flow whose estimate is what it delivered.
    pub fn alone(rate: f64, rtt: Duration) -> RateSample {
        RateSample {
            capacity: rate,
            delivered: rate,
            rtt,
            total: u64::MAX,
            congested: false,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
struct FlowRate {
    capacity: f64,
    delivered: f64,
    rtt: Duration,
    at: Duration,
    total: u64,
    congested: bool,
}

/// What a busy flow must have carried in its current busy stretch, in BDPs of its path, before
/// it yields to young flows ([`crate::pep::priority`]).
pub const OLD_BDPS: f64 = 1.0;

/// Round trips of its own rate a flow must have carried before its estimate can lower a path's.
pub const MEASURING_RTTS: f64 = 2.0;

impl FlowRate {
    /// Whether this flow ran long enough to measure its path: it carried [`MEASURING_RTTS`]
    /// round trips at its own rate, or the BDP the path is believed to have (`known_bdp`), or
    /// its jump met loss. A flow that ends in its first round trip reports its own size, not
    /// the link's.
    fn measured_path(&self, known_bdp: f64) -> bool {
        let own = MEASURING_RTTS * self.capacity.max(self.delivered) * self.rtt.as_secs_f64();
        self.congested || self.total as f64 >= own.min(known_bdp)
    }
}

/// A path's aggregate: its rate (bytes/s), its least RTT, and when.
#[derive(Debug, Clone, Copy, PartialEq)]
struct PathRate {
    rate: f64,
    rtt: Duration,
    at: Duration,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct PathState {
    flows: HashMap<u64, FlowRate>,
    /// The path's last aggregate: the larger of its busy flows' largest estimate and the sum
    /// of what they delivered, the least RTT, and when.
    last: Option<PathRate>,
    /// The flows in their first round trips (least attained service).
    ages: Ages,
}

impl PathState {
    /// The flows that reported within [`FRESH`] of `now`: each takes a share.
    fn busy(&self, now: Duration) -> u32 {
        let fresh = |f: &&FlowRate| now.saturating_sub(f.at) <= FRESH;
        self.flows.values().filter(fresh).count() as u32
    }

    /// Of the busy flows, those that yield to the young ones: no longer young, and with at
    /// least [`OLD_BDPS`] of the path carried in their current busy stretch (least *attained
    /// service*: a kept-alive connection's next answer of a page is as short as a new
    /// connection's, and yields to nobody). `known` is the path's rate and RTT, if any.
    fn is_old(&self, id: u64, f: &FlowRate, now: Duration, known: Option<Link>) -> bool {
        let bdp = known.map_or(0.0, |k| OLD_BDPS * k.bdp());
        now.saturating_sub(f.at) <= FRESH && !self.ages.is_young(id, now) && f.total as f64 >= bdp
    }

    /// How many busy flows are old ([`PathState::is_old`]).
    fn old(&self, now: Duration, known: Option<Link>) -> u32 {
        let old = |(id, f): &(&u64, &FlowRate)| self.is_old(**id, f, now, known);
        self.flows.iter().filter(old).count() as u32
    }

    /// How many busy flows are neither young nor old (a kept-alive connection's next answer):
    /// they do not yield, and a new flow shares with them as with the young ones.
    fn peers(&self, now: Duration, known: Option<Link>) -> u32 {
        let peer = |(id, f): &(&u64, &FlowRate)| {
            now.saturating_sub(f.at) <= FRESH
                && !self.ages.is_young(**id, now)
                && !self.is_old(**id, f, now, known)
        };
        self.flows.iter().filter(peer).count() as u32
    }

    /// The path's measurement, if recent enough to be used.
    fn measured(&self, now: Duration) -> Option<PathRate> {
        self.last.filter(|l| now.saturating_sub(l.at) <= MAX_AGE)
    }
}

/// Every path's memory.
#[derive(Debug, Clone)]
pub struct Starts<K> {
    p: StartParams,
    paths: HashMap<K, PathState>,
}

impl<K: std::hash::Hash + Eq + Clone> Starts<K> {
    pub fn new(p: StartParams) -> Starts<K> {
        Starts {
            p,
            paths: HashMap::new(),
        }
    }

    pub fn params(&self) -> &StartParams {
        &self.p
    }

    /// New parameters (a reload): the paths keep what they measured.
    pub fn set_params(&mut self, p: StartParams) {
        self.p = p;
    }

    /// The paths with a memory (the shell plans for these and for the configured default).
    pub fn paths(&self) -> impl Iterator<Item = &K> {
        self.paths.keys()
    }

    /// A busy flow's report (limited by the link, not by the PEP or the application) at `now`.
    /// Zero or non-finite rates and zero RTTs are ignored.
    ///
    /// The path carries the larger of the largest single estimate (one flow that filled the
    /// link measured it) and the sum of the deliveries (flows that share it): summing the
    /// estimates would count the link once per flow whose filter still holds its solo rate.
    ///
    /// Short flows do not lower what the path is believed to carry: an aggregate below the
    /// path's memory (or the configured link) replaces it only when one of its flows has run
    /// long enough to measure ([`FlowRate::measured_path`]), or the busy flows together carried
    /// [`MEASURING_RTTS`] round trips of the aggregate. A 48 KB answer on GEO ends in its
    /// first round trip, and its delivery rate says how short it was, not what the link
    /// carries; a capacity drop is seen by the longer flows, or by a jump planned on a rate
    /// that is no longer there, which meets loss and retreats ([`super::jump::Jump`]).
    pub fn on_sample(&mut self, path: &K, flow: u64, now: Duration, s: RateSample) {
        let finite = |r: f64| r.is_finite() && r >= 0.0;
        if !(finite(s.capacity) && finite(s.delivered) && s.capacity.max(s.delivered) > 0.0)
            || s.rtt.is_zero()
        {
            return;
        }
        let configured = self.p.configured;
        let st = self.paths.entry(path.clone()).or_default();
        st.flows.insert(
            flow,
            FlowRate {
                capacity: s.capacity,
                delivered: s.delivered,
                rtt: s.rtt,
                at: now,
                total: s.total,
                congested: s.congested,
            },
        );
        let busy = st
            .flows
            .values()
            .filter(|f| now.saturating_sub(f.at) <= FRESH);
        let known = st
            .last
            .filter(|l| now.saturating_sub(l.at) <= MAX_AGE)
            .map(|l| Link {
                rate: l.rate,
                rtt: l.rtt,
            })
            .or(configured);
        let (top, sum, rtt, total, measured) = busy.fold(
            (0.0f64, 0.0, Duration::MAX, 0u64, false),
            |(t, d, r, n, m), f| {
                let m = m || known.is_none_or(|k| f.measured_path(k.bdp()));
                let n = n.saturating_add(f.total);
                (t.max(f.capacity), d + f.delivered, r.min(f.rtt), n, m)
            },
        );
        let rate = top.max(sum);
        let together =
            |k: Link| total as f64 >= (MEASURING_RTTS * rate * k.rtt.as_secs_f64()).min(k.bdp());
        if known.is_some_and(|k| rate < k.rate && !together(k)) && !measured {
            return;
        }
        st.last = Some(PathRate { rate, rtt, at: now });
    }

    /// The flow ended: it no longer takes a share (the path keeps its measurement).
    pub fn on_end(&mut self, path: &K, flow: u64) {
        if let Some(st) = self.paths.get_mut(path) {
            st.flows.remove(&flow);
            st.ages.on_end(flow);
        }
    }

    /// The flow moved its first byte at `now`: it is young for a few round trips of its path
    /// (`pep::priority`), when the path's round trip is known (measured or configured).
    /// Returns whether it is young.
    pub fn on_first_byte(&mut self, path: &K, flow: u64, now: Duration) -> bool {
        let measured = self.paths.get(path).and_then(|st| st.measured(now));
        let Some(rtt) = measured.map(|m| m.rtt).or(self.p.configured.map(|c| c.rtt)) else {
            return false;
        };
        let st = self.paths.entry(path.clone()).or_default();
        st.ages.on_first_byte(flow, now, rtt);
        st.ages.is_young(flow, now)
    }

    /// The shell looked at young `flow` at `now`: while bytes of its wait for the satellite
    /// segment (`waiting`) it counts in a new flow's share. Returns whether it is still young.
    pub fn on_look(&mut self, path: &K, flow: u64, now: Duration, waiting: bool) -> bool {
        self.paths
            .get_mut(path)
            .is_some_and(|st| st.ages.on_look(flow, now, waiting))
    }

    /// The pacing cap (bytes/s) of `flow` at `now`: while another flow of its path is young
    /// and sending, and this one is old (busy within [`FRESH`], not young, a BDP of the path
    /// carried in its busy stretch), the old flows keep a small share of the path's measured
    /// rate together (`pep::priority`); `None` otherwise, and for a flow that stopped reporting.
    /// A young connection that delivered its answer and waits for a request is yielded nothing:
    /// the link would idle.
    pub fn yield_cap(&self, path: &K, flow: u64, now: Duration) -> Option<u64> {
        let st = self.paths.get(path)?;
        let m = st.measured(now)?;
        let known = Some(Link {
            rate: m.rate,
            rtt: m.rtt,
        });
        if !st.is_old(flow, st.flows.get(&flow)?, now, known) {
            return None;
        }
        old_flow_cap(m.rate, st.old(now, known), st.ages.sending(now))
    }

    /// Forgets measurements older than [`MAX_AGE`], flows that stopped reporting, and flows
    /// that are no longer young.
    pub fn expire(&mut self, now: Duration) {
        self.paths.retain(|_, st| {
            st.flows.retain(|_, f| now.saturating_sub(f.at) <= MAX_AGE);
            st.ages.expire(now);
            // A path whose samples were all too short to measure still has its busy flows.
            !st.flows.is_empty() || st.ages.young(now) > 0 || st.measured(now).is_some()
        });
    }

    /// What a flow of `path` that starts at `now` gets.
    pub fn plan(&self, path: &K, now: Duration) -> StartPlan {
        let st = self.paths.get(path);
        let busy = st.map_or(0, |s| s.busy(now));
        // The young flows it shares with: those still sending (`pep::priority`).
        let young = st.map_or(0, |s| s.ages.sending(now));
        let measured = st.and_then(|s| s.measured(now));
        let known = measured
            .map(|m| Link {
                rate: m.rate,
                rtt: m.rtt,
            })
            .or(self.p.configured);
        let old = st.map_or(0, |s| s.old(now, known));
        let peers = st.map_or(0, |s| s.peers(now, known));
        let rtt = measured.map(|m| m.rtt).or(self.p.configured.map(|c| c.rtt));
        let phases = match (rtt, self.p.leo_max_rtt) {
            (Some(r), Some(leo)) if r > leo => None,
            _ => self.p.phases.schedule.map(|_| self.p.phases),
        };
        // Around a reconfiguration the path is changing: the kernel's cautious start.
        let last_instant = match phases {
            Some(ph) => {
                let at = ph.at(now);
                if at.phase != super::starpep::Phase::Steady {
                    return StartPlan {
                        busy,
                        young,
                        ..StartPlan::DEFAULT
                    };
                }
                ph.schedule.and_then(|s| s.prev_instant(now))
            }
            None => None,
        };
        let (link, share, source) = match (measured, self.p.configured) {
            (Some(m), _) if last_instant.is_none_or(|t| m.at >= t) => (
                Link {
                    rate: m.rate,
                    rtt: m.rtt,
                },
                1.0,
                Source::Measured,
            ),
            (Some(m), _) => (
                Link {
                    rate: m.rate,
                    rtt: m.rtt,
                },
                UNVALIDATED_SHARE,
                Source::Stale,
            ),
            (None, Some(c)) => (c, UNVALIDATED_SHARE, Source::Configured),
            (None, None) => {
                return StartPlan {
                    busy,
                    young,
                    ..StartPlan::DEFAULT
                }
            }
        };
        let rate = link.rate * share * new_flow_share(old, young + peers);
        let window = rate * link.rtt.as_secs_f64();
        let segs = (window / self.p.mss.max(1) as f64).min(MAX_INIT_CWND as f64) as u32;
        if segs <= KERNEL_INIT_CWND {
            return StartPlan {
                busy,
                young,
                ..StartPlan::DEFAULT
            };
        }
        // Paced at the rate the path is believed to carry, not at the flow's share of it: the
        // jump does not burst at line rate into the link's buffer, and a short answer (a page's
        // object) leaves at the link's speed instead of over a whole round trip. Beside other
        // flows the window is the share: this flow's jump adds at most that to the link's queue
        // (flows that start within one refresh of the routes get the same initial window, and
        // their jumps add up).
        let pacing = (link.rate * share).max(1.0) as u64;
        StartPlan {
            init_cwnd: Some(segs),
            pacing: Some(pacing),
            source,
            busy,
            young,
        }
    }
}

/// A path's routes move toward a larger initial window at most this often; toward a smaller
/// one (another busy flow, a reconfiguration, an expired measurement) at once.
pub const ROUTE_RAISE_GAP: Duration = Duration::from_secs(1);

/// Whether a path's routes, last set to `last` (value, when), should be set to `want` at
/// `now`: a change of more than an eighth, at once when it lowers the window.
pub fn route_update(
    last: Option<(Option<u32>, Duration)>,
    want: Option<u32>,
    now: Duration,
) -> bool {
    let (had, at) = last.unwrap_or((None, Duration::ZERO));
    let lower = match (had, want) {
        (a, b) if a == b => return false,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (Some(a), Some(b)) => {
            if !super::hysteresis::moved(a.into(), b.into()) {
                return false;
            }
            b < a
        }
        (None, None) => return false,
    };
    lower || last.is_none() || now >= at + ROUTE_RAISE_GAP
}

/// Whether a flow that had `acked` bytes acknowledged over `period` kept its satellite segment
/// busy at `rate` (bytes/s): at least half of it. Idle and application-limited flows report
/// nothing, so they neither take a share nor lower the path's rate.
pub fn busy(acked: u64, period: Duration, rate: f64) -> bool {
    rate > 0.0 && acked as f64 >= 0.5 * rate * period.as_secs_f64()
}
