//! The suite's `voip` application (socket shell): a G.711 call each way between pc and srv
//! (RTP-sized UDP every 20 ms, `suite::call` encodes the packets and computes the figures),
//! once on the idle bed and once during an owd-bulk download srv → pc started 5 s before it.
//!
//! Both ends run on this host, so the send stamp in each packet (CLOCK_REALTIME) and the
//! kernel's receive stamp (SO_TIMESTAMPNS) give the exact one-way delay.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::Duration;

use crate::calibrate::udp::{recv_stamped, stamp_receptions};
use crate::emu::sys;
use crate::suite::call::{self, Arrival, Probe, PERIOD_MS};
use crate::suite::cell::{Call, CellResult, CellSpec};
use crate::topo::Node;

use super::bed::{Bed, BedSpec};
use super::demo::emulator_counters;
use super::owd::{Transfer, TransferSpec, Way};

/// Both ends' UDP port (the start of the usual RTP range).
const PORT: u16 = 16384;
const SSRC_DOWN: u32 = 0x5350_0001;
const SSRC_UP: u32 = 0x5350_0002;
/// How long the listeners wait after the last packet was sent (queues drain).
const GRACE: Duration = Duration::from_secs(3);
/// The bulk download runs alone this long before the call starts.
const BULK_LEAD: Duration = Duration::from_secs(5);

/// Runs the cell: the idle call, then the call during the download; fills `voip_idle`,
/// `voip_bulk`, the download's `bytes` and `sha256_equal`, and satlink's counters.
pub fn cell(bed: &BedSpec, spec: &CellSpec, c: &mut CellResult) -> anyhow::Result<()> {
    let mut bed = Bed::up(bed)?;
    let length = Duration::from_secs_f64(spec.duration_s);
    c.voip_idle = Some(call(&bed, length)?);
    let download = Transfer::start(
        &bed.topo,
        bed.srv_addr(),
        &TransferSpec {
            way: Way::Down,
            port: 5601,
            duration: BULK_LEAD + length + Duration::from_secs(1),
            cc: &spec.cc,
            samples: None,
        },
    )?;
    std::thread::sleep(BULK_LEAD);
    let busy = call(&bed, length);
    let ends = download.finish()?;
    c.voip_bulk = Some(busy?);
    bed.stop();
    c.bytes = ends.recv["bytes"].as_u64();
    c.sha256_equal = Some(ends.sha256_equal());
    c.emulator = Some(emulator_counters(
        &bed.satlink_stats()?["directions"]["down"],
    ));
    anyhow::ensure!(ends.sha256_equal(), "bulk download: payload sha256 differs");
    Ok(())
}

/// One call of `length`, both directions at once.
pub fn call(bed: &Bed, length: Duration) -> anyhow::Result<Call> {
    let any = SocketAddr::from((Ipv4Addr::UNSPECIFIED, PORT));
    let pc = bed.topo.run_in(Node::Pc, move || UdpSocket::bind(any))??;
    let srv = bed.topo.run_in(Node::Srv, move || UdpSocket::bind(any))??;
    for s in [&pc, &srv] {
        stamp_receptions(s)?;
        s.set_read_timeout(Some(Duration::from_millis(50)))?;
    }
    let count = length.as_millis() as u64 / PERIOD_MS;
    let first = sys::realtime_now() + Duration::from_millis(100);
    let until = first + Duration::from_millis(PERIOD_MS * count) + GRACE;
    let to_srv = SocketAddr::new(bed.srv_addr(), PORT);
    let to_pc = SocketAddr::new(bed.pc_addr(), PORT);
    let (down, up) = std::thread::scope(|s| {
        let tx_down = s.spawn(|| talk(&srv, to_pc, SSRC_DOWN, first, count));
        let tx_up = s.spawn(|| talk(&pc, to_srv, SSRC_UP, first, count));
        let rx_up = s.spawn(|| listen(&srv, SSRC_UP, until));
        let down = listen(&pc, SSRC_DOWN, until);
        let _ = (tx_down.join(), tx_up.join());
        let up = rx_up
            .join()
            .unwrap_or_else(|_| Err(anyhow::anyhow!("listener panicked")));
        (down, up)
    });
    let figures = |arrivals: anyhow::Result<Vec<Arrival>>, way: &str| {
        call::direction(count, &arrivals?)
            .ok_or_else(|| anyhow::anyhow!("voip {way}: not one of {count} packets arrived"))
    };
    Ok(Call {
        down: figures(down, "srv -> pc")?,
        up: figures(up, "pc -> srv")?,
    })
}

/// Sends `count` packets, one every 20 ms from `first` (CLOCK_REALTIME), each stamped as it
/// leaves. A failed send is a packet lost.
fn talk(sock: &UdpSocket, dst: SocketAddr, ssrc: u32, first: Duration, count: u64) {
    let _ = sys::set_precise_timers();
    for i in 0..count {
        sys::sleep_until_realtime(first + Duration::from_millis(PERIOD_MS * i));
        let p = Probe {
            ssrc,
            index: i as u32,
            sent_ns: sys::realtime_now().as_nanos() as u64,
        };
        let _ = sock.send_to(&p.encode(), dst);
    }
}

/// Records the packets of stream `ssrc` until `until` (CLOCK_REALTIME), in arrival order.
fn listen(sock: &UdpSocket, ssrc: u32, until: Duration) -> anyhow::Result<Vec<Arrival>> {
    let mut buf = [0u8; 2048];
    let mut got = Vec::new();
    while sys::realtime_now() < until {
        let Some((len, recv_ns)) = recv_stamped(sock, &mut buf)? else {
            continue;
        };
        if let Some(p) = Probe::decode(&buf[..len]).filter(|p| p.ssrc == ssrc) {
            got.push(Arrival {
                index: p.index,
                sent_ns: p.sent_ns,
                recv_ns,
            });
        }
    }
    Ok(got)
}
