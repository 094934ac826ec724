//! Live reconfiguration (root, netns, no emulation): four boxes (client daemons in the box
//! namespace, each with its own tunnel address) behind one POP that splits their TCP. With
//! transfers running, the POP's file is replaced and reloaded: an invalid file and a change
//! that takes a restart are refused with their reasons and change nothing; then box B is
//! removed (its split flow is reset, its tunnel stops), box C gets a second address in its
//! AllowedIPs (its traffic from it passes cryptokey routing and its flows from both addresses
//! count against one share: `MaxFlowsPerClient`, lowered by the same reload), box D is added
//! and starts working, and box A, untouched, keeps its session and its split flows byte-exact.
//! A SIGHUP reload then changes `[PEP] MaxFlows` for new flows; the box reloads its own file.

#[path = "netns_ops_common.rs"]
mod ops;

use std::net::SocketAddr;
use std::time::Duration;

use ops::*;
use serde_json::Value;
use starpep_tests::{require_root, Node, TopoSpec, Topology};

const SRV_PORT_A_UP: u16 = 7001;
const SRV_PORT_A_DOWN: u16 = 7002;
const SRV_PORT_B: u16 = 7003;

fn pop_conf(private: &str, peers: &[String], pep_extra: &str) -> String {
    format!(
        "[Interface]\nPrivateKey = {private}\nAddress = 10.8.0.1/24\nListenPort = 51820\n{}\n\
         [PEP]\nMode = split\nLinkRate = 10mbit\nLinkRtt = 600ms\nFlowBuffer = 256K\n{pep_extra}\n",
        peers.join("")
    )
}

fn srv(port: u16) -> SocketAddr {
    SocketAddr::from(([10, 2, 0, 2], port))
}

#[test]
fn a_reload_adds_removes_and_changes_peers_while_untouched_flows_stay_byte_exact() {
    if !require_root() {
        return;
    }
    let topo = Topology::build(TopoSpec::direct()).expect("topology");
    let pop_keys = BoxSpec::new(&[], 0).keys;
    let a = BoxSpec::new(&["10.8.0.2"], 102);
    let b = BoxSpec::new(&["10.8.0.3"], 103);
    let c = BoxSpec::new(&["10.8.0.4", "10.8.1.4"], 104);
    let d = BoxSpec::new(&["10.8.0.5"], 105);
    let p = topo.prefix().trim_start_matches("sp").to_string();
    let name = |t: &str| format!("{t}{p}").chars().take(15).collect::<String>();
    let pop_name = name("p");
    let before = [
        pop_peer(&a, "10.8.0.2/32"),
        pop_peer(&b, "10.8.0.3/32, 10.8.2.3/32"),
        pop_peer(&c, "10.8.0.4/32"),
    ];
    let pop_path = write_conf(&topo, &pop_name, &pop_conf(&pop_keys.private, &before, ""));
    let mut pop = topo
        .spawn(
            Node::Pop,
            "pop",
            &[
                starpep_tests::bin_path("starpep-pop").as_os_str(),
                "run".as_ref(),
                "-c".as_ref(),
                pop_path.as_os_str(),
                "-v".as_ref(),
            ],
        )
        .expect("spawn POP");
    assert!(
        wait_for(Duration::from_secs(15), || run_bin(
            &topo,
            Node::Pop,
            "starpep-pop",
            &["show", &pop_name, "--json"]
        )
        .1
        .contains("\"pep\"")),
        "POP not up:\n{}",
        pop.log()
    );
    let mut boxes = Vec::new();
    for (t, bx) in [("a", &a), ("b", &b), ("c", &c), ("d", &d)] {
        let path = write_conf(&topo, &name(t), &bx.conf(&pop_keys.public));
        let proc = topo
            .spawn(
                Node::Box,
                &format!("box-{t}"),
                &[
                    starpep_tests::bin_path("starpep-client").as_os_str(),
                    "run".as_ref(),
                    "-c".as_ref(),
                    path.as_os_str(),
                ],
            )
            .expect("spawn box");
        boxes.push((name(t), path, proc));
    }
    for src in ["10.8.0.2", "10.8.0.3", "10.8.0.4"] {
        assert!(
            wait_for(Duration::from_secs(15), || ping_from(
                &topo, src, "10.2.0.2", 1
            )),
            "{src} cannot reach srv before the reload:\n{}",
            pop.log()
        );
    }
    assert!(
        !ping_from(&topo, "10.8.0.5", "10.2.0.2", 1),
        "D works before it is added"
    );
    assert!(
        !ping_from(&topo, "10.8.1.4", "10.2.0.2", 1),
        "C's second address passes"
    );
    let s0 = show(&topo, &pop_name);
    assert!(peer(&s0, &c.keys.public).unwrap()["dropped_source_not_allowed"].as_u64() > Some(0));
    let routes = topo
        .run_ok(Node::Pop, &["ip", "-4", "route", "show", "dev", &pop_name])
        .unwrap();
    assert!(routes.contains("10.8.2.3"), "B's route: {routes}");

    // Transfers across the reloads: A up and down (~8 s each), B up.
    let (chunk, pause) = (32 * 1024, Duration::from_millis(10));
    let a_up = Paced::start(
        &topo,
        a.addrs[0],
        srv(SRV_PORT_A_UP),
        800 * chunk,
        chunk,
        pause,
        false,
        1,
    );
    let a_down = Paced::start(
        &topo,
        a.addrs[0],
        srv(SRV_PORT_A_DOWN),
        800 * chunk,
        chunk,
        pause,
        true,
        2,
    );
    let b_up = Paced::start(
        &topo,
        b.addrs[0],
        srv(SRV_PORT_B),
        800 * chunk,
        chunk,
        pause,
        false,
        3,
    );
    assert!(
        wait_for(Duration::from_secs(5), || flows_from(
            &show(&topo, &pop_name),
            "10.8.0.2"
        )
        .len()
            == 2
            && flows_from(&show(&topo, &pop_name), "10.8.0.3").len() == 1),
        "flows not split: {}",
        show(&topo, &pop_name)
    );
    let s1 = show(&topo, &pop_name);
    let a_flows: Vec<Value> = flows_from(&s1, "10.8.0.2")
        .iter()
        .map(|f| f["id"].clone())
        .collect();
    let a_handshakes = peer(&s1, &a.keys.public).unwrap()["handshakes"].clone();

    // An invalid file: refused with its file:line error, nothing changes.
    let mut bad = before.to_vec();
    bad.push(pop_peer(&d, "10.8.0.300/32"));
    let bad_text = pop_conf(&pop_keys.private, &bad, "");
    let bad_line = bad_text
        .lines()
        .position(|l| l.contains("10.8.0.300"))
        .unwrap()
        + 1;
    starpep_tests::write_private(&pop_path, &bad_text);
    let (ok, out, err) = run_bin(&topo, Node::Pop, "starpep-pop", &["reload", &pop_name]);
    assert!(!ok, "an invalid file was accepted: {out}");
    assert!(
        err.contains(&format!("{}:{bad_line}:", pop_path.display())),
        "{err}"
    );
    assert!(err.contains("nothing changed"), "{err}");
    // A change that takes a restart: refused by name.
    let restart = pop_conf(&pop_keys.private, &before, "")
        .replace("ListenPort = 51820", "ListenPort = 51821");
    starpep_tests::write_private(&pop_path, &restart);
    let (ok, _, err) = run_bin(&topo, Node::Pop, "starpep-pop", &["reload", &pop_name]);
    assert!(
        !ok && err.contains("ListenPort") && err.contains("restart"),
        "{err}"
    );
    let s2 = show(&topo, &pop_name);
    assert_eq!(s2["peers"].as_array().unwrap().len(), 3, "{s2}");
    assert_eq!(flows_from(&s2, "10.8.0.3").len(), 1, "B's flow went: {s2}");

    // The reload: B removed, C's second address, D added, MaxFlowsPerClient 2 for new flows.
    let after = [
        pop_peer(&d, "10.8.0.5/32"),
        pop_peer(&c, "10.8.0.4/32, 10.8.1.4/32"),
        pop_peer(&a, "10.8.0.2/32"),
    ];
    starpep_tests::write_private(
        &pop_path,
        &pop_conf(&pop_keys.private, &after, "MaxFlowsPerClient = 2"),
    );
    let (ok, out, err) = run_bin(&topo, Node::Pop, "starpep-pop", &["reload", &pop_name]);
    assert!(ok, "reload failed: {err}\n{}", pop.log());
    assert!(
        out.contains("1 peer(s) added, 1 removed, 1 changed, 1 unchanged; 1 split flow(s) reset"),
        "{out}"
    );

    let s3 = show(&topo, &pop_name);
    assert_eq!(s3["pep"]["revoked"], 1, "{s3}");
    assert_eq!(s3["pep"]["max_flows_per_peer"], 2, "{s3}");
    assert!(peer(&s3, &b.keys.public).is_none());
    let routes = topo
        .run_ok(Node::Pop, &["ip", "-4", "route", "show", "dev", &pop_name])
        .unwrap();
    assert!(
        !routes.contains("10.8.2.3") && routes.contains("10.8.1.4"),
        "routes: {routes}"
    );
    assert!(
        !ping_from(&topo, "10.8.0.3", "10.2.0.2", 2),
        "B still works"
    );
    assert!(
        wait_for(Duration::from_secs(10), || ping_from(
            &topo, "10.8.0.5", "10.2.0.2", 1
        )),
        "D does not work"
    );
    assert!(
        ping_from(&topo, "10.8.1.4", "10.2.0.2", 2),
        "C's second address is not carried"
    );

    // C's flows from both addresses count against its one share of 2: the third passes unsplit.
    let c1 = Paced::start(
        &topo,
        c.addrs[0],
        srv(7011),
        200 * chunk,
        chunk,
        pause,
        false,
        11,
    );
    let c2 = Paced::start(
        &topo,
        c.addrs[1],
        srv(7012),
        200 * chunk,
        chunk,
        pause,
        false,
        12,
    );
    std::thread::sleep(Duration::from_millis(500));
    let c3 = Paced::start(
        &topo,
        c.addrs[0],
        srv(7013),
        100 * chunk,
        chunk,
        pause,
        false,
        13,
    );
    let d1 = Paced::start(
        &topo,
        d.addrs[0],
        srv(7014),
        100 * chunk,
        chunk,
        pause,
        false,
        14,
    );
    std::thread::sleep(Duration::from_millis(300));
    let s4 = show(&topo, &pop_name);
    let c_split = flows_from(&s4, "10.8.0.4").len() + flows_from(&s4, "10.8.1.4").len();
    assert_eq!(c_split, 2, "C's share: {s4}");
    assert!(s4["pep"]["capped_clients"].as_u64() >= Some(1), "{s4}");
    assert_eq!(
        flows_from(&s4, "10.8.0.5").len(),
        1,
        "D's flow is not split: {s4}"
    );

    // SIGHUP: [PEP] MaxFlows for new flows.
    starpep_tests::write_private(
        &pop_path,
        &pop_conf(
            &pop_keys.private,
            &after,
            "MaxFlowsPerClient = 2\nMaxFlows = 100",
        ),
    );
    pop.signal(nix::sys::signal::Signal::SIGHUP);
    assert!(
        wait_for(Duration::from_secs(5), || show(&topo, &pop_name)["pep"]
            ["max_flows"]
            == 100),
        "SIGHUP reload: {}",
        pop.log()
    );
    // The box reloads its own (unchanged) file.
    let (ok, out, err) = run_bin(&topo, Node::Box, "starpep-client", &["reload", &boxes[0].0]);
    assert!(
        ok && out.contains("0 peer(s) added, 0 removed, 0 changed, 1 unchanged"),
        "{out}{err}"
    );

    for (what, t) in [("C 1", c1), ("C 2", c2), ("C 3 (unsplit)", c3), ("D", d1)] {
        let r = t.finish();
        assert!(r.intact(), "{what}: {r:?}");
    }
    let (up, down) = (a_up.finish(), a_down.finish());
    assert!(up.intact(), "A's upload through the reloads: {up:?}");
    assert!(down.intact(), "A's download through the reloads: {down:?}");
    let rb = b_up.finish();
    assert!(!rb.intact(), "B's flow survived its peer's removal: {rb:?}");
    let s5 = show(&topo, &pop_name);
    assert_eq!(
        peer(&s5, &a.keys.public).unwrap()["handshakes"],
        a_handshakes,
        "A re-handshook"
    );
    // Every split flow but B's closed cleanly: A's two, C's two split ones and D's.
    let pep = &s5["pep"];
    assert_eq!(
        (pep["accepted"].as_u64(), pep["closed"].as_u64()),
        (Some(6), Some(5)),
        "{s5}"
    );
    // A's flows were the same split flows from before the reloads to their end.
    let s_mid = &s3;
    let mid: Vec<Value> = flows_from(s_mid, "10.8.0.2")
        .iter()
        .map(|f| f["id"].clone())
        .collect();
    assert_eq!(mid, a_flows, "A's flows were replaced");

    for (_, _, mut proc) in boxes {
        let st = proc.stop();
        assert!(
            st.is_some_and(|s| s.success()),
            "box: {st:?}\n{}",
            proc.log()
        );
    }
    let st = pop.stop();
    let log = pop.log();
    assert!(st.is_some_and(|s| s.success()), "POP: {st:?}\n{log}");
    assert!(!log.contains("panicked"), "{log}");
    assert!(log.contains("reloaded (SIGHUP)"), "{log}");
}
