//! Configuration errors: every one names the file, the line and the key (`box.conf:7: PublicKey: ...`).
//!
//! Conventions: an error about one `Key = Value` line carries that line and the key's canonical
//! spelling; an error about a section as a whole (a missing required key, a duplicate section)
//! carries the line of the section header; an error about the file as a whole (it cannot be read,
//! it has no `[Interface]`, its name is not a valid interface name) carries line 0 and key `-`.

use std::fmt;
use std::path::PathBuf;

/// What went wrong, without the location (see [`ConfigError`]).
#[derive(Debug, thiserror::Error)]
pub enum ErrorKind {
    /// The file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A line that is neither `[Section]`, `Key = Value`, a comment nor blank.
    #[error("{0}")]
    Syntax(String),
    /// A `[Section]` other than `[Interface]`, `[Peer]` and `[PEP]`.
    #[error("unknown section (expected [Interface], [Peer] or [PEP])")]
    UnknownSection,
    /// A key the section does not define.
    #[error("unknown key in [{section}]")]
    UnknownKey { section: &'static str },
    /// A `Key = Value` line before the first section header.
    #[error("key outside of any section")]
    KeyOutsideSection,
    /// A single-valued key given twice in one section.
    #[error("duplicate key (first given at line {first_line})")]
    DuplicateKey { first_line: usize },
    /// A section that may appear only once, given twice.
    #[error("duplicate section (first given at line {first_line})")]
    DuplicateSection { first_line: usize },
    /// A required key is missing from its section.
    #[error("missing in [{section}] (required)")]
    MissingKey { section: &'static str },
    /// A required section is missing from the file.
    #[error("missing [{0}] section")]
    MissingSection(&'static str),
    /// `Key =` with nothing after the `=`.
    #[error("empty value")]
    EmptyValue,
    /// The value does not parse or is out of range; the text says which and why.
    #[error("{0}")]
    Invalid(String),
    /// Two peers with the same public key.
    #[error("duplicate peer public key (first given at line {first_line})")]
    DuplicatePeer { first_line: usize },
    /// A peer whose public key is the interface's own.
    #[error("peer public key equals this interface's own public key")]
    OwnPublicKey,
    /// A value reserved for a later release.
    #[error("{0}")]
    Unsupported(String),
    /// The file name does not give a valid interface name (see `interface_name`).
    #[error("{0}")]
    InterfaceName(String),
}

/// One configuration error with its location. Display: `FILE:LINE: KEY: MESSAGE`.
#[derive(Debug, thiserror::Error)]
#[error("{file}:{line}: {key}: {kind}")]
pub struct ConfigError {
    /// The file name as given to `parse`/`load`.
    pub file: String,
    /// 1-based line number; 0 for errors about the file as a whole.
    pub line: usize,
    /// Canonical key name (`PublicKey`), the section header (`[Foo]`) or `-` when there is none.
    pub key: String,
    pub kind: ErrorKind,
}

impl ConfigError {
    pub fn new(file: &str, line: usize, key: impl Into<String>, kind: ErrorKind) -> Self {
        Self {
            file: file.to_string(),
            line,
            key: key.into(),
            kind,
        }
    }
}

/// All errors found in one file, sorted by line (file-level errors, line 0, first).
/// Display: one error per line.
#[derive(Debug)]
pub struct ConfigErrors(pub Vec<ConfigError>);

impl ConfigErrors {
    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.0.iter()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn into_vec(self) -> Vec<ConfigError> {
        self.0
    }
}

impl From<ConfigError> for ConfigErrors {
    fn from(e: ConfigError) -> Self {
        Self(vec![e])
    }
}

impl IntoIterator for ConfigErrors {
    type Item = ConfigError;
    type IntoIter = std::vec::IntoIter<ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigErrors {}
