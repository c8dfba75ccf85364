//! [`TestFs`]: a filesystem of the seam that is not the local disk as the
//! tools see it. Host directories are shown at other absolute paths (or at
//! their own, confined), and every path outside them does not exist; so a
//! tool or a guard that went to the host disk behind the filesystem's back
//! would see another tree (or none) and give itself away. It also counts
//! stats and can run a concurrent writer just before each write is
//! published.

use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use dsh_search::fs::{
    errno, FileSystem, FsHints, FsWrite, Listing, LocalDir, LocalFile, LocalFs, Metadata,
    WriteError, WriteGuard, Written,
};
use dsh_search::CancelToken;

/// What runs before the `n`th write (from 1) reaches the disk, with the
/// host path of its target.
type Hook = Box<dyn FnMut(&Path, usize) + Send>;

/// Host directories seen at other paths; nothing else exists.
pub struct TestFs {
    inner: LocalFs,
    /// (where it is seen, the host directory).
    mounts: Vec<(PathBuf, PathBuf)>,
    stats: AtomicUsize,
    writes: AtomicUsize,
    before_write: Mutex<Option<Hook>>,
}

impl TestFs {
    /// `host` (an existing directory) seen at the absolute path `mount`.
    pub fn mounted(host: &Path, mount: impl Into<PathBuf>) -> TestFs {
        TestFs {
            inner: LocalFs::new(),
            mounts: vec![(mount.into(), std::fs::canonicalize(host).unwrap())],
            stats: AtomicUsize::new(0),
            writes: AtomicUsize::new(0),
            before_write: Mutex::new(None),
        }
    }

    /// `root` at its own path, and nothing outside it.
    pub fn confined(root: &Path) -> TestFs {
        let root = std::fs::canonicalize(root).unwrap();
        TestFs::mounted(&root, root.clone())
    }

    /// Also show `host` at `mount` (which must not be inside another mount).
    pub fn and(mut self, host: &Path, mount: impl Into<PathBuf>) -> TestFs {
        let host = std::fs::canonicalize(host).unwrap();
        self.mounts.push((mount.into(), host));
        self
    }

    /// Run `hook` before every write is handed to the disk: another writer
    /// that gets in between a tool's read and its publish.
    pub fn before_write(self, hook: impl FnMut(&Path, usize) + Send + 'static) -> TestFs {
        *self.before_write.lock().unwrap() = Some(Box::new(hook));
        self
    }

    /// The stats made so far (`metadata` and `symlink_metadata`).
    pub fn stats(&self) -> usize {
        self.stats.load(Ordering::SeqCst)
    }

    /// The writes made so far.
    pub fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }

    /// Where `path` of this filesystem is on the host.
    pub fn host(&self, path: &Path) -> io::Result<PathBuf> {
        let (rest, host) = self
            .mounts
            .iter()
            .find_map(|(mount, host)| Some((path.strip_prefix(mount).ok()?, host)))
            .ok_or_else(errno::not_found)?;
        if rest.components().any(|c| c == Component::ParentDir) {
            return Err(errno::not_found());
        }
        Ok(join(host, rest))
    }

    /// Where the host path `path` is in this filesystem.
    fn unhost(&self, path: PathBuf) -> io::Result<PathBuf> {
        self.mounts
            .iter()
            .find_map(|(mount, host)| Some(join(mount, path.strip_prefix(host).ok()?)))
            .ok_or_else(errno::not_found)
    }

    fn stat(&self) {
        self.stats.fetch_add(1, Ordering::SeqCst);
    }
}

/// `base/rest`, without a trailing separator for an empty `rest`.
fn join(base: &Path, rest: &Path) -> PathBuf {
    if rest.as_os_str().is_empty() {
        base.to_path_buf()
    } else {
        base.join(rest)
    }
}

impl FileSystem for TestFs {
    type Dir = LocalDir;
    type File = LocalFile;

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.unhost(self.inner.canonicalize(&self.host(path)?)?)
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.stat();
        self.inner.metadata(&self.host(path)?)
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.stat();
        self.inner.symlink_metadata(&self.host(path)?)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.inner.read_link(&self.host(path)?)
    }

    fn open_dir(&self, path: &Path) -> io::Result<LocalDir> {
        self.inner.open_dir(&self.host(path)?)
    }

    fn open_dir_at(
        &self,
        parent: &LocalDir,
        parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<LocalDir> {
        self.inner
            .open_dir_at(parent, &self.host(parent_path)?, name)
    }

    fn list(&self, dir: &LocalDir, listing: &mut Listing) {
        self.inner.list(dir, listing)
    }

    fn metadata_at(
        &self,
        dir: &LocalDir,
        dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        self.inner
            .metadata_at(dir, &self.host(dir_path)?, name, follow)
    }

    fn open_at(&self, dir: &LocalDir, dir_path: &Path, name: &OsStr) -> io::Result<LocalFile> {
        self.inner.open_at(dir, &self.host(dir_path)?, name)
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<LocalFile> {
        self.inner.open(&self.host(path)?, cancel)
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.inner.read_control(&self.host(path)?)
    }

    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)> {
        self.inner.read_file(&self.host(path)?, max)
    }

    fn git_global_excludes(&self, _workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        None
    }
}

impl FsHints for TestFs {}

impl FsWrite for TestFs {
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let host = self
            .host(path)
            .map_err(|e| WriteError::Io(path.to_path_buf(), e))?;
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if let Some(hook) = self.before_write.lock().unwrap().as_mut() {
            hook(&host, n);
        }
        self.inner.write(&host, content, guard, cancel)
    }
}
