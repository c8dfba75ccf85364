//! The live index's differential mutation test (`docs/index.md`, "How it
//! is tested") on the workspaces that are not the local disk: in memory
//! (`--fs mem`) and through overlays (`--overlay`, over the disk and over
//! memory), and over SFTP. The disk's own run is `index.rs`'s
//! `index_follows_every_change_like_rg`; the random trees, changes, calls
//! and patterns are its.
//!
//! Each run: random trees, and on each 30 random changes, each followed at
//! once (no wait) by three calls through the indexed workspace compared
//! byte for byte with rg on the disk, every narrowed call answered by the
//! index (`meta.index` says `mirror`). Where the workspace's tree is not on
//! the disk (memory, an overlay), it is copied to the disk for rg after
//! each change: names, kinds, bytes, modes, mtimes to the nanosecond and
//! symlink targets.
//!
//! `DSH_SEARCH_SEED` replays a run, `DSH_SEARCH_INDEX_TREES` sets the
//! number of trees of each run, `DSH_SEARCH_CASE` selects calls by label.

#![cfg(target_os = "linux")]

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use dsh_search::fs::{DynFileSystem, FileSystem, FileType, FsWrite, MemFs, WriteGuard};
use dsh_search::tool::CallContext;
use dsh_search::{
    CancelToken, Config, FsSpec, Index, IndexWatch, SearchBackend, Tools, Workspace,
    WorkspaceOptions,
};

#[cfg(feature = "sftp")]
use crate::index::SAME_SIZE_AND_MTIME;
use crate::index::{
    change_kind, content, listing, narrowed_calls, random_call, random_tree, seed, CHANGE_KINDS,
    DIR_NAMES, FILE_NAMES, IGNORE_LINES, LINES, UNNARROWED,
};
use crate::util::rg::{self, Call};
use crate::util::rng::Rng;
use crate::util::tree::Tree;
use crate::util::{selected, Report};

/// Changes per tree, as on the disk.
const STEPS: usize = 30;

/// One indexed workspace under the test.
trait Subject {
    /// The workspace's index.
    fn index(&self) -> &Index;
    /// The backend the calls go through (the index's).
    fn backend(&self) -> &dyn SearchBackend;
    /// Make one random change; what it was.
    fn change(&mut self, r: &mut Rng) -> String;
    /// The workspace's tree as it is now, on the disk, for rg.
    fn on_disk(&mut self) -> PathBuf;
}

/// The indexed workspace over the tree at `root`, with its tools.
struct Opened {
    ws: Workspace,
    index: Index,
    backend: Arc<dyn SearchBackend>,
    tools: Tools,
}

fn open(options: &WorkspaceOptions) -> Opened {
    let ws = options.open().expect("an indexed workspace opens");
    let index = ws.index().expect("the index was asked for").clone();
    // A guard against a hang, not a timed assertion.
    assert!(
        index.wait_ready(Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
    let backend = ws.backend(&Config::default());
    let tools = ws.tools(Config::default(), None).expect("tools");
    Opened {
        ws,
        index,
        backend,
        tools,
    }
}

/// How many trees a run takes: `DSH_SEARCH_INDEX_TREES`, else `default`.
fn trees(default: usize) -> usize {
    std::env::var("DSH_SEARCH_INDEX_TREES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The differential run: `open` makes the indexed workspace of each
/// random tree (built on the disk at the path it is given).
fn differential(name: &str, default_trees: usize, open: impl Fn(&Path) -> Box<dyn Subject>) {
    let Some(env) = rg::env() else { return };
    let seed = seed();
    let mut report = Report::new(&format!("{name} DSH_SEARCH_SEED={seed}"));
    let mut rng = Rng(seed);
    let mut skipped = 0;
    let mut reused = 0;
    for t in 0..trees(default_trees) {
        let tree = Tree::build(&random_tree(&mut rng));
        let root = tree.root().to_path_buf();
        let mut subject = open(&root);
        let mut history = Vec::new();
        for step in 0..STEPS {
            history.push(subject.change(&mut rng));
            let disk = subject.on_disk();
            let (dirs, files) = listing(&disk);
            let narrowed = narrowed_calls(&mut rng);
            for c in 0..4 {
                let call = match c {
                    1 => random_call(&mut rng, &dirs, &files),
                    _ => narrowed[usize::from(c == 2)].clone(),
                };
                let label = format!(
                    "{name} tree={t} step={step} call={c}: {}",
                    rg::describe(&call, "")
                );
                if !selected(&label) {
                    continue;
                }
                report.count();
                let before = report.failures();
                let by_index = subject.index().status().answered_by_index;
                let expected = rg::run_rg(env, &call, &disk);
                let actual = rg::run_backend(subject.backend(), &call, &root);
                if let Some(d) = rg::diff(&call, &expected, &actual) {
                    report.fail(format!("{label}\n{d}"));
                }
                let narrowed = match &call {
                    Call::Grep { pattern, .. } => !UNNARROWED.contains(&pattern.as_str()),
                    Call::Glob { .. } => true,
                };
                if narrowed && subject.index().status().answered_by_index != by_index + 1 {
                    report.fail(format!(
                        "{label}: not answered by the index: {:?}",
                        subject.index().status()
                    ));
                }
                if report.failures() > before {
                    report.fail(format!(
                        "{label}: the changes so far:\n  {}",
                        history.join("\n  ")
                    ));
                }
            }
        }
        let s = subject.index().status();
        // Asked for validation, every build and call validated.
        let validated = name.ends_with("validated");
        if s.validates.as_deref() != validated.then_some("asked for") {
            report.fail(format!("{name} tree={t}: not kept as asked: {s:?}"));
        }
        if s.dirs_listed == 0 {
            report.fail(format!(
                "{name} tree={t}: no directory was listed from the mirror: {s:?}"
            ));
        }
        skipped += s.files_skipped;
        reused += s.walks_reused;
    }
    report.finish();
    assert!(
        skipped > 0,
        "{name}: the prefilter never spared a file: the test proves less than it says"
    );
    assert!(
        reused > 0,
        "{name}: no walk was kept: the test proves less than it says"
    );
}

/// Copy the tree at `from` of `fs` to the new directory `to` on the disk:
/// names, kinds, bytes, modes, mtimes and symlink targets (FIFOs and
/// sockets are not made by the changes).
fn copy_out(fs: &dyn DynFileSystem, from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    for (name, _) in fs.read_dir(from).unwrap() {
        let name = OsStr::from_bytes(&name);
        let (src, dst) = (from.join(name), to.join(name));
        let m = fs.symlink_metadata(&src).unwrap();
        match m.kind {
            FileType::Dir => {
                copy_out(fs, &src, &dst);
                std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(m.mode)).unwrap();
            }
            FileType::File => {
                let (_, data) = fs.read_file(&src, u64::MAX).unwrap();
                std::fs::write(&dst, data.expect("a regular file's bytes")).unwrap();
                let (s, ns) = m.mtime.expect("an mtime");
                let t = UNIX_EPOCH + Duration::new(s as u64, ns);
                let f = std::fs::File::options().write(true).open(&dst).unwrap();
                f.set_modified(t).unwrap();
                std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(m.mode)).unwrap();
            }
            FileType::Symlink => {
                std::os::unix::fs::symlink(fs.read_link(&src).unwrap(), &dst).unwrap();
            }
            other => panic!("{}: no change makes a {other:?}", src.display()),
        }
    }
}

/// A workspace whose tree is not on the disk: copied out after each
/// change, to a new directory each time.
struct CopiedOut {
    fs: Arc<dyn DynFileSystem>,
    root: PathBuf,
    scratch: tempfile::TempDir,
    copies: usize,
}

impl CopiedOut {
    fn new(fs: Arc<dyn DynFileSystem>, root: &Path) -> CopiedOut {
        let mut c = CopiedOut {
            fs,
            root: root.to_path_buf(),
            scratch: tempfile::tempdir().unwrap(),
            copies: 0,
        };
        c.copy();
        c
    }

    /// The tree as it is now, copied out; the previous copy removed.
    fn copy(&mut self) -> PathBuf {
        let old = self.current();
        if old.exists() {
            std::fs::remove_dir_all(&old).unwrap();
        }
        self.copies += 1;
        let to = self.current();
        copy_out(&*self.fs, &self.root, &to);
        to
    }

    fn current(&self) -> PathBuf {
        self.scratch.path().join(format!("tree{}", self.copies))
    }
}

/// One random change of kind `kind` (below [`CHANGE_KINDS`]) to a tree in
/// memory at `root`, through its methods (`MemFs`) or the seam's write, or
/// through the tools: the kinds of `index.rs`'s `change_kind`, as memory
/// makes them. `seen` is the tree copied out (where the paths are picked).
/// Memory has no rename: a file or directory moved is copied (bytes, mode,
/// mtime) and removed, which the index sees as a removal and a creation,
/// as a rename on the disk is.
fn mem_change(
    r: &mut Rng,
    kind: usize,
    mem: &MemFs,
    root: &Path,
    seen: &Path,
    tools: &Tools,
) -> String {
    let (dirs, files) = listing(seen);
    let dir = dirs[r.below(dirs.len())].clone();
    let new_name = |r: &mut Rng| dir.join(r.pick(FILE_NAMES));
    let some_file = |r: &mut Rng| (!files.is_empty()).then(|| files[r.below(files.len())].clone());
    let abs = |p: &Path| root.join(p);
    let is_file = |p: &Path| {
        FileSystem::symlink_metadata(mem, &abs(p)).is_ok_and(|m| m.kind == FileType::File)
    };
    let done: io::Result<String> = match kind {
        0 => {
            // Through the seam, as the tools write.
            let p = new_name(r);
            let c = content(r);
            FsWrite::write(mem, &abs(&p), &c, &WriteGuard::None, &CancelToken::new())
                .map_err(|e| io::Error::other(e.to_string()))
                .map(|_| format!("seam write {}", p.display()))
        }
        1 => {
            let p = new_name(r);
            let c = content(r);
            mem.write_file(abs(&p), c)
                .map(|_| format!("create {}", p.display()))
        }
        2 => match some_file(r) {
            Some(p) => mem
                .remove(abs(&p))
                .map(|_| format!("delete {}", p.display())),
            None => Ok("nothing to delete".into()),
        },
        3 => match some_file(r).filter(|p| is_file(p)) {
            Some(p) => {
                let to = new_name(r);
                (|| {
                    let m = FileSystem::symlink_metadata(mem, &abs(&p))?;
                    let data = mem.read_file(abs(&p))?;
                    mem.remove(abs(&p))?;
                    mem.write_file(abs(&to), &data)?;
                    mem.set_mode(abs(&to), m.mode)?;
                    mem.set_mtime(abs(&to), m.mtime.unwrap())?;
                    Ok(format!("move {} -> {}", p.display(), to.display()))
                })()
            }
            None => Ok("nothing to move".into()),
        },
        4 if dirs.len() > 1 => {
            let from = dirs[1 + r.below(dirs.len() - 1)].clone();
            let to = dirs[r.below(dirs.len())].join(r.pick(DIR_NAMES));
            if to.starts_with(&from) {
                Ok("no move into itself".into())
            } else if FileSystem::symlink_metadata(mem, &abs(&to)).is_ok() {
                Ok(format!("{} exists: not moved onto", to.display()))
            } else {
                mem_copy(mem, &abs(&from), &abs(&to))
                    .and_then(|_| mem.remove(abs(&from)))
                    .map(|_| format!("move dir {} -> {}", from.display(), to.display()))
            }
        }
        5 if dirs.len() > 1 => {
            let d = dirs[1 + r.below(dirs.len() - 1)].clone();
            mem.remove(abs(&d))
                .map(|_| format!("rm -r {}", d.display()))
        }
        6 => {
            let d = dir.join(r.pick(DIR_NAMES));
            let f = d.join(r.pick(FILE_NAMES));
            let c = content(r);
            mem.create_dir_all(abs(&d))
                .and_then(|_| mem.write_file(abs(&f), c))
                .map(|_| format!("mkdir {} and create {}", d.display(), f.display()))
        }
        7 => match some_file(r).filter(|p| is_file(p)) {
            Some(p) => {
                let mode = [0o600, 0o644, 0o000, 0o755][r.below(4)];
                mem.set_mode(abs(&p), mode)
                    .map(|_| format!("chmod {mode:o} {}", p.display()))
            }
            None => Ok("nothing to chmod".into()),
        },
        8 => match some_file(r).filter(|p| is_file(p)) {
            Some(p) => (|| {
                let data = mem.read_file(abs(&p))?;
                let to = r.below(data.len() + 1);
                mem.write_file(abs(&p), &data[..to])?;
                Ok(format!("truncate {} to {to}", p.display()))
            })(),
            None => Ok("nothing to truncate".into()),
        },
        9 => match some_file(r).filter(|p| is_file(p)) {
            Some(p) => (|| {
                let line = r.pick(LINES);
                let mut data = mem.read_file(abs(&p))?.to_vec();
                data.extend_from_slice(line.as_bytes());
                data.push(b'\n');
                mem.write_file(abs(&p), data)?;
                Ok(format!("append {line:?} to {}", p.display()))
            })(),
            None => Ok("nothing to append to".into()),
        },
        10 => match some_file(r).filter(|p| is_file(p)) {
            // The change a size-and-mtime comparison misses.
            Some(p) => (|| {
                let m = FileSystem::symlink_metadata(mem, &abs(&p))?;
                let old = mem.read_file(abs(&p))?;
                let mut new: Vec<u8> = b"rare_token_here\nneedle\n"
                    .iter()
                    .cycle()
                    .take(old.len())
                    .copied()
                    .collect();
                if new[..] == old[..] {
                    new.iter_mut().for_each(|b| *b = b'z');
                }
                mem.write_file(abs(&p), new)?;
                mem.set_mtime(abs(&p), m.mtime.unwrap())?;
                Ok(format!("rewrite {} keeping size and mtime", p.display()))
            })(),
            None => Ok("nothing to rewrite".into()),
        },
        11 => {
            let link = dir.join("link");
            let target = match r.below(3) {
                0 => "a.rs",
                1 if !dir.as_os_str().is_empty() => "..",
                _ => "missing",
            };
            let _ = mem.remove(abs(&link));
            mem.symlink(target, abs(&link))
                .map(|_| format!("symlink {} -> {target}", link.display()))
        }
        12 => {
            let name = [".gitignore", ".ignore", ".rgignore"][r.below(3)];
            let p = dir.join(name);
            if r.chance(25) {
                let _ = mem.remove(abs(&p));
                Ok(format!("remove {}", p.display()))
            } else {
                let text: String = (0..1 + r.below(3))
                    .map(|_| format!("{}\n", r.pick(IGNORE_LINES)))
                    .collect();
                mem.write_file(abs(&p), &text)
                    .map(|_| format!("write {} {text:?}", p.display()))
            }
        }
        13 => {
            let git = dir.join(".git");
            if FileSystem::symlink_metadata(mem, &abs(&git)).is_ok() {
                mem.remove(abs(&git))
                    .map(|_| format!("rm -r {}", git.display()))
            } else {
                mem.create_dir_all(abs(&git))
                    .and_then(|_| mem.write_file(abs(&git).join("HEAD"), "ref\n"))
                    .map(|_| format!("git init {}", git.display()))
            }
        }
        _ => {
            let p = new_name(r);
            Ok(tool_write(r, root, &p, tools))
        }
    };
    done.unwrap_or_else(|e| format!("change {kind} failed: {e}"))
}

/// A write through the tools: the next call must see it, with no wait.
fn tool_write(r: &mut Rng, root: &Path, p: &Path, tools: &Tools) -> String {
    let c = String::from_utf8_lossy(&content(r)).replace('\0', "");
    let args = serde_json::json!({"file_path": p.display().to_string(), "content": c});
    let res = tools.call("write", &args, &CallContext::new(root));
    format!("tool write {} (error: {})", p.display(), res.is_error)
}

/// Copy the tree `from` of `mem` to `to` (which must not exist): bytes,
/// modes, mtimes, symlinks.
fn mem_copy(mem: &MemFs, from: &Path, to: &Path) -> io::Result<()> {
    mem.create_dir_all(to)?;
    for (name, _) in DynFileSystem::read_dir(mem, from)? {
        let name = OsStr::from_bytes(&name);
        let (src, dst) = (from.join(name), to.join(name));
        let m = FileSystem::symlink_metadata(mem, &src)?;
        match m.kind {
            FileType::Dir => mem_copy(mem, &src, &dst)?,
            FileType::File => {
                mem.write_file(&dst, mem.read_file(&src)?)?;
                mem.set_mode(&dst, m.mode)?;
                mem.set_mtime(&dst, m.mtime.unwrap())?;
            }
            FileType::Symlink => mem.symlink(FileSystem::read_link(mem, &src)?, &dst)?,
            _ => {}
        }
    }
    Ok(())
}

/// `--fs mem`: the tree copied into memory. Nothing else can write a tree
/// in memory, so the changes are the library's (`MemFs`'s methods and the
/// seam's write) and the tools'.
struct InMemory {
    opened: Opened,
    mem: Arc<MemFs>,
    root: PathBuf,
    out: CopiedOut,
}

impl Subject for InMemory {
    fn index(&self) -> &Index {
        &self.opened.index
    }

    fn backend(&self) -> &dyn SearchBackend {
        &*self.opened.backend
    }

    fn change(&mut self, r: &mut Rng) -> String {
        let kind = r.below(CHANGE_KINDS);
        let seen = self.out.current();
        mem_change(r, kind, &self.mem, &self.root, &seen, &self.opened.tools)
    }

    fn on_disk(&mut self) -> PathBuf {
        self.out.copy()
    }
}

/// The differential test in memory.
#[test]
fn index_in_memory_follows_every_change_like_rg() {
    in_memory("index in memory", IndexWatch::Os);
}

/// The differential test in memory, validated at each call instead of
/// following the tree's journal.
#[test]
fn index_in_memory_follows_every_change_like_rg_validated() {
    in_memory("index in memory, validated", IndexWatch::None);
}

fn in_memory(name: &str, watch: IndexWatch) {
    differential(name, 3, |root| {
        let opened = open(
            WorkspaceOptions::new(FsSpec::Mem(None))
                .root(root)
                .index(true)
                .index_watch(watch),
        );
        let mem = opened.ws.memory().expect("a mem workspace's tree");
        let out = CopiedOut::new(opened.ws.filesystem(), root);
        Box::new(InMemory {
            opened,
            mem,
            root: root.to_path_buf(),
            out,
        })
    });
}

/// `--overlay DIR` over the disk: the lower tree changed by another
/// process (the test, on the disk), the upper layer by the tools' writes.
struct OverlayOnDisk {
    opened: Opened,
    root: PathBuf,
    out: CopiedOut,
    _dir: tempfile::TempDir,
}

impl Subject for OverlayOnDisk {
    fn index(&self) -> &Index {
        &self.opened.index
    }

    fn backend(&self) -> &dyn SearchBackend {
        &*self.opened.backend
    }

    fn change(&mut self, r: &mut Rng) -> String {
        let kind = r.below(CHANGE_KINDS);
        change_kind(r, kind, &self.root, &self.opened.tools)
    }

    fn on_disk(&mut self) -> PathBuf {
        self.out.copy()
    }
}

/// The differential test through an overlay over the disk.
#[test]
fn index_through_an_overlay_follows_every_change_like_rg() {
    overlay_on_disk("index through an overlay", IndexWatch::Os);
}

/// The differential test through an overlay over the disk, validated at
/// each call.
#[test]
fn index_through_an_overlay_follows_every_change_like_rg_validated() {
    overlay_on_disk("index through an overlay, validated", IndexWatch::None);
}

fn overlay_on_disk(name: &str, watch: IndexWatch) {
    differential(name, 3, |root| {
        let dir = tempfile::tempdir().unwrap();
        let opened = open(
            WorkspaceOptions::new(FsSpec::Local)
                .root(root)
                .overlay(dir.path().join("ov"))
                .index(true)
                .index_watch(watch),
        );
        let out = CopiedOut::new(opened.ws.filesystem(), root);
        Box::new(OverlayOnDisk {
            opened,
            root: root.to_path_buf(),
            out,
            _dir: dir,
        })
    });
}

/// `--fs mem --overlay DIR`: the lower tree in memory, changed through the
/// library (paths picked from the merged tree, so some name an upper file
/// the lower tree lacks and change nothing), the upper layer by the tools'
/// writes.
struct OverlayOnMemory {
    inner: InMemory,
    _dir: tempfile::TempDir,
}

impl Subject for OverlayOnMemory {
    fn index(&self) -> &Index {
        self.inner.index()
    }

    fn backend(&self) -> &dyn SearchBackend {
        self.inner.backend()
    }

    fn change(&mut self, r: &mut Rng) -> String {
        self.inner.change(r)
    }

    fn on_disk(&mut self) -> PathBuf {
        self.inner.on_disk()
    }
}

/// The differential test through an overlay over memory.
#[test]
fn index_through_an_overlay_over_memory_follows_every_change_like_rg() {
    overlay_on_memory("index through an overlay over memory", IndexWatch::Os);
}

/// The differential test through an overlay over memory, validated at
/// each call.
#[test]
fn index_through_an_overlay_over_memory_follows_every_change_like_rg_validated() {
    overlay_on_memory(
        "index through an overlay over memory, validated",
        IndexWatch::None,
    );
}

fn overlay_on_memory(name: &str, watch: IndexWatch) {
    differential(name, 2, |root| {
        let dir = tempfile::tempdir().unwrap();
        let opened = open(
            WorkspaceOptions::new(FsSpec::Mem(None))
                .root(root)
                .overlay(dir.path().join("ov"))
                .index(true)
                .index_watch(watch),
        );
        let mem = opened.ws.memory().expect("the overlay's lower tree");
        let out = CopiedOut::new(opened.ws.filesystem(), root);
        Box::new(OverlayOnMemory {
            inner: InMemory {
                opened,
                mem,
                root: root.to_path_buf(),
                out,
            },
            _dir: dir,
        })
    });
}

/// `--fs sftp://` to the tests' sshd (the host's disk is this one): the
/// tree changed by another process (the test, on the disk) and by the
/// tools' writes over SFTP. Every change but one: a rewrite by another
/// process that keeps both the size and the mtime is invisible to a
/// comparison of listed sizes and mtimes, the only way SFTP v3 has to see
/// a change (`docs/index.md`, "Known limits"); a rewrite in the same
/// second with the same size is made (a create or a tool write over a file
/// changed in that second) and must be seen. The tree's mtimes are cut to
/// whole seconds after each change, as SFTP carries them, so that glob's
/// order on the disk (rg's) has the ties it has over SFTP.
#[cfg(feature = "sftp")]
struct OverSftp {
    opened: Opened,
    root: PathBuf,
}

#[cfg(feature = "sftp")]
impl Subject for OverSftp {
    fn index(&self) -> &Index {
        &self.opened.index
    }

    fn backend(&self) -> &dyn SearchBackend {
        &*self.opened.backend
    }

    fn change(&mut self, r: &mut Rng) -> String {
        let what = match r.chance(20).then(|| same_second_rewrite(r, &self.root)) {
            Some(Some(what)) => what,
            _ => {
                let kind = loop {
                    let k = r.below(CHANGE_KINDS);
                    if k != SAME_SIZE_AND_MTIME {
                        break k;
                    }
                };
                change_kind(r, kind, &self.root, &self.opened.tools)
            }
        };
        crate::util::whole_seconds(&self.root);
        what
    }

    fn on_disk(&mut self) -> PathBuf {
        self.root.clone()
    }
}

/// Rewrite a file written within the last second (by an earlier step, and
/// seen by the calls after it) with other bytes of the same size, in that
/// same second as far as SFTP can tell: its whole-second mtime is kept (a
/// step takes less than a second, but not always, so the second is made
/// sure of). Listed sizes and mtimes do not change; the index must have
/// left the file unvouched for when it was listed in its own second
/// (`mirror::Poll`). `None` when no file is that recent.
#[cfg(feature = "sftp")]
fn same_second_rewrite(r: &mut Rng, root: &Path) -> Option<String> {
    use std::time::SystemTime;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let (_, files) = listing(root);
    let recent: Vec<(PathBuf, std::fs::Metadata)> = files
        .into_iter()
        .filter_map(|p| {
            let m = std::fs::symlink_metadata(root.join(&p)).ok()?;
            let secs = m
                .modified()
                .ok()?
                .duration_since(UNIX_EPOCH)
                .ok()?
                .as_secs();
            (m.is_file() && secs + 1 >= now).then_some((p, m))
        })
        .collect();
    if recent.is_empty() {
        return None;
    }
    let (p, m) = &recent[r.below(recent.len())];
    let path = root.join(p);
    let old = std::fs::read(&path).ok()?;
    let mut new: Vec<u8> = b"rare_token_here\nneedle\n"
        .iter()
        .cycle()
        .take(old.len())
        .copied()
        .collect();
    if new == old {
        new.iter_mut().for_each(|b| *b = b'z');
    }
    std::fs::write(&path, new).ok()?;
    let f = std::fs::File::options().write(true).open(&path).ok()?;
    f.set_modified(m.modified().ok()?).ok()?;
    Some(format!(
        "rewrite {} in its second, keeping its size",
        p.display()
    ))
}

/// The differential test over SFTP.
#[cfg(feature = "sftp")]
#[test]
fn index_over_sftp_follows_every_change_like_rg() {
    use crate::util::sshd;
    differential("index over sftp", 2, |root| {
        crate::util::whole_seconds(root);
        let server = sshd::shared();
        let address = dsh_search::SftpAddress {
            user: Some("root".into()),
            host: "127.0.0.1".into(),
            port: server.port,
        };
        let opened = open(
            WorkspaceOptions::new(FsSpec::Sftp(address))
                .identity(&sshd::keys().user_key)
                .known_hosts(&server.known_hosts)
                .root(root)
                .index(true),
        );
        Box::new(OverSftp {
            opened,
            root: root.to_path_buf(),
        })
    });
}

/// `dsh-search --fs sftp://… --cwd DIR --index serve`: the index mirrors the
/// remote workdir, answers once built, and sees a write through the tools
/// at the next call; `--index` over SFTP without `--cwd` says what it needs.
#[cfg(feature = "sftp")]
#[test]
fn serve_index_over_sftp_mirrors_the_remote_workdir() {
    use crate::util::served::Served;
    use crate::util::sshd;
    use crate::util::tree::file;
    let tree = Tree::build(&[file("a.txt", "needle a\n"), file("sub/b.txt", "needle b\n")]);
    let root = tree.root().to_path_buf();
    let server = sshd::shared();
    let mut args: Vec<String> = server.cli_args();
    args.extend(["--cwd".into(), root.display().to_string()]);
    let bin = rg::dsh_search_exe();
    let out = std::process::Command::new(&bin)
        .args(server.cli_args())
        .args(["--index", "serve"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--fs sftp:// needs --cwd with the remote workdir as an absolute path"),
        "{stderr}"
    );
    let mut ix = Served::spawn(
        std::process::Command::new(&bin)
            .args(&args)
            .args(["--index", "serve"]),
    );
    let mut k = 0;
    let mut ask = |tool: &str, arguments: serde_json::Value| {
        k += 1;
        ix.send(&serde_json::json!({"id": format!("{k}"), "tool": tool, "arguments": arguments}));
        ix.recv()
    };
    // A build of this small tree that has not ended in 120 s is a hang.
    let hang = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let r = ask("grep", serde_json::json!({"pattern": "needle"}));
        assert!(
            r["result"]["content"]
                .as_str()
                .unwrap()
                .starts_with("Found 2 matches"),
            "{r}"
        );
        if r["result"]["meta"]["index"] == "mirror" {
            break;
        }
        assert!(
            std::time::Instant::now() < hang,
            "never from the mirror: {r}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let w = ask(
        "write",
        serde_json::json!({"file_path": "sub/c.txt", "content": "needle c\n"}),
    );
    assert_eq!(w["result"]["isError"], false, "{w}");
    let r = ask("grep", serde_json::json!({"pattern": "needle c"}));
    assert_eq!(r["result"]["meta"]["index"], "mirror", "{r}");
    assert!(
        r["result"]["content"]
            .as_str()
            .unwrap()
            .starts_with("Found 1 match"),
        "{r}"
    );
}

/// In memory, the failure modes of the journal: a root removed and made
/// again with another tree, and more changes between two calls than a
/// journal queue holds. The call that finds either is the scan's (and
/// equal to rg), and the index answers again once rebuilt.
#[test]
fn in_memory_a_replaced_root_and_an_overflowed_journal_are_rebuilt() {
    use crate::util::tree::file;
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index in memory, failure modes");
    let tree = Tree::build(&[file("a.txt", "needle a\n"), file("sub/b.txt", "needle b\n")]);
    let root = tree.root().to_path_buf();
    let opened = open(
        WorkspaceOptions::new(FsSpec::Mem(None))
            .root(&root)
            .index(true),
    );
    let mem = opened.ws.memory().unwrap();
    let mut out = CopiedOut::new(opened.ws.filesystem(), &root);
    let grep = Call::Grep {
        pattern: "needle".into(),
        path: None,
        include: None,
    };
    let glob = Call::Glob {
        pattern: "**".into(),
        path: None,
    };
    let answered = |label: &str, report: &mut Report, out: &mut CopiedOut| {
        let disk = out.copy();
        let mut answers = Vec::new();
        for call in [&grep, &glob] {
            let expected = rg::run_rg(env, call, &disk);
            // Which path answers a call at this point, then the call.
            let answer = match call {
                Call::Grep { .. } => {
                    let req = dsh_search::GrepRequest::new("needle", &root);
                    opened.index.backend().grep_answered(&req).1
                }
                Call::Glob { .. } => {
                    let req = dsh_search::GlobRequest::new("**", &root);
                    opened.index.backend().glob_answered(&req).1
                }
            };
            let actual = rg::run_backend(&*opened.backend, call, &root);
            report.count();
            if let Some(d) = rg::diff(call, &expected, &actual) {
                report.fail(format!("{label}\n{d}"));
            }
            answers.push(answer);
        }
        answers
    };
    assert!(answered("before", &mut report, &mut out)
        .iter()
        .all(|a| *a == dsh_search::Answer::Index));
    // The root removed, and another tree made at its path.
    mem.remove(&root).unwrap();
    mem.write_file(root.join("other/c.txt"), "needle c\n")
        .unwrap();
    let first = dsh_search::GrepRequest::new("needle", &root);
    match opened.index.backend().grep_answered(&first).1 {
        dsh_search::Answer::Scan(why) => assert!(why.contains("root"), "{why}"),
        dsh_search::Answer::Index => panic!("a replaced root must not be answered from the mirror"),
    }
    answered("replaced", &mut report, &mut out);
    assert!(opened.index.wait_ready(Duration::from_secs(60)));
    assert!(answered("rebuilt", &mut report, &mut out)
        .iter()
        .all(|a| *a == dsh_search::Answer::Index));
    // More changes than a queue holds (65,536) between two calls.
    for i in 0..70_000 {
        mem.write_file(root.join("other/c.txt"), format!("needle {i}\n"))
            .unwrap();
    }
    match opened.index.backend().grep_answered(&first).1 {
        dsh_search::Answer::Scan(why) => assert!(why.contains("journal overflowed"), "{why}"),
        dsh_search::Answer::Index => {
            panic!("an overflowed journal must not be answered from the mirror")
        }
    }
    answered("overflowed", &mut report, &mut out);
    assert!(opened.index.wait_ready(Duration::from_secs(60)));
    assert!(answered("rebuilt again", &mut report, &mut out)
        .iter()
        .all(|a| *a == dsh_search::Answer::Index));
    report.finish();
}
