//! Walking a request's path without touching the process's current directory.
//!
//! rg walks the path exactly as typed and resolves it against its CWD; its
//! override matcher (`ignore` 0.4.29 `gitignore.rs: Gitignore::strip`)
//! then removes a leading `./` (once in `dir.rs: Ignore::matched`, once more
//! in `strip`), the CWD prefix byte-wise, and one `/`. We walk an absolute
//! path `A` instead, built so that `strip` turns every entry below `A` into
//! the same bytes rg's matcher sees, and print each entry as rg would: the
//! typed path joined (`PathBuf::join`) with the entry's suffix below `A`.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::fs::names::{ends_with_sep, os_str, path_buf, path_bytes, JOIN_SEP};

/// One search root: what the user typed and the absolute path walked for it.
#[derive(Clone, Debug)]
pub(crate) struct Root {
    /// The path as typed; `./` for the implicit path.
    given: PathBuf,
    /// Whether there was no path argument (`haystack.rs: strip_dot_prefix`).
    implicit: bool,
    /// The absolute path handed to the walker.
    walk: PathBuf,
}

impl Root {
    /// The root for `path` (`None`: the implicit `./`) in the canonical
    /// workdir `real_workdir`.
    pub(crate) fn new(real_workdir: &Path, path: Option<&OsStr>) -> Root {
        let implicit = path.is_none();
        let given = PathBuf::from(path.unwrap_or(OsStr::new("./")));
        // An empty path names nothing: rg reports ENOENT for it, and so
        // does walking the empty path (without resolving it anywhere).
        let walk = if given.is_absolute() || given.as_os_str().is_empty() {
            given.clone()
        } else if let Some(walk) = windows_anchored(real_workdir, &given) {
            walk
        } else {
            let typed = path_bytes(&given);
            // rg's matcher strips `./` at most twice (`Ignore::matched`, then
            // `Gitignore::strip`); a `/` is appended first so that `.` and
            // `./.` reduce to nothing, like the `./x` entries rg sees.
            let mut x = typed.to_vec();
            if !x.ends_with(b"/") {
                x.push(b'/');
            }
            let mut rest: &[u8] = &x;
            for _ in 0..2 {
                if let Some(r) = rest.strip_prefix(b"./") {
                    rest = r;
                }
            }
            let mut rest = rest.to_vec();
            // Keep the typed trailing slash or its absence: `f/` on a file
            // must fail with ENOTDIR as it does for rg.
            if !typed.ends_with(b"/") && !rest.is_empty() {
                rest.pop();
            }
            let mut a = path_bytes(real_workdir).to_vec();
            a.push(JOIN_SEP);
            a.extend_from_slice(&rest);
            path_buf(a)
        };
        Root {
            given,
            implicit,
            walk,
        }
    }

    /// The path as typed; `./` for the implicit path (the root directory's
    /// name in rg's walk).
    pub(crate) fn given(&self) -> &Path {
        &self.given
    }

    /// The absolute path to walk.
    pub(crate) fn walk_path(&self) -> &Path {
        &self.walk
    }

    /// Whether there was no path argument.
    pub(crate) fn is_implicit(&self) -> bool {
        self.implicit
    }

    /// Whether rg's override matcher sees the entries below this root as
    /// the walked paths do once it strips the workdir from them. Not for a
    /// Windows path anchored to a root or a drive but not both (`\x`,
    /// `C:x`): rg's walk names its entries that way, and the workdir
    /// (`C:\w`) is no prefix of such a path component by component, so
    /// rg matches the whole path (`Gitignore::strip`); the caller then
    /// matches the path rg walks ([`Root::rg_path`]).
    pub(crate) fn matched_as_walked(&self) -> bool {
        self.given.is_absolute()
            || self.given.as_os_str().is_empty()
            || !(self.given.has_root() || has_prefix(&self.given))
    }

    /// The path rg would have walked for `walked` (an entry below the walk
    /// path), before `./` stripping: what rg puts in walk error messages.
    /// Paths outside the walk path (an ancestor's ignore file, the global
    /// excludes file) are returned unchanged.
    pub(crate) fn rg_path(&self, walked: &Path) -> PathBuf {
        if self.given.is_absolute() || self.walk.as_os_str().is_empty() {
            return walked.to_path_buf();
        }
        let a = path_bytes(&self.walk);
        let w = path_bytes(walked);
        let Some(suffix) = w.strip_prefix(a) else {
            return walked.to_path_buf();
        };
        let suffix = if ends_with_sep(a) || suffix.is_empty() {
            suffix
        } else if let Some(s) = suffix.strip_prefix(&[JOIN_SEP]) {
            s
        } else {
            // `A` = `/w/src` and the path is `/w/srcx`: not below the root.
            return walked.to_path_buf();
        };
        if suffix.is_empty() {
            self.given.clone()
        } else {
            self.given.join(os_str(suffix))
        }
    }

    /// The path rg prints for a haystack found at `walked`: [`Root::rg_path`]
    /// then, for the implicit path only, a leading `./` component removed
    /// (`haystack.rs: Haystack::path`).
    pub(crate) fn display(&self, walked: &Path) -> Vec<u8> {
        self.display_rg(&self.rg_path(walked))
    }

    /// What rg prints for an entry given by `path`, in the form `form`.
    pub(crate) fn printed(&self, path: &Path, form: PathForm) -> Vec<u8> {
        match form {
            PathForm::Rg => self.display_rg(path),
            PathForm::Walked => self.display(path),
        }
    }

    /// [`Root::display`] of an entry given by the path rg walks for it
    /// (what [`Root::rg_path`] returns).
    pub(crate) fn display_rg(&self, rg: &Path) -> Vec<u8> {
        if self.implicit && rg.starts_with("./") {
            if let Ok(s) = rg.strip_prefix("./") {
                return path_bytes(s).to_vec();
            }
        }
        path_bytes(rg).to_vec()
    }
}

/// Whether `p` starts with a drive or UNC prefix (Windows only).
fn has_prefix(p: &Path) -> bool {
    matches!(p.components().next(), Some(std::path::Component::Prefix(_)))
}

/// The absolute path rg reaches for a Windows path that is neither
/// absolute nor relative to its CWD, run in `real_workdir`: `\x` is on the
/// workdir's drive (`C:\x`); `D:x` is relative to drive `D:`'s current
/// directory, which is the workdir on the workdir's drive and, taken here,
/// the drive's root on another (rg would follow a per-drive `=D:`
/// variable of its environment, which the engine does not read). `None`
/// for every other path, and always on Unix.
fn windows_anchored(real_workdir: &Path, given: &Path) -> Option<PathBuf> {
    if !cfg!(windows) {
        return None;
    }
    match given.components().next()? {
        // `\x`: `Path::join` keeps the workdir's prefix.
        std::path::Component::RootDir => Some(real_workdir.join(given)),
        std::path::Component::Prefix(_) if !given.has_root() => {
            crate::fs::resolve::drive_relative(real_workdir, given)
        }
        _ => None,
    }
}

/// Which path an entry is given by: the engine's and rg's walks name the
/// same file differently ([`Root::rg_path`] turns one into the other).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PathForm {
    /// The engine's absolute walk path.
    Walked,
    /// The path rg walks for it (what [`Root::rg_path`] returns).
    Rg,
}

/// Linux's `PATH_MAX`, counting the terminating NUL: rg opens and lists by
/// path (`std::fs::read_dir`, `File::open` of the path it walks), so a path
/// of 4,096 bytes or more fails there with `ENAMETOOLONG`, where the
/// engine's descriptor-relative walk would go on. Elsewhere the engine does
/// not reproduce the limit.
#[cfg(target_os = "linux")]
const RG_PATH_MAX: usize = 4096;

/// Whether rg's `open(2)` of its path `rg_path` fails as too long.
pub(crate) fn too_long_for_rg(rg_path: &Path) -> bool {
    #[cfg(target_os = "linux")]
    {
        rg_path.as_os_str().len() >= RG_PATH_MAX
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = rg_path;
        false
    }
}

/// [`too_long_for_rg`] for a path of `len` bytes.
pub(crate) fn too_long_for_rg_len(len: usize) -> bool {
    #[cfg(target_os = "linux")]
    {
        len >= RG_PATH_MAX
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = len;
        false
    }
}

/// Whether `err` is `ENAMETOOLONG`.
pub(crate) fn is_name_too_long(err: &std::io::Error) -> bool {
    #[cfg(target_os = "linux")]
    {
        err.raw_os_error() == Some(36)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = err;
        false
    }
}

/// The error rg gets for such a path: `File name too long (os error 36)`.
pub(crate) fn name_too_long() -> std::io::Error {
    #[cfg(target_os = "linux")]
    {
        std::io::Error::from_raw_os_error(36)
    }
    #[cfg(not(target_os = "linux"))]
    {
        std::io::Error::other("File name too long")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    fn walk(p: Option<&str>) -> String {
        Root::new(Path::new("/w"), p.map(OsStr::new))
            .walk_path()
            .to_string_lossy()
            .into_owned()
    }

    fn shown(p: Option<&str>, entry_below_a: &str) -> String {
        let r = Root::new(Path::new("/w"), p.map(OsStr::new));
        let mut e = r.walk_path().as_os_str().as_bytes().to_vec();
        if !e.ends_with(b"/") && !entry_below_a.is_empty() {
            e.push(b'/');
        }
        e.extend_from_slice(entry_below_a.as_bytes());
        String::from_utf8(r.display(Path::new(OsStr::from_bytes(&e)))).unwrap()
    }

    // Walk paths: `strip` of `A/x` must equal what rg's matcher sees for the
    // typed path's entries (rg-semantics.md §4, E8).
    #[test]
    fn walk_paths() {
        assert_eq!(walk(None), "/w/");
        assert_eq!(walk(Some(".")), "/w/");
        assert_eq!(walk(Some("./")), "/w/");
        assert_eq!(walk(Some("./.")), "/w/");
        assert_eq!(walk(Some("src")), "/w/src");
        assert_eq!(walk(Some("./src")), "/w/src");
        assert_eq!(walk(Some("src/")), "/w/src/");
        assert_eq!(walk(Some("src//")), "/w/src//");
        assert_eq!(walk(Some(".//src")), "/w//src");
        assert_eq!(walk(Some("././src")), "/w/src");
        assert_eq!(walk(Some("..")), "/w/..");
        assert_eq!(walk(Some("/abs/./x")), "/abs/./x");
        assert_eq!(walk(Some("")), "");
    }

    // Printed paths: rg-semantics.md §6 table (P1, P2), checked with rg.
    #[test]
    fn printed_paths() {
        assert_eq!(shown(None, "a"), "a");
        assert_eq!(shown(None, "d/a"), "d/a");
        assert_eq!(shown(Some("."), "a"), "./a");
        assert_eq!(shown(Some("./"), "a"), "./a");
        assert_eq!(shown(Some("src"), "a"), "src/a");
        assert_eq!(shown(Some("src/"), "a"), "src/a");
        assert_eq!(shown(Some("src//"), "a"), "src//a");
        assert_eq!(shown(Some("./src/"), "a"), "./src/a");
        assert_eq!(shown(Some(".."), "x"), "../x");
        assert_eq!(shown(Some("f"), ""), "f");
        assert_eq!(shown(Some("./src/a.rs"), ""), "./src/a.rs");
        assert_eq!(shown(Some("/abs/d"), "a"), "/abs/d/a");
    }

    #[test]
    fn errors_keep_dot_slash() {
        let r = Root::new(Path::new("/w"), None);
        assert_eq!(r.rg_path(Path::new("/w/d")), Path::new("./d"));
        assert_eq!(
            r.rg_path(Path::new("/elsewhere/.gitignore")),
            Path::new("/elsewhere/.gitignore")
        );
        let r = Root::new(Path::new("/w"), Some(OsStr::new("src")));
        assert_eq!(r.rg_path(Path::new("/w/srcx")), Path::new("/w/srcx"));
        assert_eq!(r.rg_path(Path::new("/w/src")), Path::new("src"));
    }
}
