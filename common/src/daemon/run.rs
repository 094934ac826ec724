//! `run`: bring the interface up in a safe order, run until SIGINT/SIGTERM, tear it all down.
//!
//! Order: refuse a config group/others can access ([`check_perms`]), parse and validate, resolve
//! endpoints, bind the UDP and control sockets (nothing in the system changes until all of that
//! worked), then what a killed instance left (its undo records in `/run/starpep`), PreUp, TUN,
//! addresses/MTU/routes/rules, PostUp. A failure after that point undoes what was done. Shutdown: PreDown, stop the data
//! path, close the TUN (its routes go with it), remove the rules, PostDown.
//!
//! What runs on top of the tunnel (the TCP-splitting PEP of a later issue) plugs in through
//! [`run_with`]: an [`Attach`] function is called once the interface is up (after PostUp, data
//! path running) and the [`Attachment`]s it returns are stopped first on shutdown, while the data
//! path still carries what they send last (the PEP's resets of its flows).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config;
use crate::io::control::ControlServer;
use crate::io::{cmd, netconf, IoError, Tun, Udp};
use crate::tunnel::{Engine, InterfaceInfo, MIN_DST};

use super::datapath::{self, IoCounters, Shared};
use super::plan::{plan, Plan};
use super::{DaemonError, Role};

/// Timer period of every peer (boringtun wants 100–250 ms).
const TICK: Duration = Duration::from_millis(100);
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

/// What an [`Attach`] function sees of the interface it runs on.
pub struct UpContext<'a> {
    pub role: Role,
    pub plan: &'a Plan,
    /// The UDP port actually bound.
    pub listen_port: u16,
    pub engine: &'a Arc<Engine>,
    /// Set when the daemon shuts down.
    pub stop: &'a Arc<AtomicBool>,
    /// Extra control-socket requests an attachment answers (e.g. `pep`).
    pub control: &'a ControlExtras,
}

/// Control requests added by attachments: (request line, answer function).
pub type ControlExtras = Arc<Mutex<Vec<(String, Box<dyn Fn() -> String + Send>)>>>;

/// Something running on top of the tunnel; stopped before the tunnel goes down.
pub trait Attachment: Send {
    fn stop(self: Box<Self>);
}

/// Starts what runs on top of the tunnel once it is up. An error brings the interface down
/// again and makes `run` fail.
pub type Attach<'f> = &'f dyn Fn(&UpContext) -> Result<Vec<Box<dyn Attachment>>, DaemonError>;

/// Runs the daemon for the config at `path` until SIGINT or SIGTERM (the tunnel alone).
pub fn run(role: Role, path: &Path) -> Result<(), DaemonError> {
    run_with(role, path, &|_| Ok(Vec::new()))
}

/// [`run`] with `attach` started on top of the running tunnel.
pub fn run_with(role: Role, path: &Path, attach: Attach) -> Result<(), DaemonError> {
    check_perms(path)?;
    // `term`: a signal asked to shut down; `stop`: the data path and control threads stop
    // (later: what runs on top of the tunnel stops first, its last packets still carried).
    let term = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        // A second signal while shutting down exits at once (status 1).
        signal_hook::flag::register_conditional_shutdown(sig, 1, term.clone())
            .and_then(|_| signal_hook::flag::register(sig, term.clone()))
            .map_err(|e| IoError::sys("install signal handler", e))?;
    }
    let plan = validate(role, path)?;
    if crate::proxy::daemon::without_tunnel(&plan) {
        return crate::proxy::daemon::run_without_tunnel(role, &plan, &term);
    }
    let udp = Arc::new(Udp::bind(plan.listen_port, plan.socket_mark)?);
    let control = ControlServer::bind(&plan.iface)?;
    let engine = Arc::new(Engine::new(plan.private_key, plan.peers.clone())?);
    // The interface is ours now (the control socket): undo what a killed instance left, the
    // PEP's rules before the tunnel's own record is replayed and its rules are added.
    crate::proxy::daemon::undo_stale(&plan.iface);
    let info = InterfaceInfo {
        interface: plan.iface.clone(),
        listen_port: udp.port(),
        fwmark: plan.socket_mark,
    };

    for h in &plan.hooks.pre_up {
        cmd::hook(h, &plan.iface).map_err(|e| DaemonError::Hook("PreUp", e))?;
    }
    let tun = Arc::new(Tun::create(&plan.iface)?);
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
    let (e2, stop2) = (engine.clone(), stop.clone());
    let extras: ControlExtras = Arc::default();
    let extras2 = extras.clone();
    threads.push(
        std::thread::Builder::new()
            .name("control".into())
            .spawn(move || {
                control.serve(&stop2, |req| match req {
                    "show" => serde_json::to_string(&e2.snapshot(&info, unix_now()))
                        .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}")),
                    other => {
                        let x = extras2.lock().unwrap_or_else(|e| e.into_inner());
                        match x.iter().find(|(r, _)| r == other) {
                            Some((_, answer)) => answer(),
                            None => format!("{{\"error\":\"unknown request {other:?}\"}}"),
                        }
                    }
                })
            })
            .map_err(|e| IoError::sys("spawn control thread", e))?,
    );

    let attached = attach(&UpContext {
        role,
        plan: &plan,
        listen_port: udp.port(),
        engine: &engine,
        stop: &term,
        control: &extras,
    });
    let attached = match attached {
        Ok(a) => a,
        Err(e) => {
            stop.store(true, Relaxed);
            for t in threads {
                let _ = t.join();
            }
            return Err(e);
        }
    };

    timer_loop(&shared, &term);

    tracing::info!(iface = %plan.iface, "shutting down");
    for h in &plan.hooks.pre_down {
        if let Err(e) = cmd::hook(h, &plan.iface) {
            tracing::warn!("PreDown: {e}");
        }
    }
    // The PEP resets its flows: the resets toward the peer still go through the tunnel (the
    // data path and the timers run until they are out).
    std::thread::scope(|sc| {
        sc.spawn(|| timer_loop(&shared, &stop));
        for a in attached {
            a.stop();
        }
        std::thread::sleep(FLUSH);
        stop.store(true, Relaxed);
    });
    for t in threads {
        let _ = t.join();
    }
    drop(shared);
    drop(tun); // last reference: the link and its routes disappear
    drop(applied); // policy rules
    for h in &plan.hooks.post_down {
        if let Err(e) = cmd::hook(h, &plan.iface) {
            tracing::warn!("PostDown: {e}");
        }
    }
    Ok(())
}

/// Drives every peer's timers and the rate limiter until `until` (or the data path stops).
fn timer_loop(s: &Shared, until: &AtomicBool) {
    let mut buf = vec![0u8; MIN_DST.max(256)];
    while !until.load(Relaxed) && !s.stop.load(Relaxed) {
        s.engine.reset_rate_limiter();
        for i in 0..s.engine.peers().len() {
            if let Some((to, d)) = s.engine.tick(i, &mut buf) {
                datapath::send_one(s, d, to);
            }
        }
        std::thread::sleep(TICK);
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
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
