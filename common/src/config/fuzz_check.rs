//! The fuzz check of the config parser (pure): what `fuzz/config_parse` runs on each input and
//! `config::tests_fuzz` on each mutated example, so both hold `parse` to the same rules.

use super::parse;

/// Parses `text` as file `name` and panics if a rule breaks: an accepted config holds no more
/// addresses than its lines allow; a refused one has at least one error, each on a line of the
/// input, naming its key, printed as `NAME:LINE: ...`, one line per error. Returns whether it
/// was accepted.
pub fn check_parse(name: &str, text: &str) -> bool {
    let lines = text.lines().count();
    match parse(name, text) {
        Ok(c) => {
            assert!(c.interface.addresses.len() <= lines * 16);
            true
        }
        Err(errs) => {
            assert!(!errs.is_empty());
            for e in &errs {
                assert!(e.line <= lines, "line {} of {lines}: {e}\n{text}", e.line);
                assert!(!e.key.is_empty(), "{e}");
                assert!(e.to_string().starts_with(&format!("{name}:{}: ", e.line)));
            }
            assert_eq!(errs.to_string().lines().count(), errs.len(), "{errs}");
            false
        }
    }
}
