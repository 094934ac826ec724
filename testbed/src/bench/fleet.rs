//! Many boxes behind one POP (the shell of `starpep-bench pop-scale` and `tunnel-peers` and of
//! `tests/netns_ops_scale.rs`): a key pair per box, the POP's config with one `[Peer]` per box
//! and a `[PEP]` (or none: a plain WireGuard POP), plain WireGuard boxes (`starpep-client` without `[PEP]`, each in its own
//! namespace of [`Star`]), all started at once, and the handshake storm timed at the POP.
//!
//! The boxes carry no PEP of their own: the POP's PEP is what is measured, and 100 box PEPs
//! would take the CPU the POP needs on a small machine. Their traffic comes from the box's own
//! namespace (source: its tunnel address), so each flow is split at the POP and charged to its
//! box's peer.

use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;
use starpep_common::config::PrivateKey;

use crate::topo::star::{self, Star};
use crate::topo::{addr, Node, Proc};

use super::sibling_bin;

/// The POP's WireGuard port.
const PORT: u16 = addr::WG_PORT;
/// The POP's interface (and config file) name.
pub const POP_IFACE: &str = "pop0";
/// How often the storm is polled at the POP (and the boxes nudged).
const POLL: Duration = Duration::from_millis(50);

/// What to build.
#[derive(Debug, Clone, Default)]
pub struct FleetSpec {
    pub boxes: usize,
    /// `[PEP]` lines of the POP (`KEY = VALUE`; empty: the defaults); `None`: no `[PEP]`, the
    /// POP is a plain WireGuard endpoint.
    pub pop_pep: Option<Vec<String>>,
    /// The POP's data-path workers (`STARPEP_WORKERS`); `None`: its default, one per core.
    pub pop_workers: Option<usize>,
}

/// The POP's config: its key, one peer per box (its tunnel address), the `[PEP]` lines if any.
pub fn pop_config(key: &PrivateKey, boxes: &[PrivateKey], pep: Option<&[String]>) -> String {
    let mut s = format!(
        "[Interface]\nPrivateKey = {key}\nAddress = {}/16\nListenPort = {PORT}\n",
        star::POP_TUNNEL
    );
    for (i, b) in boxes.iter().enumerate() {
        s.push_str(&format!(
            "\n[Peer]\nPublicKey = {}\nAllowedIPs = {}/32\n",
            b.public_key(),
            Star::box_tunnel(i)
        ));
    }
    if let Some(pep) = pep {
        s.push_str("\n[PEP]\n");
        for l in pep {
            s.push_str(l);
            s.push('\n');
        }
    }
    s
}

/// Box `i`'s config: plain WireGuard toward the POP, the tunnel and the server's network
/// through it.
pub fn box_config(i: usize, key: &PrivateKey, pop: &PrivateKey) -> String {
    format!(
        "[Interface]\nPrivateKey = {key}\nAddress = {}/16\n\n[Peer]\nPublicKey = {}\n\
         Endpoint = {}:{PORT}\nAllowedIPs = {}, {}\nPersistentKeepalive = 25\n",
        Star::box_tunnel(i),
        pop.public_key(),
        star::POP_BRIDGE,
        star::TUNNEL_NET,
        addr::SRV_NET,
    )
}

/// One TCP socket's memory as `ss -tmn` shows it (`skmem`), in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SockMem {
    pub local: String,
    pub peer: String,
    /// Receive memory allocated, and the receive buffer (the limit).
    pub r: u64,
    pub rb: u64,
    /// Send queue, and the send buffer (the limit).
    pub w: u64,
    pub tb: u64,
}

/// The sockets of `ss -tmn` output (a state line, then its `skmem:(...)` line).
pub fn parse_ss_mem(text: &str) -> Vec<SockMem> {
    let mut out = Vec::new();
    let mut addrs: Option<(String, String)> = None;
    for line in text.lines() {
        let t = line.trim();
        if let Some(inner) = t.strip_prefix("skmem:(").and_then(|r| r.split(')').next()) {
            let Some((local, peer)) = addrs.take() else {
                continue;
            };
            let field = |k: &str| -> u64 {
                inner
                    .split(',')
                    .find_map(|f| {
                        let num = f.trim_start_matches(|c: char| c.is_ascii_alphabetic());
                        (&f[..f.len() - num.len()] == k).then(|| num.parse().ok())?
                    })
                    .unwrap_or(0)
            };
            out.push(SockMem {
                local,
                peer,
                r: field("r"),
                rb: field("rb"),
                w: field("w"),
                tb: field("tb"),
            });
        } else {
            let f: Vec<&str> = t.split_whitespace().collect();
            addrs = (f.len() >= 5 && f[1].parse::<u64>().is_ok())
                .then(|| (f[3].to_string(), f[4].to_string()));
        }
    }
    out
}

/// The handshake storm as the POP saw it.
#[derive(Debug, Clone, Copy)]
pub struct Storm {
    /// Spawning every box daemon (from the first spawn to the last).
    pub spawned: Duration,
    /// From the first spawn to the first poll of the POP that found a handshake with every
    /// peer (polls are [`POLL`] apart plus a `show`).
    pub all_handshakes: Duration,
}

/// The running fleet.
pub struct Fleet {
    pub star: Star,
    pub pop: Proc,
    pub boxes: Vec<Proc>,
    keys: Vec<PrivateKey>,
    pop_key: PrivateKey,
    pop_bin: PathBuf,
    client_bin: PathBuf,
}

fn write_private(path: &std::path::Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text)?;
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    Ok(())
}

impl Fleet {
    /// Builds the topology and starts the POP (returns once its PEP answers `show`).
    pub fn up(spec: &FleetSpec) -> anyhow::Result<Fleet> {
        let pop_bin = sibling_bin("starpep-pop")?;
        let client_bin = sibling_bin("starpep-client")?;
        let star = Star::build(spec.boxes)?;
        let pop_key = PrivateKey::generate();
        let keys: Vec<PrivateKey> = (0..spec.boxes).map(|_| PrivateKey::generate()).collect();
        let dir = star.topo.tmpdir().to_path_buf();
        let conf = dir.join(format!("{POP_IFACE}.conf"));
        write_private(&conf, &pop_config(&pop_key, &keys, spec.pop_pep.as_deref()))?;
        let mut cmd: Vec<std::ffi::OsString> = Vec::new();
        if let Some(n) = spec.pop_workers {
            cmd.extend(["env".into(), format!("STARPEP_WORKERS={n}").into()]);
        }
        cmd.extend([
            pop_bin.clone().into(),
            "run".into(),
            "-c".into(),
            conf.clone().into(),
        ]);
        let mut pop = star.topo.spawn(Node::Pop, POP_IFACE, &cmd)?;
        let pep = spec.pop_pep.is_some();
        let end = Instant::now() + Duration::from_secs(30);
        let fleet = loop {
            if let Some(st) = pop.try_status() {
                anyhow::bail!("starpep-pop exited ({st}):\n{}", pop.log());
            }
            if Fleet::show_of(&star, &pop_bin).is_ok_and(|v| !pep || v["pep"].is_object()) {
                break Fleet {
                    star,
                    pop,
                    boxes: Vec::new(),
                    keys,
                    pop_key,
                    pop_bin,
                    client_bin,
                };
            }
            anyhow::ensure!(Instant::now() < end, "POP not up:\n{}", pop.log());
            std::thread::sleep(POLL);
        };
        for (i, k) in fleet.keys.iter().enumerate() {
            let path = dir.join(format!("box{i}.conf"));
            write_private(&path, &box_config(i, k, &fleet.pop_key))?;
        }
        Ok(fleet)
    }

    fn show_of(star: &Star, bin: &std::path::Path) -> anyhow::Result<Value> {
        let out = star.topo.run_ok(
            Node::Pop,
            &[
                bin.as_os_str(),
                "show".as_ref(),
                POP_IFACE.as_ref(),
                "--json".as_ref(),
            ],
        )?;
        Ok(serde_json::from_str(&out)?)
    }

    /// The POP's `show --json`.
    pub fn pop_show(&self) -> anyhow::Result<Value> {
        Fleet::show_of(&self.star, &self.pop_bin)
    }

    /// The POP's `pep` object.
    pub fn pop_pep(&self) -> anyhow::Result<Value> {
        Ok(self.pop_show()?["pep"].clone())
    }

    /// Polls the POP's `pep` object until `ok` holds; an error with `what` and the last
    /// answer after `within`.
    pub fn wait_pep(
        &self,
        within: Duration,
        what: &str,
        ok: impl Fn(&Value) -> bool,
    ) -> anyhow::Result<Value> {
        let end = Instant::now() + within;
        loop {
            let p = self.pop_pep()?;
            if ok(&p) {
                return Ok(p);
            }
            anyhow::ensure!(Instant::now() < end, "POP: {what} after {within:?}: {p}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The POP namespace's TCP sockets with their memory (`ss -tmn`).
    pub fn pop_sockets(&self) -> anyhow::Result<Vec<SockMem>> {
        Ok(parse_ss_mem(
            &self.star.topo.run_ok(Node::Pop, &["ss", "-tmn"])?,
        ))
    }

    pub fn pop_pid(&self) -> anyhow::Result<u32> {
        self.pop
            .pid()
            .ok_or_else(|| anyhow::anyhow!("POP not running"))
    }

    /// Starts every box daemon at once and nudges each box's tunnel (a datagram toward the
    /// server, repeated until its handshake is done) until the POP has completed a handshake
    /// with every peer, or `within` passed.
    pub fn start_boxes(&mut self, within: Duration) -> anyhow::Result<Storm> {
        let sink = SocketAddr::from((addr::SRV, 9));
        let nudgers: Vec<UdpSocket> = (0..self.star.len())
            .map(|i| {
                self.star
                    .run_in_box(i, || UdpSocket::bind("0.0.0.0:0"))?
                    .map_err(anyhow::Error::from)
            })
            .collect::<anyhow::Result<_>>()?;
        let t0 = Instant::now();
        for i in 0..self.star.len() {
            let conf = self.star.topo.tmpdir().join(format!("box{i}.conf"));
            let p = self.star.spawn_box(
                i,
                &format!("box{i}"),
                &[
                    self.client_bin.as_os_str(),
                    "run".as_ref(),
                    "-c".as_ref(),
                    conf.as_os_str(),
                ],
            )?;
            self.boxes.push(p);
        }
        let spawned = t0.elapsed();
        let end = t0 + within;
        loop {
            let v = self.pop_show()?;
            let done: Vec<bool> = v["peers"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .map(|p| !p["latest_handshake_unix"].is_null())
                        .collect()
                })
                .unwrap_or_default();
            let n = done.iter().filter(|d| **d).count();
            if n == self.star.len() {
                return Ok(Storm {
                    spawned,
                    all_handshakes: t0.elapsed(),
                });
            }
            for (i, s) in nudgers.iter().enumerate() {
                if !done.get(i).copied().unwrap_or(false) {
                    // No route yet while the daemon comes up: try again next round.
                    let _ = s.send_to(b"storm", sink);
                }
            }
            if let Some(i) = self.boxes.iter_mut().position(|p| p.try_status().is_some()) {
                anyhow::bail!("box{i} exited:\n{}", self.boxes[i].log());
            }
            anyhow::ensure!(
                Instant::now() < end,
                "{n} of {} handshakes after {within:?}",
                self.star.len()
            );
            std::thread::sleep(POLL);
        }
    }

    /// Stops the box daemons and the POP (SIGTERM) and returns the POP's exit and log.
    pub fn stop(mut self) -> (Option<std::process::ExitStatus>, String) {
        for b in &mut self.boxes {
            b.stop();
        }
        let st = self.pop.stop();
        (st, self.pop.log())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ss_memory_lines_are_read_per_socket() {
        let text = "State Recv-Q Send-Q Local Address:Port  Peer Address:Port Process\n\
            ESTAB 1000   0          10.2.0.2:5201    10.8.0.2:39142\n\
            \t skmem:(r1832,rb131072,t0,tb3939840,f2264,w12,o0,bl0,d0)\n\
            ESTAB 0      0          127.0.0.1:39142    127.0.0.1:45678\n\
            \t skmem:(r0,rb65536,t0,tb87040,f0,w0,o0,bl0,d0)      \n";
        let v = parse_ss_mem(text);
        assert_eq!(v.len(), 2);
        assert_eq!(
            v[0],
            SockMem {
                local: "10.2.0.2:5201".into(),
                peer: "10.8.0.2:39142".into(),
                r: 1832,
                rb: 131072,
                w: 12,
                tb: 3939840
            }
        );
        assert_eq!((v[1].rb, v[1].tb), (65536, 87040));
    }

    #[test]
    fn configs_give_each_box_its_own_peer_address_and_key() {
        let pop = PrivateKey::generate();
        let boxes: Vec<PrivateKey> = (0..3).map(|_| PrivateKey::generate()).collect();
        let text = pop_config(&pop, &boxes, Some(&["MaxFlows = 30".into()]));
        let cfg = starpep_common::config::parse("pop0.conf", &text).expect("POP config parses");
        assert_eq!(cfg.peers.len(), 3);
        assert_eq!(cfg.pep.as_ref().map(|p| p.max_flows), Some(30));
        for (i, k) in boxes.iter().enumerate() {
            let p = &cfg.peers[i];
            assert_eq!(p.public_key, k.public_key());
            assert_eq!(
                p.allowed_ips[0].to_string(),
                format!("{}/32", Star::box_tunnel(i))
            );
            let b = starpep_common::config::parse("box.conf", &box_config(i, k, &pop))
                .expect("box config");
            assert_eq!(b.peers[0].public_key, pop.public_key());
            assert!(b.pep.is_none());
        }
        let plain = starpep_common::config::parse("pop0.conf", &pop_config(&pop, &boxes, None))
            .expect("tunnel-only POP config");
        assert!(plain.pep.is_none());
        assert_eq!(plain.peers.len(), 3);
    }
}
