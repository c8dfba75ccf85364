//! The live index (`docs/index.md`) against the real rg under change: random
//! trees, random sequences of changes made on the disk by the test process
//! (another writer, as far as the index knows) and through the tools'
//! `write`, each followed at once by glob and grep calls through the indexed
//! workspace, compared byte for byte with rg run on the disk. No quiet
//! period is waited for: a call drains every event queued before it, so the
//! index's synchronous barrier is the call itself.
//!
//! The seed is printed with every failure: `DSH_SEARCH_SEED=<n>` replays a
//! run, `DSH_SEARCH_INDEX_TREES=<n>` changes how many trees (default 6),
//! `DSH_SEARCH_CASE=<substring>` runs only the calls whose label holds it.
//!
//! The failure modes: a watcher overflow, the watch limit, the root
//! replaced by another tree, a tree rewritten wholesale (a checkout).
//!
//! On Windows (under Wine, `scripts/test-windows`) the tests that validate
//! at each call run too: the random differential test, the hard links'
//! cases and the restart, each `…_validated`. The others need the Linux
//! watcher (its overflow, its limit, its events) and are built for Linux
//! only; the generator leaves out there the changes Windows cannot make
//! or cannot show ([`change_kind`]).

#![cfg(any(target_os = "linux", windows))]

use std::fs;
use std::io::Write as _;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use dsh_search::tool::CallContext;
use dsh_search::{
    Answer, Config, FsSpec, Index, IndexWatch, SearchBackend, Tools, WorkspaceOptions,
};

use crate::util::rg::{self, Call, Env};
use crate::util::tree::{file, Spec, Tree};
use crate::util::{selected, Report};

use crate::util::rng::Rng;

pub const DIR_NAMES: &[&str] = &[
    "src", "lib", "docs", ".hidden", "build", "sub", "ünï", "deep",
];
pub const FILE_NAMES: &[&str] = &[
    "a.rs", "b.txt", "c.md", "main.rs", ".env", "x y.txt", "ünï.rs", "README", "keep.rs", "out.log",
];
pub const LINES: &[&str] = &[
    "needle",
    "foo bar",
    "fn main() {}",
    "ünï ö",
    "",
    "x needle y needle",
    "FOO",
    "123 456",
    "rare_token_here",
    "NEEDLE in caps",
    "\u{212A}elvin",
];
pub const IGNORE_LINES: &[&str] = &[
    "*.rs", "*.log", "build/", "!keep.rs", "/b.txt", "*.md", "sub/", "!*.txt", ".env", "docs/*",
];
/// Patterns the prefilter narrows (most), and some it cannot.
pub const PATTERNS: &[&str] = &[
    "needle",
    "needle y",
    "foo bar",
    "(?i)needle",
    "rare_token",
    "rare_\\w+_here",
    "ünï",
    "(?i)kelvin",
    "fn main|FOO",
    "absent_everywhere",
    "^foo",
    "needle$",
    "\\w+",
    "[0-9]+ 456",
    "",
];
/// The patterns of [`PATTERNS`] the prefilter cannot narrow: the scan
/// answers them.
pub const UNNARROWED: &[&str] = &["\\w+", ""];
/// Patterns the prefilter narrows, matching the lines the changes write.
pub const NARROWED: &[&str] = &[
    "needle",
    "rare_token",
    "(?i)NEEDLE",
    "foo bar|ünï",
    "rare_\\w+_here",
];
pub const GLOBS: &[&str] = &[
    "*", "*.rs", "**/*.txt", "src/**", "*needle*", ".*", "{a,b}*",
];

pub fn content(r: &mut Rng) -> Vec<u8> {
    let mut v = Vec::new();
    if r.chance(5) {
        v.extend_from_slice("\u{feff}".as_bytes());
    }
    if r.chance(3) {
        v.extend_from_slice(b"\xff\xfeu\0t\0f\0");
    }
    for _ in 0..r.below(6) {
        v.extend_from_slice(r.pick(LINES).as_bytes());
        v.push(b'\n');
    }
    if r.chance(10) {
        v.extend_from_slice(b"needle without newline");
    }
    if r.chance(5) {
        v.extend_from_slice(b"\0binary needle\n");
    }
    v
}

/// The tree as it is on the disk now: directories and files (and other
/// entries) relative to the root, outside `.git`.
pub fn listing(root: &Path) -> (Vec<PathBuf>, Vec<PathBuf>) {
    let mut dirs = vec![PathBuf::new()];
    let mut files = Vec::new();
    let walk = walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .filter_entry(|e| e.file_name() != ".git");
    for e in walk.flatten() {
        let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
        if e.file_type().is_dir() {
            dirs.push(rel);
        } else {
            files.push(rel);
        }
    }
    (dirs, files)
}

pub fn random_tree(r: &mut Rng) -> Vec<Spec> {
    let mut specs = Vec::new();
    let mut dirs = vec![String::new()];
    for _ in 0..r.below(6) {
        let parent = dirs[r.below(dirs.len())].clone();
        let d = format!("{parent}{}/", r.pick(DIR_NAMES));
        if !dirs.contains(&d) && d.matches('/').count() <= 3 {
            dirs.push(d);
        }
    }
    for _ in 0..3 + r.below(10) {
        let f = format!("{}{}", dirs[r.below(dirs.len())], r.pick(FILE_NAMES));
        specs.push(file(&f, content(r)));
    }
    if r.chance(40) {
        specs.push(file(".gitignore", format!("{}\n", r.pick(IGNORE_LINES))));
    }
    if r.chance(40) {
        specs.push(file(".git/HEAD", "ref\n"));
    }
    specs
}

std::thread_local! {
    /// How the indexes the running test opens learn of changes: the tests
    /// that run both ways (`both_ways`) set it on their thread.
    static WATCH: std::cell::Cell<IndexWatch> = const { std::cell::Cell::new(IndexWatch::Os) };
}

/// Run `test` with the indexes it opens kept current as `watch` says
/// (`docs/index.md`, "Where there is no watcher").
fn watching(watch: IndexWatch, test: impl FnOnce()) {
    WATCH.set(watch);
    test();
    WATCH.set(IndexWatch::Os);
}

/// Fail unless `ix` is kept current as the running test asked: by the
/// watcher, or validated at each call because it was asked for.
fn assert_kept_as_asked(ix: &Indexed) {
    let s = ix.index.status();
    let want = match WATCH.get() {
        IndexWatch::Os => None,
        IndexWatch::None => Some("asked for"),
    };
    assert_eq!(s.validates.as_deref(), want, "{s:?}");
}

/// The indexed workspace under test: its index, backend and tools.
struct Indexed {
    index: Index,
    backend: Arc<dyn SearchBackend>,
    tools: Tools,
}

fn open_indexed(root: &Path) -> Indexed {
    let ws = WorkspaceOptions::new(FsSpec::Local)
        .root(root)
        .index(true)
        .index_watch(WATCH.get())
        .open()
        .expect("an indexed workspace opens");
    let index = ws.index().expect("the index was asked for").clone();
    // A guard against a hang, not a timed assertion.
    assert!(
        index.wait_ready(Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
    let backend = ws.backend(&Config::default());
    let tools = ws.tools(Config::default(), None).expect("tools");
    let ix = Indexed {
        index,
        backend,
        tools,
    };
    assert_kept_as_asked(&ix);
    ix
}

pub fn random_call(r: &mut Rng, dirs: &[PathBuf], files: &[PathBuf]) -> Call {
    let path = match r.below(6) {
        0 if dirs.len() > 1 => Some(dirs[1 + r.below(dirs.len() - 1)].display().to_string()),
        1 if !files.is_empty() => Some(files[r.below(files.len())].display().to_string()),
        _ => None,
    };
    if r.chance(40) {
        Call::Glob {
            pattern: r.pick(GLOBS).to_string(),
            path,
        }
    } else {
        Call::Grep {
            pattern: r.pick(PATTERNS).to_string(),
            path,
            include: r.chance(15).then(|| r.pick(GLOBS).to_string()),
        }
    }
}

/// Compare one call through the indexed workspace with rg's, recording a
/// failure; returns whether it was compared (not filtered out).
fn check(
    env: &Env,
    report: &mut Report,
    ix: &Indexed,
    call: &Call,
    root: &Path,
    label: &str,
) -> bool {
    let label = format!("{label}: {}", rg::describe(call, ""));
    if !selected(&label) {
        return false;
    }
    report.count();
    let expected = rg::run_rg(env, call, root);
    let actual = rg::run_backend(&*ix.backend, call, root);
    if let Some(d) = rg::diff(call, &expected, &actual) {
        report.fail(format!("{label}\n{d}"));
    }
    true
}

/// How many kinds of change [`change_kind`] makes.
pub const CHANGE_KINDS: usize = 20;

/// The kind of change that rewrites a file keeping its size and mtime.
#[cfg_attr(not(feature = "sftp"), allow(dead_code))]
pub const SAME_SIZE_AND_MTIME: usize = 10;

/// One random change, on the disk or through the tools; what it was.
fn change(r: &mut Rng, root: &Path, tools: &Tools) -> String {
    let kind = r.below(CHANGE_KINDS);
    change_kind(r, kind, root, tools)
}

/// One random change of kind `kind` (below [`CHANGE_KINDS`]), on the disk
/// or through the tools; what it was.
///
/// # Platform behavior
///
/// On Windows a mode is the read-only attribute (kind 7 sets or clears
/// it), and three kinds make no change, saying why: a directory's mode
/// (18: Windows has no bits that make a directory unreadable or not
/// searchable, only ACLs), a symbolic link (11: making one needs a
/// privilege an ordinary user lacks), and a rewrite keeping the size and
/// the mtime while the index runs (10: Windows' listing has no change
/// time, so validation cannot see it; `docs/index.md`, "What is left").
pub fn change_kind(r: &mut Rng, kind: usize, root: &Path, tools: &Tools) -> String {
    let (dirs, files) = listing(root);
    let dir = dirs[r.below(dirs.len())].clone();
    let new_name = |r: &mut Rng| dir.join(r.pick(FILE_NAMES));
    let some_file = |r: &mut Rng| (!files.is_empty()).then(|| files[r.below(files.len())].clone());
    let abs = |p: &Path| root.join(p);
    let done = match kind {
        0 | 1 => {
            let p = new_name(r);
            let c = content(r);
            fs::write(abs(&p), c).map(|_| format!("create {}", p.display()))
        }
        2 => match some_file(r) {
            Some(p) => forced(&abs(&p))
                .and_then(|_| fs::remove_file(abs(&p)))
                .map(|_| format!("delete {}", p.display())),
            None => Ok("nothing to delete".into()),
        },
        3 => match some_file(r) {
            Some(p) => {
                let to = new_name(r);
                fs::rename(abs(&p), abs(&to))
                    .map(|_| format!("rename {} -> {}", p.display(), to.display()))
            }
            None => Ok("nothing to rename".into()),
        },
        4 if dirs.len() > 1 => {
            let from = dirs[1 + r.below(dirs.len() - 1)].clone();
            let to = dirs[r.below(dirs.len())].join(r.pick(DIR_NAMES));
            if to.starts_with(&from) {
                Ok("no rename into itself".into())
            } else {
                fs::rename(abs(&from), abs(&to))
                    .map(|_| format!("rename dir {} -> {}", from.display(), to.display()))
            }
        }
        5 if dirs.len() > 1 => {
            let d = dirs[1 + r.below(dirs.len() - 1)].clone();
            forced(&abs(&d))
                .and_then(|_| fs::remove_dir_all(abs(&d)))
                .map(|_| format!("rm -r {}", d.display()))
        }
        6 => {
            let d = dir.join(r.pick(DIR_NAMES));
            let f = d.join(r.pick(FILE_NAMES));
            let c = content(r);
            fs::create_dir_all(abs(&d))
                .and_then(|_| fs::write(abs(&f), c))
                .map(|_| format!("mkdir {} and create {}", d.display(), f.display()))
        }
        7 => match some_file(r) {
            // Not through a symlink: one to `..` would change a
            // directory's mode (kind 18's change), the root's among them.
            Some(p) if fs::symlink_metadata(abs(&p)).is_ok_and(|m| m.is_symlink()) => {
                Ok(format!("no chmod through the symlink {}", p.display()))
            }
            #[cfg(unix)]
            Some(p) => {
                let mode = [0o600, 0o644, 0o000, 0o755][r.below(4)];
                fs::set_permissions(abs(&p), fs::Permissions::from_mode(mode))
                    .map(|_| format!("chmod {mode:o} {}", p.display()))
            }
            // Windows' one mode bit: the read-only attribute.
            #[cfg(windows)]
            Some(p) => (|| {
                let read_only = r.chance(50);
                let mut perms = fs::metadata(abs(&p))?.permissions();
                perms.set_readonly(read_only);
                fs::set_permissions(abs(&p), perms)?;
                Ok(format!(
                    "attrib {}R {}",
                    if read_only { '+' } else { '-' },
                    p.display()
                ))
            })(),
            None => Ok("nothing to chmod".into()),
        },
        8 => match some_file(r) {
            Some(p) => (|| {
                let f = fs::OpenOptions::new().write(true).open(abs(&p))?;
                let len = f.metadata()?.len();
                let to = r.below(len as usize + 1) as u64;
                f.set_len(to)?;
                Ok(format!("truncate {} to {to}", p.display()))
            })(),
            None => Ok("nothing to truncate".into()),
        },
        9 => match some_file(r) {
            Some(p) => {
                let line = r.pick(LINES);
                append_line(&abs(&p), line).map(|_| format!("append {line:?} to {}", p.display()))
            }
            None => Ok("nothing to append to".into()),
        },
        // Not seen on Windows while the index runs (this function's doc).
        10 if cfg!(windows) => Ok("no rewrite keeping size and mtime on Windows".into()),
        10 => match some_file(r) {
            // The change a size-and-mtime comparison misses.
            Some(p) => (|| {
                let path = abs(&p);
                let meta = fs::symlink_metadata(&path)?;
                if !meta.is_file() {
                    return Ok("not a file".into());
                }
                let mtime = meta.modified()?;
                let old = fs::read(&path)?;
                let mut new: Vec<u8> = b"rare_token_here\nneedle\n"
                    .iter()
                    .cycle()
                    .take(old.len())
                    .copied()
                    .collect();
                if new == old {
                    new.iter_mut().for_each(|b| *b = b'z');
                }
                let mut f = fs::OpenOptions::new().write(true).open(&path)?;
                f.write_all(&new)?;
                f.set_modified(mtime)?;
                Ok(format!("rewrite {} keeping size and mtime", p.display()))
            })(),
            None => Ok("nothing to rewrite".into()),
        },
        // A privilege on Windows (this function's doc).
        11 if cfg!(windows) => Ok("no symlink on Windows".into()),
        11 => {
            let link = dir.join("link");
            // Inside the tree only: a link out of it would have rg walk
            // whatever else is there.
            let target = match r.below(3) {
                0 => "a.rs",
                1 if !dir.as_os_str().is_empty() => "..",
                _ => "missing",
            };
            let tmp = dir.join(".link-tmp");
            let _ = fs::remove_file(abs(&tmp));
            symlink(target, &abs(&tmp))
                .and_then(|_| fs::rename(abs(&tmp), abs(&link)))
                .map(|_| format!("symlink {} -> {target}", link.display()))
        }
        12 => {
            let name = [".gitignore", ".ignore", ".rgignore"][r.below(3)];
            let p = dir.join(name);
            if r.chance(25) {
                let _ = fs::remove_file(abs(&p));
                Ok(format!("remove {}", p.display()))
            } else {
                let text: String = (0..1 + r.below(3))
                    .map(|_| format!("{}\n", r.pick(IGNORE_LINES)))
                    .collect();
                fs::write(abs(&p), &text).map(|_| format!("write {} {text:?}", p.display()))
            }
        }
        13 => {
            let git = dir.join(".git");
            if abs(&git).exists() {
                fs::remove_dir_all(abs(&git)).map(|_| format!("rm -r {}", git.display()))
            } else {
                fs::create_dir_all(abs(&git))
                    .and_then(|_| fs::write(abs(&git).join("HEAD"), "ref\n"))
                    .map(|_| format!("git init {}", git.display()))
            }
        }
        16 => match some_file(r) {
            // A hard link, in this directory or another: the
            // event names the new name only.
            Some(p) => {
                let to = new_name(r);
                fs::hard_link(abs(&p), abs(&to))
                    .map(|_| format!("ln {} {}", p.display(), to.display()))
            }
            None => Ok("nothing to link".into()),
        },
        17 => {
            // A write through one name of a linked file, when there is
            // one: every other name changed too.
            let linked = {
                let handles = file_handles(root, &files);
                handles
                    .iter()
                    .find(|(p, h)| handles.iter().any(|(q, g)| q != p && g == h))
                    .map(|(p, _)| p.clone())
            };
            match linked.as_ref().or(files.first()) {
                Some(p) => {
                    let line = r.pick(LINES);
                    append_line(&abs(p), line)
                        .map(|_| format!("append {line:?} to {} (linked)", p.display()))
                }
                None => Ok("nothing to append to".into()),
            }
        }
        // No such mode on Windows (this function's doc).
        18 if cfg!(windows) => Ok("no directory mode on Windows".into()),
        18 if dirs.len() > 1 => {
            // A directory's mode: readable but not searchable,
            // unreadable, or back. (Root ignores the bits; the servers'
            // test runs as another user: `tests/serve.rs`.)
            let d = dirs[1 + r.below(dirs.len() - 1)].clone();
            let mode = [0o644, 0o000, 0o311, 0o755, 0o755][r.below(5)];
            set_mode(&abs(&d), mode).map(|_| format!("chmod {mode:o} {}/", d.display()))
        }
        19 => {
            // A repository's own exclude file: inside `.git`, which the
            // index does not mirror, read from the disk at every walk (a
            // kept walk checks it again: docs/index.md, "Kept walks").
            let git = dir.join(".git");
            let exclude = git.join("info/exclude");
            if r.chance(25) {
                let _ = fs::remove_file(abs(&exclude));
                Ok(format!("remove {}", exclude.display()))
            } else {
                let text: String = (0..1 + r.below(2))
                    .map(|_| format!("{}\n", r.pick(IGNORE_LINES)))
                    .collect();
                fs::create_dir_all(abs(&git).join("info"))
                    .and_then(|_| fs::write(abs(&exclude), &text))
                    .map(|_| format!("write {} {text:?}", exclude.display()))
            }
        }
        _ => {
            // Through the tools: the next call must see it, with no wait.
            let p = new_name(r);
            let c = String::from_utf8_lossy(&content(r)).replace('\0', "");
            let args = serde_json::json!({"file_path": p.display().to_string(), "content": c});
            let res = tools.call("write", &args, &CallContext::new(root));
            Ok(format!(
                "tool write {} (error: {})",
                p.display(),
                res.is_error
            ))
        }
    };
    done.unwrap_or_else(|e| format!("change {kind} failed: {e}"))
}

/// A symbolic link at `link` to `target` (Unix only: `change_kind`'s doc).
#[cfg(unix)]
fn symlink(target: &str, link: &Path) -> std::io::Result<()> {
    std::os::unix::fs::symlink(target, link)
}

#[cfg(windows)]
fn symlink(target: &str, link: &Path) -> std::io::Result<()> {
    unreachable!("no symlink is made on Windows: {target} {}", link.display())
}

/// `path`'s Unix mode (Unix only: `change_kind`'s doc).
#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
}

#[cfg(windows)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    unreachable!("no mode {mode:o} is set on Windows: {}", path.display())
}

/// Ready to be removed, as `rm -f` would remove it: nothing to do on
/// Unix; on Windows, `path` and everything under it made writable, since
/// Windows refuses to delete a read-only file (kind 7's attribute) and
/// would leave most later removals of the tree undone.
fn forced(path: &Path) -> std::io::Result<()> {
    #[cfg(windows)]
    for e in walkdir::WalkDir::new(path) {
        let e = e?;
        let mut perms = e.metadata()?.permissions();
        if perms.readonly() {
            #[allow(
                clippy::permissions_set_readonly_false,
                reason = "Windows: clears the read-only attribute alone"
            )]
            perms.set_readonly(false);
            fs::set_permissions(e.path(), perms)?;
        }
    }
    #[cfg(unix)]
    let _ = path;
    Ok(())
}

/// The regular files of `files` (relative to `root`) that can be opened,
/// each with a handle that is equal for every name of one file (hard
/// links): its device and inode, on Windows its volume and file index
/// (`std` gives no link count there).
fn file_handles(root: &Path, files: &[PathBuf]) -> Vec<(PathBuf, same_file::Handle)> {
    files
        .iter()
        .filter(|p| fs::symlink_metadata(root.join(p)).is_ok_and(|m| m.is_file()))
        .filter_map(|p| Some((p.clone(), same_file::Handle::from_path(root.join(p)).ok()?)))
        .collect()
}

/// Append `line` and a newline to the file at `path`.
fn append_line(path: &Path, line: &str) -> std::io::Result<()> {
    let mut f = fs::OpenOptions::new().append(true).open(path)?;
    writeln!(f, "{line}")
}

pub fn seed() -> u64 {
    match std::env::var("DSH_SEARCH_SEED") {
        Ok(s) => s.parse::<u64>().expect("DSH_SEARCH_SEED must be a u64"),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    }
}

#[test]
#[cfg(target_os = "linux")]
fn index_follows_every_change_like_rg() {
    watching(IndexWatch::Os, follows_every_change);
}

/// [`index_follows_every_change_like_rg`] with no watcher: the mirror
/// validated at each call.
#[test]
fn index_follows_every_change_like_rg_validated() {
    watching(IndexWatch::None, follows_every_change);
}

fn follows_every_change() {
    let Some(env) = rg::env() else { return };
    let seed = seed();
    let trees: usize = std::env::var("DSH_SEARCH_INDEX_TREES")
        .ok()
        .and_then(|s| s.parse().ok())
        // Under Wine each rg.exe start costs about a tenth of a second:
        // 2 trees are 240 calls (README "Platforms").
        .unwrap_or(if cfg!(windows) { 2 } else { 6 });
    let mut report = Report::new(&format!("index_mutations DSH_SEARCH_SEED={seed}"));
    let mut rng = Rng(seed);
    let mut skipped = 0;
    let mut reused = 0;
    for t in 0..trees {
        let tree = Tree::build(&random_tree(&mut rng));
        let root = tree.root().to_path_buf();
        // Saved, and twice restarted from what was saved after changes
        // made while no process watched (a rewrite keeping the size and
        // the mtime among them).
        let store = tempfile::tempdir().unwrap();
        let mut ix = open_saved(&root, store.path());
        let mut history = Vec::new();
        for step in 0..30 {
            if step % 10 == 9 {
                saved_before_restart(store.path());
                drop(ix);
                // No index alive: the tools of an unindexed workspace.
                let tools = WorkspaceOptions::new(FsSpec::Local)
                    .open()
                    .unwrap()
                    .tools(Config::default(), None)
                    .unwrap();
                for _ in 0..3 {
                    let what = change(&mut rng, &root, &tools);
                    history.push(format!("{what} (closed)"));
                }
                let what = change_kind(&mut rng, SAME_SIZE_AND_MTIME, &root, &tools);
                history.push(format!("{what} (closed)"));
                ix = open_saved(&root, store.path());
                let s = ix.index.status();
                if s.saved != RESTARTED {
                    report.fail(format!("tree={t} step={step}: not restarted: {s:?}"));
                }
            }
            let what = change(&mut rng, &root, &ix.tools);
            history.push(what);
            let (dirs, files) = listing(&root);
            let narrowed = narrowed_calls(&mut rng);
            for c in 0..4 {
                let call = match c {
                    1 => random_call(&mut rng, &dirs, &files),
                    _ => narrowed[usize::from(c == 2)].clone(),
                };
                let before = report.failures();
                let by_index = ix.index.status().answered_by_index;
                let label = format!("tree={t} step={step} call={c}");
                if !check(env, &mut report, &ix, &call, &root, &label) {
                    continue;
                }
                let narrowed = match &call {
                    Call::Grep { pattern, .. } => !UNNARROWED.contains(&pattern.as_str()),
                    Call::Glob { .. } => true,
                };
                if narrowed && ix.index.status().answered_by_index != by_index + 1 {
                    report.fail(format!(
                        "{label}: not answered by the index: {:?}",
                        ix.index.status()
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
        let s = ix.index.status();
        if s.dirs_listed == 0 {
            report.fail(format!(
                "tree={t}: no directory was listed from the mirror: {s:?}"
            ));
        }
        skipped += s.files_skipped;
        reused += s.walks_reused;
    }
    report.finish();
    assert!(
        skipped > 0,
        "the prefilter never spared a file: the test proves less than it says"
    );
    assert!(
        reused > 0,
        "no walk was kept: the test proves less than it says"
    );
}

/// `IndexStatus::saved` of an index opened again where one was saved:
/// `loaded`; on Windows nothing is saved (`std` gives no change time there,
/// which the saved index needs to vouch for a file: `docs/index.md`,
/// "Restart without a rebuild"), and the restart is a build.
const RESTARTED: &str = if cfg!(unix) { "loaded" } else { "off" };

/// Wait for the index saved in `store` before its workspace is closed; on
/// Windows, where none is saved, check that nothing was written there.
fn saved_before_restart(store: &Path) {
    #[cfg(target_os = "linux")]
    crate::util::saved_index(store);
    #[cfg(windows)]
    assert_eq!(
        fs::read_dir(store).map_or(0, |d| d.count()),
        0,
        "an index saved on Windows in {}",
        store.display()
    );
}

/// The root greps each step of the differential tests makes besides a
/// random call, by patterns the prefilter narrows (a stale trigram set
/// would hide a match of what the changes write): the first after the
/// change (the walk kept by the step before must not be used), then
/// another (the walk kept by the first, the prefilter's candidates worked
/// out for a new query), then the first again (the kept candidates).
pub fn narrowed_calls(rng: &mut Rng) -> [Call; 2] {
    let grep = |p: &str| Call::Grep {
        pattern: p.to_string(),
        path: None,
        include: None,
    };
    [grep(rng.pick(NARROWED)), grep(rng.pick(NARROWED))]
}

/// A tree with several directories and files, for the failure modes.
fn small_tree() -> Tree {
    Tree::build(&[
        file("a.rs", "needle\nfoo bar\n"),
        file("src/b.txt", "rare_token_here\n"),
        file("src/deep/c.md", "nothing\n"),
        file("docs/d.txt", "needle\n"),
    ])
}

fn calls() -> Vec<Call> {
    let grep = |p: &str| Call::Grep {
        pattern: p.into(),
        path: None,
        include: None,
    };
    vec![
        grep("needle"),
        grep("rare_token"),
        grep("\\w+"),
        Call::Glob {
            pattern: "*".into(),
            path: None,
        },
    ]
}

fn check_all(env: &Env, report: &mut Report, ix: &Indexed, root: &Path, label: &str) {
    for call in calls() {
        check(env, report, ix, &call, root, label);
    }
}

fn answer(ix: &Indexed, root: &Path) -> Answer {
    let b = ix.index.backend();
    let req = dsh_search::GrepRequest::new("needle", root);
    b.grep_answered(&req).1
}

#[test]
#[cfg(target_os = "linux")]
fn an_overflow_is_answered_by_the_scan_then_rebuilt() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index overflow");
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    let ix = open_indexed(&root);
    assert_eq!(answer(&ix, &root), Answer::Index);
    ix.index.simulate_overflow();
    fs::write(root.join("src/new.txt"), "needle again\n").unwrap();
    // The call that finds the overflow is the scan's; so is every call
    // until the rebuild ends.
    match answer(&ix, &root) {
        Answer::Scan(why) => assert!(why.contains("overflowed"), "{why}"),
        Answer::Index => panic!("an overflow must not be answered from the mirror"),
    }
    check_all(env, &mut report, &ix, &root, "during the rebuild");
    fs::write(root.join("docs/e.txt"), "needle during the rebuild\n").unwrap();
    assert!(ix.index.wait_ready(Duration::from_secs(60)));
    assert_eq!(answer(&ix, &root), Answer::Index);
    check_all(env, &mut report, &ix, &root, "after the rebuild");
    assert_eq!(ix.index.status().builds, 2);
    report.finish();
}

#[test]
#[cfg(target_os = "linux")]
fn the_watch_limit_turns_the_index_to_validation() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index watch limit");
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    // Four directories, room for five watches: live, watched.
    let index = Index::start_with(&root, Some(5)).unwrap();
    assert!(
        index.wait_ready(Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
    assert_eq!(index.status().validates, None);
    let ix = Indexed {
        backend: Arc::new(index.backend()),
        tools: WorkspaceOptions::new(FsSpec::Local)
            .open()
            .unwrap()
            .tools(Config::default(), None)
            .unwrap(),
        index,
    };
    check_all(env, &mut report, &ix, &root, "under the limit");
    // Two more: past it. The call that finds it is the scan's; the rebuild
    // meets the limit too and validates instead of watching.
    fs::create_dir_all(root.join("x/y")).unwrap();
    fs::write(root.join("x/y/f.txt"), "needle\n").unwrap();
    match answer(&ix, &root) {
        Answer::Scan(why) => assert!(why.contains("watch limit"), "{why}"),
        Answer::Index => panic!("past the watch limit the watcher cannot vouch for the mirror"),
    }
    assert!(ix.index.wait_ready(Duration::from_secs(60)));
    let s = ix.index.status();
    assert_eq!(
        (s.state.as_str(), s.validates.as_deref(), s.watches),
        ("live", Some("the watch limit was reached"), 0),
        "{s:?}"
    );
    check_all(env, &mut report, &ix, &root, "past the limit");
    assert_eq!(answer(&ix, &root), Answer::Index);
    // Changes no watch sees, each seen by the next call.
    fs::write(root.join("x/y/f.txt"), "changed\n").unwrap();
    check_all(env, &mut report, &ix, &root, "past the limit, changed");
    fs::create_dir_all(root.join("x/z")).unwrap();
    fs::write(root.join("x/z/g.txt"), "needle rare_token\n").unwrap();
    fs::remove_file(root.join("a.rs")).unwrap();
    check_all(env, &mut report, &ix, &root, "past the limit, more");
    assert_eq!(answer(&ix, &root), Answer::Index);
    report.finish();
}

#[test]
#[cfg(target_os = "linux")]
fn a_root_replaced_by_another_tree_is_rebuilt() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index root replaced");
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    let ix = open_indexed(&root);
    check_all(env, &mut report, &ix, &root, "before");
    // `mv root root.old; mkdir root` with another tree in it.
    let old = root.with_extension("old");
    fs::rename(&root, &old).unwrap();
    fs::create_dir(&root).unwrap();
    fs::write(root.join("other.txt"), "needle elsewhere\n").unwrap();
    match answer(&ix, &root) {
        Answer::Scan(why) => assert!(why.contains("root"), "{why}"),
        Answer::Index => panic!("a replaced root must not be answered from the old mirror"),
    }
    check_all(env, &mut report, &ix, &root, "replaced");
    assert!(ix.index.wait_ready(Duration::from_secs(60)));
    check_all(env, &mut report, &ix, &root, "rebuilt");
    assert_eq!(answer(&ix, &root), Answer::Index);
    fs::remove_dir_all(&old).unwrap();
    report.finish();
}

#[test]
#[cfg(target_os = "linux")]
fn a_checkout_rewriting_the_whole_tree_is_followed() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index checkout");
    let mut rng = Rng(seed());
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    let ix = open_indexed(&root);
    check_all(env, &mut report, &ix, &root, "before");
    // What a checkout of another branch does: every entry removed or
    // rewritten, others created, with no call in between.
    for e in fs::read_dir(&root).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            fs::remove_dir_all(&p).unwrap();
        } else {
            fs::remove_file(&p).unwrap();
        }
    }
    for spec in random_tree(&mut rng) {
        if let Spec::File(p, c) = spec {
            let p = root.join(String::from_utf8(p).unwrap());
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, c).unwrap();
        }
    }
    check_all(env, &mut report, &ix, &root, "after the checkout");
    assert_eq!(answer(&ix, &root), Answer::Index);
    report.finish();
}

/// A change is in the very next call's answer, with no wait: one made
/// through the tools, and one made by another process (a shell that has
/// exited before the call starts).
#[test]
#[cfg(target_os = "linux")]
fn the_next_call_sees_a_change_with_no_wait() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index next call");
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    let ix = open_indexed(&root);
    let grep = |p: &str| Call::Grep {
        pattern: p.into(),
        path: None,
        include: None,
    };
    for i in 0..10 {
        let args = serde_json::json!({"file_path": format!("src/t{i}.txt"), "content": format!("token_by_tool_{i}\n")});
        let res = ix.tools.call("write", &args, &CallContext::new(&root));
        assert!(!res.is_error, "{}", res.content);
        let res = ix.tools.call(
            "grep",
            &serde_json::json!({"pattern": format!("token_by_tool_{i}")}),
            &CallContext::new(&root),
        );
        assert!(
            res.content.starts_with("Found 1 match"),
            "{i}: {}",
            res.content
        );
        check(
            env,
            &mut report,
            &ix,
            &grep(&format!("token_by_tool_{i}")),
            &root,
            "tool",
        );
        let ok = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("printf 'token_by_shell_{i}\\n' >> docs/d.txt"))
            .current_dir(&root)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        let label = format!("shell {i}");
        check(
            env,
            &mut report,
            &ix,
            &grep(&format!("token_by_shell_{i}")),
            &root,
            &label,
        );
    }
    assert!(
        ix.index.status().files_skipped > 0,
        "{:?}",
        ix.index.status()
    );
    report.finish();
}

/// `meta.index` of a tool result (`docs/index.md`, "What `meta` says").
#[cfg(target_os = "linux")]
fn said(r: &dsh_search::tool::ToolResult) -> &str {
    r.meta
        .as_ref()
        .and_then(|m| m.get("index"))
        .and_then(|v| v.as_str())
        .unwrap_or_else(|| panic!("no meta.index in {r:?}"))
}

/// `r` without `meta.index` (a `meta` left empty goes).
#[cfg(target_os = "linux")]
fn unsaid(mut r: dsh_search::tool::ToolResult) -> dsh_search::tool::ToolResult {
    if let Some(serde_json::Value::Object(m)) = &mut r.meta {
        m.remove("index");
        if m.is_empty() {
            r.meta = None;
        }
    }
    r
}

#[test]
#[cfg(target_os = "linux")]
fn meta_says_which_path_answered_and_nothing_else_changes() {
    use serde_json::json;
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    let ix = open_indexed(&root);
    let scan = WorkspaceOptions::new(FsSpec::Local)
        .root(&root)
        .open()
        .expect("an unindexed workspace opens")
        .tools(Config::default(), None)
        .expect("tools");
    let direct = CallContext::new(&root);
    let mut nested = CallContext::new(&root);
    nested.direct = false;
    let unnarrowed = "scan: the pattern has no required literal the prefilter can use";
    for (tool, args, expected) in [
        ("grep", json!({"pattern": "needle"}), "mirror"),
        ("glob", json!({"pattern": "**/*.txt"}), "mirror"),
        ("grep", json!({"pattern": "\\w{30}"}), unnarrowed),
        // The search itself fails (rg's regex parse error): the scan ran
        // it, as no literal could be planned from it.
        ("grep", json!({"pattern": "needle("}), unnarrowed),
        // Refused before any search was asked for: the tools' own check
        // of the path, the argument schema.
        ("grep", json!({"pattern": "needle", "path": "gone"}), "none"),
        ("grep", json!({"pattern": 3}), "none"),
        ("glob", json!({}), "none"),
    ] {
        for ctx in [&direct, &nested] {
            let a = ix.tools.call(tool, &args, ctx);
            let b = scan.call(tool, &args, ctx);
            assert_eq!(said(&a), expected, "{tool} {args}: {a:?}");
            // An unindexed workspace adds nothing; the rest is the same.
            assert!(b.meta.as_ref().is_none_or(|m| m.get("index").is_none()));
            assert_eq!(unsaid(a.clone()), b, "{tool} {args}");
            if !ctx.direct || a.is_error {
                // No presentation meta: the key alone.
                assert_eq!(a.meta, Some(json!({ "index": expected })), "{tool} {args}");
            }
        }
    }
    // The search's own error carries the key too.
    let a = ix
        .tools
        .call("grep", &json!({"pattern": "needle("}), &direct);
    assert!(a.is_error && said(&a) == unnarrowed, "{a:?}");
    ix.index.simulate_overflow();
    let a = ix
        .tools
        .call("grep", &json!({"pattern": "needle"}), &direct);
    assert_eq!(said(&a), "scan: the watcher's queue overflowed", "{a:?}");
    assert!(a.content.starts_with("Found 2 matches"), "{}", a.content);
    assert_eq!(
        unsaid(a),
        scan.call("grep", &json!({"pattern": "needle"}), &direct)
    );
}

/// Files past 16 MiB (`docs/index.md`, "What the mirror holds"): a large
/// file that repeats a few trigrams (a generated register header) is ruled
/// out like any text file, and answered as rg answers when it does match;
/// a large file of varied bytes, whose bitmap would take more than an
/// eighth of its size, stays a candidate and is searched.
#[test]
#[cfg(target_os = "linux")]
fn large_files_are_ruled_out_only_when_their_trigrams_are_few() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index large files");
    let tree = Tree::build(&[file("small.txt", "nothing here\n")]);
    let root = tree.root().to_path_buf();
    // 20 MiB of register definitions, then one line found nowhere else.
    let mut header = Vec::with_capacity(21 << 20);
    let mut i = 0u64;
    while header.len() < 20 << 20 {
        writeln!(header, "#define REG_{}_MASK 0x{:x}", i % 1000, i % 16).unwrap();
        i += 1;
    }
    header.extend_from_slice(b"needle_at_the_end\n");
    fs::write(root.join("regs.h"), &header).unwrap();
    // 17 MiB of bytes 1 to 255 (no NUL: text to rg), from a fixed seed.
    let mut r = Rng(23);
    let varied: Vec<u8> = (0..17 << 20).map(|_| 1 + r.below(255) as u8).collect();
    fs::write(root.join("varied.dat"), &varied).unwrap();

    let ix = open_indexed(&root);
    let grep = |p: &str| Call::Grep {
        pattern: p.into(),
        path: None,
        include: None,
    };
    check(
        env,
        &mut report,
        &ix,
        &grep("needle_at_the_end"),
        &root,
        "large",
    );
    check(env, &mut report, &ix, &grep("REG_999_MASK"), &root, "large");
    let before = ix.index.status().files_skipped;
    check(
        env,
        &mut report,
        &ix,
        &grep("zq_found_nowhere_77"),
        &root,
        "large",
    );
    let skipped = ix.index.status().files_skipped - before;
    // small.txt and regs.h ruled out; varied.dat searched.
    assert_eq!(skipped, 2, "{:?}", ix.index.status());
    report.finish();
}

/// A hard link's other names: an event names the one path it
/// came through, while the file, its bytes, its mtime and its link count
/// are every name's. Each case's tree is indexed, changed on the disk with
/// no call in between, then every call is compared with rg and must have
/// been answered by the index. The tree's other files are old (`Tree`
/// sets their mtimes), so glob's order by mtime shows a stale mtime.
#[test]
#[cfg(target_os = "linux")]
fn hard_links_are_followed_through_every_name() {
    watching(IndexWatch::Os, hard_links);
}

/// [`hard_links_are_followed_through_every_name`], validated at each call.
#[test]
fn hard_links_are_followed_through_every_name_validated() {
    watching(IndexWatch::None, hard_links);
}

fn hard_links() {
    let Some(env) = rg::env() else { return };
    type Change = fn(&Path) -> std::io::Result<()>;
    /// Links made before the index starts: `(existing, new name)`.
    type Before = &'static [(&'static str, &'static str)];
    // (name, links made before the index starts, the change)
    let cases: [(&str, Before, Change); 6] = [
        (
            "linked in its directory, written through the new name",
            &[],
            |r| {
                fs::hard_link(r.join("d/a.txt"), r.join("d/b.txt"))?;
                append_line(&r.join("d/b.txt"), "NEWSTUFF")
            },
        ),
        (
            "linked in its directory, written through the old name",
            &[],
            |r| {
                fs::hard_link(r.join("d/a.txt"), r.join("d/b.txt"))?;
                append_line(&r.join("d/a.txt"), "NEWSTUFF")
            },
        ),
        ("linked into another directory, written there", &[], |r| {
            fs::hard_link(r.join("d/a.txt"), r.join("e/b.txt"))?;
            append_line(&r.join("e/b.txt"), "NEWSTUFF")
        }),
        (
            "a pair linked before the start, appended through one name",
            &[("d/a.txt", "e/b.txt")],
            |r| append_line(&r.join("e/b.txt"), "NEWSTUFF"),
        ),
        (
            "a pair's other name removed, then written",
            &[("d/a.txt", "d/b.txt")],
            |r| {
                fs::remove_file(r.join("d/b.txt"))?;
                append_line(&r.join("d/a.txt"), "NEWSTUFF")
            },
        ),
        (
            "a pair's name renamed, then written through it",
            &[("d/a.txt", "d/b.txt")],
            |r| {
                fs::rename(r.join("d/b.txt"), r.join("e/c.txt"))?;
                append_line(&r.join("e/c.txt"), "NEWSTUFF")
            },
        ),
    ];
    let mut report = Report::new("index hard links");
    let calls = {
        let mut calls = calls();
        calls.push(Call::Grep {
            pattern: "NEWSTUFF".into(),
            path: None,
            include: None,
        });
        calls.push(Call::Glob {
            pattern: "**/*.txt".into(),
            path: None,
        });
        calls
    };
    for (name, before, change) in cases {
        let tree = Tree::build(&[
            file("d/a.txt", "old needle\n"),
            file("d/x.txt", "needle\n"),
            file("e/y.txt", "rare_token_here\n"),
        ]);
        let root = tree.root().to_path_buf();
        for (from, to) in before {
            fs::hard_link(root.join(from), root.join(to)).unwrap();
        }
        let ix = open_indexed(&root);
        check_all(env, &mut report, &ix, &root, &format!("{name}: before"));
        change(&root).unwrap();
        for call in &calls {
            let by_index = ix.index.status().answered_by_index;
            check(env, &mut report, &ix, call, &root, name);
            let narrowed = !matches!(call, Call::Grep { pattern, .. } if pattern == "\\w+");
            if narrowed && ix.index.status().answered_by_index != by_index + 1 {
                report.fail(format!("{name}: not answered by the index: {call:?}"));
            }
        }
    }
    report.finish();
}

/// An indexed workspace saving its index in `store`.
fn open_saved(root: &Path, store: &Path) -> Indexed {
    let ws = WorkspaceOptions::new(FsSpec::Local)
        .root(root)
        .index(true)
        .index_watch(WATCH.get())
        .index_store(Some(store.to_path_buf()))
        .open()
        .expect("an indexed workspace opens");
    let index = ws.index().expect("the index was asked for").clone();
    assert!(
        index.wait_ready(Duration::from_secs(60)),
        "{:?}",
        index.status()
    );
    let ix = Indexed {
        backend: ws.backend(&Config::default()),
        tools: ws.tools(Config::default(), None).expect("tools"),
        index,
    };
    assert_kept_as_asked(&ix);
    ix
}

/// The saved index is read and written only in a private store
/// (`docs/index.md`, "Restart without a rebuild"): a state directory or
/// store that is a link, another user's or writable by others is refused,
/// the index built from the tree and nothing written there; a saved file
/// that is a link, a FIFO or another user's is refused before it is read;
/// a link planted at the name the save used to write through is never
/// followed. Every case is answered from the mirror, as rg answers.
#[test]
#[cfg(target_os = "linux")]
fn a_saved_index_is_read_and_written_only_in_a_private_store() {
    use std::os::unix::fs::{chown, symlink};
    crate::util::require_root();
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("private store");
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    // The name of the saved file for this root, from a good save.
    let name = {
        let tmp = tempfile::tempdir().unwrap();
        let store = tmp.path().join("state/index");
        let ix = open_saved(&root, &store);
        assert!(
            ix.index.wait_saved(Duration::from_secs(60)),
            "{:?}",
            ix.index.status()
        );
        crate::util::saved_index(&store)
            .file_name()
            .unwrap()
            .to_owned()
    };
    let nobody = Some(65534);
    /// Spoils `<state>` and `<state>/index` (both exist, 0700); the third
    /// path is a file of root's that must stay as it is.
    type Spoil<'a> = Box<dyn Fn(&Path, &Path, &Path) + 'a>;
    struct Case<'a> {
        name: &'static str,
        spoil: Spoil<'a>,
        /// What `IndexStatus::saved` starts with, and holds.
        saved: (&'static str, &'static str),
        /// The build saves its mirror in the store afterwards.
        saves: bool,
    }
    let file_of = |store: &Path| store.join(&name);
    let cases = vec![
        Case {
            name: "a link planted at the old temporary name",
            spoil: Box::new(|_, store, victim| {
                let tmp = format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id());
                symlink(victim, store.join(tmp)).unwrap();
            }),
            saved: ("none", ""),
            saves: true,
        },
        Case {
            name: "a state directory of another user",
            spoil: Box::new(|state, store, victim| {
                let tmp = format!(".{}.{}.tmp", name.to_string_lossy(), std::process::id());
                symlink(victim, store.join(tmp)).unwrap();
                chown(state, nobody, nobody).unwrap();
            }),
            saved: ("refused: ", "owned by uid 65534, not by this user"),
            saves: false,
        },
        Case {
            name: "a state directory writable by others",
            spoil: Box::new(|state, _, _| {
                fs::set_permissions(state, fs::Permissions::from_mode(0o777)).unwrap()
            }),
            saved: ("refused: ", "writable by group or others (mode 777)"),
            saves: false,
        },
        Case {
            name: "a store of another user",
            spoil: Box::new(|_, store, _| chown(store, nobody, nobody).unwrap()),
            saved: ("refused: ", "owned by uid 65534"),
            saves: false,
        },
        Case {
            name: "a store that is a link",
            spoil: Box::new(|state, store, _| {
                let elsewhere = state.join("elsewhere");
                fs::rename(store, &elsewhere).unwrap();
                symlink(&elsewhere, store).unwrap();
            }),
            saved: ("refused: ", "a symbolic link, not a directory"),
            saves: false,
        },
        Case {
            name: "a FIFO for the saved file",
            spoil: Box::new(|_, store, _| {
                rustix::fs::mknodat(
                    rustix::fs::CWD,
                    file_of(store),
                    rustix::fs::FileType::Fifo,
                    rustix::fs::Mode::from_raw_mode(0o600),
                    0,
                )
                .unwrap()
            }),
            saved: ("ignored: ", "not a regular file (a FIFO)"),
            saves: true,
        },
        Case {
            name: "a link to /dev/zero for the saved file",
            spoil: Box::new(|_, store, _| symlink("/dev/zero", file_of(store)).unwrap()),
            saved: ("ignored: ", "a symbolic link, not a regular file"),
            saves: true,
        },
        Case {
            name: "a saved file of another user",
            spoil: Box::new(|_, store, _| {
                let file = file_of(store);
                fs::write(&file, b"DSHIDX\0\x01 of someone else").unwrap();
                fs::set_permissions(&file, fs::Permissions::from_mode(0o600)).unwrap();
                chown(&file, nobody, nobody).unwrap();
            }),
            saved: ("ignored: ", "owned by uid 65534"),
            saves: true,
        },
    ];
    for case in cases {
        let tmp = tempfile::tempdir().unwrap();
        let (state, store) = (tmp.path().join("state"), tmp.path().join("state/index"));
        fs::create_dir_all(&store).unwrap();
        for d in [&state, &store] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o700)).unwrap();
        }
        let victim = tmp.path().join("victim");
        fs::write(&victim, "root's own file\n").unwrap();
        (case.spoil)(&state, &store, &victim);
        let ws = WorkspaceOptions::new(FsSpec::Local)
            .root(&root)
            .index(true)
            .index_store(Some(store.clone()))
            .open()
            .expect("an indexed workspace opens");
        let index = ws.index().unwrap().clone();
        // A FIFO read whole blocks the build for ever.
        assert!(
            index.wait_ready(Duration::from_secs(60)),
            "{}: {:?}",
            case.name,
            index.status()
        );
        let saved_ok = index.wait_saved(Duration::from_secs(60));
        let s = index.status();
        let (prefix, holds) = case.saved;
        assert!(
            s.saved.starts_with(prefix) && s.saved.contains(holds),
            "{}: {s:?}",
            case.name
        );
        assert_eq!(
            fs::read(&victim).unwrap(),
            b"root's own file\n",
            "{}",
            case.name
        );
        assert!(saved_ok, "{}: {s:?}", case.name);
        let file = file_of(&store);
        let written = fs::symlink_metadata(&file).is_ok_and(|m| m.is_file() && m.len() > 100)
            && fs::read(&file).unwrap().starts_with(b"DSHIDX");
        assert_eq!(written, case.saves, "{}: {s:?}", case.name);
        let ix = Indexed {
            backend: ws.backend(&Config::default()),
            tools: ws.tools(Config::default(), None).expect("tools"),
            index,
        };
        check_all(env, &mut report, &ix, &root, case.name);
        assert_eq!(answer(&ix, &root), Answer::Index, "{}", case.name);
    }
    report.finish();
}

/// Restart without a rebuild: a workspace opened again on a
/// tree whose index was saved reads only the files that changed while
/// nothing watched (a rewrite that keeps the size and the mtime among
/// them: its ctime moved), and answers as rg does; a saved index that
/// cannot be used is ignored, said in the status, and the tree read whole.
#[test]
#[cfg(target_os = "linux")]
fn a_saved_index_restarts_reading_only_what_changed() {
    watching(IndexWatch::Os, restarts);
}

/// [`a_saved_index_restarts_reading_only_what_changed`], validated at each
/// call: the restart is the first validation.
#[test]
fn a_saved_index_restarts_reading_only_what_changed_validated() {
    watching(IndexWatch::None, restarts);
}

fn restarts() {
    let Some(env) = rg::env() else { return };
    let mut report = Report::new("index restart");
    let tree = small_tree();
    let root = tree.root().to_path_buf();
    if WATCH.get() == IndexWatch::None {
        // Validated, a file changed within the last 2 s is read again at
        // the next validation and saved without its metadata
        // (`validate.rs`: RECENT_NS): the tree made just now would be read
        // whole at the restart. Its changes below are then the only ones
        // to read.
        std::thread::sleep(Duration::from_millis(2100));
    }
    let store_dir = tempfile::tempdir().unwrap();
    let store = store_dir.path().join("index");
    let files = 4;
    let first = open_saved(&root, &store);
    let s = first.index.status();
    let saved = if cfg!(unix) { "none" } else { RESTARTED };
    assert_eq!((s.saved.as_str(), s.build_reads), (saved, files), "{s:?}");
    saved_before_restart(&store);
    #[cfg(unix)]
    {
        let file = crate::util::saved_index(&store);
        assert_eq!((mode(&store), mode(&file)), (0o700, 0o600));
    }
    drop(first);

    // Changed while nothing watched: appended, rewritten keeping its size
    // and mtime (`nothing\n` → `zzzfound`), created, deleted.
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(root.join("a.rs"))
        .unwrap();
    writeln!(f, "appended_token").unwrap();
    drop(f);
    let c = root.join("src/deep/c.md");
    let mtime = fs::metadata(&c).unwrap().modified().unwrap();
    let mut f = fs::OpenOptions::new().write(true).open(&c).unwrap();
    f.write_all(b"zzzfound").unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    fs::write(root.join("docs/new.txt"), "needle new\n").unwrap();
    fs::remove_file(root.join("docs/d.txt")).unwrap();

    let again = open_saved(&root, &store);
    let s = again.index.status();
    // Only the 3 files changed; on Windows, with nothing saved, all 4.
    let reads = if cfg!(unix) { 3 } else { 4 };
    assert_eq!(
        (s.saved.as_str(), s.build_reads),
        (RESTARTED, reads),
        "{s:?}"
    );
    let grep = |p: &str| Call::Grep {
        pattern: p.into(),
        path: None,
        include: None,
    };
    for call in calls()
        .into_iter()
        .chain([grep("zzzfound"), grep("appended_token")])
    {
        check(env, &mut report, &again, &call, &root, "restarted");
    }
    assert_eq!(answer(&again, &root), Answer::Index);
    drop(again);
    #[cfg(unix)]
    spoiled_saves(env, &mut report, &root, store_dir.path());
    report.finish();
}

/// The mode of `p`'s permissions.
#[cfg(unix)]
fn mode(p: &Path) -> u32 {
    fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// What cannot be used is ignored, and the tree read whole: each case
/// changes the saved file of the tree at `root`, saved in `store_dir`'s
/// `index`, then the workspace is opened again.
#[cfg(unix)]
fn spoiled_saves(env: &Env, report: &mut Report, root: &Path, store_dir: &Path) {
    let store = store_dir.join("index");
    let good = fs::read(crate::util::saved_index(&store)).unwrap();
    let other = small_tree();
    let other_store = store_dir.join("other");
    drop(open_saved(other.root(), &other_store));
    let foreign = fs::read(crate::util::saved_index(&other_store)).unwrap();
    type Spoil<'a> = Box<dyn Fn(&Path) + 'a>;
    let cases: Vec<(&str, Spoil, &str)> = vec![
        (
            "truncated",
            Box::new(|p: &Path| fs::write(p, &good[..good.len() / 3]).unwrap()),
            "checksum",
        ),
        (
            "a byte flipped",
            Box::new(|p: &Path| {
                let mut b = good.clone();
                b[good.len() / 2] ^= 0x40;
                fs::write(p, b).unwrap()
            }),
            "checksum",
        ),
        (
            "another root's",
            Box::new(|p: &Path| fs::write(p, &foreign).unwrap()),
            "of another root",
        ),
        (
            "not a saved index",
            Box::new(|p: &Path| fs::write(p, "hello, a text file of no index\n").unwrap()),
            "not a saved index",
        ),
        (
            "writable by others",
            Box::new(|p: &Path| {
                fs::write(p, &good).unwrap();
                fs::set_permissions(p, fs::Permissions::from_mode(0o666)).unwrap();
            }),
            "writable by group or others",
        ),
    ];
    let files_now = 4;
    for (name, spoil, why) in cases {
        let file = crate::util::saved_index(&store);
        spoil(&file);
        let ix = open_saved(root, &store);
        let s = ix.index.status();
        assert!(
            s.saved.starts_with("ignored: ") && s.saved.contains(why),
            "{name}: {s:?}"
        );
        assert_eq!(s.build_reads, files_now, "{name}: {s:?}");
        check_all(env, report, &ix, root, name);
        assert_eq!(answer(&ix, root), Answer::Index, "{name}");
        // The build saved a good one again, private.
        let file = crate::util::saved_index(&store);
        for _ in 0..600 {
            if mode(&file) == 0o600 && fs::read(&file).unwrap().len() > 100 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
