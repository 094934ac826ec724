//! The loader: owns the loaded tc classifiers, their TCX links and the window map.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use aya::maps::{HashMap, MapData, MapError};
use aya::programs::tc::SchedClassifierLinkId;
use aya::programs::{SchedClassifier, TcAttachType};
use aya::sys::SyscallError;
use aya::Ebpf;

use crate::error::EbpfError;
use crate::flow::{FlowEntry, FlowKey};
use crate::{object, sys};

/// Name of the map in the object.
pub const MAP_NAME: &str = "STARPEP_WINDOWS";
/// Program for Ethernet-framed devices (veth, physical NICs, loopback).
pub const PROG_ETH: &str = "starpep_window_eth";
/// Program for devices whose packets start with the IP header (TUN).
pub const PROG_L3: &str = "starpep_window_l3";

const ARPHRD_ETHER: u16 = 1;
const ARPHRD_RAWIP: u16 = 519;
const ARPHRD_LOOPBACK: u16 = 772;
const ARPHRD_NONE: u16 = 65534;

/// The program that fits an ARPHRD_* link type.
fn program_for(link_type: u16) -> Option<&'static str> {
    match link_type {
        ARPHRD_ETHER | ARPHRD_LOOPBACK => Some(PROG_ETH),
        ARPHRD_NONE | ARPHRD_RAWIP => Some(PROG_L3),
        _ => None,
    }
}

struct Attached {
    program: &'static str,
    link: SchedClassifierLinkId,
}

/// The eBPF back-end of the receive-window controller. Dropping it detaches every TCX link
/// and unloads the programs and the map (nothing is pinned).
pub struct WindowRewriter {
    bpf: Ebpf,
    windows: HashMap<MapData, FlowKey, FlowEntry>,
    attached: BTreeMap<String, Attached>,
}

impl std::fmt::Debug for WindowRewriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WindowRewriter")
            .field("interfaces", &self.interfaces())
            .finish_non_exhaustive()
    }
}

fn is_enoent(e: &MapError) -> bool {
    match e {
        MapError::KeyNotFound => true,
        MapError::SyscallError(SyscallError { io_error, .. }) => {
            io_error.raw_os_error() == Some(libc::ENOENT)
        }
        _ => false,
    }
}

/// Kernels before 5.11 charge BPF memory to RLIMIT_MEMLOCK; newer ones (memcg) ignore it.
/// Best effort: raise the soft limit to the hard limit.
fn raise_memlock() {
    use nix::sys::resource::{getrlimit, setrlimit, Resource};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_MEMLOCK) {
        if soft < hard {
            let _ = setrlimit(Resource::RLIMIT_MEMLOCK, hard, hard);
        }
    }
}

impl WindowRewriter {
    /// Loads the object, verifies both programs and creates the map (needs CAP_BPF and
    /// CAP_NET_ADMIN, and BTF in /sys/kernel/btf/vmlinux). Nothing is attached yet.
    pub fn load() -> Result<WindowRewriter, EbpfError> {
        let bytes = object::OBJECT.ok_or(EbpfError::NotBuilt(object::NOT_BUILT))?;
        raise_memlock();
        let mut bpf = Ebpf::load(bytes).map_err(EbpfError::Load)?;
        for name in [PROG_ETH, PROG_L3] {
            let prog: &mut SchedClassifier = bpf
                .program_mut(name)
                .ok_or(EbpfError::Missing {
                    kind: "program",
                    name,
                })?
                .try_into()
                .map_err(|source| EbpfError::Program {
                    program: name,
                    source,
                })?;
            prog.load().map_err(|source| EbpfError::Program {
                program: name,
                source,
            })?;
        }
        let map = bpf.take_map(MAP_NAME).ok_or(EbpfError::Missing {
            kind: "map",
            name: MAP_NAME,
        })?;
        let windows = HashMap::try_from(map).map_err(|source| EbpfError::Map {
            action: "open".to_string(),
            source,
        })?;
        Ok(WindowRewriter {
            bpf,
            windows,
            attached: BTreeMap::new(),
        })
    }

    /// Attaches on egress of `iface` (TCX on kernels >= 6.6), as seen in the calling thread's
    /// network namespace. Picks the Ethernet or the L3 program from the link type
    /// (1 Ethernet / 772 loopback, 65534 none = TUN / 519 raw IP). Attaching an interface
    /// name a second time is a no-op.
    pub fn attach(&mut self, iface: &str) -> Result<(), EbpfError> {
        if self.attached.contains_key(iface) {
            return Ok(());
        }
        let link_type = sys::link_type(iface).map_err(|source| EbpfError::NoInterface {
            iface: iface.to_string(),
            source,
        })?;
        let program = program_for(link_type).ok_or_else(|| EbpfError::LinkType {
            iface: iface.to_string(),
            link_type,
        })?;
        let attach_err = |source| EbpfError::Attach {
            iface: iface.to_string(),
            program,
            source,
        };
        let prog: &mut SchedClassifier = self
            .bpf
            .program_mut(program)
            .ok_or(EbpfError::Missing {
                kind: "program",
                name: program,
            })?
            .try_into()
            .map_err(attach_err)?;
        let link = prog
            .attach(iface, TcAttachType::Egress)
            .map_err(attach_err)?;
        self.attached
            .insert(iface.to_string(), Attached { program, link });
        Ok(())
    }

    /// Detaches from `iface` (no-op if it was not attached).
    pub fn detach(&mut self, iface: &str) -> Result<(), EbpfError> {
        let Some(Attached { program, link }) = self.attached.remove(iface) else {
            return Ok(());
        };
        let detach_err = |source| EbpfError::Detach {
            iface: iface.to_string(),
            source,
        };
        let prog: &mut SchedClassifier = self
            .bpf
            .program_mut(program)
            .ok_or(EbpfError::Missing {
                kind: "program",
                name: program,
            })?
            .try_into()
            .map_err(detach_err)?;
        prog.detach(link).map_err(detach_err)
    }

    /// Interfaces attached so far.
    pub fn interfaces(&self) -> Vec<String> {
        self.attached.keys().cloned().collect()
    }

    /// Sets (inserts or updates) the window limit of the flow whose socket is
    /// `local -> remote`: `window` in bytes, `rcv_wscale` of that socket (TCP_INFO). An update
    /// keeps the flow's counters.
    pub fn set(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        window: u32,
        rcv_wscale: u8,
    ) -> Result<(), EbpfError> {
        let key = key(local, remote)?;
        let old = match self.windows.get(&key, 0) {
            Ok(entry) => entry,
            Err(e) if is_enoent(&e) => FlowEntry::default(),
            Err(source) => {
                return Err(EbpfError::Map {
                    action: format!("read {local} -> {remote}"),
                    source,
                })
            }
        };
        // Counter increments between the read and the write are lost: they are diagnostics.
        let entry = FlowEntry {
            window,
            rcv_wscale,
            ..old
        };
        self.windows
            .insert(key, entry, 0)
            .map_err(|source| EbpfError::Map {
                action: format!("set {local} -> {remote}"),
                source,
            })
    }

    /// Removes the flow `local -> remote` (a flow that is not there is not an error).
    pub fn remove(&mut self, local: SocketAddr, remote: SocketAddr) -> Result<(), EbpfError> {
        let key = key(local, remote)?;
        match self.windows.remove(&key) {
            Err(e) if !is_enoent(&e) => Err(EbpfError::Map {
                action: format!("remove {local} -> {remote}"),
                source: e,
            }),
            _ => Ok(()),
        }
    }

    /// Counters of the flow `local -> remote`: (segments seen, segments rewritten).
    pub fn counters(&self, local: SocketAddr, remote: SocketAddr) -> Option<(u64, u64)> {
        let key = FlowKey::from_socket(local, remote)?;
        let entry = self.windows.get(&key, 0).ok()?;
        Some((entry.seen, entry.rewritten))
    }

    /// Number of flows in the map.
    pub fn len(&self) -> usize {
        self.windows.keys().filter(Result::is_ok).count()
    }

    /// Whether the map holds no flow.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn key(local: SocketAddr, remote: SocketAddr) -> Result<FlowKey, EbpfError> {
    FlowKey::from_socket(local, remote).ok_or(EbpfError::FamilyMismatch { local, remote })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_per_link_type() {
        assert_eq!(program_for(1), Some(PROG_ETH));
        assert_eq!(program_for(772), Some(PROG_ETH));
        assert_eq!(program_for(65534), Some(PROG_L3));
        assert_eq!(program_for(519), Some(PROG_L3));
        assert_eq!(program_for(768), None); // ipip: not supported
    }

    #[test]
    fn not_built_message_names_the_fix() {
        let e = EbpfError::NotBuilt(
            "clang was not available at build time (apt install clang libbpf-dev)",
        );
        assert_eq!(
            e.to_string(),
            "eBPF object not built: clang was not available at build time (apt install clang libbpf-dev)"
        );
    }
}
