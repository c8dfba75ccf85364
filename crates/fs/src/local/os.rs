//! [`LocalFs`] as the seam's local disk: the read side of [`FileSystem`].
//!
//! Two implementations behind one type. On Linux the fast path: a
//! directory is a descriptor, listed with one `getdents64` loop into the
//! caller's buffers, and its entries are stat'ed and opened relative to it
//! (`openat`, `fstatat`: the kernel resolves one name, not the whole path).
//! Everywhere else, and on Linux when [`LocalFs::portable`] asks for it
//! (so that the conformance suite checks it there too), the portable path
//! on `std::fs`, which names every entry by its whole path.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use dsh_search_base::cancel::CancelToken;

use super::LocalFs;
use crate::seam::{
    FileSystem, FileType, FsHints, FsWrite, Listing, Metadata, WriteError, WriteGuard, Written,
};

/// An open directory of the local disk.
#[derive(Debug)]
pub struct LocalDir(Dir);

#[derive(Debug)]
enum Dir {
    /// A directory descriptor (the Linux fast path).
    #[cfg(target_os = "linux")]
    Fd(fast::DirFd),
    /// The directory's path (the portable path).
    Path(PathBuf),
}

/// An open file of the local disk.
#[derive(Debug)]
pub struct LocalFile(OpenFile);

#[derive(Debug)]
enum OpenFile {
    /// A regular file (or anything read like one).
    File(File),
    /// A regular file of a directory whose filesystem ends a read short
    /// only at the end of the file ([`fast::DirFd::reads_whole`]): once a
    /// read came back short, the file is known to have ended, and the
    /// `read(2)` that would answer 0 is not made: one system call per file
    /// spared (BENCHMARKS.md, "What changed").
    #[cfg(target_os = "linux")]
    Whole { file: File, ended: bool },
    /// A FIFO named explicitly, read so that cancellation ends the wait.
    #[cfg(unix)]
    Fifo(super::fifo::FifoReader),
}

impl Read for LocalFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.0 {
            OpenFile::File(f) => f.read(buf),
            #[cfg(target_os = "linux")]
            OpenFile::Whole { file, ended } => {
                if *ended {
                    return Ok(0);
                }
                let n = file.read(buf)?;
                *ended = n < buf.len();
                Ok(n)
            }
            #[cfg(unix)]
            OpenFile::Fifo(f) => f.read(buf),
        }
    }
}

/// The size of the `getdents64` buffer (glibc's `opendir` uses 32 KiB).
#[cfg(target_os = "linux")]
const LISTING_BUF: usize = 32 * 1024;

impl LocalFs {
    #[cfg(target_os = "linux")]
    fn fast(&self) -> bool {
        !self.portable
    }

    /// The target of the symlink `name` of `dir` (whose path is
    /// `dir_path`), as stored: relative to the descriptor on the fast path,
    /// so that it works where `dir_path` is past `PATH_MAX`.
    pub(crate) fn read_link_at(
        &self,
        dir: &LocalDir,
        dir_path: &Path,
        name: &OsStr,
    ) -> io::Result<PathBuf> {
        match &dir.0 {
            #[cfg(target_os = "linux")]
            Dir::Fd(d) => {
                use std::os::unix::ffi::OsStringExt;
                let target = rustix::fs::readlinkat(&d.fd, name, Vec::new())?;
                Ok(PathBuf::from(std::ffi::OsString::from_vec(
                    target.into_bytes(),
                )))
            }
            Dir::Path(_) => std::fs::read_link(dir_path.join(name)),
        }
    }

    /// Open the entry `name` of `dir` (whose path is `dir_path`) for
    /// reading without following a final symlink or blocking on a FIFO
    /// (the entry was a regular file when stat'ed: the caller checks the
    /// open file's type, so anything swapped in since is refused).
    pub(crate) fn open_nonblocking_at(
        &self,
        dir: &LocalDir,
        dir_path: &Path,
        name: &OsStr,
    ) -> io::Result<File> {
        match &dir.0 {
            #[cfg(target_os = "linux")]
            Dir::Fd(d) => {
                use rustix::fs::{Mode, OFlags};
                let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                Ok(File::from(rustix::fs::openat(
                    &d.fd,
                    name,
                    flags,
                    Mode::empty(),
                )?))
            }
            Dir::Path(_) => open_nonblocking(&dir_path.join(name)),
        }
    }
}

/// `std::fs::Metadata` as the seam's.
pub(crate) fn from_std(m: &std::fs::Metadata) -> Metadata {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        #[allow(clippy::unnecessary_cast, trivial_numeric_casts)]
        Metadata {
            kind: kind_of_std(m.file_type()),
            len: m.len(),
            mtime: Some((m.mtime() as i64, m.mtime_nsec() as u32)),
            mode: m.mode() & 0o7777,
            dev: m.dev() as u64,
            ino: m.ino() as u64,
            ctime: Some((m.ctime() as i64, m.ctime_nsec() as u32)),
            links: m.nlink() as u64,
        }
    }
    #[cfg(not(unix))]
    {
        let ts = |t: io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| (d.as_secs() as i64, d.subsec_nanos()))
        };
        Metadata {
            kind: kind_of_std(m.file_type()),
            len: m.len(),
            mtime: ts(m.modified()),
            mode: if m.permissions().readonly() {
                0o444
            } else {
                0o644
            },
            dev: 0,
            ino: 0,
            ctime: ts(m.modified()),
            links: 1,
        }
    }
}

impl LocalFs {
    /// [`FileSystem::list`], each entry with its metadata where the listing
    /// carries it: on Windows, `FindNextFileW`'s data (size, times,
    /// attributes), which `DirEntry::metadata` returns without opening the
    /// file, so the index's validation (`index/validate.rs`) makes no call
    /// per entry there. Elsewhere the listing as it is (Linux lists no
    /// metadata: the caller stats each entry).
    pub fn list_with_metadata(&self, dir: &LocalDir, listing: &mut Listing) {
        #[cfg(windows)]
        {
            let Dir::Path(path) = &dir.0;
            listing.clear();
            let rd = match std::fs::read_dir(path) {
                Ok(rd) => rd,
                Err(e) => return listing.fail(e),
            };
            for entry in rd {
                let e = match entry {
                    Ok(e) => e,
                    Err(e) => return listing.fail(e),
                };
                let kind = e.file_type().map_or(FileType::Unknown, kind_of_std);
                let name = e.file_name();
                let name = crate::names::os_bytes(&name);
                if super::is_staging(name, kind) {
                    continue;
                }
                match e.metadata() {
                    Ok(m) => listing.push_with_metadata(name, kind, from_std(&m)),
                    Err(_) => listing.push(name, kind),
                }
            }
        }
        #[cfg(not(windows))]
        self.list(dir, listing)
    }
}

/// `std::fs::FileType` as the seam's.
pub(crate) fn kind_of_std(t: std::fs::FileType) -> FileType {
    if t.is_file() {
        return FileType::File;
    }
    if t.is_dir() {
        return FileType::Dir;
    }
    if t.is_symlink() {
        return FileType::Symlink;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return FileType::Fifo;
        }
        if t.is_socket() {
            return FileType::Socket;
        }
        if t.is_block_device() || t.is_char_device() {
            return FileType::Device;
        }
    }
    FileType::Unknown
}

#[cfg(target_os = "linux")]
mod fast {
    use super::*;
    use rustix::fd::{AsFd, OwnedFd};
    use rustix::fs::{AtFlags, Mode, OFlags, RawDir};
    use std::mem::MaybeUninit;
    use std::sync::OnceLock;

    /// A directory descriptor, and whether its filesystem reads regular
    /// files whole, asked once, when the first of its files is opened (a
    /// walk that opens no file, glob's, never asks).
    #[derive(Debug)]
    pub(super) struct DirFd {
        pub(super) fd: OwnedFd,
        reads_whole: OnceLock<bool>,
    }

    /// The filesystems (`statfs(2)`'s `f_type`) whose regular files are
    /// read through the page cache by `filemap_read` (mm/filemap.c), or
    /// handed to the filesystem of a layer (overlayfs: a container's root,
    /// whose layers are such filesystems; one stacked on FUSE would not
    /// be, and is not told apart here): `read(2)` fills the buffer
    /// unless the file ends, so a short read means the end of the file. The
    /// exceptions are a fatal signal, which ends the process anyway, and an
    /// I/O error after some bytes were read, which the next read would
    /// report and which is then not seen. Not on the list: procfs, sysfs
    /// and FUSE (a short read is a page or whatever the server answered),
    /// and network filesystems.
    const READS_WHOLE: [i64; 6] = [
        0xEF53,      // ext2, ext3, ext4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0xF2F5_2010, // f2fs
        0x794C_7630, // overlayfs
    ];

    impl DirFd {
        fn new(fd: OwnedFd) -> DirFd {
            DirFd {
                fd,
                reads_whole: OnceLock::new(),
            }
        }

        /// Whether a short read of one of this directory's regular files
        /// means that it ended ([`READS_WHOLE`]).
        pub(super) fn reads_whole(&self) -> bool {
            *self.reads_whole.get_or_init(|| {
                #[allow(clippy::unnecessary_cast, trivial_numeric_casts)]
                rustix::fs::fstatfs(&self.fd)
                    .is_ok_and(|st| READS_WHOLE.contains(&(st.f_type as i64)))
            })
        }
    }

    pub(super) fn open_dir(at: impl AsFd, path: &OsStr) -> io::Result<DirFd> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(DirFd::new(rustix::fs::openat(
            at,
            path,
            flags,
            Mode::empty(),
        )?))
    }

    pub(super) fn kind(ft: rustix::fs::FileType) -> FileType {
        use rustix::fs::FileType as T;
        match ft {
            T::RegularFile => FileType::File,
            T::Directory => FileType::Dir,
            T::Symlink => FileType::Symlink,
            T::Fifo => FileType::Fifo,
            T::Socket => FileType::Socket,
            T::CharacterDevice | T::BlockDevice => FileType::Device,
            T::Unknown => FileType::Unknown,
        }
    }

    pub(super) fn list(fd: &OwnedFd, listing: &mut Listing) {
        let buf = &mut listing.scratch;
        if buf.capacity() < LISTING_BUF {
            *buf = Vec::with_capacity(LISTING_BUF);
        }
        let spare: &mut [MaybeUninit<u8>] = buf.spare_capacity_mut();
        let mut dir = RawDir::new(fd.as_fd(), spare);
        while let Some(entry) = dir.next() {
            match entry {
                Ok(e) => {
                    let name = e.file_name().to_bytes();
                    let kind = kind(e.file_type());
                    if name == b"." || name == b".." || super::super::is_staging(name, kind) {
                        continue;
                    }
                    listing.names.extend_from_slice(name);
                    listing.entries.push((listing.names.len(), kind));
                }
                Err(e) => {
                    // `std::fs::ReadDir` yields one error and ends.
                    listing.error = Some(e.into());
                    break;
                }
            }
        }
    }

    pub(super) fn stat_at(fd: &OwnedFd, name: &OsStr, follow: bool) -> io::Result<Metadata> {
        let flags = if follow {
            AtFlags::empty()
        } else {
            AtFlags::SYMLINK_NOFOLLOW
        };
        let st = rustix::fs::statat(fd, name, flags)?;
        #[allow(clippy::unnecessary_cast, trivial_numeric_casts)]
        Ok(Metadata {
            kind: kind(rustix::fs::FileType::from_raw_mode(st.st_mode)),
            len: st.st_size as u64,
            mtime: Some((st.st_mtime as i64, st.st_mtime_nsec as u32)),
            mode: st.st_mode & 0o7777,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            ctime: Some((st.st_ctime as i64, st.st_ctime_nsec as u32)),
            links: st.st_nlink as u64,
        })
    }

    pub(super) fn open_at(fd: &OwnedFd, name: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(
            fd,
            name,
            flags,
            Mode::empty(),
        )?))
    }
}

impl FileSystem for LocalFs {
    type Dir = LocalDir;
    type File = LocalFile;

    /// `std::fs::canonicalize`, as the `ignore` crate calls it for the
    /// walk root's parents (`dir.rs: add_parents`). On Windows that is the
    /// verbatim form (`\\?\C:\w`), which rg.exe prints in the names of
    /// those parents' ignore files (`docs/rg-semantics.md` §13); the file
    /// tools show paths without it (`fs::resolve`).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    /// Windows: the absolute path as given (`GetFullPathNameW`, what
    /// `std::path::absolute` calls), without a trailing separator, as
    /// `GetCurrentDirectoryW` reports the directory a process was started
    /// in: neither symlinks nor junctions resolved, the letter case kept, no
    /// verbatim prefix. Unix: the real path, as `getcwd` reports it.
    fn current_dir(&self, workdir: &Path) -> io::Result<PathBuf> {
        #[cfg(windows)]
        {
            let abs = std::path::absolute(workdir)?;
            std::fs::metadata(&abs)?;
            Ok(crate::names::trim_trailing_separators(abs))
        }
        #[cfg(not(windows))]
        std::fs::canonicalize(workdir)
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        std::fs::metadata(path).map(|m| from_std(&m))
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        std::fs::symlink_metadata(path).map(|m| from_std(&m))
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    fn open_dir(&self, path: &Path) -> io::Result<LocalDir> {
        #[cfg(target_os = "linux")]
        if self.fast() {
            return fast::open_dir(rustix::fs::CWD, path.as_os_str()).map(|d| LocalDir(Dir::Fd(d)));
        }
        // `read_dir` is what fails for a directory that cannot be listed;
        // the portable path opens it to report that error here too.
        std::fs::read_dir(path)?;
        Ok(LocalDir(Dir::Path(path.to_path_buf())))
    }

    fn open_dir_at(
        &self,
        parent: &LocalDir,
        parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<LocalDir> {
        match &parent.0 {
            #[cfg(target_os = "linux")]
            Dir::Fd(d) => fast::open_dir(&d.fd, name).map(|d| LocalDir(Dir::Fd(d))),
            Dir::Path(_) => {
                let path = parent_path.join(name);
                std::fs::read_dir(&path)?;
                Ok(LocalDir(Dir::Path(path)))
            }
        }
    }

    fn list(&self, dir: &LocalDir, listing: &mut Listing) {
        listing.clear();
        match &dir.0 {
            #[cfg(target_os = "linux")]
            Dir::Fd(d) => fast::list(&d.fd, listing),
            Dir::Path(path) => {
                let rd = match std::fs::read_dir(path) {
                    Ok(rd) => rd,
                    Err(e) => return listing.fail(e),
                };
                for entry in rd {
                    match entry {
                        Ok(e) => {
                            // `DirEntry::file_type` falls back to `lstat`;
                            // an error there is the caller's to report
                            // (`Unknown` makes it stat the entry).
                            let kind = e.file_type().map_or(FileType::Unknown, kind_of_std);
                            let name = e.file_name();
                            let name = crate::names::os_bytes(&name);
                            if super::is_staging(name, kind) {
                                continue;
                            }
                            listing.push(name, kind);
                            // Windows lists each entry's attributes with it
                            // (`DirEntry::metadata` asks no more of the
                            // disk), as rg's walk reads them.
                            #[cfg(windows)]
                            if e.metadata().is_ok_and(|m| {
                                use std::os::windows::fs::MetadataExt;
                                m.file_attributes() & FILE_ATTRIBUTE_HIDDEN != 0
                            }) {
                                listing.set_hidden();
                            }
                        }
                        Err(e) => return listing.fail(e),
                    }
                }
            }
        }
    }

    fn metadata_at(
        &self,
        dir: &LocalDir,
        dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        match &dir.0 {
            #[cfg(target_os = "linux")]
            Dir::Fd(d) => fast::stat_at(&d.fd, name, follow),
            Dir::Path(_) => {
                let path = dir_path.join(name);
                if follow {
                    self.metadata(&path)
                } else {
                    self.symlink_metadata(&path)
                }
            }
        }
    }

    fn open_at(&self, dir: &LocalDir, dir_path: &Path, name: &OsStr) -> io::Result<LocalFile> {
        let file = match &dir.0 {
            #[cfg(target_os = "linux")]
            Dir::Fd(d) if d.reads_whole() => OpenFile::Whole {
                file: fast::open_at(&d.fd, name)?,
                ended: false,
            },
            #[cfg(target_os = "linux")]
            Dir::Fd(d) => OpenFile::File(fast::open_at(&d.fd, name)?),
            Dir::Path(_) => OpenFile::File(File::open(dir_path.join(name))?),
        };
        Ok(LocalFile(file))
    }

    /// Opened `O_NONBLOCK` and its kind asked of the open file (one path
    /// lookup, where a `stat` of the path then an `open` made two: a third
    /// of a candidate's cost when the index hands files by path): a FIFO
    /// is read without blocking (`fifo.rs`), anything else but a regular
    /// file has the flag cleared, so that it reads as rg's blocking open
    /// would (the flag changes nothing for a regular file).
    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<LocalFile> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            let file = open_nonblocking(path)?;
            let kind = file.metadata()?.file_type();
            if kind.is_fifo() {
                let fifo = super::fifo::FifoReader::of(file, cancel.clone());
                return Ok(LocalFile(OpenFile::Fifo(fifo)));
            }
            if !kind.is_file() {
                let flags = rustix::fs::fcntl_getfl(&file)?;
                rustix::fs::fcntl_setfl(&file, flags - rustix::fs::OFlags::NONBLOCK)?;
            }
            Ok(LocalFile(OpenFile::File(file)))
        }
        #[cfg(not(unix))]
        {
            let _ = cancel;
            File::open(path).map(|f| LocalFile(OpenFile::File(f)))
        }
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut f = open_nonblocking(path)?;
        if !f.metadata()?.is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        let mut data = Vec::new();
        f.read_to_end(&mut data)?;
        Ok(data)
    }

    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)> {
        // Opened without blocking and checked on the open file: a FIFO or a
        // device swapped in after the caller's stat is never read, and the
        // metadata is that of the bytes read.
        let file = match open_nonblocking(path) {
            Ok(f) => f,
            // A socket cannot be opened at all (ENXIO), nor a directory on
            // some platforms: say what it is rather than why it failed.
            Err(e) => {
                return match self.metadata(path) {
                    Ok(m) if !m.kind.is_file() => Ok((m, None)),
                    _ => Err(e),
                }
            }
        };
        let metadata = from_std(&file.metadata()?);
        if !metadata.kind.is_file() || metadata.len > max {
            return Ok((metadata, None));
        }
        let mut bytes = Vec::new();
        file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
        let fits = bytes.len() as u64 <= max;
        Ok((metadata, fits.then_some(bytes)))
    }

    fn git_global_excludes(&self, workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        let found = match &self.git_excludes {
            Some(file) => file.clone(),
            None => ignore::gitignore::gitconfig_excludes_path()?,
        };
        let path = workdir.join(found);
        // rg reads it with a blocking open, like the other ignore files; a
        // FIFO there is read as absent (the same deliberate difference).
        let data = self.read_control(&path).ok()?;
        Some((path, data))
    }
}

impl FsHints for LocalFs {}

impl FsWrite for LocalFs {
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        super::write_from(self, path, &mut &content[..], guard, cancel)
    }

    fn write_from(
        &self,
        path: &Path,
        content: &mut dyn Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        super::write_from(self, path, content, guard, cancel)
    }
}

/// `winnt.h`'s `FILE_ATTRIBUTE_HIDDEN`.
#[cfg(windows)]
const FILE_ATTRIBUTE_HIDDEN: u32 = 0x2;

/// Open for reading without ever blocking in `open(2)`: a FIFO (or a
/// device) in place of a control file is then refused by the caller's type
/// check instead of hanging the walk until a writer shows up.
fn open_nonblocking(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(path)
    }
    #[cfg(not(unix))]
    {
        File::open(path)
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;

    fn dir_fd(dir: &LocalDir) -> &fast::DirFd {
        match &dir.0 {
            Dir::Fd(d) => d,
            Dir::Path(_) => panic!("the fast path lists by descriptor"),
        }
    }

    /// Whether `path`'s filesystem is one of those `statfs(2)` calls a
    /// whole-reading one, by the name coreutils' `stat -f` gives its type
    /// (an oracle apart from the engine's own table).
    fn reads_whole_by_name(path: &Path) -> bool {
        let out = std::process::Command::new("stat")
            .args(["-f", "-c", "%T"])
            .arg(path)
            .output()
            .expect("stat runs");
        assert!(out.status.success(), "stat -f {}", path.display());
        let name = String::from_utf8(out.stdout).unwrap();
        ["ext2/ext3", "xfs", "btrfs", "tmpfs", "f2fs", "overlayfs"].contains(&name.trim())
    }

    /// procfs hands out a file's bytes a page or a record at a
    /// time: a short read there is not the end of the file, and every read
    /// is made.
    #[test]
    fn procfs_is_not_read_whole() {
        let fs = LocalFs::new();
        for path in ["/proc/self", "/proc/sys/kernel"] {
            assert!(!reads_whole_by_name(Path::new(path)), "{path}");
            let dir = fs.open_dir(Path::new(path)).unwrap();
            assert!(!dir_fd(&dir).reads_whole(), "{path}");
        }
        let dir = fs.open_dir(Path::new("/proc/self")).unwrap();
        let file = fs
            .open_at(&dir, Path::new("/proc/self"), OsStr::new("status"))
            .unwrap();
        assert!(matches!(file.0, OpenFile::File(_)));
    }

    /// A file read through a directory of the temporary directory's
    /// filesystem: its bytes whatever the size of the reads, and, where
    /// that filesystem reads whole, nothing more once a read came back
    /// short (bytes appended since are not seen: the file had ended);
    /// elsewhere every read is made and the appended bytes are read.
    #[test]
    fn a_short_read_ends_a_file_of_a_filesystem_read_whole() {
        let td = tempfile::tempdir().unwrap();
        let whole = reads_whole_by_name(td.path());
        let fs = LocalFs::new();
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(td.path().join("f"), &data).unwrap();
        let dir = fs.open_dir(td.path()).unwrap();
        assert_eq!(dir_fd(&dir).reads_whole(), whole);
        for step in [1, 7, 4096, 65_536, 99_999, 100_000, 100_001, 1 << 20] {
            let mut file = fs.open_at(&dir, td.path(), OsStr::new("f")).unwrap();
            let mut got = Vec::new();
            let mut buf = vec![0; step];
            loop {
                let n = file.read(&mut buf).unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
                if n < step {
                    // Short: the end, or (elsewhere) maybe not.
                    let mut more = std::fs::OpenOptions::new()
                        .append(true)
                        .open(td.path().join("f"))
                        .unwrap();
                    more.write_all(b"appended").unwrap();
                    let after = file.read(&mut buf).unwrap();
                    assert_eq!(after == 0, whole, "step {step}: read after a short read");
                    std::fs::write(td.path().join("f"), &data).unwrap();
                    break;
                }
            }
            assert_eq!(got, data, "step {step}");
        }
    }
}
