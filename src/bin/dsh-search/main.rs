//! The `dsh-search` binary: the command line (`cli`), the servers it runs
//! (`server`: MCP and JSON lines) and the benchmark harness (`bench`), all
//! on the library's public API. None of them is part of the library: a
//! program that embeds dsh-search builds its workspace with
//! `dsh_search::WorkspaceOptions`, as `cli::setup` does.

mod bench;
mod cli;
mod server;

fn main() -> std::process::ExitCode {
    cli::run()
}
