//! The glob invocation's walk, in parallel, in rg's order.
//!
//! `--sort=modified` makes rg walk sequentially (`hiargs.rs`): walkdir's
//! depth-first pre-order over each directory's readdir order, then one stable
//! sort on the modification time. The order of two files with the same mtime
//! is therefore their order in that walk. We walk directories in parallel on
//! the engine's thread pool and give every entry its *position path*: the
//! indexes, in readdir order, of each directory on the way down and of the
//! entry in its own directory. Comparing position paths lexicographically is
//! the sequential pre-order, so sorting on (mtime, position path) gives rg's
//! order exactly, whatever order the threads finished in.
//!
//! With every filter off (`--no-ignore --hidden`), ignore 0.4.29's
//! `Ignore::matched` (`dir.rs`) reduces to the overrides, which we ask
//! the same way (`Override::matched(path, is_dir)`, the path built by
//! `Path::join` like walkdir does). Everything goes through the workspace's
//! [`FileSystem`]: files are stat'ed through their directory's handle (on
//! the local disk `fstatat` on its descriptor, without resolving the whole
//! path again for each of them; not `statx`, which is missing on Linux <
//! 4.11 or refused by some seccomp filters, where `Path::metadata` falls
//! back to `stat` and a bare `statx` would give every file an unknown
//! mtime and so a different order).
//!
//! The root is a directory (or a symlink to one: walkdir follows root
//! links); an error opening it is reported as walkdir reports it.

use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::overrides::GlobFilter;
use crate::fs::bytes::{join_needs_sep, os_str, path, path_buf, path_bytes, JOIN_SEP};
use crate::fs::{FileSystem, FileType, Listing};

use super::messages::dir_error;
use super::paths::Root;
use super::Budget;

/// A modification time as (seconds, nanoseconds): ordered like `SystemTime`.
pub(crate) type Mtime = Option<(i64, u32)>;

/// One listed file.
pub(crate) struct ListedFile {
    pub(crate) mtime: Mtime,
    /// The position path of its directory.
    dir: Arc<[u32]>,
    /// Its position in its directory's listing.
    idx: u32,
    pub(crate) printed: Vec<u8>,
}

/// One walk error, at the position where walkdir would report it.
struct WalkError {
    pos: Vec<u32>,
    msg: String,
    /// An error of the whole filesystem (`fs::is_unavailable`): `msg` is
    /// the error alone, reported once.
    unavailable: bool,
}

impl WalkError {
    /// walkdir's error for `path` ([`dir_error`]) at `pos`.
    fn at(pos: Vec<u32>, root: &Root, path: &Path, io: &std::io::Error) -> WalkError {
        let unavailable = crate::fs::is_unavailable(io);
        WalkError {
            pos,
            msg: if unavailable {
                io.to_string()
            } else {
                dir_error(root, path, io)
            },
            unavailable,
        }
    }
}

#[derive(Default)]
struct Found {
    files: Vec<ListedFile>,
    errors: Vec<WalkError>,
}

struct GlobWalk<'a, F: FileSystem> {
    fs: &'a F,
    root: &'a Root,
    override_set: &'a GlobFilter,
    budget: &'a Budget,
    found: Mutex<Found>,
}

/// The files below the directory `root` in rg's order, and the walk errors
/// in walkdir's order (with whether each is an error of the whole
/// filesystem).
pub(crate) fn walk<F: FileSystem>(
    fs: &F,
    root: &Root,
    override_set: &GlobFilter,
    budget: &Budget,
) -> (Vec<ListedFile>, Vec<(String, bool)>) {
    let path = root.walk_path();
    let ctx = GlobWalk {
        fs,
        root,
        override_set,
        budget,
        found: Mutex::new(Found::default()),
    };
    let rg_root = printed_dir(root, path);
    super::pool().scope(|s| {
        visit(
            s,
            &ctx,
            path.to_path_buf(),
            rg_root,
            Arc::from(Vec::new()),
            None,
        )
    });
    let Found {
        mut files,
        mut errors,
    } = ctx.found.into_inner().unwrap_or_else(|e| e.into_inner());
    // One global sort; unreadable metadata last (`hiargs.rs: sort`), ties in
    // walk order. Position paths are unique, so an unstable sort is exact;
    // it runs on the pool's threads too.
    use rayon::slice::ParallelSliceMut;
    super::pool().install(|| {
        files.par_sort_unstable_by(|a, b| {
            use std::cmp::Ordering;
            match (a.mtime, b.mtime) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
            .then_with(|| position_cmp(a, b))
        })
    });
    errors.sort_by(|a, b| a.pos.cmp(&b.pos));
    let errors = errors.into_iter().map(|e| (e.msg, e.unavailable));
    (files, errors.collect())
}

fn position_cmp(a: &ListedFile, b: &ListedFile) -> std::cmp::Ordering {
    if Arc::ptr_eq(&a.dir, &b.dir) {
        return a.idx.cmp(&b.idx);
    }
    a.dir
        .iter()
        .chain(std::iter::once(&a.idx))
        .cmp(b.dir.iter().chain(std::iter::once(&b.idx)))
}

thread_local! {
    /// The listing buffers of the thread's last directory, reused.
    static LISTING: RefCell<Listing> = RefCell::new(Listing::new());
}

/// What a directory's entries are printed under: the path rg walks for it
/// ([`Root::unwalk`]), with the implicit path's leading `./` removed as
/// [`Root::display`] removes it, and a `/` to join a name to. An entry's
/// printed path is this followed by its name, which is what
/// `Root::display` makes of the entry (`Path::join` adds a `/` unless the
/// directory's path ends with one).
fn printed_dir(root: &Root, dir: &Path) -> Vec<u8> {
    let mut rg = path_bytes(&root.unwalk(dir)).to_vec();
    if join_needs_sep(&rg) {
        rg.push(JOIN_SEP);
    }
    if root.is_implicit() && rg.starts_with(b"./") {
        rg.drain(..2);
    }
    rg
}

/// Read one directory (`pos` is its position path; `printed` what its
/// entries are printed under, [`printed_dir`]), list its files and spawn a
/// task per subdirectory. The directory is opened by the task itself so
/// that only running tasks hold descriptors.
fn visit<'s, F: FileSystem>(
    s: &rayon::Scope<'s>,
    ctx: &'s GlobWalk<'s, F>,
    path: PathBuf,
    printed: Vec<u8>,
    pos: Arc<[u32]>,
    ahead: Option<F::Dir>,
) {
    if ctx.budget.stopped() {
        return;
    }
    // Opened by the task itself, by its whole path, so that only running
    // tasks hold descriptors (queued ones may be many). walkdir lists by
    // rg's own (relative) path: past `PATH_MAX` that fails as rg fails,
    // and a longer absolute path of ours must not fail before it.
    let opened = if super::paths::too_long_for_rg(&ctx.root.unwalk(&path)) {
        Err(super::paths::name_too_long())
    } else if let Some(dir) = ahead {
        Ok(dir)
    } else {
        match ctx.fs.open_dir(&path) {
            Err(e) if super::paths::is_name_too_long(&e) => open_dir_stepwise(ctx, &path),
            other => other,
        }
    };
    let handle = match opened {
        Ok(h) => h,
        Err(e) => {
            let err = WalkError::at(pos.to_vec(), ctx.root, &path, &e);
            let mut found = ctx.found.lock().unwrap_or_else(|e| e.into_inner());
            found.errors.push(err);
            return;
        }
    };
    let mut listing = LISTING.with(|l| std::mem::take(&mut *l.borrow_mut()));
    ctx.fs.list(&handle, &mut listing);
    let handle = &handle;
    let path = &path;
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut idx: u32 = 0;
    // `path.join(name)` for each entry, built in one buffer.
    let mut child = path_bytes(path).to_vec();
    if join_needs_sep(&child) {
        child.push(JOIN_SEP);
    }
    let base = child.len();
    for (n, (bytes, kind)) in listing.iter().enumerate() {
        if ctx.budget.stopped_at(n) {
            break;
        }
        let i = idx;
        idx += 1;
        child.truncate(base);
        child.extend_from_slice(bytes);
        let child_path = path_of(&child);
        let name = os_str(bytes);
        let mut kind = kind;
        if kind == FileType::Unknown {
            // `std::fs::DirEntry::file_type` falls back to `lstat`.
            match ctx.fs.metadata_at(handle, path, &name, false) {
                Ok(m) => kind = m.kind,
                Err(e) => {
                    errors.push(WalkError::at(
                        pos.iter().copied().chain([i]).collect(),
                        ctx.root,
                        &child_path,
                        &e,
                    ));
                    continue;
                }
            }
        }
        if kind == FileType::Dir {
            if ctx.override_set.ignored(&child_path, true) {
                continue;
            }
            let sub: Arc<[u32]> = pos.iter().copied().chain([i]).collect();
            let mut sub_printed = Vec::with_capacity(printed.len() + bytes.len() + 1);
            sub_printed.extend_from_slice(&printed);
            sub_printed.extend_from_slice(bytes);
            sub_printed.push(JOIN_SEP);
            let sub_path = path_buf(child.clone());
            // A filesystem whose handles hold no descriptor and whose
            // listings are slow to come starts listing it now, and below
            // it: glob lists every directory but the VCS ones.
            let ahead = if ctx.fs.lists_ahead() {
                ctx.fs.will_list_tree(handle, path, &name);
                ctx.fs.open_dir_at(handle, path, &name).ok()
            } else {
                None
            };
            s.spawn(move |s| visit(s, ctx, sub_path, sub_printed, sub, ahead));
        } else if kind == FileType::File {
            if ctx.override_set.ignored(&child_path, false) {
                continue;
            }
            let mut entry = Vec::with_capacity(printed.len() + bytes.len());
            entry.extend_from_slice(&printed);
            entry.extend_from_slice(bytes);
            let printed = entry;
            debug_assert_eq!(printed, ctx.root.display(&child_path));
            // `Path::metadata` follows symlinks; a regular file is no link,
            // so the metadata it was listed with, if any, is the same.
            let mtime = match listing.metadata(n) {
                Some(m) => m.mtime,
                None => ctx
                    .fs
                    .metadata_at(handle, path, &name, true)
                    .ok()
                    .and_then(|m| m.mtime),
            };
            if !ctx.budget.spend(printed.len() as u64 + 1) {
                break;
            }
            files.push(ListedFile {
                mtime,
                dir: pos.clone(),
                idx: i,
                printed,
            });
        }
        // Symlinks below the root and special files are never listed
        // (`Haystack::is_explicit` is only for the root).
    }
    if let Some(e) = listing.take_error() {
        errors.push(WalkError::at(
            pos.iter().copied().chain([idx]).collect(),
            ctx.root,
            path,
            &e,
        ));
    }
    LISTING.with(|l| *l.borrow_mut() = listing);
    if !files.is_empty() || !errors.is_empty() {
        let mut found = ctx.found.lock().unwrap_or_else(|e| e.into_inner());
        found.files.append(&mut files);
        found.errors.append(&mut errors);
    }
}

/// Open `path`, below the walk's root, one component at a time from the
/// root: for a directory whose absolute path is too long for the kernel
/// while rg's relative path to it is not.
fn open_dir_stepwise<F: FileSystem>(ctx: &GlobWalk<'_, F>, path: &Path) -> std::io::Result<F::Dir> {
    let root = ctx.root.walk_path();
    let rest = path
        .strip_prefix(root)
        .map_err(|_| super::paths::name_too_long())?;
    let mut dir = ctx.fs.open_dir(root)?;
    let mut at = root.to_path_buf();
    for name in rest.iter() {
        dir = ctx.fs.open_dir_at(&dir, &at, name)?;
        at.push(name);
    }
    Ok(dir)
}

fn path_of(b: &[u8]) -> std::borrow::Cow<'_, Path> {
    path(b)
}
