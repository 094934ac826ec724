//! `run`: bring the interface up in a safe order, run until SIGINT/SIGTERM (SIGHUP reloads the
//! file, [`super::reload`]), tear it all down.
//!
//! Order: refuse a config group/others can access ([`check_perms`]), parse and validate, resolve
//! endpoints, bind the UDP, control and metrics sockets (nothing in the system changes until all
//! of that worked), then what a killed instance left (its undo records in `/run/starpep`),
//! PreUp, TUN, addresses/MTU/routes/rules, PostUp. A failure after that point undoes what was
//! done. Shutdown: PreDown, stop the data path, close the TUN (its routes go with it), remove
//! the rules, PostDown.
//!
//! The PEP (`[PEP]` splits) starts once the interface is up (after PostUp, data path running)
//! and is stopped first on shutdown, while the data path still carries what it sends last (the
//! resets of its flows); the control thread answers once both are up. With `Tunnel = none` the
//! PEP runs alone (no TUN, no UDP socket).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::config;
use crate::io::control::ControlServer;
use crate::io::http::MetricsServer;
use crate::io::{cmd, netconf, IoError, Tun, UdpGroup};
use crate::proxy::PepRunner;
use crate::tunnel::{Engine, InterfaceInfo, MIN_DST};

use super::control::{self, Answers};
use super::datapath::{self, IoCounters, Shared};
use super::pep;
use super::plan::{plan, Plan};
use super::reload::{reload_logged, Reloader, SharedReloader};
use super::{DaemonError, Role};

/// Timer period of every peer (boringtun wants 100–250 ms).
const TICK: Duration = Duration::from_millis(100);
/// How often the `Tunnel = none` daemon checks its stop flag.
const POLL: Duration = Duration::from_millis(100);
/// At shutdown, how long the data path keeps running after the PEP stopped: the resets of its
/// flows are in the TUN's queue and go out within microseconds.
const FLUSH: Duration = Duration::from_millis(100);

/// Loads and validates `path` for `role` without touching the system (`check`, and the first
/// step of `run`).
pub fn validate(role: Role, path: &Path) -> Result<Plan, DaemonError> {
    let iface = config::interface_name(path).map_err(|e| DaemonError::Config(e.to_string()))?;
    let cfg = config::load(path).map_err(|e| DaemonError::Config(e.to_string()))?;
    if !cfg.interface.dns.is_empty() {
        tracing::warn!("DNS = is not applied by the daemon (configure the resolver yourself)");
    }
    plan(role, &iface, &cfg, |e| e.resolve()).map_err(|v| DaemonError::Config(v.join("\n")))
}

/// Refuses a config file that group/others can access (it holds the private key). A file that
/// cannot be stat'ed is left to [`validate`]'s read to report.
pub fn check_perms(path: &Path) -> Result<(), DaemonError> {
    use std::os::unix::fs::MetadataExt;
    match std::fs::metadata(path) {
        Ok(md) => Ok(config::check_private(path, md.mode())?),
        Err(_) => Ok(()),
    }
}

/// Runs the daemon for the config at `path` until SIGINT or SIGTERM: the tunnel, and the PEP on
/// top of it when `[PEP]` splits (or the PEP alone with `Tunnel = none`). SIGHUP reloads the
/// file (as the `reload` command does).
pub fn run(role: Role, path: &Path) -> Result<(), DaemonError> {
    check_perms(path)?;
    // `term`: a signal asked to shut down; `stop`: the data path and control threads stop
    // (later: the PEP stops first, its last packets still carried).
    let term = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while shutting down exits at once (status 1).
        signal_hook::flag::register_conditional_shutdown(sig, 1, term.clone())
            .and_then(|_| signal_hook::flag::register(sig, term.clone()))
            .map_err(|e| IoError::sys("install signal handler", e))?;
    }
    let hup = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, hup.clone())
        .map_err(|e| IoError::sys("install SIGHUP handler", e))?;
    let plan = validate(role, path)?;
    if pep::without_tunnel(&plan) {
        return run_without_tunnel(role, path, &plan, &term, &hup);
    }
    let (workers, bad_env) = datapath::workers();
    if let Some(e) = bad_env {
        tracing::warn!("{e}");
    }
    let udp = Arc::new(UdpGroup::bind(plan.listen_port, plan.socket_mark, workers)?);
    let control = ControlServer::bind(&plan.iface)?;
    let metrics = plan.metrics_listen.map(MetricsServer::bind).transpose()?;
    let engine = Arc::new(Engine::new(*plan.private_key, plan.peers.clone())?);
    // The interface is ours now (the control socket): undo what a killed instance left, the
    // PEP's rules before the tunnel's own record is replayed and its rules are added.
    pep::undo_stale(&plan.iface);
    let info = InterfaceInfo {
        interface: plan.iface.clone(),
        listen_port: udp.port(),
        fwmark: plan.socket_mark,
    };

    for h in &plan.hooks.pre_up {
        cmd::hook(h, &plan.iface).map_err(|e| DaemonError::Hook("PreUp", e))?;
    }
    let tun = Arc::new(Tun::create(&plan.iface, workers)?);
    // From here on, dropping `tun` removes the link and its routes, dropping `applied` the rules.
    let applied = netconf::apply(&plan.net)?;
    for h in &plan.hooks.post_up {
        cmd::hook(h, &plan.iface).map_err(|e| DaemonError::Hook("PostUp", e))?;
    }
    tracing::info!(
        iface = %plan.iface,
        port = udp.port(),
        peers = plan.peers.len(),
        gro = udp.gro_enabled(),
        workers,
        udp_sockets = udp.len(),
        "{} up",
        role.name()
    );

    let shared = Shared {
        engine: engine.clone(),
        tun: tun.clone(),
        udp: udp.clone(),
        stop: stop.clone(),
        counters: Arc::new(IoCounters::default()),
        mtu: usize::from(plan.net.mtu),
    };
    let mut threads = datapath::spawn(&shared).map_err(|e| IoError::sys("spawn data path", e))?;
    // The PEP on top of the running tunnel; a failure brings the interface down again.
    let runner = match pep::start(role, &plan, true, engine.slot_allowed_ips()) {
        Ok(r) => r,
        Err(e) => {
            stop.store(true, Relaxed);
            for t in threads {
                let _ = t.join();
            }
            return Err(e);
        }
    };
    let monitor = runner.as_ref().map(PepRunner::monitor);
    let reloader: SharedReloader = Arc::new(Mutex::new(Reloader::new(
        role,
        path.to_path_buf(),
        plan.clone(),
        engine.clone(),
        Some(applied),
        monitor.clone(),
    )));
    let answers = Answers {
        info,
        engine: engine.clone(),
        tunnel: true,
        pep: monitor,
        reloader: reloader.clone(),
    };
    match control::spawn(control, metrics, answers, &stop) {
        Ok(t) => threads.extend(t),
        Err(e) => {
            stop.store(true, Relaxed);
            drop(runner);
            for t in threads {
                let _ = t.join();
            }
            return Err(e.into());
        }
    }

    timer_loop(&shared, &term, &hup, &reloader);

    tracing::info!(iface = %plan.iface, "shutting down");
    for h in &plan.hooks.pre_down {
        if let Err(e) = cmd::hook(h, &plan.iface) {
            tracing::warn!("PreDown: {e}");
        }
    }
    // The PEP resets its flows: the resets toward the peer still go through the tunnel (the
    // data path and the timers run until they are out).
    let no_hup = AtomicBool::new(false);
    std::thread::scope(|sc| {
        sc.spawn(|| timer_loop(&shared, &stop, &no_hup, &reloader));
        if let Some(r) = runner {
            r.stop();
        }
        std::thread::sleep(FLUSH);
        stop.store(true, Relaxed);
    });
    for t in threads {
        let _ = t.join();
    }
    let applied = reloader
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take_net();
    drop(shared);
    drop(tun); // last reference to its queues: the link and its routes disappear
    drop(applied); // policy rules
    for h in &plan.hooks.post_down {
        if let Err(e) = cmd::hook(h, &plan.iface) {
            tracing::warn!("PostDown: {e}");
        }
    }
    Ok(())
}

/// `run` with `Tunnel = none`: no TUN and no UDP socket; the PEP splits flows routed across the
/// satellite link in clear. Runs until `stop` (SIGINT/SIGTERM), then removes everything.
fn run_without_tunnel(
    role: Role,
    path: &Path,
    plan: &Plan,
    stop: &Arc<AtomicBool>,
    hup: &AtomicBool,
) -> Result<(), DaemonError> {
    let control = ControlServer::bind(&plan.iface)?;
    let metrics = plan.metrics_listen.map(MetricsServer::bind).transpose()?;
    // The engine only describes the interface and its peers for `show` (no handshakes here).
    let engine = Arc::new(Engine::new(*plan.private_key, plan.peers.clone())?);
    let runner = pep::start(role, plan, false, engine.slot_allowed_ips())?
        .expect("checked by without_tunnel");
    tracing::info!(iface = %plan.iface, "{} PEP up without tunnel", role.name());
    let reloader: SharedReloader = Arc::new(Mutex::new(Reloader::new(
        role,
        path.to_path_buf(),
        plan.clone(),
        engine.clone(),
        None,
        Some(runner.monitor()),
    )));
    let answers = Answers {
        info: InterfaceInfo {
            interface: plan.iface.clone(),
            listen_port: 0,
            fwmark: None,
        },
        engine,
        tunnel: false,
        pep: Some(runner.monitor()),
        reloader: reloader.clone(),
    };
    let threads = control::spawn(control, metrics, answers, stop)?;
    while !stop.load(Relaxed) {
        if hup.swap(false, Relaxed) {
            let _ = reload_logged(&reloader, "SIGHUP");
        }
        std::thread::sleep(POLL);
    }
    tracing::info!(iface = %plan.iface, "shutting down");
    runner.stop();
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

/// Drives every peer's timers and the rate limiter until `until` (or the data path stops);
/// reloads on SIGHUP.
fn timer_loop(s: &Shared, until: &AtomicBool, hup: &AtomicBool, reloader: &SharedReloader) {
    let mut buf = vec![0u8; MIN_DST.max(256)];
    while !until.load(Relaxed) && !s.stop.load(Relaxed) {
        if hup.swap(false, Relaxed) {
            let _ = reload_logged(reloader, "SIGHUP");
        }
        s.engine.reset_rate_limiter();
        for i in 0..s.engine.slots() {
            if let Some((to, d)) = s.engine.tick(i, &mut buf) {
                datapath::send_one(s, s.udp.socket(0), d, to);
            }
        }
        std::thread::sleep(TICK);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn run_refuses_a_config_group_or_others_can_read_and_names_the_fix() {
        let dir = std::env::temp_dir().join(format!("starpep-perms-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("wg7.conf");
        std::fs::write(&f, "[Interface]\n").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        let e = check_perms(&f).unwrap_err().to_string();
        assert!(e.starts_with("refusing to run: "), "{e}");
        assert!(e.contains(&format!("{}: mode 0640", f.display())), "{e}");
        assert!(e.contains(&format!("chmod 600 {}", f.display())), "{e}");
        // `run` stops there: the perms error comes before the config's own errors.
        let e = run(Role::Pop, &f).unwrap_err().to_string();
        assert!(e.contains("mode 0640"), "{e}");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(check_perms(&f).is_ok());
        // A missing file is left to the config read to report.
        assert!(check_perms(&dir.join("missing.conf")).is_ok());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
