//! `MemFs` on its own: path resolution, listings, the builder API, guarded
//! writes, handles held across changes, threads. (Against the disk:
//! `parity.rs`.)

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;

use super::*;
use crate::Version;

/// `/w`: files, directories, symlinks of every sort, a FIFO, a socket.
fn tree() -> MemFs {
    let fs = MemFs::new();
    fs.write_file("/w/file", "hello\n").unwrap();
    fs.write_file("/w/dir/inner.txt", "inner\n").unwrap();
    fs.write_file("/w/dir/sub/deep.txt", "deep\n").unwrap();
    fs.create_dir_all("/w/empty").unwrap();
    fs.symlink("file", "/w/link_file").unwrap();
    fs.symlink("dir", "/w/link_dir").unwrap();
    fs.symlink("/w/dir/inner.txt", "/w/abs_link").unwrap();
    fs.symlink("nowhere", "/w/dangling").unwrap();
    fs.symlink("loop_b", "/w/loop_a").unwrap();
    fs.symlink("loop_a", "/w/loop_b").unwrap();
    fs.symlink("self_loop", "/w/self_loop").unwrap();
    fs.symlink("../w/dir", "/w/up").unwrap();
    fs.symlink("link_dir/sub", "/w/via_link").unwrap();
    fs.mkfifo("/w/fifo").unwrap();
    fs.mksocket("/w/sock").unwrap();
    // chainN_0 -> chainN_1 -> … -> chainN_{N-1} -> file: N links.
    for n in [40, 41] {
        for i in 0..n {
            let target = if i + 1 == n {
                "file".to_string()
            } else {
                format!("chain{n}_{}", i + 1)
            };
            fs.symlink(target, format!("/w/chain{n}_{i}")).unwrap();
        }
    }
    fs
}

fn kind(r: io::Result<Metadata>) -> Result<FileType, String> {
    r.map(|m| m.kind).map_err(|e| e.to_string())
}

fn err<T>(e: io::Error) -> Result<T, String> {
    Err(e.to_string())
}

/// `stat!(name, follow, path, expected kind or error)`.
macro_rules! stat {
    ($name:ident, $follow:expr, $path:expr, $want:expr) => {
        #[test]
        fn $name() {
            let fs = tree();
            let path = Path::new($path);
            let got = if $follow {
                fs.metadata(path)
            } else {
                fs.symlink_metadata(path)
            };
            assert_eq!(kind(got), $want, "{:?}", $path);
        }
    };
}

use FileType::{Dir, Fifo, File, Socket, Symlink};

stat!(stat_file, true, "/w/file", Ok(File));
stat!(stat_dir, true, "/w/dir", Ok(Dir));
stat!(stat_root, true, "/", Ok(Dir));
stat!(stat_root_dotdot, true, "/../w/./dir//sub", Ok(Dir));
stat!(stat_relative_from_root, true, "w/file", Ok(File));
stat!(stat_empty_path, true, "", err(errno::not_found()));
stat!(stat_missing, true, "/w/missing", err(errno::not_found()));
stat!(
    stat_missing_middle,
    true,
    "/w/missing/x",
    err(errno::not_found())
);
stat!(
    stat_file_slash,
    true,
    "/w/file/",
    err(errno::not_a_directory())
);
stat!(
    stat_file_dot,
    true,
    "/w/file/.",
    err(errno::not_a_directory())
);
stat!(
    stat_file_dotdot,
    true,
    "/w/file/..",
    err(errno::not_a_directory())
);
stat!(
    stat_file_middle,
    true,
    "/w/file/x",
    err(errno::not_a_directory())
);
stat!(stat_dotdot, true, "/w/dir/sub/../inner.txt", Ok(File));
stat!(
    stat_dotdot_after_link_is_physical,
    true,
    "/w/link_dir/sub/../../file",
    Ok(File)
);
stat!(stat_dotdot_link_target, true, "/w/up/inner.txt", Ok(File));
stat!(stat_link_in_link, true, "/w/via_link/deep.txt", Ok(File));
stat!(stat_link_file, true, "/w/link_file", Ok(File));
stat!(lstat_link_file, false, "/w/link_file", Ok(Symlink));
stat!(
    stat_link_file_slash,
    true,
    "/w/link_file/",
    err(errno::not_a_directory())
);
stat!(lstat_link_dir_slash_follows, false, "/w/link_dir/", Ok(Dir));
stat!(stat_abs_link, true, "/w/abs_link", Ok(File));
stat!(stat_dangling, true, "/w/dangling", err(errno::not_found()));
stat!(lstat_dangling, false, "/w/dangling", Ok(Symlink));
stat!(
    lstat_dangling_slash,
    false,
    "/w/dangling/",
    err(errno::not_found())
);
stat!(stat_loop, true, "/w/loop_a", err(errno::too_many_links()));
stat!(lstat_loop, false, "/w/loop_a", Ok(Symlink));
stat!(
    lstat_loop_slash,
    false,
    "/w/loop_a/",
    err(errno::too_many_links())
);
stat!(
    stat_loop_middle,
    false,
    "/w/self_loop/x",
    err(errno::too_many_links())
);
stat!(stat_forty_links, true, "/w/chain40_0", Ok(File));
stat!(
    stat_forty_one_links,
    true,
    "/w/chain41_0",
    err(errno::too_many_links())
);
stat!(stat_fifo, true, "/w/fifo", Ok(Fifo));
stat!(
    stat_fifo_slash,
    true,
    "/w/fifo/",
    err(errno::not_a_directory())
);
stat!(stat_socket, true, "/w/sock", Ok(Socket));

#[test]
#[cfg(target_os = "linux")]
fn loop_error_text_is_the_kernels() {
    let e = tree().metadata(Path::new("/w/loop_a")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "Too many levels of symbolic links (os error 40)"
    );
}

#[test]
fn long_name_and_nul() {
    let fs = tree();
    let long = format!("/w/{}", "a".repeat(256));
    assert_eq!(
        kind(fs.metadata(Path::new(&long))),
        err(errno::name_too_long())
    );
    let ok = format!("/w/{}", "a".repeat(255));
    assert_eq!(kind(fs.metadata(Path::new(&ok))), err(errno::not_found()));
    let e = fs.metadata(Path::new("/w/a\0b")).unwrap_err();
    assert_eq!(e.to_string(), "file name contained an unexpected NUL byte");
    let dir = fs.open_dir(Path::new("/w")).unwrap();
    let e = fs
        .metadata_at(&dir, Path::new("/w"), OsStr::new("a\0b"), false)
        .unwrap_err();
    assert_eq!(e.to_string(), errno::invalid().to_string());
}

/// `canon!(name, path, expected path or error)`.
macro_rules! canon {
    ($name:ident, $path:expr, $want:expr) => {
        #[test]
        fn $name() {
            let got = tree().canonicalize(Path::new($path));
            let got = got.map(|p| p.to_string_lossy().into_owned());
            let want: Result<&str, String> = $want;
            assert_eq!(
                got.as_deref().map_err(|e| e.to_string()),
                want,
                "{:?}",
                $path
            );
        }
    };
}

canon!(canon_root, "/", Ok("/"));
canon!(canon_plain, "/w//dir/./sub/", Ok("/w/dir/sub"));
canon!(canon_link_dir, "/w/link_dir/sub/..", Ok("/w/dir"));
canon!(canon_abs_link, "/w/abs_link", Ok("/w/dir/inner.txt"));
canon!(canon_relative_link_up, "/w/up", Ok("/w/dir"));
canon!(canon_link_in_link, "/w/via_link", Ok("/w/dir/sub"));
canon!(canon_above_root, "/../../w", Ok("/w"));
canon!(canon_dangling, "/w/dangling", err(errno::not_found()));
canon!(canon_missing, "/w/nope", err(errno::not_found()));
canon!(canon_file_slash, "/w/file/", err(errno::not_a_directory()));
canon!(
    canon_file_dotdot,
    "/w/file/..",
    err(errno::not_a_directory())
);
canon!(
    canon_link_file_middle,
    "/w/link_file/x",
    err(errno::not_a_directory())
);
canon!(canon_loop, "/w/loop_a", err(errno::too_many_links()));
canon!(canon_forty, "/w/chain40_0", Ok("/w/file"));
canon!(
    canon_forty_one,
    "/w/chain41_0",
    err(errno::too_many_links())
);

#[test]
fn read_link_gives_the_target_as_stored() {
    let fs = tree();
    let t = |p: &str| {
        fs.read_link(Path::new(p))
            .map(|t| t.to_string_lossy().into_owned())
            .map_err(|e| e.to_string())
    };
    assert_eq!(t("/w/up"), Ok("../w/dir".into()));
    assert_eq!(t("/w/abs_link"), Ok("/w/dir/inner.txt".into()));
    assert_eq!(t("/w/file"), err(errno::invalid()));
    assert_eq!(t("/w/link_dir/"), err(errno::invalid()));
    assert_eq!(t("/w/nope"), err(errno::not_found()));
}

fn names(fs: &MemFs, dir: &MemDir) -> Vec<(String, FileType)> {
    let mut listing = Listing::new();
    fs.list(dir, &mut listing);
    assert!(listing.error().is_none());
    listing
        .iter()
        .map(|(n, k)| (String::from_utf8_lossy(n).into_owned(), k))
        .collect()
}

#[test]
fn listing_is_in_creation_order_with_unfollowed_kinds() {
    let fs = tree();
    let dir = fs.open_dir(Path::new("/w")).unwrap();
    let got = names(&fs, &dir);
    let head: Vec<_> = got.iter().take(15).cloned().collect();
    let want = [
        ("file", File),
        ("dir", Dir),
        ("empty", Dir),
        ("link_file", Symlink),
        ("link_dir", Symlink),
        ("abs_link", Symlink),
        ("dangling", Symlink),
        ("loop_a", Symlink),
        ("loop_b", Symlink),
        ("self_loop", Symlink),
        ("up", Symlink),
        ("via_link", Symlink),
        ("fifo", Fifo),
        ("sock", Socket),
        ("chain40_0", Symlink),
    ];
    let want: Vec<_> = want.iter().map(|&(n, k)| (n.to_string(), k)).collect();
    assert_eq!(head, want);
    assert_eq!(got.len(), 14 + 40 + 41);
}

#[test]
fn large_directory_index_survives_removals() {
    let fs = MemFs::new();
    // A scrambled order, so that creation order differs from name order.
    let order: Vec<u32> = (0..200u32).map(|i| (i * 73) % 200).collect();
    for i in &order {
        fs.write_file(format!("/big/f{i}"), i.to_string()).unwrap();
    }
    let dir = fs.open_dir(Path::new("/big")).unwrap();
    let want: Vec<String> = order.iter().map(|i| format!("f{i}")).collect();
    let got: Vec<String> = names(&fs, &dir).into_iter().map(|(n, _)| n).collect();
    assert_eq!(got, want);
    for i in (0..200).step_by(3) {
        fs.remove(format!("/big/f{i}")).unwrap();
    }
    for i in 0..200u32 {
        let r = fs.read_file(format!("/big/f{i}"));
        if i % 3 == 0 {
            assert!(r.is_err(), "f{i} removed");
        } else {
            assert_eq!(&*r.unwrap(), i.to_string().as_bytes(), "f{i}");
        }
    }
    let left: Vec<String> = names(&fs, &dir).into_iter().map(|(n, _)| n).collect();
    let want: Vec<String> = want
        .into_iter()
        .filter(|n| n[1..].parse::<u32>().unwrap() % 3 != 0)
        .collect();
    assert_eq!(left, want);
}

#[test]
fn at_methods_resolve_from_the_handle() {
    let fs = tree();
    let w = Path::new("/w");
    let dir = fs.open_dir(w).unwrap();
    let at = |name: &str, follow| kind(fs.metadata_at(&dir, w, OsStr::new(name), follow));
    assert_eq!(at("link_dir", false), Ok(Symlink));
    assert_eq!(at("link_dir", true), Ok(Dir));
    assert_eq!(at("dir/../file", false), Ok(File));
    assert_eq!(at("..", false), Ok(Dir));
    assert_eq!(at("/w/file", false), Ok(File));
    assert_eq!(at("nope", false), err(errno::not_found()));
    let sub = fs.open_dir_at(&dir, w, OsStr::new("link_dir")).unwrap();
    assert_eq!(names(&fs, &sub)[0], ("inner.txt".to_string(), File));
    let e = fs.open_dir_at(&dir, w, OsStr::new("file")).unwrap_err();
    assert_eq!(e.to_string(), errno::not_a_directory().to_string());
    let mut text = String::new();
    fs.open_at(&dir, w, OsStr::new("abs_link"))
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "inner\n");
}

#[test]
fn open_of_each_kind() {
    let fs = tree();
    let token = CancelToken::new();
    let open = |p: &str| fs.open(Path::new(p), &token);
    let mut buf = [0u8; 8];
    let e = open("/w/dir").unwrap().read(&mut buf).unwrap_err();
    assert_eq!(e.to_string(), errno::is_a_directory().to_string());
    let e = open("/w/sock").unwrap_err();
    assert_eq!(e.to_string(), errno::no_such_device().to_string());
    let e = open("/w/dangling").unwrap_err();
    assert_eq!(e.to_string(), errno::not_found().to_string());
    let w = Path::new("/w");
    let dir = fs.open_dir(w).unwrap();
    let e = fs.open_at(&dir, w, OsStr::new("fifo")).unwrap_err();
    assert_eq!(e.to_string(), errno::would_block().to_string());
}

#[test]
fn fifo_reader_waits_until_cancelled() {
    let fs = tree();
    let token = CancelToken::new();
    let mut reader = fs.open(Path::new("/w/fifo"), &token).unwrap();
    let started = std::time::Instant::now();
    let canceller = {
        let token = token.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(60));
            token.cancel();
        })
    };
    let e = reader.read(&mut [0u8; 16]).unwrap_err();
    canceller.join().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(60));
    assert_eq!(
        e.to_string(),
        dsh_search_base::cancel::cancelled_error().to_string()
    );
}

#[test]
fn read_control_reads_regular_files_only() {
    let fs = tree();
    let rc = |p: &str| fs.read_control(Path::new(p)).map_err(|e| e.to_string());
    assert_eq!(rc("/w/link_file"), Ok(b"hello\n".to_vec()));
    assert_eq!(rc("/w/dir"), err(not_regular()));
    assert_eq!(rc("/w/fifo"), err(not_regular()));
    assert_eq!(rc("/w/sock"), err(errno::no_such_device()));
    assert_eq!(rc("/w/nope"), err(errno::not_found()));
}

#[test]
fn an_open_file_reads_its_snapshot() {
    let fs = tree();
    let token = CancelToken::new();
    let mut old = fs.open(Path::new("/w/file"), &token).unwrap();
    let mut first = [0u8; 2];
    old.read_exact(&mut first).unwrap();
    fs.write_file("/w/file", "replaced\n").unwrap();
    let mut rest = String::new();
    old.read_to_string(&mut rest).unwrap();
    assert_eq!((&first, rest.as_str()), (b"he", "llo\n"));
    assert_eq!(&*fs.read_file("/w/file").unwrap(), b"replaced\n");
}

#[test]
fn builder_modes_times_and_inodes() {
    let fs = MemFs::new();
    fs.write_file("/a/b/f", "x").unwrap();
    let m = |p: &str| fs.metadata(Path::new(p)).unwrap();
    assert_eq!(
        (m("/a").mode, m("/a/b").mode, m("/a/b/f").mode),
        (0o755, 0o755, 0o644)
    );
    fs.set_mode("/a/b/f", 0o4751).unwrap();
    fs.set_mtime("/a/b/f", (1_700_000_000, 123_456_789))
        .unwrap();
    let before = m("/a/b/f");
    assert_eq!(before.mtime, Some((1_700_000_000, 123_456_789)));
    fs.write_file("/a/b/f", "longer").unwrap();
    let after = m("/a/b/f");
    assert_eq!((after.mode, after.ino, after.len), (0o4751, before.ino, 6));
    assert_ne!(after.mtime, before.mtime);
    assert_eq!(after.dev, m("/").dev);
    let inos = [m("/").ino, m("/a").ino, m("/a/b").ino, after.ino];
    let mut unique = inos.to_vec();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), inos.len());
}

#[test]
fn every_change_moves_the_version() {
    let fs = MemFs::new();
    fs.write_file("/f", "x").unwrap();
    let v = || fs.metadata(Path::new("/f")).unwrap().version();
    let mut seen = vec![v()];
    let changes: [&dyn Fn(); 4] = [
        &|| fs.write_file("/f", "x").unwrap(),
        &|| fs.set_mode("/f", 0o600).unwrap(),
        &|| fs.set_mtime("/f", (5, 0)).unwrap(),
        &|| fs.set_mtime("/f", (5, 0)).unwrap(),
    ];
    for change in changes {
        change();
        let now = v();
        assert!(!seen.contains(&now), "{now} repeats");
        seen.push(now);
    }
}

#[test]
fn builder_errors() {
    let fs = tree();
    let e = |r: io::Result<()>| r.map_err(|e| e.to_string());
    assert_eq!(e(fs.symlink("x", "/w/file")), err(errno::exists()));
    assert_eq!(e(fs.mkfifo("/w/dangling")), err(errno::exists()));
    assert_eq!(e(fs.mkfifo("/w/new/")), err(errno::not_found()));
    assert_eq!(
        e(fs.create_dir_all("/w/file/x")),
        err(errno::not_a_directory())
    );
    assert_eq!(e(fs.create_dir_all("/w/dangling/x")), err(errno::exists()));
    assert_eq!(e(fs.create_dir_all("/w/link_dir/new")), Ok(()));
    assert!(fs.metadata(Path::new("/w/dir/new")).unwrap().kind.is_dir());
    assert_eq!(
        e(fs.write_file("/w/dir", "x")),
        err(errno::is_a_directory())
    );
    assert_eq!(
        e(fs.write_file("/w/sock", "x")),
        err(errno::no_such_device())
    );
    assert_eq!(e(fs.remove("/")), err(errno::busy()));
    assert_eq!(e(fs.remove("/w/nope")), err(errno::not_found()));
    assert_eq!(e(fs.symlink("", "/w/empty_link")), err(errno::not_found()));
    assert_eq!(
        e(fs.set_lookup_error("/w/file", Some(13))),
        err(errno::not_a_directory())
    );
}

#[test]
fn remove_takes_the_link_not_its_target() {
    let fs = tree();
    fs.remove("/w/link_dir").unwrap();
    assert!(fs.symlink_metadata(Path::new("/w/link_dir")).is_err());
    assert!(fs.metadata(Path::new("/w/dir/inner.txt")).is_ok());
}

#[test]
fn write_through_symlinks() {
    let fs = tree();
    fs.write_file("/w/link_file", "via link\n").unwrap();
    assert_eq!(&*fs.read_file("/w/file").unwrap(), b"via link\n");
    assert_eq!(
        fs.symlink_metadata(Path::new("/w/link_file")).unwrap().kind,
        Symlink
    );
    // A dangling link creates its target.
    fs.write_file("/w/dangling", "now here\n").unwrap();
    assert_eq!(&*fs.read_file("/w/nowhere").unwrap(), b"now here\n");
    let e = fs.write_file("/w/loop_a", "x").unwrap_err();
    assert_eq!(e.to_string(), errno::too_many_links().to_string());
}

#[cfg(unix)]
#[test]
fn names_are_bytes() {
    use std::os::unix::ffi::OsStrExt;
    let fs = MemFs::new();
    let name = OsStr::from_bytes(b"/d/caf\xe9.txt");
    fs.write_file(name, "latin-1 name").unwrap();
    let dir = fs.open_dir(Path::new("/d")).unwrap();
    let mut listing = Listing::new();
    fs.list(&dir, &mut listing);
    assert_eq!(listing.iter().next().unwrap().0, b"caf\xe9.txt");
    assert_eq!(&*fs.read_file(name).unwrap(), b"latin-1 name");
    assert_eq!(fs.canonicalize(Path::new(name)).unwrap(), Path::new(name));
}

fn write(fs: &MemFs, path: &str, content: &str, guard: &WriteGuard) -> Result<Written, WriteError> {
    FsWrite::write(
        fs,
        Path::new(path),
        content.as_bytes(),
        guard,
        &CancelToken::new(),
    )
}

fn version(fs: &MemFs, path: &str) -> Version {
    fs.metadata(Path::new(path)).unwrap().version()
}

#[test]
fn guarded_writes() {
    let fs = tree();
    let exists = write(&fs, "/w/file", "x", &WriteGuard::CreateIfAbsent);
    assert!(matches!(exists, Err(WriteError::Exists)), "{exists:?}");
    // A dangling symlink is neither written through nor replaced, whatever
    // the guard (one rule for a bare and a session write, as on the disk).
    for guard in [WriteGuard::CreateIfAbsent, WriteGuard::None] {
        let dangling = write(&fs, "/w/dangling", "x", &guard);
        assert!(
            matches!(dangling, Err(WriteError::NotRegular(FileType::Symlink))),
            "{dangling:?}"
        );
    }

    let created = write(&fs, "/w/new/deeper/f", "new", &WriteGuard::CreateIfAbsent).unwrap();
    assert!(!created.replaced);
    assert_eq!((created.metadata.mode, created.metadata.len), (0o600, 3));
    assert_eq!(fs.metadata(Path::new("/w/new/deeper")).unwrap().mode, 0o755);

    let stale = Version("0:0:0:0:0".into());
    let r = write(
        &fs,
        "/w/file",
        "x",
        &WriteGuard::ReplaceIfVersion(stale.clone()),
    );
    assert!(matches!(r, Err(WriteError::Stale)), "{r:?}");
    let r = write(&fs, "/w/nope", "x", &WriteGuard::ReplaceIfVersion(stale));
    assert!(matches!(r, Err(WriteError::Stale)), "{r:?}");

    fs.set_mode("/w/file", 0o640).unwrap();
    let v = version(&fs, "/w/file");
    let replaced = write(
        &fs,
        "/w/link_file",
        "new text",
        &WriteGuard::ReplaceIfVersion(v.clone()),
    )
    .unwrap();
    assert!(replaced.replaced);
    assert_eq!(replaced.metadata.mode, 0o640);
    assert_eq!(
        replaced.metadata,
        fs.metadata(Path::new("/w/file")).unwrap()
    );
    assert_ne!(replaced.metadata.version(), v);
    // The version it was checked against is gone.
    let again = write(&fs, "/w/file", "x", &WriteGuard::ReplaceIfVersion(v));
    assert!(matches!(again, Err(WriteError::Stale)), "{again:?}");

    for (path, kind) in [("/w/dir", Dir), ("/w/fifo", Fifo), ("/w/link_dir", Dir)] {
        let r = write(&fs, path, "x", &WriteGuard::None);
        assert!(
            matches!(r, Err(WriteError::NotRegular(k)) if k == kind),
            "{path}: {r:?}"
        );
    }
    let r = write(&fs, "/w/file/x", "x", &WriteGuard::None);
    assert!(
        matches!(&r, Err(WriteError::Io(p, e)) if p == Path::new("/w/file/x")
            && e.to_string() == errno::not_a_directory().to_string()),
        "{r:?}"
    );
}

#[test]
fn a_cancelled_write_publishes_nothing() {
    let fs = tree();
    let token = CancelToken::new();
    token.cancel();
    let before = fs.metadata(Path::new("/w/file")).unwrap();
    let r = FsWrite::write(&fs, Path::new("/w/file"), b"x", &WriteGuard::None, &token);
    assert!(matches!(r, Err(WriteError::Cancelled)), "{r:?}");
    let r = FsWrite::write(&fs, Path::new("/w/n/f"), b"x", &WriteGuard::None, &token);
    assert!(matches!(r, Err(WriteError::Cancelled)), "{r:?}");
    assert_eq!(fs.metadata(Path::new("/w/file")).unwrap(), before);
    assert!(fs.metadata(Path::new("/w/n")).is_err());
}

#[test]
fn a_handle_outlives_its_directory() {
    let fs = tree();
    let path = Path::new("/w/dir");
    let held = fs.open_dir(path).unwrap();
    let sub = fs.open_dir(Path::new("/w/dir/sub")).unwrap();
    fs.write_file("/w/dir/later.txt", "x").unwrap();
    assert_eq!(names(&fs, &held).last().unwrap().0, "later.txt");

    fs.remove(path).unwrap();
    assert!(names(&fs, &held).is_empty());
    assert!(names(&fs, &sub).is_empty());
    let name = OsStr::new("inner.txt");
    let not_found = errno::not_found().to_string();
    let e = fs.metadata_at(&held, path, name, false).unwrap_err();
    assert_eq!(e.to_string(), not_found);
    assert_eq!(
        fs.open_at(&held, path, name).unwrap_err().to_string(),
        not_found
    );
    let e = fs.open_dir_at(&held, path, OsStr::new("sub")).unwrap_err();
    assert_eq!(e.to_string(), not_found);

    // A new directory at the same path is another directory.
    fs.write_file("/w/dir/inner.txt", "again").unwrap();
    assert!(names(&fs, &held).is_empty());
    let fresh = fs.open_dir(path).unwrap();
    assert_eq!(names(&fs, &fresh), [("inner.txt".to_string(), File)]);
}

#[test]
fn refusals_set_through_the_api() {
    let fs = tree();
    let eacces = io::Error::from_raw_os_error(13).to_string();
    fs.set_lookup_error("/w/dir", Some(13)).unwrap();
    let dir = fs.open_dir(Path::new("/w/dir")).unwrap();
    assert_eq!(names(&fs, &dir).len(), 2);
    let dir_path = Path::new("/w/dir");
    let at = fs.metadata_at(&dir, dir_path, OsStr::new("inner.txt"), false);
    assert_eq!(kind(at), Err(eacces.clone()));
    for p in [
        "/w/dir/inner.txt",
        "/w/dir/.",
        "/w/dir/..",
        "/w/dir/nope",
        "/w/link_dir/sub",
    ] {
        assert_eq!(kind(fs.metadata(Path::new(p))), Err(eacces.clone()), "{p}");
    }
    assert_eq!(kind(fs.metadata(Path::new("/w/dir/"))), Ok(Dir));
    // realpath applies `.` and `..` to the path, not to the directory.
    let canon = fs.canonicalize(Path::new("/w/dir/.")).unwrap();
    assert_eq!(canon, Path::new("/w/dir"));
    fs.set_lookup_error("/w/dir", None).unwrap();

    fs.set_open_error("/w/dir", Some(13)).unwrap();
    assert_eq!(
        fs.open_dir(Path::new("/w/dir")).unwrap_err().to_string(),
        eacces
    );
    let token = CancelToken::new();
    let e = fs.open(Path::new("/w/dir"), &token).unwrap_err();
    assert_eq!(e.to_string(), eacces);
    // A handle opened before still lists.
    assert_eq!(names(&fs, &dir).len(), 2);

    fs.set_open_error("/w/file", Some(13)).unwrap();
    assert_eq!(
        fs.open(Path::new("/w/file"), &token)
            .unwrap_err()
            .to_string(),
        eacces
    );
    let e = fs.read_control(Path::new("/w/link_file")).unwrap_err();
    assert_eq!(e.to_string(), eacces);
    assert_eq!(fs.metadata(Path::new("/w/file")).unwrap().len, 6);
    fs.set_open_error("/w/file", None).unwrap();
    assert!(fs.open(Path::new("/w/file"), &token).is_ok());
}

#[test]
fn git_global_excludes_only_when_given() {
    let w = Path::new("/w");
    assert_eq!(MemFs::new().git_global_excludes(w), None);
    let fs = MemFs::new().with_git_global_excludes("/home/u/.config/git/ignore", "*.log\n");
    let (path, data) = fs.git_global_excludes(w).unwrap();
    assert_eq!(
        (path.as_path(), &data[..]),
        (Path::new("/home/u/.config/git/ignore"), &b"*.log\n"[..])
    );
    let fs = MemFs::new().with_git_global_excludes("rel/ignore", "x");
    assert_eq!(
        fs.git_global_excludes(w).unwrap().0,
        Path::new("/w/rel/ignore")
    );
}

#[test]
fn shared_between_threads() {
    fn assert_send_sync<T: Send + Sync + 'static>() {}
    assert_send_sync::<MemFs>();
    assert_send_sync::<MemDir>();
    fn assert_send<T: Send + 'static>() {}
    assert_send::<MemFile>();
}

#[test]
fn concurrent_reads_see_whole_writes() {
    const LEN: usize = 64 * 1024;
    let fs = Arc::new(MemFs::new());
    fs.write_file("/f", vec![b'a'; LEN]).unwrap();
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (fs, done) = (Arc::clone(&fs), Arc::clone(&done));
            std::thread::spawn(move || {
                let mut reads = 0;
                while !done.load(Ordering::Relaxed) || reads < 10 {
                    let mut data = Vec::new();
                    fs.open(Path::new("/f"), &CancelToken::new())
                        .unwrap()
                        .read_to_end(&mut data)
                        .unwrap();
                    assert_eq!(data.len(), LEN);
                    assert!(data.iter().all(|&b| b == data[0]), "a torn read");
                    // Listings while entries come and go.
                    let dir = fs
                        .open_dir(Path::new("/d"))
                        .unwrap_or_else(|_| fs.open_dir(Path::new("/")).unwrap());
                    let mut listing = Listing::new();
                    fs.list(&dir, &mut listing);
                    reads += 1;
                }
            })
        })
        .collect();
    for i in 0..200u32 {
        let byte = if i % 2 == 0 { b'b' } else { b'a' };
        let guard = WriteGuard::ReplaceIfVersion(fs.metadata(Path::new("/f")).unwrap().version());
        FsWrite::write(
            &*fs,
            Path::new("/f"),
            &vec![byte; LEN],
            &guard,
            &CancelToken::new(),
        )
        .unwrap();
        fs.write_file(format!("/d/{i}"), "x").unwrap();
        if i % 3 == 0 {
            fs.remove(format!("/d/{}", i / 2)).unwrap_or(());
        }
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join().unwrap();
    }
}

#[test]
fn concurrent_guarded_writes_serialize() {
    // Every thread replaces the version it read: two winners never
    // replaced the same version, and every win made a new one.
    let fs = Arc::new(MemFs::new());
    fs.write_file("/f", "0").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let fs = Arc::clone(&fs);
            std::thread::spawn(move || {
                let mut wins = Vec::new();
                for _ in 0..100 {
                    let v = fs.metadata(Path::new("/f")).unwrap().version();
                    let guard = WriteGuard::ReplaceIfVersion(v.clone());
                    match write(&fs, "/f", &t.to_string(), &guard) {
                        Ok(w) => wins.push((v, w.metadata.version())),
                        Err(WriteError::Stale) => {}
                        Err(e) => panic!("{e}"),
                    }
                }
                wins
            })
        })
        .collect();
    let wins: Vec<(Version, Version)> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    assert!(!wins.is_empty());
    let mut replaced: Vec<&Version> = wins.iter().map(|(old, _)| old).collect();
    let mut made: Vec<&Version> = wins.iter().map(|(_, new)| new).collect();
    for list in [&mut replaced, &mut made] {
        list.sort();
        let n = list.len();
        list.dedup();
        assert_eq!(list.len(), n, "a version was replaced or made twice");
    }
}
