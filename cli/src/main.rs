//! The `dsh-search` binary (package `dsh-search-cli`): the command line,
//! the servers it runs (MCP and JSON lines) and the benchmark harness, all
//! on the library's public API. None of them is part of the library: a
//! program that embeds dsh-search builds its workspace with
//! `dsh_search::WorkspaceOptions`, as [`setup::workspace`] does.
//!
//! # Modules
//!
//! Each arrow is "imports from"; there is no cycle:
//!
//! ```text
//! main ──▶ cli ──▶ server ──▶ setup
//!           │  └─────────────▶ setup
//!           └────▶ bench
//! ```
//!
//! - [`cli`] parses the arguments and runs a subcommand; `mcp` and `serve`
//!   hand over to [`server`], `bench` to [`bench`](mod@bench).
//! - [`server`]: the MCP server (the `mcp` feature) and the JSON-lines
//!   server, with what they share (the calls in flight, flow control, the
//!   stop on a signal).
//! - [`setup`]: what every command is set up from: the common options
//!   (`--cwd`, `--fs`, `--backend`, …), the configuration, the workspace,
//!   the session store, the tools, printing and exit statuses.
//! - [`bench`](mod@bench): the benchmark harness (corpus, workloads, measurement,
//!   report, transports); it imports none of the others.

mod bench;
mod cli;
mod server;
mod setup;

fn main() -> std::process::ExitCode {
    cli::run()
}
