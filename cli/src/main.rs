//! # zkr — Apache Curator's ZooKeeper recipes from the shell
//!
//! `zkr` is the command-line face of [`zkrecipes`]: it runs a command under a Curator-compatible
//! lock (`zkr lock PATH -- CMD`) or only while leader (`zkr elect PATH -- CMD`), follows a leader
//! (`observe`), reads and changes counters (`counter`, `shared-count`), shows who holds, waits
//! or leads on any recipe path, Curator's or ours (`inspect`), streams changes (`watch`), puts
//! and takes queue items (`queue`), enters or leaves double barriers (`barrier`) and reads or
//! changes the ensemble's members (`ensemble`).
//!
//! It holds no recipe logic: every command calls the core's public API and maps what happened
//! to output and an exit code (`exit`): 0 ok, 1 usage or bad input, 2 could not connect, 3 timed
//! out waiting, 4 hold or leadership lost, 5 compare-and-set failed, 70 a bug; `lock` and
//! `elect` otherwise exit with their command's code. Errors are one line on stderr
//! (`zkr: error: …`), never a backtrace.
//!
//! The work runs on the core's one runtime: `main` drives the command's future with
//! [`zkrecipes::runtime::block_on`] on the process's main thread, which is also the thread that
//! forks the commands (see `child`: their death signal is tied to it).
//!
//! Commands, options, signals and the meaning of `elect` are documented in `docs/CLI.md` and in
//! `zkr --help` / `zkr COMMAND --help`.

mod args;
mod child;
mod cmd;
mod connect;
mod exit;
mod inspect;
mod output;
mod status;

use std::ffi::OsString;
use std::io::Write;

use clap::error::ErrorKind as ClapErrorKind;
use clap::{CommandFactory, Parser};

use crate::args::{Cli, Command};
use crate::exit::{Failure, Outcome};

fn main() {
    install_panic_hook();
    let argv: Vec<OsString> = std::env::args_os().collect();
    let code = match Cli::try_parse_from(&argv) {
        Ok(cli) => report(zkrecipes::runtime::block_on(dispatch(cli))),
        Err(e) => usage_error(&argv, e),
    };
    let _ = std::io::stdout().flush();
    std::process::exit(code);
}

async fn dispatch(cli: Cli) -> Outcome {
    let g = &cli.global;
    match cli.command {
        Command::Lock(a) => cmd::lock::run(g, a).await,
        Command::Elect(a) => cmd::elect::run(g, a).await,
        Command::Observe(a) => cmd::observe::run(g, a).await,
        Command::Counter(a) => cmd::counter::run_counter(g, a).await,
        Command::SharedCount(a) => cmd::counter::run_shared_count(g, a).await,
        Command::Inspect(a) => cmd::inspect::run(g, a).await,
        Command::Watch(a) => cmd::watch::run(g, a).await,
        Command::Member(a) => cmd::member::run(g, a).await,
        Command::Discover(a) => cmd::discover::run(g, a).await,
        Command::Node(a) => cmd::node::run_node(g, a).await,
        Command::Acl(a) => cmd::node::run_acl(g, a).await,
        Command::Queue(a) => cmd::queue::run(g, a).await,
        Command::Barrier(a) => cmd::barrier::run(g, a).await,
        Command::Ensemble(a) => cmd::ensemble::run(g, a).await,
        Command::Completions(a) => {
            let mut out = std::io::stdout();
            clap_complete::generate(a.shell, &mut Cli::command(), "zkr", &mut out);
            Ok(exit::OK)
        }
    }
}

/// The exit code of an outcome, printing the failure's one line.
fn report(outcome: Outcome) -> i32 {
    match outcome {
        Ok(code) => code,
        Err(Failure { code, message }) => {
            if !message.is_empty() {
                eprintln!("zkr: error: {}", one_line(&message));
            }
            code
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Help and version go to stdout with 0; every other parse error is one line and exit 1.
fn usage_error(argv: &[OsString], e: clap::Error) -> i32 {
    match e.kind() {
        ClapErrorKind::DisplayHelp | ClapErrorKind::DisplayVersion => {
            let _ = e.print();
            return exit::OK;
        }
        ClapErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            return exit::USAGE;
        }
        _ => {}
    }
    let command = argv
        .iter()
        .skip(1)
        .filter_map(|a| a.to_str())
        .find(|a| matches!(*a, "lock" | "elect" | "member" | "register"));
    let has_dashes = argv.iter().any(|a| a == "--");
    let message = match command {
        Some("register") if !has_dashes => "missing '--' before the command: zkr discover register BASE NAME [OPTIONS] -- CMD [ARGS]... (see 'zkr discover register --help')".to_string(),
        Some(c) if !has_dashes => format!(
            "missing '--' before the command: zkr {c} PATH [OPTIONS] -- CMD [ARGS]... (see 'zkr {c} --help')"
        ),
        _ => {
            let rendered = e.render().to_string();
            let text: Vec<&str> = rendered
                .lines()
                .map(str::trim)
                .take_while(|l| !l.starts_with("Usage:"))
                .filter(|l| {
                    !l.is_empty() && !l.starts_with("tip:") && !l.starts_with("For more information")
                })
                .collect();
            let text = text.join(" ");
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            format!("{text} (see 'zkr --help')")
        }
    };
    eprintln!("zkr: error: {}", one_line(&message));
    exit::USAGE
}

/// A panic is a bug of ours: one line, exit 70, never a backtrace.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let _ = writeln!(
            std::io::stderr(),
            "zkr: error: internal error (a bug in zkr, please report it): {}{at}",
            one_line(&what)
        );
        std::process::exit(exit::INTERNAL);
    }));
}
