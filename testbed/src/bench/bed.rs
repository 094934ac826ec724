//! A test bed: one setup brought up over one emulated satellite link, ready for an application
//! to run between pc and srv (`pc — box — sat — pop — [ter] — srv`). Every bench application
//! (bulk, file, …) runs on a `Bed`; dropping it stops every process, then the namespaces go.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::link::Profile;
use crate::topo::{addr, Node, Proc, TopoSpec, Topology};

use super::ovpn::{self, Transport};
use super::setup::{start_daemon, Setup};
use super::sibling_bin;
use super::vpn::{self, Position};

/// What to bring up.
#[derive(Debug, Clone)]
pub struct BedSpec<'a> {
    pub setup: Setup,
    /// The satlink profile file.
    pub profile: &'a Path,
    /// Every `[PEP]` override of the run (`setup::pep_set`).
    pub pep_set: &'a [String],
    /// satlink's loss seed (`None`: its default).
    pub seed: Option<u64>,
    /// A constant RTT between POP and server (zero: none).
    pub server_rtt: Duration,
    /// Start the link's traces at the reconfiguration schedule's wall-clock phase
    /// (`--start aligned`), as a real Starlink terminal sees it; else at their beginning.
    pub aligned: bool,
    /// Let the POP write its per-tick StarPEP record (`ControlLog`).
    pub control_log: bool,
}

/// A running bed. Fields drop in order: daemons, then links, then the topology.
pub struct Bed {
    pub setup: Setup,
    daemons: Vec<Proc>,
    /// A VPN not started from `configs/` (wireguard-go, OpenVPN, position A's WireGuard).
    vpn: Option<vpn::Running>,
    link: Proc,
    ter: Option<Proc>,
    stats: PathBuf,
    ctl_log: PathBuf,
    pub topo: Topology,
}

impl Bed {
    /// Builds the topology, starts the link(s) and the setup's daemons, and waits until pc
    /// reaches srv (routes up, tunnel handshake done).
    pub fn up(spec: &BedSpec) -> anyhow::Result<Bed> {
        let ts = if spec.setup.plain_routes() {
            TopoSpec::satlink().with_plain_routes()
        } else {
            TopoSpec::satlink()
        };
        let topo = Topology::build(ts.with_server_rtt(spec.server_rtt))?;
        let satlink = sibling_bin("satlink")?;
        let ter = match topo.has(Node::Ter) {
            true => Some(topo.spawn_terrestrial(&satlink)?),
            false => None,
        };
        let stats = topo.tmpdir().join("satlink.json");
        let stats_s = stats.display().to_string();
        let seed = spec.seed.map(|s| s.to_string());
        let start = if spec.aligned { "aligned" } else { "now" };
        let mut sat_args = vec!["--start", start, "--stats-json", &stats_s];
        if let Some(s) = &seed {
            sat_args.extend(["--seed", s]);
        }
        let link = topo.spawn_satlink(&satlink, spec.profile, &sat_args)?;
        let ctl_log = topo.tmpdir().join("control-pop.jsonl");
        let mut daemons = Vec::new();
        if let Some((b, p)) = spec.setup.configs() {
            let mut pop_set = spec.pep_set.to_vec();
            if spec.control_log {
                pop_set.push(format!("ControlLog={}", ctl_log.display()));
            }
            daemons.push(start_daemon(&topo, Node::Pop, "starpep-pop", p, &pop_set)?);
            daemons.push(start_daemon(
                &topo,
                Node::Box,
                "starpep-client",
                b,
                spec.pep_set,
            )?);
        }
        let (rate, rtt) = Profile::load(spec.profile)?.nominal();
        let ovpn_buf = ovpn::socket_buffer(rate, rtt);
        let vpn = match spec.setup {
            Setup::WireguardGo => Some(vpn::up(&topo, vpn::Setup::WireguardGo, "g")?),
            Setup::WgPepA => Some(vpn::up_at(&topo, vpn::Setup::Ours, Position::PcSrv, "a")?),
            Setup::OvpnUdp => Some(ovpn::up(&topo, Transport::Udp, Position::BoxPop, ovpn_buf)?),
            Setup::OvpnTcp => Some(ovpn::up(&topo, Transport::Tcp, Position::BoxPop, ovpn_buf)?),
            Setup::OvpnTcpPepA => Some(ovpn::up(&topo, Transport::Tcp, Position::PcSrv, ovpn_buf)?),
            _ => None,
        };
        let bed = Bed {
            setup: spec.setup,
            daemons,
            vpn,
            link,
            ter,
            stats,
            ctl_log,
            topo,
        };
        let srv = bed.srv_addr().to_string();
        let ok = bed.topo.wait_reachable(Node::Pc, &srv, super::WARM_UP);
        anyhow::ensure!(ok, "{}: pc cannot reach srv", spec.setup.label());
        Ok(bed)
    }

    /// The server's address as pc's applications reach it (its tunnel address when the VPN
    /// runs on the end hosts).
    pub fn srv_addr(&self) -> IpAddr {
        match self.setup {
            Setup::OvpnTcpPepA | Setup::WgPepA => IpAddr::V4(addr::TUN_FAR),
            _ => IpAddr::V4(addr::SRV),
        }
    }

    /// pc's address as srv's applications reach it (its tunnel address when the VPN ends at
    /// pc, position A).
    pub fn pc_addr(&self) -> IpAddr {
        match self.setup {
            Setup::OvpnTcpPepA | Setup::WgPepA => IpAddr::V4(addr::TUN_NEAR),
            _ => IpAddr::V4(addr::PC_LAN),
        }
    }

    /// Stops the daemons and the links (satlink then writes its counters); idempotent.
    pub fn stop(&mut self) {
        for d in &mut self.daemons {
            d.stop();
        }
        self.vpn = None;
        self.link.stop();
        if let Some(t) = &mut self.ter {
            t.stop();
        }
    }

    /// satlink's counters (after [`Bed::stop`]).
    pub fn satlink_stats(&self) -> anyhow::Result<Value> {
        let text = std::fs::read_to_string(&self.stats)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", self.stats.display()))?;
        Ok(serde_json::from_str(&text)?)
    }

    /// The POP's per-tick StarPEP record, if it wrote one.
    pub fn control_log(&self) -> Option<String> {
        std::fs::read_to_string(&self.ctl_log).ok()
    }

    /// Files worth keeping after a run (`--keep`): satlink's counters, the control record.
    pub fn artefacts(&self) -> Vec<PathBuf> {
        [self.stats.clone(), self.ctl_log.clone()]
            .into_iter()
            .filter(|p| p.exists())
            .collect()
    }
}
