//! The filesystem under every tool of dsh-search (`contract.md` §10), in
//! two layers. `dsh-search` re-exports this crate whole as
//! `dsh_search::fs`; it sits under the engine, the live index and the
//! tools, and names none of them (`docs/engine.md`, "The source's
//! layers").
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
//!
//! Beside them, what the layers above share with the filesystems: [`names`]
//! (names and paths as bytes, as the seam gives them), [`resolve`] (the
//! file tools' path rules, which the guard and the spill store follow too),
//! and the [`journal`], the feed of changes a live index drains from a
//! filesystem that changes only through itself.
//!
//! Cancellation ([`CancelToken`](dsh_search_base::CancelToken)) and the
//! locks taken past a panic come from the crate below, `dsh-search-base`.

pub mod journal;
pub mod names;
pub mod resolve;

mod decode;
mod dynfs;
mod error;
mod literal;
mod local;
mod mem;
mod overlay;
mod seam;
#[cfg(feature = "sftp")]
mod sftp;
mod text;

/// ssh's port: the one an `sftp://` address without a port names, and the
/// one on which `known_hosts` names a host without brackets.
pub const SSH_PORT: u16 = 22;

pub use dynfs::DynFileSystem;
pub use seam::{
    errno, is_unavailable, unavailable, FileSystem, FileType, FsHints, FsWrite, Listing, Metadata,
    Timestamp, Version, WriteError, WriteGuard, Written,
};

pub use decode::{decode_strict, decode_whole, NotText, BINARY_SNIFF_BYTES};
pub use error::{aborted, io_message, FsError, FsErrorCode, Verb};
pub use literal::{count_occurrences, LiteralEdit};
pub use local::{LocalDir, LocalFile, LocalFs};
pub use mem::{MemDir, MemFile, MemFs};
pub use overlay::{Change, ChangeKind, OverlayDir, OverlayFile, OverlayFs};
pub use resolve::ResolvedPath;
#[cfg(feature = "sftp")]
pub use sftp::{SftpBuilder, SftpDir, SftpFile, SftpFs, SftpStats};
pub use text::{
    DirEntry, EditOutcome, FileKind, Stat, StreamedWrite, TextFs, WriteOperation, WriteOutcome,
};

// The retry bound of a write with no observed version, which the file
// tools' tests (`dsh_search`'s `tool::files`) drive to its end.
#[doc(hidden)]
pub use text::ATTEMPTS;

// The fuzz targets' entry points into the SFTP parsers (`dsh_search`'s
// `fuzzing` module calls them), built by `cargo fuzz` alone.
#[cfg(all(fuzzing, feature = "sftp"))]
#[doc(hidden)]
pub use sftp::{fuzz_known_hosts, fuzz_sftp_reply, fuzz_sftp_stream};
