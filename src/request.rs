//! The two requests a backend answers, [`GlobRequest`] and
//! [`GrepRequest`] (`contract.md` §2), with the raw-output budget's default
//! and the one list of VCS directories glob excludes.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::cancel::CancelToken;

/// The default raw-output budget: the number of stdout bytes rg may print
/// before the call is stopped (`rawOutputMaxBytes`, `seed-reference.md` §9.1).
pub const DEFAULT_RAW_OUTPUT_MAX_BYTES: u64 = 20_000_000;

/// The VCS directories the glob invocation excludes, in the seed's order
/// (`seed-reference.md` §1.1 step 6). The one list both backends read: the
/// rg argv spells each as two globs ([`vcs_exclude_globs`]), the native
/// walk builds the same globs and scans for the names.
pub(crate) const VCS_DIRS: [&str; 6] = [".git", ".svn", ".hg", ".bzr", ".jj", ".sl"];

/// [`VCS_DIRS`] as bytes, for the code that compares listed names (the
/// index's mirror).
pub(crate) const VCS_DIR_NAMES: [&[u8]; 6] = {
    let mut names: [&[u8]; 6] = [b""; 6];
    let mut i = 0;
    while i < names.len() {
        names[i] = VCS_DIRS[i].as_bytes();
        i += 1;
    }
    names
};

/// The twelve `--glob` values of the VCS excludes, in argv order: for each
/// directory, `!**/X` prunes it while walking and `!**/X/**` keeps its
/// contents out when the root is that directory (§1.1 step 6).
pub(crate) fn vcs_exclude_globs() -> impl Iterator<Item = String> {
    VCS_DIRS
        .iter()
        .flat_map(|name| [format!("!**/{name}"), format!("!**/{name}/**")])
}

/// A glob request: what `rg --files --glob=<pattern> --sort=modified
/// --no-ignore --hidden <vcs excludes> [-- <path>]` run in `workdir` lists.
#[derive(Clone, Debug)]
pub struct GlobRequest {
    /// The glob, passed verbatim as `--glob=<pattern>`.
    pub pattern: String,
    /// The search path, passed verbatim after `--`; `None` walks `./`.
    /// Any bytes an argv element can hold, as rg takes it (not only UTF-8).
    pub path: Option<OsString>,
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
    /// Any bytes an argv element can hold, as rg takes it (not only UTF-8).
    pub path: Option<OsString>,
    /// One override glob, passed verbatim as `--glob=<include>`.
    pub include: Option<String>,
    /// The directory rg runs in. Relative paths resolve against it.
    pub workdir: PathBuf,
    /// Stops the work when set.
    pub cancel: CancelToken,
    /// Stop once rg's stdout would exceed this many bytes. `None`: unlimited.
    pub raw_budget: Option<u64>,
}

/// The first of `args` (name, value) whose value holds a NUL. No argv can
/// carry one, so no rg can be started with it: the one check both the
/// native backend and the tools make (`contract.md` §3).
fn first_nul(args: &[(&'static str, Option<&[u8]>)]) -> Option<&'static str> {
    args.iter()
        .find(|(_, v)| v.is_some_and(|v| v.contains(&0)))
        .map(|(name, _)| *name)
}

/// A path's bytes for [`first_nul`].
fn path_bytes(path: &Option<OsString>) -> Option<&[u8]> {
    path.as_deref().map(std::ffi::OsStr::as_encoded_bytes)
}

impl GlobRequest {
    /// The name of the first argument (`pattern`, `path`) that holds a NUL.
    pub(crate) fn nul_argument(&self) -> Option<&'static str> {
        first_nul(&[
            ("pattern", Some(self.pattern.as_bytes())),
            ("path", path_bytes(&self.path)),
        ])
    }

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
    pub fn path(mut self, path: impl Into<OsString>) -> GlobRequest {
        self.path = Some(path.into());
        self
    }
}

impl GrepRequest {
    /// The name of the first argument (`pattern`, `path`, `include`) that
    /// holds a NUL.
    pub(crate) fn nul_argument(&self) -> Option<&'static str> {
        first_nul(&[
            ("pattern", Some(self.pattern.as_bytes())),
            ("path", path_bytes(&self.path)),
            ("include", self.include.as_deref().map(str::as_bytes)),
        ])
    }

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
    pub fn path(mut self, path: impl Into<OsString>) -> GrepRequest {
        self.path = Some(path.into());
        self
    }

    /// Set the include glob.
    pub fn include(mut self, include: impl Into<String>) -> GrepRequest {
        self.include = Some(include.into());
        self
    }
}
