//! How the guard finds the target a call names, and what it says about a
//! target that does not exist. Every question goes to the workspace's
//! filesystem (the [`DynFileSystem`] the tools run on), never to the host
//! disk: the nearest names of a denial are those of the workspace.
//!
//! Two resolutions, because the tools resolve differently:
//!
//! - glob and grep hand `path` to the search as is, relative to the workdir
//!   (`seed-reference.md` §1.6): the filesystem resolves it, so `..` after a
//!   symlink goes to the symlink target's parent. [`search_target`] stats
//!   the plain join, exactly what the search will open.
//! - read, write and edit resolve `file_path` lexically (`seed-reference.md`
//!   §6.1): when the workdir or the path has a `..` segment the workdir is
//!   canonicalized first, then the join is normalized without touching the
//!   filesystem. [`file_target`] uses the file tools' own resolution.
//!
//! Both give the same lexical key, used for the zero-result counters and for
//! the nearest existing ancestor in a denial.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use crate::cancel::CancelToken;
use crate::fs::resolve::lexical_path;
use crate::fs::{DynFileSystem, FileType};

/// The workdir of a call, when the guard can use it: an absolute path to an
/// existing directory of the workspace. `None` means the guard cannot decide
/// and allows.
#[derive(Clone)]
pub(crate) struct Workdir<'a> {
    /// The workspace's filesystem.
    fs: &'a dyn DynFileSystem,
    /// The workdir as given.
    lexical: PathBuf,
    /// Its realpath, when it differs from `lexical` (symlinks, `..`).
    canonical: Option<PathBuf>,
}

impl<'a> Workdir<'a> {
    /// The workdir, if it is absolute and stats as a directory on `fs`.
    pub(crate) fn usable(fs: &'a dyn DynFileSystem, dir: &Path) -> Option<Workdir<'a>> {
        // A relative workdir would be resolved against the process's current
        // directory, which this crate never consults.
        if !dir.is_absolute() || !fs.metadata(dir).ok()?.kind.is_dir() {
            return None;
        }
        let canonical = fs
            .canonicalize(dir)
            .ok()
            .map(crate::fs::resolve::shown_form)
            .filter(|c| c != dir);
        Some(Workdir {
            fs,
            lexical: dir.to_path_buf(),
            canonical,
        })
    }

    /// The lexical absolute form of `raw`, as the file tools resolve it
    /// (`seed-reference.md` §6.1).
    pub(crate) fn resolve(&self, raw: &str) -> PathBuf {
        lexical_path(self.fs, raw, &self.lexical)
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

    /// Stat `p`, following symlinks as the tools do.
    pub(crate) fn presence(&self, p: &Path) -> Presence {
        match self.fs.metadata(p) {
            Ok(_) => Presence::Exists,
            Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::NotADirectory) => {
                Presence::Absent
            }
            Err(_) => Presence::Unknown,
        }
    }
}

/// What one stat says about a path.
#[derive(Debug)]
pub(crate) enum Presence {
    /// It exists (symlinks followed).
    Exists,
    /// It certainly does not: not found, or a parent is not a directory.
    Absent,
    /// The stat failed for another reason (permission, loop, NUL, …): the
    /// guard cannot decide.
    Unknown,
}

/// glob's and grep's `path`, as the search will open it: the plain join,
/// resolved by the filesystem (`seed-reference.md` §1.6).
pub(crate) fn search_target(wd: &Workdir<'_>, raw: &str) -> Presence {
    wd.presence(&wd.lexical.join(raw))
}

/// read's and edit's `file_path`, resolved as the file tools do
/// (`seed-reference.md` §6.1).
pub(crate) fn file_target(wd: &Workdir<'_>, raw: &str) -> (PathBuf, Presence) {
    let p = wd.resolve(raw);
    let presence = wd.presence(&p);
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
pub(crate) fn nearest(wd: &Workdir<'_>, resolved: &Path, cancel: &CancelToken) -> Option<Nearest> {
    let mut missing: Option<&std::ffi::OsStr> = None;
    for anc in resolved.ancestors() {
        let Ok(meta) = wd.fs.metadata(anc) else {
            missing = anc.file_name();
            continue;
        };
        if meta.kind.is_dir() {
            // The lexical path itself is a directory: nothing to point at.
            let name = missing?.to_string_lossy();
            let dir = wd.display(anc);
            let closest = closest_entries(wd.fs, anc, &name, cancel)
                .into_iter()
                .map(|(entry, is_dir)| join_entry(&dir, &entry, is_dir))
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

/// The display form of `entry` in the directory `dir` (display form), a
/// directory with a trailing `/`. Joined with the platform's separator, as
/// rg joins a walked name to its directory (`Path::join`): on Windows the
/// suggestion is what `glob` prints for that directory (`SRC\main.rs`
/// for a typed `SRC`), elsewhere `src/main.rs`.
fn join_entry(dir: &str, entry: &str, is_dir: bool) -> String {
    let slash = if is_dir { "/" } else { "" };
    let sep = std::path::MAIN_SEPARATOR;
    match dir {
        "." => format!("{entry}{slash}"),
        d if d.ends_with('/') || d.ends_with(sep) => format!("{d}{entry}{slash}"),
        d => format!("{d}{sep}{entry}{slash}"),
    }
}

/// How many edit-distance cells a denial computes at most (a cell is one
/// step of the Levenshtein table): 60,000 entries of 240 characters were
/// 3.5 billion cells, 11.5 s. Past the budget the scan stops and the names
/// seen so far are ranked; a denial is a hint, not a search.
const MAX_CELLS: u64 = 20_000_000;

/// How many entries are scored between two looks at the cancellation flag.
const CANCEL_EVERY: usize = 256;

/// The entries of `dir` closest to `name` by normalized edit distance
/// (case-insensitive), ties by name; each with whether it is a directory
/// (symlinks followed). Bounded: at most [`MAX_SCANNED`] entries and
/// [`MAX_CELLS`] cells, a candidate that cannot beat the third best so far
/// is dropped as soon as that is certain (its length difference, or a row
/// of its table, already exceeds the edits it could afford), and the scan
/// stops when the call is cancelled.
fn closest_entries(
    fs: &dyn DynFileSystem,
    dir: &Path,
    name: &str,
    cancel: &CancelToken,
) -> Vec<(String, bool)> {
    scan_closest(fs, dir, name, cancel).0
}

/// [`closest_entries`], with the number of cells it computed.
fn scan_closest(
    fs: &dyn DynFileSystem,
    dir: &Path,
    name: &str,
    cancel: &CancelToken,
) -> (Vec<(String, bool)>, u64) {
    let Ok(entries) = fs.read_dir(dir) else {
        return (Vec::new(), 0);
    };
    let target: Vec<char> = name.to_lowercase().chars().collect();
    // The best so far, sorted: (distance, name, its bytes, kind).
    let mut best: Vec<(f64, String, Vec<u8>, FileType)> = Vec::with_capacity(MAX_CLOSEST + 1);
    let mut cells = 0u64;
    let mut cand = Vec::new();
    for (i, (raw, kind)) in entries.into_iter().take(MAX_SCANNED).enumerate() {
        if (i % CANCEL_EVERY == 0 && cancel.is_cancelled()) || cells > MAX_CELLS {
            break;
        }
        let entry = String::from_utf8_lossy(&raw).into_owned();
        cand.clear();
        cand.extend(entry.to_lowercase().chars());
        let longest = target.len().max(cand.len());
        let d = if longest == 0 {
            0.0
        } else {
            // Only a distance no worse than the third best can be kept.
            let limit = match best.get(MAX_CLOSEST - 1) {
                Some(worst) => (worst.0 * longest as f64).floor() as usize + 1,
                None => usize::MAX,
            };
            let (edits, used) = bounded_levenshtein(&target, &cand, limit);
            cells += used;
            match edits {
                Some(e) => e as f64 / longest as f64,
                None => continue,
            }
        };
        let at = best.partition_point(|b| b.0.total_cmp(&d).then_with(|| b.1.cmp(&entry)).is_lt());
        if at < MAX_CLOSEST {
            best.insert(at, (d, entry, raw, kind));
            best.truncate(MAX_CLOSEST);
        }
    }
    let found = best
        .into_iter()
        .map(|(_, entry, raw, kind)| {
            let is_dir = match kind {
                FileType::Dir => true,
                FileType::Symlink | FileType::Unknown => fs
                    .metadata(&dir.join(crate::fs::names::os_str(&raw)))
                    .is_ok_and(|m| m.kind.is_dir()),
                _ => false,
            };
            (entry, is_dir)
        })
        .collect();
    (found, cells)
}

/// Levenshtein distance between `target` (already lowercased) and
/// `candidate` lowercased, divided by the longer length: 0 is equal, 1 is
/// nothing in common.
#[cfg(test)]
fn similarity_distance(target: &[char], candidate: &str) -> f64 {
    let cand: Vec<char> = candidate.to_lowercase().chars().collect();
    let longest = target.len().max(cand.len());
    if longest == 0 {
        return 0.0;
    }
    levenshtein(target, &cand) as f64 / longest as f64
}

/// The Levenshtein distance of `a` and `b` when it is at most `limit`
/// (`None` when it is more), and how many cells were computed. A row's
/// minimum never decreases further down the table, so a row whose minimum
/// is past `limit` ends the computation; a length difference past `limit`
/// ends it before the first row.
fn bounded_levenshtein(a: &[char], b: &[char], limit: usize) -> (Option<usize>, u64) {
    if a.len().abs_diff(b.len()) > limit {
        return (None, 0);
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    let mut cells = 0u64;
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let subst = prev[j] + usize::from(ca != cb);
            cur[j + 1] = subst.min(prev[j + 1] + 1).min(cur[j] + 1);
            row_min = row_min.min(cur[j + 1]);
        }
        cells += b.len() as u64 + 1;
        if row_min > limit {
            return (None, cells);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[b.len()];
    ((d <= limit).then_some(d), cells.max(1))
}

/// Classic two-row Levenshtein distance over chars.
#[cfg(test)]
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
    fn bounded_levenshtein_agrees_within_its_limit() {
        let words = [
            "",
            "a",
            "kitten",
            "sitting",
            "main.rs",
            "mian.rs",
            "README.md",
            "readme",
        ];
        for a in words {
            for b in words {
                let d = levenshtein(&chars(a), &chars(b));
                for limit in 0..12 {
                    let (got, _) = bounded_levenshtein(&chars(a), &chars(b), limit);
                    assert_eq!(got, (d <= limit).then_some(d), "{a:?} {b:?} {limit}");
                }
            }
        }
    }

    /// 60,000 entries of 240 characters took 11.5 s and ignored SIGTERM:
    /// the scan computes a bounded number of cells and stops at once when
    /// the call is cancelled.
    #[test]
    fn closest_name_search_is_bounded_and_cancellable() {
        let fs = crate::fs::MemFs::new();
        for i in 0..60_000u32 {
            let name = format!("{i:08}{}", "x".repeat(232));
            fs.write_file(format!("/w/{name}"), b"").unwrap();
        }
        let target = format!("{}zz", "y".repeat(238));
        let cancel = CancelToken::new();
        let (found, cells) = scan_closest(&fs, Path::new("/w"), &target, &cancel);
        assert_eq!(found.len(), MAX_CLOSEST);
        assert!(cells <= MAX_CELLS + 241 * 241, "{cells} cells");
        cancel.cancel();
        let (found, cells) = scan_closest(&fs, Path::new("/w"), &target, &cancel);
        assert_eq!((found.len(), cells), (0, 0));
    }

    #[test]
    fn closest_names_rank_as_before() {
        let fs = crate::fs::MemFs::new();
        for name in ["main.rs", "mian.rs", "lib.rs", "Main.RS", "zzz", "ma"] {
            fs.write_file(format!("/w/{name}"), b"").unwrap();
        }
        let (found, _) = scan_closest(&fs, Path::new("/w"), "main.rs", &CancelToken::new());
        let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["Main.RS", "main.rs", "mian.rs"]);
    }

    #[test]
    fn entries_join_their_directory_with_the_platform_separator() {
        let sep = std::path::MAIN_SEPARATOR;
        assert_eq!(join_entry(".", "main.rs", false), "main.rs");
        assert_eq!(join_entry(".", "src", true), "src/");
        assert_eq!(
            join_entry("SRC", "main.rs", false),
            format!("SRC{sep}main.rs")
        );
        assert_eq!(join_entry("src", "tool", true), format!("src{sep}tool/"));
        assert_eq!(join_entry("/", "etc", true), "/etc/");
        assert_eq!(
            join_entry(r"C:\", "x", false),
            if cfg!(windows) {
                r"C:\x".to_string()
            } else {
                r"C:\/x".to_string()
            }
        );
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
}
