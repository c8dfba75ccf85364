//! The search tools over a scripted backend: the failure ladder, rendering,
//! spill, meta, dispatch order, timeout and cancellation, driven by
//! hand-made outcomes (the seed's `tools.spec.ts` cases, `seed-reference.md`
//! §8.1). Expected texts are the seed's literals.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dsh_search::config::Config;
use dsh_search::event::{Begin, End, Event, Match, Stats, Summary};
use dsh_search::fs::DynFileSystem;
use dsh_search::tool::{CallContext, CallGuard, ToolName, ToolResult, Tools};
use dsh_search::{
    GlobRequest, GlobResults, GrepRequest, GrepResults, Outcome, SearchBackend, Status,
};
use dsh_search::{SpillRef, SpillSource, SpillStore};
use serde_json::{json, Value};

/// A backend that returns scripted outcomes and records its requests. With
/// `spin`, it instead waits for its cancel token like a real search would.
#[derive(Default)]
struct Fake {
    glob: Mutex<Option<Outcome<GlobResults>>>,
    grep: Mutex<Option<Outcome<GrepResults>>>,
    spin: bool,
    globs: Mutex<Vec<GlobRequest>>,
    greps: Mutex<Vec<GrepRequest>>,
}

fn spin_until_cancelled(cancel: &dsh_search::CancelToken) -> Status {
    // Ten seconds at most, so a broken timeout fails the test instead of
    // hanging it.
    for _ in 0..10_000 {
        if cancel.is_cancelled() {
            return Status::Cancelled;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    Status::Exited(0)
}

impl SearchBackend for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        self.globs.lock().unwrap().push(req.clone());
        if self.spin {
            let status = spin_until_cancelled(&req.cancel);
            return Outcome {
                status,
                stderr: vec![],
                results: GlobResults::default(),
            };
        }
        self.glob
            .lock()
            .unwrap()
            .clone()
            .expect("no glob outcome scripted")
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        self.greps.lock().unwrap().push(req.clone());
        if self.spin {
            let status = spin_until_cancelled(&req.cancel);
            return Outcome {
                status,
                stderr: vec![],
                results: GrepResults::default(),
            };
        }
        self.grep
            .lock()
            .unwrap()
            .clone()
            .expect("no grep outcome scripted")
    }
}

/// The seed's fake spill: locator `/spill/<name>`, a fixed hint.
#[derive(Default)]
struct FakeSpill {
    fail: bool,
    saves: Mutex<Vec<(String, SpillSource, String, String)>>,
}

impl SpillStore for FakeSpill {
    fn save_text(
        &self,
        owner: &str,
        source: &SpillSource,
        name: &str,
        content: &str,
    ) -> std::io::Result<SpillRef> {
        if self.fail {
            return Err(std::io::Error::other("disk full"));
        }
        self.saves.lock().unwrap().push((
            owner.to_string(),
            source.clone(),
            name.to_string(),
            content.to_string(),
        ));
        Ok(SpillRef {
            locator: format!("/spill/{name}"),
            hint: "Use the fake retrieval hint.".to_string(),
        })
    }
}

fn files(paths: &[&str]) -> Outcome<GlobResults> {
    Outcome {
        status: Status::Exited(if paths.is_empty() { 1 } else { 0 }),
        stderr: vec![],
        results: GlobResults {
            files: paths.iter().map(|p| p.as_bytes().to_vec()).collect(),
        },
    }
}

fn mat(path: &[u8], line_number: u64, line: &[u8]) -> Event {
    Event::Match(Match {
        path: path.into(),
        lines: line.to_vec().into(),
        line_number,
        absolute_offset: 0,
        submatches: vec![].into(),
    })
}

/// rg's stream for `(path, line number, line)` triples, begin/end around
/// each file and a summary last.
fn matches(rows: &[(&str, u64, &str)]) -> Outcome<GrepResults> {
    let mut events = Vec::new();
    let mut current: Option<&str> = None;
    for &(path, n, line) in rows {
        if current != Some(path) {
            if let Some(p) = current {
                events.push(Event::End(End {
                    path: p.into(),
                    binary_offset: None,
                    stats: Stats::default(),
                }));
            }
            events.push(Event::Begin(Begin { path: path.into() }));
            current = Some(path);
        }
        events.push(mat(path.as_bytes(), n, format!("{line}\n").as_bytes()));
    }
    if let Some(p) = current {
        events.push(Event::End(End {
            path: p.into(),
            binary_offset: None,
            stats: Stats::default(),
        }));
    }
    events.push(Event::Summary(Summary {
        elapsed_total: Duration::ZERO,
        stats: Stats::default(),
    }));
    Outcome {
        status: Status::Exited(if rows.is_empty() { 1 } else { 0 }),
        stderr: vec![],
        results: GrepResults { events },
    }
}

fn failed<T: Default>(status: Status, stderr: &[&str]) -> Outcome<T> {
    Outcome {
        status,
        stderr: stderr.iter().map(|s| s.to_string()).collect(),
        results: T::default(),
    }
}

struct Setup {
    fake: Arc<Fake>,
    spill: Arc<FakeSpill>,
    tools: Tools,
}

fn setup_with(config: Config, fake: Fake, spill: FakeSpill) -> Setup {
    let fake = Arc::new(fake);
    let spill = Arc::new(spill);
    let tools = Tools::new(config, fake.clone()).with_spill_store(spill.clone());
    Setup { fake, spill, tools }
}

/// The seed's test configuration: no spill-policy (its tests load none).
fn config() -> Config {
    let mut c = Config::default();
    c.spill.max_inline_bytes = None;
    c
}

fn glob_setup(outcome: Outcome<GlobResults>) -> Setup {
    setup_with(
        config(),
        Fake {
            glob: Mutex::new(Some(outcome)),
            ..Fake::default()
        },
        FakeSpill::default(),
    )
}

fn grep_setup(outcome: Outcome<GrepResults>) -> Setup {
    setup_with(
        config(),
        Fake {
            grep: Mutex::new(Some(outcome)),
            ..Fake::default()
        },
        FakeSpill::default(),
    )
}

fn ctx() -> CallContext {
    CallContext::new("/w").session("session-1")
}

fn code(r: &ToolResult) -> Option<String> {
    r.error
        .as_ref()
        .and_then(|e| e.info.as_ref())
        .map(|i| i.code.clone())
}

// ---- grep rendering ----

#[test]
fn grep_groups_by_file_and_skips_other_records() {
    let s = grep_setup(matches(&[
        ("a.ts", 3, "const x = 1"),
        ("a.ts", 9, "const y = 2"),
        ("b.ts", 1, "const z = 3"),
    ]));
    let r = s.tools.call("grep", &json!({"pattern": "const"}), &ctx());
    assert!(!r.is_error);
    assert_eq!(
        r.content,
        "Found 3 matches\n\na.ts\nLine 3: const x = 1\nLine 9: const y = 2\n\nb.ts\nLine 1: const z = 3"
    );
    assert_eq!(
        r.value.unwrap(),
        json!({"matches": [
            {"path": "a.ts", "lineNumber": 3, "line": "const x = 1"},
            {"path": "a.ts", "lineNumber": 9, "line": "const y = 2"},
            {"path": "b.ts", "lineNumber": 1, "line": "const z = 3"},
        ]})
    );
}

#[test]
fn grep_single_match_is_singular() {
    let s = grep_setup(matches(&[("a.ts", 1, "hit")]));
    let r = s.tools.call("grep", &json!({"pattern": "hit"}), &ctx());
    assert_eq!(r.content, "Found 1 match\n\na.ts\nLine 1: hit");
}

#[test]
fn grep_relativizes_absolute_paths_and_strips_terminators() {
    let mut o = matches(&[]);
    o.status = Status::Exited(0);
    o.results.events = vec![
        mat(b"/w/src/a.ts", 1, b"crlf\r\n"),
        mat(b"/elsewhere/b.ts", 2, b"lone cr\r"),
    ];
    let s = grep_setup(o);
    let r = s
        .tools
        .call("grep", &json!({"pattern": "x", "path": "/w"}), &ctx());
    assert_eq!(
        r.content,
        "Found 2 matches\n\n/elsewhere/b.ts\nLine 2: lone cr\r\n\nsrc/a.ts\nLine 1: crlf"
    );
}

#[test]
fn grep_previews_long_lines_but_keeps_the_value_whole() {
    let mut c = config();
    c.search.grep_max_line_bytes = 7;
    let s = setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(matches(&[("a.ts", 1, "aéaéaéaé")]))),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let r = s.tools.call("grep", &json!({"pattern": "a"}), &ctx());
    assert_eq!(
        r.content,
        "Found 1 match\n\na.ts\nLine 1: aéaéa (line truncated)"
    );
    assert_eq!(r.value.unwrap()["matches"][0]["line"], "aéaéaéaé");
}

// Contract D1 and D3: a non-UTF-8 file name or line is decoded lossily.
#[test]
fn grep_decodes_paths_and_lines_lossily() {
    let mut o = matches(&[]);
    o.status = Status::Exited(0);
    o.results.events = vec![mat(b"caf\xe9.txt", 4, b"na\xefve\n")];
    let s = grep_setup(o);
    let r = s.tools.call("grep", &json!({"pattern": "v"}), &ctx());
    assert_eq!(
        r.content,
        "Found 1 match\n\ncaf\u{FFFD}.txt\nLine 4: na\u{FFFD}ve"
    );
}

// Contract D2: files in display-path byte order, lines ascending.
#[test]
fn grep_orders_files_by_display_path() {
    let s = grep_setup(matches(&[
        ("z.ts", 2, "z2"),
        ("b/a.ts", 5, "b5"),
        ("b/a.ts", 7, "b7"),
        ("B.ts", 1, "B1"),
        ("a.ts", 3, "a3"),
    ]));
    let r = s.tools.call("grep", &json!({"pattern": "."}), &ctx());
    assert_eq!(
        r.content,
        "Found 5 matches\n\nB.ts\nLine 1: B1\n\na.ts\nLine 3: a3\n\nb/a.ts\nLine 5: b5\nLine 7: b7\n\nz.ts\nLine 2: z2"
    );
}

fn capped_grep(spill: FakeSpill, max: u64) -> Setup {
    let mut c = config();
    c.search.grep_max_matches = max;
    let rows = matches(&[("a.ts", 1, "one"), ("a.ts", 2, "two"), ("b.ts", 3, "three")]);
    setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(rows)),
            ..Fake::default()
        },
        spill,
    )
}

#[test]
fn grep_over_cap_spills_the_complete_result() {
    let s = capped_grep(FakeSpill::default(), 2);
    let r = s.tools.call("grep", &json!({"pattern": "o"}), &ctx());
    assert_eq!(
        r.content,
        "Found 2 of 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\n(Full grep result stored at: /spill/grep-results.txt. Use the fake retrieval hint.)"
    );
    let saves = s.spill.saves.lock().unwrap();
    assert_eq!(saves.len(), 1);
    let (owner, source, name, content) = &saves[0];
    assert_eq!(owner, "session-1");
    assert_eq!(
        (source.tool_name.as_str(), source.label.as_str()),
        ("grep", "result")
    );
    assert_eq!(name, "grep-results.txt");
    assert_eq!(
        content,
        "Found 3 matches\n\na.ts\nLine 1: one\nLine 2: two\n\nb.ts\nLine 3: three"
    );
    // The value is complete; the meta is the capped page.
    assert_eq!(r.value.unwrap()["matches"].as_array().unwrap().len(), 3);
    assert_eq!(
        r.meta.unwrap(),
        json!({"shape": "matches", "files": [{"path": "a.ts", "matches": [
            {"lineNumber": 1, "line": "one"}, {"lineNumber": 2, "line": "two"}]}],
            "truncated": true, "total": 3})
    );
}

const GREP_UNSAVED_1: &str = "Found 1 of 3 matches\n\na.ts\nLine 1: one\n\n(The complete result could not be saved; narrow pattern, path, or include to see more.)";

#[test]
fn grep_over_cap_without_session_store_or_save_is_unsaved() {
    // No session.
    let s = capped_grep(FakeSpill::default(), 1);
    let r = s
        .tools
        .call("grep", &json!({"pattern": "o"}), &CallContext::new("/w"));
    assert_eq!(r.content, GREP_UNSAVED_1);
    assert!(!r.is_error);
    assert!(s.spill.saves.lock().unwrap().is_empty());
    // A failing store.
    let s = capped_grep(
        FakeSpill {
            fail: true,
            ..FakeSpill::default()
        },
        1,
    );
    let r = s.tools.call("grep", &json!({"pattern": "o"}), &ctx());
    assert_eq!(r.content, GREP_UNSAVED_1);
    assert!(!r.is_error);
    // No store at all.
    let rows = matches(&[("a.ts", 1, "one"), ("a.ts", 2, "two"), ("b.ts", 3, "three")]);
    let mut c = config();
    c.search.grep_max_matches = 1;
    let tools = Tools::new(
        c,
        Arc::new(Fake {
            grep: Mutex::new(Some(rows)),
            ..Fake::default()
        }),
    );
    assert_eq!(
        tools.call("grep", &json!({"pattern": "o"}), &ctx()).content,
        GREP_UNSAVED_1
    );
}

#[test]
fn nested_calls_never_spill_and_get_no_meta() {
    let s = capped_grep(FakeSpill::default(), 1);
    let r = s
        .tools
        .call("grep", &json!({"pattern": "o"}), &ctx().nested());
    assert_eq!(r.content, GREP_UNSAVED_1);
    assert_eq!(r.meta, None);
    assert_eq!(r.value.unwrap()["matches"].as_array().unwrap().len(), 3);
    assert!(s.spill.saves.lock().unwrap().is_empty());
}

#[test]
fn grep_exit_1_is_no_matches() {
    let s = grep_setup(matches(&[]));
    let r = s.tools.call("grep", &json!({"pattern": "x"}), &ctx());
    assert_eq!(r.content, "No matches found");
    assert!(!r.is_error);
    assert_eq!(r.value.unwrap(), json!({"matches": []}));
}

#[test]
fn meta_byte_cap_drops_trailing_groups_but_never_the_last() {
    let line = "x".repeat(60);
    let rows = matches(&[("a", 1, &line), ("b", 1, &line), ("c", 1, &line)]);
    let mut c = config();
    c.search.search_meta_max_bytes = 260;
    let s = setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(rows)),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let meta = s
        .tools
        .call("grep", &json!({"pattern": "x"}), &ctx())
        .meta
        .unwrap();
    let files = meta["files"].as_array().unwrap();
    assert!(files.len() < 3 && !files.is_empty(), "{meta}");
    assert_eq!(meta["truncated"], true);
    assert_eq!(meta["total"], 3);
    assert!(serde_json::to_vec(&meta).unwrap().len() <= 260);
    // One oversized group is kept whole.
    let big = "y".repeat(1000);
    let mut c = config();
    c.search.search_meta_max_bytes = 100;
    let s = setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(matches(&[("a", 1, &big)]))),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let meta = s
        .tools
        .call("grep", &json!({"pattern": "y"}), &ctx())
        .meta
        .unwrap();
    assert_eq!(meta["files"].as_array().unwrap().len(), 1);
    assert_eq!(meta["truncated"], false);
}

#[test]
fn glob_meta_byte_cap() {
    let names: Vec<String> = (0..10)
        .map(|i| format!("{i:02}{}", "p".repeat(40)))
        .collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let mut c = config();
    c.search.search_meta_max_bytes = 200;
    let s = setup_with(
        c,
        Fake {
            glob: Mutex::new(Some(files(&refs))),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let r = s.tools.call("glob", &json!({"pattern": "*"}), &ctx());
    // The text is untouched (10 paths fit the 100-path cap); the meta keeps
    // as many leading paths as fit in 200 bytes, flagged truncated.
    assert_eq!(r.content, names.join("\n"));
    let meta = r.meta.unwrap();
    let paths = meta["paths"].as_array().unwrap();
    assert!(!paths.is_empty() && paths.len() < 10, "{meta}");
    assert_eq!(paths[0], names[0].as_str());
    assert_eq!(meta["truncated"], true);
    assert_eq!(meta["total"], 10);
    let len = serde_json::to_vec(&meta).unwrap().len();
    assert!(len <= 200, "{len}");
    // One more path would not have fit.
    assert!(len + 1 + names[paths.len()].len() + 2 > 200);
}

// ---- glob rendering ----

fn glob_with(paths: &[&str], max: u64, sample: bool) -> Setup {
    let mut c = config();
    c.search.glob_max_results = max;
    c.search.sample_over_cap_glob_results = sample;
    setup_with(
        c,
        Fake {
            glob: Mutex::new(Some(files(paths))),
            ..Fake::default()
        },
        FakeSpill::default(),
    )
}

#[test]
fn glob_fitting_result_is_untouched() {
    let s = glob_with(&["b.ts", "/w/src/a.ts", "/out/c.ts"], 100, false);
    let r = s.tools.call("glob", &json!({"pattern": "*.ts"}), &ctx());
    assert_eq!(r.content, "b.ts\nsrc/a.ts\n/out/c.ts");
    assert_eq!(
        r.value.unwrap(),
        json!({"root": ".", "paths": ["b.ts", "src/a.ts", "/out/c.ts"]})
    );
    assert!(s.spill.saves.lock().unwrap().is_empty());
    assert_eq!(
        r.meta.unwrap(),
        json!({"shape": "paths", "paths": ["b.ts", "src/a.ts", "/out/c.ts"], "truncated": false, "total": 3})
    );
}

#[test]
fn glob_over_cap_spills_the_sorted_list() {
    let s = glob_with(&["a.ts", "b.ts", "c.ts", "d.ts"], 2, false);
    let r = s.tools.call("glob", &json!({"pattern": "*.ts"}), &ctx());
    assert_eq!(
        r.content,
        "a.ts\nb.ts\n\n(Showing 2 of 4 paths. Full sorted result stored at: /spill/glob-results.txt. Use the fake retrieval hint.)"
    );
    let saves = s.spill.saves.lock().unwrap();
    assert_eq!(saves[0].0, "session-1");
    assert_eq!(saves[0].1.tool_name, "glob");
    assert_eq!(saves[0].2, "glob-results.txt");
    assert_eq!(saves[0].3, "a.ts\nb.ts\nc.ts\nd.ts");
    assert_eq!(
        r.meta.unwrap(),
        json!({"shape": "paths", "paths": ["a.ts", "b.ts"], "truncated": true, "total": 4})
    );
}

const SIX: &[&str] = &[
    "vendor/a.ts",
    "vendor/b.ts",
    "vendor/c.ts",
    "src/d.ts",
    "guide/e.md",
    "zeta/f.ts",
];

#[test]
fn glob_sampled_footer() {
    let s = glob_with(SIX, 3, true);
    let r = s
        .tools
        .call("glob", &json!({"pattern": "*"}), &CallContext::new("/w"));
    assert_eq!(
        r.content,
        "vendor/a.ts\nsrc/d.ts\nguide/e.md\n\n(Showing 3 of 6 paths, sampled across 3 of the 4 top-level entries this pattern matched instead of taken in modification-time order. Narrow path to inspect a specific subtree. The complete result could not be saved; narrow pattern or path to see more.)"
    );
}

#[test]
fn glob_sampled_footer_without_narrowing_hint() {
    let s = glob_with(
        &["vendor/a.ts", "vendor/b.ts", "vendor/c.ts", "src/d.ts"],
        3,
        true,
    );
    let r = s
        .tools
        .call("glob", &json!({"pattern": "*"}), &ctx().nested());
    assert_eq!(
        r.content,
        "vendor/a.ts\nvendor/b.ts\nsrc/d.ts\n\n(Showing 3 of 4 paths, sampled across 2 of the 2 top-level entries this pattern matched instead of taken in modification-time order. The complete result could not be saved; narrow pattern or path to see more.)"
    );
}

#[test]
fn glob_head_mode_ignores_the_tree_shape() {
    let s = glob_with(SIX, 3, false);
    let r = s
        .tools
        .call("glob", &json!({"pattern": "*"}), &ctx().nested());
    assert_eq!(
        r.content,
        "vendor/a.ts\nvendor/b.ts\nvendor/c.ts\n\n(Showing 3 of 6 paths. The complete result could not be saved; narrow pattern or path to see more.)"
    );
}

#[test]
fn glob_flat_sample_has_the_plain_footer() {
    let s = glob_with(&["a.ts", "b.ts", "c.ts"], 2, true);
    let r = s
        .tools
        .call("glob", &json!({"pattern": "*"}), &ctx().nested());
    assert_eq!(
        r.content,
        "a.ts\nb.ts\n\n(Showing 2 of 3 paths. The complete result could not be saved; narrow pattern or path to see more.)"
    );
}

// The ACP snapshot of seed-reference.md §3.4 (globMaxResults 4, path "tree").
#[test]
fn glob_sampled_under_a_relative_root() {
    let paths = [
        "tree/archive/a.ts",
        "tree/docs/guide.md",
        "tree/src/index.ts",
        "tree/test/spec.ts",
        "tree/src/b.ts",
        "tree/x/1.ts",
        "tree/docs/c.md",
        "tree/y/2.ts",
    ];
    let s = glob_with(&paths, 4, true);
    let r = s.tools.call(
        "glob",
        &json!({"pattern": "*", "path": "tree"}),
        &ctx().nested(),
    );
    assert_eq!(
        r.content,
        "tree/archive/a.ts\ntree/docs/guide.md\ntree/src/index.ts\ntree/test/spec.ts\n\n(Showing 4 of 8 paths, sampled across 4 of the 6 top-level entries this pattern matched instead of taken in modification-time order. Narrow path to inspect a specific subtree. The complete result could not be saved; narrow pattern or path to see more.)"
    );
    assert_eq!(r.value.unwrap()["root"], "tree");
}

#[test]
fn glob_root_is_the_display_form_of_path() {
    for (path, root) in [
        ("src/", "src/"),
        ("./src", "./src"),
        ("/w/src", "src"),
        ("/w", "."),
        ("/other", "/other"),
    ] {
        let s = glob_with(&[], 100, false);
        let r = s
            .tools
            .call("glob", &json!({"pattern": "*", "path": path}), &ctx());
        assert_eq!(r.content, "No files found");
        assert_eq!(
            r.value.unwrap(),
            json!({"root": root, "paths": []}),
            "{path}"
        );
        // The path itself goes to the backend verbatim.
        assert_eq!(
            s.fake.globs.lock().unwrap()[0].path.as_deref(),
            Some(std::ffi::OsStr::new(path))
        );
    }
}

// ---- the failure ladder ----

fn grep_error(outcome: Outcome<GrepResults>) -> ToolResult {
    let s = grep_setup(outcome);
    let r = s.tools.call("grep", &json!({"pattern": "x"}), &ctx());
    assert!(r.is_error, "{r:?}");
    assert_eq!(
        r.content,
        format!("Error: {}", r.error.as_ref().unwrap().message)
    );
    assert_eq!(
        r.error.as_ref().unwrap().info.as_ref().unwrap().name,
        "SearchError"
    );
    r
}

fn glob_error(outcome: Outcome<GlobResults>) -> ToolResult {
    let s = glob_setup(outcome);
    let r = s.tools.call("glob", &json!({"pattern": "x"}), &ctx());
    assert!(r.is_error, "{r:?}");
    r
}

#[test]
fn invalid_patterns() {
    let r = grep_error(failed(
        Status::Exited(2),
        &[
            "rg: regex parse error:",
            "    (?:()",
            "    ^",
            "error: unclosed group",
        ],
    ));
    assert_eq!(
        r.content,
        "Error: grep pattern rejected by ripgrep: rg: regex parse error:\n    (?:()\n    ^\nerror: unclosed group"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_INVALID_PATTERN"));
    let r = glob_error(failed(
        Status::Exited(2),
        &["rg: error parsing glob '[': unclosed character class; missing ']'"],
    ));
    assert_eq!(
        r.content,
        "Error: glob pattern rejected by ripgrep: rg: error parsing glob '[': unclosed character class; missing ']'"
    );
    let r = grep_error(failed(Status::Exited(2), &["rg: ERROR PARSING GLOB x"]));
    assert_eq!(code(&r).as_deref(), Some("SEARCH_INVALID_PATTERN"));
}

#[test]
fn other_exits_are_search_failed() {
    let r = glob_error(failed(
        Status::Exited(2),
        &["rg: nonexist: IO error for operation on nonexist: No such file or directory (os error 2)"],
    ));
    assert_eq!(
        r.content,
        "Error: glob search failed (exit 2): rg: nonexist: IO error for operation on nonexist: No such file or directory (os error 2)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_FAILED"));
    let r = grep_error(failed(Status::Exited(3), &[]));
    assert_eq!(r.content, "Error: grep search failed (exit 3)");
    // Partial results of an exit 2 are thrown away.
    let mut o = matches(&[("a.ts", 1, "x")]);
    o.status = Status::Exited(2);
    o.stderr = vec!["rg: secret.txt: Permission denied (os error 13)".into()];
    let r = grep_error(o);
    assert_eq!(
        r.content,
        "Error: grep search failed (exit 2): rg: secret.txt: Permission denied (os error 13)"
    );
}

#[test]
fn stderr_is_tail_capped() {
    let mut c = config();
    c.search.stderr_max_bytes = 12;
    let outcome = failed(Status::Exited(2), &["rg: first problem", "rg: second"]);
    let s = setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(outcome)),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let r = s.tools.call("grep", &json!({"pattern": "x"}), &ctx());
    assert_eq!(
        r.content,
        "Error: grep search failed (exit 2): rg: second [stderr truncated]"
    );
}

#[test]
fn signals_overflow_launch_and_cancel() {
    let r = grep_error(failed(Status::Signaled(Some("SIGKILL".into())), &[]));
    assert_eq!(
        r.content,
        "Error: grep search command was killed by signal SIGKILL"
    );
    let r = glob_error(failed(Status::Signaled(None), &[]));
    assert_eq!(
        r.content,
        "Error: glob search command was killed by signal (unknown)"
    );
    let r = grep_error(failed(Status::OverBudget, &[]));
    assert_eq!(
        r.content,
        "Error: grep produced more raw output than the subprocess seam retained within the 20000000-byte cap; narrow pattern, path, or include and retry"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_RAW_OUTPUT_OVERFLOW"));
    let r = glob_error(failed(Status::LaunchFailed("no such dir".into()), &[]));
    assert_eq!(
        r.content,
        "Error: glob could not start its search command (ripgrep launch failed)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_FAILED"));
    let r = grep_error(failed(Status::Cancelled, &[]));
    assert_eq!(
        r.content,
        "Error: grep was aborted before completion (tool timeout or caller cancellation)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_ABORTED"));
}

#[test]
fn malformed_json_fails_the_whole_grep() {
    let r = grep_error(failed(Status::Malformed("a line is not JSON".into()), &[]));
    assert_eq!(
        r.content,
        "Error: grep received malformed ripgrep --json output (a line is not JSON)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_FAILED"));
}

#[test]
fn raw_budget_and_request_are_passed_through() {
    let mut c = config();
    c.search.raw_output_max_bytes = 16;
    let s = setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(failed(Status::OverBudget, &[]))),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let args = json!({"pattern": "-e", "path": "--flag", "include": "*.{ts,tsx}"});
    let r = s.tools.call("grep", &args, &ctx());
    assert!(
        r.content.contains("within the 16-byte cap"),
        "{}",
        r.content
    );
    let req = &s.fake.greps.lock().unwrap()[0];
    assert_eq!(req.pattern, "-e");
    assert_eq!(req.path.as_deref(), Some(std::ffi::OsStr::new("--flag")));
    assert_eq!(req.include.as_deref(), Some("*.{ts,tsx}"));
    assert_eq!(req.raw_budget, Some(16));
    assert_eq!(req.workdir, PathBuf::from("/w"));
}

#[test]
fn nul_is_a_launch_failure_without_a_search() {
    for (tool, args) in [
        ("glob", json!({"pattern": "a\u{0}b"})),
        ("glob", json!({"pattern": "*", "path": "a\u{0}"})),
        ("grep", json!({"pattern": "\u{0}"})),
        ("grep", json!({"pattern": "x", "path": "\u{0}x"})),
        ("grep", json!({"pattern": "x", "include": "*\u{0}"})),
    ] {
        let s = setup_with(config(), Fake::default(), FakeSpill::default());
        let r = s.tools.call(tool, &args, &ctx());
        assert_eq!(
            r.content,
            format!("Error: {tool} could not start its search command (ripgrep launch failed)")
        );
        assert_eq!(code(&r).as_deref(), Some("SEARCH_FAILED"));
        assert!(s.fake.globs.lock().unwrap().is_empty() && s.fake.greps.lock().unwrap().is_empty());
    }
}

// ---- dispatch order ----

#[test]
fn pre_aborted_calls_never_dispatch() {
    let s = grep_setup(matches(&[("a", 1, "x")]));
    let c = ctx();
    c.cancel.cancel();
    let r = s.tools.call("grep", &json!({"pattern": "x"}), &c);
    assert_eq!(r.content, "Error: tool call aborted before dispatch");
    let info = r.error.unwrap().info.unwrap();
    assert_eq!(
        (info.name.as_str(), info.code.as_str()),
        ("AbortError", "ABORTED_BEFORE_DISPATCH")
    );
    assert!(s.fake.greps.lock().unwrap().is_empty());
}

#[derive(Default)]
struct Deny {
    reason: Option<String>,
    checks: Mutex<Vec<String>>,
    afters: Mutex<Vec<String>>,
}

impl CallGuard for Deny {
    fn check(
        &self,
        tool: ToolName,
        _args: &Value,
        _ctx: &CallContext,
        _fs: &dyn DynFileSystem,
    ) -> Option<String> {
        self.checks.lock().unwrap().push(tool.to_string());
        self.reason.clone()
    }
    fn after(
        &self,
        tool: ToolName,
        _args: &Value,
        _ctx: &CallContext,
        _fs: &dyn DynFileSystem,
        result: &ToolResult,
    ) {
        self.afters
            .lock()
            .unwrap()
            .push(format!("{tool}: {}", result.content));
    }
}

#[test]
fn guard_runs_after_schema_and_before_own_checks() {
    let guard = Arc::new(Deny {
        reason: Some("path \"nope\" does not exist".into()),
        ..Deny::default()
    });
    let fake = Arc::new(Fake::default());
    let tools = Tools::new(config(), fake.clone()).with_guard(guard.clone());
    // Schema first: the guard never sees invalid arguments.
    let r = tools.call("glob", &json!({"path": 1}), &ctx());
    assert_eq!(
        r.content,
        "Error: invalid arguments: missing required property \"pattern\"; \"path\" must be a string"
    );
    assert!(guard.checks.lock().unwrap().is_empty());
    // Then the guard, before the tool's own blank check.
    let r = tools.call("glob", &json!({"pattern": " "}), &ctx());
    assert_eq!(r.content, "Error: path \"nope\" does not exist");
    assert_eq!(r.error.unwrap().info, None);
    assert!(fake.globs.lock().unwrap().is_empty());
    assert!(guard.afters.lock().unwrap().is_empty());
}

#[test]
fn guard_sees_the_final_result() {
    let guard = Arc::new(Deny::default());
    let s = grep_setup(matches(&[]));
    let tools = s.tools.clone().with_guard(guard.clone());
    tools.call("grep", &json!({"pattern": "x"}), &ctx());
    assert_eq!(
        *guard.afters.lock().unwrap(),
        vec!["grep: No matches found".to_string()]
    );
}

#[test]
fn argument_errors_are_plain() {
    let s = setup_with(config(), Fake::default(), FakeSpill::default());
    for (tool, args, msg) in [
        ("grep", json!({}), "invalid arguments: missing required property \"pattern\""),
        ("grep", json!("x"), "invalid arguments: \"arguments\" must be an object"),
        ("grep", json!({"pattern": "x", "path": null}), "invalid arguments: \"path\" must be a string"),
        ("glob", json!({"pattern": "\u{FEFF}"}), "pattern must be a non-empty string"),
        ("grep", json!({"pattern": ""}), "pattern must be a non-empty string"),
        ("grep", json!({"pattern": "x", "include": "*.ts,*.js"}), "include must be one glob, not a comma-separated list (use {a,b} alternation instead)"),
        ("grep", json!({"pattern": "x", "include": "!x"}), "include must be a positive glob filter; negated patterns (\"!\u{2026}\") are not supported"),
    ] {
        let r = s.tools.call(tool, &args, &ctx());
        assert_eq!(r.content, format!("Error: {msg}"));
    }
    let r = s.tools.call("bash", &json!({}), &ctx());
    assert!(r.is_error);
    assert!(
        r.content.starts_with("Error: unknown tool \"bash\""),
        "{}",
        r.content
    );
}

// ---- timeout and cancellation ----

#[test]
fn timeout_cancels_the_work_and_reports_tool_timeout() {
    let mut c = config();
    c.search.timeout_ms = 50;
    for tool in ["glob", "grep"] {
        let s = setup_with(
            c.clone(),
            Fake {
                spin: true,
                ..Fake::default()
            },
            FakeSpill::default(),
        );
        let r = s.tools.call(tool, &json!({"pattern": "x"}), &ctx());
        assert_eq!(r.content, "Error: tool call timed out after 50ms");
        let info = r.error.unwrap().info.unwrap();
        assert_eq!(
            (info.name.as_str(), info.code.as_str()),
            ("ToolTimeoutError", "TOOL_TIMEOUT")
        );
        // The backend's token was cancelled: that is what stopped the spin.
        let cancelled = match tool {
            "glob" => s.fake.globs.lock().unwrap()[0].cancel.is_cancelled(),
            _ => s.fake.greps.lock().unwrap()[0].cancel.is_cancelled(),
        };
        assert!(cancelled);
    }
}

#[test]
fn caller_cancellation_is_search_aborted() {
    let s = setup_with(
        config(),
        Fake {
            spin: true,
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let c = ctx();
    let caller = c.cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(30));
        caller.cancel();
    });
    let r = s.tools.call("grep", &json!({"pattern": "x"}), &c);
    canceller.join().unwrap();
    assert_eq!(
        r.content,
        "Error: grep was aborted before completion (tool timeout or caller cancellation)"
    );
    assert_eq!(code(&r).as_deref(), Some("SEARCH_ABORTED"));
}

// ---- spill-policy (maxInlineBytes) ----

#[test]
fn inline_cap_replaces_large_text_of_direct_calls() {
    let line = "z".repeat(1500);
    let rows: Vec<(String, u64, &str)> = (0..40)
        .map(|i| (format!("f{i:02}"), 1, line.as_str()))
        .collect();
    let rows: Vec<(&str, u64, &str)> = rows.iter().map(|(p, n, l)| (p.as_str(), *n, *l)).collect();
    let mut c = Config::default();
    assert_eq!(c.spill.max_inline_bytes, Some(50_000));
    c.search.grep_max_matches = 1000;
    let s = setup_with(
        c,
        Fake {
            grep: Mutex::new(Some(matches(&rows))),
            ..Fake::default()
        },
        FakeSpill::default(),
    );
    let r = s.tools.call("grep", &json!({"pattern": "z"}), &ctx());
    assert!(r.content.len() <= 50_000);
    assert!(r
        .content
        .starts_with("Found 40 matches\n\nf00\nLine 1: zzz"));
    assert!(r.content.contains("\n\n(Omitted "));
    assert!(r.content.ends_with(
        " bytes. Full formatted result stored at: /spill/grep.txt. Use the fake retrieval hint.)"
    ));
    let saves = s.spill.saves.lock().unwrap();
    assert_eq!(saves[0].2, "grep.txt");
    assert!(saves[0].3.len() > 50_000);
    assert!(saves[0].3.starts_with("Found 40 matches"));
    // A nested call keeps its text.
    drop(saves);
    let r = s
        .tools
        .call("grep", &json!({"pattern": "z"}), &ctx().nested());
    assert!(r.content.len() > 50_000);
}
