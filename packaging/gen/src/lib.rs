//! Packaging helper (build time, outside the data path): the man pages and the bash/zsh/fish
//! completions of `starpep-client` and `starpep-pop`, rendered from their clap commands (pure:
//! bytes in memory; `main.rs` writes them).
//!
//! Layout under the output directory: `man/man1/<page>.1` (the binary's page and one per
//! subcommand, `starpep-pop-run.1`, ...), `completions/bash/<bin>`, `completions/zsh/_<bin>`,
//! `completions/fish/<bin>.fish`: the paths they take under `/usr/share` (man pages gzipped by
//! `scripts/package.sh`).

use std::path::PathBuf;

use clap_complete::Shell;
use starpep_common::daemon::{Cli, Role};

/// One generated file: its path relative to the output directory and its contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// Rendering a man page failed (clap_mangen writes through `io::Write`).
#[derive(Debug, thiserror::Error)]
#[error("render man page {page}: {source}")]
pub struct GenError {
    pub page: String,
    #[source]
    pub source: std::io::Error,
}

/// Every man page and completion script of `role`'s binary.
pub fn artifacts(role: Role) -> Result<Vec<Artifact>, GenError> {
    let mut out = man_pages(role)?;
    out.extend(completions(role));
    Ok(out)
}

/// The binary's page (with FILES and SEE ALSO sections) and one page per visible subcommand.
pub fn man_pages(role: Role) -> Result<Vec<Artifact>, GenError> {
    let mut cmd = Cli::command_for(role).disable_help_subcommand(true);
    cmd.build();
    let mut pages = Vec::new();
    let subs: Vec<clap::Command> = cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    let names: Vec<&str> = subs.iter().map(|s| s.get_name()).collect();
    let extra = files_section(role, &names);
    let mut main = render(cmd)?;
    // FILES and SEE ALSO go before the VERSION section (the page's last), or at the end.
    let at = find(&main.bytes, b".SH VERSION").unwrap_or(main.bytes.len());
    main.bytes.splice(at..at, extra.bytes());
    pages.push(main);
    for sub in subs {
        pages.push(render(sub)?);
    }
    Ok(pages)
}

fn render(cmd: clap::Command) -> Result<Artifact, GenError> {
    let man = clap_mangen::Man::new(cmd).manual("StarPEP-WG");
    let name = man.get_filename();
    let mut bytes = Vec::new();
    man.render(&mut bytes).map_err(|source| GenError {
        page: name.clone(),
        source,
    })?;
    Ok(Artifact {
        path: PathBuf::from("man/man1").join(name),
        bytes,
    })
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Roff for the packaged layout: config files, the systemd unit, the examples, related pages
/// (the subcommands' pages first).
fn files_section(role: Role, subcommands: &[&str]) -> String {
    let bin = role.binary().replace('-', "\\-");
    let subs: Vec<String> = subcommands
        .iter()
        .map(|s| format!(".BR {bin}\\-{} (1),", s.replace('-', "\\-")))
        .collect();
    let subs = subs.join("\n");
    format!(
        ".SH FILES\n\
         .TP\n\\fI/etc/starpep/NAME.conf\\fR\n\
         The config of interface NAME (wg\\-quick syntax, see the examples). Mode 0600: \
         \\fBrun\\fR refuses a file group or others can access (it holds the private key); \
         the directory is 0700.\n\
         .TP\n\\fI/usr/lib/systemd/system/{bin}@.service\\fR\n\
         Template unit: \\fBsystemctl enable \\-\\-now {bin}@NAME\\fR runs \
         \\fB{bin} run \\-c /etc/starpep/NAME.conf\\fR; \\fBsystemctl reload\\fR runs \
         \\fB{bin} reload NAME\\fR (the config applied live); \
         logs: \\fBjournalctl \\-u {bin}@NAME\\fR.\n\
         .TP\n\\fI/usr/share/doc/{bin}/examples/\\fR\n\
         Example configs and their reference (README.md).\n\
         .SH SEE ALSO\n{subs}\n.BR wg (8),\n.BR wg\\-quick (8),\n.BR systemctl (1)\n"
    )
}

/// bash, zsh and fish completion scripts.
pub fn completions(role: Role) -> Vec<Artifact> {
    let bin = role.binary();
    [
        (Shell::Bash, format!("completions/bash/{bin}")),
        (Shell::Zsh, format!("completions/zsh/_{bin}")),
        (Shell::Fish, format!("completions/fish/{bin}.fish")),
    ]
    .into_iter()
    .map(|(shell, path)| {
        let mut bytes = Vec::new();
        let mut cmd = Cli::command_for(role);
        clap_complete::generate(shell, &mut cmd, bin, &mut bytes);
        Artifact {
            path: PathBuf::from(path),
            bytes,
        }
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(a: &[Artifact], path: &str) -> String {
        let f = a
            .iter()
            .find(|x| x.path == std::path::Path::new(path))
            .unwrap_or_else(|| panic!("no {path} in {:?}", paths(a)));
        String::from_utf8(f.bytes.clone()).unwrap()
    }

    fn paths(a: &[Artifact]) -> Vec<String> {
        a.iter().map(|x| x.path.display().to_string()).collect()
    }

    #[test]
    fn each_binary_gets_its_page_one_per_subcommand_and_three_completions() {
        for (role, bin) in [(Role::Pop, "starpep-pop"), (Role::Client, "starpep-client")] {
            let a = artifacts(role).unwrap();
            let mut want = vec![format!("man/man1/{bin}.1")];
            for s in ["run", "check", "genkey", "pubkey", "show", "reload"] {
                want.push(format!("man/man1/{bin}-{s}.1"));
            }
            want.push(format!("completions/bash/{bin}"));
            want.push(format!("completions/zsh/_{bin}"));
            want.push(format!("completions/fish/{bin}.fish"));
            assert_eq!(paths(&a), want);
        }
    }

    #[test]
    fn the_pages_are_roff_for_the_right_binary() {
        let a = artifacts(Role::Pop).unwrap();
        let main = text(&a, "man/man1/starpep-pop.1");
        assert!(main.starts_with(".ie \\n(.g .ds Aq"), "{main}");
        assert!(main.contains(".TH starpep-pop 1"), "{main}");
        assert!(main.contains("many satellite terminals"), "{main}");
        assert!(main.contains(".SH FILES") && main.contains("/etc/starpep/NAME.conf"));
        assert!(main.contains("starpep\\-pop@.service"), "{main}");
        let (files, version) = (main.find(".SH FILES").unwrap(), main.find(".SH VERSION"));
        assert!(version.is_some_and(|v| v > files), "{main}");
        assert!(main.contains(".BR starpep\\-pop\\-show (1),"), "{main}");
        let run = text(&a, "man/man1/starpep-pop-run.1");
        assert!(run.contains(".TH starpep-pop-run 1"), "{run}");
        assert!(run.contains("\\-\\-config"), "{run}");
        assert!(run.contains("mode 0600"), "{run}");
        let client = text(
            &artifacts(Role::Client).unwrap(),
            "man/man1/starpep-client.1",
        );
        assert!(client.contains("satellite terminal") && !client.contains("starpep\\-pop"));
    }

    const POP_UNIT: &str = include_str!("../../systemd/starpep-pop@.service");
    const CLIENT_UNIT: &str = include_str!("../../systemd/starpep-client@.service");

    #[test]
    fn the_two_units_differ_only_in_names() {
        let norm = |s: &str| {
            s.replace("starpep-pop", "BIN")
                .replace("starpep-client", "BIN")
                .replace("pop0", "IFACE")
                .replace("box0", "IFACE")
                .replace("client box", "ROLE")
                .replace("POP", "ROLE")
        };
        assert_eq!(norm(POP_UNIT), norm(CLIENT_UNIT));
    }

    #[test]
    fn the_units_exec_start_is_a_valid_run_command_of_their_binary() {
        for (role, unit) in [(Role::Pop, POP_UNIT), (Role::Client, CLIENT_UNIT)] {
            let line = unit
                .lines()
                .find_map(|l| l.strip_prefix("ExecStart="))
                .expect("ExecStart");
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[0], format!("/usr/bin/{}", role.binary()));
            let m = Cli::command_for(role)
                .try_get_matches_from(&words)
                .unwrap_or_else(|e| panic!("{line}: {e}"));
            let (sub, args) = m.subcommand().expect("a subcommand");
            assert_eq!(sub, "run", "{line}");
            let config = args.get_one::<std::path::PathBuf>("config").unwrap();
            assert_eq!(config, std::path::Path::new("/etc/starpep/%i.conf"));
        }
    }

    #[test]
    fn the_units_exec_reload_is_the_reload_command_of_their_binary() {
        for (role, unit) in [(Role::Pop, POP_UNIT), (Role::Client, CLIENT_UNIT)] {
            let line = unit
                .lines()
                .filter_map(|l| l.strip_prefix("ExecReload="))
                // `+` lines run as root before it (the config handed to the daemon's user).
                .find(|l| !l.starts_with('+'))
                .expect("ExecReload");
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[0], format!("/usr/bin/{}", role.binary()));
            let m = Cli::command_for(role)
                .try_get_matches_from(&words)
                .unwrap_or_else(|e| panic!("{line}: {e}"));
            let (sub, args) = m.subcommand().expect("a subcommand");
            assert_eq!(sub, "reload", "{line}");
            assert_eq!(
                args.get_one::<String>("iface").map(String::as_str),
                Some("%i")
            );
        }
    }

    #[test]
    fn the_completions_know_the_subcommands_and_options() {
        let a = completions(Role::Client);
        let bash = text(&a, "completions/bash/starpep-client");
        assert!(bash.contains("complete -F _starpep__client"), "{bash}");
        let zsh = text(&a, "completions/zsh/_starpep-client");
        assert!(zsh.starts_with("#compdef starpep-client"), "{zsh}");
        let fish = text(&a, "completions/fish/starpep-client.fish");
        for word in [
            "run", "check", "genkey", "pubkey", "show", "reload", "config", "json",
        ] {
            for (shell, s) in [("bash", &bash), ("zsh", &zsh), ("fish", &fish)] {
                assert!(s.contains(word), "{shell} completion lacks {word}");
            }
        }
    }
}
