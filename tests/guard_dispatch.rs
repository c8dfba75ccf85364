//! The guard inside the dispatch a harness uses (`contract.md` §5): denials
//! as results, the guard never changing a call it allows, counters fed by
//! real greps, and the command line with a persisted session.

use std::path::Path;
use std::sync::Arc;

use dsh_search::config::Config;
use dsh_search::tool::{CallContext, Tools};
use dsh_search::Guard;
use dsh_search::SearchBackend;
use serde_json::json;

use crate::util::fs::TestFs;
use crate::util::ws::Ws;

/// A workdir with a small tree.
fn small_tree() -> Ws {
    let ws = Ws::new();
    for (p, content) in [
        ("README.md", "# readme\n"),
        ("notes.txt", "alpha\nbeta\nalpha\n"),
        ("src/main.rs", "fn main() {}\n"),
        ("src/lib.rs", "pub mod guard;\n"),
        ("src/guard.rs", "// guard\n"),
    ] {
        ws.file(p, content);
    }
    ws
}

/// The backends the dispatch tests run on: every behaviour on both.
const BACKENDS: &[&str] = &["native", "rg"];

fn backend(name: &str) -> Arc<dyn SearchBackend> {
    match name {
        "native" => Arc::new(crate::util::rg::native()),
        _ => Arc::new(crate::util::rg::reference_backend()),
    }
}

fn tools(guard: bool) -> Tools {
    tools_on(BACKENDS[0], guard)
}

fn tools_on(b: &str, guard: bool) -> Tools {
    let t = Tools::new(Config::default(), backend(b));
    if guard {
        t.with_guard(Arc::new(Guard::default()))
    } else {
        t
    }
}

#[test]
fn a_denial_is_a_plain_error_result() {
    let ws = small_tree();
    let root = ws.root.clone();
    let r = tools(true).call(
        "grep",
        &json!({"pattern": "fn", "path": "src/gaurd.rs"}),
        &CallContext::new(&root),
    );
    assert!(r.is_error);
    assert_eq!(
        r.content,
        r#"Error: path "src/gaurd.rs" does not exist; the nearest existing directory is "src", whose closest entries are "src/guard.rs", "src/main.rs", "src/lib.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#
    );
    let err = r.error.unwrap();
    assert_eq!(err.info, None);
    assert_eq!(format!("Error: {}", err.message), r.content);
}

/// The dispatch hands the guard its own filesystem: a workspace that is
/// not the host disk is guarded as itself (a missing path is denied with
/// the nearest names from the in-memory tree, not from the host disk).
#[test]
fn the_guard_looks_at_the_tools_filesystem() {
    let ws = small_tree();
    let root = ws.root.clone();
    let mount = Path::new("/dsh-search-test-mount/dispatch");
    assert!(
        !mount.exists(),
        "{} must not exist on the host",
        mount.display()
    );
    let t = tools(true).with_filesystem(Arc::new(TestFs::mounted(&root, mount)));
    let ctx = CallContext::new(mount).session("s");
    let r = t.call("read", &json!({"file_path": "src/mian.rs"}), &ctx);
    assert_eq!(
        r.content,
        r#"Error: file_path "src/mian.rs" does not exist; the nearest existing directory is "src", whose closest entries are "src/main.rs", "src/lib.rs", "src/guard.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#
    );
    let r = t.call("read", &json!({"file_path": "src/main.rs"}), &ctx);
    assert_eq!(
        r.content,
        format!(
            "<path>{}/src/main.rs</path>\n<type>file</type>\n<content>\n1: fn main() {{}}\n\n(End of file - total 1 lines)\n</content>",
            mount.display()
        )
    );
    let edit = json!({"file_path": "notes.txt", "old_string": "alpha", "new_string": "z"});
    let r = t.call("edit", &edit, &ctx);
    assert_eq!(
        r.content,
        r#"Error: old_string matches 2 times in "notes.txt"; include more surrounding lines to make it unique, or set replace_all to true to replace every occurrence"#
    );
}

#[test]
fn schema_errors_come_before_the_guard() {
    let ws = small_tree();
    let root = ws.root.clone();
    let r = tools(true).call(
        "grep",
        &json!({"path": "missing"}),
        &CallContext::new(&root),
    );
    assert_eq!(
        r.content,
        r#"Error: invalid arguments: missing required property "pattern""#
    );
}

#[test]
fn the_guard_never_changes_a_call_it_allows() {
    let ws = small_tree();
    let root = ws.root.clone();
    let ctx = CallContext::new(&root).session("equiv");
    let table = [
        ("glob", json!({"pattern": "*.rs"})),
        ("glob", json!({"pattern": "*", "path": "src"})),
        ("glob", json!({"pattern": "*", "path": "./src/"})),
        (
            "glob",
            json!({"pattern": "*.md", "path": root.to_str().unwrap()}),
        ),
        ("glob", json!({"pattern": "*", "path": ""})),
        ("glob", json!({"pattern": "[", "path": "src"})),
        ("grep", json!({"pattern": "alpha"})),
        (
            "grep",
            json!({"pattern": "fn", "path": "src", "include": "*.rs"}),
        ),
        ("grep", json!({"pattern": "fn", "path": "src/main.rs"})),
        ("grep", json!({"pattern": "nothing-here", "path": "src"})),
        ("grep", json!({"pattern": "(", "path": "src"})),
        ("grep", json!({"pattern": "x", "path": "  "})),
        ("grep", json!({"pattern": "x", "path": "a\u{0}b"})),
        ("grep", json!({"pattern": "x", "include": "!*.rs"})),
    ];
    for b in BACKENDS {
        let (on, off) = (tools_on(b, true), tools_on(b, false));
        for (tool, args) in &table {
            let with = on.call(tool, args, &ctx);
            let without = off.call(tool, args, &ctx);
            assert_eq!(with, without, "{b}: {tool} {args}");
        }
    }
}

#[test]
fn every_denied_call_fails_without_the_guard_too() {
    let ws = small_tree();
    let root = ws.root.clone();
    let (on, off) = (tools(true), tools(false));
    let ctx = CallContext::new(&root);
    for (tool, args) in [
        ("glob", json!({"pattern": "*", "path": "srcc"})),
        ("grep", json!({"pattern": "x", "path": "src/gaurd.rs"})),
        ("grep", json!({"pattern": "x", "path": "notes.txt/"})),
        ("grep", json!({"pattern": "x", "path": "src/main.rs/x"})),
    ] {
        let a = on.call(tool, &args, &ctx);
        assert!(
            a.is_error && a.error.as_ref().unwrap().info.is_none(),
            "{tool} {args}"
        );
        let b = off.call(tool, &args, &ctx);
        assert!(b.is_error, "{tool} {args}: {}", b.content);
        assert_eq!(b.error.unwrap().code(), Some("SEARCH_FAILED"));
    }
}

#[test]
fn real_empty_greps_block_the_sixth_and_matches_reset() {
    let ws = small_tree();
    let root = ws.root.clone();
    let t = tools(true);
    let ctx = CallContext::new(&root).session("s");
    let empty = json!({"pattern": "NoSuchThing", "path": "src"});
    for _ in 0..4 {
        assert_eq!(t.call("grep", &empty, &ctx).content, "No matches found");
    }
    let found = t.call("grep", &json!({"pattern": "fn", "path": "src/"}), &ctx);
    assert!(found.content.starts_with("Found "), "{}", found.content);
    for _ in 0..5 {
        assert_eq!(t.call("grep", &empty, &ctx).content, "No matches found");
    }
    assert_eq!(
        t.call("grep", &empty, &ctx).content,
        r#"Error: grep found no matches in "src" 5 times in a row; stop searching it with new patterns: read the file directly, use another source, or report that nothing was found"#
    );
    // Another session and another target are untouched.
    let other = CallContext::new(&root).session("t");
    assert_eq!(t.call("grep", &empty, &other).content, "No matches found");
    let whole = json!({"pattern": "NoSuchThing"});
    assert_eq!(t.call("grep", &whole, &ctx).content, "No matches found");
}

// ------------------------------------------------------------------ CLI

/// The binary on `ws`: (exit code, stdout).
fn run(ws: &Ws, args: &[&str]) -> (i32, String) {
    let out = ws
        .bin()
        .args(["--backend", BACKENDS[0]])
        .args(args)
        .arg("--cwd")
        .arg(&ws.root)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
    )
}

#[test]
fn cli_five_empty_greps_then_the_sixth_is_denied() {
    let cli = small_tree();
    let grep = ["grep", "NoSuchThing", "src", "--session", "S"];
    for i in 0..5 {
        assert_eq!(
            run(&cli, &grep),
            (1, "No matches found\n".to_string()),
            "call {i}"
        );
    }
    assert_eq!(
        run(&cli, &grep),
        (
            2,
            "Error: grep found no matches in \"src\" 5 times in a row; stop searching it with new patterns: read the file directly, use another source, or report that nothing was found\n".to_string()
        )
    );
    // Another session starts from zero.
    let other = ["grep", "NoSuchThing", "src", "--session", "T"];
    assert_eq!(run(&cli, &other).0, 1);
    // Without a session nothing is counted.
    for _ in 0..6 {
        assert_eq!(run(&cli, &["grep", "NoSuchThing", "src"]).0, 1);
    }
}

#[test]
fn cli_missing_path_is_denied_and_config_can_disable() {
    let cli = small_tree();
    assert_eq!(
        run(&cli, &["grep", "fn", "src/gaurd.rs"]),
        (
            2,
            "Error: path \"src/gaurd.rs\" does not exist; the nearest existing directory is \"src\", whose closest entries are \"src/guard.rs\", \"src/main.rs\", \"src/lib.rs\"; list it with glob {\"pattern\":\"*\",\"path\":\"src\"}, then retry with a path that exists\n".to_string()
        )
    );
    let cfg = cli.base.join("off.json");
    std::fs::write(&cfg, r#"{"guard": {"disabled": true}}"#).unwrap();
    let (code, out) = run(
        &cli,
        &[
            "grep",
            "fn",
            "src/gaurd.rs",
            "--config",
            cfg.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 2);
    assert!(
        out.starts_with("Error: grep search failed (exit 2): "),
        "{out}"
    );
}
