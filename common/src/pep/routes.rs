//! Route lines (pure): `ip -o route show` output → `ip route change` arguments for `InitCwnd`,
//! and the output device of an `ip route get` answer.
//!
//! `InitCwnd` is applied to every route of the satellite-side devices (the tunnel, or the WAN
//! without a tunnel): the kernel takes a connection's initial window from its route. The
//! original line is kept so that shutdown puts the route back as it was.

/// Tokens `ip route show` prints that `ip route change` does not accept (flags, or state).
const OUTPUT_ONLY: &[&str] = &[
    "linkdown",
    "dead",
    "offload",
    "trap",
    "rt_offload",
    "rt_trap",
    "rt_offload_failed",
];

/// One route rewritten with `initcwnd`: the arguments to apply and to restore (after `ip`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteChange {
    pub apply: Vec<String>,
    pub restore: Vec<String>,
}

/// `line` is one line of `ip -o [-6] route show dev DEV` (the device is not printed).
/// `None` for routes that cannot be rewritten safely (expiring, multipath, broadcast/local),
/// and for IPv6 link-local and multicast prefixes: every interface has its own `fe80::/64`
/// with the same metric, and `ip -6 route change` replaces the first of them whatever its
/// device (a PEP never connects to a link-local address anyway).
pub fn initcwnd_change(family: &str, line: &str, dev: &str, cwnd: u32) -> Option<RouteChange> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    let first = *toks.first()?;
    if let Some(ipnet::IpNet::V6(n)) = route_prefix(family, line) {
        let a = n.network();
        if a.is_unicast_link_local() || a.is_multicast() {
            return None;
        }
    }
    if [
        "broadcast",
        "local",
        "multicast",
        "anycast",
        "unreachable",
        "blackhole",
    ]
    .contains(&first)
        || toks.iter().any(|t| *t == "expires" || *t == "nexthop")
    {
        return None;
    }
    let mut base: Vec<String> = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t == "initcwnd" || t == "dev" {
            i += 2;
            continue;
        }
        if !OUTPUT_ONLY.contains(&t) {
            base.push(t.to_string());
        }
        i += 1;
    }
    let had = toks
        .iter()
        .position(|t| *t == "initcwnd")
        .and_then(|p| toks.get(p + 1))
        .map(|s| s.to_string());
    let head = |extra: Option<String>| {
        let mut v: Vec<String> = vec![family.into(), "route".into(), "change".into()];
        v.extend(base.iter().cloned());
        v.push("dev".into());
        v.push(dev.into());
        if let Some(c) = extra {
            v.push("initcwnd".into());
            v.push(c);
        }
        v
    };
    Some(RouteChange {
        apply: head(Some(cwnd.to_string())),
        restore: head(had),
    })
}

/// The destination of a route line (`default` is the family's whole space); `None` for lines
/// that are not a plain unicast route.
pub fn route_prefix(family: &str, line: &str) -> Option<ipnet::IpNet> {
    let first = line.split_whitespace().next()?;
    if first == "default" {
        return if family == "-6" {
            "::/0".parse().ok()
        } else {
            "0.0.0.0/0".parse().ok()
        };
    }
    if let Ok(n) = first.parse::<ipnet::IpNet>() {
        return Some(n);
    }
    first
        .parse::<std::net::IpAddr>()
        .ok()
        .map(ipnet::IpNet::from)
}

/// The route's identity in a change (its arguments without `initcwnd`).
pub fn route_key(c: &RouteChange) -> String {
    let a = &c.apply;
    let n = a.iter().position(|t| t == "initcwnd").unwrap_or(a.len());
    a[..n].join(" ")
}

/// The `dev` of an `ip -o route get ADDR` / `ip -o route show default` line.
pub fn route_dev(line: &str) -> Option<String> {
    let toks: Vec<&str> = line.split_whitespace().collect();
    toks.iter()
        .position(|t| *t == "dev")
        .and_then(|p| toks.get(p + 1))
        .map(|s| s.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn route_prefixes_and_keys() {
        let p = |f, l| route_prefix(f, l).map(|n| n.to_string());
        assert_eq!(p("-4", "default via 10.0.0.1 "), Some("0.0.0.0/0".into()));
        assert_eq!(p("-6", "default metric 1024"), Some("::/0".into()));
        assert_eq!(
            p("-4", "10.1.0.0/24 scope link"),
            Some("10.1.0.0/24".into())
        );
        assert_eq!(p("-4", "10.8.0.2 scope link"), Some("10.8.0.2/32".into()));
        assert_eq!(p("-4", "unreachable 10.0.0.0/8"), None);
        let a = initcwnd_change("-4", "10.1.0.0/24 scope link initcwnd 40", "t", 90).unwrap();
        let b = initcwnd_change("-4", "10.1.0.0/24 scope link", "t", 12).unwrap();
        assert_eq!(route_key(&a), route_key(&b));
        assert_eq!(
            route_key(&a),
            "-4 route change 10.1.0.0/24 scope link dev t"
        );
    }

    #[test]
    fn routes_get_initcwnd_and_are_restored_as_they_were() {
        let c = initcwnd_change("-4", "10.2.0.0/24 via 10.99.0.2 ", "wan0", 40).unwrap();
        assert_eq!(
            c.apply,
            s(&[
                "-4",
                "route",
                "change",
                "10.2.0.0/24",
                "via",
                "10.99.0.2",
                "dev",
                "wan0",
                "initcwnd",
                "40"
            ])
        );
        assert_eq!(
            c.restore,
            s(&[
                "-4",
                "route",
                "change",
                "10.2.0.0/24",
                "via",
                "10.99.0.2",
                "dev",
                "wan0"
            ])
        );
        let k = "10.99.0.0/24 proto kernel scope link src 10.99.0.1 linkdown";
        let c = initcwnd_change("-4", k, "wan0", 10).unwrap();
        assert!(!c.apply.contains(&"linkdown".to_string()));
        assert!(c.apply.ends_with(&s(&["dev", "wan0", "initcwnd", "10"])));
        let six = "fd00:2::/64 metric 1024 initcwnd 4 pref medium";
        let c = initcwnd_change("-6", six, "t", 30).unwrap();
        assert_eq!(
            c.apply,
            s(&[
                "-6",
                "route",
                "change",
                "fd00:2::/64",
                "metric",
                "1024",
                "pref",
                "medium",
                "dev",
                "t",
                "initcwnd",
                "30"
            ])
        );
        assert!(
            c.restore.ends_with(&s(&["initcwnd", "4"])),
            "{:?}",
            c.restore
        );
    }

    #[test]
    fn unsafe_routes_are_left_alone() {
        assert_eq!(
            initcwnd_change("-6", "fe80::/64 expires 100sec", "x", 1),
            None
        );
        assert_eq!(
            initcwnd_change("-4", "broadcast 10.0.0.255 proto kernel", "x", 1),
            None
        );
        assert_eq!(initcwnd_change("-4", "", "x", 1), None);
        for ll in [
            "fe80::/64 proto kernel metric 256 pref medium",
            "fe80::/64 proto kernel metric 256 initcwnd 40 pref medium",
            "ff00::/8 metric 256 pref medium",
        ] {
            assert_eq!(initcwnd_change("-6", ll, "t", 40), None, "{ll}");
        }
        assert!(initcwnd_change("-6", "fd00:8::/64 proto kernel metric 256", "t", 40).is_some());
    }

    #[test]
    fn output_device_of_a_route() {
        assert_eq!(
            route_dev("10.2.0.2 via 10.99.0.2 dev wan0 src 10.99.0.1 uid 0 \\    cache "),
            Some("wan0".into())
        );
        assert_eq!(
            route_dev("default via 1.2.3.4 dev eth0 proto dhcp"),
            Some("eth0".into())
        );
        assert_eq!(route_dev("unreachable 1.2.3.4"), None);
    }
}
