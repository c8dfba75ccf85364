//! [`LocalFs`]: the local disk as a [`FileSystem`](crate::fs::FileSystem)
//! (`seed-reference.md` §6.2, §6.6): the read side in `os`, the write here.
//!
//! Every write runs under a per-target lock keyed by the target's real
//! path, so two aliases of one file (symlinks) serialize, and the guard is
//! checked inside it. Content is staged in a private directory next to the
//! target and published atomically: a rename for create-or-replace, a hard
//! link (which never replaces) for create-if-absent.

#[cfg(unix)]
mod fifo;
mod os;

pub(crate) use os::{from_std, kind_of_std};
pub use os::{LocalDir, LocalFile};

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use crate::cancel::CancelToken;
use crate::fs::{WriteError, WriteGuard, Written};

/// The prefix of staging directories. A directory left behind by a process
/// that died mid-write is removed by the next write into the same directory.
pub(crate) const STAGING_PREFIX: &str = ".dsh-search-staging.";

/// The local disk.
#[derive(Debug)]
pub struct LocalFs {
    /// Use the portable `std::fs` path even where a fast path exists.
    portable: bool,
    locks: LockTable,
    lock_dir: Option<PathBuf>,
}

impl Default for LocalFs {
    fn default() -> LocalFs {
        LocalFs::new()
    }
}

impl LocalFs {
    /// A local filesystem with in-process locks only.
    pub fn new() -> LocalFs {
        LocalFs {
            portable: false,
            locks: LockTable::default(),
            lock_dir: None,
        }
    }

    /// The local disk through the portable path on `std::fs` (the only one
    /// on platforms other than Linux), also on Linux: the conformance suite
    /// runs through it there.
    pub fn portable(mut self) -> LocalFs {
        self.portable = true;
        self
    }

    /// Also lock targets across processes, with `flock` on files in `dir`
    /// (created 0700 when missing). The command line uses this so that
    /// concurrent invocations serialize like threads do.
    ///
    /// By default, locks are in-process only.
    pub fn with_lock_dir(mut self, dir: impl Into<PathBuf>) -> LocalFs {
        self.lock_dir = Some(dir.into());
        self
    }
}

/// The seam's write on the local disk: under the target's lock, the guard
/// checked, then staged next to the target and published.
pub(super) fn write_bytes(
    fs: &LocalFs,
    path: &Path,
    content: &[u8],
    guard: &WriteGuard,
    cancel: &CancelToken,
) -> Result<Written, WriteError> {
    let io_err = |e: io::Error| WriteError::Io(path.to_path_buf(), e);
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    fs.locks.acquire(&key);
    let _lock = TargetLock {
        table: &fs.locks,
        key: key.clone(),
        _file: match &fs.lock_dir {
            Some(dir) => Some(file_lock(dir, &key).map_err(io_err)?),
            None => None,
        },
    };
    let old = match std::fs::metadata(path) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(io_err(e)),
    };
    if let Some(m) = &old {
        if !m.is_file() {
            return Err(WriteError::NotRegular(os::from_std(m).kind));
        }
    }
    match (guard, &old) {
        (WriteGuard::ReplaceIfVersion(_), None) => return Err(WriteError::Stale),
        (WriteGuard::ReplaceIfVersion(v), Some(m)) if os::from_std(m).version() != *v => {
            return Err(WriteError::Stale)
        }
        (WriteGuard::CreateIfAbsent, Some(_)) => return Err(WriteError::Exists),
        _ => {}
    }
    if cancel.is_cancelled() {
        return Err(WriteError::Cancelled);
    }
    let mode = old.as_ref().map_or(0o600, |m| os::from_std(m).mode);
    let publish = match guard {
        WriteGuard::CreateIfAbsent => Publish::Link,
        _ => Publish::Rename,
    };
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(io_err)?;
    }
    match stage_and_publish(path, content, mode, publish) {
        Ok(()) => {}
        Err(PublishError::Exists) => return Err(WriteError::Exists),
        Err(PublishError::Io(e)) => return Err(io_err(e)),
    }
    let metadata = std::fs::metadata(path).map_err(io_err)?;
    Ok(Written {
        replaced: old.is_some(),
        metadata: os::from_std(&metadata),
    })
}

/// How staged content replaces the target.
#[derive(Clone, Copy)]
enum Publish {
    /// `rename`: create or replace.
    Rename,
    /// `link`: create only; fails with [`PublishError::Exists`].
    Link,
}

enum PublishError {
    Exists,
    Io(io::Error),
}

/// Write `bytes` to a fresh file (mode `mode`) in a private staging
/// directory next to `path`, then publish it. The staging directory is
/// removed on every path out, success or failure.
fn stage_and_publish(
    path: &Path,
    bytes: &[u8],
    mode: u32,
    publish: Publish,
) -> Result<(), PublishError> {
    let dir = path.parent().unwrap_or(Path::new("/"));
    let staging = Staging::create(dir).map_err(PublishError::Io)?;
    let tmp = staging.dir.join("content");
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    let mut file = options.open(&tmp).map_err(PublishError::Io)?;
    file.write_all(bytes).map_err(PublishError::Io)?;
    #[cfg(unix)]
    if mode != 0o600 {
        // The open's mode passed through the umask; set the kept mode
        // exactly.
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(PublishError::Io)?;
    }
    #[cfg(not(unix))]
    if mode & 0o222 == 0 {
        let mut p = file.metadata().map_err(PublishError::Io)?.permissions();
        p.set_readonly(true);
        file.set_permissions(p).map_err(PublishError::Io)?;
    }
    file.sync_all().map_err(PublishError::Io)?;
    drop(file);
    match publish {
        Publish::Rename => std::fs::rename(&tmp, path).map_err(PublishError::Io),
        Publish::Link => match std::fs::hard_link(&tmp, path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(PublishError::Exists),
            Err(e) => Err(PublishError::Io(e)),
        },
    }
}

/// A private (0700) staging directory, removed with its content on drop.
struct Staging {
    dir: PathBuf,
}

impl Staging {
    fn create(parent: &Path) -> io::Result<Staging> {
        sweep_dead_staging(parent);
        let mut rnd = [0u8; 6];
        getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
        let hex: String = rnd.iter().map(|b| format!("{b:02x}")).collect();
        let name = format!("{STAGING_PREFIX}{}.{hex}", std::process::id());
        let dir = parent.join(name);
        #[cfg(unix)]
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        #[cfg(not(unix))]
        std::fs::DirBuilder::new().create(&dir)?;
        Ok(Staging { dir })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Remove staging directories in `dir` whose writer process is gone (it was
/// killed mid-write). Our own process's directories belong to writes still
/// in flight on other threads and are left alone.
fn sweep_dead_staging(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let me = std::process::id();
    for entry in rd.flatten() {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(STAGING_PREFIX)) else {
            continue;
        };
        let Some(pid) = rest.split('.').next().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        if pid as u32 == me || process_alive(pid) {
            continue;
        }
        let _ = std::fs::remove_dir_all(entry.path());
    }
}

/// Without a way to probe a process on this platform, every writer is
/// taken to be alive: another process's leftovers stay.
#[cfg(not(unix))]
fn process_alive(_pid: i32) -> bool {
    true
}

#[cfg(unix)]
fn process_alive(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        // EPERM: it exists but is someone else's.
        Some(pid) => !matches!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        ),
        None => false,
    }
}

/// Keys currently locked in this process.
#[derive(Debug, Default)]
struct LockTable {
    held: Mutex<HashSet<PathBuf>>,
    freed: Condvar,
}

impl LockTable {
    fn acquire(&self, key: &Path) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        while held.contains(key) {
            held = self.freed.wait(held).unwrap_or_else(|e| e.into_inner());
        }
        held.insert(key.to_path_buf());
    }

    fn release(&self, key: &Path) {
        let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
        held.remove(key);
        self.freed.notify_all();
    }
}

struct TargetLock<'a> {
    table: &'a LockTable,
    key: PathBuf,
    _file: Option<File>,
}

impl Drop for TargetLock<'_> {
    fn drop(&mut self) {
        self.table.release(&self.key);
    }
}

/// Take an exclusive `flock` on the lock file of `key` in `dir`; it is
/// released when the returned file is closed. Elsewhere than on Unix the
/// file is only created: locks are in-process there.
fn file_lock(dir: &Path, key: &Path) -> io::Result<File> {
    use sha2::Digest;
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    builder.mode(0o700);
    builder.create(dir)?;
    let digest = sha2::Sha256::digest(key.as_os_str().as_encoded_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let mut options = OpenOptions::new();
    options.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    options.mode(0o600);
    let file = options.open(dir.join(format!("{name}.lock")))?;
    #[cfg(unix)]
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn staging_is_private_and_removed_on_drop() {
        let tmp = tempfile::tempdir().unwrap();
        let staging = Staging::create(tmp.path()).unwrap();
        let mode = std::fs::metadata(&staging.dir)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::write(staging.dir.join("content"), "x").unwrap();
        drop(staging);
        assert!(entries(tmp.path()).is_empty());
    }

    #[test]
    fn new_file_is_owner_only() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("f");
        assert!(stage_and_publish(&path, b"x", 0o600, Publish::Rename).is_ok());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(entries(tmp.path()), ["f"]);
    }

    #[test]
    fn failed_rename_leaves_no_staging() {
        // Renaming a file over a non-empty directory fails.
        let tmp = tempfile::tempdir().unwrap();
        let target = tmp.path().join("d");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("inner"), "").unwrap();
        assert!(matches!(
            stage_and_publish(&target, b"x", 0o600, Publish::Rename),
            Err(PublishError::Io(_))
        ));
        assert_eq!(entries(tmp.path()), ["d"]);
    }

    #[test]
    fn dead_writers_staging_is_swept_live_ones_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let dead_dir = tmp
            .path()
            .join(format!("{STAGING_PREFIX}{dead}.aaaaaaaaaaaa"));
        let mine = tmp.path().join(format!(
            "{STAGING_PREFIX}{}.bbbbbbbbbbbb",
            std::process::id()
        ));
        for d in [&dead_dir, &mine] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("content"), "partial").unwrap();
        }
        sweep_dead_staging(tmp.path());
        assert!(!dead_dir.exists());
        assert!(mine.exists());
    }
}
