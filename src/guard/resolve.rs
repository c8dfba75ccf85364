//! How the guard finds the target a call names, and what it says about a
//! target that does not exist.
//!
//! Two resolutions, because the tools resolve differently:
//!
//! - glob and grep hand `path` to the search as is, relative to the workdir
//!   (`seed-reference.md` §1.6): the operating system resolves it, so `..`
//!   after a symlink goes to the symlink target's parent. [`search_target`]
//!   stats the plain join, exactly what the search will open.
//! - read, write and edit resolve `file_path` lexically (`seed-reference.md`
//!   §6.1): when the workdir or the path has a `..` segment the workdir is
//!   canonicalized first, then the join is normalized without touching the
//!   disk. [`file_target`] does the same.
//!
//! Both give the same lexical key, used for the zero-result counters and for
//! the nearest existing ancestor in a denial.

use std::fs::Metadata;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::fs::resolve::{has_dotdot_segment, lexical_join};

/// The workdir of a call, when the guard can use it: an absolute path to an
/// existing directory. `None` means the guard cannot decide and allows.
#[derive(Clone, Debug)]
pub(crate) struct Workdir {
    /// The workdir as given.
    lexical: PathBuf,
    /// Its realpath, when it differs from `lexical` (symlinks, `..`).
    canonical: Option<PathBuf>,
}

impl Workdir {
    /// The workdir, if it is absolute and stats as a directory.
    pub(crate) fn usable(dir: &Path) -> Option<Workdir> {
        // A relative workdir would be resolved against the process's current
        // directory, which this crate never consults.
        if !dir.is_absolute() || !std::fs::metadata(dir).ok()?.is_dir() {
            return None;
        }
        let canonical = std::fs::canonicalize(dir).ok().filter(|c| c != dir);
        Some(Workdir {
            lexical: dir.to_path_buf(),
            canonical,
        })
    }

    /// `seed-reference.md` §6.1: the base a relative path is joined to. The
    /// realpath when the workdir or the path has a `..` segment (falling back
    /// to the workdir as is), otherwise the workdir as is.
    fn base(&self, raw: &Path) -> &Path {
        match &self.canonical {
            Some(c) if has_dotdot(&self.lexical) || has_dotdot(raw) => c,
            _ => &self.lexical,
        }
    }

    /// The lexical absolute form of `raw`, as the file tools resolve it
    /// (`seed-reference.md` §6.1).
    pub(crate) fn resolve(&self, raw: &str) -> PathBuf {
        let raw = Path::new(raw);
        lexical_join(self.base(raw), raw)
    }

    /// `p` the way the model writes paths: relative to the workdir when it
    /// is inside it (`.` for the workdir itself), absolute otherwise
    /// (`seed-reference.md` §2.3). Lossy for names that are not UTF-8.
    pub(crate) fn display(&self, p: &Path) -> String {
        let bases = [Some(&self.lexical), self.canonical.as_ref()];
        for base in bases.into_iter().flatten() {
            if let Ok(rel) = p.strip_prefix(base) {
                if rel.as_os_str().is_empty() {
                    return ".".to_string();
                }
                return rel.to_string_lossy().into_owned();
            }
        }
        p.to_string_lossy().into_owned()
    }
}

/// Whether `p` has a `..` segment (between separators or at either end).
fn has_dotdot(p: &Path) -> bool {
    has_dotdot_segment(&p.to_string_lossy())
}

/// What one stat says about a path.
#[derive(Debug)]
pub(crate) enum Presence {
    /// It exists (symlinks followed).
    Exists(Metadata),
    /// It certainly does not: not found, or a parent is not a directory.
    Absent,
    /// The stat failed for another reason (permission, loop, NUL, …): the
    /// guard cannot decide.
    Unknown,
}

/// Stat `p`, following symlinks as the tools do.
pub(crate) fn presence(p: &Path) -> Presence {
    match std::fs::metadata(p) {
        Ok(m) => Presence::Exists(m),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
            Presence::Absent
        }
        Err(_) => Presence::Unknown,
    }
}

/// glob's and grep's `path`, as the search will open it: the plain join,
/// resolved by the operating system (`seed-reference.md` §1.6).
pub(crate) fn search_target(wd: &Workdir, raw: &str) -> Presence {
    presence(&wd.lexical.join(raw))
}

/// read's and edit's `file_path`, resolved as the file tools do
/// (`seed-reference.md` §6.1).
pub(crate) fn file_target(wd: &Workdir, raw: &str) -> (PathBuf, Presence) {
    let p = wd.resolve(raw);
    let presence = presence(&p);
    (p, presence)
}

/// The nearest existing ancestor of a path that does not exist, in display
/// form, with what the guard suggests from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Nearest {
    /// A directory, with up to [`MAX_CLOSEST`] of its entries whose names
    /// are closest to the first missing segment (display form, directories
    /// with a trailing `/`).
    Dir { dir: String, closest: Vec<String> },
    /// A file where the path needs a directory, and the directory it is in.
    File { file: String, parent: String },
}

/// How many close names a denial lists.
pub(crate) const MAX_CLOSEST: usize = 3;

/// How many directory entries are compared at most: a denial must stay
/// cheap even in a huge directory.
const MAX_SCANNED: usize = 100_000;

/// The nearest existing ancestor of `resolved` (a lexical absolute path that
/// does not exist as such). `None` when no ancestor stats, or when the
/// lexical path itself exists as a directory (the operating system resolved
/// the raw path differently, through a symlink): the guard then allows.
pub(crate) fn nearest(wd: &Workdir, resolved: &Path) -> Option<Nearest> {
    let mut missing: Option<&std::ffi::OsStr> = None;
    for anc in resolved.ancestors() {
        let Ok(meta) = std::fs::metadata(anc) else {
            missing = anc.file_name();
            continue;
        };
        if meta.is_dir() {
            // The lexical path itself is a directory: nothing to point at.
            let name = missing?.to_string_lossy();
            let dir = wd.display(anc);
            let closest = closest_entries(anc, &name)
                .into_iter()
                .map(|(entry, is_dir)| {
                    let slash = if is_dir { "/" } else { "" };
                    match dir.as_str() {
                        "." => format!("{entry}{slash}"),
                        d if d.ends_with('/') => format!("{d}{entry}{slash}"),
                        d => format!("{d}/{entry}{slash}"),
                    }
                })
                .collect();
            return Some(Nearest::Dir { dir, closest });
        }
        let parent = anc.parent().unwrap_or(anc);
        return Some(Nearest::File {
            file: wd.display(anc),
            parent: wd.display(parent),
        });
    }
    None
}

/// The entries of `dir` closest to `name` by normalized edit distance
/// (case-insensitive), ties by name; each with whether it is a directory.
fn closest_entries(dir: &Path, name: &str) -> Vec<(String, bool)> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let target: Vec<char> = name.to_lowercase().chars().collect();
    let mut scored: Vec<(f64, String, bool)> = rd
        .take(MAX_SCANNED)
        .filter_map(Result::ok)
        .map(|e| {
            let entry = e.file_name().to_string_lossy().into_owned();
            let is_dir = std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir());
            (similarity_distance(&target, &entry), entry, is_dir)
        })
        .collect();
    scored.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    scored
        .into_iter()
        .take(MAX_CLOSEST)
        .map(|(_, e, d)| (e, d))
        .collect()
}

/// Levenshtein distance between `target` (already lowercased) and
/// `candidate` lowercased, divided by the longer length: 0 is equal, 1 is
/// nothing in common.
fn similarity_distance(target: &[char], candidate: &str) -> f64 {
    let cand: Vec<char> = candidate.to_lowercase().chars().collect();
    let longest = target.len().max(cand.len());
    if longest == 0 {
        return 0.0;
    }
    levenshtein(target, &cand) as f64 / longest as f64
}

/// Classic two-row Levenshtein distance over chars.
fn levenshtein(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn levenshtein_known_values() {
        assert_eq!(levenshtein(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(levenshtein(&chars(""), &chars("abc")), 3);
        assert_eq!(levenshtein(&chars("main.rs"), &chars("mian.rs")), 2);
        assert_eq!(levenshtein(&chars("same"), &chars("same")), 0);
    }

    #[test]
    fn similarity_is_case_insensitive_and_normalized() {
        assert_eq!(similarity_distance(&chars("readme.md"), "README.md"), 0.0);
        assert_eq!(similarity_distance(&chars("ab"), "cd"), 1.0);
        assert_eq!(similarity_distance(&chars("abcd"), "abce"), 0.25);
    }

    #[test]
    fn dotdot_only_as_a_whole_segment() {
        assert!(has_dotdot(Path::new("a/../b")));
        assert!(has_dotdot(Path::new("..")));
        assert!(has_dotdot(Path::new("a/..")));
        assert!(!has_dotdot(Path::new("a..b/c..")));
    }
}
