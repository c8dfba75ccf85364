//! Backend-neutral requests for the two fixed invocations (`contract.md` §2).

use std::path::PathBuf;

use crate::cancel::CancelToken;

/// The default raw-output budget: the number of stdout bytes rg may print
/// before the call is stopped (`rawOutputMaxBytes`, `seed-reference.md` §9.1).
pub const DEFAULT_RAW_OUTPUT_MAX_BYTES: u64 = 20_000_000;

/// A glob request: what `rg --files --glob=<pattern> --sort=modified
/// --no-ignore --hidden <vcs excludes> [-- <path>]` run in `workdir` lists.
#[derive(Clone, Debug)]
pub struct GlobRequest {
    /// The glob, passed verbatim as `--glob=<pattern>`.
    pub pattern: String,
    /// The search path, passed verbatim after `--`; `None` walks `./`.
    pub path: Option<String>,
    /// The directory rg runs in. Relative paths resolve against it.
    pub workdir: PathBuf,
    /// Stops the work when set.
    pub cancel: CancelToken,
    /// Stop once rg's stdout would exceed this many bytes. `None`: unlimited.
    pub raw_budget: Option<u64>,
}

/// A grep request: what `rg --json --regexp=<pattern> [--glob=<include>]
/// [-- <path>]` run in `workdir` prints.
#[derive(Clone, Debug)]
pub struct GrepRequest {
    /// The regex, passed verbatim as `--regexp=<pattern>`.
    pub pattern: String,
    /// The search path, passed verbatim after `--`; `None` walks `./`.
    pub path: Option<String>,
    /// One override glob, passed verbatim as `--glob=<include>`.
    pub include: Option<String>,
    /// The directory rg runs in. Relative paths resolve against it.
    pub workdir: PathBuf,
    /// Stops the work when set.
    pub cancel: CancelToken,
    /// Stop once rg's stdout would exceed this many bytes. `None`: unlimited.
    pub raw_budget: Option<u64>,
}

impl GlobRequest {
    /// A request with no path, no cancellation and no budget.
    pub fn new(pattern: impl Into<String>, workdir: impl Into<PathBuf>) -> GlobRequest {
        GlobRequest {
            pattern: pattern.into(),
            path: None,
            workdir: workdir.into(),
            cancel: CancelToken::new(),
            raw_budget: None,
        }
    }

    /// Set the search path.
    pub fn path(mut self, path: impl Into<String>) -> GlobRequest {
        self.path = Some(path.into());
        self
    }
}

impl GrepRequest {
    /// A request with no path, no include, no cancellation and no budget.
    pub fn new(pattern: impl Into<String>, workdir: impl Into<PathBuf>) -> GrepRequest {
        GrepRequest {
            pattern: pattern.into(),
            path: None,
            include: None,
            workdir: workdir.into(),
            cancel: CancelToken::new(),
            raw_budget: None,
        }
    }

    /// Set the search path.
    pub fn path(mut self, path: impl Into<String>) -> GrepRequest {
        self.path = Some(path.into());
        self
    }

    /// Set the include glob.
    pub fn include(mut self, include: impl Into<String>) -> GrepRequest {
        self.include = Some(include.into());
        self
    }
}
