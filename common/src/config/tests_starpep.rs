//! Unit tests of the StarPEP keys of `[PEP]`: defaults, every key, `Mode` defaulting to
//! starpep, and each error with its line and key.

use std::time::Duration;

use super::tests::ok;
use super::tests_errors::one;
use super::*;

const K1: &str = "KLAp2JYd9y2hS/9Nshf5HCHbC7yFnLRaMOqg8t9DvWQ=";

fn pep_text(body: &str) -> String {
    format!("[Interface]\nPrivateKey = {K1}\n[PEP]\n{body}")
}

fn starpep(body: &str) -> Starpep {
    ok(&pep_text(body)).pep.expect("a [PEP] section").starpep
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

#[test]
fn a_pep_section_defaults_to_starpep_and_no_section_to_plain_wireguard() {
    assert_eq!(ok(&pep_text("")).pep.unwrap().mode, PepMode::Starpep);
    assert!(ok(&format!("[Interface]\nPrivateKey = {K1}\n"))
        .pep
        .is_none());
    for (v, m) in [
        ("split", PepMode::Split),
        ("OFF", PepMode::Off),
        ("StarPEP", PepMode::Starpep),
    ] {
        let p = ok(&pep_text(&format!("Mode = {v}\n"))).pep.unwrap();
        assert_eq!(p.mode, m, "{v}");
    }
}

#[test]
fn documented_defaults() {
    let s = starpep("");
    assert_eq!(s.reconfig, Reconfig::Starlink);
    assert_eq!(
        s.schedule(),
        Some((Duration::from_secs(15), Duration::from_secs(12)))
    );
    assert_eq!((s.alpha, s.beta), (0.4, 0.8));
    assert_eq!((s.queue_low, s.queue_high), (ms(2), ms(8)));
    assert_eq!((s.guard, s.probe, s.recover), (ms(100), ms(200), ms(300)));
    assert_eq!(s.probe_window, ProbeWindow::Segments(4));
    assert_eq!(s.probe_window.bytes(1448), 5792);
    assert_eq!(s.window_control, WindowControl::Auto);
    assert_eq!(s.link_queue, ms(15));
    assert_eq!(s.control_log, None);
}

#[test]
fn every_key() {
    let s = starpep(
        "Reconfig = periodic\n\
         ReconfigPeriod = 10s\n\
         ReconfigOffset = 2500ms\n\
         Alpha = 0.3\n\
         Beta = 0.9\n\
         QueueLow = 1ms\n\
         QueueHigh = 20ms\n\
         GuardTime = 50ms\n\
         ProbeTime = 0\n\
         RecoverTime = 1s\n\
         ProbeWindow = 8K\n\
         WindowControl = clamp\n\
         LinkQueue = 0\n\
         ControlLog = /tmp/ctl.jsonl\n",
    );
    assert_eq!(s.schedule(), Some((Duration::from_secs(10), ms(2500))));
    assert_eq!((s.alpha, s.beta), (0.3, 0.9));
    assert_eq!((s.queue_low, s.queue_high), (ms(1), ms(20)));
    assert_eq!((s.guard, s.probe, s.recover), (ms(50), ms(0), ms(1000)));
    assert_eq!(s.probe_window, ProbeWindow::Bytes(8192));
    assert_eq!(s.window_control, WindowControl::Clamp);
    assert_eq!(s.link_queue, Duration::ZERO);
    assert_eq!(
        s.control_log.as_deref(),
        Some(std::path::Path::new("/tmp/ctl.jsonl"))
    );
    assert_eq!(starpep("Reconfig = off\n").schedule(), None);
    assert_eq!(starpep("LinkQueue = 0ms\n").link_queue, Duration::ZERO);
    assert_eq!(starpep("GuardTime = 0s\n").guard, Duration::ZERO);
    assert_eq!(starpep("Alpha = 1\nBeta = 1\n").alpha, 1.0);
    assert_eq!(
        starpep("WindowControl = EBPF\n").window_control,
        WindowControl::Ebpf
    );
    assert_eq!(
        starpep("ProbeWindow = 2\n").probe_window,
        ProbeWindow::Segments(2)
    );
}

#[test]
fn errors_with_line_and_key() {
    let e = |body: &str, key: &str, msg: &str| one(&pep_text(body), 4, key, msg);
    e(
        "Reconfig = oneweb\n",
        "Reconfig",
        "not a schedule (starlink, periodic, off)",
    );
    e("Alpha = 0\n", "Alpha", "out of range (0 < x <= 1)");
    e("Alpha = 1.5\n", "Alpha", "out of range");
    e("Beta = much\n", "Beta", "not a number");
    e("QueueLow = 5\n", "QueueLow", "needs a unit");
    e("QueueHigh = 11s\n", "QueueHigh", "out of range");
    e("ProbeWindow = 0\n", "ProbeWindow", "out of range (1..1000)");
    e(
        "ProbeWindow = 12x\n",
        "ProbeWindow",
        "or a number of segments",
    );
    e(
        "WindowControl = xdp\n",
        "WindowControl",
        "not a window back-end",
    );
    e(
        "ReconfigPeriod = 10s\n",
        "ReconfigPeriod",
        "only used with Reconfig = periodic",
    );
    e("Reconfig = periodic\n", "Reconfig", "needs ReconfigPeriod");
    one(
        &pep_text("QueueLow = 9ms\nQueueHigh = 3ms\n"),
        5,
        "QueueHigh",
        "is below QueueLow",
    );
    one(
        &pep_text("Reconfig = periodic\nReconfigPeriod = 1s\nReconfigOffset = 1s\n"),
        6,
        "ReconfigOffset",
        "is not below ReconfigPeriod",
    );
    one(
        &pep_text("RecoverTime = 10s\nGuardTime = 5s\n"),
        4,
        "RecoverTime",
        "must be shorter than the reconfiguration period (15s)",
    );
}
