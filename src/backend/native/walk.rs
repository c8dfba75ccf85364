//! The `WalkBuilder` configuration of both invocations (`hiargs.rs:
//! walk_builder`, L874; rg-semantics.md §3, §10.2).

use std::path::Path;

use ignore::overrides::{Override, OverrideBuilder};
use ignore::WalkBuilder;

use super::rgignore::RgIgnore;

/// rg's VCS excludes, added after the user glob in the glob argv.
const VCS_EXCLUDES: [&str; 12] = [
    "!**/.git",
    "!**/.git/**",
    "!**/.svn",
    "!**/.svn/**",
    "!**/.hg",
    "!**/.hg/**",
    "!**/.bzr",
    "!**/.bzr/**",
    "!**/.jj",
    "!**/.jj/**",
    "!**/.sl",
    "!**/.sl/**",
];

/// `hiargs.rs: globs` (L1213): one `OverrideBuilder` rooted at the CWD, the
/// globs added in argv order. The error is the text rg prints.
pub(crate) fn overrides(wc: &Path, globs: &[&str]) -> Result<Override, String> {
    if globs.is_empty() {
        return Ok(Override::empty());
    }
    let mut b = OverrideBuilder::new(wc);
    for g in globs {
        b.add(g).map_err(|e| e.to_string())?;
    }
    b.build().map_err(|e| e.to_string())
}

/// The glob invocation's globs: the user's first, then the VCS excludes.
pub(crate) fn glob_overrides(wc: &Path, pattern: &str) -> Result<Override, String> {
    let mut globs = vec![pattern];
    globs.extend(VCS_EXCLUDES);
    overrides(wc, &globs)
}

/// The directory names the VCS excludes are about.
const VCS_NAMES: [&[u8]; 6] = [b".git", b".svn", b".hg", b".bzr", b".jj", b".sl"];

/// The glob invocation's override decision, made in two steps where that
/// is exact: the twelve VCS excludes come last, so when one matches the
/// path is ignored, and otherwise the user's glob alone decides. The
/// excludes are `**/X` and `**/X/**` (with `literal_separator`), which
/// match exactly the paths with a `/`-separated segment equal to `X`; a
/// scan for such a segment replaces their regex set, the costliest part of
/// matching a path. That holds for the path the matcher sees after
/// `Gitignore::strip` (ignore 0.4.29 `gitignore.rs` L286) removes the
/// workdir prefix byte-wise, so the split is used only when every walked
/// path is the workdir, a `/`, then the rest (a relative root) and the
/// workdir has no such segment itself; otherwise the whole override set
/// decides, as rg's does.
///
/// The user's glob `*` (the listing of everything) has no `/`, so it is
/// matched as `**/*` (`GitignoreBuilder::add_line`), which every path with
/// a name matches: a whitelist, never an ignore; it is not matched at all.
pub(crate) struct GlobFilter {
    full: Override,
    user: Option<UserGlob>,
}

enum UserGlob {
    /// `*`: every path.
    Everything,
    Glob(Override),
}

impl GlobFilter {
    /// The filter for walking `walk_root` from the workdir `wc`; the error
    /// is the text rg prints for a bad glob.
    pub(crate) fn new(wc: &Path, pattern: &str, walk_root: &Path) -> Result<GlobFilter, String> {
        use std::os::unix::ffi::OsStrExt;
        let full = glob_overrides(wc, pattern)?;
        let wc_bytes = wc.as_os_str().as_bytes();
        let below = walk_root
            .as_os_str()
            .as_bytes()
            .strip_prefix(wc_bytes)
            .is_some_and(|rest| rest.starts_with(b"/"));
        let user = if !below || has_vcs_segment(wc_bytes) {
            None
        } else if pattern == "*" {
            Some(UserGlob::Everything)
        } else {
            Some(UserGlob::Glob(overrides(wc, &[pattern])?))
        };
        Ok(GlobFilter { full, user })
    }

    /// The whole override set, for the crate's walker.
    pub(crate) fn into_full(self) -> Override {
        self.full
    }

    /// Whether rg leaves `path` (absolute, below the walk root) out.
    pub(crate) fn ignored(&self, path: &Path, is_dir: bool) -> bool {
        use std::os::unix::ffi::OsStrExt;
        match &self.user {
            Some(user) => {
                has_vcs_segment(path.as_os_str().as_bytes())
                    || match user {
                        UserGlob::Everything => false,
                        UserGlob::Glob(ov) => ov.matched(path, is_dir).is_ignore(),
                    }
            }
            None => self.full.matched(path, is_dir).is_ignore(),
        }
    }
}

fn has_vcs_segment(path: &[u8]) -> bool {
    path.split(|&b| b == b'/')
        .any(|seg| VCS_NAMES.contains(&seg))
}

/// Settings common to both invocations.
fn common(root: &Path, wc: &Path, ov: Override) -> WalkBuilder {
    let mut b = WalkBuilder::new(root);
    b.max_depth(None)
        .follow_links(false)
        .max_filesize(None)
        .same_file_system(false)
        .overrides(ov)
        .require_git(true)
        .ignore_case_insensitive(false)
        .current_dir(wc);
    b
}

/// `--files --no-ignore --hidden`: every filter off, sequential.
pub(crate) fn glob_walker(root: &Path, wc: &Path, ov: Override) -> WalkBuilder {
    let mut b = common(root, wc, ov);
    b.threads(1)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(false)
        .git_exclude(false);
    b
}

/// grep with rg's default filters and `.rgignore`.
pub(crate) fn grep_walker(root: &Path, wc: &Path, ov: Override, threads: usize) -> WalkBuilder {
    let mut b = common(root, wc, ov);
    b.threads(threads)
        .hidden(true)
        .parents(true)
        .ignore(true)
        .git_global(true)
        .git_ignore(true)
        .git_exclude(true)
        .add_custom_ignore_filename(".rgignore");
    b
}

/// grep over a directory: the crate's own filters off, every entry below
/// the root decided by [`RgIgnore::keep`] on rg's path strings.
pub(crate) fn grep_walker_rg(
    root: &Path,
    wc: &Path,
    rgi: std::sync::Arc<RgIgnore>,
    threads: usize,
) -> WalkBuilder {
    let mut b = common(root, wc, Override::empty());
    b.threads(threads)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_global(false)
        .git_ignore(false)
        .git_exclude(false)
        .filter_entry(move |dent| rgi.keep(dent));
    b
}

/// `haystack.rs: Haystack::is_explicit` (depth 0 and not a directory after
/// following a symlink) or `is_file`: whether rg searches or lists `dent`.
pub(crate) fn is_haystack(dent: &ignore::DirEntry) -> Option<bool> {
    let explicit = dent.depth() == 0 && !is_dir(dent);
    if explicit {
        return Some(true);
    }
    if dent.file_type().is_some_and(|ft| ft.is_file()) {
        return Some(false);
    }
    None
}

fn is_dir(dent: &ignore::DirEntry) -> bool {
    match dent.file_type() {
        None => false,
        Some(ft) if ft.is_dir() => true,
        // The walk path is absolute, so this does not depend on the CWD.
        Some(_) => dent.path_is_symlink() && dent.path().is_dir(),
    }
}
