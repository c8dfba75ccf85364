//! [`MemFs`]: a filesystem in memory, walked by the engine exactly like the
//! disk (`contract.md` §10).
//!
//! The tree is nodes behind per-node locks ([`tree`]); paths resolve as
//! the Linux kernel resolves them, and every error is the errno the kernel
//! would give, so rg's messages come out the same. [`MemFs::load`] copies a
//! directory from the disk, keeping its listing order, its mtimes to the
//! nanosecond and the errors the disk gave while reading it ([`load`]).

mod load;
#[cfg(all(test, unix))]
mod parity;
mod tree;

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dsh_search_base::cancel::CancelToken;
use dsh_search_base::sync::RecoverPoison;

use self::tree::{
    lookup, os_error, Body, DirBody, FileBody, Node, State, Walk, DIR_LEN, NAME_MAX, PATH_MAX,
};
use crate::journal::{Journal, Queue, Record};
use crate::names;
use crate::seam::{
    errno, FileSystem, FileType, FsHints, FsWrite, Listing, Metadata, Timestamp, WriteError,
    WriteGuard, Written,
};

/// How often a FIFO's reader looks at its cancellation token.
const FIFO_TICK: Duration = Duration::from_millis(10);

/// A filesystem in memory: directories, regular files, symlinks, FIFOs and
/// sockets, shared between threads and changeable between (and during)
/// calls.
///
/// The native engine walks it exactly as it walks the disk, and it answers
/// as the Linux kernel would for the same tree, errno for errno:
///
/// - **Order.** A directory lists its entries in creation order; a tree
///   from [`MemFs::load`] keeps the disk's `readdir` order. A listing gives
///   the kinds as `getdents64` gives them (a symlink is listed as one).
/// - **Paths** resolve like the kernel's: `.` is skipped, `..` goes to the
///   parent of the directory reached so far (after symlinks), symlinks are
///   followed in the middle of a path and at its end where the operation
///   follows them, more than 40 of them fail with `ELOOP`, a trailing slash
///   requires a directory. [`FileSystem::canonicalize`] is `realpath`.
///   Paths are Unix paths on every platform (`/` separates components);
///   a relative path resolves from `/`, the filesystem's only working
///   directory.
/// - **Nodes** have an inode number unique in the filesystem, one device
///   number, mtimes to the nanosecond and permission bits. The bits are
///   data, never checked: what the filesystem refuses is what
///   [`MemFs::load`] was refused (or what [`MemFs::set_open_error`] and
///   [`MemFs::set_lookup_error`] say). The status-change time (`ctime`)
///   moves forward on every change, so [`Metadata::version`] does too.
/// - **Reads** see a snapshot: an open file shares the bytes it was opened
///   with, and a write swaps in new bytes without disturbing it. A
///   directory opens and fails on the first read (`EISDIR`); a socket
///   fails to open (`ENXIO`). A FIFO has no writer: [`FileSystem::open`]
///   gives a reader that waits until its token is cancelled, and
///   [`FileSystem::open_at`], which has no token to end that wait with,
///   fails with `EAGAIN` instead of blocking like the disk.
/// - **Handles** ([`MemDir`]) hold their directory: one whose directory is
///   removed lists nothing and finds nothing, as a descriptor of a
///   removed directory does.
///
/// The builder methods ([`MemFs::write_file`], [`MemFs::symlink`], …)
/// take `&self`: the tree can change while searches run.
///
/// # Example
///
/// ```
/// use std::io::Read;
/// use std::path::Path;
/// use dsh_search_fs::{FileSystem, FileType, Listing, MemFs};
/// use dsh_search_base::CancelToken;
///
/// let fs = MemFs::new();
/// fs.write_file("/w/src/main.rs", "fn main() {}\n")?;
/// fs.symlink("src/main.rs", "/w/link")?;
/// fs.mkfifo("/w/pipe")?;
///
/// let dir = fs.open_dir(Path::new("/w"))?;
/// let mut listing = Listing::new();
/// fs.list(&dir, &mut listing);
/// let kinds: Vec<(&[u8], FileType)> = listing.iter().collect();
/// assert_eq!(
///     kinds,
///     [(&b"src"[..], FileType::Dir), (b"link", FileType::Symlink), (b"pipe", FileType::Fifo)]
/// );
///
/// let mut text = String::new();
/// fs.open(Path::new("/w/link"), &CancelToken::new())?.read_to_string(&mut text)?;
/// assert_eq!(text, "fn main() {}\n");
/// let missing = fs.metadata(Path::new("/w/src/lib.rs")).unwrap_err();
/// assert_eq!(missing.kind(), std::io::ErrorKind::NotFound);
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct MemFs {
    root: Arc<Node>,
    next_ino: AtomicU64,
    /// The last status-change time given out, in nanoseconds.
    clock: AtomicU64,
    /// Held by every change: a guarded write checks and publishes under it.
    changes: Mutex<()>,
    git_excludes: Option<(PathBuf, Vec<u8>)>,
    /// What each change touched, for the live index's queues (nothing is
    /// recorded while none listens).
    journal: Journal,
}

/// An open directory of a [`MemFs`].
#[derive(Clone)]
pub struct MemDir(Arc<Node>);

impl fmt::Debug for MemDir {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemDir").field("ino", &self.0.ino).finish()
    }
}

/// An open file of a [`MemFs`].
pub struct MemFile(Reader);

enum Reader {
    /// A regular file's bytes as they were when it was opened.
    Bytes {
        data: Arc<[u8]>,
        pos: usize,
        nul_free: bool,
    },
    /// A directory: reading fails.
    Dir,
    /// A FIFO without a writer: reading waits for the token.
    Fifo(CancelToken),
}

impl fmt::Debug for MemFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Reader::Bytes { data, pos, .. } => f
                .debug_struct("MemFile")
                .field("len", &data.len())
                .field("pos", pos)
                .finish(),
            Reader::Dir => f.write_str("MemFile(directory)"),
            Reader::Fifo(_) => f.write_str("MemFile(fifo)"),
        }
    }
}

impl Read for MemFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            Reader::Bytes { data, pos, .. } => {
                let rest = &data[*pos..];
                let n = rest.len().min(buf.len());
                buf[..n].copy_from_slice(&rest[..n]);
                *pos += n;
                Ok(n)
            }
            Reader::Dir => Err(errno::is_a_directory()),
            Reader::Fifo(cancel) => loop {
                if cancel.is_cancelled() {
                    return Err(dsh_search_base::cancel::cancelled_error());
                }
                std::thread::sleep(FIFO_TICK);
            },
        }
    }
}

impl Default for MemFs {
    fn default() -> MemFs {
        MemFs::new()
    }
}

impl fmt::Debug for MemFs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemFs").finish_non_exhaustive()
    }
}

/// The current time as a [`Timestamp`].
fn now() -> Timestamp {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or((0, 0), |d| (d.as_secs() as i64, d.subsec_nanos()))
}

fn timestamp_ns(t: Timestamp) -> u64 {
    u64::try_from(t.0).map_or(0, |s| s * 1_000_000_000 + u64::from(t.1))
}

/// A path argument's bytes, refused as std refuses it before any system
/// call (a NUL) or as the kernel does (`ENAMETOOLONG`).
fn path_arg(path: &Path) -> io::Result<&[u8]> {
    let b = names::path_bytes(path);
    if b.contains(&0) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "file name contained an unexpected NUL byte",
        ));
    }
    if b.len() >= PATH_MAX {
        return Err(errno::name_too_long());
    }
    Ok(b)
}

/// A name passed to an `*_at` method: a NUL is `EINVAL`, as rustix gives
/// it to the local disk's descriptor path.
fn name_arg(name: &OsStr) -> io::Result<&[u8]> {
    let b = names::os_bytes(name);
    if b.contains(&0) {
        return Err(errno::invalid());
    }
    Ok(b)
}

/// What the local disk's `read_control` says of anything but a regular
/// file it could open.
fn not_regular() -> io::Error {
    io::Error::other("not a regular file")
}

/// Whether `e` is `ENOENT`.
fn is_not_found(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::NotFound
}

impl MemFs {
    /// An empty filesystem: only `/` (mode 0755, modified now).
    pub fn new() -> MemFs {
        let t = now();
        MemFs {
            root: Node::root(1, 0o755, t),
            next_ino: AtomicU64::new(2),
            clock: AtomicU64::new(timestamp_ns(t)),
            changes: Mutex::new(()),
            git_excludes: None,
            journal: Journal::default(),
        }
    }

    /// Give the filesystem git's global excludes file: what
    /// [`FileSystem::git_global_excludes`] returns, `path` resolved against
    /// the workdir when relative. The file itself need not exist in the
    /// tree (rg reads it from the host's home directory, outside the
    /// workspace).
    ///
    /// By default, there is none.
    pub fn with_git_global_excludes(
        mut self,
        path: impl Into<PathBuf>,
        content: impl Into<Vec<u8>>,
    ) -> MemFs {
        self.git_excludes = Some((path.into(), content.into()));
        self
    }

    /// Create the directory `path` and its missing parents (mode 0755), as
    /// [`std::fs::create_dir_all`] does; an existing directory (or symlink
    /// to one) is fine.
    pub fn create_dir_all(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let path = path.as_ref();
        path_arg(path)?;
        let _changing = self.changing();
        self.mkdir_all(path)
    }

    /// Create or replace the regular file `path` with `content`, as
    /// [`std::fs::write`] does, but atomically: a reader sees the old bytes
    /// or the new ones. Missing parent directories are created (mode 0755).
    /// A new file gets mode 0644; a replaced one keeps its mode and its
    /// inode. A symlink is written through (a dangling one creates its
    /// target). A directory is `EISDIR`, a socket `ENXIO`, a FIFO `EAGAIN`
    /// (it has no reader to take the bytes).
    pub fn write_file(&self, path: impl AsRef<Path>, content: impl AsRef<[u8]>) -> io::Result<()> {
        let path = path.as_ref();
        let data: Arc<[u8]> = Arc::from(content.as_ref());
        let p = path_arg(path)?;
        let _changing = self.changing();
        self.make_parents(path)?;
        self.put_file(p, data, 0o644).map(drop)
    }

    /// Create the symlink `link` pointing to `target` (stored as given;
    /// it may dangle), as [`std::os::unix::fs::symlink`] does. Missing
    /// parent directories of `link` are created (mode 0755).
    pub fn symlink(&self, target: impl AsRef<Path>, link: impl AsRef<Path>) -> io::Result<()> {
        let target = path_arg(target.as_ref())?;
        if target.is_empty() {
            return Err(errno::not_found());
        }
        let link = link.as_ref();
        let body = Body::Symlink(target.into());
        self.make_special(link, FileType::Symlink, 0o777, body)
    }

    /// Create a FIFO at `path` (mode 0644), as `mkfifo` does. Missing
    /// parent directories are created (mode 0755).
    pub fn mkfifo(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.make_special(path.as_ref(), FileType::Fifo, 0o644, Body::Special)
    }

    /// Create a Unix domain socket at `path` (mode 0755, as `bind` leaves
    /// it under the usual umask). Missing parent directories are created
    /// (mode 0755).
    pub fn mksocket(&self, path: impl AsRef<Path>) -> io::Result<()> {
        self.make_special(path.as_ref(), FileType::Socket, 0o755, Body::Special)
    }

    /// Set the modification time of `path` (symlinks followed, as
    /// `utimensat` does).
    pub fn set_mtime(&self, path: impl AsRef<Path>, mtime: Timestamp) -> io::Result<()> {
        self.change(path.as_ref(), |st| {
            st.mtime = mtime;
            Ok(())
        })
    }

    /// Set the permission bits of `path` (`mode & 0o7777`; symlinks
    /// followed, as `chmod` does). They are data: nothing checks them.
    pub fn set_mode(&self, path: impl AsRef<Path>, mode: u32) -> io::Result<()> {
        self.change(path.as_ref(), |st| {
            st.mode = mode & 0o7777;
            Ok(())
        })
    }

    /// Make opening `path` fail with the OS error number `error` (`None`:
    /// succeed again): for a regular file, [`FileSystem::open`], `open_at`
    /// and `read_control`; for a directory, `open_dir` and `open_dir_at`
    /// too (a listing through a handle opened before still works, as on
    /// disk).
    /// This is what [`MemFs::load`] records for a file or directory it
    /// could not open, such as one without read permission.
    pub fn set_open_error(&self, path: impl AsRef<Path>, error: Option<i32>) -> io::Result<()> {
        self.change(path.as_ref(), |st| match &mut st.body {
            Body::File(f) => {
                f.open_err = error;
                if error.is_none() {
                    f.len = f.data.len() as u64;
                }
                Ok(())
            }
            Body::Dir(d) => {
                d.open_err = error;
                Ok(())
            }
            _ => Err(errno::invalid()),
        })
    }

    /// Make every lookup in the directory `dir` fail with the OS error
    /// number `error` (`None`: succeed again): a stat, open or walk through any
    /// name in it, `.` and `..` included, while listing it still works.
    /// This is what [`MemFs::load`] records for a directory without search
    /// (`x`) permission.
    pub fn set_lookup_error(&self, dir: impl AsRef<Path>, error: Option<i32>) -> io::Result<()> {
        self.change(dir.as_ref(), |st| match &mut st.body {
            Body::Dir(d) => {
                d.lookup_err = error;
                Ok(())
            }
            _ => Err(errno::not_a_directory()),
        })
    }

    /// Remove `path` (a final symlink is removed, not followed) and, for a
    /// directory, everything below it, as `rm -r` does. Handles of removed
    /// directories stay valid and list nothing.
    pub fn remove(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let p = path_arg(path.as_ref())?;
        let _changing = self.changing();
        let (dir, name, _) = Walk::new(&self.root).parent(&self.root, p)?;
        match name {
            b"" => return Err(errno::busy()),
            b"." | b".." => return Err(errno::invalid()),
            _ => {}
        }
        let node = {
            let mut st = dir.write();
            let Body::Dir(d) = &mut st.body else {
                return Err(errno::not_a_directory());
            };
            if let Some(e) = d.lookup_err {
                return Err(os_error(e));
            }
            let node = d.remove(name).ok_or_else(errno::not_found)?;
            st.mtime = now();
            st.ctime = self.tick();
            node
        };
        self.journal.record(Record::Entries {
            dir: dir.ino,
            name: name.into(),
        });
        // Empty the removed directories, so that a handle held on one
        // lists nothing.
        let mut dirs = vec![node];
        while let Some(node) = dirs.pop() {
            if let Body::Dir(d) = &mut node.write().body {
                dirs.extend(d.take_all());
            }
        }
        Ok(())
    }

    /// The bytes of the regular file `path` (symlinks followed), shared,
    /// not copied.
    pub fn read_file(&self, path: impl AsRef<Path>) -> io::Result<Arc<[u8]>> {
        let node = self.node(path_arg(path.as_ref())?, true)?;
        let st = node.read();
        match &st.body {
            Body::File(f) => match f.open_err {
                Some(e) => Err(os_error(e)),
                None => Ok(Arc::clone(&f.data)),
            },
            Body::Dir(_) => Err(errno::is_a_directory()),
            _ if node.kind == FileType::Fifo => Err(errno::would_block()),
            _ => Err(errno::no_such_device()),
        }
    }

    /// A queue of every change made from now on, for the live index
    /// (`docs/index.md`): each names the directory (by inode) and the
    /// entry it touched.
    pub fn subscribe(&self) -> Arc<Queue> {
        self.journal.subscribe()
    }

    /// The journal, for the index's tests.
    #[doc(hidden)]
    pub fn journal(&self) -> &Journal {
        &self.journal
    }

    fn changing(&self) -> MutexGuard<'_, ()> {
        self.changes.lock().recover_poison()
    }

    fn ino(&self) -> u64 {
        self.next_ino.fetch_add(1, Ordering::Relaxed)
    }

    /// A new status-change time: now, or just after the last one given
    /// out, whichever is later, so that every change moves it.
    fn tick(&self) -> Timestamp {
        let now = timestamp_ns(now());
        let prev = self
            .clock
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                Some(now.max(last + 1))
            })
            .unwrap_or_else(|last| last);
        let t = now.max(prev + 1);
        ((t / 1_000_000_000) as i64, (t % 1_000_000_000) as u32)
    }

    /// The node at `path`, a final symlink followed or not.
    fn node(&self, path: &[u8], follow: bool) -> io::Result<Arc<Node>> {
        Walk::new(&self.root).resolve(&self.root, path, follow)
    }

    /// Apply `f` to the state of the node at `path` (symlinks followed),
    /// then move its ctime.
    fn change(&self, path: &Path, f: impl FnOnce(&mut State) -> io::Result<()>) -> io::Result<()> {
        let p = path_arg(path)?;
        let _changing = self.changing();
        let node = self.node(p, true)?;
        {
            let mut st = node.write();
            f(&mut st)?;
            st.ctime = self.tick();
        }
        if self.journal.listened() {
            self.record_node_at(p);
        }
        Ok(())
    }

    /// Record that the node `path` resolves to (symlinks followed) changed:
    /// by the directory and name it is reached through once every link is
    /// resolved (`realpath`), as inotify reports it to its directory.
    /// What cannot be placed (a lookup error set above the node) is said
    /// so, and the index rebuilds.
    fn record_node_at(&self, path: &[u8]) {
        let Ok(real) = Walk::new(&self.root).canonical(path) else {
            return self.journal.record(Record::Unplaced);
        };
        let Some(i) = real.iter().rposition(|&b| b == b'/') else {
            return self.journal.record(Record::Unplaced);
        };
        let (parent, name) = (&real[..i.max(1)], &real[i + 1..]);
        if name.is_empty() {
            // The root of the whole tree: no directory lists it.
            return;
        }
        match self.node(parent, true) {
            Ok(dir) => self.journal.record(Record::Node {
                dir: dir.ino,
                name: name.into(),
            }),
            Err(_) => self.journal.record(Record::Unplaced),
        }
    }

    /// A new node of `kind`, modified now.
    fn new_node(&self, kind: FileType, mode: u32, body: Body) -> Arc<Node> {
        let t = now();
        let ctime = self.tick();
        Node::new(
            self.ino(),
            kind,
            State {
                mtime: t,
                ctime,
                mode,
                body,
            },
        )
    }

    /// Link `node` into `dir` as `name`, which must be new; the directory's
    /// times move, as a `mkdir` or `creat` moves them.
    fn link(
        &self,
        dir: &Arc<Node>,
        name: &[u8],
        make: impl FnOnce() -> Arc<Node>,
    ) -> io::Result<Arc<Node>> {
        if name.is_empty() || name == b"." || name == b".." {
            return Err(errno::exists());
        }
        if name.len() > NAME_MAX {
            return Err(errno::name_too_long());
        }
        let mut st = dir.write();
        let Body::Dir(d) = &mut st.body else {
            return Err(errno::not_a_directory());
        };
        if let Some(e) = d.lookup_err {
            return Err(os_error(e));
        }
        if d.get(name).is_some() {
            return Err(errno::exists());
        }
        let node = make();
        d.insert(name, Arc::clone(&node));
        st.mtime = now();
        st.ctime = self.tick();
        drop(st);
        self.journal.record(Record::Entries {
            dir: dir.ino,
            name: name.into(),
        });
        Ok(node)
    }

    /// `mkdir(path, 0755)`.
    fn mkdir(&self, path: &Path) -> io::Result<()> {
        let p = path_arg(path)?;
        let (dir, name, _) = Walk::new(&self.root).parent(&self.root, p)?;
        let parent = Arc::downgrade(&dir);
        self.link(&dir, name, || {
            let body = Body::Dir(Box::new(DirBody::new(parent, DIR_LEN)));
            self.new_node(FileType::Dir, 0o755, body)
        })
        .map(drop)
    }

    /// `std::fs::create_dir_all`, step for step, so that its errors are
    /// std's (a dangling symlink in the way is `EEXIST`).
    fn mkdir_all(&self, path: &Path) -> io::Result<()> {
        if path.as_os_str().is_empty() {
            return Ok(());
        }
        let is_dir = |p: &Path| {
            path_arg(p)
                .and_then(|b| self.node(b, true))
                .is_ok_and(|n| n.is_dir())
        };
        match self.mkdir(path) {
            Ok(()) => return Ok(()),
            Err(e) if is_not_found(&e) => {}
            Err(_) if is_dir(path) => return Ok(()),
            Err(e) => return Err(e),
        }
        match path.parent() {
            Some(parent) => self.mkdir_all(parent)?,
            None => return Err(io::Error::other("failed to create whole tree")),
        }
        match self.mkdir(path) {
            Ok(()) => Ok(()),
            Err(_) if is_dir(path) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Create the missing parents of `path`, as the disk's write does
    /// (`create_dir_all` of the lexical parent).
    fn make_parents(&self, path: &Path) -> io::Result<()> {
        match path.parent() {
            Some(parent) => self.mkdir_all(parent),
            None => Ok(()),
        }
    }

    /// Create a symlink, FIFO or socket at `path`, its parents first.
    fn make_special(&self, path: &Path, kind: FileType, mode: u32, body: Body) -> io::Result<()> {
        let p = path_arg(path)?;
        let _changing = self.changing();
        self.make_parents(path)?;
        let (dir, name, slash) = Walk::new(&self.root).parent(&self.root, p)?;
        if slash {
            // The kernel refuses to create a non-directory at `name/`.
            return match lookup(&dir, name) {
                Ok(_) => Err(errno::exists()),
                Err(e) => Err(e),
            };
        }
        self.link(&dir, name, || self.new_node(kind, mode, body))
            .map(drop)
    }

    /// `open(path, O_WRONLY | O_CREAT | O_TRUNC, mode)` and a write of
    /// `data`, in one step: a final symlink followed (a dangling one
    /// creates its target), a new file linked with `mode`, an existing one
    /// given the bytes. The file's node, and whether it existed.
    fn put_file(&self, path: &[u8], data: Arc<[u8]>, mode: u32) -> io::Result<(Arc<Node>, bool)> {
        let mut walk = Walk::new(&self.root);
        let mut start = Arc::clone(&self.root);
        let mut path: Box<[u8]> = path.into();
        loop {
            let (dir, name, slash) = walk.parent(&start, &path)?;
            if name.is_empty() || name == b"." || name == b".." {
                return Err(errno::is_a_directory());
            }
            match lookup(&dir, name) {
                Ok(node) => {
                    if let Some(target) = node.link_target() {
                        walk.count_link()?;
                        path = target;
                        start = dir;
                        continue;
                    }
                    if slash && !node.is_dir() {
                        return Err(errno::not_a_directory());
                    }
                    self.replace(&node, data)?;
                    self.journal.record(Record::Node {
                        dir: dir.ino,
                        name: name.into(),
                    });
                    return Ok((node, true));
                }
                Err(e) if is_not_found(&e) => {
                    if slash {
                        return Err(errno::is_a_directory());
                    }
                    let node = self.link(&dir, name, || {
                        self.new_node(FileType::File, mode, Body::File(FileBody::new(data)))
                    })?;
                    return Ok((node, false));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Give the existing `node` the bytes `data`.
    fn replace(&self, node: &Node, data: Arc<[u8]>) -> io::Result<()> {
        let mut st = node.write();
        match &mut st.body {
            Body::File(f) => *f = FileBody::new(data),
            Body::Dir(_) => return Err(errno::is_a_directory()),
            _ if node.kind == FileType::Fifo => return Err(errno::would_block()),
            _ => return Err(errno::no_such_device()),
        }
        st.mtime = now();
        st.ctime = self.tick();
        Ok(())
    }

    /// A handle of the directory `node`.
    fn dir_handle(node: Arc<Node>) -> io::Result<MemDir> {
        if !node.is_dir() {
            return Err(errno::not_a_directory());
        }
        if let Body::Dir(d) = &node.read().body {
            if let Some(e) = d.open_err {
                return Err(os_error(e));
            }
        }
        Ok(MemDir(node))
    }

    /// Open `node` (symlinks already followed) for reading; `cancel` ends
    /// a FIFO's wait, and without one a FIFO is `EAGAIN`.
    fn open_node(node: &Node, cancel: Option<&CancelToken>) -> io::Result<MemFile> {
        let st = node.read();
        let reader = match &st.body {
            Body::File(f) => match f.open_err {
                Some(e) => return Err(os_error(e)),
                None => Reader::Bytes {
                    data: Arc::clone(&f.data),
                    pos: 0,
                    nul_free: f.nul_free,
                },
            },
            Body::Dir(d) => match d.open_err {
                Some(e) => return Err(os_error(e)),
                None => Reader::Dir,
            },
            _ => match (node.kind, cancel) {
                (FileType::Fifo, Some(cancel)) => Reader::Fifo(cancel.clone()),
                (FileType::Fifo, None) => return Err(errno::would_block()),
                _ => return Err(errno::no_such_device()),
            },
        };
        Ok(MemFile(reader))
    }
}

impl FileSystem for MemFs {
    type Dir = MemDir;
    type File = MemFile;

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let p = path_arg(path)?;
        let real = Walk::new(&self.root).canonical(p)?;
        Ok(names::path_buf(real))
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.node(path_arg(path)?, true)?.metadata()
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.node(path_arg(path)?, false)?.metadata()
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let node = self.node(path_arg(path)?, false)?;
        match node.link_target() {
            Some(target) => Ok(names::path_buf(target.into_vec())),
            None => Err(errno::invalid()),
        }
    }

    fn open_dir(&self, path: &Path) -> io::Result<MemDir> {
        MemFs::dir_handle(self.node(path_arg(path)?, true)?)
    }

    fn open_dir_at(
        &self,
        parent: &MemDir,
        _parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<MemDir> {
        let node = Walk::new(&self.root).resolve(&parent.0, name_arg(name)?, true)?;
        MemFs::dir_handle(node)
    }

    fn list(&self, dir: &MemDir, listing: &mut Listing) {
        listing.clear();
        let st = dir.0.read();
        let Body::Dir(d) = &st.body else {
            return listing.fail(errno::not_a_directory());
        };
        for (name, node) in d.iter() {
            // A regular file's metadata comes with it: glob's mtime sort
            // then needs no lookup of each name.
            match node.kind {
                FileType::File => match node.metadata() {
                    Ok(m) => listing.push_with_metadata(name, node.kind, m),
                    Err(_) => listing.push(name, node.kind),
                },
                kind => listing.push(name, kind),
            }
        }
        if let Some(e) = d.list_err {
            listing.fail(os_error(e));
        }
    }

    fn metadata_at(
        &self,
        dir: &MemDir,
        _dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        Walk::new(&self.root)
            .resolve(&dir.0, name_arg(name)?, follow)?
            .metadata()
    }

    fn open_at(&self, dir: &MemDir, _dir_path: &Path, name: &OsStr) -> io::Result<MemFile> {
        let node = Walk::new(&self.root).resolve(&dir.0, name_arg(name)?, true)?;
        MemFs::open_node(&node, None)
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<MemFile> {
        let node = self.node(path_arg(path)?, true)?;
        MemFs::open_node(&node, Some(cancel))
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        let node = self.node(path_arg(path)?, true)?;
        let st = node.read();
        match (&st.body, node.kind) {
            (Body::File(f), _) => match f.open_err {
                Some(e) => Err(os_error(e)),
                None => Ok(f.data.to_vec()),
            },
            (Body::Dir(d), _) => match d.open_err {
                Some(e) => Err(os_error(e)),
                None => Err(not_regular()),
            },
            // The disk's non-blocking open of a socket fails; of a FIFO or
            // a device it succeeds and the type check refuses it.
            (_, FileType::Socket) => Err(errno::no_such_device()),
            _ => Err(not_regular()),
        }
    }

    fn git_global_excludes(&self, workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        let (path, content) = self.git_excludes.as_ref()?;
        Some((workdir.join(path), content.clone()))
    }
}

impl FsHints for MemFs {
    fn contents<'f>(&self, file: &'f MemFile) -> Option<&'f [u8]> {
        match &file.0 {
            Reader::Bytes { data, pos: 0, .. } => Some(data),
            _ => None,
        }
    }

    fn known_nul_free(&self, file: &MemFile) -> bool {
        matches!(&file.0, Reader::Bytes { nul_free: true, .. })
    }
}

impl FsWrite for MemFs {
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let io_err = |e: io::Error| WriteError::Io(path.to_path_buf(), e);
        let p = path_arg(path).map_err(io_err)?;
        let data: Arc<[u8]> = Arc::from(content);
        let _changing = self.changing();
        let old = match self.node(p, true) {
            Ok(node) => Some(node.metadata().map_err(io_err)?),
            Err(e) if is_not_found(&e) => None,
            Err(e) => return Err(io_err(e)),
        };
        // Never through a dangling symlink, nor over it, whatever the guard:
        // the local disk's rule (`FsWrite::write`).
        if old.is_none() && self.node(p, false).is_ok() {
            return Err(WriteError::NotRegular(FileType::Symlink));
        }
        guard.admits(old.as_ref())?;
        if cancel.is_cancelled() {
            return Err(WriteError::Cancelled);
        }
        if old.is_none() {
            self.make_parents(path).map_err(io_err)?;
        }
        let (node, replaced) = self.put_file(p, data, 0o600).map_err(io_err)?;
        Ok(Written {
            replaced,
            metadata: node.metadata().map_err(io_err)?,
        })
    }
}

#[cfg(test)]
mod tests;
