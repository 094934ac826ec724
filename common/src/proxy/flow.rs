//! One split flow: connect toward the original destination, run both relay directions, sample
//! TCP_INFO, execute resets and timeouts (and a reload's revocation), and leave the flow table
//! when done. A flow runs with the plan it started with.
//!
//! Both sockets carry `SO_LINGER 0` while the flow lives (cleared at a clean end): if the
//! daemon dies (kill -9, crash), the kernel closes them with a reset, so neither end host takes
//! a cut stream for a complete one.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use socket2::Socket;
use tokio::io::Interest;
use tracing::Instrument;

use crate::pep::{Dir, Event, FastOpen, FlowId, FlowKey, FlowState, Relay, SegmentInfo, Side};

use super::control::FlowControl;
use super::pump::{self, Failure, FlowIo, Pipe, RelayMode};
use super::reload::Revocation;
use super::share::FlowShare;
use super::start::{FlowStart, JUMP_CHECK};
use super::state::Shared;
use super::tcp_info::info;
use super::{fast_open, sockopt, sys};

/// How often a flow refreshes its table record (bytes, state, TCP_INFO) and checks idleness.
const SAMPLE_EVERY: Duration = Duration::from_secs(1);

/// Runs the flow to its end; never fails (every outcome is a final state in the table).
pub async fn run(shared: Arc<Shared>, accepted: Socket, key: FlowKey, id: FlowId) {
    let span = tracing::debug_span!("flow", id, client = %key.client, server = %key.server);
    async move {
        let (state, up, down) = relay_flow(&shared, accepted, key, id).await;
        tracing::debug!(state = state.as_str(), up, down, "flow ended");
        shared
            .control_stats
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .end(id);
        shared.remove(id, state, up, down);
    }
    .instrument(span)
    .await
}

fn sample(s: &Socket, cc: &str) -> Option<SegmentInfo> {
    info(s).map(|i| i.to_segment(cc))
}

/// Connects and relays; returns the final state and the bytes each way.
async fn relay_flow(
    shared: &Shared,
    accepted: Socket,
    key: FlowKey,
    id: FlowId,
) -> (FlowState, u64, u64) {
    let plan = shared.plan();
    let plan = &*plan;
    let mut revocation = Revocation::new(shared, id);
    let mut relay = Relay::new(plan.flow_buffer, plan.idle_timeout, Instant::now());
    let reset_accepted = |s: &Socket| {
        let _ = s.set_linger(Some(Duration::ZERO));
    };
    reset_accepted(&accepted);
    if let Err(e) = sockopt::apply(&accepted, plan.opts(Side::Accepted)) {
        tracing::warn!("accepted socket options: {e}");
    }
    let spoof = plan.transparent_connect.then_some(key.client);
    let accepted = match sys::register(accepted) {
        Ok(a) => a,
        Err(e) => {
            tracing::warn!("register the accepted socket with the reactor: {e}");
            relay.on(Event::ConnectFailed, Instant::now());
            return (relay.state(), 0, 0);
        }
    };
    // Fast Open: the client's first bytes ride on the SYN across the satellite.
    let first = match plan.fast_open {
        FastOpen::Connect => {
            let wait = fast_open::first_bytes_wait(shared.handshake_rtt.get());
            fast_open::first_bytes(&accepted, wait).await
        }
        _ => Vec::new(),
    };
    let opts = plan.opts(Side::Connected);
    let (connected, early) = match sockopt::connect_start(key.server, spoof, opts, &first) {
        Ok((s, n)) => {
            let _ = s.set_linger(Some(Duration::ZERO));
            (s, n)
        }
        Err(e) => {
            tracing::warn!("{e}");
            reset_accepted(accepted.get_ref());
            relay.on(Event::ConnectFailed, Instant::now());
            return (relay.state(), 0, 0);
        }
    };
    let registered = sys::register(connected).map_err(|e| e.to_string());
    // The bytes the SYN carries leave the accepted socket, where they were only peeked.
    let consumed = match early {
        0 => Ok(()),
        n => fast_open::consume(accepted.get_ref(), n).map_err(|e| format!("Fast Open: {e}")),
    };
    let connected = match (registered, consumed) {
        (Ok(c), Ok(())) => c,
        (Err(e), _) | (_, Err(e)) => {
            tracing::warn!("flow setup: {e}");
            reset_accepted(accepted.get_ref());
            relay.on(Event::ConnectFailed, Instant::now());
            return (relay.state(), 0, 0);
        }
    };
    // Wait for the connect (the kernel's SYN retries bound it, as for a direct attempt), unless
    // the client gives up first: its reset ends the attempt (a connect flood that resets its
    // own connections then holds no slot for the minutes of SYN retries).
    let mut shutdown = shared.shutdown_rx.clone();
    let outcome = tokio::select! {
        _ = accepted.ready(Interest::ERROR) => Err("the client reset the connection".into()),
        r = connected.ready(Interest::WRITABLE | Interest::ERROR) => match r {
            Ok(_) => match connected.get_ref().take_error() {
                Ok(None) => connected.get_ref().peer_addr().map(|_| ()).map_err(|e| e.to_string()),
                Ok(Some(e)) | Err(e) => Err(e.to_string()),
            },
            Err(e) => Err(e.to_string()),
        },
        _ = super::until_shutdown(&mut shutdown) => Err("daemon shutting down".into()),
        _ = revocation.wait() => Err("its peer was removed".into()),
    };
    if let Err(e) = outcome {
        tracing::info!("connect {} failed: {e}; resetting the client", key.server);
        reset_accepted(accepted.get_ref());
        let ev = if revocation.is_revoked() {
            Event::Revoke
        } else {
            Event::ConnectFailed
        };
        relay.on(ev, Instant::now());
        return (relay.state(), 0, 0);
    }
    if let Err(e) = sockopt::set_liveness(connected.get_ref(), plan.opts(Side::Connected)) {
        tracing::warn!("connected socket options: {e}");
    }
    if plan.fast_open == FastOpen::Connect {
        if let Some(i) = info(connected.get_ref()) {
            shared
                .handshake_rtt
                .on_sample(Duration::from_micros(i.rtt_us as u64));
        }
    }
    relay.on(Event::Connected, Instant::now());
    if early > 0 {
        let now = Instant::now();
        relay.on(
            Event::Read {
                dir: Dir::Up,
                n: early,
            },
            now,
        );
        relay.on(
            Event::Written {
                dir: Dir::Up,
                n: early,
            },
            now,
        );
        tracing::debug!(
            bytes = early,
            "Fast Open: the first bytes crossed with the SYN"
        );
    }
    let mut quick_ack = [false; 2];
    quick_ack[plan.satellite_side as usize] = plan.opts(plan.satellite_side).quick_ack;
    // StarPEP: the sender's window is a few segments, so a delayed ACK (up to 40 ms) would
    // stall it (and its tail-loss probes resend what already arrived): ACK at once.
    if let Some(sp) = plan.starpep.as_ref().filter(|s| s.apply) {
        quick_ack[sp.dir.source() as usize] = true;
    }
    let io = FlowIo {
        accepted,
        connected,
        relay: std::sync::Mutex::new(relay),
        quick_ack,
        unsent_limit: Default::default(),
        segment: Default::default(),
        read: Default::default(),
    };
    let ccs = [
        sockopt::congestion_name(io.accepted.get_ref()),
        sockopt::congestion_name(io.connected.get_ref()),
    ];
    let refresh = |io: &FlowIo| {
        let (state, up, down) =
            io.with_relay(|r| (r.state(), r.bytes(Dir::Up), r.bytes(Dir::Down)));
        let a = sample(io.accepted.get_ref(), &ccs[0]);
        let c = sample(io.connected.get_ref(), &ccs[1]);
        let (sat, ter) = match plan.satellite_side {
            Side::Accepted => (a, c),
            Side::Connected => (c, a),
        };
        shared.table(|t| {
            if let Some(r) = t.record_mut(id) {
                r.state = state;
                r.bytes_up = up;
                r.bytes_down = down;
                r.satellite = sat;
                r.terrestrial = ter;
            }
        });
    };
    refresh(&io);
    let mut share = FlowShare::start(shared, plan, io.sock(plan.satellite_side).get_ref(), id);
    let mut control = match &plan.starpep {
        Some(sp) => FlowControl::new(
            sp,
            shared.window.clone(),
            &io,
            id,
            key.client,
            key.server,
            plan.flow_buffer,
            shared.clock.now(),
        ),
        None => None,
    };
    // The first tick before any byte is relayed: the bounds hold from the first segment.
    if let Some(c) = control.as_mut() {
        control_tick(shared, &io, c, id);
    }
    let mut start = FlowStart::begin(
        shared,
        io.sock(plan.satellite_side).get_ref(),
        key.client.ip(),
        id,
    );
    let hooks = Hooks {
        plan,
        revocation,
        refresh: &refresh,
        share: &mut share,
        control: control.as_mut(),
        start: start.as_mut(),
    };
    supervise(shared, &io, hooks, id).await;
    if let Some(c) = &control {
        c.release(&io);
    }
    if let Some(s) = &start {
        s.end(shared);
    }
    if io.with_relay(|r| r.state()) == FlowState::Closed {
        // Both EOFs were forwarded: close normally (the FINs are out; no reset).
        for s in [&io.accepted, &io.connected] {
            let _ = s.get_ref().set_linger(None);
        }
    }
    refresh(&io);
    io.with_relay(|r| (r.state(), r.bytes(Dir::Up), r.bytes(Dir::Down)))
}

/// One StarPEP tick: run the controller, log and publish its record.
fn control_tick(shared: &Shared, io: &FlowIo, c: &mut FlowControl, id: FlowId) {
    let now = shared.clock.now();
    let rec = c.tick(io, now);
    if let Some(log) = &shared.control_log {
        log.write(&rec);
    }
    shared
        .control_stats
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .observe(id, now, &rec);
    shared.table(|t| {
        if let Some(r) = t.record_mut(id) {
            r.control = Some(rec);
        }
    });
}

/// What a flow's supervision runs besides the relay: the record refresh and the buffer share
/// (every period), the StarPEP controller and careful resume (when on), and the revocation
/// a reload sends when the flow's peer is removed.
struct Hooks<'a> {
    plan: &'a crate::pep::Plan,
    revocation: Revocation,
    refresh: &'a (dyn Fn(&FlowIo) + Sync),
    share: &'a mut FlowShare,
    control: Option<&'a mut FlowControl>,
    start: Option<&'a mut FlowStart>,
}

/// Both directions, the idle tick, the StarPEP control tick, error watches on half-closed
/// sockets, shutdown and revocation.
async fn supervise(shared: &Shared, io: &FlowIo, hooks: Hooks<'_>, id: FlowId) {
    let Hooks {
        plan,
        mut revocation,
        refresh,
        share,
        mut control,
        mut start,
    } = hooks;
    let mode = shared.mode;
    let cap = plan.flow_buffer;
    let pipes = match mode {
        RelayMode::Splice => match (Pipe::new(cap), Pipe::new(cap)) {
            (Ok(a), Ok(b)) => {
                if (a.short() || b.short()) && !shared.pipes_short.swap(true, Relaxed) {
                    tracing::warn!(
                        "splice pipes of new flows stay at {} bytes, not {cap}: the pipe pages \
                         of the daemon's user are spent (fs.pipe-user-pages-soft); grant \
                         CAP_SYS_RESOURCE (the packaged units do) or raise the sysctl",
                        a.size().min(b.size())
                    );
                }
                Some([a, b])
            }
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!("pipe for splice: {e}; copying through a buffer instead");
                None
            }
        },
        RelayMode::Copy => None,
    };
    let dir_fut = |dir: Dir| {
        let pipe = pipes.as_ref().map(|p| &p[dir as usize]);
        async move {
            match pipe {
                Some(p) => pump::splice_dir(io, dir, p).await,
                None => pump::copy_dir(io, dir, cap).await,
            }
        }
    };
    let up = dir_fut(Dir::Up);
    let down = dir_fut(Dir::Down);
    tokio::pin!(up, down);
    let (mut up_done, mut down_done) = (false, false);
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + SAMPLE_EVERY, SAMPLE_EVERY);
    let mut jump_tick = tokio::time::interval(JUMP_CHECK);
    // A flow that becomes busy after a long idle stretch looks once, not once per missed tick.
    jump_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // A Fast Open child answers before the handshake's ACK only when pushed.
    let mut before_ack = matches!(plan.fast_open, FastOpen::Listen { .. });
    let mut push_tick = tokio::time::interval(fast_open::SYN_RECV_PUSH);
    let mut shutdown = shared.shutdown_rx.clone();
    let fail = |f: Failure| {
        tracing::debug!("{:?} socket failed: {}", f.side, f.error);
        let a = io.event(Event::Failed { side: f.side });
        let _ = io.exec(&a);
    };
    while !io.with_relay(|r| r.is_finished()) {
        let due = control.as_ref().map(|c| shared.clock.instant(c.deadline()));
        let control_due = async {
            match due {
                Some(t) => tokio::time::sleep_until(t.into()).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = control_due => {
                if let Some(c) = control.as_deref_mut() {
                    control_tick(shared, io, c, id);
                }
            },
            r = &mut up, if !up_done => match r {
                Ok(()) => up_done = true,
                Err(f) => fail(f),
            },
            r = &mut down, if !down_done => match r {
                Ok(()) => down_done = true,
                Err(f) => fail(f),
            },
            // A socket whose reading side is done can still be reset by its peer.
            g = io.accepted.ready(Interest::ERROR), if up_done && !down_done => {
                watch_error(io, Side::Accepted, g, &fail);
            },
            g = io.connected.ready(Interest::ERROR), if down_done && !up_done => {
                watch_error(io, Side::Connected, g, &fail);
            },
            _ = tick.tick() => {
                let a = io.event(Event::Tick);
                let _ = io.exec(&a);
                if let Some(f) = dead_peer(plan, io) {
                    fail(f);
                }
                refresh(io);
                share.tick(shared, io, id);
                if let Some(s) = start.as_deref_mut() {
                    s.sample(shared, io, control.as_deref());
                }
            },
            _ = jump_tick.tick(), if start.as_ref().is_some_and(|s| s.watching()) => {
                if let Some(s) = start.as_deref_mut() {
                    s.tick(shared, io);
                    if let (Some(r), Some(c)) = (s.refuted(), control.as_deref_mut()) {
                        c.on_start_refuted(r as f64);
                    }
                }
            },
            _ = io.read.notified(), if start.as_ref().is_some_and(|s| s.before_first_byte()) => {
                if let Some(s) = start.as_deref_mut() {
                    s.on_first_byte(shared);
                }
            },
            _ = push_tick.tick(), if before_ack => {
                before_ack = fast_open::push_before_ack(io.accepted.get_ref());
            },
            _ = super::until_shutdown(&mut shutdown) => {
                let a = io.event(Event::Shutdown);
                let _ = io.exec(&a);
            },
            _ = revocation.wait() => {
                tracing::debug!("its peer was removed: resetting");
                let a = io.event(Event::Revoke);
                let _ = io.exec(&a);
            },
        }
    }
}

/// The satellite segment's peer (the far PEP) has been silent for `DeadPeerTimeout` while
/// the segment waits on it (`pep::liveness`): the flow is given up.
fn dead_peer(plan: &crate::pep::Plan, io: &FlowIo) -> Option<Failure> {
    let side = plan.satellite_side;
    let l = plan.opts(side).liveness?;
    let i = info(io.sock(side).get_ref())?;
    l.is_dead(&i).then(|| {
        tracing::info!(
            "the far PEP has been silent for {:?} (unacked {}, probes {}): resetting the flow",
            l.dead_after,
            i.unacked,
            i.probes
        );
        Failure {
            side,
            error: std::io::Error::new(std::io::ErrorKind::TimedOut, "far PEP silent"),
        }
    })
}

fn watch_error(
    io: &FlowIo,
    side: Side,
    g: std::io::Result<tokio::io::unix::AsyncFdReadyGuard<'_, Socket>>,
    fail: &(dyn Fn(Failure) + Sync),
) {
    match g {
        Ok(mut g) => match io.sock(side).get_ref().take_error() {
            Ok(Some(error)) => fail(Failure { side, error }),
            Err(error) => fail(Failure { side, error }),
            Ok(None) => g.clear_ready_matching(tokio::io::Ready::ERROR),
        },
        Err(error) => fail(Failure { side, error }),
    }
}
