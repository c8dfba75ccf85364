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
