//! StarPEP's sharing (root, netns, satlink `leo-10mbit`): four parallel CUBIC downloads of one
//! box share the satellite link, each controlled by its own R_down, with Jain's index ≥ 0.9
//! over their goodputs; every byte arrives.

#[path = "netns_pep_common.rs"]
mod common;
#[path = "netns_starpep_common.rs"]
mod sp;

use common::*;
use sp::*;
use starpep_tests::{addr, require_root};

use starpep_testbed::suite::quality::jain;

#[test]
fn four_downloads_share_the_link_fairly() {
    if !require_root() {
        return;
    }
    let _l = LINK.lock().unwrap_or_else(|e| e.into_inner());
    let b = bed("leo-10mbit", false, &[]);
    let topo = &b.topo;
    let bytes = 3_000_000;
    let goodputs: Vec<f64> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..4u16)
            .map(|i| {
                s.spawn(move || {
                    let dst = sa(&format!("{}:{}", addr::SRV, 5421 + i));
                    let t = transfer_cc(topo, dst, bytes, true, i as u64, Some("cubic"));
                    assert_eq!(t.sent_sha, t.recv_sha, "flow {i} corrupted");
                    bytes as f64 * 8.0 / t.total_time.as_secs_f64() / 1e6
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let j = jain(&goodputs).expect("goodputs");
    eprintln!("goodputs {goodputs:?} Mbit/s, Jain {j:.3}");
    assert!(j >= 0.9, "Jain's index {j:.3} over {goodputs:?}");
    let controlled = records(&b.pop_log)
        .iter()
        .filter(|r| r["w_bytes"].is_u64())
        .map(|r| r["flow"].as_u64().unwrap())
        .collect::<std::collections::BTreeSet<_>>();
    assert_eq!(controlled.len(), 4, "flows controlled: {controlled:?}");
}
