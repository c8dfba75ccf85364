//! The override globs of both invocations (`hiargs.rs: globs`;
//! rg-semantics.md §3, §10.2) and glob's filter built on them.

use std::path::Path;

use ignore::overrides::{Override, OverrideBuilder};

use super::globstack::{nesting_bound, too_deep, with_stack_for, MAX_NESTING};
use super::paths::Root;
use crate::fs::names::{is_sep, path_bytes};
use crate::request::{vcs_exclude_globs, VCS_DIRS};

/// `hiargs.rs: globs`: one `OverrideBuilder` rooted at the CWD, the
/// globs added in argv order. The error is the text rg prints. The builder
/// lives and dies on a stack deep enough for the globs (`globstack`).
pub(crate) fn overrides(real_workdir: &Path, globs: &[&str]) -> Result<Override, String> {
    if globs.is_empty() {
        return Ok(Override::empty());
    }
    let nesting = globs.iter().map(|g| nesting_bound(g)).max().unwrap_or(0);
    with_stack_for(nesting, || {
        let mut b = OverrideBuilder::new(real_workdir);
        for g in globs {
            if nesting_bound(g) > MAX_NESTING {
                return Err(too_deep(g));
            }
            b.add(g).map_err(|e| e.to_string())?;
        }
        b.build().map_err(|e| e.to_string())
    })?
}

/// The glob invocation's globs: the user's first, then the VCS excludes.
pub(crate) fn glob_overrides(real_workdir: &Path, pattern: &str) -> Result<Override, String> {
    // rg's VCS excludes come after the user glob in the glob argv.
    let excludes: Vec<String> = vcs_exclude_globs().collect();
    let mut globs = vec![pattern];
    globs.extend(excludes.iter().map(String::as_str));
    overrides(real_workdir, &globs)
}

/// The glob invocation's override decision, made in two steps where that
/// is exact: the twelve VCS excludes come last, so when one matches the
/// path is ignored, and otherwise the user's glob alone decides. The
/// excludes are `**/X` and `**/X/**` (with `literal_separator`), which
/// match exactly the paths with a `/`-separated segment equal to `X`; a
/// scan for such a segment replaces their regex set, the costliest part of
/// matching a path. That holds for the path the matcher sees after
/// `Gitignore::strip` (ignore 0.4.29 `gitignore.rs`) removes the
/// workdir prefix byte-wise (on Windows component-wise, and the glob sees
/// `\` as `/`: `globset`'s `Candidate` normalizes it), so the split is used only when every walked
/// path is the workdir, a `/`, then the rest (a relative root) and the
/// workdir has no such segment itself; otherwise the whole override set
/// decides, as rg's does.
///
/// The user's glob `*` (the listing of everything) has no `/`, so it is
/// matched as `**/*` (`GitignoreBuilder::add_line`), which every path with
/// a name matches: a whitelist, never an ignore; it is not matched at all.
pub(crate) struct GlobFilter {
    full: Override,
    user: Option<User>,
    /// The root, when rg matches the path it walks rather than what the
    /// workdir's strip leaves of ours ([`Root::matched_as_walked`]).
    rg_root: Option<Root>,
}

enum UserGlob {
    /// `*`: every path.
    Everything,
    Glob(Override),
}

/// The user's glob, and whether the walk's root path already has a VCS
/// segment (every path below it then has one).
struct User {
    glob: UserGlob,
    root_in_vcs: bool,
}

impl GlobFilter {
    /// The filter for walking `root` from the workdir `real_workdir`; the
    /// error is the text rg prints for a bad glob.
    pub(crate) fn new(
        real_workdir: &Path,
        pattern: &str,
        root: &Root,
    ) -> Result<GlobFilter, String> {
        let full = glob_overrides(real_workdir, pattern)?;
        if !root.matched_as_walked() {
            return Ok(GlobFilter {
                full,
                user: None,
                rg_root: Some(root.clone()),
            });
        }
        let wc_bytes = path_bytes(real_workdir);
        let below = path_bytes(root.walk_path())
            .strip_prefix(wc_bytes)
            .is_some_and(|rest| rest.first().is_some_and(|&b| is_sep(b)));
        let glob = if !below || has_vcs_segment(wc_bytes) {
            None
        } else if pattern == "*" {
            Some(UserGlob::Everything)
        } else {
            Some(UserGlob::Glob(overrides(real_workdir, &[pattern])?))
        };
        let root_in_vcs = has_vcs_segment(path_bytes(root.walk_path()));
        let user = glob.map(|glob| User { glob, root_in_vcs });
        Ok(GlobFilter {
            full,
            user,
            rg_root: None,
        })
    }

    /// Whether rg leaves out `path` (absolute, below the walk root), the
    /// entry `name` of a directory the walk visited: the root, or a
    /// directory this filter kept. Its ancestors below the root were kept,
    /// so none of them is a VCS directory, and of the VCS excludes only the
    /// root's path and the name itself are left to look at.
    pub(crate) fn ignored(&self, path: &Path, name: &[u8], is_dir: bool) -> bool {
        if let Some(root) = &self.rg_root {
            return self.full.matched(root.rg_path(path), is_dir).is_ignore();
        }
        match &self.user {
            Some(user) => {
                user.root_in_vcs
                    || VCS_DIRS.iter().any(|v| v.as_bytes() == name)
                    || match &user.glob {
                        UserGlob::Everything => false,
                        UserGlob::Glob(override_set) => {
                            override_set.matched(path, is_dir).is_ignore()
                        }
                    }
            }
            None => self.full.matched(path, is_dir).is_ignore(),
        }
    }
}

fn has_vcs_segment(path: &[u8]) -> bool {
    path.split(|&b| is_sep(b))
        .any(|seg| VCS_DIRS.iter().any(|name| name.as_bytes() == seg))
}
