//! The glob invocation's walk, in parallel, in rg's order.
//!
//! `--sort=modified` makes rg walk sequentially (`hiargs.rs` L168): walkdir's
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
//! `Ignore::matched` (`dir.rs` L398) reduces to the overrides, which we ask
//! the same way (`Override::matched(path, is_dir)`, the path built by
//! `Path::join` like walkdir does). Files are stat'ed relative to their
//! directory's descriptor (`fstatat`), without resolving the whole path
//! again for each of them. Not `statx`: `Path::metadata` falls back to
//! `stat` where `statx` is missing (Linux < 4.11) or refused by a seccomp
//! filter (EPERM in older container runtimes); a bare `statx` would fail
//! there, give every file an unknown mtime and so a different order.
//!
//! Only a root that is a readable directory is walked here; anything else
//! (a file, a missing path, an unreadable directory) takes the sequential
//! walker, whose errors keep walkdir's wording.

use std::ffi::OsStr;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use super::walk::GlobFilter;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};

use super::paths::Root;
use super::Budget;

/// A modification time as (seconds, nanoseconds): ordered like `SystemTime`.
pub(crate) type Mtime = Option<(i64, u32)>;

/// One listed file.
pub(crate) struct Listed {
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
}

#[derive(Default)]
struct Found {
    files: Vec<Listed>,
    errors: Vec<WalkError>,
}

struct Ctx<'a> {
    root: &'a Root,
    ov: &'a GlobFilter,
    budget: &'a Budget,
    found: Mutex<Found>,
}

/// The files below `root` in rg's order, and the walk errors in walkdir's
/// order; `None` when the root is not a directory this walker can open.
pub(crate) fn walk(
    root: &Root,
    ov: &GlobFilter,
    budget: &Budget,
) -> Option<(Vec<Listed>, Vec<String>)> {
    let path = root.walk_path();
    if path.as_os_str().is_empty() {
        return None;
    }
    let fd = open_dir(path).ok()?;
    let ctx = Ctx {
        root,
        ov,
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
            Some(fd),
            Arc::from(Vec::new()),
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
    Some((files, errors.into_iter().map(|e| e.msg).collect()))
}

fn position_cmp(a: &Listed, b: &Listed) -> std::cmp::Ordering {
    if Arc::ptr_eq(&a.dir, &b.dir) {
        return a.idx.cmp(&b.idx);
    }
    a.dir
        .iter()
        .chain(std::iter::once(&a.idx))
        .cmp(b.dir.iter().chain(std::iter::once(&b.idx)))
}

fn open_dir(path: &Path) -> rustix::io::Result<rustix::fd::OwnedFd> {
    rustix::fs::open(
        path,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
}

/// walkdir's error for a directory it could not read (`error.rs` L220),
/// wrapped by ignore's `Error::from_walkdir` (`WithPath`).
fn dir_error(ctx: &Ctx<'_>, path: &Path, err: rustix::io::Errno) -> String {
    let shown = ctx.root.unwalk(path).display().to_string();
    let io = std::io::Error::from(err);
    format!("{shown}: IO error for operation on {shown}: {io}")
}

/// What a directory's entries are printed under: the path rg walks for it
/// ([`Root::unwalk`]), with the implicit path's leading `./` removed as
/// [`Root::display`] removes it, and a `/` to join a name to. An entry's
/// printed path is this followed by its name, which is what
/// `Root::display` makes of the entry (`Path::join` adds a `/` unless the
/// directory's path ends with one).
fn printed_dir(root: &Root, dir: &Path) -> Vec<u8> {
    let mut rg = root.unwalk(dir).into_os_string().into_vec();
    if !rg.ends_with(b"/") {
        rg.push(b'/');
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
fn visit<'s>(
    s: &rayon::Scope<'s>,
    ctx: &'s Ctx<'s>,
    path: PathBuf,
    printed: Vec<u8>,
    fd: Option<rustix::fd::OwnedFd>,
    pos: Arc<[u32]>,
) {
    if ctx.budget.stopped() {
        return;
    }
    let fd = match fd.map_or_else(|| open_dir(&path), Ok) {
        Ok(fd) => fd,
        Err(e) => {
            let msg = dir_error(ctx, &path, e);
            let mut found = ctx.found.lock().unwrap_or_else(|e| e.into_inner());
            found.errors.push(WalkError {
                pos: pos.to_vec(),
                msg,
            });
            return;
        }
    };
    let mut dir = match Dir::new(fd) {
        Ok(d) => d,
        Err(_) => return,
    };
    let mut files = Vec::new();
    let mut errors = Vec::new();
    let mut idx: u32 = 0;
    // `path.join(name)` for each entry, built in one buffer.
    let mut child = path.as_os_str().as_bytes().to_vec();
    if !child.ends_with(b"/") {
        child.push(b'/');
    }
    let base = child.len();
    while let Some(ent) = dir.read() {
        if ctx.budget.stopped() {
            break;
        }
        let ent = match ent {
            Ok(ent) => ent,
            Err(e) => {
                errors.push(WalkError {
                    pos: pos.iter().copied().chain([idx]).collect(),
                    msg: dir_error(ctx, &path, e),
                });
                break;
            }
        };
        let name = ent.file_name();
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        let i = idx;
        idx += 1;
        child.truncate(base);
        child.extend_from_slice(bytes);
        let child_path = Path::new(OsStr::from_bytes(&child));
        let Ok(dirfd) = dir.fd() else { break };
        let mut ft = ent.file_type();
        if ft == FileType::Unknown {
            // `std::fs::DirEntry::file_type` falls back to `lstat`.
            match rustix::fs::statat(dirfd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) => ft = FileType::from_raw_mode(st.st_mode),
                Err(e) => {
                    errors.push(WalkError {
                        pos: pos.iter().copied().chain([i]).collect(),
                        msg: entry_error(ctx, child_path, e),
                    });
                    continue;
                }
            }
        }
        if ft == FileType::Directory {
            if ctx.ov.ignored(child_path, true) {
                continue;
            }
            let sub: Arc<[u32]> = pos.iter().copied().chain([i]).collect();
            let mut sub_printed = Vec::with_capacity(printed.len() + bytes.len() + 1);
            sub_printed.extend_from_slice(&printed);
            sub_printed.extend_from_slice(bytes);
            sub_printed.push(b'/');
            let sub_path = child_path.to_path_buf();
            s.spawn(move |s| visit(s, ctx, sub_path, sub_printed, None, sub));
        } else if ft == FileType::RegularFile {
            if ctx.ov.ignored(child_path, false) {
                continue;
            }
            let mut entry = Vec::with_capacity(printed.len() + bytes.len());
            entry.extend_from_slice(&printed);
            entry.extend_from_slice(bytes);
            let printed = entry;
            debug_assert_eq!(printed, ctx.root.display(child_path));
            // `Path::metadata` follows symlinks; a regular file is no link.
            // The field types differ between architectures.
            #[allow(clippy::unnecessary_cast, trivial_numeric_casts)]
            let mtime = rustix::fs::statat(dirfd, name, AtFlags::empty())
                .ok()
                .map(|st| (st.st_mtime as i64, st.st_mtime_nsec as u32));
            if !ctx.budget.spend(printed.len() as u64 + 1) {
                break;
            }
            files.push(Listed {
                mtime,
                dir: pos.clone(),
                idx: i,
                printed,
            });
        }
        // Symlinks below the root and special files are never listed
        // (`walk::is_haystack`).
    }
    if !files.is_empty() || !errors.is_empty() {
        let mut found = ctx.found.lock().unwrap_or_else(|e| e.into_inner());
        found.files.append(&mut files);
        found.errors.append(&mut errors);
    }
}

/// The error of an entry whose type could not be read (walkdir's
/// `Error::from_entry`).
fn entry_error(ctx: &Ctx<'_>, path: &Path, err: rustix::io::Errno) -> String {
    dir_error(ctx, path, err)
}
