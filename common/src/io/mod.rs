//! I/O layer: TUN, UDP sockets, routes, nftables and socket options (the only place with syscalls).
