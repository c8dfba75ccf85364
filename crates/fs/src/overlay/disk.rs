//! An overlay directory on the local disk: the upper layer of
//! `--overlay DIR`, kept across invocations.
//!
//! # Layout
//!
//! ```text
//! DIR/
//!   workspace   the lower root's canonical path (its bytes) and a newline
//!   lock        locked with flock(2) by a process while it writes (Unix)
//!   upper/      the upper layer: upper/P is the workspace's P
//! ```
//!
//! `workspace` ties the directory to one lower root, so that a later
//! invocation from another workdir gets an error instead of mixing two
//! trees; it is written under the lock, so processes that make one new
//! directory an overlay at the same moment agree (on Unix). `upper/` is made
//! by the first write. A new DIR is created (with its parents); an existing one must be
//! empty or already an overlay directory, and must lie neither inside the
//! workspace (the searches would find its copies) nor around it.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::OverlayFs;
use crate::names;
use crate::seam::FileSystem;
use crate::LocalFs;

/// The file naming the lower root.
const WORKSPACE: &str = "workspace";
/// The lock file.
const LOCK: &str = "lock";
/// The upper layer's tree.
const UPPER: &str = "upper";

/// An overlay directory in use.
#[derive(Debug)]
pub(super) struct Disk {
    /// Canonical.
    dir: PathBuf,
}

impl Disk {
    /// Lock the directory for one write, across processes where the
    /// platform can (`flock` on Unix; elsewhere the in-process lock only).
    pub(super) fn lock(&self) -> io::Result<std::fs::File> {
        lock(&self.dir).map_err(|e| self.context(e))
    }

    /// `e`, saying which overlay directory it concerns.
    pub(super) fn context(&self, e: io::Error) -> io::Error {
        io::Error::new(
            e.kind(),
            format!("overlay directory {}: {e}", self.dir.display()),
        )
    }
}

impl<L: FileSystem> OverlayFs<L, LocalFs> {
    /// An overlay of the directory `dir` on the local disk over `lower`
    /// below `lower_root`: the command line's `--overlay DIR`. `dir` is
    /// created if missing and keeps the changes across invocations (see
    /// the module docs for its layout).
    ///
    /// Errors name `dir`: it is a file, cannot be created or written, is
    /// inside the workspace (or holds it), holds something other than an
    /// overlay, or holds the overlay of another workspace.
    pub fn on_disk(
        lower: Arc<L>,
        lower_root: &Path,
        dir: &Path,
    ) -> io::Result<OverlayFs<L, LocalFs>> {
        let root = super::workspace_root(&*lower, lower_root)?;
        let dir = prepare(&root, dir)?;
        let mut fs = OverlayFs::new(lower, &root, Arc::new(LocalFs::new()), &dir.join(UPPER))?;
        fs.disk = Some(Disk { dir });
        Ok(fs)
    }
}

/// Take the lock of the overlay directory `dir` (see [`Disk::lock`]).
fn lock(dir: &Path) -> io::Result<std::fs::File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(LOCK))?;
    #[cfg(unix)]
    rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
    Ok(file)
}

/// Make `dir` an overlay directory for `root`, or check that it is one;
/// returns its canonical path.
fn prepare(root: &Path, dir: &Path) -> io::Result<PathBuf> {
    let shown = dir.display();
    let fail = |what: &str, e: io::Error| {
        io::Error::new(e.kind(), format!("overlay directory {shown}: {what}{e}"))
    };
    let refuse = |why: String| io::Error::new(io::ErrorKind::InvalidInput, why);
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("overlay directory {shown} is not a directory"),
            ))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir).map_err(|e| fail("cannot create it: ", e))?;
        }
        Err(e) => return Err(fail("", e)),
    }
    let dir = std::fs::canonicalize(dir).map_err(|e| fail("", e))?;
    if dir.starts_with(root) {
        return Err(refuse(format!(
            "overlay directory {shown} is inside the workspace {}: its copies would be \
             searched as the workspace's files; choose a directory outside it",
            root.display()
        )));
    }
    if root.starts_with(&dir) {
        return Err(refuse(format!(
            "the workspace {} is inside the overlay directory {shown}: choose a directory \
             outside the workspace",
            root.display()
        )));
    }
    let mut want = names::path_bytes(root).to_vec();
    want.push(b'\n');
    let record = dir.join(WORKSPACE);
    // The newline that ends the record is optional: a record written by
    // hand may lack it and still name this workspace.
    let names_root =
        |have: &[u8]| have.strip_suffix(b"\n").unwrap_or(have) == &want[..want.len() - 1];
    // The common case, without the lock: the record names this root.
    if std::fs::read(&record).is_ok_and(|have| names_root(&have)) {
        return Ok(dir);
    }
    if !record.exists() {
        let foreign = std::fs::read_dir(&dir)
            .map_err(|e| fail("", e))?
            .filter_map(Result::ok)
            .any(|e| ![WORKSPACE, LOCK, UPPER].iter().any(|n| e.file_name() == *n));
        if foreign {
            return Err(refuse(format!(
                "overlay directory {shown} is not empty and holds no overlay (no `{WORKSPACE}` \
                 file): choose a new or an empty directory"
            )));
        }
    }
    // The record is written under the directory's lock, so a process that
    // holds the lock reads it whole or not at all (another process may be
    // making the same new directory an overlay at this moment).
    let _lock = lock(&dir).map_err(|e| fail("cannot write: ", e))?;
    match std::fs::read(&record) {
        Ok(have) if names_root(&have) => {}
        Ok(have) => {
            let have =
                String::from_utf8_lossy(have.strip_suffix(b"\n").unwrap_or(&have)).into_owned();
            return Err(refuse(format!(
                "overlay directory {shown} holds the changes of the workspace {have}, \
                 not of {}: use another overlay directory",
                root.display()
            )));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&record)
                .map_err(|e| fail("cannot write: ", e))?;
            f.write_all(&want).map_err(|e| fail("cannot write: ", e))?;
        }
        Err(e) => return Err(fail("cannot read its workspace file: ", e)),
    }
    // The upper layer's root is made by the first write: until it exists
    // the overlay looks only at the lower layer (`OverlayFs::notice_upper`).
    Ok(dir)
}
