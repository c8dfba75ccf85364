//! The `dsh-search` command line (`contract.md` §8).
//!
//! This module only parses; each subcommand lives in the file that owns its
//! layer: [`raw`] (rg's own output), [`tools`] (the model-facing glob, grep
//! and `call`), [`files`] (read, write, edit), [`changes`] (an overlay's
//! changes), [`bench`](mod@bench); the servers (`mcp`, `serve`) live in
//! [`crate::server`]. What they all set up, the servers included (the
//! common options, configuration, workspace, backend, sessions, tools,
//! printing), is [`crate::setup`]'s, so that none of them imports another.

pub(crate) mod bench;
pub(crate) mod changes;
pub(crate) mod files;
pub(crate) mod raw;
pub(crate) mod tools;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use dsh_search::CancelToken;

use crate::setup::{Common, Format, StructuredContent};

/// dsh-search: the glob and grep tools of a coding agent, in-process.
#[derive(Debug, Parser)]
#[command(name = "dsh-search", version, about)]
pub(crate) struct Cli {
    /// Options shared by every subcommand.
    #[command(flatten)]
    pub(crate) common: Common,
    /// What to run.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// List files whose paths match a glob.
    Glob(GlobArgs),
    /// Search file contents with a regex.
    Grep(GrepArgs),
    /// Read a text file with line numbers.
    Read(ReadArgs),
    /// Create or replace a file with standard input.
    Write(WriteArgs),
    /// Replace literal text in a file.
    Edit(EditArgs),
    /// Call any tool with JSON arguments.
    Call(CallArgs),
    /// Print the tool definitions (names, descriptions, schemas, prompts).
    Definitions,
    /// Benchmark both backends side by side.
    Bench(bench::BenchArgs),
    /// Serve the tools over MCP on stdin and stdout (one connection, one
    /// session).
    Mcp(McpArgs),
    /// Serve the tools over JSON lines on stdin and stdout.
    Serve,
    /// List the changes kept in `--overlay DIR` (`A path` / `M path`).
    Changes(ChangesArgs),
}

/// `dsh-search mcp`.
#[derive(Debug, Args)]
pub(crate) struct McpArgs {
    /// What a tools/call result carries beside its text as
    /// `structuredContent` (some clients show the model
    /// `structuredContent` instead of the text, some both).
    #[arg(long, value_enum, value_name = "MODE", default_value_t = StructuredContent::None)]
    pub(crate) structured_content: StructuredContent,
    /// Put glob's and grep's presentation meta whole in `_meta`
    /// (`dsh-search/meta`): the page of paths or matches the text shows,
    /// within searchMetaMaxBytes, for hosts that draw a search card.
    /// Without it `_meta` has the counts alone (some clients show `_meta`
    /// to the model).
    #[arg(long)]
    pub(crate) meta_page: bool,
}

/// `dsh-search --overlay DIR changes`.
#[derive(Debug, Args)]
pub(crate) struct ChangesArgs {
    /// Print a unified diff against the workdir instead of the list.
    #[arg(long)]
    pub(crate) diff: bool,
}

/// `dsh-search glob`.
#[derive(Debug, Args)]
pub(crate) struct GlobArgs {
    /// The glob pattern.
    pub(crate) pattern: String,
    /// The directory (or file) to search. Any bytes with `--format raw`, as
    /// rg takes them; text for the tools.
    pub(crate) path: Option<OsString>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// `dsh-search grep`.
#[derive(Debug, Args)]
pub(crate) struct GrepArgs {
    /// The regular expression.
    pub(crate) pattern: String,
    /// The file or directory to search. Any bytes with `--format raw`, as
    /// rg takes them; text for the tools.
    pub(crate) path: Option<OsString>,
    /// One glob filter for which files to search.
    #[arg(long, value_name = "GLOB")]
    pub(crate) include: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// `dsh-search read`.
#[derive(Debug, Args)]
pub(crate) struct ReadArgs {
    /// The file to read.
    pub(crate) file: String,
    /// 1-based first line.
    #[arg(long)]
    pub(crate) offset: Option<f64>,
    /// Maximum number of lines.
    #[arg(long)]
    pub(crate) limit: Option<f64>,
}

/// `dsh-search write` (content on standard input).
#[derive(Debug, Args)]
pub(crate) struct WriteArgs {
    /// The file to write.
    pub(crate) file: String,
}

/// `dsh-search edit`.
#[derive(Debug, Args)]
pub(crate) struct EditArgs {
    /// The file to edit.
    pub(crate) file: String,
    /// The literal text to replace.
    #[arg(long = "old", allow_hyphen_values = true)]
    pub(crate) old: String,
    /// The replacement.
    #[arg(long = "new", allow_hyphen_values = true)]
    pub(crate) new: String,
    /// Replace every occurrence.
    #[arg(long)]
    pub(crate) replace_all: bool,
}

/// `dsh-search call`.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The tool name: glob, grep, read, write or edit.
    pub(crate) tool: String,
    /// The tool's arguments as a JSON object.
    pub(crate) arguments: String,
    /// Output format (`raw` is not available here).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub(crate) format: Format,
}

/// Parse the process's arguments and run; returns the process exit code.
pub(crate) fn run() -> ExitCode {
    // Before anything else: this process may be the trampoline that starts
    // an rg which dies with its parent (`backend::rg::orphan`).
    dsh_search::backend::rg::orphan::intercept();
    let cli = Cli::parse();
    // DSH_SEARCH_THREADS=<n>: the engine's worker count for this process.
    dsh_search::set_search_threads_from_env();
    cancel_on_signals(&cli.common.cancel);
    let code = match &cli.command {
        Command::Glob(a) if a.format == Format::Raw => raw::glob(&cli.common, a),
        Command::Grep(a) if a.format == Format::Raw => raw::grep(&cli.common, a),
        Command::Glob(a) => tools::glob(&cli.common, a),
        Command::Grep(a) => tools::grep(&cli.common, a),
        Command::Call(a) => tools::call(&cli.common, a),
        Command::Definitions => tools::definitions(&cli.common),
        Command::Read(a) => files::read(&cli.common, a),
        Command::Write(a) => files::write(&cli.common, a),
        Command::Edit(a) => files::edit(&cli.common, a),
        Command::Bench(a) => bench::run(&cli.common, a),
        Command::Changes(a) => changes::run(&cli.common, a),
        Command::Mcp(a) => mcp(&cli.common, a),
        Command::Serve => crate::server::jsonl::run(&cli.common),
    };
    ExitCode::from(code)
}

/// Make the signals that ask a process to stop cancel the running call
/// instead: it ends with the aborted error, and an rg child is stopped.
///
/// # Platform behavior
///
/// On Unix, SIGINT, SIGTERM and SIGHUP. On Windows, Ctrl-C and Ctrl-Break
/// in the console, through `SetConsoleCtrlHandler` (the `ctrlc` crate; not
/// the C runtime's `signal()`, see Cargo.toml): Windows sends no SIGTERM or
/// SIGHUP, and a closed console or a killed process ends the call without
/// a result.
fn cancel_on_signals(cancel: &CancelToken) {
    // Without a handler the default action ends the process, which is also
    // fine; a failed registration loses nothing else.
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        for signal in [SIGINT, SIGTERM, SIGHUP] {
            let _ = signal_hook::flag::register(signal, cancel.flag());
        }
    }
    #[cfg(windows)]
    {
        let cancel = cancel.clone();
        let _ = ctrlc::set_handler(move || cancel.cancel());
    }
}

#[cfg(feature = "mcp")]
fn mcp(common: &Common, args: &McpArgs) -> u8 {
    crate::server::mcp::run(common, args.structured_content, args.meta_page)
}

#[cfg(not(feature = "mcp"))]
fn mcp(_common: &Common, _args: &McpArgs) -> u8 {
    crate::setup::fail("this dsh-search was built without the `mcp` feature")
}
