//! The grep walk below a directory root: rg's walk (ignore 0.4.29 `walk.rs:
//! Worker::run_one` L1703, `Work::read_dir` L1550, `generate_work` L1808),
//! with every directory listed once.
//!
//! rg decides a directory's ignore files from the listing it has just read
//! (`dir.rs: add_child_with_entries`). The crate's walker does not hand
//! that listing to a filter, and the engine's ignore decisions are its own
//! ([`RgIgnore`], on rg's path strings), so walking with the crate meant
//! listing every directory twice. This walk lists a directory once, with a
//! descriptor that then opens its subdirectories and, on the searching
//! threads, its files (`openat`: the kernel resolves one name, not the
//! whole path), and builds the directory's rules from the names it saw.
//!
//! What rg reports is reproduced: a directory that cannot be opened or
//! listed (`read_dir` errors, with the directory's path), an entry whose
//! type cannot be read (`DirEntryRaw::from_entry`, with the entry's path).
//! Symbolic links are not followed (rg's default), and only regular files
//! and directories can become haystacks or be descended into; other
//! entries are skipped (`is_haystack`: not a file at depth > 0).

use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ignore::overrides::Override;
use ignore::Error;
use rustix::fd::{AsFd, OwnedFd};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir};

use super::messages::at_path;
use super::paths::Root;
use super::rgignore::{Listed, Node, RgIgnore};

/// How many listed directories may hold a descriptor at once (directories
/// whose files wait in queued batches or are being searched, and those on
/// the walk's stack) before the walk opens another: past it, the walking
/// thread searches queued files itself, or waits for the threads searching
/// theirs ([`Output::relieve`]). The walk must not run the process out of
/// descriptors, however far ahead of the searching threads it gets and
/// however many there are; only its own stack of parents can take it past
/// the bound.
const MAX_LIVE_DIRS: usize = 64;

/// The size of the `getdents64` buffer (glibc's `opendir` uses 32 KiB).
const LISTING_BUF: usize = 32 * 1024;

/// A listed directory: the descriptor its files are opened relative to.
pub(crate) struct Dir {
    fd: OwnedFd,
    live: Arc<AtomicUsize>,
}

impl Dir {
    /// The directory's descriptor.
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A regular file to search: its directory and the path rg walks for it
/// (`Root::unwalk` of the engine's absolute path, from which what rg
/// prints is made).
pub(crate) struct Haystack {
    pub(crate) dir: Arc<Dir>,
    pub(crate) rg_path: PathBuf,
}

impl Haystack {
    /// The file's name in its directory.
    pub(crate) fn name(&self) -> &OsStr {
        self.rg_path.file_name().unwrap_or(self.rg_path.as_os_str())
    }
}

/// `dir.join(name)` (`Path::join`: a `/` between them unless `dir` is
/// empty or ends with one) in one allocation of the exact size.
fn join(dir: &Path, name: &OsStr) -> PathBuf {
    let d = dir.as_os_str().as_bytes();
    let sep = !d.is_empty() && !d.ends_with(b"/");
    let mut v = Vec::with_capacity(d.len() + usize::from(sep) + name.len());
    v.extend_from_slice(d);
    if sep {
        v.push(b'/');
    }
    v.extend_from_slice(name.as_bytes());
    PathBuf::from(std::ffi::OsString::from_vec(v))
}

/// Where the walk sends what it finds.
pub(crate) trait Output {
    /// A file rg would search.
    fn file(&mut self, file: Haystack);
    /// An error rg reports with `err_message!` (exit code 2).
    fn error(&mut self, err: Error);
    /// Whether the call is over (budget crossed or cancelled).
    fn stopped(&self) -> bool;
    /// Let go of some directories' descriptors (search files that hold
    /// them, or wait for the threads searching them); false when nothing
    /// but the walk itself holds them.
    fn relieve(&mut self) -> bool;
}

/// A directory still to list.
struct Pending {
    /// The listed directory it is an entry of.
    parent: Arc<Dir>,
    /// The rules of that directory.
    parent_node: Arc<Node>,
    abs: PathBuf,
    rg_dir: PathBuf,
    depth: usize,
}

/// One directory's listing: names (concatenated) and their types.
#[derive(Default)]
struct Listing {
    names: Vec<u8>,
    /// (end of the name in `names`, the type from `d_type`).
    entries: Vec<(usize, FileType)>,
    /// The error that ended the listing early, if any.
    error: Option<std::io::Error>,
    listed: Listed,
}

impl Listing {
    fn read(&mut self, fd: &OwnedFd, buf: &mut [MaybeUninit<u8>]) {
        self.names.clear();
        self.entries.clear();
        self.error = None;
        self.listed = Listed::default();
        let mut dir = RawDir::new(fd.as_fd(), buf);
        while let Some(entry) = dir.next() {
            match entry {
                Ok(e) => {
                    let name = e.file_name().to_bytes();
                    if name == b"." || name == b".." {
                        continue;
                    }
                    self.listed.note(name);
                    self.names.extend_from_slice(name);
                    self.entries.push((self.names.len(), e.file_type()));
                }
                Err(e) => {
                    // `std::fs::ReadDir` yields one error and ends (the
                    // `readdir` loop of `Work::read_dir` then reports it).
                    self.error = Some(e.into());
                    break;
                }
            }
        }
    }

    fn iter(&self) -> impl Iterator<Item = (&[u8], FileType)> {
        let mut start = 0;
        self.entries.iter().map(move |&(end, ft)| {
            let name = &self.names[start..end];
            start = end;
            (name, ft)
        })
    }
}

/// rg's error for `path` (`Error::from(err).with_path(path).with_depth(depth)`).
fn path_error(err: std::io::Error, path: &Path, depth: usize) -> Error {
    Error::WithDepth {
        depth,
        err: Box::new(at_path(Error::Io(err), path)),
    }
}

fn open_dir(at: impl AsFd, path: &Path) -> std::io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(at, path, flags, Mode::empty())?)
}

/// Walk the directory `root` (a real directory, not a symlink) from the
/// workdir `wc` with the include globs `ov`, sending its haystacks and walk
/// errors to `out`. Returns the call's ignore state, which holds the
/// ignore-file messages to report.
pub(crate) fn walk(
    root: &Root,
    wc: &Path,
    ov: Override,
    live: &Arc<AtomicUsize>,
    out: &mut impl Output,
) -> RgIgnore {
    let mut buf = vec![MaybeUninit::<u8>::uninit(); LISTING_BUF];
    let mut listing = Listing::default();
    let abs = root.walk_path();
    let root_fd = match open_dir(rustix::fs::CWD, abs) {
        Ok(fd) => fd,
        Err(e) => {
            // `run_one`: the parents' rules are read first, the root's
            // never (its listing failed).
            let rgi = RgIgnore::with_root_listing(root, wc, ov, Some(Listed::default()));
            out.error(path_error(e, abs, 0));
            return rgi;
        }
    };
    listing.read(&root_fd, &mut buf);
    let rgi = RgIgnore::with_root_listing(root, wc, ov, Some(listing.listed));
    live.fetch_add(1, Ordering::Relaxed);
    let root_dir = Arc::new(Dir {
        fd: root_fd,
        live: live.clone(),
    });
    let root_node = rgi.root_node().clone();
    let mut stack = Vec::new();
    visit_entries(
        &rgi,
        &mut listing,
        &root_dir,
        &root_node,
        abs,
        0,
        &mut stack,
        out,
    );
    drop(root_dir);
    while let Some(p) = stack.pop() {
        if out.stopped() {
            break;
        }
        while live.load(Ordering::Relaxed) >= MAX_LIVE_DIRS && out.relieve() {}
        let fd = match open_dir(
            p.parent.fd(),
            Path::new(p.abs.file_name().unwrap_or_default()),
        ) {
            Ok(fd) => fd,
            Err(e) => {
                out.error(path_error(e, &p.abs, p.depth));
                continue;
            }
        };
        drop(p.parent);
        listing.read(&fd, &mut buf);
        let node = rgi.enter(&p.parent_node, &p.abs, p.rg_dir, listing.listed);
        live.fetch_add(1, Ordering::Relaxed);
        let dir = Arc::new(Dir {
            fd,
            live: live.clone(),
        });
        visit_entries(
            &rgi,
            &mut listing,
            &dir,
            &node,
            &p.abs,
            p.depth,
            &mut stack,
            out,
        );
    }
    rgi
}

/// `run_one`'s loop over one directory's entries (`generate_work`), then
/// the listing's error.
#[allow(clippy::too_many_arguments)]
fn visit_entries(
    rgi: &RgIgnore,
    listing: &mut Listing,
    dir: &Arc<Dir>,
    node: &Arc<Node>,
    abs: &Path,
    depth: usize,
    stack: &mut Vec<Pending>,
    out: &mut impl Output,
) {
    for (name, ft) in listing.iter() {
        if out.stopped() {
            return;
        }
        let name = OsStr::from_bytes(name);
        let ft = if ft == FileType::Unknown {
            // `DirEntry::file_type` falls back to `lstat` without a
            // `d_type`; its error names the entry (`from_entry`).
            match rustix::fs::statat(dir.fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(e) => {
                    let path = abs.join(name);
                    out.error(Error::WithDepth {
                        depth: depth + 1,
                        err: Box::new(path_error(e.into(), &path, depth + 1)),
                    });
                    continue;
                }
            }
        } else {
            ft
        };
        let is_dir = ft == FileType::Directory;
        if !is_dir && ft != FileType::RegularFile {
            // Links, FIFOs, sockets, devices below the root: never searched.
            continue;
        }
        let rg_path = join(node.rg_dir(), name);
        debug_assert_eq!(rg_path, rgi.root().unwalk(&abs.join(name)));
        if !rgi.decide(node, &rg_path, name.as_bytes(), is_dir) {
            continue;
        }
        if is_dir {
            stack.push(Pending {
                parent: dir.clone(),
                parent_node: node.clone(),
                abs: join(abs, name),
                rg_dir: rg_path,
                depth: depth + 1,
            });
        } else {
            out.file(Haystack {
                dir: dir.clone(),
                rg_path,
            });
        }
    }
    if let Some(e) = listing.error.take() {
        out.error(path_error(e, abs, depth + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // `join` must build what `Path::join` builds: rg's path strings come
    // from it, and the printed paths from them.
    #[test]
    fn join_is_path_join() {
        for dir in ["", "/", "a", "a/", "a//", "./", ".", "/w/src", "../x"] {
            for name in ["b", ".hidden", "b c", "é"] {
                let want = Path::new(dir).join(name);
                let got = join(Path::new(dir), OsStr::new(name));
                assert_eq!(got, want, "{dir:?} + {name:?}");
                assert_eq!(got.as_os_str().len(), want.as_os_str().len());
            }
        }
    }
}
