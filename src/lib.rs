//! dsh-search: the `glob` and `grep` tools of a coding agent, in-process.
//!
//! A harness's glob and grep tools spawn `rg` with two fixed argument lists
//! (`contract.md` §2). This crate answers the same two questions inside the
//! process, byte for byte like ripgrep 15.2.0, and puts the model-facing
//! tools on top. The data flows top to bottom through these modules:
//!
//! 1. The requests: a [`GlobRequest`] or [`GrepRequest`], one of the two
//!    invocations as a value (pattern, path, include, workdir, cancellation
//!    with a [`CancelToken`], raw-output budget).
//! 2. [`backend`]: the [`SearchBackend`] trait, with the in-process
//!    [`NativeBackend`] and the [`RgBackend`] that spawns a real `rg`.
//! 3. What a backend returns, an [`Outcome`]: rg's exit [`Status`], its
//!    stderr lines, and the listed files ([`GlobResults`]) or the typed
//!    `--json` events ([`GrepResults`], [`event`]), which serialize to rg's
//!    bytes.
//! 4. [`tool`]: the model-facing tools (`glob`, `grep`, `read`, `write`,
//!    `edit`) behind one dispatch entry point, [`Tools::call`], described
//!    as data in [`tool::definitions`]; with their [`config`], the
//!    [`SpillStore`] that keeps over-cap results ([`LocalSpillStore`]), the
//!    [`Sessions`] that hold the observation policy's state, and the
//!    [`Guard`] that denies hopeless calls before they run.
//! 5. [`fs`], under all of them: the filesystem seam
//!    ([`fs::FileSystem`], byte-level) that the engine walks and reads and
//!    the file tools and the guard go through, with the local disk
//!    ([`fs::LocalFs`]), a tree in memory ([`fs::MemFs`]) and an overlay
//!    ([`fs::OverlayFs`]); the tools' text semantics over it once
//!    ([`fs::TextFs`]), and a host over SFTP (`fs::SftpFs`, the `sftp`
//!    feature): a crate of its own (`dsh-search-fs`), which names nothing
//!    above it.
//! 6. A workspace described as the command line and the Node binding
//!    describe it ([`FsSpec`]: `local`, `mem[:ROOT]`,
//!    `sftp://[USER@]HOST[:PORT]`; an overlay directory; the backend; the
//!    SSH key and known hosts), opened into its filesystem, its backend
//!    and its [`Tools`] ([`WorkspaceOptions`], [`Workspace`]).
//! 7. [`Invocation`]: rg's own argv for the two invocations, recognized
//!    by shape and answered with the bytes and exit code of the rg binary
//!    (the command line's `--format raw`, the Node binding's `rg()`).
//!
//! The `dsh-search` binary (its command line, its MCP and JSON-lines
//! servers, its benchmark harness) is built on this API alone; it is not
//! part of the library but a package of its own in the same workspace
//! (`dsh-search-cli`, in `cli/`), so the library depends on no
//! command-line parser and no MCP SDK. The one cargo feature, `sftp` (on by
//! default), adds `SftpFs` and the SSH stack with its Tokio runtime.
//!
//! # The public API
//!
//! Everything a user needs is re-exported here, at the top: the backends
//! and their requests and outcomes, the events, the tools, the
//! configuration, the filesystems and the workspaces, the spill store, the
//! sessions, the guard and rg's own invocations. Six modules stay public
//! for the details of each:
//!
//! - [`backend`], with [`backend::rg`]: rg's argv for a request
//!   ([`glob_args`], [`grep_args`], [`RgCommand`]), where the rg binary is
//!   found ([`RG_ENV`], [`rg_from_env`]), the default kill grace, and
//!   [`backend::rg::orphan::intercept`], the first call of an embedder's
//!   `main` that makes rg die with it;
//! - [`config`]: every configuration key ([`config::SearchConfig`],
//!   [`config::FsConfig`], [`config::SpillConfig`], [`config::GuardConfig`]);
//! - [`event`]: rg's `--json` messages as values;
//! - [`fs`]: every filesystem type: the seam's listings, metadata, versions
//!   and write guards, each filesystem's handles, the text layer's outcomes
//!   and its errors;
//! - [`tool`]: the results' parts and [`tool::definitions`], the tools as
//!   data (names, descriptions, schemas, prompts) for a harness to register;
//! - [`sync`]: [`sync::RecoverPoison`], a lock taken past another thread's
//!   panic, as the crate takes its own (its binary and the Node binding use
//!   it too).
//!
//! The rest (the engine, the tools' implementations, the cancellation's,
//! the sessions', the guard's and the spill store's internals) is private
//! to the crate.
//!
//! The library reads no environment variable of its own: the settings are
//! the caller's to pass. The engine's worker count and how soon they join
//! a grep are settings of an [`Engine`] ([`EngineBuilder::threads`],
//! [`EngineBuilder::helper_delay`]), given to a backend
//! ([`NativeBackend::with_engine`]) or a workspace
//! ([`WorkspaceOptions::engine`]); the backends that are given none share
//! the process default, set by [`set_search_threads`] (before its first
//! search) and [`set_helper_delay`]. The rg binary is
//! [`RgConfig::path`] or [`WorkspaceOptions::rg_path`]. The few it does
//! read come with the behavior they reproduce: git's global excludes are
//! found through `HOME` and `XDG_CONFIG_HOME` as rg finds them, an rg
//! without a path is the first on `PATH`, and an SFTP login without an
//! identity file asks the SSH agent at `SSH_AUTH_SOCK`.
//!
//! # Example
//!
//! ```
//! use std::sync::Arc;
//! use dsh_search::config::Config;
//! use dsh_search::tool::{CallContext, Tools};
//! use dsh_search::{GrepRequest, NativeBackend, SearchBackend, Status};
//!
//! let dir = std::env::temp_dir().join(format!("dsh-search-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! std::fs::write(dir.join("a.txt"), "one\nTODO: two\n")?;
//!
//! // The engine: what `rg --json --regexp=TODO -- a.txt` prints, as values.
//! let outcome = NativeBackend::new().grep(&GrepRequest::new("TODO", &dir).path("a.txt"));
//! assert_eq!(outcome.status, Status::Exited(0));
//! let m = outcome.results.matches().next().unwrap();
//! assert_eq!((m.line_number, &*m.lines), (2, &b"TODO: two\n"[..]));
//!
//! // The tool: what the model reads.
//! let tools = Tools::new(Config::default(), Arc::new(NativeBackend::new()));
//! let result = tools.call("grep", &serde_json::json!({"pattern": "TODO", "path": "a.txt"}),
//!                         &CallContext::new(&dir));
//! assert_eq!(result.content, "Found 1 match\n\na.txt\nLine 2: TODO: two");
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same tools on a workspace in memory, and staged edits over it that
//! never reach the lower tree:
//!
//! ```
//! use std::sync::Arc;
//! use dsh_search::config::Config;
//! use dsh_search::fs::{MemFs, OverlayFs};
//! use dsh_search::tool::{CallContext, Tools};
//! use serde_json::json;
//!
//! let mem = Arc::new(MemFs::new());
//! mem.write_file("/w/src/lib.rs", "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n")?;
//! let ctx = CallContext::new("/w").session("s1");
//! let tools = Tools::on_workspace(Config::default(), mem.clone());
//! let r = tools.call("grep", &json!({"pattern": "a \\+ b"}), &ctx);
//! assert_eq!(r.content, "Found 1 match\n\nsrc/lib.rs\nLine 2:     a + b");
//!
//! let staged = Arc::new(OverlayFs::new(mem.clone(), "/w".as_ref(), Arc::new(MemFs::new()), "/w".as_ref())?);
//! let tools = Tools::on_workspace(Config::default(), staged.clone());
//! tools.call("read", &json!({"file_path": "src/lib.rs"}), &ctx);
//! let r = tools.call("edit", &json!({"file_path": "src/lib.rs", "old_string": "a + b",
//!                                    "new_string": "a.wrapping_add(b)"}), &ctx);
//! assert!(!r.is_error, "{}", r.content);
//! assert!(staged.diff()?.contains("+    a.wrapping_add(b)"));
//! assert!(std::str::from_utf8(&mem.read_file("/w/src/lib.rs")?).unwrap().contains("a + b"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

// The unit tests name the crate as the integration tests do (the helpers
// they share with them, `tests/util/fs.rs`, are written that way).
#[cfg(test)]
extern crate self as dsh_search;

pub mod backend;
// Cancellation, from the crate under the filesystems (`dsh-search-base`).
use dsh_search_base::cancel;
pub mod config;
pub mod event;
/// The filesystems: the crate `dsh-search-fs`, under the engine, the index
/// and the tools.
#[doc(inline)]
pub use dsh_search_fs as fs;
mod guard;
mod index;
mod invocation;
// JavaScript's `trim`, shared with the filesystem's path resolution.
use dsh_search_base::js;
mod outcome;
// Directories private to the user, checked before anything is read from
// them or written to them (the index's store, the spill's sessions).
mod private;
// How names are shown to the model, shared with an overlay's diff.
use dsh_search_base::quoting;
mod request;
mod session;
mod spill;
// Locks that outlive a panic (the crate, its binary and its Node binding),
// from `dsh-search-base`.
pub use dsh_search_base::sync;
pub mod tool;

mod workspace;

// The backends, the engine's settings and the two invocations.
pub use backend::rg::{glob_args, grep_args, rg_from_env, RgCommand, RgConfig, RgError, RG_ENV};
pub use backend::{make_backend, BackendKind, NativeBackend, RgBackend, SearchBackend};
pub use backend::{
    set_helper_delay, set_search_threads, set_search_threads_from_env, Engine, EngineBuilder,
};
pub use cancel::{cancelled_error, CancelToken};
pub use request::{GlobRequest, GrepRequest, DEFAULT_RAW_OUTPUT_MAX_BYTES};

// What a backend returns.
pub use event::Event;
pub use outcome::{GlobResults, GrepResults, Outcome, Status};

// The tools, their configuration and what they keep.
pub use config::{Config, ConfigError};
pub use guard::{Guard, MemoryCounters, ZeroResultStore};
pub use session::Sessions;
pub use spill::{LocalSpillStore, SpillRef, SpillSource, SpillStore};
pub use tool::{CallContext, CallGuard, ToolError, ToolName, ToolResult, Tools};

// The filesystems, and a workspace described as the command line and the
// Node binding describe it.
pub use fs::{DynFileSystem, FileSystem, LocalFs, MemFs, OverlayFs, TextFs};
#[cfg(feature = "sftp")]
pub use fs::{SftpBuilder, SftpFs};
pub use index::{Answer, Index, IndexStatus, IndexWatch, IndexedBackend};
pub use workspace::{
    known_hosts_from_env, ssh_user_from_env, FsSpec, ParseFsSpecError, SftpAddress, Workspace,
    WorkspaceError, WorkspaceOptions,
};

// rg's own argv, answered with rg's bytes.
pub use invocation::{Invocation, InvocationError, RawOutput, RawRun};

/// Entry points of the fuzz targets (`fuzz/`) into private parsers; built
/// only by `cargo fuzz` (`--cfg fuzzing`), never part of the API.
#[cfg(all(fuzzing, feature = "sftp"))]
#[doc(hidden)]
pub mod fuzzing {
    /// `known_hosts` text read and matched.
    pub fn known_hosts(data: &[u8]) {
        crate::fs::fuzz_known_hosts(data)
    }

    /// An SFTP reply: its type byte, then its body.
    pub fn sftp_reply(data: &[u8]) {
        crate::fs::fuzz_sftp_reply(data)
    }

    /// A session channel's data: a seed for the chunks' sizes, then the
    /// stream of packets.
    pub fn sftp_stream(data: &[u8]) {
        crate::fs::fuzz_sftp_stream(data)
    }

    /// A saved index, as a whole file and as a tree.
    pub fn index_load(data: &[u8]) {
        crate::index::fuzz_saved(data)
    }
}

/// The README's Rust examples, compiled by `cargo test --doc` so that they
/// stay true. They run too, but for two marked `no_run`: the first works on
/// a placeholder workspace path (`/path/to/workspace`), the second logs in
/// to a host that does not exist (`dev.example.org`).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

/// The workspaces' example (`docs/workspaces.md`), compiled and run as
/// the README's are.
#[cfg(doctest)]
#[doc = include_str!("../docs/workspaces.md")]
struct WorkspacesDoctests;
