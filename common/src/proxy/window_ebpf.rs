//! The eBPF window back-end: a tc egress program on the sender-facing interfaces lowers the
//! window of the PEP's segments toward the sender to `min(original, W >> rcv_wscale)`
//! (`starpep-ebpf`); this side keeps its per-flow map entries.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;

use starpep_ebpf::WindowRewriter;

use crate::io::cmd;
use crate::pep::{Plan, TcpInfo};

use super::error::ProxyError;
use super::window::{Controlled, WindowBackend};

/// The loaded program, its map and what each flow was last given.
pub struct EbpfBackend {
    rw: Mutex<WindowRewriter>,
    last: Mutex<HashMap<(SocketAddr, SocketAddr), (u32, u8)>>,
}

/// The interfaces of this namespace that face senders: all but `lo` and the satellite side.
fn sender_facing(plan: &Plan) -> Result<Vec<String>, ProxyError> {
    let out = cmd::ip(&["-o", "link", "show"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split(':').nth(1))
        .map(|n| n.trim().split('@').next().unwrap_or("").to_string())
        .filter(|n| !n.is_empty() && n != "lo" && !plan.satellite_devs.contains(n))
        .collect())
}

impl EbpfBackend {
    /// Loads the program and attaches it on every sender-facing interface.
    pub fn start(plan: &Plan) -> Result<EbpfBackend, ProxyError> {
        let mut rw = WindowRewriter::load()?;
        let ifaces = sender_facing(plan)?;
        if ifaces.is_empty() {
            return Err(ProxyError::sys(
                "attach the eBPF window program",
                std::io::Error::other("no sender-facing interface"),
            ));
        }
        for i in &ifaces {
            rw.attach(i)?;
        }
        tracing::info!("StarPEP window back-end: eBPF (tc egress on {ifaces:?})");
        Ok(EbpfBackend {
            rw: Mutex::new(rw),
            last: Mutex::new(HashMap::new()),
        })
    }
}

impl WindowBackend for EbpfBackend {
    fn name(&self) -> &'static str {
        "ebpf"
    }

    fn apply(&self, flow: &Controlled<'_>, info: &TcpInfo, window: u32) -> Result<(), ProxyError> {
        let key = (flow.local, flow.remote);
        let val = (window, info.rcv_wscale);
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if last.get(&key) == Some(&val) {
            return Ok(());
        }
        self.rw.lock().unwrap_or_else(|e| e.into_inner()).set(
            flow.local,
            flow.remote,
            window,
            info.rcv_wscale,
        )?;
        last.insert(key, val);
        Ok(())
    }

    fn release(&self, flow: &Controlled<'_>) {
        let key = (flow.local, flow.remote);
        self.last
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&key);
        if let Err(e) = self
            .rw
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(flow.local, flow.remote)
        {
            tracing::debug!("{e}");
        }
    }

    fn socket_window(&self, info: &TcpInfo) -> Option<u32> {
        // The kernel's own window, before the rewrite: the rewrite can only lower it.
        info.rcv_wnd
    }
}
