//! The one integration test binary. One `mod` line per test module.

// Helpers are `pub` so sibling modules share them; nothing leaves this binary.
#![allow(unreachable_pub)]

// On Windows (run under Wine by scripts/test-windows, README "Platforms")
// the binary holds the conformance suite, the random trees, the live
// index's validated differential tests and the Windows-only cases; the other modules drive Unix processes, signals,
// permissions and descriptors, and are built for Unix only.

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

// One conformance suite for every filesystem of the seam (the local disk
// through both paths, in memory, overlays, SFTP), against the disk.
#[cfg(unix)]
mod fs_conformance;

// The rg backend and the CLI raw mode against a real rg.
#[cfg(unix)]
mod rg_backend;

// (The file tools through the library on a real disk, their internals,
// are the unit tests of `tool::files`: `src/tool/files/tests.rs`.)

// The file tools through the binary: sessions across processes, a writer
// killed mid-write.
#[cfg(unix)]
mod files_cli;

// CPU-bound file work (edit's counting and replacing, read's decoding of a
// large file) stops at SIGTERM, changing nothing.
#[cfg(unix)]
mod cancel_work;

// The write path's hostile cases through the binary: owners and set-id bits, lost
// updates across state directories, the staging sweeper, large edits and
// writes, cancellation, a bare write without a state directory, dangling
// symlinks, trailing slashes, edit's bytes.
#[cfg(unix)]
mod harden_write;

// The search tools over a scripted backend: the failure ladder, rendering, spill, meta,
// dispatch order, timeout.
#[cfg(unix)]
mod tools_fake;

// The tool definitions (names, descriptions, schemas, prompts) as data.
#[cfg(unix)]
mod tools_defs;

// The glob and grep tools on both real backends: seed integration cases,
// hostile inputs, timeout and cancellation.
#[cfg(unix)]
mod tools;

// The tools' command line: formats, exit statuses, config, spill.
#[cfg(unix)]
mod tools_cli;

// The search-path guard: its rules, allow cases, counters and messages.
#[cfg(unix)]
mod guard;

// The guard in the dispatch and on the command line.
#[cfg(unix)]
mod guard_dispatch;

// `dsh-search --overlay DIR changes` over an overlay the library wrote.
#[cfg(unix)]
mod overlay_cli;

// The native engine called from many threads and from other rayon pools at
// once, against rg's answers.
#[cfg(unix)]
mod concurrency;

// An agent session on every kind of workspace (disk, in memory, overlays),
// the guard's hints from the workspace, a tree changed during searches.
#[cfg(unix)]
mod workspaces;
// The JSON-lines server as a process: concurrency, cancel, malformed and
// hostile lines, definitions, sessions, timeout, EOF, signals.
#[cfg(unix)]
mod serve;

// The MCP server as a process, over raw JSON-RPC lines: malformed and
// hostile messages, results, cancellation, roots, timeout, EOF, signals.
#[cfg(unix)]
mod mcp;

// Globs nested deeper than any stack, against rg; the servers and the
// library on a small stack survive them.
#[cfg(unix)]
mod deep_globs;

// What a client may cost either server: unread answers (flow control),
// a line of millions of values, the arguments' open root object.
#[cfg(unix)]
mod server_limits;

// Both servers stop at SIGTERM or at a killed client whatever their pipes
// do: a stderr closed or unread, a stdout closed.
#[cfg(unix)]
mod server_stop;

// The search path's hostile cases: hostile inputs and kills, each reproduction
// as a real process on both backends.
#[cfg(unix)]
mod harden_search;

// Windows semantics against rg.exe under Wine (scripts/test-windows): typed
// paths with `\`, drive- and root-anchored paths, the hidden attribute,
// names valid on Windows.
#[cfg(windows)]
mod windows;

// The file tools' state on Windows through the binary, under Wine: atomic
// writes over a file another process holds open, the session lock across
// processes, the state and spill directories under the user's profile.
#[cfg(windows)]
mod windows_session;

// The file tools and the guard on Windows under Wine: one file in any
// letter case for the read-before-write policy and the session state, the
// guard's closest names, device names (`NUL`, `src\aux.txt`), CRLF and
// BOM files.
#[cfg(windows)]
mod windows_files;

// Remote workspaces over SFTP against a real OpenSSH sshd: conformance
// against rg on the same tree, the agent session, faults.
#[cfg(all(unix, feature = "sftp"))]
mod sftp;

// The live index (`docs/index.md`): random trees changed on the
// disk and through the tools, every call compared with rg at once; the
// failure modes (overflow, watch limit, root replaced, checkout). On
// Windows, the tests that validate at each call (the module's doc).
#[cfg(any(target_os = "linux", windows))]
mod index;

// The live index on the other workspaces: the differential mutation test
// in memory, through overlays and over SFTP, every call compared with rg.
#[cfg(target_os = "linux")]
mod index_fs;
