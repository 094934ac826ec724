//! The parser proper: lexed items → `Config`, collecting every error of the file (pure).

use std::collections::HashMap;

use super::error::{ConfigError, ConfigErrors, ErrorKind};
use super::ini::{lex, Item};
use super::model::Config;
use super::pep_parse::PepBuilder;
use super::sections::{iface_entry, peer_entry, IfaceBuilder, PeerBuilder};
use super::values::ValueResult;

/// Error sink for one file.
pub(super) struct Ctx<'f> {
    pub file: &'f str,
    pub errors: Vec<ConfigError>,
}

impl Ctx<'_> {
    pub fn err(&mut self, line: usize, key: &str, kind: ErrorKind) {
        self.errors
            .push(ConfigError::new(self.file, line, key, kind));
    }

    /// Unwraps a value parser's result, recording its message on error.
    pub fn value<T>(&mut self, line: usize, key: &str, r: ValueResult<T>) -> Option<T> {
        r.map_err(|m| self.err(line, key, ErrorKind::Invalid(m)))
            .ok()
    }
}

/// First line of each single-valued key seen in a section.
#[derive(Default)]
pub(super) struct Seen(HashMap<&'static str, usize>);

impl Seen {
    /// `true` the first time; afterwards records a `DuplicateKey` error and returns `false`.
    pub fn first(&mut self, ctx: &mut Ctx<'_>, key: &'static str, line: usize) -> bool {
        match self.0.get(key) {
            Some(&first_line) => {
                ctx.err(line, key, ErrorKind::DuplicateKey { first_line });
                false
            }
            None => {
                self.0.insert(key, line);
                true
            }
        }
    }
}

/// The canonical spelling of `key` among `known`, compared case-insensitively.
pub(super) fn canonical(known: &[&'static str], key: &str) -> Option<&'static str> {
    known.iter().copied().find(|k| k.eq_ignore_ascii_case(key))
}

/// A section's key table.
pub(super) struct SectionSpec {
    pub name: &'static str,
    pub known: &'static [&'static str],
    /// Keys that may be given several times (their values accumulate).
    pub multi: &'static [&'static str],
}

enum Current {
    None,
    Skip,
    Iface,
    Peer(Box<PeerBuilder>),
    Pep,
}

/// Parses one file's text; `file_name` is used in error messages and `Config::file`.
pub fn parse(file_name: &str, text: &str) -> Result<Config, ConfigErrors> {
    let mut ctx = Ctx {
        file: file_name,
        errors: Vec::new(),
    };
    let (items, lex_errors) = lex(text);
    for (line, key, kind) in lex_errors {
        ctx.err(line, &key, kind);
    }
    let mut iface: Option<IfaceBuilder> = None;
    let mut pep: Option<PepBuilder> = None;
    let mut peers: Vec<PeerBuilder> = Vec::new();
    let mut cur = Current::None;
    for item in items {
        match item {
            Item::Section { name, line } => {
                if let Current::Peer(p) = std::mem::replace(&mut cur, Current::Skip) {
                    peers.push(*p);
                }
                cur = open_section(&mut ctx, name, line, &mut iface, &mut pep);
            }
            Item::Entry { key, value, line } => match &mut cur {
                Current::None => ctx.err(line, key, ErrorKind::KeyOutsideSection),
                Current::Skip => {}
                Current::Iface => {
                    if let Some(b) = iface.as_mut() {
                        iface_entry(&mut ctx, b, key, value, line);
                    }
                }
                Current::Peer(b) => peer_entry(&mut ctx, b, key, value, line),
                Current::Pep => {
                    if let Some(b) = pep.as_mut() {
                        b.entry(&mut ctx, key, value, line);
                    }
                }
            },
        }
    }
    if let Current::Peer(p) = cur {
        peers.push(*p);
    }
    let config = finish(&mut ctx, iface, peers, pep);
    let mut errors = ctx.errors;
    match config {
        Some(c) if errors.is_empty() => return Ok(c),
        // `finish` returns `None` only after recording why (no [Interface]).
        _ => debug_assert!(!errors.is_empty()),
    }
    errors.sort_by_key(|e| e.line);
    Err(ConfigErrors(errors))
}

fn open_section(
    ctx: &mut Ctx<'_>,
    name: &str,
    line: usize,
    iface: &mut Option<IfaceBuilder>,
    pep: &mut Option<PepBuilder>,
) -> Current {
    match name.to_ascii_lowercase().as_str() {
        "interface" => match iface {
            Some(b) => {
                let first_line = b.line;
                ctx.err(
                    line,
                    "[Interface]",
                    ErrorKind::DuplicateSection { first_line },
                );
                Current::Skip
            }
            None => {
                *iface = Some(IfaceBuilder::new(line));
                Current::Iface
            }
        },
        "peer" => Current::Peer(Box::new(PeerBuilder::new(line))),
        "pep" => match pep {
            Some(b) => {
                let first_line = b.line();
                ctx.err(line, "[PEP]", ErrorKind::DuplicateSection { first_line });
                Current::Skip
            }
            None => {
                *pep = Some(PepBuilder::new(line));
                Current::Pep
            }
        },
        _ => {
            ctx.err(line, &format!("[{name}]"), ErrorKind::UnknownSection);
            Current::Skip
        }
    }
}

/// Resolves the key, checks duplicates and emptiness; `None` if the entry is already reported.
pub(super) fn check_key(
    ctx: &mut Ctx<'_>,
    seen: &mut Seen,
    spec: &SectionSpec,
    key: &str,
    value: &str,
    line: usize,
) -> Option<&'static str> {
    let Some(k) = canonical(spec.known, key) else {
        let section = spec.name;
        ctx.err(line, key, ErrorKind::UnknownKey { section });
        return None;
    };
    if !spec.multi.contains(&k) && !seen.first(ctx, k, line) {
        return None;
    }
    if value.is_empty() {
        ctx.err(line, k, ErrorKind::EmptyValue);
        return None;
    }
    Some(k)
}

/// Checks that need the whole file; returns the config if the required parts exist.
fn finish(
    ctx: &mut Ctx<'_>,
    iface: Option<IfaceBuilder>,
    peers: Vec<PeerBuilder>,
    pep: Option<PepBuilder>,
) -> Option<Config> {
    let pep = pep.map(|b| b.finish(ctx));
    let Some(ib) = iface else {
        ctx.err(0, "-", ErrorKind::MissingSection("Interface"));
        return None;
    };
    if !ib.key_given {
        ctx.err(
            ib.line,
            "PrivateKey",
            ErrorKind::MissingKey {
                section: "Interface",
            },
        );
    }
    if let Some(m) = ib.iface.mtu.filter(|&m| m < 1280) {
        if ib.iface.addresses.iter().any(|a| a.addr().is_ipv6()) {
            let msg = format!("{m} is below 1280, the IPv6 minimum (an IPv6 Address is set)");
            ctx.err(ib.mtu_line, "MTU", ErrorKind::Invalid(msg));
        }
    }
    let own = ib.has_key.then(|| ib.iface.private_key.public_key());
    let mut first_seen = HashMap::new();
    let mut out = Vec::with_capacity(peers.len());
    for pb in peers {
        if !pb.has_key {
            ctx.err(
                pb.peer.line,
                "PublicKey",
                ErrorKind::MissingKey { section: "Peer" },
            );
            continue;
        }
        if pb.key_line == 0 {
            continue; // bad key, already reported
        }
        if own == Some(pb.peer.public_key) {
            ctx.err(pb.key_line, "PublicKey", ErrorKind::OwnPublicKey);
        }
        if let Some(&first_line) = first_seen.get(&pb.peer.public_key) {
            ctx.err(
                pb.key_line,
                "PublicKey",
                ErrorKind::DuplicatePeer { first_line },
            );
        } else {
            first_seen.insert(pb.peer.public_key, pb.key_line);
        }
        out.push(pb.peer);
    }
    Some(Config {
        file: ctx.file.to_string(),
        interface: ib.iface,
        peers: out,
        pep,
    })
}
