//! The filesystem under every tool (`contract.md` §10), in two layers.
//!
//! - **The seam**, byte-level: [`FileSystem`] (monomorphized into the native
//!   engine) and its object-safe face [`DynFileSystem`] (held by the file
//!   tools, the guard and the command line). Names and contents are bytes;
//!   a filesystem resolves, stats, lists, opens and reads, and publishes a
//!   write under a [`WriteGuard`]. [`LocalFs`] is the local disk, [`MemFs`]
//!   a tree in memory, [`OverlayFs`] an upper layer over a lower one.
//! - **The text layer**, [`TextFs`], over any `DynFileSystem`: what the
//!   `read`, `write` and `edit` tools need (`seed-reference.md` §6.6):
//!   path resolution, strict UTF-8 ([`decode_strict`]), literal edits with
//!   the CRLF rules (`literal`), guarded writes and version tokens, with
//!   the seed's messages and codes ([`FsError`]). It lives once, here: a
//!   new filesystem implements the seam and gets the tools' semantics.

pub(crate) mod names;
#[cfg(all(fuzzing, feature = "sftp"))]
pub(crate) use sftp::{fuzz_known_hosts, fuzz_sftp_reply, fuzz_sftp_stream};
mod decode;
mod dynfs;
mod error;
pub(crate) mod journal;
pub(crate) mod literal;
pub(crate) mod local;
mod mem;
mod overlay;
pub(crate) mod resolve;
mod seam;
#[cfg(feature = "sftp")]
mod sftp;
mod text;

/// ssh's port: the one an `sftp://` address without a port names, and the
/// one on which `known_hosts` names a host without brackets.
pub(crate) const SSH_PORT: u16 = 22;

pub use dynfs::DynFileSystem;
pub use seam::{
    errno, is_unavailable, unavailable, FileSystem, FileType, FsHints, FsWrite, Listing, Metadata,
    Timestamp, Version, WriteError, WriteGuard, Written,
};

pub(crate) use decode::decode_whole;
pub use decode::{decode_strict, NotText, BINARY_SNIFF_BYTES};
pub(crate) use error::{aborted, io_message};
pub use error::{FsError, FsErrorCode, Verb};
pub use literal::LiteralEdit;
pub use local::{LocalDir, LocalFile, LocalFs};
pub use mem::{MemDir, MemFile, MemFs};
pub use overlay::{Change, ChangeKind, OverlayDir, OverlayFile, OverlayFs};
pub use resolve::ResolvedPath;
#[cfg(feature = "sftp")]
pub use sftp::{SftpBuilder, SftpDir, SftpFile, SftpFs, SftpStats};
#[cfg(test)]
pub(crate) use text::ATTEMPTS;
pub use text::{
    DirEntry, EditOutcome, FileKind, Stat, StreamedWrite, TextFs, WriteOperation, WriteOutcome,
};
