//! Addressing plan of the standard test topology `pc — box — [sat] — pop — srv` (constants).

use std::net::{Ipv4Addr, Ipv6Addr};

/// The user's PC on the box's LAN.
pub const PC_LAN: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 2);
/// The box's LAN address (the PC's default gateway).
pub const BOX_LAN: Ipv4Addr = Ipv4Addr::new(10, 1, 0, 1);
/// The box's satellite-side (WAN) address.
pub const BOX_WAN: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
/// The POP's satellite-side (WAN) address: the WireGuard endpoint the box talks to.
pub const POP_WAN: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);
/// The POP's LAN address (the server's default gateway).
pub const POP_LAN: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 1);
/// The server behind the POP.
pub const SRV: Ipv4Addr = Ipv4Addr::new(10, 2, 0, 2);

pub const PC_LAN6: Ipv6Addr = Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 2);
pub const BOX_LAN6: Ipv6Addr = Ipv6Addr::new(0xfd00, 1, 0, 0, 0, 0, 0, 1);
pub const BOX_WAN6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, 1);
pub const POP_WAN6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0x99, 0, 0, 0, 0, 0, 2);
pub const POP_LAN6: Ipv6Addr = Ipv6Addr::new(0xfd00, 2, 0, 0, 0, 0, 0, 1);
pub const SRV6: Ipv6Addr = Ipv6Addr::new(0xfd00, 2, 0, 0, 0, 0, 0, 2);

/// The PC's LAN prefix and the server's LAN prefix, as route arguments.
pub const PC_NET: &str = "10.1.0.0/24";
pub const PC_NET6: &str = "fd00:1::/64";
pub const SRV_NET: &str = "10.2.0.0/24";
pub const SRV_NET6: &str = "fd00:2::/64";

/// A VPN tunnel's own addresses (every VPN setup uses the same plan): the far end (the POP, or
/// srv when the endpoints run on the end hosts) and the near end (the box, or pc).
pub const TUN_FAR: Ipv4Addr = Ipv4Addr::new(10, 8, 0, 1);
pub const TUN_NEAR: Ipv4Addr = Ipv4Addr::new(10, 8, 0, 2);
pub const TUN_NET: &str = "10.8.0.0/24";
/// The UDP port the far WireGuard endpoint listens on.
pub const WG_PORT: u16 = 51820;

/// Interface names inside the namespaces (the same name may exist in several namespaces).
pub const LAN_IF: &str = "lan0";
pub const WAN_IF: &str = "wan0";
/// In `sat`: the veth toward the POP (satlink's `--left`, the downlink source).
pub const SAT_POP_IF: &str = "pop0";
/// In `sat`: the veth toward the box (satlink's `--right`).
pub const SAT_BOX_IF: &str = "box0";
/// In `ter`: the veth toward the POP (the terrestrial satlink's `--left`) ...
pub const TER_POP_IF: &str = "pop1";
/// ... and toward the server.
pub const TER_SRV_IF: &str = "srv1";
