//! Unit tests of `LinkModel` on a virtual clock: queue, order, outages, loss, seeds.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::*;

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

fn us(v: u64) -> Duration {
    Duration::from_micros(v)
}

fn constant(rate: u64, delay: Duration, limit: QueueLimit, loss: LossSpec) -> DirectionSpec {
    DirectionSpec {
        capacity: CapacitySpec::Rate(rate),
        delay: DelaySpec::Constant {
            delay,
            jitter: None,
        },
        limit,
        loss,
    }
}

/// Drains everything due by `until`, stepping by the model's own wake-ups.
fn drain<P>(m: &mut LinkModel<P>, until: Duration) -> Vec<(Duration, P)> {
    let mut out = Vec::new();
    while let Some(t) = m.next_wakeup() {
        if t > until {
            break;
        }
        while let Some(p) = m.dequeue(t) {
            out.push((t, p));
        }
    }
    out
}

#[test]
fn constant_link_serialises_then_delays() {
    let spec = constant(
        10_000_000,
        ms(250),
        QueueLimit::Packets(500),
        LossSpec::None,
    );
    let mut m = LinkModel::new(&spec, None, 1);
    for i in 0..3 {
        assert_eq!(m.enqueue(Duration::ZERO, 1500, i), Verdict::Queued);
    }
    assert_eq!(m.queue_len(), (3, 4500));
    assert_eq!(m.next_wakeup(), Some(ms(250) + us(1200)));
    assert_eq!(m.dequeue(ms(251)), None);
    let got = drain(&mut m, ms(1000));
    let times: Vec<_> = got.iter().map(|g| g.0).collect();
    assert_eq!(times, [us(251_200), us(252_400), us(253_600)]);
    assert_eq!(got.iter().map(|g| g.1).collect::<Vec<_>>(), [0, 1, 2]);
    let s = m.stats();
    assert_eq!(
        (s.packets_in, s.delivered_packets, s.delivered_bytes),
        (3, 3, 4500)
    );
    assert_eq!(
        (s.queue_pkts, s.max_queue_pkts, s.in_flight_pkts),
        (0, 3, 0)
    );
    assert_eq!(m.next_wakeup(), None);
    assert_eq!(m.base_delay_at(ms(5)), ms(250));
}

#[test]
fn order_kept_when_the_delay_trace_falls() {
    // 60 ms during [0, 10) ms, then 10 ms: later frames must not overtake.
    let text = format!("60\n{}", "10\n".repeat(99));
    let tr = DelayTrace::parse(&text, Path::new("d")).unwrap();
    let spec = DirectionSpec {
        capacity: CapacitySpec::Rate(12_000_000), // 1 ms per 1500 bytes
        delay: DelaySpec::Trace(Arc::new(tr)),
        limit: QueueLimit::Packets(500),
        loss: LossSpec::None,
    };
    let mut m = LinkModel::new(&spec, None, 1);
    for i in 0..20u32 {
        assert!(m.enqueue(Duration::ZERO, 1500, i).is_queued());
    }
    assert!(m.enqueue(ms(60), 1500, 20).is_queued());
    let got = drain(&mut m, ms(1000));
    assert_eq!(got.len(), 21);
    assert!(got.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
    // Frame i leaves the server at i+1 ms. Frames 0..=8 leave in slot 0 (60 ms): released at
    // 61..=69 ms. Frames 9..=19 (10 ms delay) would be due at 20..=30 ms: held back to 69 ms.
    assert_eq!(got[0].0, ms(61));
    assert_eq!(got[8].0, ms(69));
    assert!(got[9..=19].iter().all(|g| g.0 == ms(69)), "{got:?}");
    // Frame 20 arrives at 60 ms on an idle link: 61 + 10 ms.
    assert_eq!(got[20].0, ms(71));
    assert_eq!(m.base_delay_at(ms(5)), ms(60));
    assert_eq!(m.base_delay_at(ms(15)), ms(10));
}

#[test]
fn drop_tail_in_packets_and_bytes() {
    let spec = constant(1_000_000, ms(10), QueueLimit::Packets(5), LossSpec::None);
    let mut m = LinkModel::new(&spec, None, 1);
    let v: Vec<_> = (0..8).map(|i| m.enqueue(Duration::ZERO, 1000, i)).collect();
    assert_eq!(v.iter().filter(|x| x.is_queued()).count(), 5);
    assert_eq!(v[5..], [Verdict::DroppedQueue; 3]);
    assert_eq!(m.stats().dropped_queue, 3);
    // 1000 bytes at 1 Mbit/s = 8 ms: at 8 ms the first has left the queue, one more fits.
    assert!(m.enqueue(ms(8), 1000, 8).is_queued());
    assert_eq!(m.enqueue(ms(8), 1000, 9), Verdict::DroppedQueue);

    let spec = constant(1_000_000, ms(10), QueueLimit::Bytes(3000), LossSpec::None);
    let mut m = LinkModel::new(&spec, None, 1);
    assert!(m.enqueue(Duration::ZERO, 1500, 0).is_queued());
    assert!(m.enqueue(Duration::ZERO, 1000, 1).is_queued());
    assert_eq!(m.enqueue(Duration::ZERO, 1000, 2), Verdict::DroppedQueue);
    assert!(m.enqueue(Duration::ZERO, 500, 3).is_queued());
    assert_eq!(m.queue_len(), (3, 3000));
    assert_eq!(m.stats().max_queue_bytes, 3000);
}

#[test]
fn outage_serves_nothing_inside_and_resumes_after() {
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let tr = RateTrace::parse(&text, Path::new("bw")).unwrap();
    let spec = DirectionSpec {
        capacity: CapacitySpec::Trace(Arc::new(tr)),
        delay: DelaySpec::Constant {
            delay: ms(5),
            jitter: None,
        },
        limit: QueueLimit::Packets(1000),
        loss: LossSpec::None,
    };
    let sched = ReconfigSchedule::new(ms(100), ms(1000), ms(50));
    let mut m = LinkModel::new(&spec, Some(&sched), 1);
    // A backlog at 90 ms: 10 frames before the outage, the rest from 150 ms.
    for i in 0..30u32 {
        assert!(m.enqueue(ms(90), 1500, i).is_queued());
    }
    let got = drain(&mut m, ms(2000));
    let departs: Vec<_> = got.iter().map(|g| g.0 - ms(5)).collect();
    assert!(departs.iter().all(|d| *d < ms(100) || *d >= ms(150)));
    assert_eq!(departs[9], ms(99));
    assert_eq!(departs[10], ms(150));
    assert_eq!(departs[29], ms(169));
    // Outage drop: arrivals inside the window are refused and counted.
    let mut s2 = sched;
    s2.outage_drop = true;
    let mut m = LinkModel::new(&spec, Some(&s2), 1);
    assert!(m.enqueue(ms(99), 100, 0).is_queued());
    assert_eq!(m.enqueue(ms(100), 100, 1), Verdict::DroppedOutage);
    assert_eq!(m.enqueue(ms(149), 100, 2), Verdict::DroppedOutage);
    assert!(m.enqueue(ms(150), 100, 3).is_queued());
    assert_eq!(m.stats().dropped_outage, 2);
    assert!((m.capacity_bps_at(ms(0), ms(1000)) - 949.0 * 12_000.0).abs() < 1.0);
}

fn loss_pattern(spec: &DirectionSpec, seed: u64, n: u64) -> Vec<bool> {
    let mut m = LinkModel::new(spec, None, seed);
    (0..n)
        .map(|i| {
            let v = m.enqueue(us(i * 100), 100, ());
            drain(&mut m, us(i * 100));
            v == Verdict::DroppedLoss
        })
        .collect()
}

#[test]
fn bernoulli_loss_rate_and_seeds() {
    let spec = constant(
        1_000_000_000,
        ms(1),
        QueueLimit::Packets(500),
        LossSpec::Bernoulli(0.01),
    );
    let n = 100_000;
    let a = loss_pattern(&spec, 42, n);
    let lost = a.iter().filter(|&&x| x).count() as f64;
    let half = 1.96 * (0.01f64 * 0.99 / n as f64).sqrt();
    assert!((lost / n as f64 - 0.01).abs() <= half, "lost {lost}");
    assert_eq!(a, loss_pattern(&spec, 42, n));
    assert_ne!(a, loss_pattern(&spec, 43, n));
    // The two directions of a profile get different streams from one run seed.
    assert_ne!(Direction::Down.seed(42), Direction::Up.seed(42));
}

#[test]
fn gilbert_elliott_through_the_model() {
    let ge = LossSpec::GilbertElliott {
        p: 0.005,
        r: 0.2,
        h: 0.3,
        k: 1.0,
    };
    let spec = constant(1_000_000_000, ms(1), QueueLimit::Packets(500), ge);
    let n = 200_000;
    let a = loss_pattern(&spec, 9, n);
    let rate = a.iter().filter(|&&x| x).count() as f64 / n as f64;
    let theory = ge.mean_loss();
    assert!((rate - theory).abs() < 0.1 * theory, "{rate} vs {theory}");
}
