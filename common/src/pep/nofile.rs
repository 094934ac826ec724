//! Descriptor budget (pure): how many split flows the process's `RLIMIT_NOFILE` allows.
//!
//! A split flow holds two sockets and, with splice, two pipes (four descriptors): six. The
//! daemon needs some more for itself (listeners, TUN, UDP, epoll, the control socket, eBPF maps,
//! and the pipes of the `nft`/`ip` commands it runs, including the one that pauses
//! interception). The flow table's limit is the smaller of `MaxFlows` and what the descriptors
//! allow, so a low limit makes new flows pass unsplit (the `MaxFlows` pause) before `accept`
//! or `pipe` fail; the shell re-reads the limit, so a limit changed at run time (`prlimit`)
//! moves the budget too.

/// Descriptors of one split flow: two sockets, and two pipes with splice.
pub fn fds_per_flow(splice: bool) -> u64 {
    if splice {
        6
    } else {
        2
    }
}

/// Descriptors kept for the daemon itself.
pub const RESERVE: u64 = 64;

/// The split flows a soft `RLIMIT_NOFILE` of `nofile` leaves room for (at least 1).
pub fn flow_budget(nofile: u64, splice: bool) -> usize {
    let n = nofile.saturating_sub(RESERVE) / fds_per_flow(splice);
    n.clamp(1, usize::MAX as u64) as usize
}

/// The flow table's limit: `MaxFlows`, or less when the descriptors allow less.
pub fn table_limit(max_flows: usize, nofile: u64, splice: bool) -> usize {
    max_flows.min(flow_budget(nofile, splice))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_leaves_the_reserve_and_counts_six_descriptors_per_spliced_flow() {
        assert_eq!(flow_budget(1024, true), 160);
        assert_eq!(flow_budget(1024, false), 480);
        assert_eq!(flow_budget(192, true), 21);
        assert_eq!(
            flow_budget(10, true),
            1,
            "never zero: the table needs room for one"
        );
        assert_eq!(
            flow_budget(u64::MAX, true),
            (u64::MAX - RESERVE) as usize / 6
        );
        assert_eq!(table_limit(4096, 1 << 20, true), 4096);
        assert_eq!(table_limit(4096, 1024, true), 160);
    }
}
