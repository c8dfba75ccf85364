//! The grep walk below a directory root: rg's walk (ignore 0.4.29 `walk.rs:
//! Worker::run_one`, `Work::read_dir`, `generate_work`),
//! with every directory listed once.
//!
//! rg decides a directory's ignore files from the listing it has just read
//! (`dir.rs: add_child_with_entries`). The engine's ignore decisions are its
//! own ([`RgIgnore`], on rg's path strings). This walk goes through the
//! workspace's [`FileSystem`]: it lists a directory once, into buffers kept
//! for the whole walk, opens its subdirectories and, on the searching
//! threads, its files through the directory's handle (on the local disk a
//! descriptor: `openat`, the kernel resolves one name, not the whole path),
//! and builds the directory's rules from the names it saw.
//!
//! What rg reports is reproduced: a directory that cannot be opened or
//! listed (`read_dir` errors, with the directory's path), an entry whose
//! type cannot be read (`DirEntryRaw::from_entry`, with the entry's path).
//! Symbolic links are not followed (rg's default), and only regular files
//! and directories can become haystacks or be descended into; other
//! entries are skipped (`is_haystack`: not a file at depth > 0).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use ignore::overrides::Override;
use ignore::Error;

use crate::fs::names::{join_needs_sep, os_str, path_buf, path_bytes, JOIN_SEP};
use crate::fs::{FileType, FsHints, Listing};

use crate::event::Stats;

use super::messages::{at_path, Messages};
use super::paths::{name_too_long, too_long_for_rg, Root};
use super::rgignore::{IgnoreMemo, NamesPresent, Node, RgIgnore};

/// How many listed directories may hold a descriptor at once (directories
/// whose files wait in queued batches or are being searched, and those on
/// the walk's stack) before the walk opens another: past it, the walking
/// thread searches queued files itself, or waits for the threads searching
/// theirs ([`Output::release_dirs`]). The walk must not run the process out of
/// descriptors, however far ahead of the searching threads it gets and
/// however many there are; only its own stack of parents can take it past
/// the bound.
pub(crate) const MAX_LIVE_DIRS: usize = 64;

/// A listed directory: the handle its files are opened through, and its
/// absolute path.
pub(crate) struct Dir<F: FsHints> {
    handle: F::Dir,
    path: PathBuf,
    live: Arc<AtomicUsize>,
}

impl<F: FsHints> Dir<F> {
    /// A listed directory, counted in `live` until dropped.
    pub(crate) fn new(handle: F::Dir, path: PathBuf, live: &Arc<AtomicUsize>) -> Arc<Dir<F>> {
        live.fetch_add(1, Ordering::Relaxed);
        Arc::new(Dir {
            handle,
            path,
            live: live.clone(),
        })
    }

    /// The directory's handle.
    pub(crate) fn handle(&self) -> &F::Dir {
        &self.handle
    }

    /// The directory's absolute path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl<F: FsHints> Drop for Dir<F> {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A regular file to search: its directory and the path rg walks for it
/// (`Root::rg_path` of the engine's absolute path, from which what rg
/// prints is made).
pub(crate) struct Haystack<F: FsHints> {
    pub(crate) dir: Arc<Dir<F>>,
    pub(crate) rg_path: PathBuf,
    /// Where the file's name starts in `rg_path`.
    name_at: usize,
    /// The file's position in its directory's listing
    /// ([`FsHints::known_miss`]'s hint).
    pub(crate) at: usize,
}

impl<F: FsHints> Haystack<F> {
    /// The file `rg_path` of `dir`, whose name (its last `name_len` bytes)
    /// is at position `at` of the directory's listing.
    pub(crate) fn new(dir: Arc<Dir<F>>, rg_path: PathBuf, name_len: usize, at: usize) -> Self {
        Haystack {
            dir,
            name_at: rg_path.as_os_str().len() - name_len,
            rg_path,
            at,
        }
    }

    /// The file's name in its directory: the end of `rg_path`, which
    /// [`join`] made.
    pub(crate) fn name(&self) -> &std::ffi::OsStr {
        #[cfg(unix)]
        {
            use std::os::unix::ffi::OsStrExt;
            std::ffi::OsStr::from_bytes(&self.rg_path.as_os_str().as_bytes()[self.name_at..])
        }
        #[cfg(not(unix))]
        {
            let _ = self.name_at;
            self.rg_path.file_name().unwrap_or(self.rg_path.as_os_str())
        }
    }
}

/// `dir.join(name)` (`Path::join`: a `/` between them unless `dir` is
/// empty or ends with one) in one allocation of the exact size.
pub(crate) fn join(dir: &Path, name: &[u8]) -> PathBuf {
    let d = path_bytes(dir);
    let sep = join_needs_sep(d);
    let mut v = Vec::with_capacity(d.len() + usize::from(sep) + name.len());
    v.extend_from_slice(d);
    if sep {
        v.push(JOIN_SEP);
    }
    v.extend_from_slice(name);
    path_buf(v)
}

/// Where the walk sends what it finds.
pub(crate) trait Output<F: FsHints> {
    /// A file rg would search.
    fn file(&mut self, file: Haystack<F>);
    /// An error rg reports with `err_message!` (exit code 2).
    fn error(&mut self, err: Error);
    /// Whether the call is over (budget crossed or cancelled).
    fn stopped(&self) -> bool;
    /// [`Output::stopped`] at the `i`-th entry of a listing, which may look
    /// at the cancellation only every few entries.
    fn stopped_at(&self, i: usize) -> bool;
    /// Let go of some directories' descriptors (search files that hold
    /// them, or wait for the threads searching them); false when nothing
    /// but the walk itself holds them.
    fn release_dirs(&mut self) -> bool;
    /// `files` files the filesystem's prefilter ruled out without their
    /// being walked to one by one (a kept walk's, `kept.rs`), counted as
    /// searched (`missed`).
    fn ruled_out(&mut self, files: u64, missed: &Stats);
    /// The walk errors of a kept walk, as [`Output::error`] rendered them.
    fn kept_errors(&mut self, msgs: &Messages);
}

/// What [`walk`] does below the root once the root is listed and its
/// rules read.
pub(crate) enum Below {
    /// Walk it.
    Walk,
    /// Nothing: the output has it already (a kept walk replayed).
    Done,
}

/// A directory still to list.
struct Pending<F: FsHints> {
    /// The listed directory it is an entry of.
    parent: Arc<Dir<F>>,
    /// The rules of that directory.
    parent_node: Arc<Node>,
    abs: PathBuf,
    rg_dir: PathBuf,
    depth: usize,
}

/// Note, in a directory's listing, the names rg looks up in it.
fn note_names(listing: &Listing) -> NamesPresent {
    let mut listed = NamesPresent::default();
    for (name, _) in listing.iter() {
        listed.note(name);
    }
    listed
}

/// rg's error for `path` (`Error::from(err).with_path(path).with_depth(depth)`).
fn path_error(err: std::io::Error, path: &Path, depth: usize) -> Error {
    Error::WithDepth {
        depth,
        err: Box::new(at_path(Error::Io(err), path)),
    }
}

/// Walk the directory `root` (a directory, or a symlink to one: rg's
/// walker stats a root following links, `DirEntryRaw::from_path`) from the
/// workdir `real_workdir` with the include globs `override_set`, sending
/// its haystacks and walk errors to `out`. Returns the call's ignore state, which holds the
/// ignore-file messages to report. Once the root is listed and the rules
/// of it and its parents read, `below` says whether the tree below it is
/// walked (a kept walk stands in for it: `kept.rs`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn walk<F: FsHints, O: Output<F>>(
    fs: &F,
    root: &Root,
    real_workdir: &Path,
    override_set: Override,
    memo: &IgnoreMemo,
    live: &Arc<AtomicUsize>,
    out: &mut O,
    below: impl FnOnce(&RgIgnore, &mut O) -> Below,
) -> RgIgnore {
    let mut listing = Listing::new();
    let abs = root.walk_path();
    let root_handle = match fs.open_dir(abs) {
        Ok(h) => h,
        Err(e) => {
            // `run_one`: the parents' rules are read first, the root's
            // never (its listing failed).
            let ignore_rules = RgIgnore::with_root_listing(
                fs,
                root,
                real_workdir,
                override_set,
                memo,
                Some(NamesPresent::default()),
            );
            out.error(path_error(e, abs, 0));
            return ignore_rules;
        }
    };
    fs.list(&root_handle, &mut listing);
    let ignore_rules = RgIgnore::with_root_listing(
        fs,
        root,
        real_workdir,
        override_set,
        memo,
        Some(note_names(&listing)),
    );
    if let Below::Done = below(&ignore_rules, out) {
        return ignore_rules;
    }
    let root_dir = Dir::new(root_handle, abs.to_path_buf(), live);
    let root_node = ignore_rules.root_node().clone();
    let mut stack = Vec::new();
    visit_entries(
        fs,
        &ignore_rules,
        &mut listing,
        &root_dir,
        &root_node,
        0,
        &mut stack,
        out,
    );
    drop(root_dir);
    while let Some(p) = stack.pop() {
        if out.stopped() {
            break;
        }
        while live.load(Ordering::Relaxed) >= MAX_LIVE_DIRS && out.release_dirs() {}
        if too_long_for_rg(&p.rg_dir) {
            out.error(path_error(name_too_long(), &p.abs, p.depth));
            continue;
        }
        let name = p.abs.file_name().unwrap_or_default();
        let handle = match fs.open_dir_at(p.parent.handle(), p.parent.path(), name) {
            Ok(h) => h,
            Err(e) => {
                out.error(path_error(e, &p.abs, p.depth));
                continue;
            }
        };
        drop(p.parent);
        fs.list(&handle, &mut listing);
        let node = ignore_rules.enter(fs, &p.parent_node, &p.abs, p.rg_dir, note_names(&listing));
        let dir = Dir::new(handle, p.abs, live);
        visit_entries(
            fs,
            &ignore_rules,
            &mut listing,
            &dir,
            &node,
            p.depth,
            &mut stack,
            out,
        );
    }
    ignore_rules
}

/// `run_one`'s loop over one directory's entries (`generate_work`), then
/// the listing's error.
#[allow(clippy::too_many_arguments)]
fn visit_entries<F: FsHints>(
    fs: &F,
    ignore_rules: &RgIgnore,
    listing: &mut Listing,
    dir: &Arc<Dir<F>>,
    node: &Arc<Node>,
    depth: usize,
    stack: &mut Vec<Pending<F>>,
    out: &mut impl Output<F>,
) {
    let abs = dir.path();
    for (i, (name, ft)) in listing.iter().enumerate() {
        if out.stopped_at(i) {
            return;
        }
        let ft = if ft == FileType::Unknown {
            // `DirEntry::file_type` falls back to `lstat` without a
            // `d_type`; its error names the entry (`from_entry`).
            match fs.metadata_at(dir.handle(), abs, &os_str(name), false) {
                Ok(m) => m.kind,
                Err(e) => {
                    let path = join(abs, name);
                    out.error(Error::WithDepth {
                        depth: depth + 1,
                        err: Box::new(path_error(e, &path, depth + 1)),
                    });
                    continue;
                }
            }
        } else {
            ft
        };
        let is_dir = ft == FileType::Dir;
        if !is_dir && ft != FileType::File {
            // Links, FIFOs, sockets, devices below the root: never searched.
            continue;
        }
        let rg_path = join(node.rg_dir(), name);
        debug_assert_eq!(rg_path, ignore_rules.root().rg_path(&join(abs, name)));
        if !ignore_rules.decide(node, &rg_path, name, is_dir, listing.is_hidden(i)) {
            continue;
        }
        if is_dir {
            fs.will_list(dir.handle(), abs, &os_str(name));
            stack.push(Pending {
                parent: dir.clone(),
                parent_node: node.clone(),
                abs: join(abs, name),
                rg_dir: rg_path,
                depth: depth + 1,
            });
        } else {
            // Before the haystack is queued, so that the read it starts is
            // the one a searching thread then finds.
            fs.will_open(dir.handle(), abs, &os_str(name), listing.metadata(i));
            out.file(Haystack::new(dir.clone(), rg_path, name.len(), i));
        }
    }
    if let Some(e) = listing.take_error() {
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
                let got = join(Path::new(dir), name.as_bytes());
                assert_eq!(got, want, "{dir:?} + {name:?}");
                assert_eq!(got.as_os_str().len(), want.as_os_str().len());
            }
        }
    }
}
