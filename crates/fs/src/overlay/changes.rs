//! What an overlay changed: [`OverlayFs::changes`] and [`OverlayFs::diff`].
//!
//! A change is a regular file of the upper layer: added where the lower
//! layer has no file at its path, modified where it has one with other
//! bytes (an upper file equal to the lower one is no change). The diff is
//! GNU `diff -u`'s format with `a/` and `b/` paths relative to the lower
//! root (`--- /dev/null` for an added file), three lines of context, and no
//! timestamps; a file with a NUL in its first 8 KiB or that is not UTF-8
//! gets `diff`'s one line, `Binary files a/x and b/x differ`.
//!
//! Paths are shown as the tools show names: one holding a control, bidi or
//! zero-width character is a quoted, escaped string literal.
//!
//! The line diff is the `similar` crate's Myers implementation, which prints
//! hunks as GNU diff does (ranges, merged hunks, `\ No newline at end of
//! file`): a solved problem, kept by a maintainer the Rust tooling relies on
//! (insta, cargo-insta), with no dependencies of its own.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use dsh_search_base::cancel::CancelToken;
use dsh_search_base::quoting;
use similar::TextDiff;

use super::{absent, is_staging, OverlayFs};
use crate::names::{os_str, path_bytes};
use crate::seam::{FileSystem, FileType, FsWrite, Listing};
use crate::BINARY_SNIFF_BYTES;

/// One file an overlay changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// The overlay path.
    pub path: PathBuf,
    /// Added or modified.
    pub kind: ChangeKind,
}

/// How a file was changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChangeKind {
    /// The lower layer has no file at the path.
    Added,
    /// The lower layer has a file at the path, with other bytes.
    Modified,
}

impl ChangeKind {
    /// `A` or `M`, as `dsh-search changes` prints it.
    pub fn letter(self) -> char {
        match self {
            ChangeKind::Added => 'A',
            ChangeKind::Modified => 'M',
        }
    }
}

impl Change {
    /// The path relative to `root` as `dsh-search changes` prints it: as it
    /// is, or quoted with its control, bidi and zero-width characters
    /// escaped, as the tools show names (`contract.md` §3, D6), so a name
    /// cannot forge a line or reach a terminal raw.
    pub fn shown(&self, root: &Path) -> String {
        let rel = self.path.strip_prefix(root).unwrap_or(&self.path);
        quoting::shown(&slashed(rel)).into_owned()
    }
}

impl<L: FileSystem, U: FsWrite> OverlayFs<L, U> {
    /// The files the upper layer changed, sorted by path (the bytes of the
    /// path relative to the lower root, as git sorts them).
    pub fn changes(&self) -> io::Result<Vec<Change>> {
        let mut out = Vec::new();
        for rel in self.upper_files()? {
            let path = self.lower_root.join(&rel);
            let upper = self.upper_root.join(&rel);
            if let Some(kind) = self.classify(&path, &upper)? {
                out.push(Change { path, kind });
            }
        }
        Ok(out)
    }

    /// Every change as a unified diff against the lower layer.
    pub fn diff(&self) -> io::Result<String> {
        let mut out = String::new();
        for change in self.changes()? {
            out.push_str(&self.diff_one(&change)?);
        }
        Ok(out)
    }

    /// The regular files of the upper layer, relative to its root, sorted
    /// by their bytes.
    fn upper_files(&self) -> io::Result<Vec<PathBuf>> {
        let context =
            |p: &Path, e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", p.display()));
        let mut files = Vec::new();
        let mut dirs = vec![PathBuf::new()];
        let mut listing = Listing::new();
        while let Some(rel) = dirs.pop() {
            let path = self.upper_root.join(&rel);
            let dir = match self.upper.open_dir(&path) {
                Ok(dir) => dir,
                Err(e) if rel.as_os_str().is_empty() && absent(&e) => break,
                Err(e) => return Err(context(&path, e)),
            };
            self.upper.list(&dir, &mut listing);
            if let Some(e) = listing.take_error() {
                return Err(context(&path, e));
            }
            for (raw, kind) in listing.iter() {
                let name = os_str(raw);
                let kind = match kind {
                    FileType::Unknown => {
                        self.upper
                            .metadata_at(&dir, &path, &name, false)
                            .map_err(|e| context(&path.join(&name), e))?
                            .kind
                    }
                    kind => kind,
                };
                if is_staging(raw, kind) {
                    continue;
                }
                match kind {
                    FileType::Dir => dirs.push(rel.join(&name)),
                    FileType::File => files.push(rel.join(&name)),
                    // The overlay writes nothing else there.
                    _ => {}
                }
            }
        }
        files.sort_by(|a, b| path_bytes(a).cmp(path_bytes(b)));
        Ok(files)
    }

    /// Whether the upper file `upper` changes the overlay path `path`.
    fn classify(&self, path: &Path, upper: &Path) -> io::Result<Option<ChangeKind>> {
        let lower = match self.lower.symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if absent(&e) => return Ok(Some(ChangeKind::Added)),
            // It exists but cannot be compared.
            Err(_) => return Ok(Some(ChangeKind::Modified)),
        };
        if lower.kind != FileType::File || lower.len != self.upper.metadata(upper)?.len {
            return Ok(Some(ChangeKind::Modified));
        }
        let new = read_all(&*self.upper, upper)?;
        Ok(match read_all(&*self.lower, path) {
            Ok(old) if old == new => None,
            _ => Some(ChangeKind::Modified),
        })
    }

    /// One change's part of the diff.
    fn diff_one(&self, change: &Change) -> io::Result<String> {
        let rel_path = change
            .path
            .strip_prefix(&self.lower_root)
            .expect("a change is below the lower root");
        // Names shown as the tools show them (D6), prefix included as git
        // quotes it (`+++ "b/x\n…"`): one header line, nothing raw.
        let rel = slashed(rel_path);
        let old_name = match change.kind {
            ChangeKind::Added => "/dev/null".to_string(),
            ChangeKind::Modified => quoting::shown(&format!("a/{rel}")).into_owned(),
        };
        let new_name = quoting::shown(&format!("b/{rel}")).into_owned();
        let new = read_all(&*self.upper, &self.upper_root.join(rel_path))?;
        let old = match change.kind {
            ChangeKind::Added => Vec::new(),
            ChangeKind::Modified => read_all(&*self.lower, &change.path)?,
        };
        let (Some(old), Some(new)) = (text(&old), text(&new)) else {
            return Ok(format!("Binary files {old_name} and {new_name} differ\n"));
        };
        let diff = TextDiff::from_lines(old, new);
        let out = diff
            .unified_diff()
            .context_radius(3)
            .header(&old_name, &new_name)
            .to_string();
        Ok(if out.is_empty() {
            // An added empty file: no hunk, but a change all the same.
            format!("--- {old_name}\n+++ {new_name}\n")
        } else {
            out
        })
    }
}

/// The file's bytes, with the path in the error.
fn read_all<F: FileSystem>(fs: &F, path: &Path) -> io::Result<Vec<u8>> {
    let mut data = Vec::new();
    fs.open(path, &CancelToken::new())
        .and_then(|mut f| f.read_to_end(&mut data))
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(data)
}

/// The bytes as text, or `None` for a binary file: a NUL in the first
/// 8 KiB (where `read` and `diff` look), or not UTF-8.
fn text(data: &[u8]) -> Option<&str> {
    let head = &data[..data.len().min(BINARY_SNIFF_BYTES)];
    if memchr::memchr(0, head).is_some() {
        return None;
    }
    std::str::from_utf8(data).ok()
}

/// A relative path with `/` separators, lossy where it is not UTF-8.
fn slashed(rel: &Path) -> String {
    let parts: Vec<_> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect();
    parts.join("/")
}
