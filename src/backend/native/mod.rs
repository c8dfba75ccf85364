//! The in-process engine: rg 15.2.0's two invocations (`contract.md` §2)
//! rebuilt from ripgrep's own crates, configured as `crates/core/flags/
//! hiargs.rs` configures them (`rg-semantics.md` §10).
//!
//! The engine never reads or changes the process's current directory: the
//! workdir is canonicalized (rg's `getcwd`) and every relative path is walked
//! as an absolute one that rg's matchers see the same way ([`paths`]).

mod fifo;
mod glob;
mod grep;
mod matcher;
mod messages;
mod paths;
mod sink;
mod walk;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::backend::SearchBackend;
use crate::cancel::CancelToken;
use crate::outcome::{GlobResults, GrepResults, Outcome, Status};
use crate::request::{GlobRequest, GrepRequest};

/// The in-process engine built on ripgrep's crates.
#[derive(Clone, Debug, Default)]
pub struct NativeBackend {}

impl NativeBackend {
    /// A new native backend.
    pub fn new() -> NativeBackend {
        NativeBackend {}
    }
}

impl SearchBackend for NativeBackend {
    fn name(&self) -> &'static str {
        "native"
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        glob::run(req)
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        grep::run(req)
    }
}

/// The workdir as rg's `getcwd` would report it, or why rg could not start
/// there (the rg backend cannot spawn a process in it either).
fn canonical_workdir(workdir: &Path) -> Result<PathBuf, String> {
    let wc = workdir
        .canonicalize()
        .map_err(|e| format!("workdir {}: {e}", workdir.display()))?;
    if !wc.is_dir() {
        return Err(format!("workdir {}: not a directory", workdir.display()));
    }
    Ok(wc)
}

/// A NUL cannot be passed in an argv: rg could not be started with it.
fn check_arg(name: &str, value: Option<&str>) -> Result<(), String> {
    match value {
        Some(v) if v.contains('\0') => Err(format!("{name} contains a NUL byte")),
        _ => Ok(()),
    }
}

/// The raw-output budget and the cancellation flag, shared by every thread
/// of one call: whichever trips first stops all work.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: Option<u64>,
    used: AtomicU64,
    over: AtomicBool,
    cancel: CancelToken,
}

impl Budget {
    fn new(limit: Option<u64>, cancel: CancelToken) -> Budget {
        Budget {
            limit,
            used: AtomicU64::new(0),
            over: AtomicBool::new(false),
            cancel,
        }
    }

    /// Count `n` more stdout bytes. False once the budget is crossed or the
    /// call was cancelled.
    pub(crate) fn spend(&self, n: u64) -> bool {
        let total = self.used.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(limit) = self.limit {
            if total > limit {
                self.over.store(true, Ordering::Relaxed);
            }
        }
        !self.stopped()
    }

    /// Whether work must stop now.
    pub(crate) fn stopped(&self) -> bool {
        self.over.load(Ordering::Relaxed) || self.cancel.is_cancelled()
    }

    pub(crate) fn cancel(&self) -> &CancelToken {
        &self.cancel
    }

    /// The status of a call that ran to its end with `exit` as rg's code.
    fn status(&self, exit: i32) -> Status {
        if self.cancel.is_cancelled() {
            Status::Cancelled
        } else if self.over.load(Ordering::Relaxed) {
            Status::OverBudget
        } else {
            Status::Exited(exit)
        }
    }
}

/// `main.rs: run` (L77): 0 when something matched and nothing failed.
fn exit_code(matched: bool, errored: bool) -> i32 {
    if matched && !errored {
        0
    } else if errored {
        2
    } else {
        1
    }
}
