//! Unit tests of the relay state machine: events in, socket actions out, on a virtual clock.

use std::time::{Duration, Instant};

use super::relay::*;

const CAP: usize = 1000;
const IDLE: Duration = Duration::from_secs(60);

fn connected(t0: Instant) -> Relay {
    let mut r = Relay::new(CAP, IDLE, t0);
    assert_eq!(r.state(), FlowState::Connecting);
    assert_eq!(r.read_budget(Dir::Up), 0, "no reading before the connect");
    assert!(r.on(Event::Connected, t0).is_empty());
    assert_eq!(r.state(), FlowState::Established);
    r
}

#[test]
fn budget_is_bounded_by_the_buffer_and_reopens_as_bytes_are_written() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    assert_eq!(r.read_budget(Dir::Up), CAP);
    assert!(r
        .on(
            Event::Read {
                dir: Dir::Up,
                n: 600
            },
            t0
        )
        .is_empty());
    assert_eq!(r.read_budget(Dir::Up), 400);
    assert_eq!(r.read_budget(Dir::Down), CAP, "directions are independent");
    r.on(
        Event::Read {
            dir: Dir::Up,
            n: 400,
        },
        t0,
    );
    assert_eq!(r.read_budget(Dir::Up), 0, "full buffer: backpressure");
    r.on(
        Event::Written {
            dir: Dir::Up,
            n: 700,
        },
        t0,
    );
    assert_eq!(r.read_budget(Dir::Up), 700);
    assert_eq!(r.buffered(Dir::Up), 300);
    assert_eq!(r.bytes(Dir::Up), 700);
}

#[test]
fn eof_is_forwarded_only_after_the_buffer_drained_and_the_other_way_keeps_flowing() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    r.on(
        Event::Read {
            dir: Dir::Up,
            n: 100,
        },
        t0,
    );
    let a = r.on(Event::Eof { dir: Dir::Up }, t0);
    assert!(a.is_empty(), "100 bytes still buffered: {a:?}");
    assert_eq!(r.state(), FlowState::HalfClosedUp);
    assert_eq!(r.read_budget(Dir::Up), 0, "no reads after EOF");
    let a = r.on(
        Event::Written {
            dir: Dir::Up,
            n: 100,
        },
        t0,
    );
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [Action::ShutdownWrite(Side::Connected)]
    );
    assert!(!r.dir_active(Dir::Up));
    // The reply still flows down.
    assert_eq!(r.read_budget(Dir::Down), CAP);
    r.on(
        Event::Read {
            dir: Dir::Down,
            n: 50,
        },
        t0,
    );
    assert!(r
        .on(
            Event::Written {
                dir: Dir::Down,
                n: 50
            },
            t0
        )
        .is_empty());
    assert!(!r.is_finished());
    let a = r.on(Event::Eof { dir: Dir::Down }, t0);
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [Action::ShutdownWrite(Side::Accepted), Action::Close]
    );
    assert_eq!(r.state(), FlowState::Closed);
    assert_eq!((r.bytes(Dir::Up), r.bytes(Dir::Down)), (100, 50));
}

#[test]
fn eof_from_the_destination_first_shuts_the_accepted_side() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    let a = r.on(Event::Eof { dir: Dir::Down }, t0);
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [Action::ShutdownWrite(Side::Accepted)]
    );
    assert_eq!(r.state(), FlowState::HalfClosedDown);
    assert_eq!(r.read_budget(Dir::Up), CAP);
}

#[test]
fn a_reset_on_either_side_aborts_the_other() {
    for side in [Side::Accepted, Side::Connected] {
        let t0 = Instant::now();
        let mut r = connected(t0);
        r.on(
            Event::Read {
                dir: Dir::Down,
                n: 10,
            },
            t0,
        );
        let a = r.on(Event::Failed { side }, t0);
        assert_eq!(
            a.iter().collect::<Vec<_>>(),
            [Action::Abort(side.other()), Action::Close],
            "{side:?}"
        );
        assert_eq!(r.state(), FlowState::Reset);
        assert_eq!(r.read_budget(Dir::Up), 0);
        assert!(
            r.on(Event::Eof { dir: Dir::Up }, t0).is_empty(),
            "ignored after end"
        );
    }
}

#[test]
fn a_reset_after_half_close_still_aborts() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    r.on(Event::Eof { dir: Dir::Up }, t0);
    let a = r.on(
        Event::Failed {
            side: Side::Connected,
        },
        t0,
    );
    assert!(a.contains(Action::Abort(Side::Accepted)));
    assert_eq!(r.state(), FlowState::Reset);
}

#[test]
fn connect_failure_resets_the_accepted_socket() {
    let t0 = Instant::now();
    let mut r = Relay::new(CAP, IDLE, t0);
    let a = r.on(Event::ConnectFailed, t0);
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [Action::Abort(Side::Accepted), Action::Close]
    );
    assert_eq!(r.state(), FlowState::ConnectFailed);
    assert!(r.state().is_final());
}

#[test]
fn idle_timeout_counts_from_the_last_activity() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    let t1 = t0 + Duration::from_secs(50);
    r.on(Event::Read { dir: Dir::Up, n: 1 }, t1);
    assert_eq!(r.idle_deadline(), t1 + IDLE);
    assert!(
        r.on(Event::Tick, t0 + IDLE).is_empty(),
        "activity at t1 restarted the clock"
    );
    let a = r.on(Event::Tick, t1 + IDLE);
    assert_eq!(
        a.iter().collect::<Vec<_>>(),
        [
            Action::Abort(Side::Accepted),
            Action::Abort(Side::Connected),
            Action::Close
        ]
    );
    assert_eq!(r.state(), FlowState::IdleTimeout);
}

#[test]
fn shutdown_resets_both_sides() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    let a = r.on(Event::Shutdown, t0);
    assert!(
        a.contains(Action::Abort(Side::Accepted)) && a.contains(Action::Abort(Side::Connected))
    );
    assert_eq!(r.state(), FlowState::Shutdown);
}

#[test]
fn directions_map_to_sockets() {
    assert_eq!(Dir::Up.source(), Side::Accepted);
    assert_eq!(Dir::Up.sink(), Side::Connected);
    assert_eq!(Dir::Down.source(), Side::Connected);
    assert_eq!(Dir::Down.sink(), Side::Accepted);
}

/// A random sequence of legal events never overfills a buffer, never writes more than was read,
/// and ends with every EOF forwarded exactly once.
#[test]
fn random_legal_event_sequences_keep_the_invariants() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    for _ in 0..500 {
        let t0 = Instant::now();
        let mut r = connected(t0);
        let mut read = [0u64; 2];
        let mut shut = [0; 2];
        let mut eof = [false; 2];
        for _ in 0..200 {
            let dir = if rng.gen() { Dir::Up } else { Dir::Down };
            let i = dir as usize;
            let ev = match rng.gen_range(0..3) {
                0 if r.read_budget(dir) > 0 => Event::Read {
                    dir,
                    n: rng.gen_range(1..=r.read_budget(dir)),
                },
                1 if r.buffered(dir) > 0 => Event::Written {
                    dir,
                    n: rng.gen_range(1..=r.buffered(dir)),
                },
                2 if !eof[i] => Event::Eof { dir },
                _ => continue,
            };
            match ev {
                Event::Read { n, .. } => read[i] += n as u64,
                Event::Eof { .. } => eof[i] = true,
                _ => {}
            }
            for a in r.on(ev, t0).iter() {
                if let Action::ShutdownWrite(s) = a {
                    shut[(s == Side::Accepted) as usize] += 1;
                }
                assert!(!matches!(a, Action::Abort(_)), "no abort without a failure");
            }
            for d in Dir::BOTH {
                assert!(r.buffered(d) <= CAP);
                assert_eq!(r.bytes(d) + r.buffered(d) as u64, read[d as usize]);
            }
        }
        // Drain what is left and close both ways.
        for dir in Dir::BOTH {
            let n = r.buffered(dir);
            if n > 0 {
                for a in r.on(Event::Written { dir, n }, t0).iter() {
                    if let Action::ShutdownWrite(s) = a {
                        shut[(s == Side::Accepted) as usize] += 1;
                    }
                }
            }
            if !eof[dir as usize] {
                for a in r.on(Event::Eof { dir }, t0).iter() {
                    if let Action::ShutdownWrite(s) = a {
                        shut[(s == Side::Accepted) as usize] += 1;
                    }
                }
            }
        }
        assert_eq!(shut, [1, 1], "each EOF forwarded exactly once");
        assert_eq!(r.state(), FlowState::Closed);
    }
}

#[test]
fn a_narrowed_direction_reads_less_and_drains_what_it_holds() {
    let t0 = Instant::now();
    let mut r = connected(t0);
    r.on(
        Event::Read {
            dir: Dir::Down,
            n: 800,
        },
        t0,
    );
    r.set_cap(Dir::Down, 300);
    assert_eq!(
        r.read_budget(Dir::Down),
        0,
        "above the new size: no reading"
    );
    assert_eq!(
        r.read_budget(Dir::Up),
        CAP,
        "the other direction keeps its size"
    );
    r.on(
        Event::Written {
            dir: Dir::Down,
            n: 600,
        },
        t0,
    );
    assert_eq!(r.buffered(Dir::Down), 200);
    assert_eq!(r.read_budget(Dir::Down), 100);
    r.set_cap(Dir::Down, 0);
    assert_eq!(r.read_budget(Dir::Down), 0);
    r.on(
        Event::Written {
            dir: Dir::Down,
            n: 200,
        },
        t0,
    );
    assert_eq!(r.read_budget(Dir::Down), 1, "at least one byte");
}
