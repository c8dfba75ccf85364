//! [`LocalFs`]: the local disk as a [`FileSystem`](crate::FileSystem)
//! (`seed-reference.md` §6.2, §6.6): the read side in `os`, the write here.
//!
//! Content is staged in a private directory next to the target, then,
//! under the lock of the target's real directory (held by every writer on
//! the machine, so two aliases of one file and two processes serialize),
//! the guard is checked and the file published atomically: a rename for
//! create-or-replace, a hard link (which never replaces) for
//! create-if-absent. What `publish` promises is listed there.

#[cfg(unix)]
mod fifo;
mod os;
mod publish;

pub(crate) use os::from_std;
pub use os::{LocalDir, LocalFile};
pub(crate) use publish::is_staging;

use std::collections::HashSet;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use dsh_search_base::cancel::CancelToken;
use dsh_search_base::sync::RecoverPoison;
use publish::{DirLock, LockError, ReplaceError, StageError, Staging};

use crate::{WriteError, WriteGuard, Written};

/// The local disk.
#[derive(Debug)]
pub struct LocalFs {
    /// Use the portable `std::fs` path even where a fast path exists.
    portable: bool,
    locks: LockTable,
    /// git's global excludes file when given ([`LocalFs::git_excludes`]).
    git_excludes: Option<PathBuf>,
}

impl Default for LocalFs {
    fn default() -> LocalFs {
        LocalFs::new()
    }
}

impl LocalFs {
    /// The local disk. Writes lock the target's directory across processes
    /// (see the module docs).
    pub fn new() -> LocalFs {
        LocalFs {
            portable: false,
            locks: LockTable::default(),
            git_excludes: None,
        }
    }

    /// The local disk through the portable path on `std::fs` (the only one
    /// on platforms other than Linux), also on Linux: the conformance suite
    /// runs through it there.
    pub fn portable(mut self) -> LocalFs {
        self.portable = true;
        self
    }

    /// git's global excludes file for this workspace, instead of the one
    /// rg finds through this process's environment (`core.excludesFile` in
    /// `$HOME/.gitconfig`, else `$XDG_CONFIG_HOME/git/ignore`): for a
    /// program that serves another user's home, or tests that give the
    /// engine the home they give rg without changing their own
    /// environment. As with SFTP's (`SftpBuilder::git_excludes`), a file
    /// that cannot be read is none. By default, found as rg finds it.
    pub fn git_excludes(mut self, file: impl Into<PathBuf>) -> LocalFs {
        self.git_excludes = Some(file.into());
        self
    }
}

/// The seam's write on the local disk, from a slice or a stream: staged
/// next to the target (outside the lock: it may be large or slow to
/// arrive), then under the lock the guard checked, the owner and mode set
/// and the file published, the cancellation checked last.
pub(super) fn write_from(
    fs: &LocalFs,
    path: &Path,
    content: &mut dyn Read,
    guard: &WriteGuard,
    cancel: &CancelToken,
) -> Result<Written, WriteError> {
    let io_err = |e: io::Error| WriteError::Io(path.to_path_buf(), e);
    // The real path: two aliases of one file lock and publish alike. A
    // missing file (or a dangling symlink) is its own key.
    let key = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    // Fail fast, before staging what may be hundreds of megabytes.
    check(&key, guard)?;
    // A call cancelled already creates no parent directory either, as on
    // the other filesystems (each checks before `mkdir -p`).
    if cancel.is_cancelled() {
        return Err(WriteError::Cancelled);
    }
    let dir = key.parent().unwrap_or(Path::new("/"));
    std::fs::create_dir_all(dir).map_err(io_err)?;
    let staging = Staging::fill(dir, content, cancel).map_err(|e| match e {
        StageError::Source(e) => WriteError::Source(e),
        StageError::Cancelled => WriteError::Cancelled,
        StageError::Io(e) => io_err(e),
    })?;
    let _lock = fs
        .lock(&key, dir, cancel)
        .map_err(|LockError::Cancelled| WriteError::Cancelled)?;
    // The check that counts: under the lock, right before publishing.
    let old = check(&key, guard)?;
    let mode = old.as_ref().map_or(0o600, |m| os::from_std(m).mode);
    staging.adopt(old.as_ref(), mode).map_err(io_err)?;
    if cancel.is_cancelled() {
        return Err(WriteError::Cancelled);
    }
    let tmp = staging.content_path();
    match guard {
        WriteGuard::CreateIfAbsent => match std::fs::hard_link(&tmp, &key) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(WriteError::Exists),
            Err(e) => return Err(io_err(e)),
        },
        _ => publish::replace(&tmp, &key, cancel).map_err(|e| match e {
            ReplaceError::Cancelled => WriteError::Cancelled,
            ReplaceError::Io(e) => io_err(e),
        })?,
    }
    drop(staging);
    let metadata = std::fs::metadata(&key).map_err(io_err)?;
    Ok(Written {
        replaced: old.is_some(),
        metadata: os::from_std(&metadata),
    })
}

/// The target's current state against `guard`: its metadata when it is a
/// regular file, `None` when it does not exist, or why it may not be
/// written. A dangling symlink is not written through, nor replaced: it is
/// not a regular file, whatever the guard (the one rule for a bare and a
/// session write; `link(2)` would refuse it for a create-only write anyway).
fn check(key: &Path, guard: &WriteGuard) -> Result<Option<std::fs::Metadata>, WriteError> {
    let old = match std::fs::metadata(key) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if std::fs::symlink_metadata(key).is_ok_and(|m| m.file_type().is_symlink()) {
                return Err(WriteError::NotRegular(crate::FileType::Symlink));
            }
            None
        }
        Err(e) => return Err(WriteError::Io(key.to_path_buf(), e)),
    };
    guard.admits(old.as_ref().map(os::from_std).as_ref())?;
    Ok(old)
}

impl LocalFs {
    /// Lock `key` within this process, then its directory `dir` across
    /// processes; both waits end when `cancel` is set.
    fn lock(
        &self,
        key: &Path,
        dir: &Path,
        cancel: &CancelToken,
    ) -> Result<TargetLock<'_>, LockError> {
        self.locks.acquire(key, cancel)?;
        // Released again if the directory's lock is not taken.
        let mut held = TargetLock {
            table: &self.locks,
            key: key.to_path_buf(),
            _dir: None,
        };
        held._dir = Some(DirLock::acquire(dir, cancel)?);
        Ok(held)
    }
}

/// Keys currently locked in this process.
#[derive(Debug, Default)]
struct LockTable {
    held: Mutex<HashSet<PathBuf>>,
    freed: Condvar,
}

impl LockTable {
    fn acquire(&self, key: &Path, cancel: &CancelToken) -> Result<(), LockError> {
        let mut held = self.held.lock().recover_poison();
        while held.contains(key) {
            if cancel.is_cancelled() {
                return Err(LockError::Cancelled);
            }
            held = self
                .freed
                .wait_timeout(held, publish::IN_PROCESS_POLL)
                .recover_poison()
                .0;
        }
        held.insert(key.to_path_buf());
        Ok(())
    }

    fn release(&self, key: &Path) {
        let mut held = self.held.lock().recover_poison();
        held.remove(key);
        self.freed.notify_all();
    }
}

struct TargetLock<'a> {
    table: &'a LockTable,
    key: PathBuf,
    _dir: Option<DirLock>,
}

impl Drop for TargetLock<'_> {
    fn drop(&mut self) {
        self.table.release(&self.key);
    }
}
