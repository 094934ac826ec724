//! What a test topology is made of: its nodes, how box and POP are joined, and its errors.

/// Errors of the topology layer; each names the command or step that failed.
#[derive(Debug, thiserror::Error)]
pub enum TopoError {
    #[error("{what}: exit {status:?}: {stderr}")]
    Failed {
        what: String,
        status: Option<i32>,
        stderr: String,
    },
    #[error("{what}: {source}")]
    Spawn {
        what: String,
        source: std::io::Error,
    },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("node {0:?} is not part of this topology")]
    NoSuchNode(Node),
    #[error("no TcpExt counter {name} in {node:?}'s /proc/net/netstat")]
    NoCounter { node: Node, name: String },
}

/// The hosts of the standard topology.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Node {
    /// The user's PC behind the box.
    Pc,
    /// The customer terminal box (client endpoint, box-side PEP).
    Box,
    /// The satellite link: satlink runs here (only with [`Wan::Satlink`]).
    Sat,
    /// The operator's POP (POP endpoint, POP-side PEP).
    Pop,
    /// The terrestrial path between POP and server: a second satlink adds a constant RTT
    /// (only with [`TopoSpec::server_rtt`]).
    Ter,
    /// A server on the Internet side of the POP.
    Srv,
}

impl Node {
    pub const ALL: [Node; 6] = [
        Node::Pc,
        Node::Box,
        Node::Sat,
        Node::Pop,
        Node::Ter,
        Node::Srv,
    ];

    pub fn short(self) -> &'static str {
        match self {
            Node::Pc => "pc",
            Node::Box => "box",
            Node::Sat => "sat",
            Node::Pop => "pop",
            Node::Ter => "ter",
            Node::Srv => "srv",
        }
    }
}

/// How box and POP are joined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Wan {
    /// A bare veth `box wan0 <-> pop wan0` (no emulation).
    Direct,
    /// `box wan0 <-> sat box0 | sat pop0 <-> pop wan0`: a middle namespace with no addresses
    /// and IPv6 off, where satlink moves frames ([`Topology::spawn_satlink`]). Offloads are off
    /// on all four interfaces so frames are real MTU-sized packets.
    Satlink,
}

/// What to build.
#[derive(Debug, Clone)]
pub struct TopoSpec {
    pub wan: Wan,
    /// Routes over the WAN between the two LANs (box → 10.2.0.0/24, pop → 10.1.0.0/24, and
    /// the IPv6 pair), for setups without a VPN. Leave off when the tunnel adds its own routes.
    pub plain_routes: bool,
    /// A constant round trip between POP and server (`pop lan0 <-> ter pop1 | ter srv1 <->
    /// srv lan0`, satlink in `ter`: [`super::Topology::spawn_terrestrial`]); `None`: a bare veth.
    pub server_rtt: Option<std::time::Duration>,
}

impl TopoSpec {
    pub fn direct() -> TopoSpec {
        TopoSpec {
            wan: Wan::Direct,
            plain_routes: false,
            server_rtt: None,
        }
    }

    pub fn satlink() -> TopoSpec {
        TopoSpec {
            wan: Wan::Satlink,
            plain_routes: false,
            server_rtt: None,
        }
    }

    pub fn with_plain_routes(mut self) -> TopoSpec {
        self.plain_routes = true;
        self
    }

    /// A constant RTT between POP and server (zero: none).
    pub fn with_server_rtt(mut self, rtt: std::time::Duration) -> TopoSpec {
        self.server_rtt = (!rtt.is_zero()).then_some(rtt);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_names_are_distinct() {
        let names: std::collections::HashSet<_> = Node::ALL.iter().map(|n| n.short()).collect();
        assert_eq!(names.len(), Node::ALL.len());
    }
}
