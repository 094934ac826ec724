//! PEP I/O shell: TPROXY listeners, per-flow relays (splice), nftables/policy routing, TCP socket options.
