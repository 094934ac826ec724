//! starpep-gendocs: writes the man pages and shell completions of both daemons into a directory
//! (run by `scripts/package.sh`; wiring only, the rendering is in lib.rs).

use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;
use starpep_common::daemon::Role;

/// Generates the man pages and bash/zsh/fish completions of starpep-client and starpep-pop.
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Output directory (created): man/man1/*.1, completions/{bash,zsh,fish}/*.
    #[arg(long)]
    out: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    for role in [Role::Client, Role::Pop] {
        for a in starpep_gendocs::artifacts(role)? {
            let path = args.out.join(&a.path);
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("create {}", dir.display()))?;
            }
            std::fs::write(&path, &a.bytes).with_context(|| format!("write {}", path.display()))?;
            println!("{}", path.display());
        }
    }
    Ok(())
}
