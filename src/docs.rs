//! `mpiskel man` and `mpiskel completions`: the manual pages and shell completions, generated
//! from the same argument definitions as `--help` (clap_mangen, clap_complete), so that they
//! never drift from the binary. `make man` writes both into `target/man` and
//! `target/completions`; `make install` installs them beside the binary.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Command};
use clap_complete::Shell;

/// Write the manual pages: mpiskel(1) and one page per command (mpiskel-build(1), …).
///
/// Examples:
///   mpiskel man -o ~/.local/share/man/man1 && man mpiskel-build
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct ManArgs {
    /// Directory to write the pages into (created if missing).
    #[arg(short, long, value_name = "DIR")]
    output: PathBuf,
}

/// Print the completion script for a shell on standard output.
///
/// Examples:
///   mpiskel completions bash > ~/.local/share/bash-completion/completions/mpiskel
///   mpiskel completions zsh > ~/.zfunc/_mpiskel
///   mpiskel completions fish > ~/.config/fish/completions/mpiskel.fish
#[derive(Debug, Args)]
#[command(verbatim_doc_comment)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    shell: Shell,
}

/// Writes mpiskel(1) and a page per subcommand of `cmd` into `a.output`; prints each path.
pub fn man(a: ManArgs, cmd: Command) -> Result<ExitCode> {
    std::fs::create_dir_all(&a.output)
        .with_context(|| format!("creating {}", a.output.display()))?;
    let cmd = cmd.version(env!("CARGO_PKG_VERSION"));
    let mut written = vec![page(&cmd, "mpiskel", &a.output)?];
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        // Named `mpiskel-<command>` in its title and footer (clap takes names as `&'static str`:
        // a few bytes per page, once, in a command that ends right after).
        let name: &'static str = Box::leak(format!("mpiskel-{}", sub.get_name()).into_boxed_str());
        let sub = sub.clone().name(name).version(env!("CARGO_PKG_VERSION"));
        written.push(page(&sub, name, &a.output)?);
    }
    for p in written {
        println!("{}", p.display());
    }
    Ok(ExitCode::SUCCESS)
}

/// Renders `cmd`'s page as `dir/name.1`, written whole (under a temporary name, renamed).
fn page(cmd: &Command, name: &str, dir: &Path) -> Result<PathBuf> {
    let mut roff = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut roff)
        .with_context(|| format!("rendering the manual page of {name}"))?;
    let path = dir.join(format!("{name}.1"));
    mpiskel_trace::atomic::write(&path, &roff)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Prints the completion script of `cmd` for `a.shell` (into a closed pipe: ends quietly with
/// 141, as the other commands do).
pub fn completions(a: CompletionsArgs, mut cmd: Command) -> Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(a.shell, &mut cmd, "mpiskel", &mut script);
    match std::io::stdout().write_all(&script) {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(ExitCode::from(141)),
        Err(e) => Err(e).context("writing the completion script"),
    }
}
