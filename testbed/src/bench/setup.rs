//! The setups a bench compares (what runs between pc and srv), and how each one's daemons are
//! configured and started from the shipped `configs/` (with `[PEP]` overrides).

use std::time::{Duration, Instant};

use crate::link::Profile;
use crate::topo::{Node, Proc, Topology};

use super::sibling_bin;

/// What is between pc and srv. The name given on the command line is the name in every output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setup {
    /// Plain routing over the link: no VPN, no PEP.
    Plain,
    /// Our endpoint pair with stock WireGuard configs (no `[PEP]`).
    Wireguard,
    /// `configs/{box,pop}-pep.conf` with `Mode = split`: tunnel + plain splitting, BBR.
    Split,
    /// The same with CUBIC on the satellite segment (2 × BDP buffers): the PEPsal-like reference.
    SplitCubic,
    /// `configs/{box,pop}-pep.conf` as shipped: tunnel + StarPEP (the default mode).
    Starpep,
    /// StarPEP with the socket back-end (`WindowControl = clamp`).
    StarpepClamp,
    /// `configs/{box,pop}-pep-none.conf`: the PEP without VPN, plain routing.
    PepNoVpn,
    /// Stock wireguard-go + `wg` at box and POP (`bench::vpn`).
    WireguardGo,
    /// OpenVPN over UDP at box and POP (`bench::ovpn`).
    OvpnUdp,
    /// OpenVPN over TCP at box and POP.
    OvpnTcp,
    /// OpenVPN over TCP at pc and srv, its TCP connection split by the PEP without VPN on box
    /// and POP (position A: TCP-in-TCP).
    OvpnTcpPepA,
    /// Our WireGuard endpoints at pc and srv, the PEP without VPN on box and POP (it sees only
    /// UDP).
    WgPepA,
}

impl serde::Serialize for Setup {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl Setup {
    pub const ALL: [Setup; 12] = [
        Setup::Plain,
        Setup::Wireguard,
        Setup::Split,
        Setup::SplitCubic,
        Setup::Starpep,
        Setup::StarpepClamp,
        Setup::PepNoVpn,
        Setup::WireguardGo,
        Setup::OvpnUdp,
        Setup::OvpnTcp,
        Setup::OvpnTcpPepA,
        Setup::WgPepA,
    ];

    pub fn parse(s: &str) -> anyhow::Result<Setup> {
        if let Some(x) = Setup::ALL.into_iter().find(|x| x.name() == s) {
            return Ok(x);
        }
        Ok(match s {
            "wg" => Setup::Wireguard,
            "pep" => Setup::PepNoVpn,
            o => {
                let names: Vec<&str> = Setup::ALL.iter().map(|x| x.name()).collect();
                anyhow::bail!("unknown setup {o:?} ({})", names.join(", "))
            }
        })
    }

    /// The benchmark suite's name of the setup (a contract: `suite::cell::SETUPS`).
    pub fn suite_name(self) -> &'static str {
        match self {
            Setup::Plain => "plain",
            Setup::PepNoVpn => "pep",
            Setup::Wireguard => "wg",
            Setup::WireguardGo => "wg-go",
            Setup::SplitCubic => "wg+split-cubic",
            Setup::Split => "wg+split",
            Setup::Starpep => "wg+starpep",
            Setup::StarpepClamp => "wg+starpep-clamp",
            Setup::OvpnUdp => "ovpn-udp",
            Setup::OvpnTcp => "ovpn-tcp",
            Setup::OvpnTcpPepA => "ovpn-tcp+pepA",
            Setup::WgPepA => "wg+pepA",
        }
    }

    /// The setup a suite cell names.
    pub fn from_suite(name: &str) -> Option<Setup> {
        Setup::ALL.into_iter().find(|s| s.suite_name() == name)
    }

    /// The command-line name of `demo`/`split` (also the `setup` of their JSON rows).
    pub fn name(self) -> &'static str {
        match self {
            Setup::Plain => "plain",
            Setup::Wireguard => "wireguard",
            Setup::Split => "split",
            Setup::SplitCubic => "split-cubic",
            Setup::Starpep => "starpep",
            Setup::StarpepClamp => "starpep-clamp",
            Setup::PepNoVpn => "pep-novpn",
            Setup::WireguardGo => "wireguard-go",
            Setup::OvpnUdp => "ovpn-udp",
            Setup::OvpnTcp => "ovpn-tcp",
            Setup::OvpnTcpPepA => "ovpn-tcp+pepA",
            Setup::WgPepA => "wg+pepA",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            Setup::Plain => "no VPN, no PEP",
            Setup::Wireguard => "WireGuard only",
            Setup::Split => "WireGuard + split",
            Setup::SplitCubic => "split (CUBIC)",
            Setup::Starpep => "WireGuard + StarPEP",
            Setup::StarpepClamp => "StarPEP (clamp)",
            Setup::PepNoVpn => "PEP without VPN",
            Setup::WireguardGo => "wireguard-go",
            Setup::OvpnUdp => "OpenVPN (UDP)",
            Setup::OvpnTcp => "OpenVPN (TCP)",
            Setup::OvpnTcpPepA => "OpenVPN (TCP) + PEP outside",
            Setup::WgPepA => "WireGuard + PEP outside",
        }
    }

    /// Config names (box, POP) in `configs/`, if daemons run.
    pub(crate) fn configs(self) -> Option<(&'static str, &'static str)> {
        match self {
            Setup::Plain | Setup::WireguardGo | Setup::OvpnUdp | Setup::OvpnTcp => None,
            Setup::Wireguard => Some(("box", "pop")),
            Setup::Split | Setup::SplitCubic | Setup::Starpep | Setup::StarpepClamp => {
                Some(("box-pep", "pop-pep"))
            }
            Setup::PepNoVpn | Setup::OvpnTcpPepA | Setup::WgPepA => {
                Some(("box-pep-none", "pop-pep-none"))
            }
        }
    }

    /// The `[PEP]` keys that make this setup out of the shipped config (before `--pep`).
    pub(crate) fn pep_keys(self) -> &'static [&'static str] {
        match self {
            Setup::Split => &["Mode=split"],
            Setup::SplitCubic => &["Mode=split", "Congestion=cubic"],
            // The default mode's back-end where eBPF loads, named, so that a build without
            // the eBPF object fails the cell instead of measuring the clamp under this name.
            Setup::Starpep => &["Mode=starpep", "WindowControl=ebpf"],
            Setup::StarpepClamp => &["Mode=starpep", "WindowControl=clamp"],
            Setup::Plain
            | Setup::Wireguard
            | Setup::PepNoVpn
            | Setup::WireguardGo
            | Setup::OvpnUdp
            | Setup::OvpnTcp
            | Setup::OvpnTcpPepA
            | Setup::WgPepA => &[],
        }
    }

    pub(crate) fn plain_routes(self) -> bool {
        matches!(
            self,
            Setup::Plain | Setup::PepNoVpn | Setup::OvpnTcpPepA | Setup::WgPepA
        )
    }
}

/// The `[PEP]` overrides of one run: the setup's keys, the link's nominal rate and RTT (buffers
/// sized to its BDP, as an operator configures them), then the command line's `--pep`.
pub(crate) fn pep_set(setup: Setup, profile: &Profile, user: &[String]) -> Vec<String> {
    let (rate, rtt) = profile.nominal();
    let mut v: Vec<String> = setup.pep_keys().iter().map(|s| s.to_string()).collect();
    v.push(format!("LinkRate={}bit", rate.round() as u64));
    v.push(format!("LinkRtt={}ms", rtt.as_millis().max(1)));
    v.extend(user.iter().cloned());
    v
}

/// `text` with `KEY=VALUE` overrides in its `[PEP]` section (the file's last section).
fn patch_pep(text: &str, set: &[String]) -> anyhow::Result<String> {
    let mut out = text.to_string();
    for kv in set {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| anyhow::anyhow!("--pep {kv:?}: not KEY=VALUE"))?;
        let (k, v) = (k.trim(), v.trim());
        let at = out
            .find("[PEP]")
            .ok_or_else(|| anyhow::anyhow!("no [PEP] section"))?;
        let (head, tail) = out.split_at(at);
        let mut lines: Vec<String> = tail
            .lines()
            .filter(|l| {
                let key = l.split('=').next().unwrap_or("").trim();
                l.trim_start().starts_with('#') || !key.eq_ignore_ascii_case(k)
            })
            .map(str::to_string)
            .collect();
        lines.push(format!("{k} = {v}"));
        out = format!("{head}{}\n", lines.join("\n"));
    }
    Ok(out)
}

/// Starts `configs/NAME.conf` (with `[PEP]` overrides) in `node` and waits until `show`
/// answers (and reports the PEP, for PEP configs).
pub(crate) fn start_daemon(
    topo: &Topology,
    node: Node,
    bin: &str,
    name: &str,
    pep_set: &[String],
) -> anyhow::Result<Proc> {
    let src = crate::link::workspace_root().join(format!("configs/{name}.conf"));
    let conf = topo.tmpdir().join(format!("{name}.conf"));
    let text = std::fs::read_to_string(&src)?;
    let text = if name.contains("pep") {
        patch_pep(&text, pep_set)?
    } else {
        text
    };
    std::fs::write(&conf, text)?;
    // The shipped file's mode is git's (0644): `run` refuses a config group/others can access.
    std::fs::set_permissions(&conf, std::os::unix::fs::PermissionsExt::from_mode(0o600))?;
    let bin = sibling_bin(bin)?;
    let mut p = topo.spawn(
        node,
        &format!("{}-{name}", node.short()),
        &[
            bin.as_os_str(),
            "run".as_ref(),
            "-c".as_ref(),
            conf.as_os_str(),
        ],
    )?;
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(st) = p.try_status() {
            anyhow::bail!("{name}: daemon exited ({st}): {}", p.log());
        }
        let out = topo.exec(node, &[bin.as_os_str(), "show".as_ref(), name.as_ref()])?;
        let text = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && (!name.contains("pep") || text.contains("pep:")) {
            return Ok(p);
        }
        anyhow::ensure!(Instant::now() < end, "{name}: not up: {}", p.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[cfg(test)]
mod tests {
    use super::Setup;

    #[test]
    fn every_suite_setup_name_is_a_setup_and_back() {
        for name in crate::suite::cell::SETUPS {
            let s = Setup::from_suite(name).unwrap_or_else(|| panic!("{name}"));
            assert_eq!(s.suite_name(), name);
        }
        assert_eq!(Setup::ALL.len(), crate::suite::cell::SETUPS.len());
        assert_eq!(Setup::from_suite("wireguard"), None);
    }
}
