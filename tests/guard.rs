//! The search-path guard (`contract.md` §7): every rule, every case where it
//! allows, its counters, its messages (literal).

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use dsh_search::fs::LocalFs;
use dsh_search::tool::{CallContext, ToolName, ToolResult, Tools};
use dsh_search::{config::GuardConfig, Guard};
use serde_json::{json, Value};

use crate::util::fs::TestFs;
use crate::util::ws::Ws;

/// The workspace filesystem of these tests: the local disk.
static DISK: LazyLock<LocalFs> = LazyLock::new(LocalFs::new);

/// A workdir with a small tree; `<base>/outside` sits next to it.
fn small_tree() -> Ws {
    let ws = Ws::new();
    for (p, content) in [
        ("README.md", "# readme\n"),
        ("notes.txt", "alpha\nbeta\nalpha\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "pub mod guard;\n"),
        ("src/guard.rs", "// guard\n"),
        ("src/tool/mod.rs", "mod x;\n"),
        ("../outside/o.txt", "o\n"),
    ] {
        ws.file(p, content);
    }
    ws.dir("docs");
    ws
}

fn check(ws: &Ws, tool: &str, args: Value) -> Option<String> {
    let tool: ToolName = tool.parse().expect("one of the five tools");
    Guard::default().check(tool, &args, &ws.ctx(), &*DISK)
}

/// The tools on the local disk with the default guard.
fn guarded_tools() -> Tools {
    let backend = std::sync::Arc::new(dsh_search::NativeBackend::new());
    Tools::new(dsh_search::Config::default(), backend)
        .with_guard(std::sync::Arc::new(Guard::default()))
}

fn no_matches() -> ToolResult {
    ToolResult::empty_search("No matches found".to_string(), json!({"matches": []}))
}

fn some_matches() -> ToolResult {
    ToolResult::ok(
        "Found 1 match\nnotes.txt:\n  Line 1: alpha".to_string(),
        json!({"matches": [{"path": "notes.txt", "lineNumber": 1, "line": "alpha"}]}),
    )
}

// ---------------------------------------------------------------- missing paths

#[test]
fn grep_missing_file_names_closest_siblings_and_glob_call() {
    let ws = small_tree();
    assert_eq!(
        check(&ws, "grep", json!({"pattern": "x", "path": "src/gaurd.rs"})).unwrap(),
        r#"path "src/gaurd.rs" does not exist; the nearest existing directory is "src", whose closest entries are "src/guard.rs", "src/main.rs", "src/lib.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#
    );
}

#[test]
fn glob_missing_directory_under_the_workdir() {
    let ws = small_tree();
    assert_eq!(
        check(&ws, "glob", json!({"pattern": "*.rs", "path": "srcc/tool"})).unwrap(),
        r#"path "srcc/tool" does not exist; the nearest existing directory is ".", whose closest entries are "src/", "docs/", "notes.txt"; list it with glob {"pattern":"*"}, then retry with a path that exists"#
    );
}

#[test]
fn fewer_than_three_entries_lists_what_there_is() {
    let ws = small_tree();
    assert_eq!(
        check(&ws, "glob", json!({"pattern": "*", "path": "src/tool/tol"})).unwrap(),
        r#"path "src/tool/tol" does not exist; the nearest existing directory is "src/tool", whose closest entries are "src/tool/mod.rs"; list it with glob {"pattern":"*","path":"src/tool"}, then retry with a path that exists"#
    );
}

#[test]
fn nearest_directory_that_is_empty() {
    let ws = small_tree();
    assert_eq!(
        check(
            &ws,
            "grep",
            json!({"pattern": "x", "path": "docs/api/index.md"})
        )
        .unwrap(),
        r#"path "docs/api/index.md" does not exist; the nearest existing directory, "docs", is empty; list the workdir with glob {"pattern":"*"}, then retry with a path that exists"#
    );
}

#[test]
fn a_file_used_as_a_directory() {
    let ws = small_tree();
    let want = r#"path "src/main.rs/x" does not exist: "src/main.rs" is a file, not a directory; use that file itself, or list "src" with glob {"pattern":"*","path":"src"}"#;
    assert_eq!(
        check(
            &ws,
            "grep",
            json!({"pattern": "x", "path": "src/main.rs/x"})
        )
        .unwrap(),
        want
    );
}

#[test]
fn a_trailing_slash_on_a_file_is_denied_for_search() {
    // rg opens `notes.txt/` and fails with "Not a directory".
    let ws = small_tree();
    assert_eq!(
        check(&ws, "grep", json!({"pattern": "x", "path": "notes.txt/"})).unwrap(),
        r#"path "notes.txt/" does not exist: "notes.txt" is a file, not a directory; use that file itself, or list "." with glob {"pattern":"*"}"#
    );
}

#[test]
fn absolute_paths_inside_the_workdir_display_relative() {
    let ws = small_tree();
    let raw = ws.root.join("src/gaurd.rs");
    let raw = raw.to_str().unwrap();
    let got = check(&ws, "grep", json!({"pattern": "x", "path": raw})).unwrap();
    assert_eq!(
        got,
        format!(
            r#"path "{raw}" does not exist; the nearest existing directory is "src", whose closest entries are "src/guard.rs", "src/main.rs", "src/lib.rs"; list it with glob {{"pattern":"*","path":"src"}}, then retry with a path that exists"#
        )
    );
}

#[test]
fn paths_outside_the_workdir_display_absolute() {
    let ws = small_tree();
    let outside = ws.root.parent().unwrap().join("outside");
    let o = outside.to_str().unwrap();
    assert_eq!(
        check(
            &ws,
            "glob",
            json!({"pattern": "*", "path": "../outside/p.txt"})
        )
        .unwrap(),
        format!(
            r#"path "../outside/p.txt" does not exist; the nearest existing directory is "{o}", whose closest entries are "{o}/o.txt"; list it with glob {{"pattern":"*","path":"{o}"}}, then retry with a path that exists"#
        )
    );
}

#[test]
fn read_of_a_missing_file_is_denied() {
    let ws = small_tree();
    let want = r#"file_path "src/mian.rs" does not exist; the nearest existing directory is "src", whose closest entries are "src/main.rs", "src/lib.rs", "src/guard.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#;
    assert_eq!(
        check(&ws, "read", json!({"file_path": "src/mian.rs"})).unwrap(),
        want
    );
    // The crate has no `read_image` tool: the dispatch answers the unknown
    // name, and the guard, which sees tools by name only, is never asked.
    let r = guarded_tools().call(
        "read_image",
        &json!({"file_path": "src/mian.rs"}),
        &ws.ctx(),
    );
    assert!(
        r.content.starts_with("Error: unknown tool \"read_image\""),
        "{}",
        r.content
    );
}

#[test]
fn read_resolves_dotdot_against_the_real_workdir() {
    // seed-reference.md §6.1: with a `..` segment the workdir is
    // canonicalized first. Workdir `<tmp>/link` -> `<tmp>/ws/src`, so
    // `../README.md` is `<tmp>/ws/README.md`, which exists.
    let ws = small_tree();
    let link = ws.root.parent().unwrap().join("link");
    std::os::unix::fs::symlink(ws.root.join("src"), &link).unwrap();
    let ctx = CallContext::new(&link);
    let g = Guard::default();
    assert_eq!(
        g.check(
            ToolName::Read,
            &json!({"file_path": "../README.md"}),
            &ctx,
            &*DISK
        ),
        None
    );
    assert_eq!(
        g.check(
            ToolName::Read,
            &json!({"file_path": "main.rs"}),
            &ctx,
            &*DISK
        ),
        None
    );
    // The same resolution for a missing file: the nearest directory is the
    // real parent, outside the workdir, so it is shown absolute.
    let real = ws.root.to_str().unwrap();
    assert_eq!(
        g.check(
            ToolName::Read,
            &json!({"file_path": "../READM.md"}),
            &ctx,
            &*DISK
        )
        .unwrap(),
        format!(
            r#"file_path "../READM.md" does not exist; the nearest existing directory is "{real}", whose closest entries are "{real}/README.md", "{real}/docs/", "{real}/notes.txt"; list it with glob {{"pattern":"*","path":"{real}"}}, then retry with a path that exists"#
        )
    );
}

#[test]
fn control_and_bidi_characters_are_escaped() {
    let ws = small_tree();
    assert_eq!(
        check(
            &ws,
            "grep",
            json!({"pattern": "x", "path": "docs/\u{1b}[31mred\u{202e}\n"})
        )
        .unwrap(),
        r#"path "docs/\u001b[31mred\u202e\n" does not exist; the nearest existing directory, "docs", is empty; list the workdir with glob {"pattern":"*"}, then retry with a path that exists"#
    );
}

#[test]
fn names_that_are_not_utf8_are_shown_lossily() {
    use std::os::unix::ffi::OsStrExt;
    let ws = small_tree();
    let name = std::ffi::OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(ws.root.join("docs").join(name), "x").unwrap();
    assert_eq!(
        check(&ws, "read", json!({"file_path": "docs/cafe.txt"})).unwrap(),
        r#"file_path "docs/cafe.txt" does not exist; the nearest existing directory is "docs", whose closest entries are "docs/caf�.txt"; list it with glob {"pattern":"*","path":"docs"}, then retry with a path that exists"#
    );
}

#[test]
fn a_dangling_symlink_does_not_exist() {
    let ws = small_tree();
    std::os::unix::fs::symlink("nowhere", ws.root.join("docs/dangling")).unwrap();
    assert!(check(&ws, "read", json!({"file_path": "docs/dangling"})).is_some());
    assert!(check(
        &ws,
        "grep",
        json!({"pattern": "x", "path": "docs/dangling"})
    )
    .is_some());
}

// ---------------------------------------------------------------- allowed

#[test]
fn existing_paths_pass() {
    let ws = small_tree();
    for (tool, args) in [
        ("glob", json!({"pattern": "*", "path": "src"})),
        ("glob", json!({"pattern": "*", "path": "src/"})),
        (
            "glob",
            json!({"pattern": "*", "path": "./src/../src/main.rs"}),
        ),
        ("grep", json!({"pattern": "x", "path": "notes.txt"})),
        (
            "grep",
            json!({"pattern": "x", "path": ws.root.to_str().unwrap()}),
        ),
        ("grep", json!({"pattern": "x", "path": "../outside"})),
        ("read", json!({"file_path": "src/lib.rs"})),
        ("read", json!({"file_path": "src"})),
        ("read", json!({"file_path": "notes.txt/"})),
    ] {
        assert_eq!(check(&ws, tool, args.clone()), None, "{tool} {args}");
    }
}

#[test]
fn no_usable_path_argument_is_allowed() {
    let ws = small_tree();
    for (tool, args) in [
        ("glob", json!({"pattern": "*"})),
        ("grep", json!({"pattern": "x"})),
        ("grep", json!({"pattern": "x", "path": 3})),
        ("grep", json!({"pattern": "x", "path": null})),
        ("glob", json!({"pattern": "*", "path": ["src"]})),
        ("grep", json!({"pattern": "x", "path": ""})),
        ("grep", json!({"pattern": "x", "path": "  \t"})),
        ("read", json!({})),
        ("read", json!({"file_path": 1})),
        ("read", json!({"file_path": " "})),
        ("grep", json!("not an object")),
        ("read", Value::Null),
    ] {
        assert_eq!(check(&ws, tool, args.clone()), None, "{tool} {args}");
    }
}

#[test]
fn unusable_workdirs_are_allowed() {
    let ws = small_tree();
    let args = json!({"pattern": "x", "path": "missing"});
    let g = Guard::default();
    for wd in [
        ws.root.join("no/such/dir"),
        ws.root.join("notes.txt"),
        PathBuf::from("relative/dir"),
    ] {
        let ctx = CallContext::new(&wd);
        assert_eq!(
            g.check(ToolName::Grep, &args, &ctx, &*DISK),
            None,
            "{}",
            wd.display()
        );
        assert_eq!(
            g.check(
                ToolName::Read,
                &json!({"file_path": "missing"}),
                &ctx,
                &*DISK
            ),
            None
        );
    }
}

#[test]
fn stat_failures_other_than_absence_are_allowed() {
    let ws = small_tree();
    // ELOOP: a symlink loop is neither present nor certainly absent.
    std::os::unix::fs::symlink("loop", ws.root.join("loop")).unwrap();
    assert_eq!(
        check(&ws, "grep", json!({"pattern": "x", "path": "loop"})),
        None
    );
    assert_eq!(check(&ws, "read", json!({"file_path": "loop/a"})), None);
    // A NUL byte cannot be handed to the OS at all: the tool reports it.
    assert_eq!(
        check(&ws, "glob", json!({"pattern": "*", "path": "a\u{0}b"})),
        None
    );
}

#[test]
fn other_tools_pass_untouched() {
    let ws = small_tree();
    assert_eq!(
        check(
            &ws,
            "write",
            json!({"file_path": "new/dir/file.txt", "content": "x"})
        ),
        None
    );
    // A name that is no tool (names are case-sensitive) is the dispatch's
    // error, not the guard's denial of a missing path.
    for name in ["bash", "Grep"] {
        let r = guarded_tools().call(name, &json!({"pattern": "x", "path": "missing"}), &ws.ctx());
        assert!(
            r.content
                .starts_with(&format!("Error: unknown tool \"{name}\"")),
            "{name}: {}",
            r.content
        );
    }
}

#[test]
fn disabled_guard_allows_everything_and_counts_nothing() {
    let ws = small_tree();
    let g = Guard::new(GuardConfig {
        disabled: true,
        ..GuardConfig::default()
    });
    let ctx = ws.session("s");
    assert_eq!(
        g.check(
            ToolName::Grep,
            &json!({"pattern": "x", "path": "missing"}),
            &ctx,
            &*DISK
        ),
        None
    );
    assert_eq!(
        g.check(
            ToolName::Edit,
            &json!({"file_path": "notes.txt", "old_string": "zzz", "new_string": "y"}),
            &ctx,
            &*DISK,
        ),
        None
    );
    for _ in 0..10 {
        g.after(
            ToolName::Grep,
            &json!({"pattern": "x"}),
            &ctx,
            &*DISK,
            &no_matches(),
        );
    }
    assert_eq!(
        g.check(ToolName::Grep, &json!({"pattern": "x"}), &ctx, &*DISK),
        None
    );
}

// ---------------------------------------------------------------- edit

fn edit(old: &str) -> Value {
    json!({"file_path": "notes.txt", "old_string": old, "new_string": "NEW"})
}

#[test]
fn edit_old_string_absent_is_denied() {
    let ws = small_tree();
    assert_eq!(
        check(&ws, "edit", edit("gamma")).unwrap(),
        r#"old_string was not found in "notes.txt"; the file may have changed since you read it: read it again, then rebuild old_string from its current content"#
    );
}

#[test]
fn edit_old_string_ambiguous_is_denied_with_the_count() {
    let ws = small_tree();
    assert_eq!(
        check(&ws, "edit", edit("alpha")).unwrap(),
        r#"old_string matches 2 times in "notes.txt"; include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence"#
    );
}

#[test]
fn edit_counts_non_overlapping() {
    let ws = small_tree();
    ws.file("a.txt", "aaaa");
    let args = |old: &str| json!({"file_path": "a.txt", "old_string": old, "new_string": "b"});
    assert!(check(&ws, "edit", args("aa"))
        .unwrap()
        .contains("matches 2 times"));
    assert!(check(&ws, "edit", args("aaa")).is_none());
}

#[test]
fn edit_allowed_cases() {
    let ws = small_tree();
    for args in [
        edit("beta"),
        json!({"file_path": "notes.txt", "old_string": "alpha", "new_string": "x", "replace_all": true}),
        json!({"file_path": "notes.txt", "old_string": "alpha", "new_string": "alpha"}),
        json!({"file_path": "notes.txt", "old_string": "zzz", "new_string": "zzz"}),
        json!({"file_path": "notes.txt", "old_string": "", "new_string": "x"}),
        json!({"file_path": "notes.txt", "old_string": 1, "new_string": "x"}),
        json!({"file_path": "notes.txt", "new_string": "x"}),
        json!({"file_path": "notes.txt", "old_string": "zzz", "new_string": "x", "replace_all": "yes"}),
        json!({"file_path": "missing.txt", "old_string": "zzz", "new_string": "x"}),
        json!({"file_path": "src", "old_string": "zzz", "new_string": "x"}),
        json!({"file_path": " ", "old_string": "zzz", "new_string": "x"}),
        json!({"old_string": "zzz", "new_string": "x"}),
    ] {
        assert_eq!(check(&ws, "edit", args.clone()), None, "{args}");
    }
}

#[test]
fn edit_replace_all_still_needs_one_occurrence() {
    let ws = small_tree();
    let args = json!({"file_path": "notes.txt", "old_string": "gamma", "new_string": "x", "replace_all": true});
    assert!(check(&ws, "edit", args)
        .unwrap()
        .starts_with("old_string was not found"));
}

#[test]
fn edit_normalizes_crlf_in_file_and_old_string() {
    let ws = small_tree();
    ws.file("crlf.txt", "one\r\ntwo\r\nthree\r\n");
    ws.file("lf.txt", "one\ntwo\nthree\n");
    ws.file("lone.txt", "one\rtwo\n");
    let args = |f: &str, old: &str| json!({"file_path": f, "old_string": old, "new_string": "x"});
    assert_eq!(check(&ws, "edit", args("crlf.txt", "one\ntwo")), None);
    assert_eq!(check(&ws, "edit", args("crlf.txt", "one\r\ntwo")), None);
    assert_eq!(check(&ws, "edit", args("lf.txt", "one\r\ntwo")), None);
    // A lone CR is kept on both sides: "\r" is not "\n".
    assert_eq!(check(&ws, "edit", args("lone.txt", "one\rtwo")), None);
    assert!(check(&ws, "edit", args("lone.txt", "one\ntwo")).is_some());
    assert!(check(&ws, "edit", args("lf.txt", "one\rtwo")).is_some());
}

#[test]
fn edit_strips_the_bom_before_counting() {
    let ws = small_tree();
    ws.file("bom.txt", "\u{FEFF}start\nend\n");
    let args = |old: &str| json!({"file_path": "bom.txt", "old_string": old, "new_string": "x"});
    assert_eq!(check(&ws, "edit", args("start")), None);
    // edit decodes without the BOM, so an old_string that includes it is
    // absent there too.
    assert!(check(&ws, "edit", args("\u{FEFF}start"))
        .unwrap()
        .starts_with("old_string was not found in \"bom.txt\""));
}

#[test]
fn edit_of_binary_invalid_or_large_files_is_left_to_edit() {
    let ws = small_tree();
    ws.file("bin.dat", b"abc\0abc");
    ws.file("latin1.txt", b"caf\xe9 abc");
    let args = |f: &str| json!({"file_path": f, "old_string": "zzz", "new_string": "x"});
    assert_eq!(check(&ws, "edit", args("bin.dat")), None);
    assert_eq!(check(&ws, "edit", args("latin1.txt")), None);

    // Exactly maxEditBytes is checked; one byte more is not.
    ws.file("ten.txt", "0123456789");
    let g = Guard::new(GuardConfig {
        max_edit_bytes: 10,
        ..GuardConfig::default()
    });
    assert!(g
        .check(ToolName::Edit, &args("ten.txt"), &ws.ctx(), &*DISK)
        .is_some());
    ws.file("ten.txt", "0123456789A");
    assert_eq!(
        g.check(ToolName::Edit, &args("ten.txt"), &ws.ctx(), &*DISK),
        None
    );
}

#[test]
fn edit_resolves_file_path_like_the_file_tools() {
    let ws = small_tree();
    let abs = ws.root.join("notes.txt");
    let args = |p: &str| json!({"file_path": p, "old_string": "gamma", "new_string": "x"});
    for p in ["./notes.txt", "src/../notes.txt", abs.to_str().unwrap()] {
        assert_eq!(
            check(&ws, "edit", args(p)).unwrap(),
            r#"old_string was not found in "notes.txt"; the file may have changed since you read it: read it again, then rebuild old_string from its current content"#,
            "{p}"
        );
    }
}

// ---------------------------------------------------------------- zero results

/// The guard's `after` for a grep of `src` that ended with `result`.
fn after_grep_src(g: &Guard, ctx: &CallContext, result: &ToolResult) {
    g.after(ToolName::Grep, &grep_in(Some("src")), ctx, &*DISK, result);
}

/// The guard's `check` of a grep of `src`.
fn check_grep_src(g: &Guard, ctx: &CallContext) -> Option<String> {
    g.check(ToolName::Grep, &grep_in(Some("src")), ctx, &*DISK)
}

fn grep_in(path: Option<&str>) -> Value {
    match path {
        Some(p) => json!({"pattern": "nothing", "path": p}),
        None => json!({"pattern": "nothing"}),
    }
}

#[test]
fn five_empty_greps_block_the_sixth() {
    let ws = small_tree();
    let g = Guard::default();
    let ctx = ws.session("s1");
    for i in 0..5 {
        assert_eq!(check_grep_src(&g, &ctx), None, "call {i}");
        after_grep_src(&g, &ctx, &no_matches());
    }
    let want = r#"grep found no matches in "src" 5 times in a row; stop searching it with new patterns: read the file directly, use another source, or report that nothing was found"#;
    assert_eq!(check_grep_src(&g, &ctx).unwrap(), want);
    // Still blocked: a denial does not reset the count.
    assert_eq!(check_grep_src(&g, &ctx).unwrap(), want);
    // glob and read on the same target are not affected.
    assert_eq!(
        g.check(
            ToolName::Glob,
            &json!({"pattern": "*", "path": "src"}),
            &ctx,
            &*DISK
        ),
        None
    );
}

#[test]
fn the_workdir_is_the_target_without_a_path() {
    let ws = small_tree();
    let g = Guard::default();
    let ctx = ws.session("s1");
    let abs = ws.root.to_str().unwrap().to_string();
    // Absent path, ".", "./" and the absolute workdir are one target.
    for path in [None, Some("."), Some("./"), Some(abs.as_str()), None] {
        g.after(ToolName::Grep, &grep_in(path), &ctx, &*DISK, &no_matches());
    }
    assert_eq!(
        g.check(ToolName::Grep, &grep_in(None), &ctx, &*DISK)
            .unwrap(),
        r#"grep found no matches in "." 5 times in a row; stop searching it with new patterns: read the file directly, use another source, or report that nothing was found"#
    );
    assert!(g
        .check(ToolName::Grep, &grep_in(Some("src/..")), &ctx, &*DISK)
        .is_some());
    assert_eq!(check_grep_src(&g, &ctx), None);
}

#[test]
fn a_grep_with_results_resets_its_target() {
    let ws = small_tree();
    let g = Guard::default();
    let ctx = ws.session("s1");
    for _ in 0..4 {
        after_grep_src(&g, &ctx, &no_matches());
    }
    g.after(
        ToolName::Grep,
        &grep_in(Some("src/")),
        &ctx,
        &*DISK,
        &some_matches(),
    );
    for _ in 0..4 {
        after_grep_src(&g, &ctx, &no_matches());
    }
    assert_eq!(check_grep_src(&g, &ctx), None);
    after_grep_src(&g, &ctx, &no_matches());
    assert!(check_grep_src(&g, &ctx).is_some());
}

#[test]
fn errors_and_other_tools_do_not_count() {
    let ws = small_tree();
    let g = Guard::new(GuardConfig {
        zero_result_block: 1,
        ..GuardConfig::default()
    });
    let ctx = ws.session("s1");
    let err = ToolResult::error(dsh_search::tool::ToolError::plain("No matches found"));
    after_grep_src(&g, &ctx, &err);
    g.after(
        ToolName::Glob,
        &grep_in(Some("src")),
        &ctx,
        &*DISK,
        &no_matches(),
    );
    assert_eq!(check_grep_src(&g, &ctx), None);
    after_grep_src(&g, &ctx, &no_matches());
    assert!(check_grep_src(&g, &ctx)
        .unwrap()
        .contains("1 times in a row"));
}

#[test]
fn counters_are_per_session_and_per_target() {
    let ws = small_tree();
    let g = Guard::new(GuardConfig {
        zero_result_block: 2,
        ..GuardConfig::default()
    });
    let (a, b) = (ws.session("a"), ws.session("b"));
    after_grep_src(&g, &a, &no_matches());
    g.after(
        ToolName::Grep,
        &grep_in(Some("docs")),
        &a,
        &*DISK,
        &no_matches(),
    );
    after_grep_src(&g, &b, &no_matches());
    after_grep_src(&g, &a, &no_matches());
    assert!(check_grep_src(&g, &a).is_some());
    assert_eq!(
        g.check(ToolName::Grep, &grep_in(Some("docs")), &a, &*DISK),
        None
    );
    assert_eq!(check_grep_src(&g, &b), None);
    assert_eq!(
        g.check(ToolName::Grep, &grep_in(Some("src/main.rs")), &a, &*DISK),
        None
    );
    // A result in session b does not reset session a.
    after_grep_src(&g, &b, &some_matches());
    assert!(check_grep_src(&g, &a).is_some());
}

#[test]
fn without_a_session_nothing_is_counted() {
    let ws = small_tree();
    let g = Guard::new(GuardConfig {
        zero_result_block: 1,
        ..GuardConfig::default()
    });
    for _ in 0..3 {
        g.after(
            ToolName::Grep,
            &grep_in(Some("src")),
            &ws.ctx(),
            &*DISK,
            &no_matches(),
        );
    }
    assert_eq!(
        g.check(ToolName::Grep, &grep_in(Some("src")), &ws.ctx(), &*DISK),
        None
    );
}

#[test]
fn a_missing_path_is_reported_before_the_block() {
    let ws = small_tree();
    let g = Guard::new(GuardConfig {
        zero_result_block: 1,
        ..GuardConfig::default()
    });
    let ctx = ws.session("s");
    g.after(ToolName::Grep, &grep_in(None), &ctx, &*DISK, &no_matches());
    assert!(g
        .check(ToolName::Grep, &grep_in(Some("nope")), &ctx, &*DISK)
        .unwrap()
        .starts_with("path \"nope\" does not exist"));
}

#[test]
fn a_fifo_is_never_opened() {
    let ws = small_tree();
    let fifo = ws.root.join("pipe");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let args = json!({"file_path": "pipe", "old_string": "zzz", "new_string": "x"});
    assert_eq!(check(&ws, "edit", args), None);
    assert_eq!(check(&ws, "read", json!({"file_path": "pipe"})), None);
    assert_eq!(
        check(&ws, "grep", json!({"pattern": "x", "path": "pipe"})),
        None
    );
}

// ---------------------------------------------------------------- the workspace's filesystem

/// Where [`guarded`] shows the workspace: a path that does not exist on the
/// host.
const MOUNT: &str = "/dsh-search-test-mount/guarded";

/// `ws`'s tree seen at [`MOUNT`] through a filesystem that is not the host
/// disk.
fn guarded(ws: &Ws) -> TestFs {
    assert!(
        !Path::new(MOUNT).exists(),
        "{MOUNT} must not exist on the host"
    );
    TestFs::mounted(&ws.root, MOUNT)
}

#[test]
fn missing_paths_are_looked_up_in_the_workspace_filesystem() {
    let ws = small_tree();
    let fs = guarded(&ws);
    let g = Guard::default();
    let ctx = CallContext::new(MOUNT);
    let grep = json!({"pattern": "x", "path": "src/gaurd.rs"});
    // The nearest names come from the workspace's tree...
    assert_eq!(
        g.check(ToolName::Grep, &grep, &ctx, &fs).unwrap(),
        r#"path "src/gaurd.rs" does not exist; the nearest existing directory is "src", whose closest entries are "src/guard.rs", "src/main.rs", "src/lib.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#
    );
    assert_eq!(
        g.check(
            ToolName::Read,
            &json!({"file_path": "src/mian.rs"}),
            &ctx,
            &fs
        )
        .unwrap(),
        r#"file_path "src/mian.rs" does not exist; the nearest existing directory is "src", whose closest entries are "src/main.rs", "src/lib.rs", "src/guard.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#
    );
    // ... which the host disk does not have: there the workdir is unusable
    // and the guard cannot decide.
    assert_eq!(g.check(ToolName::Grep, &grep, &ctx, &*DISK), None);
    // What the workspace has is allowed; a host file outside it is not in
    // the workspace, and nothing in the workspace is near it.
    assert_eq!(
        g.check(
            ToolName::Read,
            &json!({"file_path": "README.md"}),
            &ctx,
            &fs
        ),
        None
    );
    let host = ws.root.join("README.md");
    assert_eq!(fs.host(&Path::new(MOUNT).join("README.md")).unwrap(), host);
    let on_host = json!({"file_path": host.to_str().unwrap()});
    assert_eq!(g.check(ToolName::Read, &on_host, &ctx, &fs), None);
    assert_eq!(g.check(ToolName::Read, &on_host, &ctx, &*DISK), None);
}

#[test]
fn edit_precheck_reads_the_workspace_filesystem() {
    let ws = small_tree();
    let fs = guarded(&ws);
    let g = Guard::default();
    let ctx = CallContext::new(MOUNT);
    let edit = |old: &str| json!({"file_path": "notes.txt", "old_string": old, "new_string": "z"});
    assert_eq!(
        g.check(ToolName::Edit, &edit("gamma"), &ctx, &fs).unwrap(),
        r#"old_string was not found in "notes.txt"; the file may have changed since you read it: read it again, then rebuild old_string from its current content"#
    );
    assert_eq!(
        g.check(ToolName::Edit, &edit("alpha"), &ctx, &fs).unwrap(),
        r#"old_string matches 2 times in "notes.txt"; include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence"#
    );
    assert_eq!(g.check(ToolName::Edit, &edit("beta"), &ctx, &fs), None);
}

#[test]
fn zero_result_counters_count_workspace_targets() {
    let ws = small_tree();
    let fs = guarded(&ws);
    let g = Guard::default();
    let ctx = CallContext::new(MOUNT).session("s");
    let grep = json!({"pattern": "x", "path": "src"});
    for _ in 0..5 {
        assert_eq!(g.check(ToolName::Grep, &grep, &ctx, &fs), None);
        g.after(ToolName::Grep, &grep, &ctx, &fs, &no_matches());
    }
    assert!(g.check(ToolName::Grep, &grep, &ctx, &fs).is_some());
}
