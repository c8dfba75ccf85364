//! The overlay against the disk: an empty upper layer must be the lower
//! filesystem (every operation, errors included), and a written one must
//! show its files through the merged view without touching the lower layer.
//! Both layers are temp directories on disk, through [`LocalFs`].

use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Read;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::*;
use crate::{names, LocalDir, LocalFile, Version};

/// A lower tree, a directory outside it, and a place for the upper layer.
struct Tree {
    _tmp: tempfile::TempDir,
    /// The lower root (canonical).
    root: PathBuf,
    /// A directory beside the root: outside the overlay's writable part.
    outside: PathBuf,
    /// The upper layer's root (created by the first write).
    upper: PathBuf,
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

fn write(path: &Path, data: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, data).unwrap();
}

/// Files, directories, symlinks of every sort, a FIFO, a socket, and (when
/// the tests do not run as root, who reads everything) an unreadable
/// directory.
fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let base = std::fs::canonicalize(tmp.path()).unwrap();
    let root = base.join("work");
    let outside = base.join("outside");
    write(&root.join("a.txt"), "alpha\n");
    write(&root.join("b.txt"), "beta\n");
    write(&root.join(".gitignore"), "*.log\n");
    write(&root.join("dir/inner.txt"), "inner\n");
    write(&root.join("dir/sub/deep.txt"), "deep\n");
    write(&outside.join("o.txt"), "outside\n");
    std::fs::set_permissions(root.join("a.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
    let ln = |target: &str, name: &str| symlink(target, root.join(name)).unwrap();
    ln("a.txt", "link_file");
    ln("dir/sub", "link_dir");
    ln("link_dir", "link_link");
    ln("nowhere.txt", "dangling");
    ln("loop_b", "loop_a");
    ln("loop_a", "loop_b");
    ln("self", "self");
    ln("a.txt/", "link_file_slash");
    ln(".", "dot");
    ln("..", "up");
    ln(outside.to_str().unwrap(), "abs_out");
    ln(root.join("dir").to_str().unwrap(), "abs_in");
    // chainN: N links to a.txt.
    for i in 1..=41 {
        let target = if i == 1 {
            "a.txt".to_string()
        } else {
            format!("chain{}", i - 1)
        };
        ln(&target, &format!("chain{i}"));
    }
    let status = std::process::Command::new("mkfifo")
        .arg(root.join("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    drop(std::os::unix::net::UnixListener::bind(root.join("sock")).unwrap());
    // Unreadable unless the tests run as root (see `Refusing` for a
    // refused directory whoever runs them).
    write(&root.join("locked/hidden.txt"), "hidden\n");
    std::fs::set_permissions(root.join("locked"), std::fs::Permissions::from_mode(0o000)).unwrap();
    Tree {
        upper: base.join("upper"),
        _tmp: tmp,
        root,
        outside,
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        // Let the temp dir's removal into the unreadable directory.
        let _ = std::fs::set_permissions(
            self.root.join("locked"),
            std::fs::Permissions::from_mode(0o700),
        );
    }
}

type LocalOverlay = OverlayFs<LocalFs, LocalFs>;

fn overlay(t: &Tree) -> LocalOverlay {
    OverlayFs::new(
        Arc::new(LocalFs::new()),
        &t.root,
        Arc::new(LocalFs::new()),
        &t.upper,
    )
    .unwrap()
}

fn none() -> CancelToken {
    CancelToken::new()
}

fn put(fs: &impl FsWrite, path: &Path, data: &str) -> Written {
    fs.write(path, data.as_bytes(), &WriteGuard::None, &none())
        .unwrap()
}

fn read(fs: &impl FileSystem, path: &Path) -> String {
    let mut s = String::new();
    fs.open(path, &none())
        .unwrap()
        .read_to_string(&mut s)
        .unwrap();
    s
}

fn err(e: &io::Error) -> String {
    format!("Err({e}; {:?}; {:?})", e.kind(), e.raw_os_error())
}

fn show<T: fmt::Debug>(r: io::Result<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => err(&e),
    }
}

/// Every whole-path operation of the seam on `path`, as text.
fn probe<F: FileSystem>(fs: &F, path: &Path) -> String {
    let mut out = String::new();
    let w = &mut out;
    writeln!(w, "canonicalize {}", show(fs.canonicalize(path))).unwrap();
    writeln!(w, "metadata {}", show(fs.metadata(path))).unwrap();
    writeln!(w, "symlink_metadata {}", show(fs.symlink_metadata(path))).unwrap();
    writeln!(w, "read_link {}", show(fs.read_link(path))).unwrap();
    writeln!(w, "read_control {}", show(fs.read_control(path))).unwrap();
    let fifo = fs.metadata(path).is_ok_and(|m| m.kind == FileType::Fifo);
    let opened = fs.open(path, &none()).and_then(|mut f| {
        let mut data = Vec::new();
        if !fifo {
            f.read_to_end(&mut data)?;
        }
        Ok(data)
    });
    writeln!(w, "open {}", show(opened)).unwrap();
    match fs.open_dir(path) {
        Ok(dir) => {
            let mut listing = Listing::new();
            fs.list(&dir, &mut listing);
            let names: Vec<_> = listing.iter().map(|(n, k)| (n.to_vec(), k)).collect();
            writeln!(w, "list {names:?} {:?}", listing.error().map(err)).unwrap();
        }
        Err(e) => writeln!(w, "open_dir {}", err(&e)).unwrap(),
    }
    out
}

/// The tree below `path` through directory handles, as the engine walks
/// it: each listing in its order, each entry stat'ed both ways, files
/// opened and read, directories entered.
fn dump<F: FileSystem>(fs: &F, path: &Path) -> String {
    let mut out = String::new();
    match fs.open_dir(path) {
        Ok(dir) => dump_dir(fs, &dir, path, &mut out),
        Err(e) => writeln!(out, "open_dir {}", err(&e)).unwrap(),
    }
    out
}

fn dump_dir<F: FileSystem>(fs: &F, dir: &F::Dir, path: &Path, out: &mut String) {
    let mut listing = Listing::new();
    fs.list(dir, &mut listing);
    writeln!(out, "{}: {:?}", path.display(), listing.error().map(err)).unwrap();
    for (name, kind) in listing.iter() {
        let name = names::os_str(name);
        let lstat = show(fs.metadata_at(dir, path, &name, false));
        let stat = show(fs.metadata_at(dir, path, &name, true));
        writeln!(out, "  {name:?} {kind:?}\n    {lstat}\n    {stat}").unwrap();
        match kind {
            FileType::File => {
                let data = fs.open_at(dir, path, &name).and_then(|mut f| {
                    let mut data = Vec::new();
                    f.read_to_end(&mut data).map(|_| data)
                });
                writeln!(out, "    {}", show(data)).unwrap();
            }
            FileType::Dir => match fs.open_dir_at(dir, path, &name) {
                Ok(sub) => dump_dir(fs, &sub, &path.join(&*name), out),
                Err(e) => writeln!(out, "    open_dir_at {}", err(&e)).unwrap(),
            },
            _ => {}
        }
    }
}

/// Each case: a path below the root, probed on the disk and through an
/// empty overlay, which must answer the same.
macro_rules! same_as_lower {
    ($($name:ident: $rel:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let t = tree();
                let fs = overlay(&t);
                let path = PathBuf::from(format!("{}/{}", t.root.display(), $rel));
                let disk = probe(&LocalFs::new(), &path);
                assert_eq!(probe(&fs, &path), disk, "{}", path.display());
                // With lookups in the upper layer on, and empty upper
                // directories merged into the lower ones, still the same.
                std::fs::create_dir_all(t.upper.join("dir/sub")).unwrap();
                fs.upper_used.store(true, Ordering::Release);
                assert_eq!(probe(&fs, &path), disk, "{} (upper in use)", path.display());
            }
        )*
    };
}

same_as_lower! {
    empty_root: "";
    empty_root_dot: ".";
    empty_file: "a.txt";
    empty_file_slash: "a.txt/";
    empty_file_dot: "a.txt/.";
    empty_file_child: "a.txt/x";
    empty_file_parent: "a.txt/..";
    empty_control: ".gitignore";
    empty_dir: "dir";
    empty_dir_slash: "dir/";
    empty_dir_dot: "dir/.";
    empty_dir_parent: "dir/..";
    empty_dir_double_slash: "dir//sub//deep.txt";
    empty_dir_up_and_down: "dir/sub/../../a.txt";
    empty_missing: "missing";
    empty_missing_child: "missing/x";
    empty_missing_parent: "missing/..";
    empty_missing_slash: "missing/";
    empty_link_file: "link_file";
    empty_link_file_slash: "link_file/";
    empty_link_file_child: "link_file/x";
    empty_link_to_file_slash: "link_file_slash";
    empty_link_dir: "link_dir";
    empty_link_dir_slash: "link_dir/";
    empty_link_dir_child: "link_dir/deep.txt";
    empty_link_dir_parent_is_physical: "link_dir/../inner.txt";
    empty_link_link_child: "link_link/deep.txt";
    empty_dangling: "dangling";
    empty_dangling_slash: "dangling/";
    empty_dangling_child: "dangling/x";
    empty_loop: "loop_a";
    empty_loop_child: "loop_a/x";
    empty_self_loop: "self";
    empty_dot_link: "dot/dot/dot/a.txt";
    empty_up_link: "up/work/b.txt";
    empty_absolute_out: "abs_out/o.txt";
    empty_absolute_in: "abs_in/sub/deep.txt";
    empty_chain_40_links: "chain40";
    empty_chain_41_links: "chain41";
    empty_fifo: "fifo";
    empty_fifo_slash: "fifo/";
    empty_socket: "sock";
    empty_locked: "locked";
    empty_locked_child: "locked/hidden.txt";
}

#[test]
fn the_41st_link_is_a_loop() {
    let t = tree();
    let fs = overlay(&t);
    assert_eq!(read(&fs, &t.root.join("chain40")), "alpha\n");
    let e = fs.metadata(&t.root.join("chain41")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(40), "{e}");
}

#[test]
fn empty_overlay_walks_like_the_disk() {
    let t = tree();
    let fs = overlay(&t);
    let disk = dump(&LocalFs::new(), &t.root);
    assert!(disk.contains("deep.txt"), "{disk}");
    assert_eq!(dump(&fs, &t.root), disk);
    let link_dir = t.root.join("link_dir");
    assert_eq!(dump(&fs, &link_dir), dump(&LocalFs::new(), &link_dir));
    std::fs::create_dir_all(t.upper.join("dir/sub")).unwrap();
    fs.upper_used.store(true, Ordering::Release);
    // (Making the upper layer changed the mtime of the root's parent.)
    assert_eq!(
        dump(&fs, &t.root),
        dump(&LocalFs::new(), &t.root),
        "upper in use"
    );
}

#[test]
fn unreadable_directory_errors_pass_through() {
    let t = tree();
    let fs = overlay(&t);
    let locked = t.root.join("locked/hidden.txt");
    if is_root() {
        // root reads everything: `refused_entries_keep_the_lower_errors`
        // refuses a directory whoever runs the tests.
        assert_eq!(read(&fs, &locked), "hidden\n");
    } else {
        let e = fs.metadata(&locked).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{e}");
        assert_eq!(err(&e), err(&std::fs::metadata(&locked).unwrap_err()));
    }
}

/// A lower layer that refuses a directory as the disk refuses one without
/// read and search permission, whoever runs the tests: the directory
/// itself stats, opening it and anything below it fails with EACCES; and
/// whose `partial` directory's listing fails after its first entry.
struct Refusing {
    disk: LocalFs,
    locked: PathBuf,
    partial: PathBuf,
}

fn eacces() -> io::Error {
    io::Error::from_raw_os_error(13)
}

impl Refusing {
    fn check(&self, path: &Path) -> io::Result<()> {
        if path.starts_with(&self.locked) && path != self.locked {
            return Err(eacces());
        }
        Ok(())
    }
}

impl FileSystem for Refusing {
    type Dir = (LocalDir, PathBuf);
    type File = LocalFile;

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.check(path)?;
        self.disk.canonicalize(path)
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.check(path)?;
        FileSystem::metadata(&self.disk, path)
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        self.check(path)?;
        FileSystem::symlink_metadata(&self.disk, path)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.check(path)?;
        FileSystem::read_link(&self.disk, path)
    }

    fn open_dir(&self, path: &Path) -> io::Result<Self::Dir> {
        self.check(&path.join("x"))?;
        Ok((self.disk.open_dir(path)?, path.to_path_buf()))
    }

    fn open_dir_at(&self, parent: &Self::Dir, _: &Path, name: &OsStr) -> io::Result<Self::Dir> {
        let path = parent.1.join(name);
        self.check(&path.join("x"))?;
        Ok((self.disk.open_dir_at(&parent.0, &parent.1, name)?, path))
    }

    fn list(&self, dir: &Self::Dir, listing: &mut Listing) {
        self.disk.list(&dir.0, listing);
        if dir.1 == self.partial {
            let first: Vec<_> = listing
                .iter()
                .take(1)
                .map(|(n, k)| (n.to_vec(), k))
                .collect();
            listing.clear();
            for (n, k) in first {
                listing.push(&n, k);
            }
            listing.fail(io::Error::from_raw_os_error(5));
        }
    }

    fn metadata_at(
        &self,
        dir: &Self::Dir,
        _: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        self.check(&dir.1.join(name))?;
        self.disk.metadata_at(&dir.0, &dir.1, name, follow)
    }

    fn open_at(&self, dir: &Self::Dir, _: &Path, name: &OsStr) -> io::Result<LocalFile> {
        self.check(&dir.1.join(name))?;
        self.disk.open_at(&dir.0, &dir.1, name)
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<LocalFile> {
        self.check(path)?;
        FileSystem::open(&self.disk, path, cancel)
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.check(path)?;
        FileSystem::read_control(&self.disk, path)
    }

    fn git_global_excludes(&self, workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        self.disk.git_global_excludes(workdir)
    }
}

impl FsHints for Refusing {}

impl FsWrite for Refusing {
    fn write(
        &self,
        _: &Path,
        _: &[u8],
        _: &WriteGuard,
        _: &CancelToken,
    ) -> Result<Written, WriteError> {
        unreachable!("the overlay never writes its lower layer")
    }
}

#[test]
fn refused_entries_keep_the_lower_errors() {
    let t = tree();
    write(&t.root.join("refused/hidden.txt"), "hidden\n");
    write(&t.root.join("partial/one.txt"), "1\n");
    write(&t.root.join("partial/two.txt"), "2\n");
    let lower = Refusing {
        disk: LocalFs::new(),
        locked: t.root.join("refused"),
        partial: t.root.join("partial"),
    };
    let disk = dump(&lower, &t.root);
    assert!(
        disk.contains("open_dir_at Err(Permission denied (os error 13)"),
        "{disk}"
    );
    assert!(disk.contains("Input/output error"), "{disk}");
    let lower = Arc::new(lower);
    let fs = OverlayFs::new(
        Arc::clone(&lower),
        &t.root,
        Arc::new(LocalFs::new()),
        &t.upper,
    )
    .unwrap();
    assert_eq!(dump(&fs, &t.root), disk);
    for rel in ["refused", "refused/hidden.txt", "refused/x/y", "partial"] {
        let path = t.root.join(rel);
        assert_eq!(probe(&fs, &path), probe(&*lower, &path), "{rel}");
    }
    // Also with the upper layer in use, and an upper file in the refused
    // directory's parent.
    put(&fs, &t.root.join("new.txt"), "new\n");
    for rel in ["refused", "refused/hidden.txt", "partial"] {
        let path = t.root.join(rel);
        assert_eq!(
            probe(&fs, &path),
            probe(&*lower, &path),
            "{rel} (upper in use)"
        );
    }
    let merged = dump(&fs, &t.root);
    assert!(
        merged.contains("open_dir_at Err(Permission denied (os error 13)"),
        "{merged}"
    );
}

/// Names and kinds of a directory's merged listing, in order.
fn listed<F: FileSystem>(fs: &F, path: &Path) -> Vec<(String, FileType)> {
    let dir = fs.open_dir(path).unwrap();
    let mut listing = Listing::new();
    fs.list(&dir, &mut listing);
    assert!(listing.error().is_none());
    listing
        .iter()
        .map(|(n, k)| (String::from_utf8_lossy(n).into_owned(), k))
        .collect()
}

#[test]
fn listing_is_lower_order_then_upper_only_entries() {
    let t = tree();
    for name in ["m/c", "m/a", "m/b", "m/e"] {
        write(&t.root.join(name), name);
    }
    symlink("gone", t.root.join("m/d")).unwrap();
    // By hand: an upper file shadowing the lower symlink.
    write(&t.upper.join("m/d"), "d");
    let fs = overlay(&t);
    put(&fs, &t.root.join("m/a"), "new a");
    put(&fs, &t.root.join("m/z"), "z");
    put(&fs, &t.root.join("m/new/inner"), "inner");
    put(&fs, &t.root.join("m/y"), "y");
    let lower = listed(&LocalFs::new(), &t.root.join("m"));
    let upper = listed(&LocalFs::new(), &t.upper.join("m"));
    let mut want: Vec<_> = lower
        .iter()
        .map(|(n, k)| (n.clone(), if n == "d" { FileType::File } else { *k }))
        .collect();
    want.extend(
        upper
            .iter()
            .filter(|(n, _)| !lower.iter().any(|(l, _)| l == n))
            .cloned(),
    );
    assert_eq!(want.len(), 8, "{want:?}");
    assert_eq!(listed(&fs, &t.root.join("m")), want);
    // The same through the merged directory's parent handle.
    let root = fs.open_dir(&t.root).unwrap();
    let m = fs.open_dir_at(&root, &t.root, OsStr::new("m")).unwrap();
    let mut listing = Listing::new();
    fs.list(&m, &mut listing);
    assert_eq!(listing.len(), 8);
    assert_eq!(read(&fs, &t.root.join("m/d")), "d");
}

#[test]
fn upper_files_shadow_lower_ones() {
    let t = tree();
    let fs = overlay(&t);
    put(&fs, &t.root.join("a.txt"), "shadow\nlonger\n");
    put(&fs, &t.root.join(".gitignore"), "*.tmp\n");
    let a = t.root.join("a.txt");
    assert_eq!(read(&fs, &a), "shadow\nlonger\n");
    assert_eq!(read(&fs, &t.root.join("link_file")), "shadow\nlonger\n");
    assert_eq!(fs.metadata(&a).unwrap().len, 14);
    assert_eq!(fs.metadata(&t.root.join("chain40")).unwrap().len, 14);
    assert_eq!(
        fs.read_control(&t.root.join(".gitignore")).unwrap(),
        b"*.tmp\n"
    );
    let root = fs.open_dir(&t.root).unwrap();
    assert_eq!(
        fs.metadata_at(&root, &t.root, OsStr::new("a.txt"), false)
            .unwrap()
            .len,
        14
    );
    assert_eq!(
        fs.metadata_at(&root, &t.root, OsStr::new("link_file"), true)
            .unwrap()
            .len,
        14
    );
    let mut text = String::new();
    fs.open_at(&root, &t.root, OsStr::new("a.txt"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "shadow\nlonger\n");
    // A directory in both layers is the lower one's.
    put(&fs, &t.root.join("dir/added.txt"), "added\n");
    let lower_dir = LocalFs::new().metadata(&t.root.join("dir")).unwrap();
    assert_eq!(fs.metadata(&t.root.join("dir")).unwrap(), lower_dir);
    assert_eq!(
        fs.metadata_at(&root, &t.root, OsStr::new("dir"), false)
            .unwrap(),
        lower_dir
    );
    let names: Vec<_> = listed(&fs, &t.root.join("dir"))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(
        names.contains(&"added.txt".into()) && names.contains(&"inner.txt".into()),
        "{names:?}"
    );
}

#[test]
fn write_copies_up_and_leaves_the_lower_file_alone() {
    let t = tree();
    let fs = overlay(&t);
    let a = t.root.join("a.txt");
    let before = std::fs::symlink_metadata(&a).unwrap();
    let written = put(&fs, &a, "changed\n");
    assert!(written.replaced);
    let after = std::fs::symlink_metadata(&a).unwrap();
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "alpha\n");
    assert_eq!(after.modified().unwrap(), before.modified().unwrap());
    assert_eq!(
        crate::local::from_std(&after),
        crate::local::from_std(&before)
    );
    assert_eq!(
        std::fs::read_to_string(t.upper.join("a.txt")).unwrap(),
        "changed\n"
    );
    // A replaced file keeps its mode, a copied-up one too.
    assert_eq!(written.metadata.mode, 0o644);
    assert_eq!(fs.metadata(&a).unwrap(), written.metadata);
    let new = put(&fs, &t.root.join("fresh/new.txt"), "n\n");
    assert!(!new.replaced);
    assert_eq!(new.metadata.mode, 0o600);
    assert!(!t.root.join("fresh").exists());
}

/// The guard of a write of `rel` with the lower tree as it is, and what
/// the write must return.
macro_rules! guarded {
    ($($name:ident: |$t:ident, $fs:ident| $guard:expr, $rel:expr => ($want:pat);)*) => {
        $(
            #[test]
            #[allow(
                clippy::redundant_pattern_matching,
                reason = "one pattern per case, `Ok(_)` among them"
            )]
            fn $name() {
                let $t = tree();
                let $fs = overlay(&$t);
                let guard: WriteGuard = $guard;
                let path = $t.root.join($rel);
                let upper = $t.upper.join($rel);
                let before = std::fs::read(&upper).ok();
                let got = $fs.write(&path, b"new\n", &guard, &none());
                assert!(matches!(got, $want), "{got:?}");
                if got.is_err() {
                    // Nothing reached the upper layer for this path.
                    assert_eq!(std::fs::read(&upper).ok(), before);
                }
            }
        )*
    };
}

fn version_of(fs: &impl FileSystem, path: &Path) -> Version {
    fs.metadata(path).unwrap().version()
}

/// Change the lower file behind the overlay's back (content and mtime).
fn touch_lower(path: &Path) -> &Path {
    std::fs::write(path, "rewritten\n").unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(std::time::SystemTime::UNIX_EPOCH).unwrap();
    path
}

guarded! {
    guard_current_lower_version: |t, fs| WriteGuard::ReplaceIfVersion(version_of(&fs, &t.root.join("a.txt"))), "a.txt" => (Ok(_));
    guard_stale_lower_version: |t, fs| {
        let v = version_of(&fs, &t.root.join("a.txt"));
        touch_lower(&t.root.join("a.txt"));
        WriteGuard::ReplaceIfVersion(v)
    }, "a.txt" => (Err(WriteError::Stale));
    guard_lower_version_after_copy_up: |t, fs| {
        let v = version_of(&fs, &t.root.join("a.txt"));
        put(&fs, &t.root.join("b.txt"), "b");
        let w = fs.write(&t.root.join("a.txt"), b"x", &WriteGuard::ReplaceIfVersion(v.clone()), &none());
        assert!(w.is_ok());
        WriteGuard::ReplaceIfVersion(v)
    }, "a.txt" => (Err(WriteError::Stale));
    guard_upper_version: |t, fs| {
        let w = put(&fs, &t.root.join("a.txt"), "first\n");
        WriteGuard::ReplaceIfVersion(w.metadata.version())
    }, "a.txt" => (Ok(Written { replaced: true, .. }));
    guard_missing_is_stale: |t, fs| WriteGuard::ReplaceIfVersion(version_of(&fs, &t.root.join("a.txt"))), "missing.txt" => (Err(WriteError::Stale));
    guard_create_over_lower_file: |t, fs| WriteGuard::CreateIfAbsent, "a.txt" => (Err(WriteError::Exists));
    guard_create_through_link: |t, fs| WriteGuard::CreateIfAbsent, "link_file" => (Err(WriteError::Exists));
    guard_create_new: |t, fs| WriteGuard::CreateIfAbsent, "new/deeper/file.txt" => (Ok(Written { replaced: false, .. }));
    guard_create_over_upper_file: |t, fs| {
        put(&fs, &t.root.join("made.txt"), "made");
        WriteGuard::CreateIfAbsent
    }, "made.txt" => (Err(WriteError::Exists));
    guard_directory: |t, fs| WriteGuard::None, "dir" => (Err(WriteError::NotRegular(FileType::Dir)));
    guard_link_to_directory: |t, fs| WriteGuard::None, "link_dir" => (Err(WriteError::NotRegular(FileType::Dir)));
    guard_fifo: |t, fs| WriteGuard::None, "fifo" => (Err(WriteError::NotRegular(FileType::Fifo)));
    guard_socket: |t, fs| WriteGuard::None, "sock" => (Err(WriteError::NotRegular(FileType::Socket)));
    guard_below_a_file: |t, fs| WriteGuard::None, "a.txt/x" => (Err(WriteError::NotDirectory(_)));
    guard_below_a_loop: |t, fs| WriteGuard::None, "loop_a/x" => (Err(WriteError::Io(_, _)));
    guard_trailing_slash: |t, fs| WriteGuard::None, "newdir/" => (Err(WriteError::Io(_, _)));
}

#[test]
fn not_directory_names_the_file_in_the_way() {
    let t = tree();
    let fs = overlay(&t);
    let got = fs.write(&t.root.join("a.txt/x/y"), b"", &WriteGuard::None, &none());
    match got {
        Err(WriteError::NotDirectory(p)) => assert_eq!(p, t.root.join("a.txt")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn cancelled_write_publishes_nothing() {
    let t = tree();
    let fs = overlay(&t);
    let cancel = CancelToken::new();
    cancel.cancel();
    let got = fs.write(&t.root.join("a.txt"), b"x", &WriteGuard::None, &cancel);
    assert!(matches!(got, Err(WriteError::Cancelled)), "{got:?}");
    assert!(!t.upper.exists());
    assert_eq!(read(&fs, &t.root.join("a.txt")), "alpha\n");
}

#[test]
fn writes_outside_the_workspace_are_refused() {
    let t = tree();
    let fs = overlay(&t);
    for path in [
        t.outside.join("o.txt"),
        t.outside.join("new.txt"),
        t.root.join("abs_out/o.txt"),
        t.root.join("up/outside/o.txt"),
        t.root.join("../outside/x.txt"),
    ] {
        match fs.write(&path, b"x", &WriteGuard::None, &none()) {
            Err(WriteError::Io(p, e)) => {
                assert_eq!(p, path);
                assert_eq!(e.kind(), io::ErrorKind::ReadOnlyFilesystem);
                let msg = e.to_string();
                assert!(msg.contains("is outside the workspace"), "{msg}");
                assert!(msg.contains(&t.root.display().to_string()), "{msg}");
            }
            other => panic!("{}: {other:?}", path.display()),
        }
    }
    assert_eq!(
        std::fs::read_to_string(t.outside.join("o.txt")).unwrap(),
        "outside\n"
    );
    assert!(!t.outside.join("new.txt").exists());
    assert!(!t.upper.exists());
}

#[test]
fn lower_symlinks_lead_into_upper_only_files() {
    let t = tree();
    let fs = overlay(&t);
    put(&fs, &t.root.join("dir/sub/new.txt"), "new\n");
    let via = t.root.join("link_dir/new.txt");
    assert_eq!(read(&fs, &via), "new\n");
    assert_eq!(read(&fs, &t.root.join("link_link/new.txt")), "new\n");
    assert_eq!(
        fs.canonicalize(&via).unwrap(),
        t.root.join("dir/sub/new.txt")
    );
    assert_eq!(fs.metadata(&via).unwrap().kind, FileType::File);
    let names: Vec<_> = listed(&fs, &t.root.join("link_dir"))
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert_eq!(
        names.last().map(String::as_str),
        Some("new.txt"),
        "{names:?}"
    );
    // A write through the link lands in the directory it leads to.
    put(&fs, &t.root.join("link_dir/other.txt"), "other\n");
    assert_eq!(
        std::fs::read_to_string(t.upper.join("dir/sub/other.txt")).unwrap(),
        "other\n"
    );
    assert!(!t.upper.join("link_dir").exists());
    // A dangling lower link is never written through, nor replaced (the
    // local disk's rule, the same for a bare and a session write); it comes
    // to life once its target is written.
    assert!(fs.metadata(&t.root.join("dangling")).is_err());
    let through = fs.write(&t.root.join("dangling"), b"x", &WriteGuard::None, &none());
    assert!(
        matches!(through, Err(WriteError::NotRegular(FileType::Symlink))),
        "{through:?}"
    );
    assert!(!t.upper.join("nowhere.txt").exists());
    put(&fs, &t.root.join("nowhere.txt"), "target\n");
    assert_eq!(
        std::fs::read_to_string(t.upper.join("nowhere.txt")).unwrap(),
        "target\n"
    );
    assert_eq!(
        fs.symlink_metadata(&t.root.join("dangling")).unwrap().kind,
        FileType::Symlink
    );
    let root = fs.open_dir(&t.root).unwrap();
    let followed = fs
        .metadata_at(&root, &t.root, OsStr::new("dangling"), true)
        .unwrap();
    assert_eq!((followed.kind, followed.len), (FileType::File, 7));
    let mut text = String::new();
    fs.open_at(&root, &t.root, OsStr::new("dangling"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "target\n");
    // The directory reached through a link is entered with the upper part.
    let link_dir = fs.open_dir(&t.root.join("link_dir")).unwrap();
    assert!(fs
        .metadata_at(&link_dir, &t.root, OsStr::new("new.txt"), false)
        .is_ok());
}

#[test]
fn concurrent_writes_serialize() {
    let t = tree();
    let fs = overlay(&t);
    let a = t.root.join("a.txt");
    let v = version_of(&fs, &a);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (fs, t, a, v) = (&fs, &t, &a, &v);
                s.spawn(move || {
                    for j in 0..10 {
                        put(
                            fs,
                            &t.root.join(format!("t{i}/f{j}.txt")),
                            &format!("{i}.{j}"),
                        );
                    }
                    let created = fs.write(
                        &t.root.join("once.txt"),
                        format!("{i}").as_bytes(),
                        &WriteGuard::CreateIfAbsent,
                        &none(),
                    );
                    let replaced = fs.write(
                        a,
                        format!("{i}").as_bytes(),
                        &WriteGuard::ReplaceIfVersion(v.clone()),
                        &none(),
                    );
                    (
                        created.is_ok(),
                        replaced.is_ok(),
                        matches!(created, Err(WriteError::Exists)),
                        matches!(replaced, Err(WriteError::Stale)),
                    )
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(results.iter().filter(|r| r.0).count(), 1, "{results:?}");
    assert_eq!(results.iter().filter(|r| r.1).count(), 1, "{results:?}");
    assert!(
        results.iter().all(|r| r.0 != r.2 && r.1 != r.3),
        "{results:?}"
    );
    for i in 0..8 {
        for j in 0..10 {
            assert_eq!(
                read(&fs, &t.root.join(format!("t{i}/f{j}.txt"))),
                format!("{i}.{j}")
            );
        }
    }
    assert_eq!(std::fs::read_to_string(&a).unwrap(), "alpha\n");
    let changes = fs.changes().unwrap();
    assert_eq!(changes.len(), 82, "{changes:?}");
}

#[test]
fn changes_are_added_or_modified_and_sorted() {
    let t = tree();
    let fs = overlay(&t);
    assert_eq!(fs.changes().unwrap(), []);
    put(&fs, &t.root.join("z.txt"), "z\n");
    put(&fs, &t.root.join("b.txt"), "beta\n"); // the same bytes: no change
    put(&fs, &t.root.join("a.txt"), "alpha!\n");
    put(&fs, &t.root.join("dir/sub/deep.txt"), "deeper\n");
    put(&fs, &t.root.join("dir.txt"), "sorts before dir/ as bytes\n");
    put(&fs, &t.root.join("link_dir/via.txt"), "via\n");
    let got: Vec<_> = fs
        .changes()
        .unwrap()
        .into_iter()
        .map(|c| {
            format!(
                "{} {}",
                c.kind.letter(),
                c.path.strip_prefix(&t.root).unwrap().display()
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            "M a.txt",
            "A dir.txt",
            "M dir/sub/deep.txt",
            "A dir/sub/via.txt",
            "A z.txt"
        ]
    );
}

/// `diff -u old new` without its two header lines.
fn gnu_diff(old: &Path, new: &Path) -> String {
    let out = std::process::Command::new("diff")
        .arg("-u")
        .arg(old)
        .arg(new)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    text.splitn(3, '\n').nth(2).unwrap().to_string()
}

/// Each case: the lower text (or none), the text written, and the
/// overlay's diff of the change must be `diff -u`'s, headers aside.
macro_rules! diff_like_gnu {
    ($($name:ident: $old:expr => $new:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let t = tree();
                let path = t.root.join("diffed.txt");
                let old: Option<String> = $old;
                if let Some(old) = &old {
                    std::fs::write(&path, old).unwrap();
                }
                let fs = overlay(&t);
                let new: String = $new;
                put(&fs, &path, &new);
                let ours = fs.diff().unwrap();
                let (header, body) = ours.split_at(ours.match_indices('\n').nth(1).unwrap().0 + 1);
                let old_path = if old.is_some() { path.clone() } else { PathBuf::from("/dev/null") };
                let old_name = if old.is_some() { "a/diffed.txt" } else { "/dev/null" };
                assert_eq!(header, format!("--- {old_name}\n+++ b/diffed.txt\n"));
                assert_eq!(body, gnu_diff(&old_path, &t.upper.join("diffed.txt")));
            }
        )*
    };
}

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

diff_like_gnu! {
    diff_one_line: Some("one\n".into()) => "two\n".into();
    diff_two_hunks: Some(lines(30)) => lines(30).replace("line 3\n", "line three\n").replace("line 25\n", "").replace("line 27\n", "line 27\nadded\n");
    diff_hunks_merge_within_six_lines: Some(lines(20)) => lines(20).replace("line 5\n", "five\n").replace("line 12\n", "twelve\n");
    diff_hunks_split_past_six_lines: Some(lines(20)) => lines(20).replace("line 5\n", "five\n").replace("line 13\n", "thirteen\n");
    diff_no_newline_old: Some("a\nb".into()) => "a\nb\n".into();
    diff_no_newline_new: Some("a\nb\n".into()) => "a\nc".into();
    diff_added_file: None => lines(4);
    diff_emptied_file: Some(lines(3)) => String::new();
    diff_prepend: Some(lines(8)) => format!("first\n{}", lines(8));
}

#[test]
fn binary_and_empty_changes() {
    let t = tree();
    let fs = overlay(&t);
    std::fs::write(t.root.join("bin.dat"), b"\0old").unwrap();
    put(&fs, &t.root.join("bin.dat"), "new");
    fs.write(&t.root.join("new.bin"), b"a\0b", &WriteGuard::None, &none())
        .unwrap();
    put(&fs, &t.root.join("empty.txt"), "");
    assert_eq!(
        fs.diff().unwrap(),
        "Binary files a/bin.dat and b/bin.dat differ\n\
         --- /dev/null\n+++ b/empty.txt\n\
         Binary files /dev/null and b/new.bin differ\n"
    );
}

#[test]
fn on_disk_creates_the_directory_and_keeps_changes() {
    let t = tree();
    let dir = t.outside.join("store/nested");
    let lower = Arc::new(LocalFs::new());
    let fs = OverlayFs::on_disk(Arc::clone(&lower), &t.root, &dir).unwrap();
    assert_eq!(
        std::fs::read(dir.join("workspace")).unwrap(),
        format!("{}\n", t.root.display()).into_bytes()
    );
    assert!(fs.changes().unwrap().is_empty());
    put(&fs, &t.root.join("a.txt"), "kept\n");
    assert_eq!(
        std::fs::read_to_string(dir.join("upper/a.txt")).unwrap(),
        "kept\n"
    );
    drop(fs);
    // A later invocation sees the change.
    let fs = OverlayFs::on_disk(lower, &t.root.join("dir/.."), &dir).unwrap();
    assert_eq!(read(&fs, &t.root.join("a.txt")), "kept\n");
    assert_eq!(fs.changes().unwrap().len(), 1);
    assert_eq!(
        std::fs::read_to_string(t.root.join("a.txt")).unwrap(),
        "alpha\n"
    );
}

/// Two overlays of one overlay directory, as two processes have them, both
/// made while it was new: each sees what the other wrote, from its next
/// call on, and a write over the version one read is refused once the
/// other wrote.
#[test]
fn on_disk_overlays_of_one_directory_see_each_other() {
    let t = tree();
    let dir = t.outside.join("store");
    let lower = Arc::new(LocalFs::new());
    let a = OverlayFs::on_disk(Arc::clone(&lower), &t.root, &dir).unwrap();
    let b = OverlayFs::on_disk(lower, &t.root, &dir).unwrap();
    let path = t.root.join("a.txt");
    let read_by_b = b.metadata(&path).unwrap().version();
    put(&a, &path, "from a\n");
    assert_eq!(read(&b, &path), "from a\n");
    assert_eq!(b.metadata(&path).unwrap().len, 7);
    let stale = b.write(
        &path,
        b"from b\n",
        &WriteGuard::ReplaceIfVersion(read_by_b),
        &none(),
    );
    assert!(matches!(stale, Err(WriteError::Stale)), "{stale:?}");
    put(&b, &t.root.join("dir/new.txt"), "new\n");
    assert_eq!(read(&a, &t.root.join("dir/new.txt")), "new\n");
    assert_eq!(read(&a, &path), "from a\n");
}

/// Each case: an overlay directory set up by `$setup` (given the tree),
/// refused with a one-line error that names it and says `$says`.
macro_rules! on_disk_refused {
    ($($name:ident: |$t:ident| $setup:expr => $says:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let $t = tree();
                let dir: PathBuf = $setup;
                let e = OverlayFs::on_disk(Arc::new(LocalFs::new()), &$t.root, &dir).unwrap_err();
                let msg = e.to_string();
                assert!(!msg.contains('\n'), "{msg}");
                assert!(msg.contains(&dir.display().to_string()), "{msg}");
                assert!(msg.contains($says), "{msg}");
            }
        )*
    };
}

on_disk_refused! {
    on_disk_dir_is_a_file: |t| t.outside.join("o.txt") => "is not a directory";
    on_disk_dir_below_a_file: |t| t.outside.join("o.txt/store") => "Not a directory (os error 20)";
    on_disk_dir_inside_workspace: |t| t.root.join("dir/store") => "is inside the workspace";
    on_disk_dir_is_the_workspace: |t| t.root.clone() => "is inside the workspace";
    on_disk_workspace_inside_dir: |t| t.root.parent().unwrap().to_path_buf() => "is inside the overlay directory";
    on_disk_foreign_directory: |t| t.outside.clone() => "is not empty and holds no overlay";
    on_disk_other_workspace: |t| {
        let dir = t.outside.join("store");
        OverlayFs::on_disk(Arc::new(LocalFs::new()), &t.root.join("dir"), &dir).unwrap();
        dir
    } => "holds the changes of the workspace";
}

#[test]
fn on_disk_unwritable_directory() {
    let t = tree();
    let dir = t.outside.join("store");
    std::fs::create_dir(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o500)).unwrap();
    let got = OverlayFs::on_disk(Arc::new(LocalFs::new()), &t.root, &dir);
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    if is_root() {
        // root writes anyway: the directory became an overlay directory.
        assert!(got.is_ok());
        assert!(dir.join("workspace").exists());
    } else {
        let msg = got.unwrap_err().to_string();
        assert!(
            msg.contains(&dir.display().to_string()) && msg.contains("cannot write"),
            "{msg}"
        );
    }
}

#[test]
fn on_disk_write_errors_name_the_overlay_directory() {
    let t = tree();
    let dir = t.outside.join("store");
    let fs = OverlayFs::on_disk(Arc::new(LocalFs::new()), &t.root, &dir).unwrap();
    // A directory where the lock file must be (a file in the upper layer
    // where it needs a directory would be part of the merged view).
    std::fs::remove_file(dir.join("lock")).unwrap();
    std::fs::create_dir(dir.join("lock")).unwrap();
    match fs.write(
        &t.root.join("dir/new.txt"),
        b"x",
        &WriteGuard::None,
        &none(),
    ) {
        Err(WriteError::Io(p, e)) => {
            assert_eq!(p, t.root.join("dir/new.txt"));
            assert!(
                e.to_string()
                    .starts_with(&format!("overlay directory {}: ", dir.display())),
                "{e}"
            );
        }
        other => panic!("{other:?}"),
    }
}

/// A listing's metadata is the merged view's: an entry the upper layer
/// shadows carries the upper file's, never the lower one's (a lower layer
/// in memory lists its files with their metadata, which glob's mtime sort
/// takes without a stat).
#[test]
fn a_shadowed_entry_is_listed_with_the_upper_metadata() {
    let lower = Arc::new(crate::MemFs::new());
    lower.write_file("/w/a.txt", "old\n").unwrap();
    lower.write_file("/w/b.txt", "b\n").unwrap();
    lower.set_mtime("/w/a.txt", (1_000_000_000, 0)).unwrap();
    let upper = Arc::new(crate::MemFs::new());
    let fs = OverlayFs::new(lower, Path::new("/w"), upper, Path::new("/up")).unwrap();
    let root = Path::new("/w");
    fs.write(
        &root.join("a.txt"),
        b"new text\n",
        &WriteGuard::None,
        &CancelToken::new(),
    )
    .unwrap();
    fs.write(
        &root.join("c.txt"),
        b"c\n",
        &WriteGuard::None,
        &CancelToken::new(),
    )
    .unwrap();
    let dir = fs.open_dir(root).unwrap();
    let mut listing = Listing::new();
    fs.list(&dir, &mut listing);
    let names: Vec<&[u8]> = listing.iter().map(|(n, _)| n).collect();
    assert_eq!(names, [&b"a.txt"[..], b"b.txt", b"c.txt"]);
    for (i, (name, _)) in listing.iter().enumerate() {
        let path = root.join(names::os_str(name));
        let stat = fs.symlink_metadata(&path).unwrap();
        if let Some(listed) = listing.metadata(i) {
            assert_eq!(*listed, stat, "{}", path.display());
        }
    }
}
