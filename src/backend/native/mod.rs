//! The in-process engine: rg 15.2.0's two invocations (`contract.md` §2)
//! rebuilt from ripgrep's own crates, configured as `crates/core/flags/
//! hiargs.rs` configures them (`rg-semantics.md` §10).
//!
//! The engine is generic over the workspace's [`FileSystem`] with its
//! hints ([`FsHints`]; the seam, `docs/contract.md` §10): every stat, listing, ignore file and read goes
//! through it, so the same walk searches the local disk (monomorphized with
//! its descriptor fast path), a tree in memory or an overlay.
//!
//! The engine never reads or changes the process's current directory: the
//! workdir is taken as rg's `getcwd` reports it (the real path; on Windows
//! the path as given) and every relative path is walked
//! as an absolute one that rg's matchers see the same way (the `paths` module).
//!
//! The modules, in the order a call goes through them:
//!
//! - `engine`: the settings a backend searches with and what it keeps
//!   between calls (its pool of threads, the compiled ignore files, spare
//!   buffers), one process default shared unless a backend is given its
//!   own.
//! - Both invocations: `paths` (the typed path, the absolute path walked
//!   for it, and what rg prints for each entry), `overrides` (the override
//!   globs of both invocations, and glob's filter on them) and `globstack`
//!   (a stack deep enough to compile any glob on).
//! - glob: `glob` (the invocation: one walk whatever the root) over
//!   `parallel_walk` (every directory below the root listed in parallel on
//!   the engine's pool, then the files sorted into rg's `--sort=modified`
//!   order).
//! - grep: `grep` (the invocation: one walk whatever the root, and the
//!   outcome), `worker` (the call's state shared between its threads, and
//!   the search of one file by one thread), `schedule` (a directory's files
//!   shared out in batches between the walking thread and the pool's:
//!   `grep` starts it, and it searches through `worker`), over `serial_walk`
//!   (the tree walked depth-first on the calling thread, each directory
//!   listed once) and `rgignore` (rg's ignore decisions on rg's path
//!   strings); then `reader` (reading a file, and the whole-file check that
//!   spares most files the searcher), `explicit` (the one explicit file,
//!   searched as rg searches its memory map), `matcher` (the regex and the
//!   searcher as rg configures them) and `sink` (the searcher's results as
//!   typed `--json` events).
//! - `messages`: rg's stderr texts, and which of them make it exit 2.

mod engine;
pub use engine::{
    set_helper_delay, set_search_threads, set_search_threads_from_env, Engine, EngineBuilder,
};

mod globstack;
mod overrides;
mod paths;

mod glob;
mod parallel_walk;

mod explicit;
mod grep;
mod kept;
pub(crate) use kept::{Keeper, Walked};
pub(crate) use rgignore::Outside;
mod matcher;
pub(crate) use matcher::parse as parse_pattern;
mod reader;
mod rgignore;
mod schedule;
mod serial_walk;
mod sink;
mod worker;

mod messages;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::backend::SearchBackend;
use crate::cancel::CancelToken;
use crate::fs::{errno, FsHints, LocalFs, Metadata};
use crate::outcome::{GlobResults, GrepResults, Outcome, Status};
use crate::request::{GlobRequest, GrepRequest};

/// The in-process engine built on ripgrep's crates, searching the
/// workspace's filesystem `F` (by default the local disk) with an
/// [`Engine`]'s threads and settings (by default the process's,
/// [`Engine::process_default`]).
pub struct NativeBackend<F: FsHints = LocalFs> {
    fs: Arc<F>,
    engine: Engine,
}

impl NativeBackend {
    /// A native backend on the local disk.
    pub fn new() -> NativeBackend {
        NativeBackend::on(Arc::new(LocalFs::new()))
    }
}

impl Default for NativeBackend {
    fn default() -> NativeBackend {
        NativeBackend::new()
    }
}

impl<F: FsHints> NativeBackend<F> {
    /// A native backend searching `fs`.
    pub fn on(fs: Arc<F>) -> NativeBackend<F> {
        NativeBackend {
            fs,
            engine: engine::process().clone(),
        }
    }

    /// The backend searching with `engine`'s threads and settings instead.
    /// By default, [`Engine::process_default`].
    pub fn with_engine(mut self, engine: Engine) -> NativeBackend<F> {
        self.engine = engine;
        self
    }

    /// The filesystem it searches.
    pub fn filesystem(&self) -> &Arc<F> {
        &self.fs
    }

    /// The engine it searches with.
    pub fn engine(&self) -> &Engine {
        &self.engine
    }

    /// [`SearchBackend::grep`], with rg's stdout handed to `out` as the
    /// search makes it instead of kept in the outcome (whose results are
    /// then empty): each file's lines when its search ends, in the order
    /// the files end (rg's own order is the same kind: nondeterministic),
    /// then the summary. The memory a search holds is then its files' in
    /// progress, not its output. `out` is called by one thread at a time,
    /// and not at all for a run that does not exit ([`Status::exit_code`]).
    pub fn grep_streaming(
        &self,
        req: &GrepRequest,
        out: &(dyn Fn(&[u8]) + Sync),
    ) -> Outcome<GrepResults> {
        grep::run_streaming(&*self.fs, &self.engine, req, out)
    }
}

impl<F: FsHints> Clone for NativeBackend<F> {
    fn clone(&self) -> Self {
        NativeBackend {
            fs: self.fs.clone(),
            engine: self.engine.clone(),
        }
    }
}

impl<F: FsHints> std::fmt::Debug for NativeBackend<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NativeBackend")
            .field("fs", &std::any::type_name::<F>())
            .field("engine", &self.engine)
            .finish()
    }
}

impl<F: FsHints> SearchBackend for NativeBackend<F> {
    fn name(&self) -> &'static str {
        "native"
    }

    /// It searches the filesystem it was built over (`NativeBackend::on`).
    fn searches_local_disk(&self) -> bool {
        false
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        glob::run(&*self.fs, &self.engine, req)
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        grep::run(&*self.fs, &self.engine, req)
    }
}

/// [`SearchBackend::grep`] on `fs`, which keeps walks between calls
/// (the index's view: `kept.rs`).
pub(crate) fn grep_kept<F: FsHints, K: Keeper<F>>(
    fs: &F,
    engine: &Engine,
    req: &GrepRequest,
    keeper: &K,
) -> Outcome<GrepResults> {
    grep::run_kept(fs, engine, req, keeper)
}

/// The workdir as rg's `getcwd` (Windows: `GetCurrentDirectoryW`) would
/// report it ([`FileSystem::current_dir`]), or why rg could not start
/// there (the rg backend cannot spawn a process in it either).
fn canonical_workdir<F: FsHints>(fs: &F, workdir: &Path) -> Result<PathBuf, String> {
    let real_workdir = fs
        .current_dir(workdir)
        .map_err(|e| format!("workdir {}: {e}", workdir.display()))?;
    if !fs.metadata(&real_workdir).is_ok_and(|m| m.kind.is_dir()) {
        return Err(format!("workdir {}: not a directory", workdir.display()));
    }
    Ok(real_workdir)
}

/// The root's metadata, links followed, as rg's walkers take it
/// (`DirEntryRaw::from_path`, walkdir's root with `follow_root_links`).
/// The empty path names nothing (ENOENT), without asking the filesystem.
fn stat_root<F: FsHints>(fs: &F, root: &paths::Root) -> std::io::Result<Metadata> {
    let path = root.walk_path();
    if path.as_os_str().is_empty() {
        return Err(errno::not_found());
    }
    fs.metadata(path)
}

/// What the launch failure says when an argument holds a NUL (see
/// `GlobRequest::nul_argument`): rg could not be started with it.
fn nul_launch_failure(name: &str) -> String {
    format!("{name} contains a NUL byte")
}

/// How many short steps go between two looks at the cancellation
/// ([`Budget::stopped_at`]): microseconds.
const CANCEL_EVERY: usize = 64;

/// The raw-output budget and the cancellation flag, shared by every thread
/// of one call: whichever trips first stops all work.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: Option<u64>,
    used: AtomicU64,
    over: AtomicBool,
    cancel: CancelToken,
}

impl Budget {
    fn new(limit: Option<u64>, cancel: CancelToken) -> Budget {
        Budget {
            limit,
            used: AtomicU64::new(0),
            over: AtomicBool::new(false),
            cancel,
        }
    }

    /// Count `n` more stdout bytes. False once the budget is crossed (the
    /// callers look at the cancellation where they stop anyway:
    /// [`Budget::stopped_at`]).
    pub(crate) fn spend(&self, n: u64) -> bool {
        let total = self.used.fetch_add(n, Ordering::Relaxed) + n;
        if let Some(limit) = self.limit {
            if total > limit {
                self.over.store(true, Ordering::Relaxed);
            }
        }
        !self.over.load(Ordering::Relaxed)
    }

    /// Whether `n` more bytes would stay within the budget.
    pub(crate) fn fits(&self, n: u64) -> bool {
        self.limit
            .is_none_or(|limit| self.used.load(Ordering::Relaxed).saturating_add(n) <= limit)
    }

    /// Whether work must stop now.
    pub(crate) fn stopped(&self) -> bool {
        self.over.load(Ordering::Relaxed) || self.cancel.is_cancelled()
    }

    /// [`Budget::stopped`] for the `i`-th step of a loop of short steps
    /// (a directory's entries, a file's matches): the budget at every step,
    /// the cancellation every [`CANCEL_EVERY`] steps: a call with a deadline
    /// reads the clock each time it asks (`CancelToken::is_cancelled`),
    /// which costs more than most steps.
    pub(crate) fn stopped_at(&self, i: usize) -> bool {
        self.over.load(Ordering::Relaxed)
            || (i.is_multiple_of(CANCEL_EVERY) && self.cancel.is_cancelled())
    }

    pub(crate) fn cancel(&self) -> &CancelToken {
        &self.cancel
    }

    /// The status of a call that ran to its end with `exit` as rg's code.
    fn status(&self, exit: i32) -> Status {
        if self.cancel.is_cancelled() {
            Status::Cancelled
        } else if self.over.load(Ordering::Relaxed) {
            Status::OverBudget
        } else {
            Status::Exited(exit)
        }
    }
}

/// `main.rs: run`: 0 when something matched and nothing failed.
fn exit_code(matched: bool, errored: bool) -> i32 {
    if matched && !errored {
        0
    } else if errored {
        2
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    //! Expected texts below were produced by rg 15.2.0 by hand on the same
    //! trees (`rg --no-config --json --regexp=… </dev/null` in a temp dir),
    //! with the varying `elapsed` objects masked.

    use std::fs;
    use std::path::Path;

    use super::*;
    use crate::event::Event;

    fn tree() -> tempfile::TempDir {
        let td = tempfile::tempdir().unwrap();
        let p = td.path();
        fs::create_dir(p.join("sub")).unwrap();
        fs::write(p.join("a.txt"), "hello\nworld hello\n").unwrap();
        fs::write(p.join("sub/b.rs"), "hello\r\n").unwrap();
        fs::write(p.join(".hidden"), "hello\n").unwrap();
        fs::write(p.join("c.txt"), "abc").unwrap();
        td
    }

    fn raw(o: &Outcome<GrepResults>) -> String {
        let mut out = Vec::new();
        o.results.write_raw(&mut out).unwrap();
        masked(out)
    }

    /// rg's stdout with its `"elapsed…":{…}` objects masked.
    fn masked(out: Vec<u8>) -> String {
        let s = String::from_utf8(out).unwrap();
        let mut masked = String::new();
        // Mask `"elapsed…":{…}` objects.
        let mut rest = s.as_str();
        while let Some(i) = rest.find("\"elapsed") {
            let j = rest[i..].find('{').unwrap() + i;
            let k = rest[j..].find('}').unwrap() + j;
            masked.push_str(&rest[..i]);
            masked.push('E');
            rest = &rest[k + 1..];
        }
        masked.push_str(rest);
        masked
    }

    fn grep(dir: &Path, pat: &str, path: Option<&str>) -> Outcome<GrepResults> {
        let mut r = GrepRequest::new(pat, dir);
        r.path = path.map(Into::into);
        NativeBackend::new().grep(&r)
    }

    #[test]
    fn grep_tree_matches_rg() {
        let td = tree();
        let o = grep(td.path(), "hello", None);
        assert_eq!(o.status, Status::Exited(0));
        assert!(o.stderr.is_empty());
        assert_eq!(
            raw(&o),
            r#"{"type":"begin","data":{"path":{"text":"a.txt"}}}
{"type":"match","data":{"path":{"text":"a.txt"},"lines":{"text":"hello\n"},"line_number":1,"absolute_offset":0,"submatches":[{"match":{"text":"hello"},"start":0,"end":5}]}}
{"type":"match","data":{"path":{"text":"a.txt"},"lines":{"text":"world hello\n"},"line_number":2,"absolute_offset":6,"submatches":[{"match":{"text":"hello"},"start":6,"end":11}]}}
{"type":"end","data":{"path":{"text":"a.txt"},"binary_offset":null,"stats":{E,"searches":1,"searches_with_match":1,"bytes_searched":18,"bytes_printed":403,"matched_lines":2,"matches":2}}}
{"type":"begin","data":{"path":{"text":"sub/b.rs"}}}
{"type":"match","data":{"path":{"text":"sub/b.rs"},"lines":{"text":"hello\r\n"},"line_number":1,"absolute_offset":0,"submatches":[{"match":{"text":"hello"},"start":0,"end":5}]}}
{"type":"end","data":{"path":{"text":"sub/b.rs"},"binary_offset":null,"stats":{E,"searches":1,"searches_with_match":1,"bytes_searched":7,"bytes_printed":231,"matched_lines":1,"matches":1}}}
{"data":{E,"stats":{"bytes_printed":634,"bytes_searched":28,E,"matched_lines":3,"matches":3,"searches":3,"searches_with_match":2}},"type":"summary"}
"#
        );
    }

    /// Each file's lines (`begin`…`end`), sorted, then the summary: what
    /// is the same in two runs whose files ended in different orders.
    fn blocks(out: &str) -> Vec<String> {
        let mut blocks = Vec::new();
        let mut block = String::new();
        for line in out.lines() {
            block.push_str(line);
            block.push('\n');
            if !line.starts_with(r#"{"type":"begin""#) && !line.starts_with(r#"{"type":"match""#) {
                blocks.push(std::mem::take(&mut block));
            }
        }
        assert!(block.is_empty(), "an unfinished block: {block}");
        let summary = blocks.pop();
        blocks.sort();
        blocks.extend(summary);
        blocks
    }

    #[test]
    fn grep_streaming_hands_over_what_grep_keeps() {
        let td = tree();
        let cases = [
            ("hello", None, None),
            ("hello", Some("sub"), None),
            ("hello", None, Some("*.rs")),
            ("nothing", None, None),
            ("hello", Some("missing"), None),
            ("(", None, None),
            ("hello", Some("a.txt"), None),
        ];
        for (pattern, path, include) in cases {
            let mut r = GrepRequest::new(pattern, td.path());
            r.path = path.map(Into::into);
            r.include = include.map(str::to_string);
            let kept = NativeBackend::new().grep(&r);
            let out = std::sync::Mutex::new(Vec::new());
            let streamed = NativeBackend::new()
                .grep_streaming(&r, &|b: &[u8]| out.lock().unwrap().extend_from_slice(b));
            let label = format!("{pattern:?} {path:?} {include:?}");
            assert_eq!(streamed.status, kept.status, "{label}");
            assert_eq!(streamed.stderr, kept.stderr, "{label}");
            assert!(streamed.results.events.is_empty(), "{label}");
            let streamed = masked(out.into_inner().unwrap());
            assert_eq!(blocks(&streamed), blocks(&raw(&kept)), "{label}");
        }
    }

    #[test]
    fn empty_match_at_end_of_unterminated_line_is_dropped() {
        let td = tree();
        let o = grep(td.path(), "$", Some("c.txt"));
        let m = o.results.matches().next().unwrap();
        assert_eq!(&*m.lines, b"abc");
        assert!(m.submatches.is_empty());
    }

    #[test]
    fn nothing_searched_only_for_implicit_path() {
        let td = tree();
        let mut r = GrepRequest::new("x", td.path()).include("*.zz");
        let o = NativeBackend::new().grep(&r);
        assert_eq!(o.status, Status::Exited(2));
        assert_eq!(
            o.stderr,
            vec![
                "rg: No files were searched, which means ripgrep probably applied a filter you didn't expect.",
                "Running with --debug will show why files are being skipped.",
            ]
        );
        assert!(matches!(o.results.events.last(), Some(Event::Summary(_))));
        r.path = Some(".".into());
        assert_eq!(NativeBackend::new().grep(&r).status, Status::Exited(1));
    }

    #[test]
    fn argument_errors() {
        let td = tree();
        let o = grep(td.path(), "a(", None);
        assert_eq!(o.status, Status::Exited(2));
        assert_eq!(
            o.stderr,
            vec![
                "rg: regex parse error:",
                "    (?:a()",
                "    ^",
                "error: unclosed group"
            ]
        );
        assert!(o.results.events.is_empty());
        // The glob error wins over the regex error (rg-semantics §9.1).
        let r = GrepRequest::new("a(", td.path()).include("[a");
        let o = NativeBackend::new().grep(&r);
        assert_eq!(
            o.stderr,
            vec!["rg: error parsing glob '[a': unclosed character class; missing ']'"]
        );
        let o = grep(td.path(), "a\nb", None);
        assert_eq!(
            o.stderr[0],
            "rg: the literal \"\\n\" is not allowed in a regex"
        );
        assert_eq!(o.stderr.len(), 4);
    }

    #[test]
    fn missing_path_uses_sequential_wording() {
        let td = tree();
        let o = grep(td.path(), "x", Some("nope"));
        assert_eq!(o.status, Status::Exited(2));
        assert_eq!(
            o.stderr,
            vec![
                "rg: nope: IO error for operation on nope: No such file or directory (os error 2)"
            ]
        );
        let mut r = GlobRequest::new("*.rs", td.path());
        r.path = Some("nope".into());
        let o = NativeBackend::new().glob(&r);
        assert_eq!(
            o.stderr,
            vec![
                "rg: nope: IO error for operation on nope: No such file or directory (os error 2)"
            ]
        );
        assert_eq!(o.status, Status::Exited(2));
    }

    #[test]
    fn glob_lists_hidden_and_sorts_by_mtime() {
        let td = tree();
        let p = td.path();
        let t = |secs| std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        for (name, secs) in [
            ("a.txt", 30),
            ("sub/b.rs", 10),
            (".hidden", 20),
            ("c.txt", 40),
        ] {
            fs::File::options()
                .write(true)
                .open(p.join(name))
                .unwrap()
                .set_modified(t(secs))
                .unwrap();
        }
        let o = NativeBackend::new().glob(&GlobRequest::new("*", p));
        assert_eq!(o.status, Status::Exited(0));
        assert_eq!(
            o.results.files,
            vec![
                b"sub/b.rs".to_vec(),
                b".hidden".to_vec(),
                b"a.txt".to_vec(),
                b"c.txt".to_vec()
            ]
        );
        let mut r = GlobRequest::new("*", p);
        r.path = Some("./".into());
        let o = NativeBackend::new().glob(&r);
        assert_eq!(o.results.files[0], b"./sub/b.rs");
    }

    #[test]
    fn unusable_workdir_fails_to_launch() {
        let o = NativeBackend::new().glob(&GlobRequest::new("*", "/nonexistent/dir"));
        assert!(matches!(o.status, Status::LaunchFailed(_)));
    }

    #[test]
    fn over_budget_stops() {
        let td = tree();
        let mut r = GlobRequest::new("*", td.path());
        r.raw_budget = Some(5);
        assert_eq!(NativeBackend::new().glob(&r).status, Status::OverBudget);
        let mut r = GrepRequest::new("hello", td.path());
        r.raw_budget = Some(100);
        assert_eq!(NativeBackend::new().grep(&r).status, Status::OverBudget);
    }

    #[test]
    fn cancelled_before_start() {
        let td = tree();
        let r = GrepRequest::new("hello", td.path());
        r.cancel.cancel();
        assert_eq!(NativeBackend::new().grep(&r).status, Status::Cancelled);
    }

    /// rg blocks on a FIFO until a writer appears (W7); we must too, and
    /// must stop when cancelled.
    #[test]
    fn fifo_waits_for_writer_and_ends_when_cancelled() {
        let td = tree();
        let fifo = td.path().join("ff");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
        )
        .unwrap();
        let r = GrepRequest::new("hello", td.path()).path("ff");
        let cancel = r.cancel.clone();
        let waiter = std::thread::spawn(move || NativeBackend::new().grep(&r));
        std::thread::sleep(std::time::Duration::from_millis(200));
        cancel.cancel();
        assert_eq!(waiter.join().unwrap().status, Status::Cancelled);

        let r = GrepRequest::new("hello", td.path()).path("ff");
        let writer = std::thread::spawn(move || fs::write(fifo, "x\nhello\n").unwrap());
        let o = NativeBackend::new().grep(&r);
        writer.join().unwrap();
        assert_eq!(o.status, Status::Exited(0));
        let m = o.results.matches().next().unwrap();
        assert_eq!((m.line_number, m.absolute_offset), (2, 2));
    }

    /// A FIFO where an ignore file or a `.git` file is expected is read as
    /// absent instead of blocking the walk in `open(2)` forever (rg itself
    /// would wait for a writer; nothing could cancel this process's wait).
    #[test]
    fn fifo_ignore_files_do_not_block() {
        let td = tempfile::tempdir().unwrap();
        let p = td.path().to_path_buf();
        fs::create_dir_all(p.join("sub")).unwrap();
        fs::write(p.join("a.txt"), "needle\n").unwrap();
        fs::write(p.join("sub/b.txt"), "needle\n").unwrap();
        for fifo in [".gitignore", ".ignore", "sub/.rgignore", "sub/.git"] {
            let ok = std::process::Command::new("mkfifo")
                .arg(p.join(fifo))
                .status()
                .unwrap()
                .success();
            assert!(ok, "mkfifo {fifo}");
        }
        // The directory walk, and an explicit file below FIFO ignore files
        // (the sequential walker reads its parents' ignore files).
        for (path, want) in [
            (None, vec![b"a.txt".to_vec(), b"sub/b.txt".to_vec()]),
            (Some("sub/b.txt"), vec![b"sub/b.txt".to_vec()]),
        ] {
            let (tx, rx) = std::sync::mpsc::channel();
            let mut req = GrepRequest::new("needle", &p);
            req.path = path.map(Into::into);
            std::thread::spawn(move || tx.send(NativeBackend::new().grep(&req)).unwrap());
            // A guard against a hang, not a timed assertion.
            let o = rx
                .recv_timeout(std::time::Duration::from_secs(60))
                .unwrap_or_else(|_| panic!("grep {path:?} blocked on a FIFO ignore file"));
            assert_eq!(o.status, Status::Exited(0), "{path:?}");
            let paths: Vec<_> = o.results.matches().map(|m| m.path.to_vec()).collect();
            assert_eq!(paths, want, "{path:?}");
        }
    }
}
