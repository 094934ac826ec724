//! The PEP's background tasks beside the flows: applying pause/resume to nft, keeping the nft
//! sets of capped clients, keeping the daemon's copy of the nft SYN counters, and keeping the
//! flow table's limit at what the descriptors allow.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::pep::nft::{CounterActivity, CounterPoll};
use crate::pep::CapSync;

use super::error::ProxyError;
use super::netcfg::{self, NetCfg};
use super::nofile;
use super::state::Shared;
use super::until_shutdown;

/// How often the counters task looks whether the nft counters may have moved.
const COUNTER_POLL: Duration = Duration::from_secs(1);
/// How soon a cap step nft refused is tried again.
const CAP_RETRY: Duration = Duration::from_secs(1);

/// Applies pause/resume decisions (latest wins; one nft refused, with no descriptor left for
/// instance, is logged once and retried every [`CAP_RETRY`]).
pub async fn intercept(
    shared: Arc<Shared>,
    net: Arc<Mutex<NetCfg>>,
    mut rx: watch::Receiver<bool>,
) {
    let mut shutdown = shared.shutdown_rx.clone();
    let (mut want, mut applied, mut failing) = (true, true, false);
    loop {
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    return;
                }
                want = *rx.borrow_and_update();
            }
            _ = tokio::time::sleep(CAP_RETRY), if want != applied => {}
            _ = until_shutdown(&mut shutdown) => return,
        }
        if want == applied {
            continue;
        }
        let n = net.clone();
        let res = tokio::task::spawn_blocking(move || {
            n.lock()
                .unwrap_or_else(|e| e.into_inner())
                .set_intercepting(want)
        })
        .await
        .unwrap_or_else(|e| Err(ProxyError::sys("nft task", std::io::Error::other(e))));
        match res {
            Ok(()) => {
                if std::mem::take(&mut failing) {
                    tracing::info!(
                        "interception {} now",
                        if want { "resumed" } else { "paused" }
                    );
                }
                applied = want;
            }
            Err(e) if !failing => {
                tracing::error!("{e} (retrying every {CAP_RETRY:?})");
                failing = true;
            }
            Err(_) => {}
        }
    }
}

/// Keeps the nft sets of capped clients (`MaxFlowsPerClient`) equal to the flow table's
/// state: woken by every cap or uncap, it reads which clients are capped now (under the
/// table's lock) and applies each difference, one client per nft transaction; a refused one is
/// logged once and retried.
pub async fn caps(shared: Arc<Shared>, net: Arc<Mutex<NetCfg>>) {
    let mut shutdown = shared.shutdown_rx.clone();
    let mut sync = CapSync::default();
    let mut failing = false;
    loop {
        tokio::select! {
            _ = shared.cap_notify.notified() => {}
            _ = tokio::time::sleep(CAP_RETRY), if failing => {}
            _ = until_shutdown(&mut shutdown) => return,
        }
        let want = shared.table(|t| t.client_cap().0.capped_set().clone());
        let steps = sync.diff(&shared.plan().tenants, &want);
        let was_failing = failing;
        failing = false;
        for step in steps {
            let n = net.clone();
            let ops = step.ops.clone();
            let res = tokio::task::spawn_blocking(move || {
                n.lock().unwrap_or_else(|e| e.into_inner()).set_capped(&ops)
            })
            .await;
            match res {
                Ok(Ok(())) => sync.applied(&step),
                Ok(Err(e)) => {
                    if !was_failing {
                        tracing::error!("client {:?}: {e} (retrying)", step.tenant);
                    }
                    failing = true;
                }
                Err(e) => {
                    tracing::error!("nft task: {e}");
                    failing = true;
                }
            }
        }
    }
}

/// Keeps the daemon's copy of the nft SYN counters, which `show` reports: reads them (runs
/// `nft`) only when they may have moved ([`CounterPoll`]), at most once per [`COUNTER_POLL`].
pub async fn counters(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_rx.clone();
    let mut poll = CounterPoll::default();
    loop {
        let now = shared.table(|t| CounterActivity {
            accepted: t.totals().accepted,
            paused: !t.intercepting(),
            capped: t.client_cap().0.capped(),
        });
        if poll.due(now) {
            let s = shared.clone();
            let _ =
                tokio::task::spawn_blocking(move || match netcfg::read_counters(&s.plan().table) {
                    Ok(c) => s.set_counters(c),
                    Err(e) => tracing::debug!("{e}"),
                })
                .await;
        }
        tokio::select! {
            _ = tokio::time::sleep(COUNTER_POLL) => {}
            _ = until_shutdown(&mut shutdown) => return,
        }
    }
}

/// Keeps the flow table's limit at what `MaxFlows` (of the running plan: a reload may change
/// it) and the descriptors allow (`nofile`, read again every [`nofile::REREAD`]).
pub async fn flow_budget(shared: Arc<Shared>) {
    let mut shutdown = shared.shutdown_rx.clone();
    let mut last = None;
    loop {
        let max_flows = shared.plan().max_flows;
        let limit = nofile::flow_limit(max_flows, shared.mode);
        if last != Some((limit, max_flows)) {
            if limit < max_flows {
                tracing::warn!(
                    "RLIMIT_NOFILE {} leaves room for {limit} split flows (MaxFlows \
                     {max_flows}): further new flows pass unsplit",
                    nofile::soft_limit().unwrap_or(0)
                );
            } else if last.is_some_and(|(l, m)| l < m) {
                tracing::info!(
                    "RLIMIT_NOFILE {:?}: MaxFlows {limit} again",
                    nofile::soft_limit()
                );
            }
            last = Some((limit, max_flows));
        }
        if shared.table(|t| t.max()) != limit {
            shared.set_flow_limit(limit);
        }
        tokio::select! {
            _ = tokio::time::sleep(nofile::REREAD) => {}
            _ = until_shutdown(&mut shutdown) => return,
        }
    }
}
