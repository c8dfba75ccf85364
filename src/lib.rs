//! dsh-search: the glob and grep tools of a coding agent, in-process.
//!
//! The data flows top to bottom through these modules:
//!
//! 1. [`request`]: a [`GlobRequest`] or [`GrepRequest`], the two fixed rg
//!    invocations of `contract.md` §2 as values.
//! 2. [`backend`]: the [`SearchBackend`] trait, with the in-process
//!    [`NativeBackend`] and the [`RgBackend`] that spawns a real `rg`.
//! 3. [`outcome`] and [`event`]: what a backend returns: rg's exit status,
//!    its stderr lines, the listed files or the typed `--json` events.
//! 4. The model-facing tools built on them.

pub mod backend;
pub mod bench;
pub mod cancel;
pub mod cli;
pub mod config;
pub mod event;
pub mod fs;
pub mod guard;
pub mod outcome;
pub mod request;
pub mod session;
pub mod spill;
pub mod tool;

pub use backend::{BackendKind, NativeBackend, RgBackend, SearchBackend};
pub use cancel::CancelToken;
pub use event::Event;
pub use outcome::{GlobResults, GrepResults, Outcome, Status};
pub use request::{GlobRequest, GrepRequest};
