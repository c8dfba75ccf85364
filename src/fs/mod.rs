//! File primitives for the file tools (no model concerns).
//!
//! The [`TextFileSystem`] trait is the seam the `read`, `write` and `edit` tools
//! work through (`seed-reference.md` §6.6): resolve a path, stat it, read,
//! write or edit text under a version guard, list a directory. Nothing in it
//! assumes a local disk, so an in-memory, overlay or remote filesystem can
//! stand in; [`LocalFs`] is the first implementation.

pub mod bytes;
mod dynfs;
mod error;
pub mod literal;
pub(crate) mod local;
mod overlay;
mod mem;
pub(crate) mod resolve;
mod seam;
mod text;

use std::path::PathBuf;

pub use dynfs::DynFileSystem;
pub use seam::{
    errno, FileSystem, FileType, Listing, Metadata, Timestamp, Version, WriteError, WriteGuard,
    Written,
};

pub use error::{io_message, FsError, FsErrorCode};
pub use local::{LocalDir, LocalFile, LocalFs};
pub use overlay::{Change, ChangeKind, OverlayDir, OverlayFile, OverlayFs};
pub use mem::{MemDir, MemFile, MemFs};
pub use resolve::has_dotdot_segment;
pub use text::{decode_strict, NotText, TextDecoder, BINARY_SNIFF_BYTES};

/// A path as the tools know it after resolution.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedPath {
    /// What the model sees: the lexical absolute join of the workdir and the
    /// requested path (symlinks not resolved).
    pub display: PathBuf,
    /// The identity of the file: two paths that name the same file (through
    /// symlinks) have the same key. Locks and observations are keyed by it.
    pub key: PathBuf,
}

impl ResolvedPath {
    /// The display path as text (lossy for a non-UTF-8 path).
    pub fn display_str(&self) -> String {
        self.display.to_string_lossy().into_owned()
    }

    /// The key as text (lossy for a non-UTF-8 path).
    pub fn key_str(&self) -> String {
        self.key.to_string_lossy().into_owned()
    }
}

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

/// The condition a write is published under.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum WriteIntent {
    /// Create or replace, unconditionally.
    #[default]
    None,
    /// Create only: an existing file is never replaced (`FS_NOT_OBSERVED`).
    CreateIfAbsent,
    /// Replace only the file at this version (`FS_STALE_VERSION` otherwise).
    ReplaceIfVersion(Version),
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

/// The outcome of [`TextFileSystem::write_text`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WriteOutcome {
    /// Created or replaced.
    pub operation: WriteOperation,
    /// The old text, LF-normalized; `None` when the file was created, was
    /// not text, or either side reached the diff-basis limit.
    pub before: Option<String>,
    /// The new text, LF-normalized.
    pub after: String,
    /// The version of the new file.
    pub version: Version,
}

/// A literal replacement (`seed-reference.md` §6.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiteralEdit {
    /// The text to find, literally.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence; otherwise exactly one must exist.
    pub replace_all: bool,
}

/// The outcome of [`TextFileSystem::edit_text`].
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
    /// The entry's name.
    pub name: String,
    /// Its kind (symlinks followed; a dangling one is `Other`).
    pub kind: FileKind,
}

/// The filesystem seam of the file tools.
///
/// Every path-taking method works on a [`ResolvedPath`] from
/// [`TextFileSystem::resolve`]; messages name its display path.
pub trait TextFileSystem: Send + Sync {
    /// Resolve `path` against `cwd` (`seed-reference.md` §6.1).
    fn resolve(&self, path: &str, cwd: &std::path::Path) -> Result<ResolvedPath, FsError>;

    /// Stat the target, following symlinks; `None` when it does not exist.
    fn stat(&self, target: &ResolvedPath) -> Result<Option<Stat>, FsError>;

    /// The whole file as strict UTF-8 text (BOM stripped).
    fn read_text(&self, target: &ResolvedPath) -> Result<String, FsError>;

    /// The file as strict UTF-8 text in chunks, for files too large to hold
    /// at once. `sink` returns `false` to stop early. Chunk boundaries carry
    /// no meaning (a chunk never splits a character).
    fn stream_text(
        &self,
        target: &ResolvedPath,
        sink: &mut dyn FnMut(&str) -> bool,
    ) -> Result<(), FsError>;

    /// Create or replace the file with `content`, under `intent`.
    fn write_text(
        &self,
        target: &ResolvedPath,
        content: &str,
        intent: &WriteIntent,
    ) -> Result<WriteOutcome, FsError>;

    /// Apply a literal edit; with `guard`, only to the file at that version.
    fn edit_text(
        &self,
        target: &ResolvedPath,
        edit: &LiteralEdit,
        guard: Option<&Version>,
    ) -> Result<EditOutcome, FsError>;

    /// The entries of a directory, in name order.
    fn list_dir(&self, target: &ResolvedPath) -> Result<Vec<DirEntry>, FsError>;
}
