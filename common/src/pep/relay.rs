//! Per-flow relay state machine (pure): events from the two sockets in, socket actions out.
//!
//! One split flow joins two TCP connections: the *accepted* one (the TPROXY'd flow; on the box
//! the user's LAN segment, on the POP the satellite segment) and the *connected* one (opened by
//! the PEP toward the original destination). Data moves in two directions, each with its own
//! state, as in tokio's `copy_bidirectional`: EOF one way is forwarded as `shutdown(SHUT_WR)`
//! once the buffered bytes are written, while the other way keeps flowing; a reset or error on
//! either socket aborts the other (SO_LINGER 0 + close = RST); a failed connect resets the
//! accepted socket; a flow without activity for the idle timeout is reset both ways. The
//! buffer per direction is bounded (`cap`): the I/O shell reads at most [`Relay::read_budget`].
//! Time is passed in; the proxy shell (`proxy::flow`) executes the returned [`Action`]s.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// A relay direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Accepted → connected (toward the original destination).
    Up,
    /// Connected → accepted (back toward the flow's originator).
    Down,
}

impl Dir {
    pub const BOTH: [Dir; 2] = [Dir::Up, Dir::Down];

    /// The socket this direction reads from.
    pub fn source(self) -> Side {
        match self {
            Dir::Up => Side::Accepted,
            Dir::Down => Side::Connected,
        }
    }

    /// The socket this direction writes to.
    pub fn sink(self) -> Side {
        self.source().other()
    }

    fn idx(self) -> usize {
        self as usize
    }
}

/// One of the flow's two sockets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// The intercepted connection (TPROXY accept).
    Accepted,
    /// The PEP's own connection toward the original destination.
    Connected,
}

impl Side {
    pub fn other(self) -> Side {
        match self {
            Side::Accepted => Side::Connected,
            Side::Connected => Side::Accepted,
        }
    }
}

/// What happened on a socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// The connect toward the original destination completed.
    Connected,
    /// The connect failed (refused, unreachable, timed out).
    ConnectFailed,
    /// `n > 0` bytes were read from `dir`'s source into its buffer.
    Read { dir: Dir, n: usize },
    /// `dir`'s source reached end of stream (the peer sent FIN).
    Eof { dir: Dir },
    /// `n > 0` bytes of `dir`'s buffer were written to its sink.
    Written { dir: Dir, n: usize },
    /// A read or write on `side` failed: reset by the peer, broken pipe, timeout.
    Failed { side: Side },
    /// Time passed (idle check).
    Tick,
    /// The daemon is shutting down.
    Shutdown,
    /// A reload removed the peer that carried the flow (or its AllowedIPs no longer hold it).
    Revoke,
}

/// What the shell must do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// `shutdown(SHUT_WR)` on the socket: forwards the EOF.
    ShutdownWrite(Side),
    /// Set SO_LINGER 0 on the socket so that closing it sends RST.
    Abort(Side),
    /// The flow is over: close both sockets and remove it from the flow table.
    Close,
}

/// Up to three actions from one event (no allocation on the data path).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Actions {
    buf: [Option<Action>; 3],
}

impl Actions {
    fn push(&mut self, a: Action) {
        let slot = self
            .buf
            .iter_mut()
            .find(|s| s.is_none())
            .expect("at most three actions per event");
        *slot = Some(a);
    }

    pub fn is_empty(&self) -> bool {
        self.buf[0].is_none()
    }

    pub fn iter(&self) -> impl Iterator<Item = Action> + '_ {
        self.buf.iter().map_while(|a| *a)
    }

    pub fn contains(&self, a: Action) -> bool {
        self.iter().any(|x| x == a)
    }
}

/// Where one direction stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirPhase {
    /// Reading and writing.
    Open,
    /// EOF read; the buffer is still being written.
    Draining,
    /// EOF forwarded (`shutdown(SHUT_WR)` done on the sink).
    Shut,
}

#[derive(Debug, Clone, Copy)]
struct DirState {
    phase: DirPhase,
    buffered: usize,
    bytes: u64,
}

/// The flow's state as reported by `show`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlowState {
    /// Waiting for the connect toward the original destination.
    Connecting,
    Established,
    /// The originator sent FIN (forwarded); the other direction still flows.
    HalfClosedUp,
    /// The destination sent FIN (forwarded); the other direction still flows.
    HalfClosedDown,
    /// Both EOFs forwarded: a clean end.
    Closed,
    /// Reset or failed on one side; the other was reset.
    Reset,
    /// The connect toward the original destination failed; the accepted socket was reset.
    ConnectFailed,
    /// No activity for the idle timeout; both sides were reset.
    IdleTimeout,
    /// Reset because the daemon shut down.
    Shutdown,
    /// Reset because a reload removed the peer that carried it.
    Revoked,
}

impl FlowState {
    /// Whether the flow is over.
    pub fn is_final(self) -> bool {
        matches!(
            self,
            FlowState::Closed
                | FlowState::Reset
                | FlowState::ConnectFailed
                | FlowState::IdleTimeout
                | FlowState::Shutdown
                | FlowState::Revoked
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FlowState::Connecting => "connecting",
            FlowState::Established => "established",
            FlowState::HalfClosedUp => "half-closed-up",
            FlowState::HalfClosedDown => "half-closed-down",
            FlowState::Closed => "closed",
            FlowState::Reset => "reset",
            FlowState::ConnectFailed => "connect-failed",
            FlowState::IdleTimeout => "idle-timeout",
            FlowState::Shutdown => "shutdown",
            FlowState::Revoked => "revoked",
        }
    }
}

/// The relay state of one flow.
#[derive(Debug, Clone)]
pub struct Relay {
    dirs: [DirState; 2],
    connected: bool,
    end: Option<FlowState>,
    /// Buffer per direction (bytes); the window controller narrows the controlled one.
    cap: [usize; 2],
    idle_timeout: Duration,
    last_activity: Instant,
}

impl Relay {
    /// A new flow waiting for its connect; `cap` bytes of buffer per direction (at least 1).
    pub fn new(cap: usize, idle_timeout: Duration, now: Instant) -> Relay {
        let d = DirState {
            phase: DirPhase::Open,
            buffered: 0,
            bytes: 0,
        };
        Relay {
            dirs: [d; 2],
            connected: false,
            end: None,
            cap: [cap.max(1); 2],
            idle_timeout,
            last_activity: now,
        }
    }

    /// How many bytes the shell may read for `dir` now (0: do not read).
    pub fn read_budget(&self, dir: Dir) -> usize {
        let d = &self.dirs[dir.idx()];
        if self.end.is_some() || !self.connected || d.phase != DirPhase::Open {
            return 0;
        }
        self.cap[dir.idx()].saturating_sub(d.buffered)
    }

    /// Sets `dir`'s buffer to `cap` bytes (at least 1). Bytes already buffered above it stay
    /// and are written; nothing more is read until the buffer is below the new size.
    pub fn set_cap(&mut self, dir: Dir, cap: usize) {
        self.cap[dir.idx()] = cap.max(1);
    }

    /// Bytes read for `dir` and not yet written.
    pub fn buffered(&self, dir: Dir) -> usize {
        self.dirs[dir.idx()].buffered
    }

    /// Bytes written so far in `dir`.
    pub fn bytes(&self, dir: Dir) -> u64 {
        self.dirs[dir.idx()].bytes
    }

    /// Whether `dir` still has work (reading or draining); false once its EOF is forwarded.
    pub fn dir_active(&self, dir: Dir) -> bool {
        self.end.is_none() && self.connected && self.dirs[dir.idx()].phase != DirPhase::Shut
    }

    /// When the idle timeout fires if nothing moves.
    pub fn idle_deadline(&self) -> Instant {
        self.last_activity + self.idle_timeout
    }

    pub fn is_finished(&self) -> bool {
        self.end.is_some()
    }

    pub fn state(&self) -> FlowState {
        if let Some(end) = self.end {
            return end;
        }
        if !self.connected {
            return FlowState::Connecting;
        }
        let shut = |d: Dir| self.dirs[d.idx()].phase != DirPhase::Open;
        match (shut(Dir::Up), shut(Dir::Down)) {
            (false, false) => FlowState::Established,
            (true, false) => FlowState::HalfClosedUp,
            (false, true) => FlowState::HalfClosedDown,
            // Both EOFs read, one still draining.
            (true, true) => FlowState::HalfClosedUp,
        }
    }

    /// Feeds one event; returns what to do. Events after the end are ignored.
    pub fn on(&mut self, ev: Event, now: Instant) -> Actions {
        let mut out = Actions::default();
        if self.end.is_some() {
            return out;
        }
        match ev {
            Event::Connected => {
                self.connected = true;
                self.last_activity = now;
            }
            Event::ConnectFailed => {
                out.push(Action::Abort(Side::Accepted));
                self.finish(FlowState::ConnectFailed, &mut out);
            }
            Event::Read { dir, n } => {
                let d = &mut self.dirs[dir.idx()];
                debug_assert!(d.phase == DirPhase::Open);
                d.buffered += n;
                self.last_activity = now;
            }
            Event::Eof { dir } => {
                let d = &mut self.dirs[dir.idx()];
                if d.phase == DirPhase::Open {
                    d.phase = DirPhase::Draining;
                }
                self.last_activity = now;
                self.maybe_shut(dir, &mut out);
            }
            Event::Written { dir, n } => {
                let d = &mut self.dirs[dir.idx()];
                debug_assert!(n <= d.buffered);
                d.buffered -= n.min(d.buffered);
                d.bytes += n as u64;
                self.last_activity = now;
                self.maybe_shut(dir, &mut out);
            }
            Event::Failed { side } => {
                out.push(Action::Abort(side.other()));
                self.finish(FlowState::Reset, &mut out);
            }
            Event::Tick => {
                if now >= self.idle_deadline() {
                    out.push(Action::Abort(Side::Accepted));
                    out.push(Action::Abort(Side::Connected));
                    self.finish(FlowState::IdleTimeout, &mut out);
                }
            }
            Event::Shutdown | Event::Revoke => {
                out.push(Action::Abort(Side::Accepted));
                out.push(Action::Abort(Side::Connected));
                let end = match ev {
                    Event::Revoke => FlowState::Revoked,
                    _ => FlowState::Shutdown,
                };
                self.finish(end, &mut out);
            }
        }
        out
    }

    /// A draining direction with an empty buffer forwards its EOF; both shut ends the flow.
    fn maybe_shut(&mut self, dir: Dir, out: &mut Actions) {
        let d = &mut self.dirs[dir.idx()];
        if d.phase == DirPhase::Draining && d.buffered == 0 {
            d.phase = DirPhase::Shut;
            out.push(Action::ShutdownWrite(dir.sink()));
        }
        if self.dirs.iter().all(|d| d.phase == DirPhase::Shut) {
            self.finish(FlowState::Closed, out);
        }
    }

    fn finish(&mut self, state: FlowState, out: &mut Actions) {
        self.end = Some(state);
        out.push(Action::Close);
    }
}
