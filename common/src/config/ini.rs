//! Line lexer for wg-quick syntax: `[Section]` headers and `Key = Value` entries with line numbers.
//!
//! As wg-quick: everything from `#` to the end of the line is a comment, whitespace around keys,
//! values and section names is ignored, the key ends at the first `=` (base64 values end in `=`).

use super::error::ErrorKind;

/// One meaningful line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item<'a> {
    /// `[Name]`, name trimmed, as written.
    Section { name: &'a str, line: usize },
    /// `Key = Value`, both trimmed; the value may be empty.
    Entry {
        key: &'a str,
        value: &'a str,
        line: usize,
    },
}

/// A line that could not be lexed: its number, the key to report and what is wrong.
pub type LexError = (usize, String, ErrorKind);

/// Lexes the whole text; bad lines are returned as errors and skipped.
pub fn lex(text: &str) -> (Vec<Item<'_>>, Vec<LexError>) {
    let mut items = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let s = raw.split('#').next().unwrap_or("").trim();
        if s.is_empty() {
            continue;
        }
        if let Some(rest) = s.strip_prefix('[') {
            match rest.strip_suffix(']') {
                Some(name) if !name.trim().is_empty() && !name.contains(['[', ']']) => {
                    items.push(Item::Section {
                        name: name.trim(),
                        line,
                    })
                }
                _ => errors.push((
                    line,
                    "-".to_string(),
                    ErrorKind::Syntax(format!("malformed section header {s:?}")),
                )),
            }
            continue;
        }
        match s.split_once('=') {
            Some((k, v)) if is_key(k.trim()) => items.push(Item::Entry {
                key: k.trim(),
                value: v.trim(),
                line,
            }),
            Some((k, _)) => errors.push((
                line,
                "-".to_string(),
                ErrorKind::Syntax(format!("{:?} is not a key name", k.trim())),
            )),
            None => errors.push((
                line,
                "-".to_string(),
                ErrorKind::Syntax(format!(
                    "expected \"Key = Value\" or \"[Section]\", found {:?}",
                    shorten(s)
                )),
            )),
        }
    }
    (items, errors)
}

/// Key names are ASCII letters and digits (wg-quick keys are CamelCase words).
fn is_key(k: &str) -> bool {
    !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn shorten(s: &str) -> String {
    if s.chars().count() > 40 {
        let head: String = s.chars().take(40).collect();
        format!("{head}...")
    } else {
        s.to_string()
    }
}
