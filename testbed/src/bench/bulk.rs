//! The suite's `bulk` application beyond the owd-bulk download (`demo::one`): an iperf3 `-J`
//! download srv → pc for throughput, then an owd-bulk upload pc → srv, one after the other on
//! a bed of their own (so neither overlaps the owd-bulk download nor its satlink counters).

use std::time::Duration;

use crate::suite::cell::CellResult;
use crate::topo::Node;

use super::bed::{Bed, BedSpec};
use super::iperf::{self, IperfSpec};
use super::owd::{Transfer, TransferSpec, Way};

/// Fills `iperf_goodput_mbps` and `upload_mbps` (each a transfer of the cell's duration).
pub fn download_iperf_and_upload(bed: &BedSpec, c: &mut CellResult) -> anyhow::Result<()> {
    let (length, cc) = (c.spec.duration_s, c.spec.cc.clone());
    let mut bed = Bed::up(bed)?;
    let srv = bed.srv_addr().to_string();
    let secs = length.ceil() as u32;
    let down = iperf::run(
        &bed.topo,
        &IperfSpec {
            client: Node::Pc,
            server: Node::Srv,
            server_addr: &srv,
            bind: None,
            port: 5201,
            secs,
            omit: 0,
            cc: &cc,
            reverse: true,
        },
        || {},
    )?;
    c.iperf_goodput_mbps = Some(down.bits_per_second / 1e6);
    let up = Transfer::start(
        &bed.topo,
        bed.srv_addr(),
        &TransferSpec {
            way: Way::Up,
            port: 5602,
            duration: Duration::from_secs_f64(length),
            cc: &cc,
            samples: None,
        },
    )?
    .finish()?;
    bed.stop();
    anyhow::ensure!(up.sha256_equal(), "upload: payload sha256 differs");
    c.upload_mbps = up.recv["goodput_mbps"].as_f64();
    Ok(())
}
