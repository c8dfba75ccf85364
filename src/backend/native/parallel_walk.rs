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

use crate::sync::RecoverPoison;
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::overrides::GlobFilter;
use crate::fs::names::{join_needs_sep, os_str, path, path_buf, path_bytes, JOIN_SEP};
use crate::fs::{FileType, FsHints, Listing, Metadata};
use crate::request::VCS_DIR_NAMES;

use super::messages::dir_error;
use super::paths::Root;
use super::Budget;

/// A modification time as (seconds, nanoseconds): ordered like `SystemTime`.
pub(crate) type Mtime = Option<(i64, u32)>;

/// One listed file.
pub(crate) struct ListedFile {
    pub(crate) mtime: Mtime,
    pub(crate) printed: Vec<u8>,
}

/// Files listed one after another in one directory, with no subdirectory
/// between them: contiguous in walk order. `at` is the position path of
/// the first (its directory's, then its index in the listing); runs sort
/// by it into walk order.
struct Run {
    at: Box<[u32]>,
    files: Vec<ListedFile>,
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
    runs: Vec<Run>,
    errors: Vec<WalkError>,
}

struct GlobWalk<'a, F: FsHints> {
    fs: &'a F,
    root: &'a Root,
    override_set: &'a GlobFilter,
    budget: &'a Budget,
    found: Mutex<Found>,
}

/// The files below the directory `root` in rg's order, and the walk errors
/// in walkdir's order (with whether each is an error of the whole
/// filesystem), walked on `pool` (the engine's).
pub(crate) fn walk<F: FsHints>(
    fs: &F,
    pool: &rayon::ThreadPool,
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
    pool.scope(|s| {
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
        mut runs,
        mut errors,
    } = ctx.found.into_inner().recover_poison();
    // Walk order first: the runs by their first file's position path
    // (unique, so an unstable sort is exact), far fewer than the files.
    // Then one stable sort by modification time, unreadable metadata last
    // (`hiargs.rs: sort`), which keeps ties in walk order; a tree whose
    // files share one mtime (a checkout) is then one run for the sort.
    use rayon::slice::ParallelSliceMut;
    runs.sort_unstable_by(|a, b| a.at.cmp(&b.at));
    let mut files: Vec<ListedFile> = Vec::with_capacity(runs.iter().map(|r| r.files.len()).sum());
    for run in runs {
        files.extend(run.files);
    }
    pool.install(|| {
        files.par_sort_by(|a, b| {
            use std::cmp::Ordering;
            match (a.mtime, b.mtime) {
                (Some(x), Some(y)) => x.cmp(&y),
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (None, None) => Ordering::Equal,
            }
        })
    });
    errors.sort_by(|a, b| a.pos.cmp(&b.pos));
    let errors = errors.into_iter().map(|e| (e.msg, e.unavailable));
    (files, errors.collect())
}

thread_local! {
    /// The listing buffers of the thread's last directory, reused.
    static LISTING: RefCell<Listing> = RefCell::new(Listing::new());
}

/// What a directory's entries are printed under: the path rg walks for it
/// ([`Root::rg_path`]), with the implicit path's leading `./` removed as
/// [`Root::display`] removes it, and a `/` to join a name to. An entry's
/// printed path is this followed by its name, which is what
/// `Root::display` makes of the entry (`Path::join` adds a `/` unless the
/// directory's path ends with one).
fn printed_dir(root: &Root, dir: &Path) -> Vec<u8> {
    let mut rg = path_bytes(&root.rg_path(dir)).to_vec();
    if join_needs_sep(&rg) {
        rg.push(JOIN_SEP);
    }
    if root.is_implicit() && rg.starts_with(b"./") {
        rg.drain(..2);
    }
    rg
}

/// Read one directory (`pos` is its position path; `printed` what its
/// entries are printed under, [`printed_dir`]; `ahead` its handle when it
/// was opened ahead), list its files and spawn a task per subdirectory.
fn visit<'s, F: FsHints>(
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
    let handle = match open_visited(ctx, &path, ahead) {
        Ok(h) => h,
        Err(e) => {
            let err = WalkError::at(pos.to_vec(), ctx.root, &path, &e);
            let mut found = ctx.found.lock().recover_poison();
            found.errors.push(err);
            return;
        }
    };
    let mut listing = LISTING.with(|l| std::mem::take(&mut *l.borrow_mut()));
    ctx.fs.list(&handle, &mut listing);
    let mut dir = DirVisit::new(ctx, &handle, &path, &printed, &pos);
    let mut idx: u32 = 0;
    for (n, (name, kind)) in listing.iter().enumerate() {
        if ctx.budget.stopped_at(n) {
            break;
        }
        let i = idx;
        idx += 1;
        dir.child.truncate(dir.base);
        dir.child.extend_from_slice(name);
        let kind = if kind == FileType::Unknown {
            match dir.unknown_kind(i, name) {
                Some(kind) => kind,
                None => continue,
            }
        } else {
            kind
        };
        let within_budget = match kind {
            FileType::Dir => {
                dir.subdirectory(s, i, name);
                true
            }
            FileType::File => dir.file(i, name, listing.metadata(n)),
            // Symlinks below the root and special files are never listed
            // (`Haystack::is_explicit` is only for the root).
            _ => true,
        };
        if !within_budget {
            break;
        }
    }
    if let Some(e) = listing.take_error() {
        dir.errors.push(WalkError::at(
            pos.iter().copied().chain([idx]).collect(),
            ctx.root,
            &path,
            &e,
        ));
    }
    LISTING.with(|l| *l.borrow_mut() = listing);
    dir.report();
}

/// The handle of a directory to visit. It is opened by the task that lists
/// it, by its whole path, so that only running tasks hold descriptors
/// (queued ones may be many), unless the filesystem opened it `ahead`.
/// walkdir lists by rg's own (relative) path: past `PATH_MAX` that fails
/// as rg fails, and a longer absolute path of ours must not fail before it.
fn open_visited<F: FsHints>(
    ctx: &GlobWalk<'_, F>,
    path: &Path,
    ahead: Option<F::Dir>,
) -> std::io::Result<F::Dir> {
    if super::paths::too_long_for_rg(&ctx.root.rg_path(path)) {
        Err(super::paths::name_too_long())
    } else if let Some(dir) = ahead {
        Ok(dir)
    } else {
        match ctx.fs.open_dir(path) {
            Err(e) if super::paths::is_name_too_long(&e) => open_dir_stepwise(ctx, path),
            other => other,
        }
    }
}

/// One directory being listed ([`visit`]): where it is, the entry at hand,
/// and what its entries gave.
struct DirVisit<'s, 'v, F: FsHints> {
    ctx: &'s GlobWalk<'s, F>,
    handle: &'v F::Dir,
    path: &'v Path,
    printed: &'v [u8],
    pos: &'v Arc<[u32]>,
    /// `path.join(name)` of the entry at hand, built in one buffer: the
    /// directory's path and a separator are its first `base` bytes.
    child: Vec<u8>,
    base: usize,
    /// The run of files at hand, and its first file's index.
    files: Vec<ListedFile>,
    first: u32,
    runs: Vec<Run>,
    errors: Vec<WalkError>,
}

impl<'s, 'v, F: FsHints> DirVisit<'s, 'v, F> {
    fn new(
        ctx: &'s GlobWalk<'s, F>,
        handle: &'v F::Dir,
        path: &'v Path,
        printed: &'v [u8],
        pos: &'v Arc<[u32]>,
    ) -> DirVisit<'s, 'v, F> {
        let mut child = path_bytes(path).to_vec();
        if join_needs_sep(&child) {
            child.push(JOIN_SEP);
        }
        DirVisit {
            ctx,
            handle,
            path,
            printed,
            pos,
            base: child.len(),
            child,
            files: Vec::new(),
            first: 0,
            runs: Vec::new(),
            errors: Vec::new(),
        }
    }

    /// The kind of the `i`-th entry, `name`, listed without one:
    /// `std::fs::DirEntry::file_type` falls back to `lstat`. `None`, with
    /// the error noted, when that fails.
    fn unknown_kind(&mut self, i: u32, name: &[u8]) -> Option<FileType> {
        match self
            .ctx
            .fs
            .metadata_at(self.handle, self.path, &os_str(name), false)
        {
            Ok(m) => Some(m.kind),
            Err(e) => {
                self.errors.push(WalkError::at(
                    self.pos.iter().copied().chain([i]).collect(),
                    self.ctx.root,
                    &path_of(&self.child),
                    &e,
                ));
                None
            }
        }
    }

    /// The `i`-th entry, `name`, a directory: spawn its visit unless the
    /// globs leave it out.
    fn subdirectory(&mut self, s: &rayon::Scope<'s>, i: u32, name: &[u8]) {
        let ctx = self.ctx;
        if ctx.override_set.ignored(&path_of(&self.child), name, true) {
            return;
        }
        // Its files come between the run before it and the run after.
        self.end_run();
        let sub: Arc<[u32]> = self.pos.iter().copied().chain([i]).collect();
        let mut sub_printed = Vec::with_capacity(self.printed.len() + name.len() + 1);
        sub_printed.extend_from_slice(self.printed);
        sub_printed.extend_from_slice(name);
        sub_printed.push(JOIN_SEP);
        let sub_path = path_buf(self.child.clone());
        // A filesystem whose handles hold no descriptor and whose
        // listings are slow to come starts listing it now, and below
        // it: glob lists every directory but the VCS ones.
        let ahead = if ctx.fs.lists_ahead() {
            let name = os_str(name);
            ctx.fs
                .will_list_tree(self.handle, self.path, &name, &VCS_DIR_NAMES);
            ctx.fs.open_dir_at(self.handle, self.path, &name).ok()
        } else {
            None
        };
        s.spawn(move |s| visit(s, ctx, sub_path, sub_printed, sub, ahead));
    }

    /// The `i`-th entry, `name`, a regular file listed with `listed`
    /// metadata, if any: listed unless the globs leave it out. False when
    /// printing it crosses the raw budget.
    fn file(&mut self, i: u32, name: &[u8], listed: Option<&Metadata>) -> bool {
        let ctx = self.ctx;
        if ctx.override_set.ignored(&path_of(&self.child), name, false) {
            return true;
        }
        let mut printed = Vec::with_capacity(self.printed.len() + name.len());
        printed.extend_from_slice(self.printed);
        printed.extend_from_slice(name);
        debug_assert_eq!(printed, ctx.root.display(&path_of(&self.child)));
        // `Path::metadata` follows symlinks; a regular file is no link,
        // so the metadata it was listed with, if any, is the same.
        let mtime = match listed {
            Some(m) => m.mtime,
            None => ctx
                .fs
                .metadata_at(self.handle, self.path, &os_str(name), true)
                .ok()
                .and_then(|m| m.mtime),
        };
        if !ctx.budget.spend(printed.len() as u64 + 1) {
            return false;
        }
        if self.files.is_empty() {
            self.first = i;
        }
        self.files.push(ListedFile { mtime, printed });
        true
    }

    /// Close the run of files at hand.
    fn end_run(&mut self) {
        if !self.files.is_empty() {
            self.runs.push(Run {
                at: self.pos.iter().copied().chain([self.first]).collect(),
                files: std::mem::take(&mut self.files),
            });
        }
    }

    /// Add what the directory's entries gave to the walk's findings.
    fn report(mut self) {
        self.end_run();
        if !self.runs.is_empty() || !self.errors.is_empty() {
            let mut found = self.ctx.found.lock().recover_poison();
            found.runs.append(&mut self.runs);
            found.errors.append(&mut self.errors);
        }
    }
}

/// Open `path`, below the walk's root, one component at a time from the
/// root: for a directory whose absolute path is too long for the kernel
/// while rg's relative path to it is not.
fn open_dir_stepwise<F: FsHints>(ctx: &GlobWalk<'_, F>, path: &Path) -> std::io::Result<F::Dir> {
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
