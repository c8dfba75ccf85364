//! The local disk's publish step: stage the content next to the target,
//! take the target directory's lock, check the guard, give the staged file
//! the old file's owner, group and mode, and rename (or link) it into place.
//!
//! # What is promised, and why it is done this way
//!
//! - **Mutual exclusion between every writer of a file on the machine.** The
//!   lock is an exclusive `flock` on the target's directory itself (see
//!   [`DirLock`]): every process that writes through this code takes it,
//!   whatever its state directory. The guard (`WriteGuard::ReplaceIfVersion`)
//!   is checked inside it, immediately before the rename, so no update is
//!   lost between two processes. Why the directory: a lock on the target
//!   itself does not survive the publish (the rename puts a new inode under
//!   the name, and a writer that opened the new one is not excluded by a
//!   lock on the old one), and a lock file beside the target is a leftover
//!   in the user's tree (rg lists it; removing it races with the next
//!   writer that opened it). The directory is the one inode every writer of
//!   the name shares for as long as the name exists; the price is that
//!   writers of different files in one directory take turns, for the
//!   moment of a check and a rename. The lock dies with its process.
//! - **The slow part runs outside the lock.** The content (possibly hundreds
//!   of megabytes, possibly still arriving on a pipe) is staged and synced
//!   first; the lock is held only for the check, the owner and mode, and
//!   the rename.
//! - **A cancelled call never mutates.** The lock wait polls the call's
//!   token, and the token is checked once more, under the lock, right
//!   before the rename.
//! - **Owner, group, set-id bits.** The staged file gets the replaced file's
//!   owner and group (`fchown`, which only root or the owner can do) before
//!   its mode; where that fails, the set-uid bit is dropped when the owner
//!   differs and the set-gid bit when the group differs, so a file is never
//!   published set-id for someone who did not own it.
//! - **A hard-linked target** gets a new inode under the name written: the
//!   other names keep the old content (the link is broken), as with git, an
//!   editor's atomic save or `cargo`'s `write_atomic`. Writing in place
//!   instead would give up atomicity and silently change files the caller
//!   did not name (a `cp -al` snapshot, a package store).
//! - **The sweeper removes only what provably is ours.** A staging directory
//!   holds a marker file that only this code writes, locked (`flock`) by its
//!   live writer for as long as the write runs; a leftover is removed only
//!   when its marker reads exactly [`MARKER_TEXT`] and its lock can be
//!   taken (its writer is gone, whatever PID namespace it ran in), and then
//!   only the two files this code creates, and the directory if that leaves
//!   it empty.
//!
//! # Platform behavior
//!
//! On Unix all of the above. Elsewhere there is no `flock`: writers in one
//! process exclude each other, other processes do not; owners are not
//! copied; staging leftovers of a killed writer are never swept. On
//! Windows the rename is retried while another process holds the target
//! open without delete sharing, and then fails clearly ([`replace`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use dsh_search_base::cancel::CancelToken;

use crate::FileType;

/// The prefix of staging directories.
pub(crate) const STAGING_PREFIX: &str = ".dsh-search-staging.";

/// Whether a listed entry is a staging directory of the atomic write (a
/// directory, or an entry of unknown kind, named with [`STAGING_PREFIX`]).
/// One exists while a write into its directory is in flight, and a killed
/// writer's stays until the next write there sweeps it: never part of a
/// listing of the local disk (`contract.md` §10), so a search neither lists
/// it nor fails when it vanishes under the walk. The name is reserved.
pub(crate) fn is_staging(name: &[u8], kind: FileType) -> bool {
    matches!(kind, FileType::Dir | FileType::Unknown) && name.starts_with(STAGING_PREFIX.as_bytes())
}

/// The marker file in a staging directory.
const MARKER: &str = "dsh-search-staging";

/// What the marker says, exactly: written only after its writer holds the
/// marker's lock, so a sweeper that reads it whole and then fails to take
/// the lock knows the writer is alive.
pub(crate) const MARKER_TEXT: &[u8] =
    b"dsh-search staging directory: removed by dsh-search once its writer is gone\n";

/// The staged content's file name.
const CONTENT: &str = "content";

/// How often a wait for a lock held by another writer looks at the call's
/// cancellation.
#[cfg(unix)]
const LOCK_POLL: Duration = Duration::from_millis(10);

/// The size of a chunk copied from a streamed source.
const COPY_CHUNK: usize = 64 * 1024;

/// Why staging failed.
#[derive(Debug)]
pub(crate) enum StageError {
    /// Reading the content failed (the source's error).
    Source(io::Error),
    /// The call was cancelled.
    Cancelled,
    /// Writing the staged file failed.
    Io(io::Error),
}

/// A private (0700) staging directory with its marker (locked while this
/// value lives) and its content file; removed with both on drop.
pub(crate) struct Staging {
    dir: PathBuf,
    /// Holds the marker's `flock` while the write runs. Both files are
    /// closed before the directory is removed (`None` only in `drop`):
    /// Windows does not remove a directory while a file in it is open.
    marker: Option<File>,
    file: Option<File>,
}

impl Staging {
    /// Create a staging directory in `parent` (after sweeping the dead
    /// writers' leftovers there) and copy `content` into it, checking
    /// `cancel` between chunks, then sync it.
    pub(crate) fn fill(
        parent: &Path,
        content: &mut dyn Read,
        cancel: &CancelToken,
    ) -> Result<Staging, StageError> {
        let staging = Staging::create(parent).map_err(StageError::Io)?;
        let mut buf = vec![0u8; COPY_CHUNK];
        loop {
            if cancel.is_cancelled() {
                return Err(StageError::Cancelled);
            }
            let n = match content.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) if cancel.is_cancelled() => return Err(StageError::Cancelled),
                Err(e) => return Err(StageError::Source(e)),
            };
            staging
                .file()
                .write_all(&buf[..n])
                .map_err(StageError::Io)?;
        }
        staging.file().sync_all().map_err(StageError::Io)?;
        Ok(staging)
    }

    fn create(parent: &Path) -> io::Result<Staging> {
        sweep_dead_staging(parent);
        let mut rnd = [0u8; 6];
        getrandom::fill(&mut rnd).map_err(|e| io::Error::other(e.to_string()))?;
        let hex: String = rnd.iter().map(|b| format!("{b:02x}")).collect();
        let dir = parent.join(format!("{STAGING_PREFIX}{}.{hex}", std::process::id()));
        #[cfg(unix)]
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
        #[cfg(not(unix))]
        std::fs::DirBuilder::new().create(&dir)?;
        // From here on the directory is removed on every way out.
        let cleanup = RemoveOnDrop(Some(dir.clone()));
        let mut marker = new_file(&dir.join(MARKER))?;
        // Best effort: where the filesystem cannot lock (NFS without a lock
        // daemon), a sweeper cannot lock the marker either, and leaves it.
        #[cfg(unix)]
        let _ = rustix::fs::flock(&marker, rustix::fs::FlockOperation::LockExclusive);
        marker.write_all(MARKER_TEXT)?;
        let file = new_file(&dir.join(CONTENT))?;
        let dir = cleanup.disarm();
        Ok(Staging {
            dir,
            marker: Some(marker),
            file: Some(file),
        })
    }

    /// The staged content's open file.
    fn file(&self) -> &File {
        self.file.as_ref().expect("open until drop")
    }

    /// The staged content's path.
    pub(crate) fn content_path(&self) -> PathBuf {
        self.dir.join(CONTENT)
    }

    /// Give the staged file the mode `mode`, and the owner and group of the
    /// file it replaces (`old`, when there is one). Where the owner or group
    /// cannot be kept, the set-id bit that would grant it is dropped.
    pub(crate) fn adopt(&self, old: Option<&std::fs::Metadata>, mode: u32) -> io::Result<()> {
        #[cfg(unix)]
        {
            let mut mode = mode & 0o7777;
            if let Some(old) = old {
                let mine = self.file().metadata()?;
                if (mine.uid(), mine.gid()) != (old.uid(), old.gid()) {
                    // Root keeps both; an owner who is a member of the old
                    // group keeps the group. Any other failure is handled by
                    // the bits below.
                    if std::os::unix::fs::fchown(self.file(), Some(old.uid()), Some(old.gid()))
                        .is_err()
                    {
                        let _ = std::os::unix::fs::fchown(self.file(), None, Some(old.gid()));
                    }
                    let now = self.file().metadata()?;
                    if now.uid() != old.uid() {
                        mode &= !0o6000;
                    }
                    if now.gid() != old.gid() {
                        mode &= !0o2000;
                    }
                }
            }
            // After the chown, which may clear set-id bits; and exactly, as
            // the open's mode passed through the umask.
            self.file()
                .set_permissions(std::fs::Permissions::from_mode(mode))?;
        }
        #[cfg(not(unix))]
        {
            let _ = old;
            if mode & 0o222 == 0 {
                let mut p = self.file().metadata()?.permissions();
                p.set_readonly(true);
                self.file().set_permissions(p)?;
            }
        }
        Ok(())
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        drop(self.file.take());
        drop(self.marker.take());
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Removes a directory tree on drop unless disarmed.
struct RemoveOnDrop(Option<PathBuf>);

impl RemoveOnDrop {
    fn disarm(mut self) -> PathBuf {
        self.0.take().unwrap_or_default()
    }
}

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        if let Some(dir) = &self.0 {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A new file (0600 on Unix), opened for writing; never an existing one.
fn new_file(path: &Path) -> io::Result<File> {
    let mut options = OpenOptions::new();
    options.read(true).write(true).create_new(true);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path)
}

/// Remove the staging directories in `dir` whose writer is gone: those whose
/// marker reads exactly [`MARKER_TEXT`] and whose lock is free. Anything
/// else named like one (a user's `.dsh-search-staging.4000000.notes/`, a
/// live writer's directory in another PID namespace) is left alone.
pub(crate) fn sweep_dead_staging(dir: &Path) {
    #[cfg(unix)]
    {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in rd.flatten() {
            let name = entry.file_name();
            if !name
                .as_encoded_bytes()
                .starts_with(STAGING_PREFIX.as_bytes())
            {
                continue;
            }
            let path = entry.path();
            if std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                remove_if_abandoned(&path);
            }
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Remove the staging directory `dir` if it provably is one of ours and its
/// writer is gone.
#[cfg(unix)]
fn remove_if_abandoned(dir: &Path) {
    use rustix::fs::{FlockOperation, OFlags};
    let marker_path = dir.join(MARKER);
    // Read-write: NFS maps flock to a write lock, which needs it.
    let Ok(mut marker) = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags((OFlags::NOFOLLOW | OFlags::NONBLOCK).bits() as i32)
        .open(&marker_path)
    else {
        return;
    };
    if !marker.metadata().is_ok_and(|m| m.is_file()) {
        return;
    }
    let mut text = Vec::new();
    let limit = MARKER_TEXT.len() as u64 + 1;
    if (&mut marker).take(limit).read_to_end(&mut text).is_err() || text != MARKER_TEXT {
        return;
    }
    // A live writer holds it; a dead one's was released by the kernel.
    if rustix::fs::flock(&marker, FlockOperation::NonBlockingLockExclusive).is_err() {
        return;
    }
    let content = dir.join(CONTENT);
    if std::fs::symlink_metadata(&content).is_ok_and(|m| m.is_file()) {
        let _ = std::fs::remove_file(&content);
    }
    let _ = std::fs::remove_file(&marker_path);
    // Only when nothing else is in it.
    let _ = std::fs::remove_dir(dir);
}

/// The exclusive lock of a target directory, across processes: an `flock`
/// on the directory itself, released when this value drops (or its process
/// dies).
///
/// # Platform behavior
///
/// On Unix, `flock(2)` on a read-only descriptor of the directory. A
/// directory that cannot be opened for reading (mode `-wx`) or locked (on
/// NFS) gets no lock across processes, nor does any directory elsewhere
/// than on Unix.
pub(crate) struct DirLock {
    _dir: Option<File>,
}

impl DirLock {
    /// Wait for the lock of `dir`, until `cancel` is set.
    pub(crate) fn acquire(dir: &Path, cancel: &CancelToken) -> Result<DirLock, LockError> {
        #[cfg(unix)]
        {
            use rustix::fs::FlockOperation;
            let Ok(file) = File::open(dir) else {
                return Ok(DirLock { _dir: None });
            };
            loop {
                if cancel.is_cancelled() {
                    return Err(LockError::Cancelled);
                }
                // Polled, not blocking: a blocking flock restarts after the
                // signal handler runs (SA_RESTART) and would never see the
                // cancellation.
                match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                    Ok(()) => return Ok(DirLock { _dir: Some(file) }),
                    Err(rustix::io::Errno::WOULDBLOCK) | Err(rustix::io::Errno::INTR) => {
                        std::thread::sleep(LOCK_POLL);
                    }
                    // A filesystem that cannot lock a directory (NFS maps
                    // flock to a write lock, which needs a descriptor open
                    // for writing: EBADF; ENOLCK without a lock daemon):
                    // like an unreadable directory, no lock across
                    // processes, rather than no write at all.
                    Err(_) => return Ok(DirLock { _dir: None }),
                }
            }
        }
        #[cfg(not(unix))]
        {
            let _ = (dir, cancel);
            Ok(DirLock { _dir: None })
        }
    }
}

/// Why the staged file was not renamed over its target.
#[derive(Debug)]
pub(crate) enum ReplaceError {
    /// The call was cancelled while another process held the target open
    /// (on Windows only: elsewhere the rename is one call, never retried).
    #[cfg_attr(not(windows), allow(dead_code))]
    Cancelled,
    /// The rename failed (on Windows, after the retries for a target held
    /// open elsewhere: then with [`io::ErrorKind::ResourceBusy`] and a
    /// message that says so).
    Io(io::Error),
}

/// How long a rename over a target that another process holds open is
/// retried before the write fails (`contract.md` §10: the file tools'
/// atomic writes on Windows). The call's cancellation or timeout ends it
/// sooner.
#[cfg(windows)]
pub(crate) const HELD_RETRY_LIMIT: Duration = Duration::from_secs(5);

/// The longest pause between two tries of such a rename; the first is
/// 5 ms, and each doubles.
#[cfg(windows)]
const HELD_RETRY_MAX_PAUSE: Duration = Duration::from_millis(100);

/// Rename the staged file `from` over `to` (create or replace).
///
/// # Platform behavior
///
/// On Unix one `rename(2)`: it replaces the name whoever has the old file
/// open. On Windows a file that another process holds open without
/// `FILE_SHARE_DELETE` (most programs open files so) cannot be replaced:
/// the rename fails with `ERROR_ACCESS_DENIED` or
/// `ERROR_SHARING_VIOLATION` for as long as it is held. Such a failure is
/// retried, with a pause that grows from 5 ms to 100 ms, until the rename
/// succeeds, the call is cancelled (its timeout included) or
/// [`HELD_RETRY_LIMIT`] passes; then the write fails with an error that
/// says another process holds the file open, the old file whole and the
/// staged one removed by the caller. An access denial that is not a held
/// file (a read-only target, an ACL) fails at once: the target is opened
/// for `DELETE` with full sharing, and only a sharing violation there
/// says that someone else holds it.
pub(crate) fn replace(from: &Path, to: &Path, cancel: &CancelToken) -> Result<(), ReplaceError> {
    #[cfg(not(windows))]
    {
        let _ = cancel;
        std::fs::rename(from, to).map_err(ReplaceError::Io)
    }
    #[cfg(windows)]
    {
        let start = std::time::Instant::now();
        let mut pause = Duration::from_millis(5);
        loop {
            let e = match std::fs::rename(from, to) {
                Ok(()) => return Ok(()),
                Err(e) if held_elsewhere(&e, to) => e,
                Err(e) => return Err(ReplaceError::Io(e)),
            };
            // A timeout says why the write failed: the file is held; an
            // explicit cancellation is only a cancellation.
            if cancel.is_cancelled() && !cancel.timed_out() {
                return Err(ReplaceError::Cancelled);
            }
            if cancel.is_cancelled() || start.elapsed() >= HELD_RETRY_LIMIT {
                return Err(ReplaceError::Io(io::Error::new(
                    io::ErrorKind::ResourceBusy,
                    format!(
                        "another process holds the file open, and Windows does not replace \
                         a file that is open without delete sharing (tried for {} ms: {}); \
                         close it there and try again",
                        start.elapsed().as_millis(),
                        crate::error::io_message(&e),
                    ),
                )));
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(HELD_RETRY_MAX_PAUSE);
        }
    }
}

/// Whether the failed rename over `to` failed because another process
/// holds `to` open without delete sharing: a sharing violation, or an
/// access denial while opening `to` for `DELETE` with full sharing is a
/// sharing violation.
#[cfg(windows)]
fn held_elsewhere(e: &io::Error, to: &Path) -> bool {
    use std::os::windows::fs::OpenOptionsExt;
    // See: https://learn.microsoft.com/windows/win32/debug/system-error-codes--0-499-
    const ERROR_ACCESS_DENIED: i32 = 5;
    const ERROR_SHARING_VIOLATION: i32 = 32;
    // See: https://learn.microsoft.com/windows/win32/secauthz/standard-access-rights
    const DELETE: u32 = 0x0001_0000;
    // FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE
    const SHARE_ALL: u32 = 0x7;
    match e.raw_os_error() {
        Some(ERROR_SHARING_VIOLATION) => true,
        Some(ERROR_ACCESS_DENIED) => OpenOptions::new()
            .access_mode(DELETE)
            .share_mode(SHARE_ALL)
            .open(to)
            .is_err_and(|p| p.raw_os_error() == Some(ERROR_SHARING_VIOLATION)),
        _ => false,
    }
}

/// Why a lock was not taken.
#[derive(Debug)]
pub(crate) enum LockError {
    /// The call was cancelled while waiting.
    Cancelled,
}

/// How long a cancelled in-process lock wait may keep waiting.
pub(crate) const IN_PROCESS_POLL: Duration = Duration::from_millis(20);

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
        let staging = Staging::fill(tmp.path(), &mut &b"x"[..], &CancelToken::new()).unwrap();
        let mode = std::fs::metadata(&staging.dir)
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        assert_eq!(std::fs::read(staging.content_path()).unwrap(), b"x");
        drop(staging);
        assert!(entries(tmp.path()).is_empty());
    }

    #[test]
    fn cancelled_staging_leaves_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let cancel = CancelToken::new();
        cancel.cancel();
        assert!(matches!(
            Staging::fill(tmp.path(), &mut &b"x"[..], &cancel),
            Err(StageError::Cancelled)
        ));
        assert!(entries(tmp.path()).is_empty());
    }

    #[test]
    fn sweeper_removes_abandoned_keeps_live_and_foreign() {
        let tmp = tempfile::tempdir().unwrap();
        // Abandoned: our marker, nobody holds its lock.
        let dead = tmp
            .path()
            .join(format!("{STAGING_PREFIX}4000000.aaaaaaaaaaaa"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(MARKER), MARKER_TEXT).unwrap();
        std::fs::write(dead.join(CONTENT), "partial").unwrap();
        // A user's directory with the same prefix and a made-up pid.
        let user = tmp.path().join(format!("{STAGING_PREFIX}4000000.notes"));
        std::fs::create_dir(&user).unwrap();
        std::fs::write(user.join("todo.txt"), "mine").unwrap();
        // A live writer (this process, another descriptor): locked.
        let live = Staging::fill(tmp.path(), &mut &b"y"[..], &CancelToken::new()).unwrap();
        sweep_dead_staging(tmp.path());
        assert!(!dead.exists());
        assert_eq!(std::fs::read(user.join("todo.txt")).unwrap(), b"mine");
        assert_eq!(std::fs::read(live.content_path()).unwrap(), b"y");
    }

    #[test]
    fn sweeper_keeps_extra_files_in_a_marked_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join(format!("{STAGING_PREFIX}1.bbbbbbbbbbbb"));
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join(MARKER), MARKER_TEXT).unwrap();
        std::fs::write(dir.join("other"), "keep").unwrap();
        sweep_dead_staging(tmp.path());
        assert_eq!(std::fs::read(dir.join("other")).unwrap(), b"keep");
    }

    #[test]
    fn dir_lock_wait_ends_on_cancel() {
        let tmp = tempfile::tempdir().unwrap();
        let held = DirLock::acquire(tmp.path(), &CancelToken::new()).unwrap();
        let cancel = CancelToken::new();
        let c = cancel.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            c.cancel();
        });
        assert!(matches!(
            DirLock::acquire(tmp.path(), &cancel),
            Err(LockError::Cancelled)
        ));
        t.join().unwrap();
        drop(held);
        assert!(DirLock::acquire(tmp.path(), &CancelToken::new()).is_ok());
    }
}
