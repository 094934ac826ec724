//! Namespace topology `pc — box — [sat] — pop — srv`: create, exec, guaranteed cleanup
//! ([`star`]: many boxes behind one POP).
//!
//! Every netns test and benchmark builds its own [`Topology`]: namespaces get a unique prefix
//! (`sp<pid>x<n>-`), everything started inside them is killed and the namespaces are deleted on
//! drop, on panic (unwinding drops) and on SIGINT/SIGTERM (a signal thread cleans up and exits).
//! Namespaces left by a process that died without cleanup (SIGKILL) are swept by the next build.

pub mod addr;
mod cleanup;
pub mod netns;
pub mod netstat;
mod proc;
mod spec;
pub mod star;

pub use cleanup::{interrupted, on_interrupt, sweep_stale};
pub use proc::Proc;
pub use spec::{Node, TopoError, TopoSpec, Wan};

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::atomic::{AtomicU32, Ordering};

use addr::*;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A built topology. Dropping it kills its processes and deletes its namespaces and tmpdir.
pub struct Topology {
    prefix: String,
    spec: TopoSpec,
    tmpdir: PathBuf,
    keep_tmpdir: bool,
}

impl Topology {
    /// Builds the namespaces, links, addresses and routes of `spec`. On any failure what was
    /// already created is removed before the error is returned.
    pub fn build(spec: TopoSpec) -> Result<Topology, TopoError> {
        cleanup::install_signal_cleanup();
        sweep_stale();
        let prefix = format!(
            "sp{}x{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let tmpdir = std::env::temp_dir().join(format!("starpep-{prefix}"));
        std::fs::create_dir_all(&tmpdir).map_err(|e| TopoError::Io {
            what: format!("create {}", tmpdir.display()),
            source: e,
        })?;
        let topo = Topology {
            prefix,
            spec,
            tmpdir,
            keep_tmpdir: std::env::var_os("STARPEP_KEEP_TMP").is_some(),
        };
        topo.setup()?; // on error `topo` drops here and cleans up
        Ok(topo)
    }

    /// The unique prefix of this topology's namespaces.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    pub fn spec(&self) -> &TopoSpec {
        &self.spec
    }

    /// Whether `node` exists in this topology (`Sat` only with [`Wan::Satlink`]).
    pub fn has(&self, node: Node) -> bool {
        match node {
            Node::Sat => self.spec.wan == Wan::Satlink,
            Node::Ter => self.spec.server_rtt.is_some(),
            _ => true,
        }
    }

    /// The namespace name of `node` (usable with `ip netns exec`).
    pub fn ns(&self, node: Node) -> String {
        format!("{}-{}", self.prefix, node.short())
    }

    /// A scratch directory for configs, logs and captures; removed on drop unless the
    /// environment has `STARPEP_KEEP_TMP` set.
    pub fn tmpdir(&self) -> &Path {
        &self.tmpdir
    }

    fn nodes(&self) -> impl Iterator<Item = Node> + '_ {
        Node::ALL.into_iter().filter(|n| self.has(*n))
    }

    /// Runs a command inside `node` and returns its output, whatever its exit status.
    /// Runs `f` on a thread that entered `node`'s network namespace; sockets it creates live
    /// there (and can be used from any thread afterwards).
    pub fn run_in<T: Send + 'static>(
        &self,
        node: Node,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, TopoError> {
        self.require(node)?;
        netns::run_in(&self.ns(node), f)
    }

    /// Pings `dst` from `node` until a reply comes or `timeout` passes (the warm-up before a
    /// measurement: routes are up and a WireGuard handshake is done); whether it replied.
    pub fn wait_reachable(&self, node: Node, dst: &str, timeout: std::time::Duration) -> bool {
        let end = std::time::Instant::now() + timeout;
        loop {
            let ok = self
                .exec(node, &["ping", "-c", "1", "-W", "1", dst])
                .map(|o| o.status.success())
                .unwrap_or(false);
            if ok {
                return true;
            }
            if std::time::Instant::now() >= end {
                return false;
            }
        }
    }

    pub fn exec<S: AsRef<OsStr>>(&self, node: Node, args: &[S]) -> Result<Output, TopoError> {
        self.require(node)?;
        netns::command(&self.ns(node), args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| TopoError::Spawn {
                what: netns::render(node.short(), args),
                source: e,
            })
    }

    /// Runs a command inside `node`; its stdout, or an error with its stderr if it failed.
    pub fn run_ok<S: AsRef<OsStr>>(&self, node: Node, args: &[S]) -> Result<String, TopoError> {
        let out = self.exec(node, args)?;
        netns::check(netns::render(node.short(), args), out)
    }

    /// Runs a shell script (`sh -c`) inside `node`; its stdout or an error with its stderr.
    pub fn sh(&self, node: Node, script: &str) -> Result<String, TopoError> {
        self.run_ok(node, &["sh", "-c", script])
    }

    /// `node`'s `TcpExt` counter `name` (`/proc/net/netstat` is per namespace); an error if this
    /// kernel has no such counter.
    pub fn tcp_ext(&self, node: Node, name: &str) -> Result<u64, TopoError> {
        let text = self.run_ok(node, &["cat", "/proc/net/netstat"])?;
        netstat::tcp_ext(&text, name).ok_or_else(|| TopoError::NoCounter {
            node,
            name: name.into(),
        })
    }

    /// Starts a long-running process inside `node`; its output goes to `tmpdir/<label>.log`.
    /// It is stopped when the returned [`Proc`] drops, and killed at the latest when the
    /// topology drops.
    pub fn spawn<S: AsRef<OsStr>>(
        &self,
        node: Node,
        label: &str,
        args: &[S],
    ) -> Result<Proc, TopoError> {
        self.require(node)?;
        let log = self.tmpdir.join(format!("{label}.log"));
        Proc::start(label, netns::command(&self.ns(node), args), log)
    }

    /// Starts `satlink run` in the `sat` namespace with `profile` (left = toward the POP, so the
    /// profile's downlink is POP → box). `extra` is appended (e.g. `--seed 7`,
    /// `--stats-json FILE`).
    pub fn spawn_satlink(
        &self,
        satlink_bin: &Path,
        profile: &Path,
        extra: &[&str],
    ) -> Result<Proc, TopoError> {
        let mut args: Vec<&OsStr> = vec![
            satlink_bin.as_os_str(),
            OsStr::new("run"),
            OsStr::new("--profile"),
            profile.as_os_str(),
            OsStr::new("--left"),
            OsStr::new(SAT_POP_IF),
            OsStr::new("--right"),
            OsStr::new(SAT_BOX_IF),
        ];
        args.extend(extra.iter().map(OsStr::new));
        self.spawn(Node::Sat, "satlink", &args)
    }

    /// Starts the terrestrial satlink in `ter` (with [`TopoSpec::server_rtt`]): half the RTT
    /// each way, 10 Gbit/s, a queue that never drops.
    pub fn spawn_terrestrial(&self, satlink_bin: &Path) -> Result<Proc, TopoError> {
        self.require(Node::Ter)?;
        let rtt = self.spec.server_rtt.unwrap_or_default();
        let half = format!("{}us", (rtt / 2).as_micros());
        let text = format!(
            "description = \"terrestrial path POP - server: {rtt:?} RTT\"\n\
             [down]\nrate = \"10gbit\"\ndelay = \"{half}\"\nlimit = 100000\n\
             [up]\nrate = \"10gbit\"\ndelay = \"{half}\"\nlimit = 100000\n"
        );
        let profile = self.tmpdir.join("terrestrial.toml");
        std::fs::write(&profile, text).map_err(|e| TopoError::Io {
            what: format!("write {}", profile.display()),
            source: e,
        })?;
        let args: Vec<&OsStr> = vec![
            satlink_bin.as_os_str(),
            OsStr::new("run"),
            OsStr::new("--profile"),
            profile.as_os_str(),
            OsStr::new("--left"),
            OsStr::new(TER_SRV_IF),
            OsStr::new("--right"),
            OsStr::new(TER_POP_IF),
        ];
        self.spawn(Node::Ter, "satlink-ter", &args)
    }

    fn require(&self, node: Node) -> Result<(), TopoError> {
        if self.has(node) {
            Ok(())
        } else {
            Err(TopoError::NoSuchNode(node))
        }
    }

    fn setup(&self) -> Result<(), TopoError> {
        for node in self.nodes().collect::<Vec<_>>() {
            let ns = self.ns(node);
            cleanup::register_and_add(&ns)?;
            self.ip(node, &["link", "set", "lo", "up"])?;
            if node != Node::Sat && node != Node::Ter {
                // No duplicate address detection: link-local addresses are usable at once,
                // so IPv6 works from the first packet instead of after ~1 s of DAD.
                self.sysctl(
                    node,
                    &[
                        "net.ipv6.conf.all.accept_dad=0",
                        "net.ipv6.conf.default.accept_dad=0",
                    ],
                )?;
            }
        }
        let (pc, bx, pop, srv) = (Node::Pc, Node::Box, Node::Pop, Node::Srv);
        self.veth(pc, LAN_IF, bx, LAN_IF)?;
        if self.has(Node::Ter) {
            self.sysctl(
                Node::Ter,
                &[
                    "net.ipv6.conf.all.disable_ipv6=1",
                    "net.ipv6.conf.default.disable_ipv6=1",
                ],
            )?;
            self.veth(pop, LAN_IF, Node::Ter, TER_POP_IF)?;
            self.veth(Node::Ter, TER_SRV_IF, srv, LAN_IF)?;
            for (n, i) in [(pop, LAN_IF), (srv, LAN_IF)] {
                self.ethtool(
                    n,
                    i,
                    &["tx", "off", "tso", "off", "gso", "off", "gro", "off"],
                )?;
            }
            for i in [TER_POP_IF, TER_SRV_IF] {
                self.ethtool(Node::Ter, i, &["gro", "off", "tso", "off", "gso", "off"])?;
            }
        } else {
            self.veth(srv, LAN_IF, pop, LAN_IF)?;
        }
        match self.spec.wan {
            Wan::Direct => self.veth(bx, WAN_IF, pop, WAN_IF)?,
            Wan::Satlink => {
                // IPv6 off first so the new interfaces never get link-local addresses.
                self.sysctl(
                    Node::Sat,
                    &[
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1",
                    ],
                )?;
                self.veth(bx, WAN_IF, Node::Sat, SAT_BOX_IF)?;
                self.veth(pop, WAN_IF, Node::Sat, SAT_POP_IF)?;
                for (n, i) in [(bx, WAN_IF), (pop, WAN_IF)] {
                    self.ethtool(
                        n,
                        i,
                        &["tx", "off", "tso", "off", "gso", "off", "gro", "off"],
                    )?;
                }
                for i in [SAT_BOX_IF, SAT_POP_IF] {
                    self.ethtool(Node::Sat, i, &["gro", "off", "tso", "off", "gso", "off"])?;
                }
            }
        }
        let addrs: [(Node, &str, String, String); 6] = [
            (pc, LAN_IF, format!("{PC_LAN}/24"), format!("{PC_LAN6}/64")),
            (
                bx,
                LAN_IF,
                format!("{BOX_LAN}/24"),
                format!("{BOX_LAN6}/64"),
            ),
            (
                bx,
                WAN_IF,
                format!("{BOX_WAN}/24"),
                format!("{BOX_WAN6}/64"),
            ),
            (
                pop,
                WAN_IF,
                format!("{POP_WAN}/24"),
                format!("{POP_WAN6}/64"),
            ),
            (
                pop,
                LAN_IF,
                format!("{POP_LAN}/24"),
                format!("{POP_LAN6}/64"),
            ),
            (srv, LAN_IF, format!("{SRV}/24"), format!("{SRV6}/64")),
        ];
        for (node, ifname, v4, v6) in &addrs {
            self.ip(*node, &["addr", "add", v4, "dev", ifname])?;
            self.ip(*node, &["-6", "addr", "add", v6, "dev", ifname, "nodad"])?;
        }
        for node in [bx, pop] {
            self.sysctl(
                node,
                &[
                    "net.ipv4.ip_forward=1",
                    "net.ipv6.conf.all.forwarding=1",
                    "net.ipv4.conf.all.rp_filter=0",
                    "net.ipv4.conf.default.rp_filter=0",
                ],
            )?;
        }
        self.ip(
            pc,
            &["route", "add", "default", "via", &BOX_LAN.to_string()],
        )?;
        self.ip(
            pc,
            &[
                "-6",
                "route",
                "add",
                "default",
                "via",
                &BOX_LAN6.to_string(),
            ],
        )?;
        self.ip(
            srv,
            &["route", "add", "default", "via", &POP_LAN.to_string()],
        )?;
        self.ip(
            srv,
            &[
                "-6",
                "route",
                "add",
                "default",
                "via",
                &POP_LAN6.to_string(),
            ],
        )?;
        if self.spec.plain_routes {
            self.ip(bx, &["route", "add", SRV_NET, "via", &POP_WAN.to_string()])?;
            self.ip(
                bx,
                &["-6", "route", "add", SRV_NET6, "via", &POP_WAN6.to_string()],
            )?;
            self.ip(pop, &["route", "add", PC_NET, "via", &BOX_WAN.to_string()])?;
            self.ip(
                pop,
                &["-6", "route", "add", PC_NET6, "via", &BOX_WAN6.to_string()],
            )?;
        }
        Ok(())
    }

    /// `ip -n NS ARGS`.
    pub fn ip(&self, node: Node, args: &[&str]) -> Result<(), TopoError> {
        self.require(node)?;
        let ns = self.ns(node);
        let mut full = vec!["-n", ns.as_str()];
        full.extend_from_slice(args);
        netns::ip(&full)
    }

    /// Sets sysctls (`key=value`) inside `node`.
    pub fn sysctl(&self, node: Node, settings: &[&str]) -> Result<(), TopoError> {
        let mut args = vec!["sysctl", "-q", "-w"];
        args.extend_from_slice(settings);
        self.run_ok(node, &args).map(|_| ())
    }

    /// `ethtool -K IFACE FEATURES...` inside `node`.
    pub fn ethtool(&self, node: Node, ifname: &str, features: &[&str]) -> Result<(), TopoError> {
        let mut args = vec!["ethtool", "-K", ifname];
        args.extend_from_slice(features);
        self.run_ok(node, &args).map(|_| ())
    }

    /// A veth pair created directly inside the two namespaces (nothing in the root namespace,
    /// so equal names in different namespaces never collide), both ends up.
    fn veth(&self, a: Node, a_if: &str, b: Node, b_if: &str) -> Result<(), TopoError> {
        let ns_b = self.ns(b);
        self.ip(
            a,
            &[
                "link", "add", a_if, "type", "veth", "peer", "name", b_if, "netns", &ns_b,
            ],
        )?;
        self.ip(a, &["link", "set", a_if, "up"])?;
        self.ip(b, &["link", "set", b_if, "up"])
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for node in self.nodes().collect::<Vec<_>>() {
            let ns = self.ns(node);
            netns::delete(&ns);
            cleanup::unregister(&ns);
        }
        if !self.keep_tmpdir {
            let _ = std::fs::remove_dir_all(&self.tmpdir);
        }
    }
}
