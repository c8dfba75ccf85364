//! `MemFs` against the disk: the same tree built on disk and loaded into
//! memory, the same operations run through `LocalFs` and `MemFs`, the same
//! answers expected, error texts included. The refusal cases run as uid
//! 65534 (through `setpriv` when the tests run as root), since root is
//! refused nothing. Writes and the write guard are the conformance suite's
//! (`tests/fs_conformance.rs`), which every filesystem runs.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, UNIX_EPOCH};

use dsh_search_base::cancel::CancelToken;

use super::MemFs;
use crate::seam::{FileSystem, FileType, Listing, Metadata};
use crate::LocalFs;

/// A temporary directory others can enter (tempfile makes them 0700).
fn tempdir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("dsh-mem-")
        .tempdir()
        .unwrap();
    chmod(dir.path(), 0o755);
    dir
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn write(path: &Path, content: &str, mtime_ns: u64) {
    std::fs::write(path, content).unwrap();
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(UNIX_EPOCH + Duration::from_nanos(mtime_ns))
        .unwrap();
}

fn mkfifo(path: &Path) {
    let status = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(status.success(), "mkfifo {path:?}");
}

/// The tree of `tests.rs`, on disk, with mtimes to the nanosecond, modes,
/// a non-UTF-8 name, a FIFO, a socket, and a directory whose `readdir`
/// order is not its creation order.
fn build_tree(root: &Path) {
    let p = |rel: &str| root.join(rel);
    write(&p("file"), "hello\n", 1_600_000_000_123_456_789);
    chmod(&p("file"), 0o640);
    std::fs::create_dir_all(p("dir/sub")).unwrap();
    write(&p("dir/inner.txt"), "inner\n", 1_600_000_001_000_000_001);
    write(&p("dir/sub/deep.txt"), "deep\n", 1_600_000_002_999_999_999);
    write(&p("exec"), "#!/bin/sh\n", 1_500_000_000_000_000_000);
    chmod(&p("exec"), 0o4755);
    std::fs::create_dir(p("empty")).unwrap();
    symlink("file", p("link_file")).unwrap();
    symlink("dir", p("link_dir")).unwrap();
    symlink(p("dir/inner.txt"), p("abs_link")).unwrap();
    symlink("nowhere", p("dangling")).unwrap();
    symlink("loop_b", p("loop_a")).unwrap();
    symlink("loop_a", p("loop_b")).unwrap();
    symlink("self_loop", p("self_loop")).unwrap();
    let name = root.file_name().unwrap().to_str().unwrap();
    symlink(format!("../{name}/dir"), p("up")).unwrap();
    symlink("link_dir/sub", p("via_link")).unwrap();
    mkfifo(&p("fifo"));
    drop(std::os::unix::net::UnixListener::bind(p("sock")).unwrap());
    for n in [40, 41] {
        for i in 0..n {
            let target = if i + 1 == n {
                "file".to_string()
            } else {
                format!("chain{n}_{}", i + 1)
            };
            symlink(target, p(&format!("chain{n}_{i}"))).unwrap();
        }
    }
    std::fs::write(root.join(OsStr::from_bytes(b"caf\xe9.txt")), "latin-1\n").unwrap();
    std::fs::create_dir(p("many")).unwrap();
    for i in 0..120u32 {
        let i = (i * 37) % 120;
        write(
            &p(&format!("many/f{i}")),
            "x",
            1_000_000_000 + u64::from(i % 7),
        );
    }
}

/// Paths that exercise resolution (relative to the root; `""` is the
/// root).
const PATHS: &[&str] = &[
    "",
    ".",
    "file",
    "file/",
    "file/.",
    "file/..",
    "file/x",
    "exec",
    "dir",
    "dir/",
    "dir/.",
    "dir/..",
    "dir//sub///deep.txt",
    "./dir/./sub",
    "dir/sub/../inner.txt",
    "missing",
    "missing/x",
    "link_file",
    "link_file/",
    "link_file/x",
    "link_dir",
    "link_dir/",
    "link_dir/..",
    "link_dir/sub/../../file",
    "abs_link",
    "dangling",
    "dangling/",
    "loop_a",
    "loop_a/",
    "self_loop/x",
    "up",
    "up/inner.txt",
    "via_link",
    "via_link/deep.txt",
    "chain40_0",
    "chain41_0",
    "fifo",
    "fifo/",
    "sock",
    "empty",
    "many",
];

/// Names looked up through every directory handle, beyond its listed
/// entries (never `..`: the root's parent is outside the copy).
const AT_NAMES: &[&str] = &[
    ".",
    "dir/inner.txt",
    "link_dir/../file",
    "nope",
    "file/",
    "sub/..",
];

fn show_meta(m: std::io::Result<Metadata>) -> String {
    match m {
        // dev, ino and ctime are the filesystem's own.
        Ok(m) => format!(
            "{:?} len={} mtime={:?} mode={:o}",
            m.kind, m.len, m.mtime, m.mode
        ),
        Err(e) => format!("error: {e}"),
    }
}

fn show<T: std::fmt::Debug>(r: std::io::Result<T>) -> String {
    match r {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {e}"),
    }
}

fn read_all(r: std::io::Result<impl Read>) -> String {
    let mut data = Vec::new();
    match r.and_then(|mut f| f.read_to_end(&mut data)) {
        Ok(_) => format!("{:?}", String::from_utf8_lossy(&data[..data.len().min(64)])),
        Err(e) => format!("error: {e}"),
    }
}

/// What `fs` answers about `paths` under `root`, one line per operation;
/// every directory that opens is listed, and each of its entries stat'ed
/// and opened through the handle.
fn report<F: FileSystem>(fs: &F, root: &Path, paths: &[Vec<u8>], at_names: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    // A pre-cancelled token: a FIFO's read ends at once, on both.
    let cancelled = CancelToken::new();
    cancelled.cancel();
    for rel in paths {
        let mut bytes = root.as_os_str().as_bytes().to_vec();
        if !rel.is_empty() {
            bytes.push(b'/');
            bytes.extend_from_slice(rel);
        }
        let path = PathBuf::from(OsStr::from_bytes(&bytes));
        let at = String::from_utf8_lossy(rel).into_owned();
        let mut line = |op: &str, v: String| out.push(format!("{at:?} {op}: {v}"));
        line("metadata", show_meta(fs.metadata(&path)));
        line("symlink_metadata", show_meta(fs.symlink_metadata(&path)));
        line("canonicalize", show(fs.canonicalize(&path)));
        line("read_link", show(fs.read_link(&path)));
        let control = fs
            .read_control(&path)
            .map(|d| String::from_utf8_lossy(&d).into_owned());
        line("read_control", show(control));
        line("open", read_all(fs.open(&path, &cancelled)));
        let dir = match fs.open_dir(&path) {
            Ok(dir) => dir,
            Err(e) => {
                line("open_dir", format!("error: {e}"));
                continue;
            }
        };
        let mut listing = Listing::new();
        fs.list(&dir, &mut listing);
        let entries: Vec<(Vec<u8>, FileType)> =
            listing.iter().map(|(n, k)| (n.to_vec(), k)).collect();
        line(
            "list",
            format!("{entries:?} {:?}", listing.error().map(|e| e.to_string())),
        );
        let names = entries
            .iter()
            .map(|(n, _)| n.clone())
            .chain(at_names.iter().map(|n| n.as_bytes().to_vec()));
        for name in names {
            let name = OsStr::from_bytes(&name);
            let mut line = |op: &str, v: String| out.push(format!("{at:?} {name:?} {op}: {v}"));
            line(
                "metadata_at",
                show_meta(fs.metadata_at(&dir, &path, name, false)),
            );
            let followed = fs.metadata_at(&dir, &path, name, true);
            let fifo = matches!(&followed, Ok(m) if m.kind == FileType::Fifo);
            line("metadata_at follow", show_meta(followed));
            // The disk's `open_at` of a FIFO blocks until a writer comes.
            if !fifo {
                line("open_at", read_all(fs.open_at(&dir, &path, name)));
            }
            let sub = fs.open_dir_at(&dir, &path, name).map(|sub| {
                let mut listing = Listing::new();
                fs.list(&sub, &mut listing);
                listing.len()
            });
            line("open_dir_at", show(sub));
        }
    }
    out
}

/// The lines where `a` and `b` differ.
fn diff(a: &[String], b: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (x, y) in a.iter().zip(b) {
        if x != y {
            out.push(format!("disk:   {x}\nmemory: {y}"));
        }
    }
    if a.len() != b.len() {
        out.push(format!("{} lines on disk, {} in memory", a.len(), b.len()));
    }
    out
}

fn assert_same(root: &Path, paths: &[Vec<u8>], at_names: &[&str]) {
    let mem = MemFs::load(root).unwrap();
    let disk = report(&LocalFs::new(), root, paths, at_names);
    let memory = report(&mem, root, paths, at_names);
    let diffs = diff(&disk, &memory);
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

fn paths(list: &[&str]) -> Vec<Vec<u8>> {
    list.iter().map(|p| p.as_bytes().to_vec()).collect()
}

#[test]
fn a_loaded_tree_answers_like_the_disk() {
    let tmp = tempdir();
    build_tree(tmp.path());
    let mut all = paths(PATHS);
    all.push(b"caf\xe9.txt".to_vec());
    all.push("a".repeat(256).into_bytes());
    assert_same(tmp.path(), &all, AT_NAMES);
}

#[test]
fn a_loaded_tree_keeps_readdir_order_and_nanoseconds() {
    let tmp = tempdir();
    build_tree(tmp.path());
    let mem = MemFs::load(tmp.path()).unwrap();
    let many = tmp.path().join("many");
    let disk: Vec<Vec<u8>> = std::fs::read_dir(&many)
        .unwrap()
        .map(|e| e.unwrap().file_name().as_bytes().to_vec())
        .collect();
    let dir = mem.open_dir(&many).unwrap();
    let mut listing = Listing::new();
    mem.list(&dir, &mut listing);
    let memory: Vec<Vec<u8>> = listing.iter().map(|(n, _)| n.to_vec()).collect();
    assert_eq!(memory, disk);
    // ext4 lists in hash order: the copy follows the disk, not the names.
    let mut sorted = disk.clone();
    sorted.sort();
    assert_ne!(sorted, disk, "readdir order happens to be name order");
    let m = mem.metadata(&tmp.path().join("file")).unwrap();
    assert_eq!(m.mtime, Some((1_600_000_000, 123_456_789)));
    assert_eq!(m.mode, 0o640);
}

#[test]
fn load_copies_only_the_path_to_root() {
    let tmp = tempdir();
    build_tree(tmp.path());
    let root = tmp.path().join("dir");
    let mem = MemFs::load(&root).unwrap();
    let parent = tmp.path();
    let dir = mem.open_dir(parent).unwrap();
    let mut listing = Listing::new();
    mem.list(&dir, &mut listing);
    let names: Vec<&[u8]> = listing.iter().map(|(n, _)| n).collect();
    assert_eq!(names, [&b"dir"[..]]);
    let disk = LocalFs::new().metadata(parent).unwrap();
    let copy = mem.metadata(parent).unwrap();
    assert_eq!((copy.mode, copy.mtime), (disk.mode, disk.mtime));
    assert!(mem.metadata(&tmp.path().join("file")).is_err());
    assert_same(
        &root,
        &paths(&["", "inner.txt", "sub", "sub/deep.txt"]),
        &[],
    );
}

#[test]
fn load_through_a_symlink_copies_the_link() {
    let tmp = tempdir();
    build_tree(tmp.path());
    let lexical = tmp.path().join("link_dir");
    let mem = MemFs::load(&lexical).unwrap();
    let local = LocalFs::new();
    assert_eq!(
        mem.canonicalize(&lexical).unwrap(),
        local.canonicalize(&lexical).unwrap()
    );
    assert_eq!(mem.read_link(&lexical).unwrap(), Path::new("dir"));
    let inner = lexical.join("sub/deep.txt");
    assert_eq!(&*mem.read_file(&inner).unwrap(), b"deep\n");
}

#[test]
fn load_refuses_what_is_not_a_directory() {
    let tmp = tempdir();
    build_tree(tmp.path());
    let e = MemFs::load(tmp.path().join("file")).unwrap_err();
    assert_eq!(e.to_string(), crate::errno::not_a_directory().to_string());
    let e = MemFs::load(tmp.path().join("nope")).unwrap_err();
    assert_eq!(e.to_string(), crate::errno::not_found().to_string());
    let e = MemFs::load(tmp.path().join("loop_a")).unwrap_err();
    assert_eq!(e.to_string(), crate::errno::too_many_links().to_string());
}

/// A tree of entries uid 65534 is refused: a directory it can list but not
/// search, one it can do neither with, a file it cannot read, a symlink
/// into the unsearchable directory.
fn build_refusals(root: &Path) {
    let p = |rel: &str| root.join(rel);
    std::fs::create_dir_all(p("open")).unwrap();
    std::fs::write(p("open/a.txt"), "a\n").unwrap();
    symlink("../r_only/f.txt", p("open/through")).unwrap();
    std::fs::create_dir_all(p("r_only/sub")).unwrap();
    std::fs::write(p("r_only/f.txt"), "f\n").unwrap();
    symlink("f.txt", p("r_only/ln")).unwrap();
    mkfifo(&p("r_only/pipe"));
    std::fs::create_dir_all(p("none/deeper")).unwrap();
    std::fs::write(p("none/h.txt"), "h\n").unwrap();
    std::fs::write(p("secret.txt"), "secret\n").unwrap();
    std::fs::write(p("readable.txt"), "readable\n").unwrap();
    chmod(&p("r_only"), 0o744);
    chmod(&p("none"), 0o700);
    chmod(&p("secret.txt"), 0o600);
}

const REFUSAL_PATHS: &[&str] = &[
    "",
    "open",
    "open/a.txt",
    "open/through",
    "r_only",
    "r_only/",
    "r_only/.",
    "r_only/..",
    "r_only/f.txt",
    "r_only/sub",
    "r_only/sub/..",
    "r_only/nope",
    "r_only/ln",
    "none",
    "none/.",
    "none/..",
    "none/h.txt",
    "none/deeper/x",
    "secret.txt",
    "readable.txt",
];

/// The variable that makes [`refusals_as_uid_65534`] do its work.
const CHILD_ROOT: &str = "DSH_SEARCH_MEM_PARITY_ROOT";

#[test]
fn refusals_match_the_disk_for_an_unprivileged_user() {
    // The same test, run again by itself as uid 65534 (below): the child.
    if let Some(root) = std::env::var_os(CHILD_ROOT) {
        return refusals_as_uid_65534(Path::new(&root));
    }
    let tmp = tempdir();
    build_refusals(tmp.path());
    if !rustix::process::geteuid().is_root() {
        // This user is refused what uid 65534 would be.
        assert_same(tmp.path(), &paths(REFUSAL_PATHS), &[]);
        return;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "mem::parity::refusals_match_the_disk_for_an_unprivileged_user",
        ])
        .args(["--nocapture", "--test-threads=1"])
        .env(CHILD_ROOT, tmp.path())
        .output()
        .expect("setpriv runs the test binary as uid 65534");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "as uid 65534: {}\n{stdout}\n{stderr}",
        out.status
    );
}

/// The child's half of `refusals_match_the_disk_for_an_unprivileged_user`.
fn refusals_as_uid_65534(root: &Path) {
    assert!(!rustix::process::geteuid().is_root(), "runs unprivileged");
    assert_same(root, &paths(REFUSAL_PATHS), &[".", "sub/.."]);
    // The refusals are there, not only equal: rg's EACCES cases.
    let mem = MemFs::load(root).unwrap();
    let eacces = std::io::Error::from_raw_os_error(13).to_string();
    for rel in ["r_only/f.txt", "none/h.txt"] {
        let e = mem.metadata(&root.join(rel)).unwrap_err();
        assert_eq!(e.to_string(), eacces, "{rel}");
    }
    let e = mem
        .open(&root.join("secret.txt"), &CancelToken::new())
        .unwrap_err();
    assert_eq!(e.to_string(), eacces);
    assert_eq!(
        mem.open_dir(&root.join("none")).unwrap_err().to_string(),
        eacces
    );
}
