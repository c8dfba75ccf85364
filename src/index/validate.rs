//! Validation (`docs/index.md`, "Where there is no watcher"): the mirror
//! checked against the tree at each call, by a parallel walk of the tree's
//! metadata, reading again only the regular files whose metadata changed.
//! The mechanism of the restart (`saved.rs`, `Scanner::reusable`) run at
//! every call: a file keeps its trigrams only when its size, mtime, ctime,
//! mode, device, inode and link count are the ones it was read with.
//!
//! Used where no feed reports the changes: no watcher on the platform (off
//! Linux), past the watch limit, on a network filesystem (inotify sees only
//! the local machine's writes), or when asked for
//! ([`IndexWatch::None`](super::IndexWatch::None)). The walk is the build's:
//! every directory listed (not the VCS directories), every entry stat'ed
//! not following links (or its metadata taken from the listing, where the
//! filesystem lists it: Windows, SFTP), every regular file read whose
//! metadata is not the mirror's; so its mirror is the one a build would
//! make, and a directory in which nothing changed keeps its node (shared
//! with the snapshot before, so that what calls keep by node stays valid).

use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use rayon::prelude::*;

use super::mirror::{content_of, Content, DirNode, Entry, Lost, CONTENT_MAX, ROOT_UNLISTABLE, VCS};
use super::source::Source;
use crate::fs::names::os_str;
use crate::fs::{FileType, Listing, Metadata, Timestamp};

/// How long after its last change a file's content is not vouched for by
/// its metadata (2 s, as `mirror::CLOCK_SLACK_SECS` over SFTP). The kernel
/// stamps a change with a coarse clock (a tick of 1-10 ms on Linux), so a
/// rewrite of the same size right after the file was read can leave its
/// size, mtime and ctime as they were; a network filesystem stamps with the
/// server's clock. A file whose ctime is that recent when it is read is read
/// again at the next validation, whatever its metadata says
/// (`Entry::unread`), until its change is older than this.
const RECENT_NS: i128 = 2_000_000_000;

/// One validation (or a build by validation): the filesystem, the time it
/// started, the files it read.
struct Walk<'a, S: Source> {
    fs: &'a S,
    /// A change at or after this time (nanoseconds since the epoch) is
    /// recent ([`RECENT_NS`]).
    recent_from: i128,
    reads: AtomicU64,
}

/// The mirror of `root` as it is now: `old` (the mirror so far, or a
/// saved one at a restart) checked against the tree, only what changed
/// read; with no `old`, a build. With the regular files it read.
pub(crate) fn validate<S: Source>(
    fs: &S,
    root: &Path,
    old: Option<&Arc<DirNode>>,
) -> Result<(Arc<DirNode>, u64), Lost> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let walk = Walk {
        fs,
        recent_from: now - RECENT_NS,
        reads: AtomicU64::new(0),
    };
    let dir = fs.open_dir(root).map_err(|_| Lost(ROOT_UNLISTABLE))?;
    let tree = walk.dir(&dir, root, old).ok_or(Lost(ROOT_UNLISTABLE))?;
    Ok((tree, walk.reads.into_inner()))
}

/// Whether a directory entry of this kind and name is walked into: a
/// directory, not a VCS one (not mirrored, as the build leaves them).
fn walked(kind: FileType, name: &[u8]) -> bool {
    kind == FileType::Dir && !VCS.contains(&name)
}

/// Whether the mirrored entry `e` stands as it is for the entry listed now
/// as `name`, `kind`, with `meta`: the same name, listed kind and metadata,
/// and for a regular file, content its metadata vouches for (`unread` is
/// read again). A directory's own entries are checked by its walk.
fn unchanged(e: &Entry, name: &[u8], kind: FileType, meta: Option<Metadata>) -> bool {
    *e.name == *name
        && e.kind == kind
        && e.meta == meta
        && (meta.map_or(kind, |m| m.kind) != FileType::File || (meta.is_some() && !e.unread))
}

fn ns(t: Timestamp) -> i128 {
    i128::from(t.0) * 1_000_000_000 + i128::from(t.1)
}

/// An entry's work done: its position, its trigrams and whether they are
/// vouched for (`Entry::unread`), or its directory's node.
type Done = (usize, Option<Arc<Content>>, bool, Option<Arc<DirNode>>);

/// What is left to do for an entry once its directory is listed and
/// stat'ed: read a regular file, walk a directory.
enum Work<'o> {
    Read(Option<&'o Arc<Content>>),
    Walk(Option<&'o Arc<DirNode>>),
}

impl<S: Source> Walk<'_, S> {
    /// The directory `dir` (open, at `abs`), listed, stat'ed, its changed
    /// files read and its subdirectories walked, on every core; `None`
    /// when it cannot be listed whole (read from the disk, as a build
    /// leaves it).
    fn dir(&self, dir: &S::Dir, abs: &Path, old: Option<&Arc<DirNode>>) -> Option<Arc<DirNode>> {
        let mut listing = Listing::new();
        self.fs.list_for_index(dir, &mut listing);
        if listing.error().is_some() {
            return None;
        }
        let metas: Vec<Option<Metadata>> = listing
            .iter()
            .enumerate()
            .map(|(i, (name, _))| {
                listing
                    .metadata(i)
                    .copied()
                    .or_else(|| self.fs.metadata_at(dir, abs, &os_str(name), false).ok())
            })
            .collect();
        // The common case first, with nothing allocated: the same names in
        // the same order, each with the mirror's kind and metadata, and no
        // file to read again; then only the subdirectories are walked, and
        // where none changed either the directory keeps its node.
        if let Some(old) = old.filter(|o| {
            o.entries.len() == listing.len()
                && listing
                    .iter()
                    .zip(&o.entries)
                    .zip(&metas)
                    .all(|(((name, kind), e), meta)| unchanged(e, name, kind, *meta))
        }) {
            let subs: Vec<(usize, Option<Arc<DirNode>>)> = old
                .entries
                .iter()
                .enumerate()
                .filter(|(_, e)| walked(e.meta.map_or(e.kind, |m| m.kind), &e.name))
                .collect::<Vec<_>>()
                .into_par_iter()
                .map(|(i, e)| {
                    let name = os_str(&e.name);
                    let sub = self
                        .fs
                        .open_dir_at(dir, abs, &name)
                        .ok()
                        .and_then(|d| self.dir(&d, &abs.join(&*name), e.dir.as_ref()));
                    (i, sub)
                })
                .collect();
            let same = |a: &Option<Arc<DirNode>>, b: &Option<Arc<DirNode>>| match (a, b) {
                (Some(a), Some(b)) => Arc::ptr_eq(a, b),
                (None, None) => true,
                _ => false,
            };
            if subs.iter().all(|(i, sub)| same(sub, &old.entries[*i].dir)) {
                return Some(old.clone());
            }
            let mut entries = old.entries.clone();
            for (i, sub) in subs {
                entries[i].dir = sub;
            }
            return Some(Arc::new(DirNode::from_entries(entries)));
        }
        let mut entries = Vec::with_capacity(listing.len());
        let mut work = Vec::new();
        for (i, (name, kind)) in listing.iter().enumerate() {
            let meta = metas[i];
            // The mirror's entry of that name: at the same position when
            // the order is unchanged, else by name.
            let was = old.and_then(|o| {
                o.entries
                    .get(i)
                    .filter(|e| *e.name == *name)
                    .or_else(|| o.get(name))
            });
            let was = was.filter(|w| w.kind == kind);
            let real = meta.map_or(kind, |m| m.kind);
            let mut entry = Entry {
                name: name.into(),
                kind,
                meta,
                content: None,
                unread: false,
                dir: None,
            };
            if real == FileType::File {
                match was {
                    Some(w) if meta.is_some() && w.meta == meta && !w.unread => {
                        entry.content = w.content.clone();
                    }
                    _ => work.push((i, Work::Read(was.and_then(|w| w.content.as_ref())))),
                }
            } else if walked(real, name) {
                work.push((i, Work::Walk(was.and_then(|w| w.dir.as_ref()))));
            }
            entries.push(entry);
        }
        let done: Vec<Done> = work
            .into_par_iter()
            .map(|(i, work)| {
                let (name, meta) = (&entries[i].name, entries[i].meta);
                let name = os_str(name);
                match work {
                    Work::Read(before) => {
                        let (content, unread) = self.read(dir, abs, &name, meta, before);
                        (i, content, unread, None)
                    }
                    Work::Walk(before) => {
                        let sub = self
                            .fs
                            .open_dir_at(dir, abs, &name)
                            .ok()
                            .and_then(|d| self.dir(&d, &abs.join(&*name), before));
                        (i, None, false, sub)
                    }
                }
            })
            .collect();
        for (i, content, unread, sub) in done {
            let e = &mut entries[i];
            e.content = content;
            e.unread = unread;
            e.dir = sub;
        }
        if let Some(old) = old {
            if old.entries.len() == entries.len()
                && old.entries.iter().zip(&entries).all(|(a, b)| a.same(b))
            {
                return Some(old.clone());
            }
        }
        Some(Arc::new(DirNode::from_entries(entries)))
    }

    /// The regular file `name` read for its trigrams (`None`: not plain
    /// text, or unreadable), and whether its change is too recent for its
    /// metadata to vouch for what was read ([`RECENT_NS`]). The trigrams
    /// held before are kept when the file reads the same (a recent file
    /// read again unchanged keeps its node).
    fn read(
        &self,
        dir: &S::Dir,
        abs: &Path,
        name: &OsStr,
        meta: Option<Metadata>,
        before: Option<&Arc<Content>>,
    ) -> (Option<Arc<Content>>, bool) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let content = super::mirror::SEEN.with_borrow_mut(|seen| {
            self.fs
                .read_text(Some(dir), abs, name, CONTENT_MAX, |d| content_of(d, seen))
                .flatten()
        });
        let content = match (content, before) {
            (Some(c), Some(b)) if c.len == b.len && c.grams == b.grams => Some(b.clone()),
            (c, _) => c,
        };
        let changed = meta.and_then(|m| m.ctime.or(m.mtime)).map(ns);
        let unread = changed.is_none_or(|t| t >= self.recent_from);
        (content, unread)
    }
}
