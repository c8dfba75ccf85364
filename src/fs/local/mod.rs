//! [`LocalFs`]: the [`TextFileSystem`] of the local disk (`seed-reference.md`
//! §6.2, §6.3, §6.6).
//!
//! Every mutation runs under a per-target lock keyed by the target key, so
//! two aliases of one file (symlinks) serialize. Content is staged in a
//! private directory next to the target and published atomically: a rename
//! for create-or-replace, a hard link (which never replaces) for
//! create-if-absent.

mod fifo;
pub(crate) use fifo::FifoReader;
mod os;

pub use os::{LocalDir, LocalFile};

use std::collections::HashSet;
use std::fs::{File, Metadata, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use super::literal::{count_occurrences, normalize_crlf};
use super::text::{decode_strict, NotText, TextDecoder};
use super::{
    resolve, DirEntry, EditOutcome, FileKind, TextFileSystem, FsError, FsErrorCode, LiteralEdit,
    ResolvedPath, Stat, Version, WriteIntent, WriteOperation, WriteOutcome,
};

/// `diffBasisMaxBytes`' default (`seed-reference.md` §9.3): 10 MiB.
pub(crate) const DEFAULT_DIFF_BASIS_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// The prefix of staging directories. A directory left behind by a process
/// that died mid-write is removed by the next write into the same directory.
const STAGING_PREFIX: &str = ".dsh-search-staging.";

/// The size of a streamed chunk.
const CHUNK: usize = 64 * 1024;

/// The local disk.
#[derive(Debug)]
pub struct LocalFs {
    /// Use the portable `std::fs` path even where a fast path exists.
    portable: bool,
    locks: LockTable,
    lock_dir: Option<PathBuf>,
    diff_basis_max_bytes: u64,
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
            diff_basis_max_bytes: DEFAULT_DIFF_BASIS_MAX_BYTES,
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

    /// Old or new content at least this many bytes gets no `before` text.
    ///
    /// By default, 10 MiB.
    pub fn with_diff_basis_max_bytes(mut self, max: u64) -> LocalFs {
        self.diff_basis_max_bytes = max;
        self
    }

    fn lock(&self, target: &ResolvedPath, verb: &str) -> Result<TargetLock<'_>, FsError> {
        self.locks.acquire(&target.key);
        let mut lock = TargetLock {
            table: &self.locks,
            key: target.key.clone(),
            _file: None,
        };
        if let Some(dir) = &self.lock_dir {
            let file = file_lock(dir, &target.key)
                .map_err(|e| FsError::io(verb, &target.display_str(), &e))?;
            lock._file = Some(file);
        }
        Ok(lock)
    }

    fn before_text(&self, path: &Path, old: &Metadata, new_len: usize) -> Option<String> {
        if old.len() >= self.diff_basis_max_bytes || new_len as u64 >= self.diff_basis_max_bytes {
            return None;
        }
        let bytes = read_regular(path).ok()?;
        let text = decode_strict(&bytes, false).ok()?;
        Some(normalize_crlf(text).into_owned())
    }
}

impl TextFileSystem for LocalFs {
    fn resolve(&self, path: &str, cwd: &Path) -> Result<ResolvedPath, FsError> {
        resolve::resolve(path, cwd)
    }

    fn stat(&self, target: &ResolvedPath) -> Result<Option<Stat>, FsError> {
        match std::fs::metadata(&target.key) {
            Ok(m) => Ok(Some(Stat {
                kind: kind_of(&m),
                size: Some(m.len()),
                version: version_of(&m),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FsError::io("stat", &target.display_str(), &e)),
        }
    }

    fn read_text(&self, target: &ResolvedPath) -> Result<String, FsError> {
        let p = target.display_str();
        let bytes = read_regular(&target.key).map_err(|e| e.into_fs("read", &p))?;
        decode_strict(&bytes, false)
            .map(str::to_string)
            .map_err(|nt| not_text("read", &p, nt))
    }

    fn stream_text(
        &self,
        target: &ResolvedPath,
        sink: &mut dyn FnMut(&str) -> bool,
    ) -> Result<(), FsError> {
        let p = target.display_str();
        let mut file = open_regular(&target.key).map_err(|e| e.into_fs("read", &p))?;
        let mut decoder = TextDecoder::new();
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FsError::io("read", &p, &e)),
            };
            let text = decoder
                .push(&buf[..n])
                .map_err(|nt| not_text("read", &p, nt))?;
            if !text.is_empty() && !sink(text) {
                return Ok(());
            }
        }
        decoder.finish().map_err(|nt| not_text("read", &p, nt))
    }

    fn write_text(
        &self,
        target: &ResolvedPath,
        content: &str,
        intent: &WriteIntent,
    ) -> Result<WriteOutcome, FsError> {
        let p = target.display_str();
        let _lock = self.lock(target, "write")?;
        let path = &target.key;
        let old = match std::fs::metadata(path) {
            Ok(m) => Some(m),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(FsError::io("write", &p, &e)),
        };
        if old.as_ref().is_some_and(|m| !m.is_file()) {
            return Err(FsError::cannot(
                FsErrorCode::NotRegularFile,
                "write",
                &p,
                "not a regular file",
            ));
        }
        match (intent, &old) {
            (WriteIntent::ReplaceIfVersion(_), None) => {
                return Err(FsError::cannot(
                    FsErrorCode::StaleVersion,
                    "write",
                    &p,
                    "file no longer exists",
                ));
            }
            (WriteIntent::ReplaceIfVersion(v), Some(m)) if version_of(m) != *v => {
                return Err(stale("write", &p));
            }
            (WriteIntent::CreateIfAbsent, Some(_)) => return Err(not_observed_overwrite(&p)),
            _ => {}
        }
        let before = old
            .as_ref()
            .and_then(|m| self.before_text(path, m, content.len()));
        let mode = old
            .as_ref()
            .map_or(0o600, |m| m.permissions().mode() & 0o7777);
        let publish = match intent {
            WriteIntent::CreateIfAbsent => Publish::Link,
            _ => Publish::Rename,
        };
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| FsError::io("write", &p, &e))?;
        }
        match stage_and_publish(path, content.as_bytes(), mode, publish) {
            Ok(()) => {}
            Err(PublishError::Exists) => {
                // A creator won the race between the probe and the link: its
                // file is kept, never replaced.
                return Err(match std::fs::symlink_metadata(path) {
                    Ok(m) if m.is_file() => not_observed_overwrite(&p),
                    _ => FsError::cannot(
                        FsErrorCode::NotRegularFile,
                        "write",
                        &p,
                        "not a regular file",
                    ),
                });
            }
            Err(PublishError::Io(e)) => return Err(FsError::io("write", &p, &e)),
        }
        let version = current_version(path).map_err(|e| FsError::io("write", &p, &e))?;
        Ok(WriteOutcome {
            operation: if old.is_some() {
                WriteOperation::Update
            } else {
                WriteOperation::Create
            },
            before,
            after: normalize_crlf(content).into_owned(),
            version,
        })
    }

    fn edit_text(
        &self,
        target: &ResolvedPath,
        edit: &LiteralEdit,
        guard: Option<&Version>,
    ) -> Result<EditOutcome, FsError> {
        let p = target.display_str();
        let _lock = self.lock(target, "edit")?;
        let path = &target.key;
        // A missing file is stale even without a guard (`seed-reference.md`
        // §10 item 17): whoever asked to edit it expected it to exist.
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(stale("edit", &p)),
            Err(e) => return Err(FsError::io("edit", &p, &e)),
        };
        if !meta.is_file() {
            return Err(FsError::cannot(
                FsErrorCode::NotRegularFile,
                "edit",
                &p,
                "not a regular file",
            ));
        }
        if guard.is_some_and(|v| version_of(&meta) != *v) {
            return Err(stale("edit", &p));
        }
        let bytes = read_regular(path).map_err(|e| e.into_fs("edit", &p))?;
        let text = decode_strict(&bytes, true).map_err(|nt| not_text("edit", &p, nt))?;
        let (before, after, crlf) = apply_literal_edit(text, edit, &p)?;
        let out = if crlf {
            std::borrow::Cow::Owned(after.replace('\n', "\r\n"))
        } else {
            std::borrow::Cow::Borrowed(after.as_str())
        };
        let mode = meta.permissions().mode() & 0o7777;
        stage_and_publish(path, out.as_bytes(), mode, Publish::Rename).map_err(|e| match e {
            PublishError::Io(e) => FsError::io("edit", &p, &e),
            PublishError::Exists => FsError::io("edit", &p, &io::ErrorKind::AlreadyExists.into()),
        })?;
        let version = current_version(path).map_err(|e| FsError::io("edit", &p, &e))?;
        Ok(EditOutcome {
            before,
            after,
            version,
        })
    }

    fn list_dir(&self, target: &ResolvedPath) -> Result<Vec<DirEntry>, FsError> {
        let p = target.display_str();
        let rd = std::fs::read_dir(&target.key).map_err(|e| match e.kind() {
            io::ErrorKind::NotADirectory => {
                FsError::cannot(FsErrorCode::NotDirectory, "list", &p, "not a directory")
            }
            _ => FsError::io("list", &p, &e),
        })?;
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| FsError::io("list", &p, &e))?;
            let kind = std::fs::metadata(entry.path()).map_or(FileKind::Other, |m| kind_of(&m));
            out.push(DirEntry {
                name: entry.file_name().to_string_lossy().into_owned(),
                kind,
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }
}

/// The seam's write on the local disk: under the target's lock, the guard
/// checked, then staged next to the target and published.
pub(super) fn write_bytes(
    fs: &LocalFs,
    path: &Path,
    content: &[u8],
    guard: &crate::fs::WriteGuard,
    cancel: &crate::cancel::CancelToken,
) -> Result<crate::fs::Written, crate::fs::WriteError> {
    use crate::fs::{WriteError, WriteGuard};
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
    let mode = old
        .as_ref()
        .map_or(0o600, |m| m.permissions().mode() & 0o7777);
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
    Ok(crate::fs::Written {
        replaced: old.is_some(),
        metadata: os::from_std(&metadata),
    })
}

/// The literal edit of `seed-reference.md` §6.3 on decoded text: returns
/// the LF-normalized text before and after, and whether the file is CRLF.
pub(crate) fn apply_literal_edit(
    text: &str,
    edit: &LiteralEdit,
    display: &str,
) -> Result<(String, String, bool), FsError> {
    let crlf = is_crlf(text);
    let content = normalize_crlf(text);
    let old = normalize_crlf(&edit.old_string);
    let new = normalize_crlf(&edit.new_string);
    if old.is_empty() {
        return Err(FsError::new(
            FsErrorCode::EditNotFound,
            "old_string must be a non-empty string",
        ));
    }
    match count_occurrences(&content, &old) {
        0 => Err(FsError {
            code: FsErrorCode::EditNotFound,
            message: format!("old_string was not found in \"{display}\""),
            path: Some(display.to_string()),
        }),
        n if n > 1 && !edit.replace_all => Err(FsError {
            code: FsErrorCode::AmbiguousEdit,
            message: format!(
                "old_string matched {n} times in \"{display}\"; provide a more specific old_string or set replace_all to true"
            ),
            path: Some(display.to_string()),
        }),
        _ => {
            let after = content.replace(&*old, &new);
            Ok((content.into_owned(), after, crlf))
        }
    }
}

/// CRLF when, in the first 4096 UTF-16 units, `\r\n` outnumbers the other
/// `\n` (`seed-reference.md` §6.3; the unit count is the seed's).
pub(crate) fn is_crlf(text: &str) -> bool {
    let mut units = 0usize;
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if units >= 4096 {
            end = i;
            break;
        }
        units += c.len_utf16();
    }
    let sample = &text[..end];
    let crlf = sample.matches("\r\n").count();
    let lf = sample.matches('\n').count() - crlf;
    crlf > lf
}

fn stale(verb: &str, p: &str) -> FsError {
    FsError::cannot(
        FsErrorCode::StaleVersion,
        verb,
        p,
        "file changed since it was read",
    )
}

fn not_observed_overwrite(p: &str) -> FsError {
    FsError {
        code: FsErrorCode::NotObserved,
        message: format!("cannot overwrite existing \"{p}\" without reading it first"),
        path: Some(p.to_string()),
    }
}

fn not_text(verb: &str, p: &str, nt: NotText) -> FsError {
    FsError::cannot(FsErrorCode::NotText, verb, p, nt.as_str())
}

fn kind_of(m: &Metadata) -> FileKind {
    if m.is_file() {
        FileKind::File
    } else if m.is_dir() {
        FileKind::Dir
    } else {
        FileKind::Other
    }
}

/// `dev:ino:size:mtimeNs:ctimeNs`, the seed's token from a bigint stat.
/// ctime is in it so that a same-size rewrite with the mtime restored, or a
/// chmod, still changes the version.
pub(crate) fn version_of(m: &Metadata) -> Version {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    Version(format!(
        "{}:{}:{}:{}:{}",
        m.dev(),
        m.ino(),
        m.size(),
        ns(m.mtime(), m.mtime_nsec()),
        ns(m.ctime(), m.ctime_nsec()),
    ))
}

fn current_version(path: &Path) -> io::Result<Version> {
    std::fs::metadata(path).map(|m| version_of(&m))
}

/// Why a regular file could not be opened.
enum OpenError {
    NotRegular,
    Io(io::Error),
}

impl OpenError {
    fn into_fs(self, verb: &str, p: &str) -> FsError {
        match self {
            OpenError::NotRegular => {
                FsError::cannot(FsErrorCode::NotRegularFile, verb, p, "not a regular file")
            }
            OpenError::Io(e) => FsError::io(verb, p, &e),
        }
    }
}

/// Open a regular file for reading. `O_NONBLOCK` keeps a FIFO swapped in
/// after a stat from blocking the open; the type is then checked on the
/// open descriptor.
fn open_regular(path: &Path) -> Result<File, OpenError> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if !meta.is_file() {
        return Err(OpenError::NotRegular);
    }
    Ok(file)
}

fn read_regular(path: &Path) -> Result<Vec<u8>, OpenError> {
    let mut file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes).map_err(OpenError::Io)?;
    Ok(bytes)
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
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(PublishError::Io)?;
    file.write_all(bytes).map_err(PublishError::Io)?;
    if mode != 0o600 {
        // The open's mode passed through the umask; set the kept mode
        // exactly.
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(PublishError::Io)?;
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
        std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
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
/// released when the returned file is closed.
fn file_lock(dir: &Path, key: &Path) -> io::Result<File> {
    use sha2::Digest;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let digest = sha2::Sha256::digest(key.as_os_str().as_encoded_bytes());
    let name: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .open(dir.join(format!("{name}.lock")))?;
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

    #[test]
    fn crlf_majority() {
        assert!(is_crlf("a\r\nb\r\nc\n"));
        assert!(!is_crlf("a\r\nb\n"));
        assert!(!is_crlf("no newline"));
    }

    #[test]
    fn crlf_sample_is_4096_utf16_units() {
        // 4095 units, then `\r\n`: the `\n` is unit 4097, outside the sample.
        let mut text = "x".repeat(4095);
        text.push_str("\r\n");
        assert!(!is_crlf(&text));
        let mut text = "x".repeat(4094);
        text.push_str("\r\n");
        assert!(is_crlf(&text));
    }
}
