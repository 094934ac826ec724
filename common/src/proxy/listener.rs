//! TPROXY accept loops: every accepted socket is a new split flow (getsockname = the original
//! destination, getpeername = the originator), admitted to the flow table and run as a task.
//! A reload's plan gives the listener its new socket options (inherited by accepted sockets).
//! With no descriptor left, a pending connection is refused (reset), not left waiting.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::net::TcpListener;

use crate::pep::{FlowKey, FlowState, Side};

use super::error::ProxyError;
use super::state::Shared;
use super::{flow, nofile, sockopt};

/// Back-off after an accept error (e.g. out of file descriptors), so the loop does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

pub fn to_tokio(s: Socket, addr: SocketAddr) -> Result<TcpListener, ProxyError> {
    TcpListener::from_std(s.into())
        .map_err(|e| ProxyError::sys(format!("register listener {addr}"), e))
}

/// Accepts until shutdown.
pub async fn accept_loop(shared: Arc<Shared>, listener: TcpListener) {
    let mut shutdown = shared.shutdown_rx.clone();
    let mut exhausted = false;
    let mut plans = shared.plan.subscribe();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            r = plans.changed() => {
                if r.is_ok() {
                    let plan = plans.borrow_and_update().clone();
                    let s = socket2::SockRef::from(&listener);
                    if let Err(e) = sockopt::apply(&s, plan.opts(Side::Accepted)) {
                        tracing::warn!("listener options of the new plan: {e}");
                    }
                }
                continue;
            }
            _ = super::until_shutdown(&mut shutdown) => return,
        };
        let (stream, client) = match accepted {
            Ok(x) => x,
            Err(e) if nofile::exhausted(&e) => {
                if shared.spare.refuse(&listener).await {
                    nofile::note_refused(&shared.refused_flows, &mut exhausted);
                } else {
                    tokio::time::sleep(ACCEPT_BACKOFF).await;
                }
                continue;
            }
            Err(e) => {
                tracing::warn!("accept: {e}");
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        nofile::note_recovered(&shared.refused_flows, &mut exhausted);
        let server = match stream.local_addr() {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!("getsockname of an accepted flow: {e}");
                continue;
            }
        };
        let sock = match stream.into_std() {
            Ok(s) => Socket::from(s),
            Err(e) => {
                tracing::warn!("deregister accepted flow: {e}");
                continue;
            }
        };
        let key = FlowKey { client, server };
        let adm = shared.admit(key, Instant::now());
        if adm.over_cap {
            // Its SYN raced the nft update that caps its client: reset it rather than hold a
            // slot beyond the client's share (the next ones pass unsplit).
            let _ = sock.set_linger(Some(Duration::ZERO));
            drop(sock);
            shared.remove(adm.id, FlowState::Reset, 0, 0);
            continue;
        }
        if adm.over_limit {
            tracing::info!(
                "flow {client} -> {server} arrived while the table was full; splitting it anyway"
            );
        }
        tracing::debug!(id = adm.id, "split {client} -> {server}");
        tokio::spawn(flow::run(shared.clone(), sock, key, adm.id));
    }
}
