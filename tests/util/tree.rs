//! Declarative fixture trees built in temp dirs under `/tmp` (on Windows,
//! under the user's temp directory).
//!
//! A tree is a list of [`Spec`] entries applied in order: contents first, then
//! explicit mtimes, then modes (so a mode-000 directory does not stop the
//! builder). Every regular file gets a distinct default mtime (creation order,
//! one second apart) unless a [`Spec::Mtime`] or [`Spec::TieAll`] says
//! otherwise: glob output is sorted by mtime, and ties keep readdir order,
//! which rg and the engine only share when they read the same directory
//! (`rg-semantics.md` §5, §11.3).

use std::ffi::OsStr;
use std::fs::{self, File, FileTimes};
#[cfg(unix)]
use std::os::unix::ffi::OsStrExt;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
#[cfg(unix)]
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// The default mtime of the first file: 2020-01-01T00:00:00Z.
const BASE_MTIME: u64 = 1_577_836_800;

/// One entry of a tree description. Paths are raw bytes relative to the root
/// (non-UTF-8 names are allowed); parent directories are created as needed.
#[derive(Clone, Debug)]
pub enum Spec {
    /// A regular file with exactly these bytes.
    File(Vec<u8>, Vec<u8>),
    /// A regular file with the bytes of `fixtures/<name>`.
    Fixture(Vec<u8>, &'static str),
    /// A directory (possibly empty).
    Dir(Vec<u8>),
    /// A symbolic link and its target (raw bytes, not checked).
    Symlink(Vec<u8>, Vec<u8>),
    /// A FIFO (`mkfifo`).
    Fifo(Vec<u8>),
    /// A Unix socket, bound and kept open as long as the tree lives.
    Socket(Vec<u8>),
    /// chmod, applied after everything else.
    Mode(Vec<u8>, u32),
    /// An explicit mtime for a regular file, in seconds after the base time.
    Mtime(Vec<u8>, u64),
    /// Every regular file without an explicit mtime gets this one (ties).
    TieAll(u64),
    /// Windows: give the entry the hidden attribute (`attrib +h`),
    /// applied after everything else.
    HiddenAttr(Vec<u8>),
}

fn b(p: impl AsRef<[u8]>) -> Vec<u8> {
    p.as_ref().to_vec()
}

/// A file with inline bytes.
pub fn file(p: impl AsRef<[u8]>, content: impl AsRef<[u8]>) -> Spec {
    Spec::File(b(p), b(content))
}
/// A file with the bytes of `fixtures/<name>`.
pub fn fixture(p: impl AsRef<[u8]>, name: &'static str) -> Spec {
    Spec::Fixture(b(p), name)
}
/// A directory.
pub fn dir(p: impl AsRef<[u8]>) -> Spec {
    Spec::Dir(b(p))
}
/// A symbolic link `p` → `target`.
pub fn symlink(p: impl AsRef<[u8]>, target: impl AsRef<[u8]>) -> Spec {
    Spec::Symlink(b(p), b(target))
}
/// A FIFO.
pub fn fifo(p: impl AsRef<[u8]>) -> Spec {
    Spec::Fifo(b(p))
}
/// A listening Unix socket.
pub fn socket(p: impl AsRef<[u8]>) -> Spec {
    Spec::Socket(b(p))
}
/// chmod `p` to `m` (applied last).
pub fn mode(p: impl AsRef<[u8]>, m: u32) -> Spec {
    Spec::Mode(b(p), m)
}
/// Windows: set the hidden attribute of `p` (applied last).
pub fn hidden_attr(p: impl AsRef<[u8]>) -> Spec {
    Spec::HiddenAttr(b(p))
}
/// Give file `p` the mtime base + `secs`.
pub fn mtime(p: impl AsRef<[u8]>, secs: u64) -> Spec {
    Spec::Mtime(b(p), secs)
}

/// A built tree; removed when dropped.
pub struct Tree {
    root: PathBuf,
    _dir: tempfile::TempDir,
    #[cfg(unix)]
    _sockets: Vec<UnixListener>,
}

/// A name of a tree description as the OS takes it: any bytes on Unix;
/// on Windows names are UTF-16, so a tree for Windows holds UTF-8 names.
fn os_name(p: &[u8]) -> &OsStr {
    #[cfg(unix)]
    return OsStr::from_bytes(p);
    #[cfg(windows)]
    return OsStr::new(
        std::str::from_utf8(p).unwrap_or_else(|_| panic!("a name on Windows is UTF-8: {p:?}")),
    );
}

/// The repository's `fixtures/` directory, beside the binary's package
/// (`cli/`, whose tests these are).
pub fn fixtures_dir() -> PathBuf {
    let cli = Path::new(env!("CARGO_MANIFEST_DIR"));
    cli.parent()
        .expect("cli/ is in the repository")
        .join("fixtures")
}

fn rel(root: &Path, p: &[u8]) -> PathBuf {
    root.join(os_name(p))
}

fn parent_dirs(path: &Path) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent).unwrap_or_else(|e| panic!("mkdir -p {parent:?}: {e}"));
    }
}

/// Fails the test if an ancestor of `root` holds a file that rg's default
/// filters would read (`rg-semantics.md` §11.2): parent ignore files and
/// enclosing repositories would make the fixture mean something else.
fn assert_clean_ancestors(root: &Path) {
    for anc in root.ancestors().skip(1) {
        for name in [".git", ".jj", ".ignore", ".rgignore", ".gitignore"] {
            let p = anc.join(name);
            assert!(
                fs::symlink_metadata(&p).is_err(),
                "fixture root {root:?} has {p:?} above it; trees must live outside any repository and ignore file"
            );
        }
    }
}

impl Tree {
    /// Build `specs` in a fresh directory under `/tmp` (Windows: the
    /// user's temp directory, `%TEMP%`).
    pub fn build(specs: &[Spec]) -> Tree {
        #[cfg(unix)]
        let parent = PathBuf::from("/tmp");
        #[cfg(windows)]
        let parent = std::env::temp_dir();
        let dir = tempfile::Builder::new()
            .prefix("dsh-conf-")
            .tempdir_in(&parent)
            .unwrap_or_else(|e| panic!("create a temp dir under {parent:?}: {e}"));
        // The permission cases run rg and the engine as uid 65534: the root
        // must be enterable by anyone.
        #[cfg(unix)]
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
        let root = dir.path().to_path_buf();
        assert_clean_ancestors(&root);
        #[cfg(unix)]
        let mut sockets = Vec::new();
        let mut files: Vec<PathBuf> = Vec::new();
        let mut explicit: Vec<(PathBuf, u64)> = Vec::new();
        #[cfg(unix)]
        let mut modes: Vec<(PathBuf, u32)> = Vec::new();
        let mut tie: Option<u64> = None;
        #[cfg(windows)]
        let mut hidden: Vec<PathBuf> = Vec::new();
        for spec in specs {
            match spec {
                Spec::File(p, content) => {
                    let path = rel(&root, p);
                    parent_dirs(&path);
                    fs::write(&path, content).unwrap_or_else(|e| panic!("write {path:?}: {e}"));
                    files.push(path);
                }
                Spec::Fixture(p, name) => {
                    let path = rel(&root, p);
                    parent_dirs(&path);
                    let src = fixtures_dir().join(name);
                    fs::copy(&src, &path).unwrap_or_else(|e| panic!("copy {src:?}: {e}"));
                    files.push(path);
                }
                Spec::Dir(p) => {
                    let path = rel(&root, p);
                    fs::create_dir_all(&path).unwrap_or_else(|e| panic!("mkdir {path:?}: {e}"));
                }
                #[cfg(unix)]
                Spec::Symlink(p, target) => {
                    let path = rel(&root, p);
                    parent_dirs(&path);
                    std::os::unix::fs::symlink(OsStr::from_bytes(target), &path)
                        .unwrap_or_else(|e| panic!("symlink {path:?}: {e}"));
                }
                #[cfg(unix)]
                Spec::Fifo(p) => {
                    let path = rel(&root, p);
                    parent_dirs(&path);
                    rustix::fs::mknodat(
                        rustix::fs::CWD,
                        &path,
                        rustix::fs::FileType::Fifo,
                        rustix::fs::Mode::from_raw_mode(0o644),
                        0,
                    )
                    .unwrap_or_else(|e| panic!("mkfifo {path:?}: {e}"));
                }
                #[cfg(unix)]
                Spec::Socket(p) => {
                    let path = rel(&root, p);
                    parent_dirs(&path);
                    sockets.push(
                        UnixListener::bind(&path).unwrap_or_else(|e| panic!("bind {path:?}: {e}")),
                    );
                }
                // The trees that hold these are Unix-only tests.
                #[cfg(windows)]
                Spec::Symlink(..) | Spec::Fifo(_) | Spec::Socket(_) | Spec::Mode(..) => {
                    panic!("{spec:?}: a Unix-only entry in a tree built on Windows")
                }
                #[cfg(windows)]
                Spec::HiddenAttr(p) => hidden.push(rel(&root, p)),
                #[cfg(unix)]
                Spec::HiddenAttr(_) => {
                    panic!("{spec:?}: a Windows-only entry in a tree built on Unix")
                }
                #[cfg(unix)]
                Spec::Mode(p, m) => modes.push((rel(&root, p), *m)),
                Spec::Mtime(p, secs) => explicit.push((rel(&root, p), *secs)),
                Spec::TieAll(secs) => tie = Some(*secs),
            }
        }
        for (i, path) in files.iter().enumerate() {
            let secs = tie.unwrap_or(i as u64);
            set_mtime(path, secs);
        }
        for (path, secs) in &explicit {
            set_mtime(path, *secs);
        }
        // `attrib` (a real process, as a user would set it) after the
        // mtimes: setting an attribute leaves them alone.
        #[cfg(windows)]
        for path in &hidden {
            let out = std::process::Command::new("attrib")
                .arg("+h")
                .arg(path)
                .output()
                .unwrap_or_else(|e| panic!("attrib +h {path:?}: {e}"));
            assert!(
                out.status.success()
                    && fs::metadata(path).is_ok_and(|m| {
                        use std::os::windows::fs::MetadataExt;
                        m.file_attributes() & 0x2 != 0
                    }),
                "attrib +h {path:?} did not set the hidden attribute: {out:?}"
            );
        }
        #[cfg(unix)]
        for (path, m) in modes.iter().rev() {
            // Reverse order: a parent listed before its child is changed
            // after the child, so a mode-000 parent does not hide the child.
            fs::set_permissions(path, fs::Permissions::from_mode(*m))
                .unwrap_or_else(|e| panic!("chmod {path:?}: {e}"));
        }
        Tree {
            root,
            _dir: dir,
            #[cfg(unix)]
            _sockets: sockets,
        }
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }
}

fn set_mtime(path: &Path, secs: u64) {
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(BASE_MTIME + secs);
    // Regular files only (a FIFO would block in open); the tree builder only
    // records regular files here.
    // Windows sets a time through a handle with write access
    // (`SetFileTime` needs FILE_WRITE_ATTRIBUTES).
    let f = if cfg!(windows) {
        File::options().write(true).open(path)
    } else {
        File::open(path)
    };
    let f = f.unwrap_or_else(|e| panic!("open {path:?}: {e}"));
    f.set_times(FileTimes::new().set_modified(t).set_accessed(t))
        .unwrap_or_else(|e| panic!("set mtime {path:?}: {e}"));
}

#[cfg(unix)]
impl Drop for Tree {
    fn drop(&mut self) {
        // Give every directory back its rwx bits so TempDir can remove it
        // even if the tests later run unprivileged.
        fn open_up(p: &Path) {
            if let Ok(md) = fs::symlink_metadata(p) {
                if md.is_dir() {
                    let _ = fs::set_permissions(p, fs::Permissions::from_mode(0o755));
                    if let Ok(rd) = fs::read_dir(p) {
                        for e in rd.flatten() {
                            open_up(&e.path());
                        }
                    }
                }
            }
        }
        open_up(&self.root);
    }
}
