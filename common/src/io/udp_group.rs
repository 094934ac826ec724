//! The outer UDP sockets of the data-path workers: on a fixed ListenPort, one socket per worker in
//! a SO_REUSEPORT group whose classic BPF program hands each datagram to the worker of the peer it
//! is for, so one peer's datagrams are always received, decrypted and written by one worker.
//!
//! The program reads the receiver index of the messages that carry ours (handshake response,
//! cookie reply, data: bytes 4..8, little-endian); its high 24 bits are the peer's slot in the
//! engine (`tunnel::table`), and the datagram goes to socket `slot % n`. Handshake initiations
//! (no index of ours yet) and anything else go where the kernel's 4-tuple hash puts them.
//!
//! SO_REUSEPORT would let a second daemon of the same user join the group on the same port; an
//! abstract unix socket `@starpep-udp/<port>` (per network namespace, like the port) is held as
//! long as the group, so that second daemon fails with "address already in use" as it would without
//! SO_REUSEPORT. A program that binds the port without SO_REUSEPORT conflicts as usual.

use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};

use nix::sys::socket::{setsockopt, sockopt};

use super::{IoError, Udp};

/// The sockets of the data path: `sockets[k]` is worker `k`'s.
pub struct UdpGroup {
    sockets: Vec<Udp>,
    /// Held while the group is bound (see the module comment).
    _lock: Option<UnixDatagram>,
}

impl UdpGroup {
    /// Binds `workers` sockets on `port` (one plain socket when `workers` is 1 or `port` is 0:
    /// an ephemeral port could land in another group's port, and a box without ListenPort has
    /// one peer, whose datagrams one worker receives anyway).
    pub fn bind(port: u16, fwmark: Option<u32>, workers: usize) -> Result<UdpGroup, IoError> {
        if workers <= 1 || port == 0 {
            return Ok(UdpGroup {
                sockets: vec![Udp::bind(port, fwmark)?],
                _lock: None,
            });
        }
        let lock = lock_port(port)?;
        let first = Udp::open(port, fwmark, None, true)?;
        let mut sockets = vec![first];
        let v6 = sockets[0].is_v6();
        for _ in 1..workers {
            sockets.push(Udp::open(port, fwmark, Some(v6), true)?);
        }
        let prog = steering_program(workers as u32);
        let fprog = libc::sock_fprog {
            len: prog.len() as u16,
            filter: prog.as_ptr() as *mut libc::sock_filter,
        };
        setsockopt(&sockets[0], sockopt::AttachReusePortCbpf, &fprog).map_err(|e| {
            IoError::sys(
                format!("udp port {port}: SO_ATTACH_REUSEPORT_CBPF"),
                e.into(),
            )
        })?;
        Ok(UdpGroup {
            sockets,
            _lock: Some(lock),
        })
    }

    /// Worker `k`'s socket (sockets are shared round-robin when there are fewer than workers).
    pub fn socket(&self, k: usize) -> &Udp {
        &self.sockets[k % self.sockets.len()]
    }

    /// How many sockets (receiving workers) the group has.
    pub fn len(&self) -> usize {
        self.sockets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sockets.is_empty()
    }

    /// The bound port.
    pub fn port(&self) -> u16 {
        self.sockets[0].port()
    }

    pub fn gro_enabled(&self) -> bool {
        self.sockets[0].gro_enabled()
    }
}

/// Takes `@starpep-udp/<port>`; "address already in use" if another daemon here holds it.
fn lock_port(port: u16) -> Result<UnixDatagram, IoError> {
    let name = format!("starpep-udp/{port}");
    SocketAddr::from_abstract_name(name.as_bytes())
        .and_then(|a| UnixDatagram::bind_addr(&a))
        .map_err(|e| {
            let e = if e.kind() == io::ErrorKind::AddrInUse {
                io::Error::new(
                    e.kind(),
                    "address already in use (another daemon listens on it here)",
                )
            } else {
                e
            };
            IoError::sys(format!("bind udp port {port} (lock @{name})"), e)
        })
}

const LD_ABS_B: u16 = (libc::BPF_LD | libc::BPF_B | libc::BPF_ABS) as u16;
const JGE_K: u16 = (libc::BPF_JMP | libc::BPF_JGE | libc::BPF_K) as u16;
const LSH_K: u16 = (libc::BPF_ALU | libc::BPF_LSH | libc::BPF_K) as u16;
const OR_X: u16 = (libc::BPF_ALU | libc::BPF_OR | libc::BPF_X) as u16;
const MOD_K: u16 = (libc::BPF_ALU | libc::BPF_MOD | libc::BPF_K) as u16;
const TAX: u16 = (libc::BPF_MISC | libc::BPF_TAX) as u16;
const RET_A: u16 = (libc::BPF_RET | libc::BPF_A) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;

fn op(code: u16, k: u32) -> libc::sock_filter {
    jump(code, k, 0, 0)
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The reuseport program for `n` sockets (the kernel runs it with the packet data starting at
/// the UDP payload; a result `>= n` makes it fall back to its hash).
fn steering_program(n: u32) -> Vec<libc::sock_filter> {
    vec![
        op(LD_ABS_B, 0),       // A = message type
        jump(JGE_K, 5, 12, 0), // unknown type: fall back
        jump(JGE_K, 2, 0, 11), // 2 (response), 3 (cookie), 4 (data): ours; else fall back
        op(LD_ABS_B, 7),       // slot = idx >> 8 = b5 | b6 << 8 | b7 << 16
        op(LSH_K, 16),
        op(TAX, 0),
        op(LD_ABS_B, 6),
        op(LSH_K, 8),
        op(OR_X, 0),
        op(TAX, 0),
        op(LD_ABS_B, 5),
        op(OR_X, 0),
        op(MOD_K, n),
        op(RET_A, 0),
        op(RET_K, n), // out of range: the kernel's 4-tuple hash
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::udp::RecvBatch;
    use std::net::{Ipv4Addr, UdpSocket};
    use std::time::{Duration, Instant};

    /// A port free right now (bound and released).
    fn free_port() -> u16 {
        UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    }

    fn message(kind: u8, slot: u32, counter: u8) -> Vec<u8> {
        let idx = (slot << 8) | 0x5a;
        let mut m = vec![kind, 0, 0, 0];
        m.extend_from_slice(&idx.to_le_bytes());
        m.extend_from_slice(&[counter; 24]);
        m
    }

    /// Reads every socket of `g` until `want` datagrams arrived; (socket, datagram) in order.
    fn drain(g: &UdpGroup, want: usize) -> Vec<(usize, Vec<u8>)> {
        let mut got = Vec::new();
        let mut batch = RecvBatch::new(8);
        let mut bufs = vec![vec![0u8; 2048]; 8];
        let end = Instant::now() + Duration::from_secs(10);
        while got.len() < want && Instant::now() < end {
            for k in 0..g.len() {
                let s = g.socket(k);
                // Short waits: the sockets block up to 200 ms.
                if let Ok(n) = s.recv(&mut batch, &mut bufs) {
                    for (i, b) in bufs.iter().enumerate().take(n) {
                        let len = batch.len(i);
                        if len == 0 {
                            got.push((k, Vec::new()));
                        }
                        let seg = batch.gro_segment(i).unwrap_or(len).max(1);
                        got.extend(b[..len].chunks(seg).map(|c| (k, c.to_vec())));
                    }
                }
            }
        }
        got
    }

    #[test]
    fn each_peer_slot_is_received_by_one_socket_in_order() {
        let port = free_port();
        let g = UdpGroup::bind(port, None, 3).unwrap();
        assert_eq!((g.len(), g.port()), (3, port));
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let mut sent = Vec::new();
        for counter in 0..20u8 {
            for slot in [0u32, 1, 2, 3, 4, 7, 0x12345] {
                for kind in [2u8, 3, 4] {
                    let m = message(kind, slot, counter);
                    tx.send_to(&m, (Ipv4Addr::LOCALHOST, port)).unwrap();
                    sent.push(m);
                }
            }
        }
        let got = drain(&g, sent.len());
        assert_eq!(got.len(), sent.len());
        for (k, m) in &got {
            let slot = u32::from_le_bytes([m[5], m[6], m[7], 0]);
            assert_eq!(*k, slot as usize % 3, "slot {slot} on socket {k}");
        }
        // Per slot, the datagrams come out in the order they were sent.
        for slot in [0u32, 4, 0x12345] {
            let of = |v: &[Vec<u8>]| -> Vec<Vec<u8>> {
                v.iter()
                    .filter(|m| u32::from_le_bytes([m[5], m[6], m[7], 0]) == slot)
                    .cloned()
                    .collect()
            };
            let got: Vec<Vec<u8>> = got.iter().map(|(_, m)| m.clone()).collect();
            assert_eq!(of(&got), of(&sent), "slot {slot}");
        }
    }

    #[test]
    fn initiations_and_garbage_still_arrive() {
        let port = free_port();
        let g = UdpGroup::bind(port, None, 2).unwrap();
        let tx = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        for m in [message(1, 9, 0), vec![4, 0], vec![200; 40], vec![]] {
            tx.send_to(&m, (Ipv4Addr::LOCALHOST, port)).unwrap();
        }
        assert_eq!(drain(&g, 4).len(), 4);
    }

    #[test]
    fn a_second_group_or_socket_on_the_port_is_refused() {
        let port = free_port();
        let g = UdpGroup::bind(port, None, 2).unwrap();
        let e = UdpGroup::bind(port, None, 2).err().expect("second group");
        assert!(e.to_string().contains("address already in use"), "{e}");
        // Without SO_REUSEPORT (one worker, or another program): the kernel refuses.
        let e = UdpGroup::bind(port, None, 1).err().expect("plain socket");
        assert!(e.to_string().contains("in use"), "{e}");
        drop(g);
        // Released with the group.
        assert_eq!(UdpGroup::bind(port, None, 2).unwrap().len(), 2);
    }

    #[test]
    fn without_a_fixed_port_or_with_one_worker_one_socket() {
        assert_eq!(UdpGroup::bind(0, None, 4).unwrap().len(), 1);
        let g = UdpGroup::bind(free_port(), None, 1).unwrap();
        assert_eq!(g.len(), 1);
        assert!(std::ptr::eq(g.socket(0), g.socket(3)));
    }
}
