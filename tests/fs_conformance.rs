//! One conformance suite for every [`FileSystem`] of the seam
//! (`docs/contract.md` §10), run the way the `vfs` crate runs one macro
//! over each of its filesystems: every row of [`filesystems!`] at the end
//! of this file gets every case of its capabilities. Every filesystem
//! gets the reading cases and the hints' (a hint never changes an
//! answer: [`hints`]); a filesystem that writes ([`FsWrite`]) gets the
//! writing cases too; the read-only one (the index's view of its mirror)
//! gets no others.
//!
//! Each case builds the same tree on disk in a temp dir, puts the
//! filesystem under test over it, and compares its answers with the
//! local disk's, asked through `std::fs` (listing order, kinds, sizes,
//! modes, mtimes, symlink targets, and the error texts with their errno:
//! `No such file or directory (os error 2)`, as rg prints them), or with a
//! value checked by hand against the disk where `std` has no equivalent
//! (the write guard's refusals, what a control-file read refuses). No
//! answer is compared with `LocalFs`, so the local disk's own rows can
//! fail too.
//!
//! A new filesystem gets the whole suite by adding one row: its name, how
//! to build it over a tree at `root` (with a scratch directory of its own,
//! outside the tree), and the resolution of its mtimes.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_search::fs::{
    FileSystem, FileType, FsHints, FsWrite, Listing, Metadata, Version, WriteError, WriteGuard,
    Written,
};
use dsh_search::CancelToken;

use crate::util::tree::{dir, fifo, file, mode, socket, symlink, Spec, Tree};

/// How precise a filesystem's mtimes are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mtimes {
    /// To the nanosecond, as the disk keeps them.
    Nanos,
    /// Whole seconds (SFTP version 3's attributes, draft-ietf-secsh-filexfer-02
    /// §5: `mtime` is a `uint32` of seconds).
    Seconds,
}

/// The filesystem under test over the case's tree.
pub struct Subject<F> {
    pub fs: Arc<F>,
    pub tree: Tree,
    mtimes: Mtimes,
    _scratch: tempfile::TempDir,
}

impl<F: FileSystem> Subject<F> {
    /// Build the tree, then the filesystem over it with `make(root, scratch)`.
    pub fn new(make: impl FnOnce(&Path, &Path) -> Arc<F>, mtimes: Mtimes) -> Subject<F> {
        let tree = Tree::build(&specs());
        // An absolute target can only be written once the root is known.
        std::os::unix::fs::symlink(
            tree.root().join("dir/inner.txt"),
            tree.root().join("abs_link"),
        )
        .unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let fs = make(tree.root(), scratch.path());
        Subject {
            fs,
            tree,
            mtimes,
            _scratch: scratch,
        }
    }

    fn path(&self, rel: impl AsRef<[u8]>) -> PathBuf {
        let rel = rel.as_ref();
        if rel.is_empty() {
            return self.tree.root().to_path_buf();
        }
        self.tree.root().join(OsStr::from_bytes(rel))
    }
}

/// A name that is not UTF-8 (Latin-1 `café.txt`).
const LATIN1: &[u8] = b"caf\xe9.txt";

/// Files in `many/`, created in an order that is neither their names'
/// nor (on ext4, tmpfs, overlayfs) the directory's listing order; more
/// than OpenSSH's `READDIR` replies hold in the first round of a listing
/// (two replies of up to 100 names: `sftp/ops.rs: READDIRS_FIRST`), so a
/// listing over SFTP takes a second round.
const MANY: u32 = 250;

/// The tree every case starts from: files with modes, directories, every
/// kind of symlink (relative, absolute, to a directory, dangling, a loop,
/// through another link), a FIFO, a socket, a non-UTF-8 name, a directory
/// of many entries and a file larger than one read.
fn specs() -> Vec<Spec> {
    let mut s = vec![
        file("file.txt", "hello\n"),
        mode("file.txt", 0o640),
        file("exec.sh", "#!/bin/sh\n"),
        mode("exec.sh", 0o4755),
        file("dir/inner.txt", "inner\n"),
        file("dir/sub/deep.txt", "deep\n"),
        dir("empty"),
        symlink("link_file", "file.txt"),
        symlink("link_dir", "dir"),
        symlink("dangling", "nowhere"),
        symlink("loop_a", "loop_b"),
        symlink("loop_b", "loop_a"),
        symlink("dir/up", "../file.txt"),
        symlink("via_link", "link_dir/sub"),
        fifo("fifo"),
        socket("sock"),
        file(LATIN1, "latin-1\n"),
        file("big.bin", big()),
    ];
    for i in 0..MANY {
        s.push(file(format!("many/f{}", (i * 17) % MANY), "x"));
    }
    s
}

/// 300 KiB that no two reads of a few KiB could confuse: larger than an
/// SFTP read (32 KiB) or a read-ahead window.
fn big() -> Vec<u8> {
    (0..300 * 1024u32)
        .map(|i| (i % 251) as u8 ^ (i >> 10) as u8)
        .collect()
}

// ------------------------------------------------------------ how answers read

fn kind_of(t: std::fs::FileType) -> FileType {
    if t.is_symlink() {
        FileType::Symlink
    } else if t.is_dir() {
        FileType::Dir
    } else if t.is_file() {
        FileType::File
    } else if t.is_fifo() {
        FileType::Fifo
    } else if t.is_socket() {
        FileType::Socket
    } else {
        FileType::Device
    }
}

/// A stat as the suite compares it: the kind, size, permission bits and
/// mtime (dev, ino and ctime are each filesystem's own).
fn show_meta(m: io::Result<Metadata>, mtimes: Mtimes) -> String {
    match m {
        Ok(m) => {
            let mtime = m.mtime.map(|(s, n)| match mtimes {
                Mtimes::Nanos => (s, n),
                Mtimes::Seconds => (s, 0),
            });
            format!(
                "{:?} len={} mode={:o} mtime={mtime:?}",
                m.kind, m.len, m.mode
            )
        }
        Err(e) => format!("error: {e}"),
    }
}

/// The disk's stat, through `std`, shown as [`show_meta`] shows.
fn disk_meta(m: io::Result<std::fs::Metadata>, mtimes: Mtimes) -> String {
    use std::os::unix::fs::MetadataExt;
    show_meta(
        m.map(|m| Metadata {
            kind: kind_of(m.file_type()),
            len: m.len(),
            mtime: Some((m.mtime(), m.mtime_nsec() as u32)),
            mode: m.mode() & 0o7777,
            dev: 0,
            ino: 0,
            ctime: None,
            links: 1,
        }),
        mtimes,
    )
}

fn show<T: std::fmt::Debug>(r: io::Result<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

/// Everything `r` reads, or the error that ended it.
fn read_all(r: io::Result<impl Read>) -> String {
    let mut data = Vec::new();
    match r.and_then(|mut f| f.read_to_end(&mut data)) {
        Ok(_) => bytes(&data),
        Err(e) => format!("error: {e}"),
    }
}

/// Bytes as the suite compares them: short ones whole, long ones by size
/// and a digest.
fn bytes(data: &[u8]) -> String {
    if data.len() <= 64 {
        return format!("{:?}", String::from_utf8_lossy(data));
    }
    let sum = data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{} bytes, fnv {sum:016x}", data.len())
}

/// Collects the differences of one case, so that every check runs before
/// it fails.
#[derive(Default)]
struct Diffs(Vec<String>);

impl Diffs {
    fn check(&mut self, what: impl std::fmt::Display, disk: String, fs: String) {
        if disk != fs {
            self.0.push(format!("{what}\n  disk: {disk}\n  fs:   {fs}"));
        }
    }

    fn finish(self) {
        assert!(
            self.0.is_empty(),
            "{} differences from the disk:\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

/// Paths of the tree that stats, links and reads are asked about (`""` is
/// the root).
const PATHS: &[&[u8]] = &[
    b"",
    b"file.txt",
    b"exec.sh",
    b"dir",
    b"dir/",
    b"dir/.",
    b"dir/./",
    b"link_dir/.",
    b"empty/",
    b"file.txt/.",
    b"dir/sub/deep.txt",
    b"dir//sub/./deep.txt",
    b"dir/up",
    b"empty",
    b"link_file",
    b"link_file/",
    b"link_dir",
    b"link_dir/inner.txt",
    b"abs_link",
    b"dangling",
    b"loop_a",
    b"via_link",
    b"via_link/deep.txt",
    b"fifo",
    b"sock",
    LATIN1,
    b"big.bin",
    b"many",
    b"missing",
    b"missing/x",
    b"file.txt/x",
    b"dangling/x",
];

// ---------------------------------------------------------------- the cases

/// Every directory lists the disk's entries, with the disk's kinds, in the
/// disk's order (glob's mtime ties keep it, `rg-semantics.md` §5), opened
/// by path, through a symlink, and through its parent's handle.
pub fn listing<F: FileSystem>(s: &Subject<F>) {
    let mut d = Diffs::default();
    for rel in [
        "", "dir", "dir/", "dir/.", "dir/sub", "empty", "many", "link_dir", "via_link",
    ] {
        let path = s.path(rel);
        let disk = show(std::fs::read_dir(&path).and_then(|rd| {
            rd.map(|e| {
                let e = e?;
                Ok((e.file_name(), kind_of(e.file_type()?)))
            })
            .collect::<io::Result<Vec<_>>>()
        }));
        let listed = s.fs.open_dir(&path).and_then(|h| list(&*s.fs, &h, &path));
        d.check(format_args!("list {rel:?}"), disk.clone(), show(listed));
        // The same directory through its parent's handle.
        if let Some((parent, name)) = rel.rsplit_once('/').or(Some(("", rel))) {
            if name.is_empty() || name == "." {
                continue;
            }
            let parent_path = s.path(parent);
            let through = s.fs.open_dir(&parent_path).and_then(|p| {
                let h = s.fs.open_dir_at(&p, &parent_path, OsStr::new(name))?;
                list(&*s.fs, &h, &path)
            });
            d.check(format_args!("open_dir_at {rel:?}"), disk, show(through));
        }
    }
    // What is not a directory does not open as one.
    for rel in [
        "file.txt",
        "file.txt/",
        "file.txt/.",
        "link_file",
        "dangling",
        "loop_a",
        "missing",
        "fifo",
    ] {
        let path = s.path(rel);
        let disk = show(std::fs::read_dir(&path).map(|_| ()));
        d.check(
            format_args!("open_dir {rel:?}"),
            disk,
            show(s.fs.open_dir(&path).map(|_| ())),
        );
    }
    d.finish();
}

/// The entries of `dir`, an `Unknown` kind resolved by a stat of the entry
/// that does not follow links (what the seam asks of its caller), or the
/// error that ended the listing.
fn list<F: FileSystem>(
    fs: &F,
    dir: &F::Dir,
    path: &Path,
) -> io::Result<Vec<(std::ffi::OsString, FileType)>> {
    let mut listing = Listing::new();
    fs.list(dir, &mut listing);
    if let Some(e) = listing.take_error() {
        return Err(e);
    }
    Ok(listing
        .iter()
        .map(|(name, kind)| {
            let kind = match kind {
                FileType::Unknown => fs
                    .metadata_at(dir, path, OsStr::from_bytes(name), false)
                    .map_or(FileType::Unknown, |m| m.kind),
                k => k,
            };
            (OsStr::from_bytes(name).to_owned(), kind)
        })
        .collect())
}

/// `metadata` and `symlink_metadata` of every path answer as the disk's
/// `stat` and `lstat`, errors included; so do the stats of every entry
/// through its directory's handle, and the metadata a listing carries.
pub fn metadata<F: FileSystem>(s: &Subject<F>) {
    let mut d = Diffs::default();
    let m = s.mtimes;
    for rel in PATHS {
        let path = s.path(rel);
        let at = String::from_utf8_lossy(rel);
        d.check(
            format_args!("metadata {at:?}"),
            disk_meta(std::fs::metadata(&path), m),
            show_meta(s.fs.metadata(&path), m),
        );
        d.check(
            format_args!("symlink_metadata {at:?}"),
            disk_meta(std::fs::symlink_metadata(&path), m),
            show_meta(s.fs.symlink_metadata(&path), m),
        );
    }
    for rel in ["", "dir", "many"] {
        let dir_path = s.path(rel);
        let handle = s.fs.open_dir(&dir_path).unwrap();
        let mut listing = Listing::new();
        s.fs.list(&handle, &mut listing);
        let mut names: Vec<Vec<u8>> = listing.iter().map(|(n, _)| n.to_vec()).collect();
        for (i, name) in names.iter().enumerate() {
            // A listing's metadata, where it has it, is the entry's lstat.
            if let Some(listed) = listing.metadata(i) {
                let disk = std::fs::symlink_metadata(dir_path.join(OsStr::from_bytes(name)));
                d.check(
                    format_args!("listed metadata {rel:?} {:?}", OsStr::from_bytes(name)),
                    disk_meta(disk, m),
                    show_meta(Ok(*listed), m),
                );
            }
        }
        names.extend([b"nope".to_vec(), b".".to_vec(), b"sub/deep.txt".to_vec()]);
        for name in names {
            let name = OsStr::from_bytes(&name);
            let path = dir_path.join(name);
            for follow in [false, true] {
                let disk = if follow {
                    std::fs::metadata(&path)
                } else {
                    std::fs::symlink_metadata(&path)
                };
                d.check(
                    format_args!("metadata_at {rel:?} {name:?} follow={follow}"),
                    disk_meta(disk, m),
                    show_meta(s.fs.metadata_at(&handle, &dir_path, name, follow), m),
                );
            }
        }
    }
    d.finish();
}

/// Symlinks: the stored target of each (`readlink`), the real path of
/// every path (`realpath`), and what reading through one reads, as on the
/// disk, errors included.
pub fn symlinks<F: FileSystem>(s: &Subject<F>) {
    let mut d = Diffs::default();
    for rel in PATHS {
        let path = s.path(rel);
        let at = String::from_utf8_lossy(rel);
        d.check(
            format_args!("read_link {at:?}"),
            show(std::fs::read_link(&path)),
            show(s.fs.read_link(&path)),
        );
        d.check(
            format_args!("canonicalize {at:?}"),
            show(std::fs::canonicalize(&path)),
            show(s.fs.canonicalize(&path)),
        );
    }
    for rel in [
        "link_file",
        "abs_link",
        "dir/up",
        "via_link/deep.txt",
        "link_dir/sub/deep.txt",
    ] {
        let path = s.path(rel);
        d.check(
            format_args!("open {rel:?}"),
            read_all(std::fs::File::open(&path)),
            read_all(s.fs.open(&path, &CancelToken::new())),
        );
    }
    d.finish();
}

/// Reads: `open` by path and `open_at` through a handle read the disk's
/// bytes (a file larger than one read included) or fail with the disk's
/// errno; `read_control` and `read_file` read regular files only.
pub fn reads<F: FileSystem>(s: &Subject<F>) {
    let mut d = Diffs::default();
    let token = CancelToken::new();
    for rel in PATHS {
        let path = s.path(rel);
        let at = String::from_utf8_lossy(rel);
        // The disk's open of a FIFO blocks until a writer comes.
        let fifo = *rel == b"fifo";
        let disk = if fifo {
            String::new()
        } else {
            read_all(std::fs::File::open(&path))
        };
        if !fifo {
            d.check(
                format_args!("open {at:?}"),
                disk.clone(),
                read_all(s.fs.open(&path, &token)),
            );
        }
        if let (Some(parent), Some(name)) = (path.parent(), path.file_name()) {
            // A name cannot say `X/` or `X/.`: `Path` drops both ends, so
            // the entry would be X itself.
            let named = !rel.ends_with(b"/") && !rel.ends_with(b"/.");
            if !fifo && named && !rel.is_empty() {
                if let Ok(h) = s.fs.open_dir(parent) {
                    d.check(
                        format_args!("open_at {at:?}"),
                        disk.clone(),
                        read_all(s.fs.open_at(&h, parent, name)),
                    );
                }
            }
        }
        // Control files: regular files only, never blocking (a FIFO
        // included). What else is there is an error, whichever (the
        // engine skips an ignore file it cannot read, as rg does); what is
        // missing is the disk's error.
        let meta = std::fs::metadata(&path);
        let control = match &meta {
            Ok(m) if m.is_file() => disk.clone(),
            Ok(_) => "an error".into(),
            Err(e) => format!("error: {e}"),
        };
        let got = match s.fs.read_control(&path) {
            Err(_) if meta.as_ref().is_ok_and(|m| !m.is_file()) => "an error".into(),
            r => read_all(r.map(io::Cursor::new)),
        };
        d.check(format_args!("read_control {at:?}"), control, got);
        // `read_file`: the bytes of a regular file of at most `max` bytes,
        // with its metadata; for anything else, the metadata alone.
        for max in [u64::MAX, 5] {
            let disk_read = match meta {
                Ok(ref m) if m.is_file() && m.len() <= max => disk.clone(),
                Ok(_) => "None".into(),
                Err(ref e) => format!("error: {e}"),
            };
            let got = match s.fs.read_file(&path, max) {
                Ok((_, Some(b))) => bytes(&b),
                Ok((_, None)) => "None".into(),
                Err(e) => format!("error: {e}"),
            };
            d.check(format_args!("read_file {at:?} max={max}"), disk_read, got);
            if let (Ok(disk_m), Ok((fs_m, _))) = (&meta, s.fs.read_file(&path, max)) {
                d.check(
                    format_args!("read_file {at:?} metadata"),
                    disk_meta(Ok(disk_m.clone()), s.mtimes),
                    show_meta(Ok(fs_m), s.mtimes),
                );
            }
        }
    }
    d.finish();
}

/// Errors carry the errno the disk gives, as rg prints it: checked by hand
/// here for each kind of failure the engine meets, with Linux's numbers
/// (the tests run on Linux; the other cases compare every path's error
/// with `std`'s).
pub fn errors<F: FileSystem>(s: &Subject<F>) {
    let fs = &*s.fs;
    let text = |r: io::Result<Metadata>| r.map(|_| ()).unwrap_err().to_string();
    assert_eq!(
        text(fs.metadata(&s.path("missing"))),
        "No such file or directory (os error 2)"
    );
    assert_eq!(
        text(fs.metadata(&s.path("file.txt/x"))),
        "Not a directory (os error 20)"
    );
    assert_eq!(
        text(fs.metadata(&s.path("loop_a"))),
        "Too many levels of symbolic links (os error 40)"
    );
    assert_eq!(
        text(fs.metadata(&s.path("dangling"))),
        "No such file or directory (os error 2)"
    );
    assert_eq!(
        text(fs.metadata(&s.path("a".repeat(256)))),
        "File name too long (os error 36)"
    );
    assert_eq!(
        fs.open_dir(&s.path("file.txt"))
            .map(|_| ())
            .unwrap_err()
            .to_string(),
        "Not a directory (os error 20)"
    );
    // A directory opens; reading it fails (read(2) on a directory).
    assert_eq!(
        read_all(fs.open(&s.path("dir"), &CancelToken::new())),
        "error: Is a directory (os error 21)"
    );
    assert_eq!(
        read_all(fs.open(&s.path("sock"), &CancelToken::new())),
        "error: No such device or address (os error 6)"
    );
    for e in [
        fs.metadata(&s.path("missing")).unwrap_err(),
        fs.open_dir(&s.path("file.txt")).map(|_| ()).unwrap_err(),
    ] {
        assert!(
            !dsh_search::fs::is_unavailable(&e),
            "a file's error is not the filesystem's: {e}"
        );
    }
}

/// The hints never change an answer (`docs/contract.md` §10): every
/// directory listed and every file read after the hints a walk gives
/// ([`FsHints::will_list`], [`FsHints::will_list_tree`],
/// [`FsHints::will_open`], each as the walks give them: only for what was
/// listed as a directory or a regular file) answers as the disk does, and
/// so does every path stat'ed after files hinted and never opened; what
/// the filesystem says it knows of an open file ([`FsHints::contents`],
/// [`FsHints::known_nul_free`]) and of a listed one
/// ([`FsHints::known_miss`]: its length) is true of the disk's bytes.
pub fn hints<F: FsHints>(s: &Subject<F>) {
    let fs = &*s.fs;
    let mut d = Diffs::default();
    let token = CancelToken::new();
    let _ = fs.lists_ahead();
    for rel in ["", "dir", "dir/sub", "many", "link_dir", "via_link"] {
        let path = s.path(rel);
        let Ok(handle) = fs.open_dir(&path) else {
            d.check(
                format_args!("open_dir {rel:?}"),
                "a directory".into(),
                "an error".into(),
            );
            continue;
        };
        let mut listing = Listing::new();
        fs.list(&handle, &mut listing);
        let entries: Vec<(Vec<u8>, FileType)> =
            listing.iter().map(|(n, k)| (n.to_vec(), k)).collect();
        // Every hint first, as a walk gives them ahead of its work; a third
        // of the files hinted are never opened. A tree's listing ahead
        // leaves out what glob's walk leaves out.
        const LEFT_OUT: &[&[u8]] = &[b".git", b".svn", b".hg", b".bzr", b".jj", b".sl"];
        for (i, (name, kind)) in entries.iter().enumerate() {
            let name = OsStr::from_bytes(name);
            match kind {
                FileType::Dir => {
                    fs.will_list(&handle, &path, name);
                    fs.will_list_tree(&handle, &path, name, LEFT_OUT);
                }
                FileType::File => fs.will_open(&handle, &path, name, listing.metadata(i)),
                _ => {}
            }
        }
        for (at, (name, kind)) in entries.iter().enumerate() {
            let name = OsStr::from_bytes(name);
            let entry = path.join(name);
            let what = format!("{rel:?} {name:?}");
            match kind {
                FileType::Dir => {
                    let disk = show(std::fs::read_dir(&entry).and_then(|rd| {
                        rd.map(|e| {
                            let e = e?;
                            Ok((e.file_name(), kind_of(e.file_type()?)))
                        })
                        .collect::<io::Result<Vec<_>>>()
                    }));
                    let listed = fs
                        .open_dir_at(&handle, &path, name)
                        .and_then(|h| list(fs, &h, &entry));
                    d.check(format_args!("hinted list {what}"), disk, show(listed));
                }
                FileType::File if at % 3 == 2 => {
                    d.check(
                        format_args!("hinted, not opened: metadata {what}"),
                        disk_meta(std::fs::metadata(&entry), s.mtimes),
                        show_meta(fs.metadata(&entry), s.mtimes),
                    );
                }
                FileType::File => {
                    let disk = std::fs::read(&entry).unwrap();
                    if let Some(len) = fs.known_miss(&handle, &path, name, at) {
                        d.check(
                            format_args!("known_miss {what}"),
                            disk.len().to_string(),
                            len.to_string(),
                        );
                    }
                    let file = match fs.open_at(&handle, &path, name) {
                        Ok(f) => f,
                        Err(e) => {
                            d.check(
                                format_args!("hinted open_at {what}"),
                                bytes(&disk),
                                format!("error: {e}"),
                            );
                            continue;
                        }
                    };
                    if let Some(held) = fs.contents(&file) {
                        d.check(format_args!("contents {what}"), bytes(&disk), bytes(held));
                    }
                    if fs.known_nul_free(&file) {
                        d.check(
                            format_args!("known_nul_free {what}"),
                            "no NUL".into(),
                            if disk.contains(&0) { "a NUL" } else { "no NUL" }.into(),
                        );
                    }
                    d.check(
                        format_args!("hinted open_at {what}"),
                        bytes(&disk),
                        read_all(Ok(file)),
                    );
                }
                _ => {}
            }
        }
    }
    // And by path, after all that.
    for rel in PATHS {
        let path = s.path(rel);
        let at = String::from_utf8_lossy(rel);
        d.check(
            format_args!("metadata after the hints {at:?}"),
            disk_meta(std::fs::metadata(&path), s.mtimes),
            show_meta(fs.metadata(&path), s.mtimes),
        );
        if *rel != b"fifo" {
            d.check(
                format_args!("open after the hints {at:?}"),
                read_all(std::fs::File::open(&path)),
                read_all(fs.open(&path, &token)),
            );
        }
    }
    d.finish();
}

/// What a write did, in terms every filesystem shares.
fn show_write(r: Result<Written, WriteError>, root: &Path) -> String {
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .map_or_else(|_| p.display().to_string(), |p| p.display().to_string())
    };
    match r {
        Ok(w) => format!(
            "replaced={} {:?} len={} mode={:o}",
            w.replaced, w.metadata.kind, w.metadata.len, w.metadata.mode
        ),
        // A component of the parent that is not a directory: the disk's
        // ENOTDIR, or the same said by the variant for it (the file tools
        // print both as `errno::not_a_directory`, `fs::text`).
        Err(WriteError::NotDirectory(_)) => "not a directory".into(),
        Err(WriteError::Io(_, e)) if e.raw_os_error() == Some(20) => "not a directory".into(),
        Err(WriteError::Io(p, e)) => format!("Io({}): {e}", rel(&p)),
        Err(e) => format!("{e:?}"),
    }
}

/// Writes publish what they say: a new file (parents created) with mode
/// 0600, a replaced one keeping its mode, a write through a symlink
/// replacing its target and leaving the link, a stream as a slice; the
/// result's metadata is a later stat's, and the version token moves.
pub fn writes<F: FsWrite>(s: &Subject<F>) {
    let fs = &*s.fs;
    let root = s.tree.root();
    let token = CancelToken::new();
    let write = |rel: &str, content: &[u8], guard: &WriteGuard| {
        show_write(fs.write(&s.path(rel), content, guard, &token), root)
    };
    let read = |rel: &str| read_all(fs.open(&s.path(rel), &CancelToken::new()));

    assert_eq!(
        write("new/deeper/f.txt", b"fresh\n", &WriteGuard::CreateIfAbsent),
        "replaced=false File len=6 mode=600"
    );
    assert_eq!(read("new/deeper/f.txt"), "\"fresh\\n\"");
    assert_eq!(
        show_meta(fs.metadata(&s.path("new/deeper")), s.mtimes)
            .split(' ')
            .next(),
        Some("Dir")
    );
    let listed = fs
        .open_dir(&s.path("new/deeper"))
        .and_then(|h| list(fs, &h, &s.path("new/deeper")));
    assert_eq!(show(listed), r#"[("f.txt", File)]"#);

    // Replaced: the mode stays (0640), the content is new.
    assert_eq!(
        write("file.txt", b"replaced\n", &WriteGuard::None),
        "replaced=true File len=9 mode=640"
    );
    assert_eq!(read("file.txt"), "\"replaced\\n\"");

    // Through a symlink: the target is replaced, the link stays a link.
    assert_eq!(
        write("link_file", b"via link\n", &WriteGuard::None),
        "replaced=true File len=9 mode=640"
    );
    assert_eq!(read("file.txt"), "\"via link\\n\"");
    assert_eq!(
        fs.symlink_metadata(&s.path("link_file")).unwrap().kind,
        FileType::Symlink
    );
    assert_eq!(
        fs.read_link(&s.path("link_file")).unwrap(),
        Path::new("file.txt")
    );

    // The version of the file as it is replaces it; the same version again
    // is stale; the token moved.
    let before = fs.metadata(&s.path("exec.sh")).unwrap();
    let guard = WriteGuard::ReplaceIfVersion(before.version());
    let w = fs
        .write(&s.path("exec.sh"), b"echo hi\n", &guard, &token)
        .unwrap();
    assert!(w.replaced);
    let after = fs.metadata(&s.path("exec.sh")).unwrap();
    assert_eq!(
        show_meta(Ok(w.metadata), s.mtimes),
        show_meta(Ok(after), s.mtimes),
        "the write's metadata is the file's"
    );
    assert_ne!(before.version(), after.version());
    // The owner is the writer's, so it is kept, and the set-id bit with it
    // (contract.md §10: a replaced file keeps its mode).
    assert_eq!(format!("{:o}", after.mode), "4755");
    assert_eq!(write("exec.sh", b"again\n", &guard), "Stale");
    assert_eq!(read("exec.sh"), "\"echo hi\\n\"");

    // A stream larger than one chunk or one SFTP write.
    let content = big().repeat(3);
    let w = fs
        .write_from(
            &s.path("dir/streamed.bin"),
            &mut io::Cursor::new(&content),
            &WriteGuard::CreateIfAbsent,
            &token,
        )
        .unwrap();
    assert_eq!((w.replaced, w.metadata.len), (false, content.len() as u64));
    assert_eq!(read("dir/streamed.bin"), bytes(&content));
    let (m, got) = fs.read_file(&s.path("dir/streamed.bin"), u64::MAX).unwrap();
    assert_eq!(m.len, content.len() as u64);
    assert_eq!(got.as_deref().map(bytes), Some(bytes(&content)));

    // A source that fails: nothing is published.
    struct Failing;
    impl Read for Failing {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("source broke"))
        }
    }
    let r = fs.write_from(
        &s.path("broken.txt"),
        &mut Failing,
        &WriteGuard::None,
        &token,
    );
    assert_eq!(
        show_write(r, root),
        "Source(Custom { kind: Other, error: \"source broke\" })"
    );
    assert_eq!(
        show(fs.metadata(&s.path("broken.txt")).map(|_| ())),
        "error: No such file or directory (os error 2)"
    );
}

/// The write guard and the seam's rule refuse, and leave the target as it
/// was: an existing file for a create-only write, a stale or missing
/// version, anything that is not a regular file (a directory, a FIFO, a
/// socket, a symlink to a directory, a dangling symlink), a path below a
/// file, a symlink loop, and a cancelled call. Expected values checked by
/// hand against `WriteGuard::admits` and the disk's errno.
pub fn refusals<F: FsWrite>(s: &Subject<F>) {
    let fs = &*s.fs;
    let root = s.tree.root();
    let token = CancelToken::new();
    let stale = WriteGuard::ReplaceIfVersion(Version("0:0:0:0:0".into()));
    let cases: &[(&str, WriteGuard, &str)] = &[
        ("file.txt", WriteGuard::CreateIfAbsent, "Exists"),
        ("link_file", WriteGuard::CreateIfAbsent, "Exists"),
        ("file.txt", stale.clone(), "Stale"),
        ("missing.txt", stale.clone(), "Stale"),
        ("dir", WriteGuard::None, "NotRegular(Dir)"),
        ("dir", WriteGuard::CreateIfAbsent, "NotRegular(Dir)"),
        ("link_dir", WriteGuard::None, "NotRegular(Dir)"),
        ("fifo", WriteGuard::None, "NotRegular(Fifo)"),
        ("sock", WriteGuard::None, "NotRegular(Socket)"),
        ("dangling", WriteGuard::None, "NotRegular(Symlink)"),
        (
            "dangling",
            WriteGuard::CreateIfAbsent,
            "NotRegular(Symlink)",
        ),
        ("file.txt/x", WriteGuard::None, "not a directory"),
        ("file.txt/x/y", WriteGuard::None, "not a directory"),
        (
            "loop_a",
            WriteGuard::None,
            "Io(loop_a): Too many levels of symbolic links (os error 40)",
        ),
    ];
    let snapshot = || {
        [
            "file.txt",
            "link_file",
            "dir",
            "link_dir",
            "fifo",
            "sock",
            "dangling",
            "loop_a",
            "missing.txt",
        ]
        .map(|rel| {
            let p = s.path(rel);
            let content = match fs.metadata(&p) {
                Ok(m) if m.kind.is_file() => read_all(fs.open(&p, &token)),
                _ => String::new(),
            };
            format!(
                "{rel}: {} {content}",
                show_meta(fs.symlink_metadata(&p), s.mtimes)
            )
        })
    };
    let before = snapshot();
    let mut diffs = Vec::new();
    for (rel, guard, expected) in cases {
        let got = show_write(fs.write(&s.path(rel), b"x\n", guard, &token), root);
        if got != *expected {
            diffs.push(format!("{rel} {guard:?}: expected {expected}, got {got}"));
        }
    }
    // Cancelled before publishing: nothing changes, nothing is created.
    let cancelled = CancelToken::new();
    cancelled.cancel();
    for rel in ["file.txt", "cancelled/new.txt"] {
        let got = show_write(
            fs.write(&s.path(rel), b"x\n", &WriteGuard::None, &cancelled),
            root,
        );
        if got != "Cancelled" {
            diffs.push(format!("{rel} cancelled: expected Cancelled, got {got}"));
        }
    }
    assert!(diffs.is_empty(), "{}", diffs.join("\n"));
    assert_eq!(snapshot(), before, "a refused write changed the tree");
    assert_eq!(
        show(fs.metadata(&s.path("cancelled")).map(|_| ())),
        "error: No such file or directory (os error 2)",
        "a cancelled write created its parent"
    );
}

/// A test of the row's module (which defines `subject()`) for each case
/// named.
macro_rules! cases {
    ($($case:ident),*) => {$(
        #[test]
        fn $case() {
            super::$case(&subject());
        }
    )*};
}

/// One module per filesystem, with a test per case of its capabilities:
/// `name: make, mtimes;` where `make(root, scratch)` builds the filesystem
/// over the tree at `root` (an `Arc`), with `scratch` a directory of its
/// own outside the tree. The rows in `writable` get the reading and the
/// writing cases, those in `read_only` the reading cases.
macro_rules! filesystems {
    (
        writable { $($(#[$attr:meta])* $name:ident: $make:expr, $mtimes:expr;)* }
        read_only { $($(#[$ro_attr:meta])* $ro_name:ident: $ro_make:expr, $ro_mtimes:expr;)* }
    ) => {
        $(
            $(#[$attr])*
            mod $name {
                #[allow(unused_imports)]
                use super::*;

                fn subject() -> Subject<impl FsHints + FsWrite> {
                    Subject::new($make, $mtimes)
                }

                cases!(listing, metadata, symlinks, reads, errors, hints);
                cases!(writes, refusals);
            }
        )*
        $(
            $(#[$ro_attr])*
            mod $ro_name {
                #[allow(unused_imports)]
                use super::*;

                fn subject() -> Subject<impl FsHints> {
                    Subject::new($ro_make, $ro_mtimes)
                }

                cases!(listing, metadata, symlinks, reads, errors, hints);
            }
        )*
    };
}

use dsh_search::fs::{LocalFs, MemFs, OverlayFs};

filesystems! {
    writable {
    // The local disk: directory descriptors and `getdents64` on Linux.
    local: |_, _| Arc::new(LocalFs::new()), Mtimes::Nanos;
    // The local disk through `std::fs`, the only path elsewhere.
    local_portable: |_, _| Arc::new(LocalFs::new().portable()), Mtimes::Nanos;
    // The tree loaded into memory.
    memory: |root: &Path, _| Arc::new(MemFs::load(root).unwrap()), Mtimes::Nanos;
    // An overlay over the disk whose upper layer is in memory, empty at first.
    overlay_memory: |root: &Path, _| Arc::new(
        OverlayFs::new(Arc::new(LocalFs::new()), root, Arc::new(MemFs::new()), root).unwrap()
    ), Mtimes::Nanos;
    // An overlay over the disk whose upper layer is a directory on disk.
    overlay_disk: |root: &Path, scratch: &Path| Arc::new(
        OverlayFs::on_disk(Arc::new(LocalFs::new()), root, &scratch.join("overlay")).unwrap()
    ), Mtimes::Nanos;
    // SFTP to the binary's shared sshd, which sees the same disk.
    #[cfg(feature = "sftp")]
    sftp: |_, _| crate::util::sshd::shared_fs(), Mtimes::Seconds;
    }
    read_only {
    // The index's view of the tree on the local disk: listings and stats
    // from its mirror (the watcher needs Linux), reads from the disk.
    #[cfg(target_os = "linux")]
    index_view: |root: &Path, _| Arc::new(dsh_search::Index::local_view(root).unwrap()), Mtimes::Nanos;
    }
}
