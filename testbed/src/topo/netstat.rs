//! The kernel's per-namespace TCP counters (`/proc/net/netstat`), read by tests beside a path.

/// The `TcpExt` counter `name` in the text of `/proc/net/netstat`; `None` if the kernel has no
/// such counter (or the text no `TcpExt` section).
pub fn tcp_ext(netstat: &str, name: &str) -> Option<u64> {
    let mut lines = netstat.lines().filter(|l| l.starts_with("TcpExt:"));
    let (names, values) = (lines.next()?, lines.next()?);
    names
        .split_whitespace()
        .zip(values.split_whitespace())
        .find(|(n, _)| *n == name)
        .and_then(|(_, v)| v.parse().ok())
}

#[cfg(test)]
mod tests {
    use super::tcp_ext;

    const TEXT: &str = "TcpExt: SyncookiesSent PruneCalled TCPRcvQDrop\n\
                        TcpExt: 3 0 17\n\
                        IpExt: InNoRoutes\n\
                        IpExt: 9\n";

    #[test]
    fn a_counter_is_read_from_its_column() {
        assert_eq!(tcp_ext(TEXT, "SyncookiesSent"), Some(3));
        assert_eq!(tcp_ext(TEXT, "TCPRcvQDrop"), Some(17));
        assert_eq!(tcp_ext(TEXT, "PruneCalled"), Some(0));
    }

    #[test]
    fn an_unknown_counter_or_section_is_none() {
        assert_eq!(tcp_ext(TEXT, "InNoRoutes"), None);
        assert_eq!(tcp_ext("IpExt: A\nIpExt: 1\n", "A"), None);
        assert_eq!(tcp_ext("TcpExt: A\n", "A"), None);
    }
}
