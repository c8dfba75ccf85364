//! What the index needs of a filesystem beyond the seam (`docs/index.md`,
//! "How it stays current"): a feed of its changes, and a read of a file's
//! bytes for its trigrams.
//!
//! - The local disk: inotify ([`Watcher`]).
//! - A tree in memory ([`MemFs`]): its own journal, since every change
//!   passes through its methods ([`MemFeed`]).
//! - An overlay: the feeds of both layers, each mapped to the overlay's
//!   paths ([`OverlayFeed`]): another process's changes to a lower tree on
//!   the disk, and the overlay's writes to its upper layer.
//! - SFTP: no changes to hear of; the tree is listed again before each
//!   call and compared with the mirror ([`PollFeed`], `mirror::Poll`),
//!   and the writes made through the filesystem are recorded, so that one
//!   that keeps the file's size and second is read again too.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::watch::{Changes, WatchError, Watcher};
use crate::fs::journal::{Queue, Record};
use crate::fs::{FileSystem, FileType, FsHints, FsWrite, LocalFs, MemFs, OverlayFs};

/// Where the changes to a mirrored tree come from.
pub(crate) trait Feed: Send + 'static {
    /// Follow the directory `abs` (`rel` below the root) from now on:
    /// called before it is listed, so that a change after the listing is
    /// reported and one before it is in the listing.
    fn add(&mut self, abs: &Path, rel: &Path) -> Result<(), WatchError>;
    /// Stop following `rel` and every directory below it.
    fn forget(&mut self, rel: &Path);
    /// How many directories are followed by a watch of their own.
    fn len(&self) -> usize;
    /// Every change reported so far, without waiting.
    fn drain(&mut self) -> io::Result<Changes>;
}

impl Feed for Watcher {
    fn add(&mut self, abs: &Path, rel: &Path) -> Result<(), WatchError> {
        Watcher::add(self, abs, rel)
    }

    fn forget(&mut self, rel: &Path) {
        Watcher::forget(self, rel)
    }

    fn len(&self) -> usize {
        Watcher::len(self)
    }

    fn drain(&mut self) -> io::Result<Changes> {
        Watcher::drain(self)
    }
}

/// A filesystem the index can mirror.
pub(crate) trait Source: FsHints + FsWrite {
    /// Where its changes come from.
    type Feed: Feed;

    /// Whether it reports no changes: the mirror is then listed again
    /// before every call and compared (`mirror::Poll`).
    const POLLS: bool = false;

    /// Whether a mirror saved by an earlier process can be checked against
    /// it (`saved.rs`): its stats carry a change time and an inode, so
    /// that any write since, even one that set the mtime back, shows.
    const SAVES: bool = false;

    /// The feed of the changes below `root` (as the index names it), from
    /// now on.
    fn feed(self: &Arc<Self>, root: &Path, watch_limit: Option<usize>) -> io::Result<Self::Feed>;

    /// Why no feed can follow the changes below `root` though one can be
    /// made, if none can: the index then validates its mirror at each call
    /// (`validate.rs`). A network filesystem on the local disk: inotify
    /// hears only this machine's writes.
    fn unwatchable(&self, root: &Path) -> Option<String> {
        let _ = root;
        None
    }

    /// List `dir` for the index's validation (`validate.rs`): as
    /// [`FileSystem::list`], with each entry's metadata where the
    /// filesystem lists it without a call per entry.
    fn list_for_index(&self, dir: &Self::Dir, listing: &mut crate::fs::Listing) {
        self.list(dir, listing)
    }

    /// `root` as the index names it: real (no symlink), so that the walks
    /// of calls that name it so meet the mirror.
    fn index_root(&self, root: &Path) -> io::Result<PathBuf> {
        self.canonicalize(root)
    }

    /// `f` of the bytes of the regular file `name` of the directory at
    /// `dir_path` (opened as `dir`, when the caller has it open), read
    /// whole: `None` when it is not a regular file, holds more than `max`
    /// bytes, cannot be read, or may change without the feed saying so
    /// (a file with another link on the disk).
    fn read_text<R>(
        &self,
        dir: Option<&Self::Dir>,
        dir_path: &Path,
        name: &OsStr,
        max: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R>;

    /// A handle of the mirrored directory at `path` to open its files
    /// through, when the filesystem makes one without a round trip (SFTP:
    /// the reads it then starts ahead of the engine travel together).
    /// `None`: its files are opened by path.
    fn mirror_dir(&self, path: &Path) -> Option<Self::Dir> {
        let _ = path;
        None
    }

    /// Create the directory `path` and its parents if missing (an overlay's
    /// upper root, which must exist to be followed).
    fn ensure_dir(&self, path: &Path) -> io::Result<()> {
        let _ = path;
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this filesystem cannot be an indexed overlay's upper layer",
        ))
    }
}

/// Read at most `max + 1` bytes of `file` into a buffer; `None` past `max`.
#[cfg(feature = "sftp")]
fn read_capped(file: impl Read, max: u64) -> Option<Vec<u8>> {
    let mut data = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut data)
        .ok()?;
    (data.len() as u64 <= max).then_some(data)
}

impl Source for LocalFs {
    type Feed = Watcher;

    /// Unix stats carry both (Windows has no change time in `std`).
    const SAVES: bool = cfg!(unix);

    fn feed(self: &Arc<Self>, _root: &Path, watch_limit: Option<usize>) -> io::Result<Watcher> {
        Watcher::new(watch_limit)
    }

    fn unwatchable(&self, root: &Path) -> Option<String> {
        super::watch::network_fs(root).map(|kind| format!("a network filesystem ({kind})"))
    }

    /// Real, and on Windows without the verbatim prefix `canonicalize`
    /// gives it (`\\?\C:\w`): the calls' walks name the root as the
    /// workspace's directory is named (`current_dir`: `C:\w`), and meet the
    /// mirror only under the same name.
    fn index_root(&self, root: &Path) -> io::Result<PathBuf> {
        let real = std::fs::canonicalize(root)?;
        #[cfg(windows)]
        let real = without_verbatim(real);
        Ok(real)
    }

    fn list_for_index(&self, dir: &Self::Dir, listing: &mut crate::fs::Listing) {
        self.list_with_metadata(dir, listing)
    }

    fn read_text<R>(
        &self,
        _dir: Option<&Self::Dir>,
        dir_path: &Path,
        name: &OsStr,
        max: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let file = open_nonblocking(&dir_path.join(name)).ok()?;
        let m = file.metadata().ok()?;
        if !m.is_file() || m.len() > max {
            return None;
        }
        // A file with another name elsewhere can be written through it, and
        // inotify reports that to the other name's directory only: never
        // ruled out by its trigrams. On Windows the same for validation:
        // NTFS updates a name's directory entry (the listing's size and
        // times) only when the file is written through that name. See:
        // <https://learn.microsoft.com/en-us/windows/win32/api/winbase/nf-winbase-createhardlinkw>
        // ("updated only for the link through which the change was made");
        // `std` has no link count there.
        #[cfg(unix)]
        if std::os::unix::fs::MetadataExt::nlink(&m) > 1 {
            return None;
        }
        #[cfg(windows)]
        if winapi_util::file::information(&file).map_or(true, |i| i.number_of_links() > 1) {
            return None;
        }
        let mut data = Vec::with_capacity(m.len() as usize);
        file.take(max + 1).read_to_end(&mut data).ok()?;
        if data.len() as u64 != m.len() {
            return None;
        }
        Some(f(&data))
    }

    fn ensure_dir(&self, path: &Path) -> io::Result<()> {
        std::fs::create_dir_all(path)
    }
}

/// `path` without its verbatim prefix where the path is the same without it:
/// `\\?\C:\w` is `C:\w`, `\\?\UNC\server\share\w` is
/// `\\server\share\w`; any other (a device path, a name only the verbatim
/// form can spell) is kept.
#[cfg(any(windows, test))]
fn without_verbatim(path: PathBuf) -> PathBuf {
    let Some(s) = path.to_str() else {
        return path;
    };
    if let Some(rest) = s.strip_prefix(r"\\?\UNC\") {
        return PathBuf::from(format!(r"\\{rest}"));
    }
    match s.strip_prefix(r"\\?\") {
        Some(rest)
            if rest.len() >= 3
                && rest.as_bytes()[0].is_ascii_alphabetic()
                && &rest.as_bytes()[1..3] == b":\\" =>
        {
            PathBuf::from(rest)
        }
        _ => path,
    }
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

impl Source for MemFs {
    type Feed = MemFeed;

    fn feed(self: &Arc<Self>, root: &Path, _watch_limit: Option<usize>) -> io::Result<MemFeed> {
        Ok(MemFeed {
            queue: self.subscribe(),
            fs: self.clone(),
            root: root.to_path_buf(),
            root_ino: None,
            dirs: HashMap::new(),
        })
    }

    fn read_text<R>(
        &self,
        dir: Option<&Self::Dir>,
        dir_path: &Path,
        name: &OsStr,
        max: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        // Opening never blocks here (a FIFO is `EAGAIN`), and the bytes are
        // shared, not copied.
        let file = match dir {
            Some(d) => self.open_at(d, dir_path, name),
            None => self.open_at(&self.open_dir(dir_path).ok()?, dir_path, name),
        }
        .ok()?;
        let data = self.contents(&file)?;
        (data.len() as u64 <= max).then(|| f(data))
    }

    fn ensure_dir(&self, path: &Path) -> io::Result<()> {
        self.create_dir_all(path)
    }
}

/// The feed of a tree in memory: its journal, each change named by the
/// directory's inode and the entry's name (as inotify names them by watch
/// and name), mapped here to the mirror's paths.
pub(crate) struct MemFeed {
    fs: Arc<MemFs>,
    queue: Arc<Queue>,
    root: PathBuf,
    /// The root directory's inode, once followed: another node at the
    /// root's path means the root was removed or replaced.
    root_ino: Option<u64>,
    /// The followed directories' inodes (never reused in memory).
    dirs: HashMap<u64, PathBuf>,
}

impl Feed for MemFeed {
    fn add(&mut self, abs: &Path, rel: &Path) -> Result<(), WatchError> {
        match self.fs.symlink_metadata(abs) {
            Ok(m) if m.kind == FileType::Dir => {
                if rel.as_os_str().is_empty() {
                    self.root_ino = Some(m.ino);
                }
                self.dirs.insert(m.ino, rel.to_path_buf());
                Ok(())
            }
            Ok(_) => Err(WatchError::Missing),
            Err(e) if absent(&e) => Err(WatchError::Missing),
            Err(_) => Err(WatchError::Dir),
        }
    }

    fn forget(&mut self, rel: &Path) {
        self.dirs.retain(|_, p| !p.starts_with(rel));
    }

    fn len(&self) -> usize {
        0
    }

    fn drain(&mut self) -> io::Result<Changes> {
        let (events, overflowed) = self.queue.drain();
        let mut changes = Changes::default();
        if overflowed {
            changes.lost = Some("the change journal overflowed");
            return Ok(changes);
        }
        let root = self.fs.symlink_metadata(&self.root);
        if !matches!(root, Ok(m) if m.kind == FileType::Dir && Some(m.ino) == self.root_ino) {
            changes.lost = Some("the root was removed or moved");
            return Ok(changes);
        }
        for event in events {
            let (dir, name, entries) = match event {
                Record::Entries { dir, name } => (dir, name, true),
                Record::Node { dir, name } => (dir, name, false),
                Record::Unplaced => {
                    changes.lost = Some("a change could not be placed in the tree");
                    return Ok(changes);
                }
                Record::Wrote(_) => continue,
            };
            // A directory not followed is not mirrored: nothing to update.
            let Some(rel) = self.dirs.get(&dir) else {
                continue;
            };
            if entries {
                changes.dirs.insert(rel.clone());
            }
            changes.names.insert((rel.clone(), name.into_vec()));
        }
        Ok(changes)
    }
}

/// Whether `e` says that nothing (or no directory) is there.
fn absent(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
    )
}

impl<L: Source, U: Source> Source for OverlayFs<L, U> {
    type Feed = OverlayFeed<L::Feed, U::Feed>;

    fn feed(self: &Arc<Self>, root: &Path, watch_limit: Option<usize>) -> io::Result<Self::Feed> {
        // The upper root must exist to be followed: the first write would
        // otherwise create it, and everything below it, unseen. An empty
        // upper layer shows nothing.
        let upper_root = self.upper_path_of(root).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{} is outside the overlay's workspace {}",
                    root.display(),
                    self.lower_root().display()
                ),
            )
        })?;
        self.upper().ensure_dir(self.upper_root())?;
        Ok(OverlayFeed {
            lower: self.lower().feed(root, watch_limit)?,
            upper: self.upper().feed(&upper_root, watch_limit)?,
            upper_root,
        })
    }

    fn unwatchable(&self, root: &Path) -> Option<String> {
        let upper = self.upper_path_of(root)?;
        self.lower()
            .unwatchable(root)
            .or_else(|| self.upper().unwatchable(&upper))
    }

    fn read_text<R>(
        &self,
        dir: Option<&Self::Dir>,
        dir_path: &Path,
        name: &OsStr,
        max: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let opened;
        let dir = match dir {
            Some(d) => d,
            None => {
                opened = self.open_dir(dir_path).ok()?;
                &opened
            }
        };
        // The upper layer's file shadows the lower's.
        if let Some((upper, up)) = dir.upper_dir() {
            match self.upper().metadata_at(upper, up, name, false) {
                Ok(m) if m.kind == FileType::File => {
                    return self.upper().read_text(Some(upper), up, name, max, f);
                }
                Ok(_) => return None,
                Err(e) if absent(&e) => {}
                Err(_) => return None,
            }
        }
        let lower = dir.lower_dir()?;
        self.lower().read_text(Some(lower), dir_path, name, max, f)
    }
}

/// The feed of an overlay: its lower layer's and its upper layer's, both
/// naming the overlay's directories (a directory of the overlay may be in
/// either layer or both, and each layer reports what changes in its own).
pub(crate) struct OverlayFeed<L, U> {
    lower: L,
    upper: U,
    /// Where the upper layer keeps the overlay's root.
    upper_root: PathBuf,
}

impl<L: Feed, U: Feed> Feed for OverlayFeed<L, U> {
    fn add(&mut self, abs: &Path, rel: &Path) -> Result<(), WatchError> {
        let upper_abs = if rel.as_os_str().is_empty() {
            self.upper_root.clone()
        } else {
            self.upper_root.join(rel)
        };
        let lower = self.lower.add(abs, rel);
        let upper = self.upper.add(&upper_abs, rel);
        match (lower, upper) {
            (Err(WatchError::Limit), _) | (_, Err(WatchError::Limit)) => Err(WatchError::Limit),
            (Err(WatchError::Dir), _) | (_, Err(WatchError::Dir)) => Err(WatchError::Dir),
            (Err(WatchError::Missing), Err(WatchError::Missing)) => Err(WatchError::Missing),
            _ => Ok(()),
        }
    }

    fn forget(&mut self, rel: &Path) {
        self.lower.forget(rel);
        self.upper.forget(rel);
    }

    fn len(&self) -> usize {
        self.lower.len() + self.upper.len()
    }

    fn drain(&mut self) -> io::Result<Changes> {
        let mut changes = self.lower.drain()?;
        let upper = self.upper.drain()?;
        changes.dirs.extend(upper.dirs);
        changes.names.extend(upper.names);
        changes.lost = changes.lost.or(upper.lost);
        Ok(changes)
    }
}

/// The feed of a filesystem that reports no changes (SFTP): the writes
/// made through it, by `(directory, name)` below the root; the rest is
/// found by listing the tree again (`mirror::Poll`).
#[cfg_attr(not(feature = "sftp"), allow(dead_code))]
pub(crate) struct PollFeed<S: FileSystem> {
    fs: Arc<S>,
    queue: Arc<Queue>,
    root: PathBuf,
}

#[cfg_attr(not(feature = "sftp"), allow(dead_code))]
impl<S: FileSystem> PollFeed<S> {
    pub(crate) fn new(fs: Arc<S>, queue: Arc<Queue>, root: &Path) -> PollFeed<S> {
        PollFeed {
            fs,
            queue,
            root: root.to_path_buf(),
        }
    }

    /// `(directory, name)` of `path` below the root, if it is below it.
    fn key(&self, path: &Path) -> Option<(PathBuf, Vec<u8>)> {
        let rel = path.strip_prefix(&self.root).ok()?;
        let name = rel.file_name()?;
        let dir = rel.parent().unwrap_or(Path::new(""));
        Some((dir.to_path_buf(), crate::fs::names::os_bytes(name).to_vec()))
    }
}

impl<S: FileSystem> Feed for PollFeed<S> {
    fn add(&mut self, _abs: &Path, _rel: &Path) -> Result<(), WatchError> {
        Ok(())
    }

    fn forget(&mut self, _rel: &Path) {}

    fn len(&self) -> usize {
        0
    }

    fn drain(&mut self) -> io::Result<Changes> {
        let (events, overflowed) = self.queue.drain();
        let mut changes = Changes::default();
        if overflowed {
            changes.lost = Some("the change journal overflowed");
            return Ok(changes);
        }
        for event in events {
            let Record::Wrote(path) = event else {
                continue;
            };
            // As written, and where it really is (a symlink on the way).
            changes.names.extend(self.key(&path));
            if let Ok(real) = self.fs.canonicalize(&path) {
                changes.names.extend(self.key(&real));
            }
        }
        Ok(changes)
    }
}

#[cfg(feature = "sftp")]
impl Source for crate::fs::SftpFs {
    type Feed = PollFeed<crate::fs::SftpFs>;

    const POLLS: bool = true;

    fn feed(self: &Arc<Self>, root: &Path, _watch_limit: Option<usize>) -> io::Result<Self::Feed> {
        Ok(PollFeed::new(self.clone(), self.subscribe(), root))
    }

    /// As given: resolving it would connect when the workspace opens, and
    /// the calls' walks name it as the caller does.
    fn index_root(&self, root: &Path) -> io::Result<PathBuf> {
        Ok(root.to_path_buf())
    }

    fn read_text<R>(
        &self,
        dir: Option<&Self::Dir>,
        dir_path: &Path,
        name: &OsStr,
        max: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Option<R> {
        let made;
        let dir = match dir {
            Some(d) => d,
            None => {
                made = self.mirror_dir(dir_path)?;
                &made
            }
        };
        // Opened as a listed regular file: what the read ahead started
        // (`will_open`) is taken, a FIFO is never opened on the host.
        let file = self.open_at(dir, dir_path, name).ok()?;
        if let Some(data) = self.contents(&file) {
            return (data.len() as u64 <= max).then(|| f(data));
        }
        read_capped(file, max).map(|d| f(&d))
    }

    fn mirror_dir(&self, path: &Path) -> Option<Self::Dir> {
        Some(self.dir_handle(path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verbatim_root_is_named_as_the_workspace_names_it() {
        for (given, want) in [
            (r"\\?\C:\w\src", r"C:\w\src"),
            (r"\\?\d:\", r"d:\"),
            (r"\\?\UNC\server\share\w", r"\\server\share\w"),
            // Kept: a device path, a drive-relative form, not verbatim.
            (r"\\?\GLOBALROOT\Device\X", r"\\?\GLOBALROOT\Device\X"),
            (r"\\?\C:", r"\\?\C:"),
            (r"C:\w", r"C:\w"),
            ("/home/w", "/home/w"),
        ] {
            assert_eq!(
                without_verbatim(PathBuf::from(given)),
                PathBuf::from(want),
                "{given}"
            );
        }
    }

    fn feed_of(fs: &Arc<MemFs>) -> MemFeed {
        let mut feed = fs.feed(Path::new("/w"), None).unwrap();
        feed.add(Path::new("/w"), Path::new("")).unwrap();
        feed.add(Path::new("/w/d"), Path::new("d")).unwrap();
        feed
    }

    #[test]
    fn memory_changes_are_named_by_the_mirror_s_paths() {
        let fs = Arc::new(MemFs::new());
        fs.write_file("/w/d/a.txt", "a\n").unwrap();
        let mut feed = feed_of(&fs);
        fs.write_file("/w/d/a.txt", "b\n").unwrap();
        fs.write_file("/w/d/new.txt", "c\n").unwrap();
        fs.set_mode("/w/d/a.txt", 0o600).unwrap();
        let c = feed.drain().unwrap();
        assert_eq!(c.lost, None);
        assert_eq!(c.dirs, [PathBuf::from("d")].into());
        let names: Vec<_> = c
            .names
            .iter()
            .map(|(d, n)| (d.clone(), n.clone()))
            .collect();
        assert_eq!(
            names,
            [
                (PathBuf::from("d"), b"a.txt".to_vec()),
                (PathBuf::from("d"), b"new.txt".to_vec())
            ]
        );
        // A directory not followed reports nothing; the root replaced is
        // a rebuild.
        fs.write_file("/elsewhere/x", "x").unwrap();
        assert!(feed.drain().unwrap().is_empty());
        fs.remove("/w").unwrap();
        fs.create_dir_all("/w/d").unwrap();
        assert_eq!(
            feed.drain().unwrap().lost,
            Some("the root was removed or moved")
        );
    }

    #[test]
    fn an_unplaced_memory_change_is_a_rebuild() {
        let fs = Arc::new(MemFs::new());
        fs.create_dir_all("/w/d").unwrap();
        let mut feed = feed_of(&fs);
        fs.journal().record(Record::Unplaced);
        assert!(feed.drain().unwrap().lost.is_some());
    }
}
