//! Configuration: wg-quick syntax (strict, file:line:key errors) parsed into typed structs (pure).
//!
//! `parse` turns text into a [`Config`] or every error of the file; `load` adds the file read;
//! `interface_name` derives the TUN name from the file name as wg-quick does; `check_private`
//! refuses a file mode that lets group/others at the private key. The syntax and every
//! key are documented in `configs/README.md`.

mod error;
mod fuzz_check;
mod ini;
mod keys;
mod model;
mod parse;
mod pep;
mod pep_parse;
mod perms;
mod sections;
mod starpep;
mod starpep_parse;
mod values;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_errors;
#[cfg(test)]
mod tests_fuzz;
#[cfg(test)]
mod tests_keys;
#[cfg(test)]
mod tests_pep;
#[cfg(test)]
mod tests_starpep;

use std::path::Path;

pub use error::{ConfigError, ConfigErrors, ErrorKind};
pub use fuzz_check::check_parse;
pub use keys::{Key, KeyError, PresharedKey, PrivateKey, PublicKey};
pub use model::{Config, Endpoint, Interface, Peer, Table};
pub use parse::parse;
pub use pep::{BypassRule, Congestion, Pep, PepMode, TunnelMode};
pub use perms::{check_private, PermsError, GROUP_OTHER_BITS};
pub use starpep::{ProbeWindow, Reconfig, Starpep, WindowControl};

/// Reads and parses a file; errors name the path as given. A read failure is one error (line 0, `-`).
pub fn load(path: &Path) -> Result<Config, ConfigErrors> {
    let name = path.display().to_string();
    // The text holds the private key in base64: wiped when parsed.
    let text = zeroize::Zeroizing::new(std::fs::read_to_string(path).map_err(|source| {
        let kind = ErrorKind::Io {
            path: path.to_path_buf(),
            source,
        };
        ConfigError::new(&name, 0, "-", kind)
    })?);
    parse(&name, &text)
}

/// The interface name for a config file, as wg-quick derives it: the file must be `NAME.conf`
/// with NAME matching `^[a-zA-Z0-9_=+.-]{1,15}$` (`/etc/wireguard/wg0.conf` → `wg0`).
pub fn interface_name(path: &Path) -> Result<String, ConfigError> {
    let file = path.display().to_string();
    let fail = |msg: String| ConfigError::new(&file, 0, "-", ErrorKind::InterfaceName(msg));
    let base = path
        .file_name()
        .and_then(|f| f.to_str())
        .ok_or_else(|| fail("the path has no UTF-8 file name".into()))?;
    let stem = base.strip_suffix(".conf").ok_or_else(|| {
        fail(format!(
            "file name {base:?} does not end in .conf (the interface is named after it)"
        ))
    })?;
    if !values::is_interface_name(stem) {
        return Err(fail(format!(
            "{stem:?} is not a valid interface name (1..15 of a-z A-Z 0-9 _ = + . -)"
        )));
    }
    Ok(stem.to_string())
}
