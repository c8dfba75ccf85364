//! The mirror of a tree (`docs/index.md`, "What is held"): each
//! directory's entries in the order the filesystem lists them, with their
//! kinds, their metadata (not following links) and, for a regular text
//! file, its length and trigrams. Built by one walk ([`Scanner`]) and kept
//! current by the changes its feed reports ([`apply`]), each of which is
//! settled by asking the filesystem again: an extra change costs a stat, a
//! missed one would cost exactness, so every change that may concern an
//! entry re-reads it. A filesystem without changes to report (SFTP) is
//! listed again whole before each call and compared ([`Poll`]).
//!
//! Directories are shared between snapshots ([`Arc`]): a change copies
//! the directories on its path from the root, and a call keeps the snapshot
//! it started with.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use super::grams::Grams;
use super::source::{Feed, Source};
use super::watch::{Changes, WatchError};
use crate::fs::names::{os_bytes, os_str};
use crate::fs::{FileType, Listing, Metadata};

/// Files larger than this are not read for their trigrams: they are always
/// candidates. (A file is read whole to be indexed, once per build or
/// change: this bounds that read.)
pub(crate) const CONTENT_MAX: u64 = 64 << 20;

/// Files larger than this keep their trigrams only when the bitmap takes at
/// most an eighth of their size: a large generated file (register tables,
/// firmware as C arrays) repeats a few trigrams and is worth ruling out,
/// while a large file of varied bytes would cost the memory the index is
/// bounded by (`docs/index.md`) and stays a candidate.
const LARGE: usize = 16 << 20;

/// The VCS directories glob's walk leaves out and grep's (hidden) skips:
/// not mirrored, nor watched; a call that names one is read from the disk.
pub(crate) const VCS: [&[u8]; 6] = crate::request::VCS_DIR_NAMES;

/// The byte-order marks the searcher sniffs (`encoding_rs_io`,
/// `reader::BOMS`): a file starting with one is transcoded or stripped, so
/// it is always a candidate.
const BOMS: [&[u8]; 3] = [b"\xEF\xBB\xBF", b"\xFF\xFE", b"\xFE\xFF"];

/// How far behind the local clock a polled host's clock may be while a
/// file modified in the host's current second is still recognised as one
/// (see [`Poll`]).
const CLOCK_SLACK_SECS: i64 = 2;

/// One mirrored directory.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirNode {
    pub(crate) entries: Vec<Entry>,
    /// The entries' positions in the order of their names, for lookups by
    /// name (a binary search: a map by name would hold every name twice,
    /// a few percent of the index's memory).
    by_name: Box<[u32]>,
}

impl DirNode {
    pub(crate) fn from_entries(entries: Vec<Entry>) -> DirNode {
        let mut by_name: Vec<u32> = (0..entries.len() as u32).collect();
        by_name.sort_unstable_by(|&a, &b| entries[a as usize].name.cmp(&entries[b as usize].name));
        DirNode {
            entries,
            by_name: by_name.into_boxed_slice(),
        }
    }

    fn position(&self, name: &[u8]) -> Option<usize> {
        let at = self
            .by_name
            .binary_search_by(|&i| (*self.entries[i as usize].name).cmp(name))
            .ok()?;
        Some(self.by_name[at] as usize)
    }

    pub(crate) fn get(&self, name: &[u8]) -> Option<&Entry> {
        self.position(name).map(|i| &self.entries[i])
    }

    fn get_mut(&mut self, name: &[u8]) -> Option<&mut Entry> {
        self.position(name).map(|i| &mut self.entries[i])
    }
}

/// One entry of a mirrored directory.
#[derive(Clone, Debug)]
pub(crate) struct Entry {
    pub(crate) name: Box<[u8]>,
    /// The kind the listing gave (`d_type`).
    pub(crate) kind: FileType,
    /// Its metadata, not following links; `None` when the stat failed (the
    /// view then asks the filesystem).
    pub(crate) meta: Option<Metadata>,
    /// A regular text file's trigrams, when it was read whole.
    pub(crate) content: Option<Arc<Content>>,
    /// A regular file whose content its metadata cannot vouch for: polled,
    /// one modified in the host's current second, not read yet (read at a
    /// later poll, a candidate meanwhile); validated, one changed too
    /// recently for its ctime to show a rewrite (`validate.rs`), read
    /// again at the next validation.
    pub(crate) unread: bool,
    /// A mirrored directory; `None` for a directory that is not (a VCS
    /// directory, one that could not be listed), read from the disk.
    pub(crate) dir: Option<Arc<DirNode>>,
}

impl Entry {
    /// Whether `self` and `other` say the same thing, sharing what they
    /// hold (a poll keeps the old directory when nothing in it changed).
    pub(crate) fn same(&self, other: &Entry) -> bool {
        self.name == other.name
            && self.kind == other.kind
            && self.meta == other.meta
            && self.unread == other.unread
            && match (&self.content, &other.content) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
            && match (&self.dir, &other.dir) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            }
    }
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

/// Why a mirror was lost when the watch limit was reached: the index then
/// validates instead (`validate.rs`).
pub(crate) const WATCH_LIMIT: &str = "the watch limit was reached";

/// Why a mirror was lost when its root cannot be listed (`chmod 000`, or
/// gone over SFTP).
pub(crate) const ROOT_UNLISTABLE: &str = "the root cannot be listed";

impl Lost {
    /// Whether a later build may succeed where this one failed, with
    /// nothing else to tell it: a root that cannot be listed now may be
    /// listable at the next call (its permissions restored), while the
    /// watch limit stays reached.
    pub(crate) fn retry(&self) -> bool {
        self.0 == ROOT_UNLISTABLE
    }
}

/// Totals of a mirror, for the index's status.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Totals {
    pub(crate) dirs: usize,
    pub(crate) entries: usize,
    pub(crate) files_read: usize,
    pub(crate) bytes_read: u64,
    pub(crate) gram_bytes: usize,
}

/// A walk of a filesystem that reports no changes (SFTP): every directory
/// listed again and compared with the mirror, and only the regular files
/// whose listed metadata changed (or that were written through the
/// filesystem) read again, after the walk.
///
/// SFTP v3 carries mtimes in whole seconds and no change time, so a file
/// rewritten with the same size within the second of its mtime looks
/// unchanged. Such a file is recognised before it can be rewritten so: its
/// mtime is in the host's current second when it is listed. The host's
/// clock is not known, but two lower bounds of it are: the newest mtime
/// ever listed (a write stamps the host's time; a time set into the
/// future breaks this one), and the local clock less [`CLOCK_SLACK_SECS`]
/// (a host clock further behind breaks that one). A file whose mtime is at
/// or past the lower of the two is not read: it stays a candidate, and a
/// later poll reads it once its second is past.
pub(crate) struct Poll {
    /// The files written through the filesystem since the last poll, by
    /// `(directory, name)`: read again whatever their metadata says.
    pub(crate) forced: BTreeSet<(PathBuf, Vec<u8>)>,
    /// The newest mtime listed so far (seconds), kept across polls.
    pub(crate) newest: i64,
    /// The files to read after the walk: `(directory, name)`.
    to_read: Vec<(PathBuf, Vec<u8>)>,
}

impl Poll {
    pub(crate) fn new(forced: BTreeSet<(PathBuf, Vec<u8>)>, newest: i64) -> Poll {
        Poll {
            forced,
            newest,
            to_read: Vec::new(),
        }
    }
}

/// One listed entry: its name, listed kind and the metadata the listing
/// came with.
type Listed = (Vec<u8>, FileType, Option<Metadata>);

/// Walks directories of a filesystem into the mirror, following each with
/// the feed before it is listed.
pub(crate) struct Scanner<'a, S: Source> {
    pub(crate) fs: &'a S,
    pub(crate) feed: &'a mut S::Feed,
    pub(crate) root: &'a Path,
    seen: Vec<u64>,
    /// Set for a filesystem that is polled (`Source::POLLS`).
    pub(crate) poll: Option<Poll>,
    /// The files of more than one link that a change stat'ed, gone or
    /// come, by `(dev, ino)`: their other names are stat'ed again
    /// ([`apply`]), since a change reported through one name is the
    /// file's, and no event names the others.
    linked: BTreeSet<(u64, u64)>,
    /// The directories walked again from scratch by this change
    /// ([`refresh`]): the changes below them are in that walk.
    rewalked: Vec<PathBuf>,
    /// A build over a saved mirror (`saved.rs`): a regular file whose
    /// metadata is the saved entry's, ctime and inode included, keeps the
    /// saved trigrams instead of being read (a write moves the ctime, even
    /// one that sets the mtime back).
    pub(crate) reuse: bool,
    /// Regular files read for their trigrams.
    pub(crate) reads: u64,
}

impl<'a, S: Source> Scanner<'a, S> {
    pub(crate) fn new(fs: &'a S, feed: &'a mut S::Feed, root: &'a Path) -> Scanner<'a, S> {
        Scanner {
            fs,
            feed,
            root,
            seen: Vec::new(),
            poll: None,
            linked: BTreeSet::new(),
            rewalked: Vec::new(),
            reuse: false,
            reads: 0,
        }
    }

    /// Record a file of more than one link ([`Scanner::linked`]).
    fn note_links(&mut self, meta: Option<Metadata>) {
        if let Some(m) = meta.filter(|m| m.kind == FileType::File && m.links > 1) {
            self.linked.insert((m.dev, m.ino));
        }
    }

    fn abs(&self, rel: &Path) -> PathBuf {
        if rel.as_os_str().is_empty() {
            self.root.to_path_buf()
        } else {
            self.root.join(rel)
        }
    }

    /// The whole tree: one walk, then (polled) the reads it left for after.
    pub(crate) fn scan_root(&mut self, old: Option<&Arc<DirNode>>) -> Result<Arc<DirNode>, Lost> {
        let mut tree = self
            .scan_dir(Path::new(""), None, old)?
            .ok_or(Lost(ROOT_UNLISTABLE))?;
        self.read_after(&mut tree);
        Ok(tree)
    }

    /// The directory `rel`, followed then listed, and everything below it;
    /// `None` when it cannot be followed or listed (read from the disk).
    /// `parent`: the directory it is listed in, to open it through. `old`:
    /// what the mirror held there, kept where nothing changed (polled).
    pub(crate) fn scan_dir(
        &mut self,
        rel: &Path,
        parent: Option<(&S::Dir, &Path, &OsStr)>,
        old: Option<&Arc<DirNode>>,
    ) -> Result<Option<Arc<DirNode>>, Lost> {
        let abs = self.abs(rel);
        match self.feed.add(&abs, rel) {
            Ok(()) => {}
            Err(WatchError::Limit) => return Err(Lost(WATCH_LIMIT)),
            Err(WatchError::Dir | WatchError::Missing) => return Ok(None),
        }
        let Some((dir, listed)) = self.list(&abs, parent) else {
            return Ok(None);
        };
        if self.fs.lists_ahead() {
            // Their listings start now and travel together (SFTP).
            for (name, kind, _) in &listed {
                if *kind == FileType::Dir && !VCS.contains(&&name[..]) {
                    self.fs.will_list_tree(&dir, &abs, &os_str(name), &VCS);
                }
            }
        }
        // Each entry's metadata, then the directory's regular files read
        // on every core (their trigrams are most of a build's work), then
        // the entries made, the subdirectories scanned, in order.
        let metas: Vec<Option<Metadata>> = listed
            .iter()
            .map(|(name, _, listed)| {
                listed.or_else(|| self.fs.metadata_at(&dir, &abs, &os_str(name), false).ok())
            })
            .collect();
        let mut read = self.read_files(&dir, &abs, &listed, &metas, old);
        let mut entries = Vec::with_capacity(listed.len());
        for (i, ((name, kind, _), meta)) in listed.into_iter().zip(metas).enumerate() {
            let was = old.and_then(|o| o.get(&name));
            let content = read.get_mut(i).and_then(Option::take);
            entries.push(self.entry(&dir, &abs, rel, name, kind, meta, was, content)?);
        }
        if let Some(old) = old {
            if old.entries.len() == entries.len()
                && old.entries.iter().zip(&entries).all(|(a, b)| a.same(b))
            {
                return Ok(Some(old.clone()));
            }
        }
        Ok(Some(Arc::new(DirNode::from_entries(entries))))
    }

    /// Whether a saved entry's trigrams stand for the file listed as
    /// `kind` with `meta` (a build over a saved mirror, `saved.rs`): the
    /// same metadata, ctime and inode included.
    fn reusable(&self, was: &Entry, kind: FileType, meta: Option<Metadata>) -> bool {
        self.reuse
            && was.kind == kind
            && meta.is_some_and(|m| m.ctime.is_some())
            && was.meta == meta
    }

    /// The contents of the regular files of a directory being scanned that
    /// must be read (not polled, not kept from a saved mirror), by
    /// position, read in parallel: `None` at the positions not read here.
    fn read_files(
        &mut self,
        dir: &S::Dir,
        abs: &Path,
        listed: &[Listed],
        metas: &[Option<Metadata>],
        old: Option<&Arc<DirNode>>,
    ) -> Vec<Option<Option<Arc<Content>>>> {
        use rayon::prelude::*;
        if self.poll.is_some() {
            return Vec::new();
        }
        let wanted: Vec<usize> = (0..listed.len())
            .filter(|&i| {
                let (name, kind, _) = &listed[i];
                let is_file = metas[i].map_or(*kind, |m| m.kind) == FileType::File;
                let was = old.and_then(|o| o.get(name));
                is_file && !was.is_some_and(|w| self.reusable(w, *kind, metas[i]))
            })
            .collect();
        self.reads += wanted.len() as u64;
        let fs = self.fs;
        let read = |seen: &mut Vec<u64>, i: usize| {
            let name = os_str(&listed[i].0);
            fs.read_text(Some(dir), abs, &name, CONTENT_MAX, |d| content_of(d, seen))
                .flatten()
        };
        let contents: Vec<(usize, Option<Arc<Content>>)> = if wanted.len() < 2 {
            let seen = &mut self.seen;
            wanted.into_iter().map(|i| (i, read(seen, i))).collect()
        } else {
            wanted
                .into_par_iter()
                .map(|i| SEEN.with_borrow_mut(|seen| (i, read(seen, i))))
                .collect()
        };
        let mut out = vec![None; listed.len()];
        for (i, c) in contents {
            out[i] = Some(c);
        }
        out
    }

    /// The directory's entries as the filesystem lists them, with the
    /// metadata listed with them, or `None` when it cannot be listed whole.
    fn list(
        &self,
        abs: &Path,
        parent: Option<(&S::Dir, &Path, &OsStr)>,
    ) -> Option<(S::Dir, Vec<Listed>)> {
        let dir = match parent {
            Some((p, p_path, name)) => self.fs.open_dir_at(p, p_path, name),
            None => self.fs.open_dir(abs),
        }
        .ok()?;
        let mut listing = Listing::new();
        self.fs.list(&dir, &mut listing);
        if listing.error().is_some() {
            return None;
        }
        let listed = listing
            .iter()
            .enumerate()
            .map(|(i, (n, k))| (n.to_vec(), k, listing.metadata(i).copied()))
            .collect();
        Some((dir, listed))
    }

    /// An entry read from the filesystem: stat'ed (unless listed with its
    /// metadata), a regular file read (or, polled, kept or left for after
    /// the walk), a directory scanned.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &mut self,
        dir: &S::Dir,
        abs: &Path,
        rel: &Path,
        name: Vec<u8>,
        kind: FileType,
        listed: Option<Metadata>,
        was: Option<&Entry>,
        read: Option<Option<Arc<Content>>>,
    ) -> Result<Entry, Lost> {
        let os_name = os_str(&name).into_owned();
        let meta = listed.or_else(|| self.fs.metadata_at(dir, abs, &os_name, false).ok());
        self.note_links(meta);
        let real = meta.map_or(kind, |m| m.kind);
        let mut unread = false;
        let content = if real != FileType::File {
            None
        } else if let Some(poll) = &mut self.poll {
            let key = (rel.to_path_buf(), name.clone());
            let kept = was.filter(|w| {
                w.kind == kind && w.meta == meta && !w.unread && !poll.forced.contains(&key)
            });
            match kept {
                Some(w) => w.content.clone(),
                None => {
                    poll.to_read.push(key);
                    unread = true;
                    None
                }
            }
        } else if let Some(content) = read {
            content
        } else if let Some(w) = was.filter(|w| self.reusable(w, kind, meta)) {
            w.content.clone()
        } else {
            self.reads += 1;
            let seen = &mut self.seen;
            self.fs
                .read_text(Some(dir), abs, &os_name, CONTENT_MAX, |d| {
                    content_of(d, seen)
                })
                .flatten()
        };
        if let (Some(poll), Some(s)) = (&mut self.poll, meta.and_then(|m| m.mtime)) {
            poll.newest = poll.newest.max(s.0);
        }
        let sub = if real == FileType::Dir && !VCS.contains(&&name[..]) {
            let old_dir = was.and_then(|w| w.dir.as_ref());
            self.scan_dir(&rel.join(&os_name), Some((dir, abs, &os_name)), old_dir)?
        } else {
            None
        };
        Ok(Entry {
            name: name.into_boxed_slice(),
            kind,
            meta,
            content,
            unread,
            dir: sub,
        })
    }

    /// Polled: read the files the walk left for after it, but those whose
    /// content cannot be vouched for yet ([`Poll`]), which stay unread.
    /// Each directory's files are hinted first (`FileSystem::will_open`),
    /// so that their reads travel together.
    fn read_after(&mut self, tree: &mut Arc<DirNode>) {
        let Some(poll) = &mut self.poll else {
            return;
        };
        let local = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let vouched_before = poll.newest.min(local - CLOCK_SLACK_SECS);
        let mut by_dir: BTreeMap<PathBuf, Vec<Vec<u8>>> = BTreeMap::new();
        for (rel, name) in std::mem::take(&mut poll.to_read) {
            by_dir.entry(rel).or_default().push(name);
        }
        for (rel, names) in by_dir {
            let Some(node) = node_at(tree, &rel) else {
                continue;
            };
            let wanted: Vec<(Vec<u8>, Metadata)> = names
                .into_iter()
                .filter_map(|n| {
                    let meta = node.get(&n)?.meta?;
                    let vouched = meta.mtime.is_some_and(|t| t.0 < vouched_before);
                    vouched.then_some((n, meta))
                })
                .collect();
            if wanted.is_empty() {
                continue;
            }
            let abs = self.abs(&rel);
            let Some(handle) = self
                .fs
                .mirror_dir(&abs)
                .or_else(|| self.fs.open_dir(&abs).ok())
            else {
                continue;
            };
            for (n, meta) in &wanted {
                self.fs.will_open(&handle, &abs, &os_str(n), Some(meta));
            }
            for (n, _) in wanted {
                let seen = &mut self.seen;
                let content = self
                    .fs
                    .read_text(Some(&handle), &abs, &os_str(&n), CONTENT_MAX, |d| {
                        content_of(d, seen)
                    })
                    .flatten();
                if let Some(e) = node_mut(tree, &rel).and_then(|d| d.get_mut(&n)) {
                    e.content = content;
                    e.unread = false;
                }
            }
        }
    }
}

thread_local! {
    /// A reading thread's scratch for [`Grams::of`] (2 MiB, all clear
    /// between files), kept for the thread's life: one made per directory
    /// read would be allocated and its pages faulted in again each time.
    pub(crate) static SEEN: std::cell::RefCell<Vec<u64>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What the prefilter may know of a regular file's bytes: nothing when the
/// searcher would not read them as plain text (a NUL: binary detection; a
/// byte-order mark: transcoding).
pub(crate) fn content_of(data: &[u8], seen: &mut Vec<u64>) -> Option<Arc<Content>> {
    if memchr::memchr(0, data).is_some() || BOMS.iter().any(|b| data.starts_with(b)) {
        return None;
    }
    let grams = Grams::of(data, seen);
    if data.len() > LARGE && grams.heap_bytes() > data.len() / 8 {
        return None;
    }
    Some(Arc::new(Content {
        len: data.len() as u64,
        grams,
    }))
}

/// The directory `rel` of the mirror, if it is mirrored.
fn node_at<'t>(root: &'t DirNode, rel: &Path) -> Option<&'t DirNode> {
    let mut node = root;
    for c in rel.components() {
        node = node.get(os_bytes(c.as_os_str()))?.dir.as_deref()?;
    }
    Some(node)
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

/// Apply the feed's changes to the mirror: each changed directory listed
/// again, each changed entry stat'ed (and read) again; or, for a polled
/// filesystem, the whole tree listed again and compared.
pub(crate) fn apply<S: Source>(
    root: &mut Arc<DirNode>,
    scanner: &mut Scanner<'_, S>,
    changes: &Changes,
) -> Result<(), Lost> {
    if scanner.poll.is_some() {
        *root = scanner.scan_root(Some(root))?;
        return Ok(());
    }
    // Parents sort before their children: a directory gone with its parent's
    // listing is then skipped.
    for rel in &changes.dirs {
        relist(root, scanner, rel, &changes.names)?;
    }
    for (rel, name) in &changes.names {
        let below_rewalk = || scanner.rewalked.iter().any(|d| rel.starts_with(d));
        if !changes.dirs.contains(rel) && !below_rewalk() {
            refresh(root, scanner, rel, name)?;
        }
    }
    // The other names of the linked files the changes touched
    // (`docs/index.md`, "Hard links"): a write through one name changed
    // them all, and a link made or removed changed their link count.
    let linked = std::mem::take(&mut scanner.linked);
    if !linked.is_empty() {
        let mut names = Vec::new();
        names_of(root, Path::new(""), &linked, &mut names);
        for (rel, name) in names {
            refresh(root, scanner, &rel, &name)?;
        }
        scanner.linked.clear();
    }
    Ok(())
}

/// The regular files of the mirror whose `(dev, ino)` is in `inodes`, by
/// `(directory, name)`.
fn names_of(
    node: &DirNode,
    rel: &Path,
    inodes: &BTreeSet<(u64, u64)>,
    out: &mut Vec<(PathBuf, Vec<u8>)>,
) {
    for e in &node.entries {
        if let Some(d) = &e.dir {
            names_of(d, &rel.join(os_str(&e.name)), inodes, out);
        } else if let Some(m) = e.meta.filter(|m| m.kind == FileType::File) {
            if inodes.contains(&(m.dev, m.ino)) {
                out.push((rel.to_path_buf(), e.name.to_vec()));
            }
        }
    }
}

/// List `rel` again: entries kept where the name, its listed kind and its
/// content are unchanged, the others read from the filesystem.
fn relist<S: Source>(
    root: &mut Arc<DirNode>,
    scanner: &mut Scanner<'_, S>,
    rel: &Path,
    dirty: &BTreeSet<(PathBuf, Vec<u8>)>,
) -> Result<(), Lost> {
    let abs = scanner.abs(rel);
    let listed = scanner.list(&abs, None);
    let Some(node) = node_mut(root, rel) else {
        return Ok(());
    };
    let Some((dir, listed)) = listed else {
        if rel.as_os_str().is_empty() {
            return Err(Lost(ROOT_UNLISTABLE));
        }
        // No longer listable: read from the disk from now on.
        let old = std::mem::take(node);
        forget_below(scanner, rel, &old);
        unmirror(root, scanner, rel);
        return Ok(());
    };
    let old = std::mem::take(node);
    let mut by_name: HashMap<&[u8], usize> = old
        .entries
        .iter()
        .enumerate()
        .map(|(i, e)| (&*e.name, i))
        .collect();
    let mut entries = Vec::with_capacity(listed.len());
    for (name, kind, meta) in listed {
        let changed = dirty.contains(&(rel.to_path_buf(), name.clone()));
        match by_name.remove(&name[..]) {
            Some(i) if !changed && old.entries[i].kind == kind => {
                entries.push(old.entries[i].clone());
            }
            previous => {
                if let Some(i) = previous {
                    if old.entries[i].dir.is_some() {
                        scanner.feed.forget(&rel.join(os_str(&name)));
                    }
                }
                entries.push(scanner.entry(&dir, &abs, rel, name, kind, meta, None, None)?);
            }
        }
    }
    for (name, i) in by_name.drain() {
        if old.entries[i].dir.is_some() {
            scanner.feed.forget(&rel.join(os_str(name)));
        }
        // A name of a linked file gone: the others' link count fell.
        scanner.note_links(old.entries[i].meta);
    }
    let node = node_mut(root, rel).expect("found above");
    *node = DirNode::from_entries(entries);
    restat_dir(root, scanner, rel);
    Ok(())
}

/// The feed's directories below a directory's old entries.
fn forget_below<S: Source>(scanner: &mut Scanner<'_, S>, rel: &Path, old: &DirNode) {
    for e in &old.entries {
        if e.dir.is_some() {
            scanner.feed.forget(&rel.join(os_str(&e.name)));
        }
    }
}

/// Make `rel` a directory read from the disk: no mirror, not followed.
fn unmirror<S: Source>(root: &mut Arc<DirNode>, scanner: &mut Scanner<'_, S>, rel: &Path) {
    scanner.feed.forget(rel);
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return;
    };
    if let Some(entry) = node_mut(root, parent).and_then(|n| n.get_mut(os_bytes(name))) {
        entry.dir = None;
    }
}

/// A directory's own metadata again (its mtime changes with its entries;
/// no event of its parent's says so).
fn restat_dir<S: Source>(root: &mut Arc<DirNode>, scanner: &Scanner<'_, S>, rel: &Path) {
    let (Some(parent), Some(name)) = (rel.parent(), rel.file_name()) else {
        return;
    };
    let meta = scanner.fs.symlink_metadata(&scanner.abs(rel)).ok();
    if let Some(entry) = node_mut(root, parent).and_then(|n| n.get_mut(os_bytes(name))) {
        entry.meta = meta;
    }
}

/// Stat (and read) the entry `name` of `rel` again.
fn refresh<S: Source>(
    root: &mut Arc<DirNode>,
    scanner: &mut Scanner<'_, S>,
    rel: &Path,
    name: &[u8],
) -> Result<(), Lost> {
    let abs = scanner.abs(rel);
    let os_name = os_str(name).into_owned();
    let path = abs.join(&os_name);
    let Some(node) = node_mut(root, rel) else {
        return Ok(());
    };
    let Some(entry) = node.get_mut(name) else {
        return Ok(());
    };
    let meta = scanner.fs.symlink_metadata(&path).ok();
    let old_meta = entry.meta;
    let was = old_meta.map(|m| m.kind);
    if meta.map(|m| m.kind) != was {
        // Replaced by another kind without an event of the directory's
        // (never, but cheap to settle): list the directory again.
        let dirty = BTreeSet::from([(rel.to_path_buf(), name.to_vec())]);
        return relist(root, scanner, rel, &dirty);
    }
    entry.meta = meta;
    match meta.map(|m| m.kind) {
        Some(FileType::File) => {
            // Its other names, if it has or had any, are stat'ed after.
            scanner.note_links(old_meta);
            scanner.note_links(meta);
            let seen = &mut scanner.seen;
            entry.content = scanner
                .fs
                .read_text(None, &abs, &os_name, CONTENT_MAX, |d| content_of(d, seen))
                .flatten();
        }
        // Its permissions or owner changed (or it is not mirrored): what
        // can be listed, stat'ed and opened below it may have changed with
        // them (a directory readable but not searchable lists its names
        // and nothing more), so it is walked again from scratch, as the
        // build walks it: mirrored where it can be followed and listed,
        // read from the disk where not.
        Some(FileType::Dir)
            if !VCS.contains(&name) && (meta != old_meta || entry.dir.is_none()) =>
        {
            let sub = rel.join(&os_name);
            scanner.feed.forget(&sub);
            let scanned = scanner.scan_dir(&sub, None, None)?;
            if let Some(e) = node_mut(root, rel).and_then(|n| n.get_mut(name)) {
                e.dir = scanned;
            }
            scanner.rewalked.push(sub);
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
