//! [`OverlayFs`]: an upper layer over a read-only lower filesystem
//! (`contract.md` §10).
//!
//! # The two layers
//!
//! The lower layer is any [`FileSystem`], never written. The upper layer
//! holds what the overlay's writes produced: regular files and the
//! directories that hold them. The overlay path `P` below `lower_root` is
//! stored in the upper layer at `upper_root/(P relative to lower_root)`;
//! for an upper layer in memory `upper_root` may equal `lower_root`, for one
//! on the local disk it is a directory of its own ([`OverlayFs::on_disk`]).
//! Paths outside `lower_root` are the lower layer's alone: a write there is
//! refused.
//!
//! # The merged view
//!
//! An upper entry shadows the lower one of the same path and directories
//! merge: a directory lists the lower layer's entries in the lower order
//! (an entry in both keeps its lower place, with the upper kind), then the
//! entries only the upper layer has, in the upper order. A directory in
//! both layers is described by the lower one's metadata; a file in the
//! upper layer by its own. With an empty upper layer every operation
//! returns what the lower filesystem returns, errors included, so that rg's
//! output on the disk and the engine's through an empty overlay are the
//! same bytes.
//!
//! Writes resolve symlinks first, so symlinks exist only in the lower
//! layer, and a path is resolved through the merged view one component at
//! a time ([`walk`]): a lower `link -> dir` shows an upper-only `dir/new.txt`
//! as `link/new.txt`.
//!
//! The upper layer belongs to the overlay: change it only through
//! [`FsWrite::write`]. Until the upper layer's root exists no lookup goes
//! there (the walk of an empty overlay costs what the lower filesystem's own
//! calls cost, and one `lstat` of that root per path resolved); each path
//! resolution looks for the root again while it is missing, so a write made
//! through another overlay of the same upper layer (another process's
//! `--overlay DIR`) is seen by the next call, and a write checks its guard
//! against it (`contract.md` §10).
//!
//! # Changes
//!
//! [`OverlayFs::changes`] lists the upper layer's files that differ from
//! the lower layer's (added, modified); [`OverlayFs::diff`] shows them as a
//! unified diff ([`changes`](mod@changes)).

mod changes;
mod disk;
mod walk;

pub use changes::{Change, ChangeKind};

use std::any::Any;
use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use dsh_search_base::cancel::CancelToken;
use dsh_search_base::sync::RecoverPoison;
use walk::{Failed, Found, Last};

use crate::local::is_staging;
use crate::seam::{
    errno, FileSystem, FileType, FsHints, FsWrite, Listing, Metadata, WriteError, WriteGuard,
    Written,
};
use crate::LocalFs;

/// A writable upper layer over a read-only lower filesystem.
///
/// # Example
///
/// ```
/// use std::sync::Arc;
/// use dsh_search_fs::{FileSystem, FsWrite, LocalFs, OverlayFs, WriteGuard, ChangeKind};
/// use dsh_search_base::CancelToken;
///
/// let work = tempfile::tempdir()?;
/// let store = tempfile::tempdir()?;
/// std::fs::write(work.path().join("a.txt"), "one\n")?;
///
/// let fs = OverlayFs::on_disk(Arc::new(LocalFs::new()), work.path(), store.path())?;
/// let root = fs.lower_root().to_path_buf();
/// fs.write(&root.join("a.txt"), b"two\n", &WriteGuard::None, &CancelToken::new())?;
///
/// // The workspace is untouched; the overlay shows the new text.
/// assert_eq!(std::fs::read_to_string(work.path().join("a.txt"))?, "one\n");
/// let mut text = String::new();
/// std::io::Read::read_to_string(&mut fs.open(&root.join("a.txt"), &CancelToken::new())?, &mut text)?;
/// assert_eq!(text, "two\n");
///
/// let changes = fs.changes()?;
/// assert_eq!(changes[0].kind, ChangeKind::Modified);
/// assert_eq!(fs.diff()?, "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one\n+two\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct OverlayFs<L: FileSystem, U: FsWrite> {
    lower: Arc<L>,
    upper: Arc<U>,
    /// Canonical in the lower layer.
    lower_root: PathBuf,
    upper_root: PathBuf,
    /// Whether the upper layer may hold anything: it did when the overlay
    /// was made, a write has begun since, or a path resolution found the
    /// upper root ([`OverlayFs::notice_upper`]). Until then no lookup goes
    /// to the upper layer. Never cleared.
    upper_used: AtomicBool,
    /// Writes are checked against the merged state and published under it.
    write_lock: Mutex<()>,
    /// The overlay directory, when the upper layer is one on the local disk.
    disk: Option<disk::Disk>,
}

impl<L: FileSystem, U: FsWrite> fmt::Debug for OverlayFs<L, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OverlayFs")
            .field("lower_root", &self.lower_root)
            .field("upper_root", &self.upper_root)
            .field("disk", &self.disk)
            .finish_non_exhaustive()
    }
}

/// Where an entry of the merged view is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layer {
    /// Only in the lower layer, or shadowing nothing above it.
    Lower,
    /// In the upper layer, shadowing whatever the lower has there.
    Upper,
    /// A directory in both layers: merged.
    Both,
}

/// An open directory of an [`OverlayFs`]: its overlay path and the
/// directory in each layer that has one.
pub struct OverlayDir<L: FileSystem, U: FsWrite> {
    /// The resolved overlay path.
    path: PathBuf,
    lower: Option<L::Dir>,
    /// The upper directory and its path in the upper layer.
    upper: Option<(U::Dir, PathBuf)>,
}

impl<L: FileSystem, U: FsWrite> OverlayDir<L, U> {
    /// The lower layer's directory, if it has one.
    pub fn lower_dir(&self) -> Option<&L::Dir> {
        self.lower.as_ref()
    }

    /// The upper layer's directory and its path there, if it had one when
    /// this was opened.
    pub fn upper_dir(&self) -> Option<(&U::Dir, &Path)> {
        self.upper.as_ref().map(|(d, p)| (d, p.as_path()))
    }
}

impl<L: FileSystem, U: FsWrite> fmt::Debug for OverlayDir<L, U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OverlayDir")
            .field("path", &self.path)
            .field("lower", &self.lower.is_some())
            .field("upper", &self.upper.as_ref().map(|(_, p)| p))
            .finish()
    }
}

/// An open file of an [`OverlayFs`]: the upper layer's, or the lower's.
#[derive(Debug)]
pub enum OverlayFile<L, U> {
    /// A file of the lower layer.
    Lower(L),
    /// A file of the upper layer.
    Upper(U),
}

impl<L: Read, U: Read> Read for OverlayFile<L, U> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            OverlayFile::Lower(f) => f.read(buf),
            OverlayFile::Upper(f) => f.read(buf),
        }
    }
}

impl<L: FileSystem, U: FsWrite> OverlayFs<L, U> {
    /// An overlay of `upper` (its tree at `upper_root`) over `lower` below
    /// `lower_root`, a directory of `lower`. `upper_root` need not exist
    /// yet: the first write creates it.
    pub fn new(
        lower: Arc<L>,
        lower_root: &Path,
        upper: Arc<U>,
        upper_root: &Path,
    ) -> io::Result<OverlayFs<L, U>> {
        let root = workspace_root(&*lower, lower_root)?;
        let used = match upper.symlink_metadata(upper_root) {
            Ok(_) => true,
            Err(e) if absent(&e) => false,
            Err(e) => {
                let shown = upper_root.display();
                return Err(io::Error::new(e.kind(), format!("{shown}: {e}")));
            }
        };
        Ok(OverlayFs {
            lower,
            upper,
            lower_root: root,
            upper_root: upper_root.to_path_buf(),
            upper_used: AtomicBool::new(used),
            write_lock: Mutex::new(()),
            disk: None,
        })
    }

    /// The lower filesystem.
    pub fn lower(&self) -> &Arc<L> {
        &self.lower
    }

    /// The upper filesystem.
    pub fn upper(&self) -> &Arc<U> {
        &self.upper
    }

    /// The root of the writable part of the overlay, canonical.
    pub fn lower_root(&self) -> &Path {
        &self.lower_root
    }

    /// Where the upper layer keeps the overlay's `lower_root`.
    pub fn upper_root(&self) -> &Path {
        &self.upper_root
    }

    /// The upper layer's path for the overlay path `path` (resolved), or
    /// `None` outside `lower_root`.
    fn upper_path(&self, path: &Path) -> Option<PathBuf> {
        let rel = path.strip_prefix(&self.lower_root).ok()?;
        Some(if rel.as_os_str().is_empty() {
            self.upper_root.clone()
        } else {
            self.upper_root.join(rel)
        })
    }

    /// Start using the upper layer once its root exists: another overlay
    /// over the same upper layer (another process's, on the same overlay
    /// directory) may have written since this one was made. Called at the
    /// start of every path resolution, so every call that names a path
    /// sees what was published before it began; a write calls it under the
    /// overlay's lock, so its guard is checked against every earlier write.
    /// One `lstat` while the root is missing, nothing after.
    fn notice_upper(&self) {
        if !self.upper_used.load(Ordering::Acquire)
            && self.upper.symlink_metadata(&self.upper_root).is_ok()
        {
            self.upper_used.store(true, Ordering::Release);
        }
    }

    /// The upper layer's path for the overlay path `path` (resolved), or
    /// `None` outside `lower_root` (for the live index, which follows both
    /// layers).
    pub fn upper_path_of(&self, path: &Path) -> Option<PathBuf> {
        self.upper_path(path)
    }

    /// [`OverlayFs::upper_path`], when the upper layer may hold it.
    fn upper_lookup(&self, path: &Path) -> Option<PathBuf> {
        if self.upper_used.load(Ordering::Acquire) {
            self.upper_path(path)
        } else {
            None
        }
    }

    /// `lstat` of a resolved path in the merged view.
    fn lstat(&self, path: &Path) -> io::Result<(Metadata, Layer)> {
        if let Some(up) = self.upper_lookup(path) {
            match self.upper.symlink_metadata(&up) {
                Ok(m) if m.kind == FileType::Dir => {
                    return Ok(match self.lower.symlink_metadata(path) {
                        Ok(l) if l.kind == FileType::Dir => (l, Layer::Both),
                        _ => (m, Layer::Upper),
                    })
                }
                Ok(m) => return Ok((m, Layer::Upper)),
                Err(e) if absent(&e) => {}
                Err(e) => return Err(e),
            }
        }
        self.lower.symlink_metadata(path).map(|m| (m, Layer::Lower))
    }

    /// Open the directory a walk found.
    fn open_found_dir(&self, found: Found) -> io::Result<OverlayDir<L, U>> {
        let (meta, layer) = found.entry.expect("resolved an existing path");
        let path = found.path;
        let upper = |required: bool| -> io::Result<Option<(U::Dir, PathBuf)>> {
            let up = self.upper_path(&path).expect("an upper path");
            match self.upper.open_dir(&up) {
                Ok(d) => Ok(Some((d, up))),
                Err(e) if !required && absent(&e) => Ok(None),
                Err(e) => Err(e),
            }
        };
        let (lower, upper) = match layer {
            // The lower layer's own error for anything but a directory.
            Layer::Lower => (Some(self.lower.open_dir(&path)?), None),
            Layer::Upper if meta.kind != FileType::Dir => return Err(errno::not_a_directory()),
            Layer::Upper => (None, upper(true)?),
            Layer::Both => (Some(self.lower.open_dir(&path)?), upper(false)?),
        };
        Ok(OverlayDir { path, lower, upper })
    }

    /// Take the overlay's write lock (and the overlay directory's lock
    /// file, for one on disk).
    fn lock_writes(&self) -> io::Result<WriteLock<'_>> {
        let guard = self.write_lock.lock().recover_poison();
        let file = match &self.disk {
            Some(d) => Some(d.lock()?),
            None => None,
        };
        Ok(WriteLock {
            _guard: guard,
            _file: file,
        })
    }

    /// The error of a write outside `lower_root`.
    fn outside(&self, path: &Path) -> io::Error {
        io::Error::new(
            io::ErrorKind::ReadOnlyFilesystem,
            format!(
                "{} is outside the workspace {}: only files below it can be written",
                path.display(),
                self.lower_root.display()
            ),
        )
    }

    /// An upper layer's write error, about the overlay path `path`.
    fn upper_error(&self, path: &Path, e: WriteError) -> WriteError {
        match e {
            WriteError::Io(_, e) => WriteError::Io(
                path.to_path_buf(),
                match &self.disk {
                    Some(d) => d.context(e),
                    None => e,
                },
            ),
            WriteError::NotDirectory(_) => WriteError::NotDirectory(path.to_path_buf()),
            other => other,
        }
    }

    /// [`FsWrite::write_from`] with the write lock held.
    fn write_locked(
        &self,
        path: &Path,
        content: &mut dyn Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let found = self
            .walk(path, Last::Create)
            .map_err(|f| write_failure(path, f))?;
        // Never through a dangling symlink, nor over it, whatever the guard:
        // the local disk's rule (`FsWrite::write`).
        if found.entry.is_none()
            && self
                .walk(path, Last::NoFollow)
                .is_ok_and(|f| matches!(f.entry, Some((m, _)) if m.kind.is_symlink()))
        {
            return Err(WriteError::NotRegular(FileType::Symlink));
        }
        let Some(upper_path) = self.upper_path(&found.path) else {
            return Err(WriteError::Io(
                path.to_path_buf(),
                self.outside(&found.path),
            ));
        };
        guard.admits(found.entry.as_ref().map(|(m, _)| m))?;
        if cancel.is_cancelled() {
            return Err(WriteError::Cancelled);
        }
        // From here on lookups must see the upper layer.
        self.upper_used.store(true, Ordering::Release);
        let written = self
            .upper
            .write_from(&upper_path, content, &WriteGuard::None, cancel)
            .map_err(|e| self.upper_error(path, e))?;
        let metadata = match found.entry {
            // A copied-up file keeps its mode, as a replaced one does.
            Some((old, Layer::Lower)) if old.mode != written.metadata.mode => {
                keep_mode(&*self.upper, &upper_path, old.mode)
                    .map_err(|e| WriteError::Io(path.to_path_buf(), e))?
                    .unwrap_or(written.metadata)
            }
            _ => written.metadata,
        };
        Ok(Written {
            replaced: found.entry.is_some(),
            metadata,
        })
    }
}

impl<L: FileSystem, U: FsWrite> FileSystem for OverlayFs<L, U> {
    type Dir = OverlayDir<L, U>;
    type File = OverlayFile<L::File, U::File>;

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(self.walk(path, Last::Follow)?.path)
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        Ok(self.walk(path, Last::Follow)?.metadata())
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        Ok(self.walk(path, Last::NoFollow)?.metadata())
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let found = self.walk(path, Last::NoFollow)?;
        match found.layer() {
            // The lower layer's own answer, EINVAL for anything but a link.
            Layer::Lower => self.lower.read_link(&found.path),
            Layer::Upper | Layer::Both if found.metadata().kind == FileType::Symlink => self
                .upper
                .read_link(&self.upper_path(&found.path).expect("an upper path")),
            Layer::Upper | Layer::Both => Err(errno::invalid()),
        }
    }

    fn open_dir(&self, path: &Path) -> io::Result<OverlayDir<L, U>> {
        let found = self.walk(path, Last::Follow)?;
        self.open_found_dir(found)
    }

    fn open_dir_at(
        &self,
        parent: &OverlayDir<L, U>,
        _parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<OverlayDir<L, U>> {
        let path = parent.path.join(name);
        let mut lower_error = None;
        let lower = match &parent.lower {
            Some(dir) => match self.lower.open_dir_at(dir, &parent.path, name) {
                Ok(d) => Some(d),
                Err(e) if parent.upper.is_some() && absent(&e) => {
                    lower_error = Some(e);
                    None
                }
                Err(e) => return Err(e),
            },
            None => None,
        };
        let upper = match &parent.upper {
            Some((dir, up)) => match self.upper.open_dir_at(dir, up, name) {
                Ok(d) => Some((d, up.join(name))),
                Err(e) if absent(&e) => None,
                Err(e) => return Err(e),
            },
            None => None,
        };
        if lower.is_none() && upper.is_none() {
            return Err(lower_error.unwrap_or_else(errno::not_found));
        }
        Ok(OverlayDir { path, lower, upper })
    }

    fn list(&self, dir: &OverlayDir<L, U>, listing: &mut Listing) {
        let Some((upper_dir, _)) = &dir.upper else {
            match &dir.lower {
                Some(lower) => self.lower.list(lower, listing),
                None => listing.clear(),
            }
            return;
        };
        let mut upper = Listing::new();
        self.upper.list(upper_dir, &mut upper);
        // The upper entries, with the metadata the upper layer listed them
        // with (if any).
        let uppers = upper
            .iter()
            .enumerate()
            .filter(|&(_, (n, k))| !is_staging(n, k))
            .map(|(i, (n, k))| (n.to_vec(), k, upper.metadata(i).copied()))
            .collect::<Vec<_>>();
        let Some(lower) = &dir.lower else {
            listing.clear();
            for (name, kind, meta) in &uppers {
                push(listing, name, *kind, *meta);
            }
            listing.error = upper.take_error();
            return;
        };
        self.lower.list(lower, listing);
        let mut shadowed = Vec::new();
        let mut added = Vec::new();
        {
            let lower_names: std::collections::HashMap<&[u8], usize> = listing
                .iter()
                .enumerate()
                .map(|(i, (n, _))| (n, i))
                .collect();
            for (name, kind, meta) in uppers {
                match lower_names.get(&name[..]) {
                    Some(&i) => shadowed.push((i, kind, meta)),
                    None => added.push((name, kind, meta)),
                }
            }
        }
        // A shadowed entry is the upper layer's: its kind, and its metadata
        // or none (never the lower file's, which glob's mtime sort would
        // take without a stat). A directory in both layers is merged, and
        // described by the lower one.
        for (i, kind, meta) in shadowed {
            let merged = kind == FileType::Dir && listing.entries[i].1 == FileType::Dir;
            listing.entries[i].1 = kind;
            if merged {
                continue;
            }
            if i < listing.metadata.len() || meta.is_some() {
                listing
                    .metadata
                    .resize(listing.metadata.len().max(i + 1), None);
                listing.metadata[i] = meta;
            }
        }
        for (name, kind, meta) in added {
            push(listing, &name, kind, meta);
        }
        if listing.error.is_none() {
            listing.error = upper.take_error();
        }
    }

    fn metadata_at(
        &self,
        dir: &OverlayDir<L, U>,
        _dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        if let Some((upper, up)) = &dir.upper {
            match self.upper.metadata_at(upper, up, name, false) {
                Ok(m) if m.kind == FileType::Dir => {
                    if let Some(lower) = &dir.lower {
                        match self.lower.metadata_at(lower, &dir.path, name, follow) {
                            Ok(l) if l.kind == FileType::Dir => return Ok(l),
                            _ => {}
                        }
                    }
                    return Ok(m);
                }
                Ok(m) => return Ok(m),
                Err(e) if absent(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let Some(lower) = &dir.lower else {
            return Err(errno::not_found());
        };
        if !follow || !self.upper_used.load(Ordering::Acquire) {
            return self.lower.metadata_at(lower, &dir.path, name, follow);
        }
        let m = self.lower.metadata_at(lower, &dir.path, name, false)?;
        if m.kind == FileType::Symlink {
            // Its target may be in the upper layer.
            return self.metadata(&dir.path.join(name));
        }
        Ok(m)
    }

    fn open_at(
        &self,
        dir: &OverlayDir<L, U>,
        _dir_path: &Path,
        name: &OsStr,
    ) -> io::Result<Self::File> {
        if let Some((upper, up)) = &dir.upper {
            match self.upper.open_at(upper, up, name) {
                Ok(f) => return Ok(OverlayFile::Upper(f)),
                Err(e) if absent(&e) => {}
                Err(e) => return Err(e),
            }
        }
        let Some(lower) = &dir.lower else {
            return Err(errno::not_found());
        };
        if self.upper_used.load(Ordering::Acquire)
            && self
                .lower
                .metadata_at(lower, &dir.path, name, false)
                .is_ok_and(|m| m.kind == FileType::Symlink)
        {
            // Its target may be in the upper layer.
            return self.open(&dir.path.join(name), &CancelToken::new());
        }
        self.lower
            .open_at(lower, &dir.path, name)
            .map(OverlayFile::Lower)
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<Self::File> {
        let found = self.walk(path, Last::Follow)?;
        match found.layer() {
            Layer::Upper => {
                let up = self.upper_path(&found.path).expect("an upper path");
                self.upper.open(&up, cancel).map(OverlayFile::Upper)
            }
            Layer::Lower | Layer::Both => {
                self.lower.open(&found.path, cancel).map(OverlayFile::Lower)
            }
        }
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        let found = self.walk(path, Last::Follow)?;
        match found.layer() {
            Layer::Upper => {
                let up = self.upper_path(&found.path).expect("an upper path");
                self.upper.read_control(&up)
            }
            Layer::Lower | Layer::Both => self.lower.read_control(&found.path),
        }
    }

    /// The lower layer's: git's configuration is the host's, not the
    /// workspace's.
    fn git_global_excludes(&self, workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        self.lower.git_global_excludes(workdir)
    }
}

impl<L: FileSystem, U: FsWrite> FsHints for OverlayFs<L, U> {}

impl<L: FileSystem, U: FsWrite> FsWrite for OverlayFs<L, U> {
    /// Write the upper layer's file for `path`, symlinks resolved through
    /// the merged view (the last one included), under the overlay's lock:
    /// `guard` is checked against the merged state (the lower file's
    /// version while it was never written), and the lower layer is never
    /// touched. A path outside `lower_root` is refused.
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let _lock = self
            .lock_writes()
            .map_err(|e| WriteError::Io(path.to_path_buf(), e))?;
        self.write_locked(path, &mut &content[..], guard, cancel)
    }

    /// Streamed into the upper layer (on disk: one chunk at a time), under
    /// the overlay's write lock.
    fn write_from(
        &self,
        path: &Path,
        content: &mut dyn Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let _lock = self
            .lock_writes()
            .map_err(|e| WriteError::Io(path.to_path_buf(), e))?;
        self.write_locked(path, content, guard, cancel)
    }
}

/// Add an entry to `listing`, with its metadata when there is some.
fn push(listing: &mut Listing, name: &[u8], kind: FileType, meta: Option<Metadata>) {
    match meta {
        Some(m) => listing.push_with_metadata(name, kind, m),
        None => listing.push(name, kind),
    }
}

/// `lower_root` canonical in `lower`, which must be a directory there.
fn workspace_root<L: FileSystem>(lower: &L, lower_root: &Path) -> io::Result<PathBuf> {
    lower
        .canonicalize(lower_root)
        .and_then(|root| match lower.metadata(&root)?.kind {
            FileType::Dir => Ok(root),
            _ => Err(errno::not_a_directory()),
        })
        .map_err(|e| io::Error::new(e.kind(), format!("workspace {}: {e}", lower_root.display())))
}

/// Held while a write checks and publishes.
struct WriteLock<'a> {
    _guard: MutexGuard<'a, ()>,
    _file: Option<std::fs::File>,
}

/// A walk's failure as a write's.
fn write_failure(path: &Path, f: Failed) -> WriteError {
    if f.error.kind() == io::ErrorKind::NotADirectory {
        WriteError::NotDirectory(f.at)
    } else {
        WriteError::Io(path.to_path_buf(), f.error)
    }
}

/// Whether `e` says that the entry is not there: missing, or below
/// something that is not a directory.
fn absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

/// Give the upper file at `path` the mode `mode`; its metadata after, or
/// `None` where the upper layer keeps no modes the overlay can set.
///
/// The seam has no `chmod`: a file copied up from the lower layer is
/// created like any new file (0600), and the upper layers the overlay can
/// change the mode of (the local disk through `std::fs`, memory through
/// [`MemFs::set_mode`]) get the lower file's mode back (after publishing:
/// a reader may see 0600 for that moment). Another upper layer keeps 0600.
fn keep_mode<U: FsWrite>(upper: &U, path: &Path, mode: u32) -> io::Result<Option<Metadata>> {
    let upper: &dyn Any = upper;
    if let Some(mem) = upper.downcast_ref::<crate::MemFs>() {
        mem.set_mode(path, mode)?;
        return FileSystem::metadata(mem, path).map(Some);
    }
    if !upper.is::<LocalFs>() {
        return Ok(None);
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))?;
        let meta = std::fs::metadata(path)?;
        Ok(Some(crate::local::from_std(&meta)))
    }
    #[cfg(not(unix))]
    {
        let _ = (path, mode);
        Ok(None)
    }
}

#[cfg(all(test, unix))]
mod tests;
