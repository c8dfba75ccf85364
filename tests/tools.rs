//! The glob and grep tools on both real backends: the seed's integration
//! cases (`seed-reference.md` §8.1, `integration.spec.ts`), hostile inputs
//! that must never become flags or shell code, timeout and cancellation.
//! Every behaviour runs on the native engine and on a real rg (found via
//! `DSH_SEARCH_RG`, else `PATH`); expected texts were checked against rg
//! 15.2.0 by hand.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_search::config::Config;
use dsh_search::tool::{CallContext, ToolResult, Tools};
use dsh_search::SearchBackend;
use serde_json::{json, Value};

use crate::util::fs::TestFs;
use crate::util::ws::Ws;

/// Write `rel` in the workdir (parents created), with its mtime at `secs`
/// after the epoch when given.
fn put(ws: &Ws, rel: &str, content: &str, secs: Option<u64>) {
    ws.file(rel, content);
    if let Some(s) = secs {
        ws.set_mtime(rel, s);
    }
}

fn backend(name: &str) -> Arc<dyn SearchBackend> {
    match name {
        "native" => Arc::new(crate::util::rg::native()),
        _ => Arc::new(crate::util::rg::reference_backend()),
    }
}

fn tools_with(name: &str, config: Config) -> Tools {
    Tools::new(config, backend(name))
}

fn tools(name: &str) -> Tools {
    let mut c = Config::default();
    c.spill.max_inline_bytes = None;
    tools_with(name, c)
}

/// Run one body on each backend: `backend_test!(name, |ws, b| { … })`,
/// where `b` is the backend's name (`native` or `rg`).
macro_rules! backend_test {
    ($name:ident, |$ws:ident, $b:ident| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            fn run($ws: Ws, $b: &str) $body

            #[test]
            fn native() {
                run(Ws::new(), "native");
            }

            #[test]
            fn rg() {
                run(Ws::new(), "rg");
            }
        }
    };
}

fn call(ws: &Ws, b: &str, tool: &str, args: Value) -> ToolResult {
    tools(b).call(tool, &args, &ws.session("s1"))
}

fn code(r: &ToolResult) -> Option<String> {
    r.error
        .as_ref()
        .and_then(|e| e.info.as_ref())
        .map(|i| i.code.clone())
}

/// The seed's integration fixture, with every mtime pinned so the glob
/// order is exact.
fn fixture(ws: &Ws) {
    put(
        ws,
        "src/alpha.ts",
        "export const alpha = 1;\n// alpha again\n",
        Some(2000),
    );
    put(ws, "src/beta.ts", "export const beta = 2;\n", Some(2020));
    put(ws, "notes.md", "alpha appears here too\n", Some(2030));
    put(ws, ".hidden.ts", "hidden\n", Some(2040));
    put(ws, ".git/config.ts", "alpha in git\n", Some(2050));
    put(ws, "spaced dir/wei'rd name.ts", "weird\n", Some(2060));
}

backend_test!(glob_lists_hidden_in_mtime_order_without_vcs, |ws, b| {
    fixture(&ws);
    let r = call(&ws, b, "glob", json!({"pattern": "**/*.ts"}));
    assert_eq!(
        r.content,
        "src/alpha.ts\nsrc/beta.ts\n.hidden.ts\nspaced dir/wei'rd name.ts"
    );
    assert_eq!(
        r.value.unwrap(),
        json!({"root": ".", "paths": ["src/alpha.ts", "src/beta.ts", ".hidden.ts", "spaced dir/wei'rd name.ts"]})
    );
});

backend_test!(glob_scopes_and_empties, |ws, b| {
    fixture(&ws);
    let r = call(&ws, b, "glob", json!({"pattern": "*.ts", "path": "src"}));
    assert_eq!(r.content, "src/alpha.ts\nsrc/beta.ts");
    assert_eq!(
        call(&ws, b, "glob", json!({"pattern": "*.nomatch"})).content,
        "No files found"
    );
    assert_eq!(
        call(&ws, b, "glob", json!({"pattern": "*", "path": ".git"})).content,
        "No files found"
    );
    // An absolute path inside the workdir displays relative.
    let abs = ws.path().join("src").to_str().unwrap().to_string();
    let r = call(&ws, b, "glob", json!({"pattern": "*.ts", "path": abs}));
    assert_eq!(r.content, "src/alpha.ts\nsrc/beta.ts");
    assert_eq!(r.value.unwrap()["root"], "src");
    // An explicitly named file is listed whatever the pattern.
    assert_eq!(
        call(
            &ws,
            b,
            "glob",
            json!({"pattern": "*.ts", "path": "notes.md"})
        )
        .content,
        "notes.md"
    );
});

backend_test!(glob_invalid_pattern, |ws, b| {
    fixture(&ws);
    let r = call(&ws, b, "glob", json!({"pattern": "["}));
    assert_eq!(
        r.content,
        "Error: glob pattern rejected by ripgrep: rg: error parsing glob '[': unclosed character class; missing ']'"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_INVALID_PATTERN"));
});

backend_test!(grep_groups_matches, |ws, b| {
    fixture(&ws);
    let r = call(&ws, b, "grep", json!({"pattern": "alpha"}));
    // .git is hidden, so grep skips it; files in display-path order.
    assert_eq!(
        r.content,
        "Found 3 matches\n\nnotes.md\nLine 1: alpha appears here too\n\nsrc/alpha.ts\nLine 1: export const alpha = 1;\nLine 2: // alpha again"
    );
    let r = call(
        &ws,
        b,
        "grep",
        json!({"pattern": "alpha", "path": "notes.md"}),
    );
    assert_eq!(
        r.content,
        "Found 1 match\n\nnotes.md\nLine 1: alpha appears here too"
    );
    let r = call(
        &ws,
        b,
        "grep",
        json!({"pattern": "alpha", "include": "*.md"}),
    );
    assert_eq!(
        r.content,
        "Found 1 match\n\nnotes.md\nLine 1: alpha appears here too"
    );
});

backend_test!(grep_errors, |ws, b| {
    fixture(&ws);
    let r = call(&ws, b, "grep", json!({"pattern": "(unclosed"}));
    assert_eq!(
        r.content,
        "Error: grep pattern rejected by ripgrep: rg: regex parse error:\n    (?:(unclosed)\n    ^\nerror: unclosed group"
    );
    let r = call(&ws, b, "grep", json!({"pattern": "x", "include": "{a"}));
    assert_eq!(
        r.content,
        "Error: grep pattern rejected by ripgrep: rg: error parsing glob '{a': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)"
    );
    let r = call(&ws, b, "grep", json!({"pattern": "x", "path": "nonexist"}));
    assert_eq!(
        r.content,
        "Error: grep search failed (exit 2): rg: nonexist: IO error for operation on nonexist: No such file or directory (os error 2)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_FAILED"));
});

backend_test!(unusable_workdir_cannot_start, |ws, b| {
    let gone = ws.path().join("deleted");
    std::fs::create_dir(&gone).unwrap();
    std::fs::remove_dir(&gone).unwrap();
    let ctx = CallContext::new(&gone);
    let r = tools(b).call("grep", &json!({"pattern": "x"}), &ctx);
    assert_eq!(
        r.content,
        "Error: grep could not start its search command (ripgrep launch failed)"
    );
    let r = tools(b).call("glob", &json!({"pattern": "*"}), &ctx);
    assert_eq!(
        r.content,
        "Error: glob could not start its search command (ripgrep launch failed)"
    );
});

/// Values that a shell or an option parser would interpret.
const HOSTILE: &[&str] = &[
    "$(touch pwned)",
    "`touch pwned`",
    "\"double quoted\" and spaces",
    "it's",
    "line\nbreak",
    "--flag",
    "-e",
    "--files",
    "--pre=touch",
    ";touch pwned;",
    "$HOME and ${PATH}",
    "a|b && c",
    ">redirect <input 2>&1",
];

backend_test!(hostile_patterns_are_plain_patterns, |ws, b| {
    put(&ws, "haystack.txt", "nothing to see\n", None);
    for p in HOSTILE {
        let r = call(&ws, b, "glob", json!({"pattern": p}));
        assert_eq!(r.content, "No files found", "{p:?}");
        let r = call(&ws, b, "grep", json!({"pattern": p}));
        let want = match *p {
            "line\nbreak" => "Error: grep search failed (exit 2): rg: the literal \"\\n\" is not allowed in a regex\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\nWhen multiline mode is enabled, new line characters can be matched.",
            "$HOME and ${PATH}" => "Error: grep pattern rejected by ripgrep: rg: regex parse error:\n    (?:$HOME and ${PATH})\n                   ^\nerror: repetition quantifier expects a valid decimal",
            _ => "No matches found",
        };
        assert_eq!(r.content, want, "{p:?}");
    }
    assert!(!ws.exists("pwned"));
    // A pattern that looks like a flag is searched for.
    put(&ws, "flags.txt", "call with --flag here\n", None);
    let r = call(&ws, b, "grep", json!({"pattern": "--flag"}));
    assert_eq!(
        r.content,
        "Found 1 match\n\nflags.txt\nLine 1: call with --flag here"
    );
});

backend_test!(hostile_paths_are_plain_paths, |ws, b| {
    for name in ["-leading-dash", "--files", "$(touch pwned)", "it's", "a b"] {
        put(&ws, &format!("{name}/hit.txt"), "needle\n", None);
        let r = call(&ws, b, "grep", json!({"pattern": "needle", "path": name}));
        assert_eq!(
            r.content,
            format!("Found 1 match\n\n{name}/hit.txt\nLine 1: needle")
        );
        let r = call(&ws, b, "glob", json!({"pattern": "*.txt", "path": name}));
        assert_eq!(r.content, format!("{name}/hit.txt"));
    }
    put(&ws, "x.md", "needle\n", None);
    let r = call(
        &ws,
        b,
        "grep",
        json!({"pattern": "needle", "include": "--pre=touch"}),
    );
    // A flag-shaped include is a glob that matches nothing, so nothing is
    // searched: rg's own exit 2.
    assert_eq!(
        r.content,
        "Error: grep search failed (exit 2): rg: No files were searched, which means ripgrep probably applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped."
    );
    assert!(!ws.exists("pwned"));
});

backend_test!(nul_is_a_launch_failure, |ws, b| {
    put(&ws, "a.txt", "a\n", None);
    let r = call(
        &ws,
        b,
        "grep",
        json!({"pattern": "a", "path": "a.txt\u{0}--files"}),
    );
    assert_eq!(
        r.content,
        "Error: grep could not start its search command (ripgrep launch failed)"
    );
    let r = call(&ws, b, "glob", json!({"pattern": "*\u{0}"}));
    assert_eq!(
        r.content,
        "Error: glob could not start its search command (ripgrep launch failed)"
    );
});

backend_test!(over_cap_spills_to_a_local_store, |ws, b| {
    for i in 0..5 {
        put(&ws, &format!("f{i}.txt"), "x\n", Some(3000 + i));
    }
    let spill_root = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.search.glob_max_results = 2;
    let store = dsh_search::LocalSpillStore::new(Some(spill_root.path().into())).unwrap();
    let t = tools_with(b, c).with_spill_store(Arc::new(store));
    let r = t.call("glob", &json!({"pattern": "*.txt"}), &ws.session("s1"));
    let (page, footer) = r.content.split_once("\n\n").unwrap();
    assert_eq!(page, "f0.txt\nf1.txt");
    let locator = footer
        .strip_prefix("(Showing 2 of 5 paths. Full sorted result stored at: ")
        .and_then(|f| {
            f.strip_suffix(". Use read with offset/limit, or grep this path to search within it.)")
        })
        .unwrap();
    assert!(locator.starts_with(spill_root.path().to_str().unwrap()));
    assert_eq!(
        std::fs::read_to_string(locator).unwrap(),
        "f0.txt\nf1.txt\nf2.txt\nf3.txt\nf4.txt"
    );
});

// The same complete result again points at the text saved for it while
// the store holds it unchanged (docs/tools.md, "Spill"); any difference (the
// result, the session, the file changed or gone) saves a new one.
backend_test!(the_same_result_points_at_the_same_saved_text, |ws, b| {
    for i in 0..5 {
        put(&ws, &format!("f{i}.txt"), "x\n", Some(3000 + i));
    }
    let spill_root = tempfile::tempdir().unwrap();
    let mut c = Config::default();
    c.search.glob_max_results = 2;
    let store = dsh_search::LocalSpillStore::new(Some(spill_root.path().into())).unwrap();
    let t = tools_with(b, c).with_spill_store(Arc::new(store));
    let locator = |session: &str, pattern: &str| {
        let r = t.call("glob", &json!({"pattern": pattern}), &ws.session(session));
        let (_, footer) = r.content.split_once("\n\n").unwrap();
        let at = footer.find("stored at: ").unwrap() + "stored at: ".len();
        let end = footer.find(". Use read").unwrap();
        footer[at..end].to_string()
    };
    let first = locator("s1", "*.txt");
    // (case, session, pattern, change before the call, same text as `first`)
    type Change = fn(&str);
    let cases: [(&str, &str, &str, Change, bool); 6] = [
        ("the same call", "s1", "*.txt", |_| {}, true),
        ("another session", "s2", "*.txt", |_| {}, false),
        ("back in the first session", "s1", "*.txt", |_| {}, false),
        ("the same call again", "s1", "*.txt", |_| {}, true),
        (
            "the saved text changed",
            "s1",
            "*.txt",
            |p| std::fs::write(p, "f0.txt\nf1.txt\nf2.txt\nf3.txt\nf9.txt").unwrap(),
            false,
        ),
        (
            "the saved text removed",
            "s1",
            "*.txt",
            |p| std::fs::remove_file(p).unwrap(),
            false,
        ),
    ];
    let mut last = first.clone();
    for (case, session, pattern, change, same) in cases {
        change(&last);
        let got = locator(session, pattern);
        assert_eq!(got == last, same, "{case}: {got} after {last}");
        assert_eq!(
            std::fs::read_to_string(&got).unwrap(),
            "f0.txt\nf1.txt\nf2.txt\nf3.txt\nf4.txt",
            "{case}"
        );
        last = got;
    }
});

// A spill reference is on the local disk, wherever the workspace is: `read`
// (and the guard, for `grep`) reach it there, and only the session's own
// (every path a tool returns opens with `read` in the same context on
// every filesystem, spill references included).
backend_test!(
    spill_references_open_from_a_workspace_that_is_not_the_disk,
    |ws, b| {
        for i in 0..5 {
            put(&ws, &format!("f{i}.txt"), "x\n", Some(3000 + i));
        }
        let outside = tempfile::tempdir().unwrap();
        let spill_root = outside.path().canonicalize().unwrap().join("spill");
        std::fs::write(outside.path().join("other.txt"), "other\n").unwrap();
        let mut c = Config::default();
        c.search.glob_max_results = 2;
        c.spill.max_inline_bytes = None;
        let store = dsh_search::LocalSpillStore::new(Some(spill_root.clone())).unwrap();
        // The workspace's filesystem has the workspace, and at the spill
        // root's path a directory of its own, empty: only the local disk has
        // the spilled texts.
        let decoy = tempfile::tempdir().unwrap();
        let fs = TestFs::confined(ws.path()).and(decoy.path(), &spill_root);
        let t = tools_with(b, c)
            .with_filesystem(Arc::new(fs))
            .with_spill_store(Arc::new(store))
            .with_guard(Arc::new(dsh_search::Guard::default()));
        let r = t.call("glob", &json!({"pattern": "*.txt"}), &ws.session("s1"));
        let (_, footer) = r.content.split_once("\n\n").expect(&r.content);
        let locator = footer
            .strip_prefix("(Showing 2 of 5 paths. Full sorted result stored at: ")
            .and_then(|f| {
                f.strip_suffix(
                    ". Use read with offset/limit, or grep this path to search within it.)",
                )
            })
            .unwrap();
        assert!(locator.starts_with(spill_root.to_str().unwrap()));
        let read = t.call(
            "read",
            &json!({"file_path": locator, "offset": 2, "limit": 2}),
            &ws.session("s1"),
        );
        assert_eq!(
        read.content,
        format!(
            "<path>{locator}</path>\n<type>file</type>\n<content>\n2: f1.txt\n3: f2.txt\n\n(Showing lines 2-3 of 5. Use offset=4 to continue.)\n</content>"
        )
    );
        let grep = t.call(
            "grep",
            &json!({"pattern": "f3", "path": locator}),
            &ws.session("s1"),
        );
        assert_eq!(
            grep.content,
            format!("Found 1 match\n\n{locator}\nLine 4: f3.txt")
        );
        // Another session's reference, and any other local file, are not the
        // workspace's: they do not exist there (the guard finds the
        // workspace's own, empty, directory at the spill root).
        let other = t.call(
            "read",
            &json!({"file_path": locator}),
            &ws.session("s1").session("s2"),
        );
        let root = spill_root.to_str().unwrap();
        assert_eq!(
            other.content,
            format!(
                r#"Error: file_path "{locator}" does not exist; the nearest existing directory, "{root}", is empty; list the workdir with glob {{"pattern":"*"}}, then retry with a path that exists"#
            )
        );
        let path = outside.path().join("other.txt");
        let other = t.call(
            "read",
            &json!({"file_path": path.to_str().unwrap()}),
            &ws.session("s1"),
        );
        assert_eq!(other.error.unwrap().code(), Some("FS_NOT_FOUND"));
        // A workspace file still reads from the workspace.
        let own = t.call("read", &json!({"file_path": "f0.txt"}), &ws.session("s1"));
        assert!(!own.is_error, "{}", own.content);
    }
);

// ---- timeout and cancellation ----

/// A file whose search takes many seconds: `a[ab]{20}c` sends the regex
/// engine off its DFA fast path (rg 15.2.0 needs about 8 s on 30 MB here).
fn slow_file(ws: &Ws) {
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut text = String::with_capacity(30_300_000);
    for _ in 0..300_000 {
        for _ in 0..100 {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            text.push(if state & 1 == 0 { 'a' } else { 'b' });
        }
        text.push('\n');
    }
    put(ws, "ab.txt", &text, None);
}

/// rg processes whose working directory is `dir`.
fn rg_processes_in(dir: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        let cwd = std::fs::read_link(entry.path().join("cwd")).ok();
        if comm.trim() == "rg" && cwd.as_deref() == Some(dir) {
            found.push(pid);
        }
    }
    found
}

backend_test!(timeout_stops_a_long_grep, |ws, b| {
    slow_file(&ws);
    let mut c = Config::default();
    c.search.timeout_ms = 300;
    let t = tools_with(b, c);
    let start = Instant::now();
    let r = t.call("grep", &json!({"pattern": "a[ab]{20}c"}), &ws.session("s1"));
    let took = start.elapsed();
    assert_eq!(r.content, "Error: tool call timed out after 300ms");
    assert_eq!(code(&r).as_deref(), Some("TOOL_TIMEOUT"));
    // The whole search takes several seconds; a stopped one returns long
    // before that (a loose bound: the machine is shared).
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert_eq!(rg_processes_in(ws.path()), Vec::<u32>::new());
});

backend_test!(timeout_stops_a_glob, |ws, b| {
    for d in 0..20 {
        for f in 0..200 {
            put(&ws, &format!("d{d}/f{f}.txt"), "", None);
        }
    }
    let mut c = Config::default();
    c.search.timeout_ms = 1;
    let r = tools_with(b, c).call("glob", &json!({"pattern": "*"}), &ws.session("s1"));
    assert_eq!(r.content, "Error: tool call timed out after 1ms");
    assert_eq!(rg_processes_in(ws.path()), Vec::<u32>::new());
});

backend_test!(caller_cancellation_stops_a_long_grep, |ws, b| {
    slow_file(&ws);
    let ctx = ws.session("s1");
    let caller = ctx.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        caller.cancel();
    });
    let start = Instant::now();
    let r = tools(b).call("grep", &json!({"pattern": "a[ab]{20}c"}), &ctx);
    let took = start.elapsed();
    canceller.join().unwrap();
    assert_eq!(
        r.content,
        "Error: grep was aborted before completion (tool timeout or caller cancellation)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_ABORTED"));
    assert!(took < Duration::from_secs(6), "took {took:?}");
    assert_eq!(rg_processes_in(ws.path()), Vec::<u32>::new());
});

// ---- nothing keeps working after a stopped call ----

/// A backend decorator counting the backend calls that have not returned.
struct InFlight {
    inner: Arc<dyn SearchBackend>,
    running: Arc<AtomicUsize>,
    calls: Arc<AtomicUsize>,
}

/// Decrements the count when the backend call ends, by return or unwind.
struct Leave<'a>(&'a AtomicUsize);

impl Drop for Leave<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl InFlight {
    fn enter(&self) -> Leave<'_> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.running.fetch_add(1, Ordering::SeqCst);
        Leave(&self.running)
    }
}

impl SearchBackend for InFlight {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn searches_local_disk(&self) -> bool {
        self.inner.searches_local_disk()
    }
    fn glob(&self, req: &dsh_search::GlobRequest) -> dsh_search::Outcome<dsh_search::GlobResults> {
        let _leave = self.enter();
        self.inner.glob(req)
    }
    fn grep(&self, req: &dsh_search::GrepRequest) -> dsh_search::Outcome<dsh_search::GrepResults> {
        let _leave = self.enter();
        self.inner.grep(req)
    }
}

/// Threads of this process whose name (`comm`) is `name`.
fn threads_named(name: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm")).is_ok_and(|c| c.trim_end() == name)
        })
        .count()
}

/// What was left the moment a stopped call returned.
#[derive(Debug)]
struct Leftovers {
    content: String,
    /// Threads carrying the calling thread's name: the caller itself plus
    /// every thread started on its behalf and still alive.
    threads: usize,
    backend_calls_running: usize,
    backend_calls: usize,
    rg_processes: Vec<u32>,
}

/// Run a grep that would take seconds on a thread with a unique name, stop
/// it by `timeout_ms` or by the caller's cancellation after 200 ms, and
/// look at what is left as soon as `Tools::call` returns. Threads started
/// without a name (the engine's walker threads, the rg backend's pipe
/// readers, the dispatch's deadline watcher) inherit the name of the thread
/// that started them (Linux copies `comm` on clone), so they are counted
/// too. Also returns the most threads of that name seen during the call,
/// which shows the count sees them.
fn stop_and_look(ws: &Ws, b: &str, name: &'static str, cancel: bool) -> (Leftovers, usize) {
    let mut c = Config::default();
    c.search.timeout_ms = if cancel { 600_000 } else { 300 };
    let running = Arc::new(AtomicUsize::new(0));
    let calls = Arc::new(AtomicUsize::new(0));
    let t = Tools::new(
        c,
        Arc::new(InFlight {
            inner: backend(b),
            running: running.clone(),
            calls: calls.clone(),
        }),
    );
    let ctx = ws.session("s1");
    let caller = ctx.cancel.clone();
    let dir = ws.path().to_path_buf();
    let worker = std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || {
            let r = t.call("grep", &json!({"pattern": "a[ab]{20}c"}), &ctx);
            Leftovers {
                content: r.content,
                threads: threads_named(name),
                backend_calls_running: running.load(Ordering::SeqCst),
                backend_calls: calls.load(Ordering::SeqCst),
                rg_processes: rg_processes_in(&dir),
            }
        })
        .unwrap();
    let start = Instant::now();
    let mut most = 0;
    while !worker.is_finished() {
        most = most.max(threads_named(name));
        if cancel && start.elapsed() >= Duration::from_millis(200) {
            caller.cancel();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (worker.join().unwrap(), most)
}

backend_test!(stopped_calls_leave_no_thread_or_process, |ws, b| {
    slow_file(&ws);
    // A directory, so grep walks: the engine's parallel walker runs.
    for i in 0..8 {
        put(&ws, &format!("more/f{i}.txt"), "ab\n", None);
    }
    for (cancel, want) in [
        (false, "Error: tool call timed out after 300ms"),
        (
            true,
            "Error: grep was aborted before completion (tool timeout or caller cancellation)",
        ),
    ] {
        // At most 15 bytes (the kernel's comm), unique per test.
        let name = match (b, cancel) {
            ("native", false) => "dsh-stop-nat-t",
            ("native", true) => "dsh-stop-nat-c",
            (_, false) => "dsh-stop-rg-t",
            (_, true) => "dsh-stop-rg-c",
        };
        let (left, most) = stop_and_look(&ws, b, name, cancel);
        assert_eq!(left.content, want);
        // While the call ran, the rg backend's two pipe readers existed
        // besides the caller (threads inherit the caller's name), so the
        // count below can see a thread left behind. The engine starts no
        // thread per call: it walks on the caller's thread and searches on
        // its pool's named threads, started once per process. The deadline
        // is the call's token's: no thread watches it.
        let helpers = if b == "native" { 1 } else { 2 };
        assert!(
            most >= helpers,
            "{name}: at most {most} thread(s) seen during the call"
        );
        // The moment it returned: only the caller, no backend call still
        // running, no rg left in the workdir.
        assert_eq!(left.threads, 1, "{name}: {left:?}");
        assert_eq!(left.backend_calls_running, 0, "{name}: {left:?}");
        assert_eq!(left.backend_calls, 1, "{name}: {left:?}");
        assert_eq!(left.rg_processes, Vec::<u32>::new(), "{name}: {left:?}");
    }
});

// ---- the deliberate differences of contract.md §3, on both backends ----

fn raw_name_file(ws: &Ws, name: &[u8], content: &[u8]) {
    use std::os::unix::ffi::OsStrExt;
    std::fs::write(ws.path().join(std::ffi::OsStr::from_bytes(name)), content).unwrap();
}

// D1: a file name that is not UTF-8 is decoded lossily; it does not fail
// the search (the original fails the whole grep on `path.bytes`).
backend_test!(d1_non_utf8_file_name_is_decoded_lossily, |ws, b| {
    raw_name_file(&ws, b"caf\xe9.txt", b"needle one\n");
    put(&ws, "ok.txt", "needle two\n", None);
    let r = call(&ws, b, "grep", json!({"pattern": "needle"}));
    assert_eq!(
        r.content,
        "Found 2 matches\n\ncaf\u{FFFD}.txt\nLine 1: needle one\n\nok.txt\nLine 1: needle two"
    );
    assert_eq!(r.value.unwrap()["matches"][0]["path"], "caf\u{FFFD}.txt");
});

// D2: files in display-path byte order, lines ascending, the same answer
// on every run (rg's own order varies with its threads).
backend_test!(d2_grep_files_in_display_path_order, |ws, b| {
    for (name, content) in [
        ("b.txt", "needle b1\nx\nneedle b3\n"),
        ("a/z.txt", "needle az\n"),
        ("B.txt", "needle B\n"),
        ("a.txt", "x\nneedle a2\n"),
        ("a/b/c.txt", "needle abc\n"),
        ("_.txt", "needle _\n"),
    ] {
        put(&ws, name, content, None);
    }
    // Byte order: 'B' < '_' < 'a'; "a.txt" < "a/…" as '.' < '/'.
    let want = "Found 7 matches\n\nB.txt\nLine 1: needle B\n\n_.txt\nLine 1: needle _\n\na.txt\nLine 2: needle a2\n\na/b/c.txt\nLine 1: needle abc\n\na/z.txt\nLine 1: needle az\n\nb.txt\nLine 1: needle b1\nLine 3: needle b3";
    for _ in 0..5 {
        assert_eq!(
            call(&ws, b, "grep", json!({"pattern": "needle"})).content,
            want
        );
    }
});

// D3: a line that is not UTF-8 is decoded lossily (the original shows
// `(line is not valid UTF-8)`).
backend_test!(d3_non_utf8_line_is_decoded_lossily, |ws, b| {
    raw_name_file(&ws, b"latin.txt", b"caf\xe9 needle\n");
    let r = call(&ws, b, "grep", json!({"pattern": "needle"}));
    assert_eq!(
        r.content,
        "Found 1 match\n\nlatin.txt\nLine 1: caf\u{FFFD} needle"
    );
    assert_eq!(r.value.unwrap()["matches"][0]["line"], "caf\u{FFFD} needle");
});

// D4: the search stops at the raw output cap. The input is a FIFO whose
// writer keeps it open, so a search that kept reading would never end: only
// stopping at the cap can give the overflow error (and not the timeout).
backend_test!(d4_search_stops_at_the_raw_output_cap, |ws, b| {
    let pipe = ws.path().join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &pipe,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let pipe_w = pipe.clone();
    let writer = std::thread::spawn(move || {
        use std::io::Write as _;
        let mut w = std::fs::OpenOptions::new()
            .write(true)
            .open(&pipe_w)
            .unwrap();
        // 40 KB: fits the pipe's buffer, far over the 2,000-byte cap once
        // printed as --json matches.
        w.write_all("needle\n".repeat(6000).as_bytes()).unwrap();
        w.flush().unwrap();
        // Held open (no EOF) until the call has returned.
        let _ = release_rx.recv();
    });
    let mut c = Config::default();
    c.search.raw_output_max_bytes = 2000;
    c.search.timeout_ms = 120_000; // only a hang guard
    c.spill.max_inline_bytes = None;
    let r = tools_with(b, c).call(
        "grep",
        &json!({"pattern": "needle", "path": "pipe"}),
        &ws.session("s1"),
    );
    drop(release_tx);
    // Had the search never opened the FIFO, the writer would still wait in
    // open(2): a non-blocking reader lets it through, so the test ends.
    let _reader = {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
            .open(ws.path().join("pipe"))
    };
    writer.join().unwrap();
    assert_eq!(
        r.content,
        "Error: grep produced more raw output than the subprocess seam retained within the 2000-byte cap; narrow pattern, path, or include and retry"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_RAW_OUTPUT_OVERFLOW"));
    assert_eq!(rg_processes_in(ws.path()), Vec::<u32>::new());
});

// The seed splits `--files` output on `\n` (`seed-reference.md` §2.2): a
// name holding a newline is two entries, on both backends (the engine
// lists the name whole; the tool splits it as the seed does).
backend_test!(glob_splits_a_name_holding_a_newline, |ws, b| {
    put(&ws, "nl\nname.txt", "x\n", Some(1000));
    put(&ws, "z.txt", "x\n", Some(2000));
    let r = call(&ws, b, "glob", json!({"pattern": "*"}));
    assert_eq!(r.content, "nl\nname.txt\nz.txt");
    assert_eq!(
        r.value.unwrap(),
        json!({"root": ".", "paths": ["nl", "name.txt", "z.txt"]})
    );
});
