//! The mirror of a local tree (`docs/index.md`, "What is held"): each
//! directory's entries in the order the disk lists them, with their kinds,
//! their metadata (not following links) and, for a regular text file, its
//! length and trigrams. Built by one walk ([`Scanner`]) and kept current by
//! the watcher's changes ([`apply`]), each of which is settled by asking
//! the disk again: an extra change costs a stat, a missed one would cost
//! exactness, so every event that may concern an entry re-reads it.
//!
//! Directories are shared between snapshots ([`Arc`]): a change copies
//! the directories on its path from the root, and a call keeps the snapshot
//! it started with.

use std::collections::{BTreeSet, HashMap};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::grams::Grams;
use super::watch::{Changes, WatchError, Watcher};
use crate::fs::names::{os_bytes, os_str};
use crate::fs::{FileSystem, FileType, Listing, LocalDir, LocalFs, Metadata};

/// Files larger than this are not read for their trigrams: they are always
/// candidates.
const CONTENT_MAX: u64 = 16 << 20;

/// The VCS directories glob's walk leaves out and grep's (hidden) skips:
/// not mirrored, nor watched; a call that names one is read from the disk.
const VCS: [&[u8]; 6] = [b".git", b".hg", b".svn", b".bzr", b".jj", b".sl"];

/// The byte-order marks the searcher sniffs (`encoding_rs_io`,
/// `reader::BOMS`): a file starting with one is transcoded or stripped, so
/// it is always a candidate.
const BOMS: [&[u8]; 3] = [b"\xEF\xBB\xBF", b"\xFF\xFE", b"\xFE\xFF"];

/// One mirrored directory.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirNode {
    pub(crate) entries: Vec<Entry>,
    by_name: HashMap<Box<[u8]>, usize>,
}

impl DirNode {
    fn from_entries(entries: Vec<Entry>) -> DirNode {
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        DirNode { entries, by_name }
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    fn get_mut(&mut self, name: &[u8]) -> Option<&mut Entry> {
        self.by_name.get(name).map(|&i| &mut self.entries[i])
    }
}

/// One entry of a mirrored directory.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) name: Box<[u8]>,
    /// The kind the listing gave (`d_type`).
    pub(crate) kind: FileType,
    /// Its metadata, not following links; `None` when the stat failed (the
    /// view then asks the disk).
    pub(crate) meta: Option<Metadata>,
    /// A regular text file's trigrams, when it was read whole.
    pub(crate) content: Option<Arc<Content>>,
    /// A mirrored directory; `None` for a directory that is not (a VCS
    /// directory, one that could not be listed), read from the disk.
    pub(crate) dir: Option<Arc<DirNode>>,
}

/// What the prefilter knows of a regular file: no NUL, no byte-order mark,
/// `len` bytes, these trigrams.
#[derive(Debug)]
pub(crate) struct Content {
    pub(crate) len: u64,
    pub(crate) grams: Grams,
}

/// The mirror cannot be kept current (the watch limit was reached, the
/// root cannot be listed): the index must be rebuilt, and the scan answers
/// until it is. Says why.
#[derive(Debug)]
pub(crate) struct Lost(pub(crate) &'static str);

/// Totals of a mirror, for the index's status.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Totals {
    pub(crate) dirs: usize,
    pub(crate) entries: usize,
    pub(crate) files_read: usize,
    pub(crate) bytes_read: u64,
    pub(crate) gram_bytes: usize,
}

/// Walks directories of the disk into the mirror, watching each before it
/// is listed.
pub(crate) struct Scanner<'a> {
    pub(crate) disk: &'a LocalFs,
    pub(crate) watcher: &'a mut Watcher,
    pub(crate) root: &'a Path,
    seen: Vec<u64>,
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(disk: &'a LocalFs, watcher: &'a mut Watcher, root: &'a Path) -> Scanner<'a> {
        Scanner {
            disk,
            watcher,
            root,
            seen: Vec::new(),
        }
    }

    fn abs(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() {
            self.root.to_path_buf()
        } else {
            self.root.join(rel)
        }
    }

    /// The directory `rel`, watched then listed, and everything below it;
    /// `None` when it cannot be watched or listed (read from the disk).
    pub(crate) fn scan_dir(&mut self, rel: &Path) -> Result<Option<Arc<DirNode>>, Lost> {
        let abs = self.abs(rel);
        match self.watcher.add(&abs, rel) {
            Ok(()) => {}
            Err(WatchError::Limit) => return Err(Lost("the watch limit was reached")),
            Err(WatchError::Dir) => return Ok(None),
        }
        let Some((dir, listed)) = self.list(&abs) else {
            return Ok(None);
        };
        let mut entries = Vec::with_capacity(listed.len());
        for (name, kind) in listed {
            entries.push(self.entry(&dir, &abs, rel, name, kind)?);
        }
        Ok(Some(Arc::new(DirNode::from_entries(entries))))
    }

    /// The directory's entries as the disk lists them, or `None` when it
    /// cannot be listed whole.
    #[allow(clippy::type_complexity)]
    fn list(&self, abs: &Path) -> Option<(LocalDir, Vec<(Vec<u8>, FileType)>)> {
        let dir = self.disk.open_dir(abs).ok()?;
        let mut listing = Listing::new();
        self.disk.list(&dir, &mut listing);
        if listing.error().is_some() {
            return None;
        }
        let listed = listing.iter().map(|(n, k)| (n.to_vec(), k)).collect();
        Some((dir, listed))
    }

    /// An entry read from the disk: stat'ed, a regular file read, a
    /// directory scanned.
    fn entry(
        &mut self,
        dir: &LocalDir,
        abs: &Path,
        rel: &Path,
        name: Vec<u8>,
        kind: FileType,
    ) -> Result<Entry, Lost> {
        let os_name = os_str(&name).into_owned();
        let meta = self.disk.metadata_at(dir, abs, &os_name, false).ok();
        let real = meta.map_or(kind, |m| m.kind);
        let content = if real == FileType::File {
            read_content(&abs.join(&os_name), &mut self.seen)
        } else {
            None
        };
        let dir = if real == FileType::Dir && !VCS.contains(&&name[..]) {
            self.scan_dir(&rel.join(&os_name))?
        } else {
            None
        };
        Ok(Entry {
            name: name.into_boxed_slice(),
            kind,
            meta,
            content,
            dir,
        })
    }
}

/// A regular file read whole for its trigrams: `None` when it cannot be
/// read, is large, changed size while read, or is not plain text to the
/// searcher (a NUL: binary detection; a byte-order mark: transcoding).
fn read_content(path: &Path, seen: &mut Vec<u64>) -> Option<Arc<Content>> {
    let file = open_nonblocking(path).ok()?;
    let m = file.metadata().ok()?;
    if !m.is_file() || m.len() > CONTENT_MAX {
        return None;
    }
    // A file with another name elsewhere can be written through it, and
    // inotify reports that to the other name's directory only: never
    // ruled out by its trigrams.
    #[cfg(unix)]
    if std::os::unix::fs::MetadataExt::nlink(&m) > 1 {
        return None;
    }
    let mut data = Vec::with_capacity(m.len() as usize);
    file.take(CONTENT_MAX + 1).read_to_end(&mut data).ok()?;
    if data.len() as u64 != m.len()
        || memchr::memchr(0, &data).is_some()
        || BOMS.iter().any(|b| data.starts_with(b))
    {
        return None;
    }
    Some(Arc::new(Content {
        len: m.len(),
        grams: Grams::of(&data, seen),
    }))
}

/// Opened without blocking: a FIFO swapped in for the file is never waited
/// on (the caller checks the kind on the open file).
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    o.open(path)
}

/// The directory `rel` of the mirror, copied out of the snapshots that
/// share it; `None` when it is not mirrored.
fn node_mut<'t>(root: &'t mut Arc<DirNode>, rel: &Path) -> Option<&'t mut DirNode> {
    let mut node = Arc::make_mut(root);
    for c in rel.components() {
        let entry = node.get_mut(os_bytes(c.as_os_str()))?;
        node = Arc::make_mut(entry.dir.as_mut()?);
    }
    Some(node)
}

/// Apply the watcher's changes to the mirror: each changed directory listed
/// again, each changed entry stat'ed (and read) again.
pub(crate) fn apply(
    root: &mut Arc<DirNode>,
    scanner: &mut Scanner<'_>,
    changes: &Changes,
) -> Result<(), Lost> {
    // Parents sort before their children: a directory gone with its parent's
    // listing is then skipped.
    for rel in &changes.dirs {
        relist(root, scanner, rel, &changes.names)?;
    }
    for (rel, name) in &changes.names {
        if !changes.dirs.contains(rel) {
            refresh(root, scanner, rel, name)?;
        }
    }
    Ok(())
}

/// List `rel` again: entries kept where the name, its listed kind and its
/// content are unchanged, the others read from the disk.
fn relist(
    root: &mut Arc<DirNode>,
    scanner: &mut Scanner<'_>,
    rel: &Path,
    dirty: &BTreeSet<(PathBuf, Vec<u8>)>,
) -> Result<(), Lost> {
    let abs = scanner.abs(rel);
    let listed = scanner.list(&abs);
    let Some(node) = node_mut(root, rel) else {
        return Ok(());
    };
    let Some((dir, listed)) = listed else {
        if rel.as_os_str().is_empty() {
            return Err(Lost("the root cannot be listed"));
        }
        // No longer listable: read from the disk from now on.
        let old = std::mem::take(node);
        forget_below(scanner, rel, &old);
        unmirror(root, scanner, rel);
        return Ok(());
    };
    let mut old = std::mem::take(node);
    let mut entries = Vec::with_capacity(listed.len());
    for (name, kind) in listed {
        let changed = dirty.contains(&(rel.to_path_buf(), name.clone()));
        match old.by_name.remove(&name[..]) {
            Some(i) if !changed && old.entries[i].kind == kind => {
                entries.push(old.entries[i].clone());
            }
            previous => {
                if let Some(i) = previous {
                    if old.entries[i].dir.is_some() {
                        scanner.watcher.forget(&rel.join(os_str(&name)));
                    }
                }
                entries.push(scanner.entry(&dir, &abs, rel, name, kind)?);
            }
        }
    }
    for (name, i) in old.by_name.drain() {
        if old.entries[i].dir.is_some() {
            scanner.watcher.forget(&rel.join(os_str(&name)));
        }
    }
    let node = node_mut(root, rel).expect("found above");
    *node = DirNode::from_entries(entries);
    restat_dir(root, scanner, rel);
    Ok(())
}

/// The watches below a directory's old entries.
fn forget_below(scanner: &mut Scanner<'_>, rel: &Path, old: &DirNode) {
    for e in &old.entries {
        if e.dir.is_some() {
            scanner.watcher.forget(&rel.join(os_str(&e.name)));
        }
    }
}

/// Make `rel` a directory read from the disk: no mirror, no watch.
fn unmirror(root: &mut Arc<DirNode>, scanner: &mut Scanner<'_>, rel: &Path) {
    scanner.watcher.forget(rel);
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return;
    };
    if let Some(entry) = node_mut(root, parent).and_then(|n| n.get_mut(os_bytes(name))) {
        entry.dir = None;
    }
}

/// A directory's own metadata again (its mtime changes with its entries;
/// no event of its parent's says so).
fn restat_dir(root: &mut Arc<DirNode>, scanner: &Scanner<'_>, rel: &Path) {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return;
    };
    let meta = scanner.disk.symlink_metadata(&scanner.abs(rel)).ok();
    if let Some(entry) = node_mut(root, parent).and_then(|n| n.get_mut(os_bytes(name))) {
        entry.meta = meta;
    }
}

/// Stat (and read) the entry `name` of `rel` again.
fn refresh(
    root: &mut Arc<DirNode>,
    scanner: &mut Scanner<'_>,
    rel: &Path,
    name: &[u8],
) -> Result<(), Lost> {
    let abs = scanner.abs(rel);
    let path = abs.join(os_str(name));
    let Some(node) = node_mut(root, rel) else {
        return Ok(());
    };
    let Some(entry) = node.get_mut(name) else {
        return Ok(());
    };
    let meta = scanner.disk.symlink_metadata(&path).ok();
    let was = entry.meta.map(|m| m.kind);
    if meta.map(|m| m.kind) != was {
        // Replaced by another kind without an event of the directory's
        // (never, but cheap to settle): list the directory again.
        let dirty = BTreeSet::from([(rel.to_path_buf(), name.to_vec())]);
        return relist(root, scanner, rel, &dirty);
    }
    entry.meta = meta;
    match meta.map(|m| m.kind) {
        Some(FileType::File) => entry.content = read_content(&path, &mut scanner.seen),
        Some(FileType::Dir) if !VCS.contains(&name) => {
            // Its permissions may have changed: mirrored while it can be
            // listed, read from the disk otherwise.
            let listable = scanner.disk.open_dir(&path).is_ok();
            let mirrored = entry.dir.is_some();
            let sub = rel.join(os_str(name));
            if listable && !mirrored {
                let scanned = scanner.scan_dir(&sub)?;
                if let Some(e) = node_mut(root, rel).and_then(|n| n.get_mut(name)) {
                    e.dir = scanned;
                }
            } else if !listable && mirrored {
                unmirror(root, scanner, &sub);
            }
        }
        _ => {}
    }
    Ok(())
}

/// Count what a mirror holds.
pub(crate) fn totals(node: &DirNode, t: &mut Totals) {
    t.dirs += 1;
    for e in &node.entries {
        t.entries += 1;
        if let Some(c) = &e.content {
            t.files_read += 1;
            t.bytes_read += c.len;
            t.gram_bytes += c.grams.heap_bytes();
        }
        if let Some(d) = &e.dir {
            totals(d, t);
        }
    }
}
