//! [`MemFs::load`]: a directory tree copied from the disk, with what the
//! disk refused.
//!
//! The tree is read through the local disk's own seam ([`LocalFs`]):
//! each directory is listed in its `readdir` order (which becomes the
//! listing order) and each entry stat'ed without following links, relative
//! to its directory's descriptor where the disk has them, so a path past
//! `PATH_MAX` is copied too. A regular file is read whole, through an
//! `O_NONBLOCK` open that never blocks on a FIFO swapped in since the stat,
//! and a FIFO is never opened. Whatever failed keeps its errno where the
//! kernel would give it to rg later: a directory that cannot be listed
//! fails `open_dir`, one that cannot be searched fails every lookup in it,
//! a file that cannot be opened fails `open`, an entry that cannot be
//! stat'ed fails every lookup of it but is still listed with its `d_type`.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use super::tree::{lookup, Body, DirBody, Errno, FileBody, Node, State};
use super::MemFs;
use crate::local::{from_std, LocalDir, LocalFs};
use crate::names;
use crate::seam::{errno, FileSystem, FileType, Listing, Metadata};

/// The errno stored for an error that carries none.
#[cfg(unix)]
const EIO: Errno = 5;
#[cfg(not(unix))]
const EIO: Errno = 1117; // ERROR_IO_DEVICE

fn errno_of(e: &io::Error) -> Errno {
    e.raw_os_error().unwrap_or(EIO)
}

impl MemFs {
    /// A copy of the directory tree at `root` on the local disk, at the
    /// same absolute path.
    ///
    /// Every directory keeps its `readdir` order, every entry its mtime
    /// (to the nanosecond), permission bits and size, a symlink its target
    /// as stored, a FIFO or socket its kind (a FIFO is never opened).
    /// What could not be read keeps its error, so a copy loaded as some
    /// user answers as the disk answers that user: a directory that could
    /// not be listed fails to open (its entries are unknown), one without
    /// search permission fails every lookup in it (its entries are listed
    /// with their `d_type` but cannot be stat'ed or opened), a file that
    /// could not be opened fails to open, an entry whose `lstat` failed
    /// fails every lookup of it.
    ///
    /// The ancestors of `root` are created as directories with their own
    /// metadata from the disk, holding only the path to `root`; a symlink
    /// on that path is copied as a symlink and followed, so `root` may be
    /// reached through one. Nothing else outside `root` is copied. A
    /// relative `root` is taken from the current directory.
    ///
    /// # Errors
    ///
    /// The error of resolving `root` on the disk (`ENOENT`, `EACCES`, …),
    /// or `ENOTDIR` when it is not a directory. A tree whose regular files
    /// would not fit in memory is refused before it is read
    /// ([`io::ErrorKind::OutOfMemory`], naming the first file that does
    /// not fit): their sizes together must stay within the memory the
    /// system has available (`MemAvailable` in `/proc/meminfo` on Linux),
    /// and each file's buffer must be allocated (a sparse file of 1 TiB
    /// is refused, not read).
    ///
    /// # Platform behavior
    ///
    /// The copy's paths are Unix paths; on Windows a drive prefix is
    /// dropped.
    pub fn load(root: impl AsRef<Path>) -> io::Result<MemFs> {
        let root = std::path::absolute(root.as_ref())?;
        let fs = MemFs::new();
        let disk_root = std::fs::symlink_metadata("/")?;
        fs.copy_metadata(&fs.root, &from_std(&disk_root));
        let (top, real) = fs.mirror_path(&root)?;
        if !std::fs::metadata(&real)?.is_dir() {
            return Err(errno::not_a_directory());
        }
        let mut budget = Budget::available();
        fs.load_parent_controls(&real, &mut budget)?;
        fs.load_dir(top, real, &mut budget)?;
        Ok(fs)
    }

    /// Copy into each ancestor of `real` (mirrored by [`Self::mirror_path`])
    /// what rg reads there when it searches below it: its ignore files
    /// (`.gitignore`, `.ignore`, `.rgignore`) and its `.git` (a file, or a
    /// directory with its `info/exclude`), as `ignore`'s
    /// `Ignore::add_parents` reads every ancestor's (`rg-semantics.md` §3).
    /// Without them a workspace loaded from a repository's subdirectory
    /// would search what the repository's ignore files exclude.
    fn load_parent_controls(&self, real: &Path, budget: &mut Budget) -> io::Result<()> {
        for ancestor in real.ancestors().skip(1) {
            let mut dir = Arc::clone(&self.root);
            for comp in ancestor.components() {
                if let Component::Normal(name) = comp {
                    dir = lookup(&dir, names::os_bytes(name))?;
                }
            }
            for name in [".gitignore", ".ignore", ".rgignore", ".git"] {
                let path = ancestor.join(name);
                let node = self.load_control(&dir, &path, name.as_bytes(), budget)?;
                if name == ".git" && node.as_ref().is_some_and(|n| n.is_dir()) {
                    let git = node.unwrap();
                    let info = path.join("info");
                    if let Some(info_node) = self.load_control(&git, &info, b"info", budget)? {
                        if info_node.is_dir() {
                            let exclude = info.join("exclude");
                            self.load_control(&info_node, &exclude, b"exclude", budget)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The regular file or directory (empty but for what is added later)
    /// at `path` on the disk, as the entry `name` of `dir`; `None` when
    /// there is none, or it is something else (a symlink is not followed:
    /// its target is outside the copy).
    fn load_control(
        &self,
        dir: &Arc<Node>,
        path: &Path,
        name: &[u8],
        budget: &mut Budget,
    ) -> io::Result<Option<Arc<Node>>> {
        let Ok(m) = std::fs::symlink_metadata(path) else {
            return Ok(None);
        };
        let meta = from_std(&m);
        let body = match meta.kind {
            FileType::File => Body::File(read_disk_file(path, meta.len, budget, || {
                open_nonblocking(path)
            })?),
            FileType::Dir => Body::Dir(Box::new(DirBody::new(Arc::downgrade(dir), meta.len))),
            _ => return Ok(None),
        };
        let kind = meta.kind;
        self.adopt(dir, name, || {
            Node::new(self.ino(), kind, self.state_of(&meta, body))
        })
        .map(Some)
    }

    /// The node of the directory `lexical` resolves to on the disk and its
    /// real path, with the directories and symlinks along the way copied
    /// (directories empty but for the path).
    fn mirror_path(&self, lexical: &Path) -> io::Result<(Arc<Node>, PathBuf)> {
        let mut real = PathBuf::from("/");
        let mut node = Arc::clone(&self.root);
        for comp in lexical.components() {
            match comp {
                Component::Prefix(_) | Component::RootDir | Component::CurDir => {}
                Component::ParentDir => {
                    real.pop();
                    node = lookup(&node, b"..")?;
                }
                Component::Normal(name) => {
                    let path = real.join(name);
                    let m = std::fs::symlink_metadata(&path)?;
                    let meta = from_std(&m);
                    let name = names::os_bytes(name);
                    if m.file_type().is_symlink() {
                        let target = std::fs::read_link(&path)?;
                        let body = Body::Symlink(names::path_bytes(&target).into());
                        self.adopt(&node, name, || {
                            Node::new(self.ino(), FileType::Symlink, self.state_of(&meta, body))
                        })?;
                        // A real path: no symlink on it, one level deep.
                        (node, real) = self.mirror_path(&std::fs::canonicalize(&path)?)?;
                    } else if m.is_dir() {
                        let parent = Arc::downgrade(&node);
                        node = self.adopt(&node, name, || {
                            let body = Body::Dir(Box::new(DirBody::new(parent, meta.len)));
                            Node::new(self.ino(), FileType::Dir, self.state_of(&meta, body))
                        })?;
                        real = path;
                    } else {
                        return Err(errno::not_a_directory());
                    }
                }
            }
        }
        Ok((node, real))
    }

    /// The entry `name` of `dir`, made by `make` if missing, without
    /// touching the directory's times.
    fn adopt(
        &self,
        dir: &Arc<Node>,
        name: &[u8],
        make: impl FnOnce() -> Arc<Node>,
    ) -> io::Result<Arc<Node>> {
        let mut st = dir.write();
        let Body::Dir(d) = &mut st.body else {
            return Err(errno::not_a_directory());
        };
        if let Some(node) = d.get(name) {
            return Ok(Arc::clone(node));
        }
        let node = make();
        d.insert(name, Arc::clone(&node));
        Ok(node)
    }

    /// A node's state from the disk's metadata.
    fn state_of(&self, m: &Metadata, body: Body) -> State {
        let mtime = m.mtime.unwrap_or((0, 0));
        let ctime = m.ctime.unwrap_or(mtime);
        // Every later change must move past the loaded times.
        self.clock.fetch_max(
            super::timestamp_ns(ctime),
            std::sync::atomic::Ordering::AcqRel,
        );
        State {
            mtime,
            ctime,
            mode: m.mode,
            body,
        }
    }

    /// Give the directory `node` the disk's times, mode and size.
    fn copy_metadata(&self, node: &Node, m: &Metadata) {
        let fresh = self.state_of(m, Body::Special);
        let mut st = node.write();
        st.mtime = fresh.mtime;
        st.ctime = fresh.ctime;
        st.mode = fresh.mode;
        if let Body::Dir(d) = &mut st.body {
            d.len = m.len;
        }
    }

    /// Copy the disk directory `path` into `top`, replacing what `top`
    /// held (the path mirrored to it), and everything below it.
    ///
    /// Read through the local disk's seam, relative to each directory's
    /// descriptor where it has them (Linux): a directory whose absolute
    /// path is past `PATH_MAX` is copied like any other, and the engine's
    /// own rule decides where rg's walk would fail (`rg-semantics.md`,
    /// PATH_MAX), as it does on the disk. A directory is opened when its
    /// turn comes, relative to its parent, so the descriptors held are
    /// those of the directories with subdirectories still to copy.
    fn load_dir(&self, top: Arc<Node>, path: PathBuf, budget: &mut Budget) -> io::Result<()> {
        if let Body::Dir(d) = &mut top.write().body {
            d.take_all();
        }
        let disk = LocalFs::new();
        let mut stack = vec![Pending {
            parent: None,
            path,
            node: top,
        }];
        let mut listing = Listing::new();
        while let Some(Pending { parent, path, node }) = stack.pop() {
            let at = match (&parent, path.parent(), path.file_name()) {
                (Some(parent), Some(parent_path), Some(name)) => Some((parent, parent_path, name)),
                _ => None,
            };
            let opened = match at {
                Some((parent, parent_path, name)) => disk.open_dir_at(parent, parent_path, name),
                None => disk.open_dir(&path),
            };
            let lookup_err = search_error(&disk, at, &path);
            drop(parent);
            let mut entries = Vec::new();
            let (open_err, list_err) = match opened {
                Err(e) => (Some(errno_of(&e)), None),
                Ok(dir) => {
                    let dir = Arc::new(dir);
                    disk.list(&dir, &mut listing);
                    for (name, listed) in listing.iter() {
                        let name = names::os_str(name);
                        let child =
                            self.load_entry(&disk, &dir, &path, &node, &name, listed, budget)?;
                        if child.is_dir() {
                            stack.push(Pending {
                                parent: Some(Arc::clone(&dir)),
                                path: path.join(&name),
                                node: Arc::clone(&child),
                            });
                        }
                        entries.push((Box::<[u8]>::from(names::os_bytes(&name)), child));
                    }
                    let list_err = listing.take_error().map(|e| errno_of(&e));
                    (None, list_err)
                }
            };
            if let Body::Dir(d) = &mut node.write().body {
                for (name, node) in entries {
                    d.push_unindexed(name, node);
                }
                d.reindex();
                d.open_err = open_err;
                d.list_err = list_err;
                d.lookup_err = lookup_err;
            }
        }
        Ok(())
    }

    /// The node of the entry `name` of `dir` (at `dir_path`, copied to
    /// `parent`), listed as `listed`.
    #[allow(clippy::too_many_arguments)]
    fn load_entry(
        &self,
        disk: &LocalFs,
        dir: &LocalDir,
        dir_path: &Path,
        parent: &Arc<Node>,
        name: &OsStr,
        listed: FileType,
        budget: &mut Budget,
    ) -> io::Result<Arc<Node>> {
        let m = match disk.metadata_at(dir, dir_path, name, false) {
            Ok(m) => m,
            Err(e) => return Ok(Node::refused(self.ino(), listed, errno_of(&e))),
        };
        let body = match m.kind {
            FileType::Dir => Body::Dir(Box::new(DirBody::new(Arc::downgrade(parent), m.len))),
            FileType::File => {
                let path = dir_path.join(name);
                Body::File(read_disk_file(&path, m.len, budget, || {
                    disk.open_nonblocking_at(dir, dir_path, name)
                })?)
            }
            FileType::Symlink => match disk.read_link_at(dir, dir_path, name) {
                Ok(t) => Body::Symlink(names::path_bytes(&t).into()),
                Err(e) => return Ok(Node::refused(self.ino(), listed, errno_of(&e))),
            },
            _ => Body::Special,
        };
        Ok(Node::new(self.ino(), m.kind, self.state_of(&m, body)))
    }
}

/// A directory still to copy: its parent, open (none for the top), its
/// path (for messages and the portable path) and its node.
struct Pending {
    parent: Option<Arc<LocalDir>>,
    path: PathBuf,
    node: Arc<Node>,
}

/// Why a lookup in the directory `path` fails, if it does: `lstat` of
/// `path/.` walks `.` in it, which needs search permission as every name
/// does. Relative to its parent's descriptor (`at`: the parent, its path
/// and the name) where it has one, as the directory itself may not open.
fn search_error(
    disk: &LocalFs,
    at: Option<(&Arc<LocalDir>, &Path, &OsStr)>,
    path: &Path,
) -> Option<Errno> {
    if !cfg!(unix) {
        return None;
    }
    let stat = match at {
        Some((parent, parent_path, name)) => {
            let mut dot = name.to_os_string();
            dot.push("/.");
            disk.metadata_at(parent, parent_path, &dot, false)
        }
        None => disk.symlink_metadata(&path.join(".")),
    };
    stat.err().map(|e| errno_of(&e))
}

/// What the copy may still hold: the bytes of memory the system had
/// available when the load began, less the files loaded since.
struct Budget {
    left: Option<u64>,
}

impl Budget {
    /// The memory available now, where the system says (Linux); elsewhere
    /// only each file's allocation is checked.
    fn available() -> Budget {
        Budget {
            left: mem_available(),
        }
    }

    /// Take `len` bytes for the file at `path`, or refuse the load.
    fn take(&mut self, path: &Path, len: u64) -> io::Result<()> {
        match &mut self.left {
            Some(left) if len > *left => Err(too_large(path, len, Some(*left))),
            Some(left) => {
                *left -= len;
                Ok(())
            }
            None => Ok(()),
        }
    }
}

/// The refusal of a file that does not fit: its path, its size and the
/// memory that was left for it, if known.
fn too_large(path: &Path, len: u64, left: Option<u64>) -> io::Error {
    let room = match left {
        Some(left) => format!("the {left} bytes of memory left for the copy"),
        None => "what can be allocated".to_string(),
    };
    io::Error::new(
        io::ErrorKind::OutOfMemory,
        format!(
            "{} is {len} bytes, more than {room}: a copy in memory holds every file whole; \
             search that tree on the disk",
            path.display()
        ),
    )
}

/// `MemAvailable` of `/proc/meminfo`, in bytes.
fn mem_available() -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let kib = info
        .lines()
        .find_map(|l| l.strip_prefix("MemAvailable:"))?
        .trim()
        .strip_suffix("kB")?
        .trim()
        .parse::<u64>()
        .ok()?;
    Some(kib.saturating_mul(1024))
}

/// A regular file's bytes, opened by `open`, or the error that kept them
/// (with the size the stat gave); an error when it does not fit in memory.
fn read_disk_file(
    path: &Path,
    len: u64,
    budget: &mut Budget,
    open: impl FnOnce() -> io::Result<std::fs::File>,
) -> io::Result<FileBody> {
    budget.take(path, len)?;
    Ok(
        match open().and_then(|file| read_regular(file, path, len)) {
            Ok(data) => FileBody::new(Arc::from(data)),
            Err(e) if e.kind() == io::ErrorKind::OutOfMemory => return Err(e),
            Err(e) => FileBody {
                data: Arc::from(&[][..]),
                len,
                open_err: Some(errno_of(&e)),
                nul_free: true,
            },
        },
    )
}

/// The bytes of `file` (at `path`), which the stat found regular and `len`
/// bytes long.
fn read_regular(mut file: std::fs::File, path: &Path, len: u64) -> io::Result<Vec<u8>> {
    if !file.metadata()?.is_file() {
        return Err(io::Error::other("replaced while loading"));
    }
    // Allocated before reading, and refused, not aborted, when it cannot
    // be (a file larger than the address space or the system allows).
    let mut data = Vec::new();
    usize::try_from(len)
        .ok()
        .and_then(|len| data.try_reserve_exact(len).ok())
        .ok_or_else(|| too_large(path, len, None))?;
    file.read_to_end(&mut data)?;
    Ok(data)
}

/// Open for reading without following a final symlink or blocking on a
/// FIFO: the entry was a regular file when stat'ed, and anything swapped
/// in since is refused by the caller's type check.
fn open_nonblocking(path: &Path) -> io::Result<std::fs::File> {
    #[cfg(unix)]
    {
        use rustix::fs::OFlags;
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags((OFlags::NONBLOCK | OFlags::NOFOLLOW).bits() as i32)
            .open(path)
    }
    #[cfg(not(unix))]
    {
        std::fs::File::open(path)
    }
}
