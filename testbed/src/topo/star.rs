//! Many boxes behind one POP (`box0..boxN — br0 in pop — srv`): the standard topology's `pop`
//! and `srv`, plus one namespace per box whose `wan0` hangs off a bridge in the POP's
//! namespace, so each box is a WireGuard peer of its own with its own address and endpoint.
//!
//! Addressing: the bridge (the POP's WireGuard endpoint) is [`POP_BRIDGE`] in [`WAN_NET`]; box
//! `i` is [`Star::box_wan`] there and [`Star::box_tunnel`] inside the tunnel ([`TUNNEL_NET`],
//! the POP [`POP_TUNNEL`]). The box namespaces are cleaned up with the topology (on drop, panic
//! and signals), as every other namespace.

use std::ffi::OsStr;
use std::net::Ipv4Addr;

use super::{cleanup, netns, Node, Proc, TopoError, TopoSpec, Topology};

/// The POP's side of the boxes' network: a bridge with this address.
pub const POP_BRIDGE: Ipv4Addr = Ipv4Addr::new(10, 98, 0, 1);
/// The boxes' network (the bridge's prefix length).
pub const WAN_NET: &str = "10.98.0.0/16";
/// The tunnel: the POP's address and the prefix every box's address is in.
pub const POP_TUNNEL: Ipv4Addr = Ipv4Addr::new(10, 8, 0, 1);
pub const TUNNEL_NET: &str = "10.8.0.0/16";
/// The bridge in the POP's namespace.
const BRIDGE: &str = "br0";
/// At most this many boxes (host numbers of a /16 after the POP's).
pub const MAX_BOXES: usize = 65_000;

/// The standard topology (its `pop` and `srv` are used) and `n` box namespaces.
pub struct Star {
    pub topo: Topology,
    boxes: Vec<String>,
}

/// The `k`-th host address of a /16 whose first two octets are `net`'s.
fn host(net: Ipv4Addr, k: usize) -> Ipv4Addr {
    let o = net.octets();
    Ipv4Addr::new(o[0], o[1], (k >> 8) as u8, (k & 0xff) as u8)
}

impl Star {
    /// Builds the standard direct topology, a bridge in `pop` and `n` boxes on it. On error
    /// everything created so far is removed.
    pub fn build(n: usize) -> Result<Star, TopoError> {
        if n > MAX_BOXES {
            return Err(TopoError::Io {
                what: format!("{n} boxes"),
                source: std::io::Error::other(format!("at most {MAX_BOXES}")),
            });
        }
        let topo = Topology::build(TopoSpec::direct())?;
        let mut star = Star {
            topo,
            boxes: Vec::with_capacity(n),
        };
        star.setup(n)?; // on error `star` drops here and cleans up
        Ok(star)
    }

    /// How many boxes.
    pub fn len(&self) -> usize {
        self.boxes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// Box `i`'s namespace name.
    pub fn box_ns(&self, i: usize) -> &str {
        &self.boxes[i]
    }

    /// Box `i`'s address on the boxes' network (its WireGuard endpoint as the POP sees it).
    pub fn box_wan(i: usize) -> Ipv4Addr {
        host(POP_BRIDGE, i + 2)
    }

    /// Box `i`'s tunnel address.
    pub fn box_tunnel(i: usize) -> Ipv4Addr {
        host(POP_TUNNEL, i + 2)
    }

    fn setup(&mut self, n: usize) -> Result<(), TopoError> {
        let pop = Node::Pop;
        self.topo
            .ip(pop, &["link", "add", BRIDGE, "type", "bridge"])?;
        self.topo.ip(
            pop,
            &["addr", "add", &format!("{POP_BRIDGE}/16"), "dev", BRIDGE],
        )?;
        self.topo.ip(pop, &["link", "set", BRIDGE, "up"])?;
        let pop_ns = self.topo.ns(pop);
        for i in 0..n {
            let ns = format!("{}-b{i}", self.topo.prefix());
            cleanup::register_and_add(&ns)?;
            self.boxes.push(ns.clone());
            let port = format!("b{i}");
            let wan = format!("{}/16", Star::box_wan(i));
            let ip = |args: &[&str]| {
                let mut full = vec!["-n", ns.as_str()];
                full.extend_from_slice(args);
                netns::ip(&full)
            };
            ip(&["link", "set", "lo", "up"])?;
            ip(&[
                "link", "add", "wan0", "type", "veth", "peer", "name", &port, "netns", &pop_ns,
            ])?;
            ip(&["addr", "add", &wan, "dev", "wan0"])?;
            ip(&["link", "set", "wan0", "up"])?;
            self.topo
                .ip(pop, &["link", "set", &port, "master", BRIDGE, "up"])?;
        }
        Ok(())
    }

    /// Runs a command inside box `i`; its output, whatever its exit status.
    pub fn exec_box<S: AsRef<OsStr>>(
        &self,
        i: usize,
        args: &[S],
    ) -> Result<std::process::Output, TopoError> {
        netns::command(self.box_ns(i), args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| TopoError::Spawn {
                what: netns::render(self.box_ns(i), args),
                source: e,
            })
    }

    /// Starts a long-running process inside box `i` (output to `tmpdir/<label>.log`; stopped
    /// on drop, killed at the latest with the topology).
    pub fn spawn_box<S: AsRef<OsStr>>(
        &self,
        i: usize,
        label: &str,
        args: &[S],
    ) -> Result<Proc, TopoError> {
        let log = self.topo.tmpdir().join(format!("{label}.log"));
        Proc::start(label, netns::command(self.box_ns(i), args), log)
    }

    /// Runs `f` on a thread inside box `i`'s namespace (sockets it creates live there).
    pub fn run_in_box<T: Send + 'static>(
        &self,
        i: usize,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, TopoError> {
        netns::run_in(self.box_ns(i), f)
    }
}

impl Drop for Star {
    fn drop(&mut self) {
        for ns in &self.boxes {
            netns::delete(ns);
            cleanup::unregister(ns);
        }
    }
}
