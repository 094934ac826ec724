//! Hysteresis for what the shell writes to the kernel (pure): a socket option (`SO_SNDBUF`,
//! `SO_RCVBUF`, `SO_MAX_PACING_RATE`) or a route's `initcwnd` is rewritten only when its new
//! value is off the last one by more than an eighth, so small moves cost no system call.

/// Whether `new` is more than an eighth of `last` away from it.
pub fn moved(last: u64, new: u64) -> bool {
    u128::from(last.abs_diff(new)) * 8 > u128::from(last)
}

#[cfg(test)]
mod tests {
    use super::moved;

    #[test]
    fn an_eighth_is_not_a_move_and_more_is() {
        assert!(!moved(800, 800));
        assert!(!moved(800, 900));
        assert!(!moved(800, 700));
        assert!(moved(800, 901));
        assert!(moved(800, 699));
    }

    #[test]
    fn from_zero_any_value_moves_and_extremes_do_not_overflow() {
        assert!(!moved(0, 0));
        assert!(moved(0, 1));
        assert!(moved(u64::MAX, 0));
        assert!(!moved(u64::MAX, u64::MAX - u64::MAX / 8));
    }
}
