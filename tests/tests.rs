//! The one integration test binary. One `mod` line per test module.

// Helpers are `pub` so sibling modules share them; nothing leaves this binary.
#![allow(unreachable_pub)]

// Shared helpers: fixture trees, running rg and the backends, comparison.
mod util;

// The native engine and the rg backend against the real rg 15.2.0, case table
// over fixture trees (`contract.md` §2, `rg-semantics.md` §2); every case
// also at the tool level on both backends, and `read` of every returned path
// (`util::tools`).
mod conformance;

// Seeded random trees and patterns against the real rg (DSH_SEARCH_SEED),
// with the same tool-level checks.
mod random_trees;

// The rg backend and the CLI raw mode against a real rg.
mod rg_backend;

// (The file tools through the library on a real disk, their internals,
// are the unit tests of `tool::files`: `src/tool/files/tests.rs`.)

// The file tools through the binary: sessions across processes, a writer
// killed mid-write.
mod files_cli;

// CPU-bound file work (edit's counting and replacing, read's decoding of a
// large file) stops at SIGTERM, changing nothing.
mod cancel_work;

// Issue 11's write path through the binary: owners and set-id bits, lost
// updates across state directories, the staging sweeper, large edits and
// writes, cancellation, a bare write without a state directory, dangling
// symlinks, trailing slashes, edit's bytes.
mod harden_write;

// The search tools over a scripted backend: ladder, rendering, spill, meta,
// dispatch order, timeout.
mod tools_fake;

// The tool definitions (names, descriptions, schemas, prompts) as data.
mod tools_defs;

// The glob and grep tools on both real backends: seed integration cases,
// hostile inputs, timeout and cancellation.
mod tools;

// The tools' command line: formats, exit statuses, config, spill.
mod tools_cli;

// The search-path guard: its rules, allow cases, counters and messages.
mod guard;

// The guard in the dispatch and on the command line.
mod guard_dispatch;

// `dsh-search --overlay DIR changes` over an overlay the library wrote.
mod overlay_cli;

// The native engine called from many threads and from other rayon pools at
// once, against rg's answers.
mod concurrency;

// An agent session on every kind of workspace (disk, in memory, overlays),
// the guard's hints from the workspace, a tree changed during searches.
mod workspaces;
// The JSON-lines server as a process: concurrency, cancel, malformed and
// hostile lines, definitions, sessions, timeout, EOF, signals.
mod serve;

// The MCP server as a process, over raw JSON-RPC lines: malformed and
// hostile messages, results, cancellation, roots, timeout, EOF, signals.
mod mcp;

// Globs nested deeper than any stack, against rg; the servers and the
// library on a small stack survive them.
mod deep_globs;

// What a client may cost either server: unread answers (flow control),
// a line of millions of values, the arguments' open root object.
mod server_limits;

// Issue 11, the search half: hostile inputs and kills, each reproduction
// as a real process on both backends.
mod harden_search;

// Remote workspaces over SFTP against a real OpenSSH sshd: conformance
// against rg on the same tree, the agent session, faults.
#[cfg(feature = "sftp")]
mod sftp;
