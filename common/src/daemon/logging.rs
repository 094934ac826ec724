//! The daemons' log output (wiring, outside the data path): `tracing` to stderr, in colour on a
//! terminal only, and in journald's own form under systemd.
//!
//! Under journald (stderr is `JOURNAL_STREAM`) lines carry no timestamp (the journal stamps
//! them) and start with the syslog priority `<N>` that journald reads, so `journalctl -p
//! warning` filters them. `NO_COLOR` turns colours off on a terminal too.

use std::fmt;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::EnvFilter;

use crate::io::stdio;

/// How log lines look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogStyle {
    /// ANSI colours.
    pub ansi: bool,
    /// A timestamp at the start of each line.
    pub timestamps: bool,
    /// A `<N>` syslog priority prefix (journald).
    pub priority: bool,
}

impl LogStyle {
    /// The style for where stderr goes: colours only on a terminal without `NO_COLOR`; journald
    /// gets plain lines with priorities and without timestamps.
    pub fn choose(terminal: bool, no_color: bool, journal: bool) -> LogStyle {
        LogStyle {
            ansi: terminal && !no_color && !journal,
            timestamps: !journal,
            priority: journal,
        }
    }

    /// The style for this process's stderr and environment.
    pub fn detect() -> LogStyle {
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        LogStyle::choose(
            stdio::stderr_is_terminal(),
            no_color,
            stdio::stderr_is_journal(),
        )
    }
}

/// The syslog priority journald reads from a line's `<N>` prefix.
pub fn priority(level: Level) -> u8 {
    match level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// Prefixes each line of the inner format with its priority.
struct Prioritized<F>(F);

impl<S, N, F> FormatEvent<S, N> for Prioritized<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut w: Writer<'_>,
        ev: &Event<'_>,
    ) -> fmt::Result {
        write!(w, "<{}>", priority(*ev.metadata().level()))?;
        self.0.format_event(ctx, w, ev)
    }
}

/// Installs the global subscriber: stderr, `level` unless `RUST_LOG` says otherwise.
pub fn init(level: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let style = LogStyle::detect();
    let b = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(style.ansi);
    if style.priority {
        let format = tracing_subscriber::fmt::format()
            .without_time()
            .with_ansi(false);
        b.event_format(Prioritized(format)).init();
    } else if style.timestamps {
        b.init();
    } else {
        b.without_time().init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colours_only_on_a_terminal_and_never_in_the_journal() {
        let plain = |s: LogStyle| !s.ansi;
        assert!(LogStyle::choose(true, false, false).ansi);
        assert!(plain(LogStyle::choose(false, false, false)));
        assert!(plain(LogStyle::choose(true, true, false)));
        let j = LogStyle::choose(true, false, true);
        assert_eq!(
            j,
            LogStyle {
                ansi: false,
                timestamps: false,
                priority: true
            }
        );
        assert!(LogStyle::choose(false, false, false).timestamps);
    }

    #[test]
    fn priorities_are_syslog_levels() {
        assert_eq!(priority(Level::ERROR), 3);
        assert_eq!(priority(Level::WARN), 4);
        assert_eq!(priority(Level::INFO), 6);
        assert_eq!(priority(Level::TRACE), 7);
    }
}
