//! The filesystem seam: the byte-level operations every tool needs
//! (`docs/contract.md` §10).
//!
//! Names and contents are bytes here; text decoding, CRLF handling and
//! literal edits live once above the seam (`fs::text`, the file tools).
//! The native engine is generic over [`FileSystem`], so the local disk's
//! fast path (directory descriptors, one listing per directory) is
//! monomorphized into it; the file tools and the guard, which need no such
//! speed, see the same filesystem through [`DynFileSystem`](super::DynFileSystem).
//!
//! Errors are [`io::Error`]s: rg prints them as they are (`No such file or
//! directory (os error 2)`), so a filesystem that is not the local disk
//! reports the errno the disk would have reported ([`errno`]).

use std::ffi::OsStr;
use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use dsh_search_base::cancel::CancelToken;

/// The kind of a directory entry or of a stat'ed path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FileType {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A symbolic link (only from a listing or a stat that does not follow
    /// links).
    Symlink,
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character or block device.
    Device,
    /// The listing did not say (`DT_UNKNOWN`): stat the entry without
    /// following links to learn it.
    Unknown,
}

impl FileType {
    /// Whether this is a regular file.
    pub fn is_file(self) -> bool {
        self == FileType::File
    }

    /// Whether this is a directory.
    pub fn is_dir(self) -> bool {
        self == FileType::Dir
    }

    /// Whether this is a symbolic link.
    pub fn is_symlink(self) -> bool {
        self == FileType::Symlink
    }
}

/// A modification or change time: seconds and nanoseconds since the Unix
/// epoch, ordered like `SystemTime`.
pub type Timestamp = (i64, u32);

/// What a stat returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Metadata {
    /// The entry's kind.
    pub kind: FileType,
    /// The size in bytes.
    pub len: u64,
    /// The modification time, when the filesystem has one.
    pub mtime: Option<Timestamp>,
    /// The permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    /// The device, or 0 where the filesystem has none.
    pub dev: u64,
    /// The inode, or another number unique to the file within `dev`.
    pub ino: u64,
    /// The status-change time, or any value that changes whenever the
    /// file's content or metadata does.
    pub ctime: Option<Timestamp>,
    /// The number of hard links (names) of the file; 1 where the
    /// filesystem has none (in memory, SFTP v3, Windows).
    pub links: u64,
}

impl Metadata {
    /// The file's version token: `dev:ino:size:mtimeNs:ctimeNs`
    /// (`docs/seed-reference.md` §6.6). It changes whenever the file's
    /// content, metadata or identity changes.
    pub fn version(&self) -> Version {
        let ns = |t: Option<Timestamp>| {
            t.map_or(0i128, |(s, n)| {
                i128::from(s) * 1_000_000_000 + i128::from(n)
            })
        };
        Version(format!(
            "{}:{}:{}:{}:{}",
            self.dev,
            self.ino,
            self.len,
            ns(self.mtime),
            ns(self.ctime)
        ))
    }
}

/// An opaque version token (see [`Metadata::version`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Version(pub String);

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One directory's entries, in the filesystem's own order, read into
/// buffers the caller keeps between directories (no allocation per entry).
#[derive(Debug, Default)]
pub struct Listing {
    pub(crate) names: Vec<u8>,
    /// (end of the name in `names`, its kind).
    pub(crate) entries: Vec<(usize, FileType)>,
    pub(crate) error: Option<io::Error>,
    /// The entries' metadata (not following links), for the entries a
    /// filesystem listed with it (`None` for the others; shorter than
    /// `entries` when the last ones have none).
    pub(crate) metadata: Vec<Option<Metadata>>,
    /// Which entries carry Windows' hidden attribute (shorter than
    /// `entries` when the last ones do not).
    pub(crate) hidden: Vec<bool>,
    /// A buffer the filesystem may keep between listings (the local disk's
    /// `getdents64` buffer).
    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(crate) scratch: Vec<u8>,
}

impl Listing {
    /// An empty listing.
    pub fn new() -> Listing {
        Listing::default()
    }

    /// Forget the previous directory's entries.
    pub fn clear(&mut self) {
        self.names.clear();
        self.entries.clear();
        self.metadata.clear();
        self.hidden.clear();
        self.error = None;
    }

    /// Add an entry (never `.` or `..`).
    pub fn push(&mut self, name: &[u8], kind: FileType) {
        self.names.extend_from_slice(name);
        self.entries.push((self.names.len(), kind));
    }

    /// Add an entry with its metadata (not following links), for a
    /// filesystem that has it at hand while listing (in memory, SFTP's
    /// `READDIR` attributes): glob then needs no stat of a regular file.
    pub fn push_with_metadata(&mut self, name: &[u8], kind: FileType, metadata: Metadata) {
        self.metadata.resize(self.entries.len(), None);
        self.push(name, kind);
        self.metadata.push(Some(metadata));
    }

    /// Mark the entry pushed last as hidden by its attributes: Windows'
    /// `FILE_ATTRIBUTE_HIDDEN`, which rg's walk skips like a name that
    /// starts with `.` (ignore 0.4.29 `pathutil.rs: is_hidden`).
    pub fn set_hidden(&mut self) {
        if let Some(last) = self.entries.len().checked_sub(1) {
            self.hidden.resize(last, false);
            self.hidden.push(true);
        }
    }

    /// Whether the `i`th entry was marked with [`Listing::set_hidden`].
    pub fn is_hidden(&self, i: usize) -> bool {
        self.hidden.get(i).copied().unwrap_or(false)
    }

    /// The metadata the filesystem listed the `i`th entry with, if any.
    pub fn metadata(&self, i: usize) -> Option<&Metadata> {
        self.metadata.get(i).and_then(Option::as_ref)
    }

    /// The listing ended early with `err` after the entries pushed so far
    /// (`std::fs::ReadDir` yields one error and ends).
    pub fn fail(&mut self, err: io::Error) {
        self.error = Some(err);
    }

    /// The entries: name and kind.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], FileType)> {
        let mut start = 0;
        self.entries.iter().map(move |&(end, kind)| {
            let name = &self.names[start..end];
            start = end;
            (name, kind)
        })
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The error that ended the listing, taken.
    pub fn take_error(&mut self) -> Option<io::Error> {
        self.error.take()
    }

    /// The error that ended the listing, if any.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }
}

/// The condition a write is published under.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum WriteGuard {
    /// Create or replace, unconditionally.
    #[default]
    None,
    /// Create only: an existing file is never replaced.
    CreateIfAbsent,
    /// Replace only the file at this version.
    ReplaceIfVersion(Version),
}

impl WriteGuard {
    /// Whether a write may replace `current`, what the target is now (its
    /// metadata, a final symlink followed; `None` when nothing is there).
    /// Every filesystem's [`FsWrite::write`] asks this, under its own
    /// lock, just before it publishes: what is not a regular file is never
    /// written, whatever the guard; then the guard decides
    /// (`contract.md` §6: a stale version or an existing file refuses).
    pub fn admits(&self, current: Option<&Metadata>) -> Result<(), WriteError> {
        if let Some(m) = current {
            if !m.kind.is_file() {
                return Err(WriteError::NotRegular(m.kind));
            }
        }
        match (self, current) {
            (WriteGuard::ReplaceIfVersion(_), None) => Err(WriteError::Stale),
            (WriteGuard::ReplaceIfVersion(v), Some(m)) if m.version() != *v => {
                Err(WriteError::Stale)
            }
            (WriteGuard::CreateIfAbsent, Some(_)) => Err(WriteError::Exists),
            _ => Ok(()),
        }
    }
}

/// Why a guarded write was not published, or failed.
#[derive(Debug)]
pub enum WriteError {
    /// [`WriteGuard::CreateIfAbsent`] and the file exists.
    Exists,
    /// [`WriteGuard::ReplaceIfVersion`] and the file is missing or at
    /// another version.
    Stale,
    /// The target is not a regular file (a directory, FIFO, device,
    /// socket, or a symlink to one).
    NotRegular(FileType),
    /// A component of the target's parent exists and is not a directory.
    NotDirectory(PathBuf),
    /// The call was cancelled before the write was published.
    Cancelled,
    /// Reading the content to write failed ([`FsWrite::write_from`]).
    Source(io::Error),
    /// Any other failure, with the path it concerns.
    Io(PathBuf, io::Error),
}

impl fmt::Display for WriteError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WriteError::Exists => f.write_str("the file exists"),
            WriteError::Stale => f.write_str("the file changed"),
            WriteError::NotRegular(k) => write!(f, "not a regular file ({k:?})"),
            WriteError::NotDirectory(p) => write!(f, "{}: not a directory", p.display()),
            WriteError::Cancelled => f.write_str("cancelled"),
            WriteError::Source(e) => write!(f, "reading the content failed: {e}"),
            WriteError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for WriteError {}

/// What a published write did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Whether the file existed before (and was replaced).
    pub replaced: bool,
    /// The new file's metadata.
    pub metadata: Metadata,
}

/// The filesystem seam's read core (`docs/contract.md` §10): stat, list,
/// open and read. What the engine walks and searches, and what a read-only
/// filesystem (the index's view of its mirror) implements whole.
///
/// Paths are absolute and lexical (no `..` resolution is implied); symlinks
/// are followed where the method says so, as the operating system would
/// follow them. A directory is listed in the filesystem's own order, which
/// glob's modification-time ties follow.
///
/// Two traits extend it, each a capability of its own: [`FsWrite`], the
/// guarded write the file tools publish through, and [`FsHints`], the
/// performance hints the engine gives and asks (every one with a default
/// that does nothing, and none of them ever changes an answer).
///
/// Implementations: [`LocalFs`](super::LocalFs) (the local disk),
/// [`MemFs`](super::MemFs) (in memory), [`OverlayFs`](super::OverlayFs)
/// (an upper layer over a lower one).
pub trait FileSystem: Send + Sync + 'static {
    /// An open directory: what its entries are listed, stat'ed and opened
    /// through. On the local disk, a descriptor; elsewhere, often its path.
    type Dir: Send + Sync;

    /// An open file, read in pieces.
    type File: io::Read + Send + 'static;

    /// The path with every symlink resolved (`realpath`).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// The current directory of a process started in `workdir`: what rg,
    /// run there, takes as its CWD. The default is
    /// [`FileSystem::canonicalize`], as `getcwd` reports the real path;
    /// the local disk on Windows keeps the path as given
    /// (`GetCurrentDirectoryW`).
    fn current_dir(&self, workdir: &Path) -> io::Result<PathBuf> {
        self.canonicalize(workdir)
    }

    /// Stat `path`, following symlinks.
    fn metadata(&self, path: &Path) -> io::Result<Metadata>;

    /// Stat `path` itself.
    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata>;

    /// The target of the symlink at `path`, as stored.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;

    /// Open the directory at `path` (symlinks followed).
    fn open_dir(&self, path: &Path) -> io::Result<Self::Dir>;

    /// Open the subdirectory `name` of `parent` (whose path is
    /// `parent_path`); the entry was listed as a directory.
    fn open_dir_at(
        &self,
        parent: &Self::Dir,
        parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<Self::Dir>;

    /// List `dir` into `listing` (cleared first), in the filesystem's
    /// order; an error that ends the listing early is recorded in it.
    fn list(&self, dir: &Self::Dir, listing: &mut Listing);

    /// Stat the entry `name` of `dir` (whose path is `dir_path`), following
    /// a symlink or not.
    fn metadata_at(
        &self,
        dir: &Self::Dir,
        dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata>;

    /// Open the file `name` of `dir` (whose path is `dir_path`) for reading.
    fn open_at(&self, dir: &Self::Dir, dir_path: &Path, name: &OsStr) -> io::Result<Self::File>;

    /// Open the file at `path` for reading, symlinks followed. A FIFO is
    /// read as it comes, and the wait for its data ends with an error once
    /// `cancel` is set.
    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<Self::File>;

    /// Read a small control file (an ignore file, a `.git` file) whole,
    /// never blocking: anything but a regular file (after following links)
    /// is an error.
    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// Read the regular file at `path` (symlinks followed) whole, never
    /// blocking, with the metadata of the file that was read: its version is
    /// the version of exactly these bytes. Anything but a regular file (a
    /// directory, FIFO, socket, device) is not read, nor is a file of more
    /// than `max` bytes: the content is then `None`, and the metadata says
    /// which it was.
    ///
    /// The file tools read what they rewrite through it (`edit`, the diff
    /// basis of `write`), and the guard what its edit precheck counts. The
    /// default stats, then opens; a filesystem where an entry can change kind
    /// between the two (the local disk: a FIFO swapped in would block the
    /// open) does both on one open file instead.
    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)> {
        let metadata = self.metadata(path)?;
        if !metadata.kind.is_file() || metadata.len > max {
            return Ok((metadata, None));
        }
        let mut bytes = Vec::new();
        self.open(path, &CancelToken::new())?
            .take(max.saturating_add(1))
            .read_to_end(&mut bytes)?;
        let fits = bytes.len() as u64 <= max;
        Ok((metadata, fits.then_some(bytes)))
    }

    /// The contents of git's global excludes file for this workspace
    /// (`core.excludesFile`, else `$XDG_CONFIG_HOME/git/ignore`), and the
    /// path it was read from; `None` when there is none. A relative
    /// `core.excludesFile` is resolved against `workdir`, rg's CWD.
    fn git_global_excludes(&self, workdir: &Path) -> Option<(PathBuf, Vec<u8>)>;
}

/// The seam's performance hints (`docs/contract.md` §10): what the engine
/// tells a filesystem it will soon need, and asks of it to spare work.
/// Every method has a default that does nothing (or knows nothing), and a
/// hint never changes an answer: a filesystem that takes every default is
/// searched exactly as one that overrides them all, only slower. The
/// native engine takes a filesystem with its hints
/// (`dsh_search::NativeBackend::on`); one with none to give
/// says so with an empty `impl FsHints for MyFs {}`.
pub trait FsHints: FileSystem {
    /// A hint: the engine will soon open the regular file `name` of `dir`
    /// (whose path is `dir_path`) with [`FileSystem::open_at`], listed with
    /// `metadata` when the listing had it. A filesystem with a slow round
    /// trip (SFTP) starts reading it now, so that the reads of many files
    /// travel together; the default does nothing. What `open_at` then
    /// returns is the same, and a file hinted but never opened costs at
    /// most a read.
    fn will_open(
        &self,
        dir: &Self::Dir,
        dir_path: &Path,
        name: &OsStr,
        metadata: Option<&Metadata>,
    ) {
        let _ = (dir, dir_path, name, metadata);
    }

    /// For grep's walk, before the regular file `name` of `dir` (whose
    /// path is `dir_path`, and where `name` was the `at`-th entry of the
    /// directory's [`FileSystem::list`], a hint the filesystem checks
    /// before it relies on it) is opened: its length, when the filesystem knows
    /// that the call's pattern has no match in it and that the searcher
    /// would read it as plain text (no NUL, no byte-order mark). The engine
    /// then counts it as searched without a match, as it counts a file
    /// whose bytes it checked whole (`searches` 1, `bytes_searched` its
    /// length, nothing printed), without opening it. Only a filesystem
    /// built for one call knows the pattern (the index's view,
    /// `docs/index.md`); `None` (the default): open it.
    fn known_miss(&self, dir: &Self::Dir, dir_path: &Path, name: &OsStr, at: usize) -> Option<u64> {
        let _ = (dir, dir_path, name, at);
        None
    }

    /// Whether a walk that would open each directory by its whole path
    /// ([`FileSystem::open_dir`], so that queued directories hold no
    /// descriptor) should rather open a subdirectory through its parent as
    /// soon as the parent is listed, after [`FsHints::will_list`]: for a
    /// filesystem whose handles hold nothing open and whose listings are
    /// slow to come (SFTP). `false` (the default): by path, when its turn
    /// comes.
    fn lists_ahead(&self) -> bool {
        false
    }

    /// A hint: the engine will soon open the subdirectory `name` of `dir`
    /// (whose path is `dir_path`) with [`FileSystem::open_dir_at`] and list
    /// it. A filesystem with a slow round trip (SFTP) starts listing it now;
    /// the default does nothing. What `list` then records is the same.
    fn will_list(&self, dir: &Self::Dir, dir_path: &Path, name: &OsStr) {
        let _ = (dir, dir_path, name);
    }

    /// A hint, as [`FsHints::will_list`], from a walk that will list the
    /// whole tree below `name` but for the directories named in
    /// `left_out`, at any depth (glob's walk leaves out the VCS
    /// directories, `.git` and the like, and nothing else), so a
    /// filesystem with a slow round trip can list deeper ahead of it. The
    /// default is [`FsHints::will_list`].
    fn will_list_tree(
        &self,
        dir: &Self::Dir,
        dir_path: &Path,
        name: &OsStr,
        left_out: &'static [&'static [u8]],
    ) {
        let _ = left_out;
        self.will_list(dir, dir_path, name);
    }

    /// The whole contents of an open file, when the filesystem holds them
    /// in memory: the engine then checks a file in place instead of copying
    /// it. `None` (the default) means: read it.
    fn contents<'f>(&self, file: &'f Self::File) -> Option<&'f [u8]> {
        let _ = file;
        None
    }

    /// Whether the filesystem knows that the open file's bytes hold no NUL
    /// (found when they were stored), sparing the engine a scan of them.
    /// `false` (the default) means: not known.
    fn known_nul_free(&self, file: &Self::File) -> bool {
        let _ = file;
        false
    }
}

/// The seam's write (`docs/contract.md` §10): a regular file created or
/// replaced under the one [`WriteGuard`], for the file tools (through
/// [`DynFileSystem`](super::DynFileSystem)). A read-only filesystem (the
/// index's view of its mirror) does not implement it.
pub trait FsWrite: FileSystem {
    /// Create or replace the regular file at `path` with `content`, under
    /// `guard`, atomically where the filesystem can: a reader sees the old
    /// content or the new, never a mix. Missing parent directories are
    /// created. A new file gets mode 0600 (as the tools publish it); a
    /// replaced one keeps its mode (and, where the filesystem has owners,
    /// its owner and group, or else loses its set-id bits). `cancel` is
    /// honoured until the moment of publishing, never after: a cancelled
    /// call has not changed the file. A symlink that dangles at `path` is
    /// not a regular file: it is neither written through nor replaced.
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError>;

    /// [`FsWrite::write`] with the content read from `content` until its
    /// end: a filesystem on disk streams it into place (the local disk
    /// holds one chunk at a time); a read error is
    /// [`WriteError::Source`]. The default reads it whole, then writes.
    fn write_from(
        &self,
        path: &Path,
        content: &mut dyn Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let mut bytes = Vec::new();
        if let Err(e) = content.read_to_end(&mut bytes) {
            return Err(if cancel.is_cancelled() {
                WriteError::Cancelled
            } else {
                WriteError::Source(e)
            });
        }
        self.write(path, &bytes, guard, cancel)
    }
}

/// An error that concerns the whole filesystem rather than the file it
/// was met at: a remote host that can no longer be reached (the connection
/// lost, a reconnection refused). The engine reports it once, first,
/// instead of once for every file and directory it meets (`rg: {error}`).
/// Its text is the error's own.
pub fn unavailable(kind: io::ErrorKind, message: String) -> io::Error {
    io::Error::new(kind, Unavailable(message))
}

/// Whether `err` was made by [`unavailable`].
pub fn is_unavailable(err: &io::Error) -> bool {
    err.get_ref().is_some_and(|e| e.is::<Unavailable>())
}

/// The payload of an [`unavailable`] error.
#[derive(Debug)]
struct Unavailable(String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// `io::Error`s with the errno the local disk would report, for
/// filesystems that are not the local disk: rg prints
/// `No such file or directory (os error 2)`, and so must they.
pub mod errno {
    use std::io;

    macro_rules! errnos {
        ($($(#[$doc:meta])* $name:ident = $linux:expr, $mac:expr, $kind:ident;)*) => {
            $(
                $(#[$doc])*
                pub fn $name() -> io::Error {
                    #[cfg(target_os = "linux")]
                    { io::Error::from_raw_os_error($linux) }
                    #[cfg(all(unix, not(target_os = "linux")))]
                    { io::Error::from_raw_os_error($mac) }
                    #[cfg(not(unix))]
                    { io::Error::from(io::ErrorKind::$kind) }
                }
            )*
        };
    }

    errnos! {
        /// `ENOENT`.
        not_found = 2, 2, NotFound;
        /// `EACCES`.
        permission_denied = 13, 13, PermissionDenied;
        /// `EEXIST`.
        exists = 17, 17, AlreadyExists;
        /// `ENOTDIR`.
        not_a_directory = 20, 20, NotADirectory;
        /// `EISDIR`.
        is_a_directory = 21, 21, IsADirectory;
        /// `EINVAL`.
        invalid = 22, 22, InvalidInput;
        /// `ENAMETOOLONG`.
        name_too_long = 36, 63, Other;
        /// `ELOOP`.
        too_many_links = 40, 62, Other;
        /// `ENOTEMPTY`.
        not_empty = 39, 66, DirectoryNotEmpty;
        /// `ENXIO` (opening a socket).
        no_such_device = 6, 6, Other;
        /// `EAGAIN` (a read that would block).
        would_block = 11, 35, WouldBlock;
        /// `EBUSY` (removing the root).
        busy = 16, 16, ResourceBusy;
    }
}
