//! The nodes of a [`MemFs`](super::MemFs) and how a path reaches one.
//!
//! Paths resolve the way the Linux kernel resolves them (`link_path_walk`
//! in `fs/namei.c`): `.` stays, `..` climbs from the directory reached so
//! far (physically, after symlinks), a symlink is followed in the middle of
//! a path always and at its end when the operation follows, at most
//! [`MAX_LINKS`] links per resolution, and a directory refusing lookups
//! refuses every name in it, `.` and `..` included. Canonicalization is
//! glibc's `realpath` instead, which std's `canonicalize` calls: it handles
//! `.` and `..` lexically on the path resolved so far, so `dir/..` works
//! where `stat("dir/..")` is refused.
//!
//! Locking: every node has its own lock and a reader holds at most a
//! directory's and then one of its children's, top down; a mutation holds
//! one node's lock at a time. A handle is an `Arc` of its node, so it stays
//! valid whatever happens to the tree.

use std::io;
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

use dsh_search_base::sync::RecoverPoison;

use crate::seam::{errno, FileType, Metadata, Timestamp};

/// Linux's `MAXSYMLINKS`: one resolution follows at most this many links;
/// the next one fails with `ELOOP` (glibc's `realpath` uses the same
/// number).
pub(super) const MAX_LINKS: u32 = 40;

/// Linux's `NAME_MAX`.
pub(super) const NAME_MAX: usize = 255;

/// Linux's `PATH_MAX`, counting the terminating NUL.
pub(super) const PATH_MAX: usize = 4096;

/// The device number every node reports (`"mem"` in ASCII).
pub(super) const DEV: u64 = 0x006d_656d;

/// A directory with more entries than this keeps a sorted name index.
const INDEX_MIN: usize = 16;

/// A raw OS error number, as [`io::Error::raw_os_error`] gives it.
pub(super) type Errno = i32;

/// The error `n` stands for.
pub(super) fn os_error(n: Errno) -> io::Error {
    io::Error::from_raw_os_error(n)
}

/// One file, directory, symlink or special file.
pub(super) struct Node {
    /// Unique within the filesystem, never reused.
    pub(super) ino: u64,
    /// The kind, as a listing gives it; it never changes.
    pub(super) kind: FileType,
    /// An entry whose `lstat` failed when it was loaded: every lookup of
    /// it fails with this.
    pub(super) refused: Option<Errno>,
    state: RwLock<State>,
}

/// What can change about a node.
pub(super) struct State {
    pub(super) mtime: Timestamp,
    pub(super) ctime: Timestamp,
    /// The permission bits (`& 0o7777`).
    pub(super) mode: u32,
    pub(super) body: Body,
}

/// A node's contents, by kind.
pub(super) enum Body {
    Dir(Box<DirBody>),
    File(FileBody),
    /// The target, as stored.
    Symlink(Box<[u8]>),
    /// A FIFO, socket or device (the node's kind says which), or an entry
    /// whose `lstat` failed.
    Special,
}

/// A regular file.
pub(super) struct FileBody {
    pub(super) data: Arc<[u8]>,
    /// The size: `data.len()`, or the size on disk of a file that could
    /// not be read when it was loaded.
    pub(super) len: u64,
    /// Why opening it fails.
    pub(super) open_err: Option<Errno>,
    /// Whether `data` holds no NUL byte, found when it was stored: the
    /// engine's whole-file check asks it of every file it searches.
    pub(super) nul_free: bool,
}

impl FileBody {
    pub(super) fn new(data: Arc<[u8]>) -> FileBody {
        FileBody {
            len: data.len() as u64,
            nul_free: memchr::memchr(0, &data).is_none(),
            data,
            open_err: None,
        }
    }
}

/// A directory: its entries in creation order, which is its listing order.
pub(super) struct DirBody {
    /// `..`; dangling for the root, whose `..` is itself.
    parent: Weak<Node>,
    entries: Vec<Entry>,
    /// Positions in `entries` sorted by name, while there are more than
    /// [`INDEX_MIN`] entries; empty otherwise.
    index: Vec<u32>,
    /// The size a stat reports.
    pub(super) len: u64,
    /// Why opening (listing) it fails.
    pub(super) open_err: Option<Errno>,
    /// The error that ended its listing when it was loaded, after the
    /// entries it has.
    pub(super) list_err: Option<Errno>,
    /// Why a lookup in it fails (no search permission when it was loaded).
    pub(super) lookup_err: Option<Errno>,
}

struct Entry {
    name: Box<[u8]>,
    node: Arc<Node>,
}

/// A directory's size when it has no other (ext4's block).
pub(super) const DIR_LEN: u64 = 4096;

impl DirBody {
    pub(super) fn new(parent: Weak<Node>, len: u64) -> DirBody {
        DirBody {
            parent,
            entries: Vec::new(),
            index: Vec::new(),
            len,
            open_err: None,
            list_err: None,
            lookup_err: None,
        }
    }

    /// The position of `name` in `entries`, or where its index slot goes.
    fn find(&self, name: &[u8]) -> Result<usize, usize> {
        if self.index.is_empty() {
            return self.entries.iter().position(|e| &*e.name == name).ok_or(0);
        }
        self.index
            .binary_search_by(|&i| (*self.entries[i as usize].name).cmp(name))
            .map(|slot| self.index[slot] as usize)
    }

    pub(super) fn get(&self, name: &[u8]) -> Option<&Arc<Node>> {
        self.find(name).ok().map(|i| &self.entries[i].node)
    }

    /// The entries in listing order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&[u8], &Arc<Node>)> {
        self.entries.iter().map(|e| (&*e.name, &e.node))
    }

    /// Append `name`, which is not there yet.
    pub(super) fn insert(&mut self, name: &[u8], node: Arc<Node>) {
        let slot = self.find(name).err();
        self.entries.push(Entry {
            name: name.into(),
            node,
        });
        if self.entries.len() <= INDEX_MIN {
            return;
        }
        match slot {
            Some(slot) if !self.index.is_empty() => {
                self.index.insert(slot, (self.entries.len() - 1) as u32);
            }
            _ => self.reindex(),
        }
    }

    /// Append without maintaining the index ([`DirBody::reindex`] after a
    /// batch): loading appends whole listings, whose names are distinct.
    pub(super) fn push_unindexed(&mut self, name: Box<[u8]>, node: Arc<Node>) {
        self.entries.push(Entry { name, node });
    }

    /// Rebuild the index (and give back spare capacity).
    pub(super) fn reindex(&mut self) {
        self.entries.shrink_to_fit();
        self.index.clear();
        if self.entries.len() > INDEX_MIN {
            let entries = &self.entries;
            self.index = (0..entries.len() as u32).collect();
            self.index
                .sort_unstable_by(|&a, &b| entries[a as usize].name.cmp(&entries[b as usize].name));
        }
        self.index.shrink_to_fit();
    }

    /// Remove `name`; its node.
    pub(super) fn remove(&mut self, name: &[u8]) -> Option<Arc<Node>> {
        let pos = self.find(name).ok()?;
        let entry = self.entries.remove(pos);
        if self.entries.len() <= INDEX_MIN {
            self.index = Vec::new();
        } else {
            let pos = pos as u32;
            self.index.retain(|&i| i != pos);
            for i in &mut self.index {
                if *i > pos {
                    *i -= 1;
                }
            }
        }
        Some(entry.node)
    }

    /// Every entry, taken out (the directory was removed).
    pub(super) fn take_all(&mut self) -> Vec<Arc<Node>> {
        self.index = Vec::new();
        std::mem::take(&mut self.entries)
            .into_iter()
            .map(|e| e.node)
            .collect()
    }
}

impl Node {
    pub(super) fn new(ino: u64, kind: FileType, state: State) -> Arc<Node> {
        Arc::new(Node {
            ino,
            kind,
            refused: None,
            state: RwLock::new(state),
        })
    }

    /// An entry listed as `kind` whose `lstat` failed with `err`.
    pub(super) fn refused(ino: u64, kind: FileType, err: Errno) -> Arc<Node> {
        Arc::new(Node {
            ino,
            kind,
            refused: Some(err),
            state: RwLock::new(State {
                mtime: (0, 0),
                ctime: (0, 0),
                mode: 0,
                body: Body::Special,
            }),
        })
    }

    /// A root directory.
    pub(super) fn root(ino: u64, mode: u32, time: Timestamp) -> Arc<Node> {
        Node::new(
            ino,
            FileType::Dir,
            State {
                mtime: time,
                ctime: time,
                mode,
                body: Body::Dir(Box::new(DirBody::new(Weak::new(), DIR_LEN))),
            },
        )
    }

    pub(super) fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().recover_poison()
    }

    pub(super) fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().recover_poison()
    }

    pub(super) fn is_dir(&self) -> bool {
        self.kind == FileType::Dir && self.refused.is_none()
    }

    /// The target, for a symlink.
    pub(super) fn link_target(&self) -> Option<Box<[u8]>> {
        if self.kind != FileType::Symlink || self.refused.is_some() {
            return None;
        }
        match &self.read().body {
            Body::Symlink(t) => Some(t.clone()),
            _ => None,
        }
    }

    /// What a stat of this node returns.
    pub(super) fn metadata(&self) -> io::Result<Metadata> {
        if let Some(e) = self.refused {
            return Err(os_error(e));
        }
        let st = self.read();
        let len = match &st.body {
            Body::Dir(d) => d.len,
            Body::File(f) => f.len,
            Body::Symlink(t) => t.len() as u64,
            Body::Special => 0,
        };
        Ok(Metadata {
            kind: self.kind,
            len,
            mtime: Some(st.mtime),
            mode: st.mode,
            dev: DEV,
            ino: self.ino,
            ctime: Some(st.ctime),
            links: 1,
        })
    }
}

/// Look `name` up in `dir`, as one step of a path walk: the directory's
/// lookup error first (the kernel's `may_lookup`), then the name's length,
/// then the name.
pub(super) fn lookup(dir: &Arc<Node>, name: &[u8]) -> io::Result<Arc<Node>> {
    let st = dir.read();
    let Body::Dir(d) = &st.body else {
        return Err(errno::not_a_directory());
    };
    if let Some(e) = d.lookup_err {
        return Err(os_error(e));
    }
    if name.len() > NAME_MAX {
        return Err(errno::name_too_long());
    }
    let child = match name {
        b"." => return Ok(Arc::clone(dir)),
        b".." => return Ok(d.parent.upgrade().unwrap_or_else(|| Arc::clone(dir))),
        _ => Arc::clone(d.get(name).ok_or_else(errno::not_found)?),
    };
    drop(st);
    match child.refused {
        Some(e) => Err(os_error(e)),
        None => Ok(child),
    }
}

/// The components of `path` (empty ones skipped) and whether it ends with
/// a slash.
fn components(path: &[u8]) -> (impl Iterator<Item = &[u8]>, bool) {
    let comps = path.split(|&b| b == b'/').filter(|c| !c.is_empty());
    (comps, path.last() == Some(&b'/'))
}

/// One path resolution: its count of links followed.
pub(super) struct Walk<'a> {
    root: &'a Arc<Node>,
    links: u32,
}

impl<'a> Walk<'a> {
    pub(super) fn new(root: &'a Arc<Node>) -> Walk<'a> {
        Walk { root, links: 0 }
    }

    /// Count one more link followed.
    pub(super) fn count_link(&mut self) -> io::Result<()> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(errno::too_many_links());
        }
        Ok(())
    }

    /// Resolve `path` from `start` (from the root when it is absolute),
    /// following a symlink in the last component when `follow` or when the
    /// path ends with a slash, which also requires a directory.
    pub(super) fn resolve(
        &mut self,
        start: &Arc<Node>,
        path: &[u8],
        follow: bool,
    ) -> io::Result<Arc<Node>> {
        if path.is_empty() {
            return Err(errno::not_found());
        }
        let mut cur = if path[0] == b'/' {
            Arc::clone(self.root)
        } else {
            Arc::clone(start)
        };
        let (comps, slash) = components(path);
        let mut comps = comps.peekable();
        while let Some(name) = comps.next() {
            let last = comps.peek().is_none();
            let child = lookup(&cur, name)?;
            let next = match child.link_target() {
                Some(target) if !last || follow || slash => {
                    self.count_link()?;
                    self.resolve(&cur, &target, true)?
                }
                _ => child,
            };
            if (!last || slash) && !next.is_dir() {
                return Err(errno::not_a_directory());
            }
            cur = next;
        }
        Ok(cur)
    }

    /// The directory that holds the last component of `path` and that
    /// component, as `mkdir`, `symlink` and `open(O_CREAT)` resolve them;
    /// and whether the path ends with a slash. The component is empty for
    /// the root.
    pub(super) fn parent<'p>(
        &mut self,
        start: &Arc<Node>,
        path: &'p [u8],
    ) -> io::Result<(Arc<Node>, &'p [u8], bool)> {
        if path.is_empty() {
            return Err(errno::not_found());
        }
        let end = path.iter().rposition(|&b| b != b'/').map_or(0, |i| i + 1);
        let slash = end < path.len();
        let trimmed = &path[..end];
        match trimmed.iter().rposition(|&b| b == b'/') {
            Some(i) => {
                let dir = self.resolve(start, &trimmed[..=i], true)?;
                Ok((dir, &trimmed[i + 1..], slash))
            }
            None if trimmed.is_empty() => Ok((Arc::clone(self.root), b"", slash)),
            None => {
                if !start.is_dir() {
                    return Err(errno::not_a_directory());
                }
                Ok((Arc::clone(start), trimmed, slash))
            }
        }
    }

    /// `path` with every symlink resolved, as glibc's `realpath` does it:
    /// each component looked up (and a symlink's target spliced in), but
    /// `.` and `..` applied to the path resolved so far, which only has to
    /// be a directory. A relative path starts at the root.
    pub(super) fn canonical(&mut self, path: &[u8]) -> io::Result<Vec<u8>> {
        if path.is_empty() {
            return Err(errno::not_found());
        }
        // The resolved components and their nodes.
        let mut names: Vec<Vec<u8>> = Vec::new();
        let mut nodes: Vec<Arc<Node>> = Vec::new();
        // What is left to resolve: the path, with link targets spliced in.
        let mut rest = path.to_vec();
        let mut pos = 0;
        loop {
            while rest.get(pos) == Some(&b'/') {
                pos += 1;
            }
            if pos == rest.len() {
                break;
            }
            let end = rest[pos..]
                .iter()
                .position(|&b| b == b'/')
                .map_or(rest.len(), |i| pos + i);
            let name = rest[pos..end].to_vec();
            pos = end;
            let top = nodes.last().unwrap_or(self.root);
            match &name[..] {
                b"." | b".." => {
                    if !top.is_dir() {
                        return Err(errno::not_a_directory());
                    }
                    if name == b".." {
                        names.pop();
                        nodes.pop();
                    }
                }
                _ => {
                    let child = lookup(top, &name)?;
                    match child.link_target() {
                        Some(target) => {
                            self.count_link()?;
                            if target.is_empty() {
                                return Err(errno::not_found());
                            }
                            if target[0] == b'/' {
                                names.clear();
                                nodes.clear();
                            }
                            let mut spliced = target.into_vec();
                            spliced.extend_from_slice(&rest[pos..]);
                            rest = spliced;
                            pos = 0;
                        }
                        None => {
                            // glibc checks that a component followed by a
                            // slash is a directory (`dir_check`).
                            if pos < rest.len() && !child.is_dir() {
                                return Err(errno::not_a_directory());
                            }
                            names.push(name);
                            nodes.push(child);
                        }
                    }
                }
            }
        }
        let mut out = Vec::new();
        for name in &names {
            out.push(b'/');
            out.extend_from_slice(name);
        }
        if out.is_empty() {
            out.push(b'/');
        }
        Ok(out)
    }
}
