//! [`TextFs`]: the text layer of the file tools over any filesystem of the
//! seam (`seed-reference.md` §6.1–§6.3, §6.6).
//!
//! What the seed calls `ctx.fs` (resolve, stat, read and stream text, write
//! and edit text, list a directory) lives here once: strict UTF-8 with the
//! BOM stripped, the binary sniff, the diff basis, literal edits with the
//! CRLF rules, version tokens, and every message and code. A filesystem
//! below it only moves bytes ([`DynFileSystem`]), so a new one gets `edit`
//! without writing it again.
//!
//! # Versions and concurrent writers
//!
//! A mutation is published under a [`WriteGuard`] that the filesystem checks
//! atomically (on the local disk: under the lock of the target's directory,
//! which every writer on the machine takes). `write` publishes under the guard the policy
//! chose; `edit` reads the file with its version and publishes only over
//! that version. When the caller observed no version (no session, the bare
//! provider) and another writer got in between the read and the publish,
//! the whole operation is redone on what that writer left, up to
//! [`ATTEMPTS`] times: no update is lost, and no error is reported that the
//! caller could not have caused.

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use dsh_search_base::cancel::CancelToken;

use super::decode::{decode_strict, decode_whole, NotText, TextDecoder};
use super::error::aborted;
use super::literal::{self, normalize_crlf, LiteralEdit};
use super::resolve::{self, ResolvedPath};
use super::seam::{errno, FileType, Version, WriteError, WriteGuard, Written};
use super::{io_message, DynFileSystem, FsError, FsErrorCode, Verb};

/// `diffBasisMaxBytes`' default (`seed-reference.md` §9.3): 10 MiB.
pub(crate) const DEFAULT_DIFF_BASIS_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// How many times a write or edit with no observed version is tried when
/// other writers keep changing the file between its read and its publish.
/// Each retry means another writer published in the meantime, so the bound
/// is only reached under a stream of concurrent writes.
pub const ATTEMPTS: usize = 8;

/// The size of a streamed chunk.
const STREAM_CHUNK: usize = 64 * 1024;

/// The kind of an existing entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// A regular file.
    File,
    /// A directory.
    Dir,
    /// A FIFO, device, socket or anything else.
    Other,
}

impl From<FileType> for FileKind {
    fn from(t: FileType) -> FileKind {
        match t {
            FileType::File => FileKind::File,
            FileType::Dir => FileKind::Dir,
            _ => FileKind::Other,
        }
    }
}

/// What a stat returns for an existing entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stat {
    /// File, directory or other.
    pub kind: FileKind,
    /// The size in bytes, when the filesystem knows it.
    pub size: Option<u64>,
    /// The version token.
    pub version: Version,
}

/// Whether a write created or replaced the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteOperation {
    /// The file did not exist.
    Create,
    /// An existing file was replaced.
    Update,
}

impl WriteOperation {
    /// `create` or `update`, as in the tool's value.
    pub fn as_str(self) -> &'static str {
        match self {
            WriteOperation::Create => "create",
            WriteOperation::Update => "update",
        }
    }
}

/// The outcome of [`TextFs::write_text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Created or replaced.
    pub operation: WriteOperation,
    /// The text of exactly the file that was replaced, LF-normalized; `None`
    /// when the file was created, was not text, or either side reached the
    /// diff-basis limit.
    pub before: Option<String>,
    /// The new text, LF-normalized.
    pub after: String,
    /// The version of the new file.
    pub version: Version,
}

/// The outcome of [`TextFs::edit_text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditOutcome {
    /// The old text, LF-normalized, without a BOM.
    pub before: String,
    /// The new text, LF-normalized.
    pub after: String,
    /// The version of the edited file.
    pub version: Version,
}

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's name (lossy for a name that is not UTF-8).
    pub name: String,
    /// Its kind (symlinks followed; a dangling one is `Other`).
    pub kind: FileKind,
}

/// The file tools' text operations over a filesystem.
///
/// Every path-taking method works on a [`ResolvedPath`] from
/// [`TextFs::resolve`]; messages name its display path. Cheap to clone.
///
/// ```
/// use std::sync::Arc;
/// use dsh_search_fs::{LiteralEdit, LocalFs, TextFs, WriteGuard};
///
/// let dir = tempfile::tempdir()?;
/// let text = TextFs::new(Arc::new(LocalFs::new()));
/// let target = text.resolve("notes.txt", dir.path())?;
/// text.write_text(&target, "one\r\ntwo\r\n", &WriteGuard::CreateIfAbsent)?;
/// let edit = LiteralEdit {
///     old_string: "two".into(),
///     new_string: "three".into(),
///     replace_all: false,
/// };
/// let out = text.edit_text(&target, &edit, None)?;
/// assert_eq!(out.after, "one\nthree\n");
/// assert_eq!(std::fs::read(dir.path().join("notes.txt"))?, b"one\r\nthree\r\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct TextFs {
    fs: Arc<dyn DynFileSystem>,
    diff_basis_max_bytes: u64,
}

impl std::fmt::Debug for TextFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TextFs")
            .field("diff_basis_max_bytes", &self.diff_basis_max_bytes)
            .finish_non_exhaustive()
    }
}

/// The old text a write replaces, and the version it was read at.
struct Basis {
    version: Version,
    text: String,
}

impl TextFs {
    /// The text layer over `fs`.
    pub fn new(fs: Arc<dyn DynFileSystem>) -> TextFs {
        TextFs {
            fs,
            diff_basis_max_bytes: DEFAULT_DIFF_BASIS_MAX_BYTES,
        }
    }

    /// Old or new content at least this many bytes gets no `before` text.
    ///
    /// By default, 10 MiB.
    pub fn with_diff_basis_max_bytes(mut self, max: u64) -> TextFs {
        self.diff_basis_max_bytes = max;
        self
    }

    /// The filesystem below.
    pub fn filesystem(&self) -> &Arc<dyn DynFileSystem> {
        &self.fs
    }

    /// Resolve `path` against `cwd` (`seed-reference.md` §6.1).
    pub fn resolve(&self, path: &str, cwd: &Path) -> Result<ResolvedPath, FsError> {
        resolve::resolve(&*self.fs, path, cwd)
    }

    /// [`TextFs::resolve`] for a tool that will `verb` the file: its
    /// errors say `cannot <verb>` where a path is refused by its form.
    pub fn resolve_for(&self, verb: Verb, path: &str, cwd: &Path) -> Result<ResolvedPath, FsError> {
        resolve::resolve_for(&*self.fs, verb, path, cwd)
    }

    /// Stat the target, following symlinks; `None` when it does not exist.
    pub fn stat(&self, target: &ResolvedPath) -> Result<Option<Stat>, FsError> {
        match self.fs.metadata(&target.key) {
            Ok(m) => Ok(Some(Stat {
                kind: m.kind.into(),
                size: Some(m.len),
                version: m.version(),
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(FsError::io(Verb::Stat, &target.display_str(), &e)),
        }
    }

    /// The whole file as strict UTF-8 text (BOM stripped).
    pub fn read_text(&self, target: &ResolvedPath) -> Result<String, FsError> {
        let p = target.display_str();
        match self.fs.read_file(&target.key, u64::MAX) {
            Ok((_, Some(bytes))) => decode_strict(&bytes, false)
                .map(str::to_string)
                .map_err(|nt| not_text(Verb::Read, &p, nt)),
            Ok((_, None)) => Err(not_regular(Verb::Read, &p)),
            Err(e) => Err(FsError::io(Verb::Read, &p, &e)),
        }
    }

    /// The file as strict UTF-8 text in chunks, for files too large to hold
    /// at once. `sink` returns `false` to stop early. Chunk boundaries carry
    /// no meaning (a chunk never splits a character). A FIFO swapped in for
    /// the file is waited for until `cancel` is set.
    pub fn stream_text(
        &self,
        target: &ResolvedPath,
        cancel: &CancelToken,
        sink: &mut dyn FnMut(&str) -> bool,
    ) -> Result<(), FsError> {
        let p = target.display_str();
        let failed = |e: io::Error| {
            if cancel.is_cancelled() {
                FsError::new(FsErrorCode::Aborted, "read aborted")
            } else {
                FsError::io(Verb::Read, &p, &e)
            }
        };
        let mut file = self.fs.open(&target.key, cancel).map_err(failed)?;
        let mut decoder = TextDecoder::new();
        let mut buf = vec![0u8; STREAM_CHUNK];
        loop {
            let n = match file.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(failed(e)),
            };
            let text = decoder
                .push(&buf[..n])
                .map_err(|nt| not_text(Verb::Read, &p, nt))?;
            if !text.is_empty() && !sink(text) {
                return Ok(());
            }
        }
        decoder.finish().map_err(|nt| not_text(Verb::Read, &p, nt))
    }

    /// Create or replace the file with `content`, under `guard`
    /// (`seed-reference.md` §6.2).
    ///
    /// An unconditional write ([`WriteGuard::None`]) over a text file is
    /// published over the version its `before` text was read at, and redone
    /// when another writer got in between; after 8 tries it is
    /// published unconditionally, with no `before` text.
    pub fn write_text(
        &self,
        target: &ResolvedPath,
        content: &str,
        guard: &WriteGuard,
    ) -> Result<WriteOutcome, FsError> {
        self.write_text_with_cancel(target, content, guard, &CancelToken::new())
    }

    /// [`TextFs::write_text`] for a call that can be cancelled: a wait for
    /// another writer's lock ends when `cancel` is set, and a cancelled call
    /// never publishes (`write aborted`).
    pub fn write_text_with_cancel(
        &self,
        target: &ResolvedPath,
        content: &str,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<WriteOutcome, FsError> {
        let mut attempt = 0;
        let (written, publish, basis) = loop {
            attempt += 1;
            if cancel.is_cancelled() {
                return Err(aborted(Verb::Write));
            }
            // A create-only write has no old file to show.
            let basis = match guard {
                WriteGuard::CreateIfAbsent => None,
                _ => self.basis(&target.key, content.len()),
            };
            let pinned = *guard == WriteGuard::None && attempt < ATTEMPTS;
            let publish = match &basis {
                Some(b) if pinned => WriteGuard::ReplaceIfVersion(b.version.clone()),
                _ => guard.clone(),
            };
            match self
                .fs
                .write(&target.key, content.as_bytes(), &publish, cancel)
            {
                Ok(written) => break (written, publish, basis),
                Err(WriteError::Stale) if pinned => continue,
                Err(e) => return Err(self.write_failed(target, e)),
            }
        };
        // The basis is shown only when the write replaced exactly the
        // version it was read at.
        let before = basis
            .filter(|b| matches!(&publish, WriteGuard::ReplaceIfVersion(v) if *v == b.version))
            .map(|b| b.text);
        Ok(WriteOutcome {
            operation: operation(&written),
            before,
            after: normalize_crlf(content).into_owned(),
            version: written.metadata.version(),
        })
    }

    /// Apply a literal edit (`seed-reference.md` §6.3); with `guard`, only
    /// to the file at that version.
    ///
    /// The file is read with its version, edited, and published over that
    /// version. Without a guard, a file changed in between by another writer
    /// is edited again as they left it, up to 8 times.
    pub fn edit_text(
        &self,
        target: &ResolvedPath,
        edit: &LiteralEdit,
        guard: Option<&Version>,
    ) -> Result<EditOutcome, FsError> {
        self.edit_text_with_cancel(target, edit, guard, &CancelToken::new())
    }

    /// [`TextFs::edit_text`] for a call that can be cancelled: a wait for
    /// another writer's lock ends when `cancel` is set, and a cancelled call
    /// never publishes (`edit aborted`). A file or a result over
    /// `EDIT_MAX_BYTES` is refused before the
    /// result is built (`FS_TOO_LARGE`).
    pub fn edit_text_with_cancel(
        &self,
        target: &ResolvedPath,
        edit: &LiteralEdit,
        guard: Option<&Version>,
        cancel: &CancelToken,
    ) -> Result<EditOutcome, FsError> {
        let p = target.display_str();
        for _ in 0..ATTEMPTS {
            if cancel.is_cancelled() {
                return Err(aborted(Verb::Edit));
            }
            let max = literal::EDIT_MAX_BYTES;
            let (meta, bytes) = match self.fs.read_file(&target.key, max) {
                Ok(read) => read,
                // A missing file is stale even without a guard
                // (`seed-reference.md` §10 item 17): whoever asked to edit
                // it expected it to exist.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(stale(Verb::Edit, &p)),
                Err(e) => return Err(FsError::io(Verb::Edit, &p, &e)),
            };
            let Some(bytes) = bytes else {
                return Err(if meta.kind.is_file() {
                    literal::file_too_large(&p, meta.len)
                } else {
                    not_regular(Verb::Edit, &p)
                });
            };
            let version = meta.version();
            // Before any literal matching, as the seed checks it.
            if guard.is_some_and(|v| *v != version) {
                return Err(stale(Verb::Edit, &p));
            }
            let text = decode_whole(&bytes, cancel)
                .ok_or_else(|| aborted(Verb::Edit))?
                .map_err(|nt| not_text(Verb::Edit, &p, nt))?;
            let applied = literal::apply(text, edit, &p, cancel)?;
            let publish = WriteGuard::ReplaceIfVersion(version);
            let content = applied.encoded(cancel)?;
            match self
                .fs
                .write(&target.key, content.as_bytes(), &publish, cancel)
            {
                Ok(written) => {
                    return Ok(EditOutcome {
                        before: applied.before,
                        after: applied.after,
                        version: written.metadata.version(),
                    })
                }
                // Another writer published between the read and this
                // publish: edit what they left.
                Err(WriteError::Stale) if guard.is_none() => continue,
                Err(e) => return Err(self.edit_failed(&p, e)),
            }
        }
        Err(stale(Verb::Edit, &p))
    }

    /// Create or replace the file with the UTF-8 text read from `content`
    /// until its end, under `guard`, holding one chunk of it at a time on a
    /// filesystem that streams ([`FsWrite::write_from`]): for content too
    /// large to hold. Nothing is published when reading it fails, when it
    /// is not UTF-8 (`FS_NOT_TEXT`) or when `cancel` is set (`write
    /// aborted`). There is no `before` or `after` text.
    ///
    /// [`FsWrite::write_from`]: super::FsWrite::write_from
    pub fn write_stream(
        &self,
        target: &ResolvedPath,
        content: &mut dyn Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<StreamedWrite, FsError> {
        let mut utf8 = Utf8Reader::new(content);
        match self.fs.write_from(&target.key, &mut utf8, guard, cancel) {
            Ok(written) => Ok(StreamedWrite {
                operation: operation(&written),
                version: written.metadata.version(),
            }),
            Err(WriteError::Source(_)) if utf8.invalid => Err(FsError::cannot(
                FsErrorCode::NotText,
                Verb::Write,
                &target.display_str(),
                "the content is not UTF-8 text",
            )),
            Err(WriteError::Cancelled) => Err(aborted(Verb::Write)),
            // The source itself was cancelled (standard input at a signal).
            Err(WriteError::Source(e))
                if cancel.is_cancelled() || dsh_search_base::cancel::is_cancelled_error(&e) =>
            {
                Err(aborted(Verb::Write))
            }
            Err(e) => Err(self.write_failed(target, e)),
        }
    }

    /// The entries of a directory, in name order.
    pub fn list_dir(&self, target: &ResolvedPath) -> Result<Vec<DirEntry>, FsError> {
        let p = target.display_str();
        let listed = self.fs.read_dir(&target.key).map_err(|e| match e.kind() {
            io::ErrorKind::NotADirectory => {
                FsError::cannot(FsErrorCode::NotDirectory, Verb::List, &p, "not a directory")
            }
            _ => FsError::io(Verb::List, &p, &e),
        })?;
        let mut out: Vec<DirEntry> = listed
            .into_iter()
            .map(|(name, kind)| {
                let name = super::names::os_str(&name).into_owned();
                let kind = match kind {
                    FileType::Symlink | FileType::Unknown => self
                        .fs
                        .metadata(&target.key.join(&name))
                        .map_or(FileKind::Other, |m| m.kind.into()),
                    kind => kind.into(),
                };
                DirEntry {
                    name: name.to_string_lossy().into_owned(),
                    kind,
                }
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// The old text at `path` and its version, when a write of `new_len`
    /// bytes shows one: a regular text file, both sides under the diff-basis
    /// limit. Anything that keeps it from being read means no basis; the
    /// write itself reports what is wrong with the target.
    fn basis(&self, path: &Path, new_len: usize) -> Option<Basis> {
        let max = self.diff_basis_max_bytes;
        if new_len as u64 >= max {
            return None;
        }
        // At most `max - 1` bytes: an old file of `max` has no basis either.
        let (meta, bytes) = self.fs.read_file(path, max - 1).ok()?;
        let bytes = bytes?;
        let text = decode_strict(&bytes, false).ok()?;
        Some(Basis {
            version: meta.version(),
            text: normalize_crlf(text).into_owned(),
        })
    }

    /// A failed write's error, with the seed's words (`seed-reference.md`
    /// §6.2). The filesystem says `Stale` or `Exists`; the current state of
    /// the target says which message fits.
    fn write_failed(&self, target: &ResolvedPath, e: WriteError) -> FsError {
        let p = target.display_str();
        match e {
            WriteError::Stale => match self.fs.metadata(&target.key) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => FsError::cannot(
                    FsErrorCode::StaleVersion,
                    Verb::Write,
                    &p,
                    "file no longer exists",
                ),
                _ => stale(Verb::Write, &p),
            },
            // Create-only: the publication never replaces, so a creator that
            // won the race keeps its file. A collision with a non-file (a
            // dangling symlink) is no regular file to protect.
            WriteError::Exists => match self.fs.symlink_metadata(&target.key) {
                Ok(m) if m.kind.is_file() => FsError {
                    code: FsErrorCode::NotObserved,
                    message: format!("cannot overwrite existing \"{p}\" without reading it first"),
                    path: Some(p),
                },
                _ => not_regular(Verb::Write, &p),
            },
            e => published_error(Verb::Write, &p, e),
        }
    }

    /// A failed edit publish's error (`seed-reference.md` §6.3).
    fn edit_failed(&self, p: &str, e: WriteError) -> FsError {
        match e {
            WriteError::Stale => stale(Verb::Edit, p),
            WriteError::Exists => already_exists(Verb::Edit, p),
            e => published_error(Verb::Edit, p, e),
        }
    }
}

/// The outcome of [`TextFs::write_stream`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamedWrite {
    /// Created or replaced.
    pub operation: WriteOperation,
    /// The version of the new file.
    pub version: Version,
}

/// A reader that fails (with `invalid` set) as soon as what it passed on
/// is not the start of UTF-8 text; a character split between two reads is
/// carried over.
struct Utf8Reader<'a> {
    inner: &'a mut dyn Read,
    /// The bytes of an incomplete character at the end of the last read.
    pending: usize,
    tail: [u8; 4],
    invalid: bool,
}

impl<'a> Utf8Reader<'a> {
    fn new(inner: &'a mut dyn Read) -> Utf8Reader<'a> {
        Utf8Reader {
            inner,
            pending: 0,
            tail: [0; 4],
            invalid: false,
        }
    }

    fn fail(&mut self) -> io::Error {
        self.invalid = true;
        io::Error::new(io::ErrorKind::InvalidData, "the content is not UTF-8 text")
    }
}

impl Read for Utf8Reader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 {
            return if self.pending > 0 {
                Err(self.fail())
            } else {
                Ok(0)
            };
        }
        // The carried bytes and the first few new ones decide the split
        // character; the rest is checked on its own.
        let mut start = 0;
        if self.pending > 0 {
            let mut joined = self.tail[..self.pending].to_vec();
            let take = n.min(4 - self.pending);
            joined.extend_from_slice(&buf[..take]);
            match std::str::from_utf8(&joined) {
                Ok(_) => {
                    start = take;
                    self.pending = 0;
                }
                Err(e) if e.valid_up_to() >= self.pending => {
                    start = e.valid_up_to() - self.pending;
                    self.pending = 0;
                }
                Err(e) if e.error_len().is_none() => {
                    // Still incomplete: only possible with a tiny read.
                    self.tail[..joined.len()].copy_from_slice(&joined);
                    self.pending = joined.len();
                    return Ok(n);
                }
                Err(_) => return Err(self.fail()),
            }
        }
        match std::str::from_utf8(&buf[start..n]) {
            Ok(_) => {}
            Err(e) if e.error_len().is_none() => {
                let rest = &buf[start + e.valid_up_to()..n];
                self.tail[..rest.len()].copy_from_slice(rest);
                self.pending = rest.len();
            }
            Err(_) => return Err(self.fail()),
        }
        Ok(n)
    }
}

/// The errors a publish reports the same way for write and edit.
fn published_error(verb: Verb, p: &str, e: WriteError) -> FsError {
    match e {
        WriteError::NotRegular(_) => not_regular(verb, p),
        WriteError::NotDirectory(_) => FsError::io(verb, p, &errno::not_a_directory()),
        WriteError::Cancelled => aborted(verb),
        WriteError::Source(e) => FsError::cannot(
            FsErrorCode::IoError,
            verb,
            p,
            &format!("reading the content failed: {}", io_message(&e)),
        ),
        WriteError::Io(_, e) => FsError::io(verb, p, &e),
        // Handled by the callers, with their own words.
        WriteError::Stale => stale(verb, p),
        WriteError::Exists => already_exists(verb, p),
    }
}

/// A replacing publish that found the target taken: cannot happen on a
/// filesystem that keeps the seam's promises, reported as an I/O error.
fn already_exists(verb: Verb, p: &str) -> FsError {
    FsError::io(verb, p, &io::ErrorKind::AlreadyExists.into())
}

fn stale(verb: Verb, p: &str) -> FsError {
    FsError::cannot(
        FsErrorCode::StaleVersion,
        verb,
        p,
        "file changed since it was read",
    )
}

fn not_regular(verb: Verb, p: &str) -> FsError {
    FsError::cannot(FsErrorCode::NotRegularFile, verb, p, "not a regular file")
}

fn not_text(verb: Verb, p: &str, nt: NotText) -> FsError {
    FsError::cannot(FsErrorCode::NotText, verb, p, nt.as_str())
}

/// Whether a publish created or replaced the file.
fn operation(w: &Written) -> WriteOperation {
    if w.replaced {
        WriteOperation::Update
    } else {
        WriteOperation::Create
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `data` through a [`Utf8Reader`] in pieces of `step` bytes.
    fn through(data: &[u8], step: usize) -> Result<Vec<u8>, bool> {
        struct Pieces<'a>(&'a [u8], usize);
        impl Read for Pieces<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.len().min(self.1).min(buf.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let mut src = Pieces(data, step);
        let mut r = Utf8Reader::new(&mut src);
        let mut out = Vec::new();
        match r.read_to_end(&mut out) {
            Ok(_) => Ok(out),
            Err(_) => Err(r.invalid),
        }
    }

    #[test]
    fn utf8_reader_carries_split_characters() {
        let text = "a\u{e9}\u{20ac}\u{1f600}z".repeat(3);
        for step in 1..=7 {
            assert_eq!(
                through(text.as_bytes(), step).as_deref(),
                Ok(text.as_bytes()),
                "{step}"
            );
        }
    }

    #[test]
    fn utf8_reader_refuses_invalid_and_truncated_text() {
        for (name, bytes) in [
            ("lone continuation", &b"ab\x80cd"[..]),
            ("bad lead", b"\xff"),
            ("truncated at the end", b"ab\xe2\x82"),
            ("overlong", b"\xc0\xaf"),
        ] {
            for step in 1..=4 {
                assert_eq!(through(bytes, step), Err(true), "{name} {step}");
            }
        }
    }
}
