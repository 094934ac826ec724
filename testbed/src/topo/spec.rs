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
    /// A server on the Internet side of the POP.
    Srv,
}

impl Node {
    pub const ALL: [Node; 5] = [Node::Pc, Node::Box, Node::Sat, Node::Pop, Node::Srv];

    pub fn short(self) -> &'static str {
        match self {
            Node::Pc => "pc",
            Node::Box => "box",
            Node::Sat => "sat",
            Node::Pop => "pop",
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
}

impl TopoSpec {
    pub fn direct() -> TopoSpec {
        TopoSpec {
            wan: Wan::Direct,
            plain_routes: false,
        }
    }

    pub fn satlink() -> TopoSpec {
        TopoSpec {
            wan: Wan::Satlink,
            plain_routes: false,
        }
    }

    pub fn with_plain_routes(mut self) -> TopoSpec {
        self.plain_routes = true;
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
