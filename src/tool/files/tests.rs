//! The file tools on a real disk: `read`, `write`,
//! `edit`, the observation policy and `LocalFs` (`seed-reference.md` §6,
//! §8.2–§8.4).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

use dsh_search::fs::{LocalFs, TextFs, WriteGuard};
use dsh_search::session::Sessions;
use dsh_search::tool::files::{self, FilesConfig, ObservationPolicy};
use dsh_search::tool::{CallContext, ToolResult};
use serde_json::{json, Value};

// The integration tests' filesystem that is not the local disk, shared
// with them (`tests/util/fs.rs`).
#[path = "../../../tests/util/fs.rs"]
#[allow(dead_code, unreachable_pub)]
mod test_fs;
use test_fs::TestFs;

/// A temp workspace with a local filesystem and an in-memory policy.
struct Ws {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    fs: TextFs,
    policy: ObservationPolicy,
    cfg: FilesConfig,
}

impl Ws {
    fn new() -> Ws {
        let tmp = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(tmp.path()).unwrap();
        Ws {
            _tmp: tmp,
            root,
            fs: TextFs::new(Arc::new(LocalFs::new())),
            policy: ObservationPolicy::new(Arc::new(Sessions::in_memory())),
            cfg: FilesConfig::default(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// The display path of `rel`, as messages show it.
    fn p(&self, rel: &str) -> String {
        self.path(rel).to_string_lossy().into_owned()
    }

    fn put(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    fn get(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.path(rel)).unwrap()
    }

    fn ctx(&self, session: Option<&str>) -> CallContext {
        let ctx = CallContext::new(&self.root);
        match session {
            Some(s) => ctx.session(s),
            None => ctx,
        }
    }

    /// The bare provider: no observation policy at all.
    fn call_bare(&self, tool: &str, args: Value) -> ToolResult {
        self.call_with(None, None, tool, args)
    }

    fn call_as(&self, session: Option<&str>, tool: &str, args: Value) -> ToolResult {
        self.call_with(Some(&self.policy), session, tool, args)
    }

    fn call_with(
        &self,
        policy: Option<&ObservationPolicy>,
        session: Option<&str>,
        tool: &str,
        args: Value,
    ) -> ToolResult {
        let f = match tool {
            "read" => files::read,
            "write" => files::write,
            "edit" => files::edit,
            _ => unreachable!(),
        };
        match f(&self.cfg, &self.fs, policy, &args, &self.ctx(session)) {
            Ok((content, value)) => ToolResult::ok(content, value),
            Err(e) => ToolResult::error(e),
        }
    }

    /// A call in session `s`.
    fn call(&self, tool: &str, args: Value) -> ToolResult {
        self.call_as(Some("s"), tool, args)
    }

    fn read(&self, rel: &str) -> ToolResult {
        self.call("read", json!({ "file_path": rel }))
    }
}

fn ok(r: &ToolResult) -> &str {
    assert!(!r.is_error, "unexpected error: {}", r.content);
    &r.content
}

/// An error result's content and code.
fn err(r: &ToolResult) -> (&str, Option<&str>) {
    assert!(r.is_error, "unexpected success: {}", r.content);
    (&r.content, r.error.as_ref().unwrap().code())
}

fn envelope(p: &str, body: &str) -> String {
    format!("<path>{p}</path>\n<type>file</type>\n<content>\n{body}\n</content>")
}

// ---- read ----------------------------------------------------------------

#[test]
fn read_exact_envelope_and_value() {
    let ws = Ws::new();
    ws.put("a.txt", "hello\nworld\n");
    let r = ws.read("a.txt");
    assert_eq!(
        ok(&r),
        envelope(
            &ws.p("a.txt"),
            "1: hello\n2: world\n\n(End of file - total 2 lines)"
        )
    );
    assert_eq!(
        r.value.unwrap(),
        json!({"path": ws.p("a.txt"), "offset": 1, "totalLines": 2,
               "lines": [{"number": 1, "text": "hello"}, {"number": 2, "text": "world"}]})
    );
}

#[test]
fn read_empty_file() {
    let ws = Ws::new();
    ws.put("e.txt", "");
    assert_eq!(
        ok(&ws.read("e.txt")),
        envelope(&ws.p("e.txt"), "(End of file - total 0 lines)")
    );
}

#[test]
fn read_argument_checks() {
    let ws = Ws::new();
    ws.put("a.txt", "x\n");
    let cases = [
        (
            json!({"file_path": " \u{3000}"}),
            "file_path must be a non-empty string",
        ),
        (
            json!({"file_path": "a.txt", "offset": 0}),
            "offset must be a positive integer",
        ),
        (
            json!({"file_path": "a.txt", "offset": 1.5}),
            "offset must be a positive integer",
        ),
        (
            json!({"file_path": "a.txt", "limit": 0}),
            "limit must be a positive integer",
        ),
        (
            json!({"file_path": "a.txt", "limit": -3}),
            "limit must be a positive integer",
        ),
        (
            json!({"file_path": "a.txt", "limit": 99999}),
            "limit must be less than or equal to 2000",
        ),
    ];
    for (args, msg) in cases {
        let r = ws.call("read", args);
        assert_eq!(err(&r), (format!("Error: {msg}").as_str(), None));
    }
}

#[test]
fn read_window_footers() {
    let ws = Ws::new();
    ws.put("f.txt", "l1\nl2\nl3\nl4\n");
    let r = ws.call(
        "read",
        json!({"file_path": "f.txt", "offset": 2, "limit": 2}),
    );
    assert_eq!(
        ok(&r),
        envelope(
            &ws.p("f.txt"),
            "2: l2\n3: l3\n\n(Showing lines 2-3 of 4. Use offset=4 to continue.)"
        )
    );
    let r = ws.call("read", json!({"file_path": "f.txt", "offset": 9}));
    assert_eq!(
        err(&r),
        (
            format!(
                "Error: offset 9 is out of range for \"{}\" (4 lines)",
                ws.p("f.txt")
            )
            .as_str(),
            Some("FS_NOT_FOUND")
        )
    );
}

#[test]
fn read_config_caps() {
    let mut ws = Ws::new();
    ws.put("f.txt", "aaaa\nbbbb\ncccc\ndddd\n");
    ws.cfg.read_limit = 2;
    assert!(ok(&ws.read("f.txt")).contains("(Showing lines 1-2 of 4. Use offset=3 to continue.)"));
    ws.cfg = FilesConfig {
        read_max_bytes: 9,
        ..FilesConfig::default()
    };
    assert_eq!(
        ok(&ws.read("f.txt")),
        envelope(
            &ws.p("f.txt"),
            "1: aaaa\n2: bbbb\n\n(Output capped. Showing lines 1-2. Use offset=3 to continue.)"
        )
    );
    ws.put("g.txt", "abcdefgh\n");
    ws.cfg = FilesConfig {
        read_max_line_length: 4,
        ..FilesConfig::default()
    };
    assert!(ok(&ws.read("g.txt")).contains("1: abcd... (line truncated to 4 chars)\n"));
}

#[test]
fn read_streamed_equals_whole() {
    // Over 64 KiB chunks, multibyte characters, CRLF, a long line, a BOM.
    let mut text = String::from("\u{FEFF}");
    for i in 0..20_000 {
        text.push_str(&format!("line {i} \u{e9}\u{1F600}\r\n"));
        if i % 5000 == 0 {
            text.push_str(&"y".repeat(3000));
            text.push('\n');
        }
    }
    let mut ws = Ws::new();
    ws.put("big.txt", &text);
    for (offset, limit) in [(1, 2000), (15_000, 100), (19_990, 2000)] {
        let args = json!({"file_path": "big.txt", "offset": offset, "limit": limit});
        ws.cfg = FilesConfig::default();
        let whole = ws.call("read", args.clone());
        ws.cfg.read_stream_min_size = 5;
        let streamed = ws.call("read", args);
        assert_eq!(ok(&whole), ok(&streamed));
        assert_eq!(whole.value, streamed.value);
    }
    ws.cfg = FilesConfig::default();
    let r = ws.read("big.txt");
    assert!(ok(&r).contains("\n1: line 0 \u{e9}\u{1F600}\n"));
    assert!(ok(&r).contains("(Showing lines 1-2000 of 20004. Use offset=2001 to continue.)"));
    // A byte cap in the middle of a stream.
    ws.cfg.read_max_bytes = 100;
    let whole = ws.read("big.txt");
    ws.cfg.read_stream_min_size = 5;
    let streamed = ws.read("big.txt");
    assert_eq!(ok(&whole), ok(&streamed));
    assert!(ok(&streamed).contains("1: line 0 \u{e9}\u{1F600}\n\n(Output capped. Showing lines 1-1. Use offset=2 to continue.)"));
}

#[test]
fn read_rejects_binary_invalid_utf8_and_non_files() {
    let ws = Ws::new();
    ws.put("bin", b"ab\0cd");
    ws.put("latin1", b"caf\xe9\n");
    let mut late_nul = vec![b'a'; 8192];
    late_nul.extend_from_slice(b"\0\n");
    ws.put("late", &late_nul);
    std::fs::create_dir(ws.path("dir")).unwrap();
    let cases = [
        ("bin", "binary file", "FS_NOT_TEXT"),
        ("latin1", "invalid UTF-8 text", "FS_NOT_TEXT"),
        ("dir", "not a regular file", "FS_NOT_REGULAR_FILE"),
    ];
    for (name, what, code) in cases {
        let r = ws.read(name);
        let msg = format!("Error: cannot read \"{}\": {what}", ws.p(name));
        assert_eq!(err(&r), (msg.as_str(), Some(code)));
    }
    // A NUL after the first 8192 bytes is text.
    assert!(ok(&ws.read("late")).contains("(End of file - total 1 lines)"));
    // None of these recorded an observation: a write is create-only.
    let r = ws.call("write", json!({"file_path": "latin1", "content": "x"}));
    assert_eq!(err(&r).1, Some("FS_NOT_OBSERVED"));
}

#[test]
fn read_strips_bom() {
    let ws = Ws::new();
    ws.put("b.txt", b"\xEF\xBB\xBFhi\n");
    assert!(ok(&ws.read("b.txt")).contains("<content>\n1: hi\n"));
}

#[test]
fn read_fifo_is_not_a_regular_file() {
    let ws = Ws::new();
    let status = std::process::Command::new("mkfifo")
        .arg(ws.path("fifo"))
        .status()
        .unwrap();
    assert!(status.success());
    let r = ws.read("fifo");
    assert_eq!(err(&r).1, Some("FS_NOT_REGULAR_FILE"));
    let r = ws.call_bare("write", json!({"file_path": "fifo", "content": "x"}));
    let msg = format!(
        "Error: cannot write \"{}\": not a regular file",
        ws.p("fifo")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_REGULAR_FILE")));
    let r = ws.call_bare(
        "edit",
        json!({"file_path": "fifo", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(err(&r).1, Some("FS_NOT_REGULAR_FILE"));
}

// ---- resolution ----------------------------------------------------------

#[test]
fn resolve_relative_dotdot_and_file_parent() {
    let ws = Ws::new();
    ws.put("real/sub/a.txt", "a\n");
    ws.put("real/b.txt", "b\n");
    std::os::unix::fs::symlink(ws.path("real/sub"), ws.path("link")).unwrap();
    // A workdir reached through a symlink: `..` climbs out of the real
    // directory, so `../b.txt` is real/b.txt.
    let ctx = CallContext::new(ws.path("link"));
    let r = files::read(
        &ws.cfg,
        &ws.fs,
        None,
        &json!({"file_path": "../b.txt"}),
        &ctx,
    );
    let (content, _) = r.unwrap();
    assert!(content.starts_with(&format!("<path>{}</path>", ws.p("real/b.txt"))));
    // Without `..`, the display path keeps the symlink.
    let r = files::read(&ws.cfg, &ws.fs, None, &json!({"file_path": "a.txt"}), &ctx);
    assert!(r
        .unwrap()
        .0
        .starts_with(&format!("<path>{}</path>", ws.p("link/a.txt"))));
    // A parent that is a file.
    let r = ws.read("real/b.txt/c");
    let msg = format!(
        "Error: cannot resolve \"{}\": a parent path segment is not a directory",
        ws.p("real/b.txt/c")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
}

// ---- write ---------------------------------------------------------------

#[test]
fn write_creates_with_parents_and_mode_0600() {
    let ws = Ws::new();
    let r = ws.call(
        "write",
        json!({"file_path": "d/e/new.txt", "content": "a\r\nb"}),
    );
    assert_eq!(ok(&r), envelope(&ws.p("d/e/new.txt"), "Created file"));
    assert_eq!(ws.get("d/e/new.txt"), b"a\r\nb");
    let mode = std::fs::metadata(ws.path("d/e/new.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(
        r.value.unwrap(),
        json!({"path": ws.p("d/e/new.txt"), "operation": "create", "before": null, "after": "a\nb"})
    );
    // Written then edited with no read: the write is an observation.
    let r = ws.call(
        "edit",
        json!({"file_path": "d/e/new.txt", "old_string": "b", "new_string": "c"}),
    );
    ok(&r);
    assert_eq!(ws.get("d/e/new.txt"), b"a\r\nc");
}

#[test]
fn write_requires_a_fresh_read() {
    let ws = Ws::new();
    ws.put("a.txt", "old\n");
    std::fs::set_permissions(ws.path("a.txt"), std::fs::Permissions::from_mode(0o640)).unwrap();
    let r = ws.call("write", json!({"file_path": "a.txt", "content": "new\n"}));
    let msg = format!(
        "Error: cannot overwrite existing \"{}\" without reading it first \u{2014} read the file, then retry",
        ws.p("a.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")));
    assert_eq!(ws.get("a.txt"), b"old\n");
    ok(&ws.read("a.txt"));
    let r = ws.call("write", json!({"file_path": "a.txt", "content": "new\n"}));
    assert_eq!(ok(&r), envelope(&ws.p("a.txt"), "Updated file"));
    assert_eq!(r.value.unwrap()["before"], json!("old\n"));
    let mode = std::fs::metadata(ws.path("a.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640, "an overwrite keeps the mode");
    // An external change makes the observation stale.
    ws.put("a.txt", "external\n");
    let r = ws.call("write", json!({"file_path": "a.txt", "content": "mine\n"}));
    let msg = format!(
        "Error: cannot write \"{}\": file changed since it was read \u{2014} re-read the file, then retry",
        ws.p("a.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_STALE_VERSION")));
    assert_eq!(ws.get("a.txt"), b"external\n");
    ok(&ws.read("a.txt"));
    ok(&ws.call("write", json!({"file_path": "a.txt", "content": "mine\n"})));
    assert_eq!(ws.get("a.txt"), b"mine\n");
}

#[test]
fn write_blank_path() {
    let ws = Ws::new();
    let r = ws.call("write", json!({"file_path": "", "content": ""}));
    assert_eq!(
        err(&r),
        ("Error: file_path must be a non-empty string", None)
    );
}

// ---- edit ----------------------------------------------------------------

#[test]
fn edit_requires_a_read_and_reports_matches() {
    let ws = Ws::new();
    ws.put("e.txt", "one\ntwo\ntwo\nthree\n");
    let args =
        |old: &str, new: &str| json!({"file_path": "e.txt", "old_string": old, "new_string": new});
    let r = ws.call("edit", args("one", "1"));
    let msg = format!(
        "Error: edit requires reading \"{}\" first \u{2014} read the file, then retry",
        ws.p("e.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")));
    assert_eq!(ws.get("e.txt"), b"one\ntwo\ntwo\nthree\n");
    // A windowed read (line 4 only) authorizes an edit of line 1.
    ok(&ws.call(
        "read",
        json!({"file_path": "e.txt", "offset": 4, "limit": 1}),
    ));
    let r = ws.call("edit", args("one", "1"));
    assert_eq!(
        ok(&r),
        format!("The file {} has been updated successfully.", ws.p("e.txt"))
    );
    let r = ws.call("edit", args("two", "2"));
    let msg = format!(
        "Error: old_string matched 2 times in \"{}\"; provide a more specific old_string or set replace_all to true",
        ws.p("e.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_AMBIGUOUS_EDIT")));
    let r = ws.call("edit", args("four", "4"));
    let msg = format!("Error: old_string was not found in \"{}\"", ws.p("e.txt"));
    assert_eq!(err(&r), (msg.as_str(), Some("FS_EDIT_NOT_FOUND")));
    let mut a = args("two", "2");
    a["replace_all"] = json!(true);
    let r = ws.call("edit", a);
    assert_eq!(
        ok(&r),
        format!(
            "The file {} has been updated. All occurrences were successfully replaced.",
            ws.p("e.txt")
        )
    );
    assert_eq!(ws.get("e.txt"), b"1\n2\n2\nthree\n");
    assert_eq!(
        r.value.unwrap(),
        json!({"path": ws.p("e.txt"), "before": "1\ntwo\ntwo\nthree\n", "after": "1\n2\n2\nthree\n"})
    );
}

#[test]
fn edit_argument_checks() {
    let ws = Ws::new();
    let cases = [
        (
            json!({"file_path": " ", "old_string": "a", "new_string": "b"}),
            "file_path must be a non-empty string",
        ),
        (
            json!({"file_path": "x", "old_string": "", "new_string": "b"}),
            "old_string must be a non-empty string",
        ),
        (
            json!({"file_path": "x", "old_string": "a", "new_string": "a"}),
            "old_string and new_string must differ",
        ),
    ];
    for (args, msg) in cases {
        let r = ws.call("edit", args);
        assert_eq!(err(&r), (format!("Error: {msg}").as_str(), None));
    }
}

#[test]
fn edit_stale_after_windowed_read_then_reread_recovers() {
    let ws = Ws::new();
    ws.put("s.txt", "a\nb\n");
    ok(&ws.call("read", json!({"file_path": "s.txt", "limit": 1})));
    ws.put("s.txt", "a\nb\nc\n");
    let r = ws.call(
        "edit",
        json!({"file_path": "s.txt", "old_string": "zzz", "new_string": "y"}),
    );
    // The stale check comes before any matching.
    let msg = format!(
        "Error: cannot edit \"{}\": file changed since it was read \u{2014} re-read the file, then retry",
        ws.p("s.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_STALE_VERSION")));
    ok(&ws.read("s.txt"));
    ok(&ws.call(
        "edit",
        json!({"file_path": "s.txt", "old_string": "c", "new_string": "C"}),
    ));
    assert_eq!(ws.get("s.txt"), b"a\nb\nC\n");
}

#[test]
fn edit_crlf_bom_and_lone_cr() {
    let ws = Ws::new();
    ws.put("c.txt", b"\xEF\xBB\xBFa\r\nb\r\nc\nd\re\r\n");
    ok(&ws.read("c.txt"));
    let r = ws.call(
        "edit",
        json!({"file_path": "c.txt", "old_string": "b\r\nc", "new_string": "B\nC"}),
    );
    ok(&r);
    // CRLF majority: every `\n` becomes `\r\n`; the lone `\r` stays; the
    // BOM is not written back.
    assert_eq!(ws.get("c.txt"), b"a\r\nB\r\nC\r\nd\re\r\n");
    assert_eq!(r.value.unwrap()["before"], json!("a\nb\nc\nd\re\n"));
}

#[test]
fn edit_rejects_binary_and_invalid_utf8_untouched() {
    let ws = Ws::new();
    let mut late_nul = vec![b'a'; 9000];
    late_nul.push(0);
    ws.put("bin", &late_nul);
    ws.put("latin1", b"caf\xe9\n");
    for (name, what) in [("bin", "binary file"), ("latin1", "invalid UTF-8 text")] {
        let r = ws.call_bare(
            "edit",
            json!({"file_path": name, "old_string": "a", "new_string": "b"}),
        );
        let msg = format!("Error: cannot edit \"{}\": {what}", ws.p(name));
        assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_TEXT")));
    }
    assert_eq!(ws.get("bin"), late_nul);
    assert_eq!(ws.get("latin1"), b"caf\xe9\n");
}

#[test]
fn deleted_target_cycle() {
    let ws = Ws::new();
    ws.put("d.txt", "x\n");
    ok(&ws.read("d.txt"));
    std::fs::remove_file(ws.path("d.txt")).unwrap();
    let p = ws.p("d.txt");
    let r = ws.call(
        "edit",
        json!({"file_path": "d.txt", "old_string": "x", "new_string": "y"}),
    );
    assert_eq!(err(&r).1, Some("FS_STALE_VERSION"));
    let r = ws.call("write", json!({"file_path": "d.txt", "content": "y"}));
    let msg = format!(
        "Error: cannot write \"{p}\": file no longer exists \u{2014} re-read the file, then retry"
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_STALE_VERSION")));
    let r = ws.read("d.txt");
    let msg = format!("Error: cannot read \"{p}\": not found");
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
    let r = ws.call(
        "edit",
        json!({"file_path": "d.txt", "old_string": "x", "new_string": "y"}),
    );
    let msg = format!("Error: cannot edit \"{p}\": not found");
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
    let r = ws.call("write", json!({"file_path": "d.txt", "content": "y"}));
    assert_eq!(ok(&r), envelope(&p, "Created file"));
}

#[test]
fn bare_deployment_and_no_session() {
    let ws = Ws::new();
    ws.put("b.txt", "x\n");
    let ctx = ws.ctx(Some("s"));
    // No policy at all.
    let r = files::write(
        &ws.cfg,
        &ws.fs,
        None,
        &json!({"file_path": "b.txt", "content": "y\n"}),
        &ctx,
    );
    assert!(r.is_ok());
    let args = json!({"file_path": "b.txt", "old_string": "y", "new_string": "z"});
    assert!(files::edit(&ws.cfg, &ws.fs, None, &args, &ctx).is_ok());
    assert_eq!(ws.get("b.txt"), b"z\n");
    // The bare provider: editing a missing file is stale (§10.17).
    let r = ws.call_bare(
        "edit",
        json!({"file_path": "missing", "old_string": "a", "new_string": "b"}),
    );
    let msg = format!(
        "Error: cannot edit \"{}\": file changed since it was read \u{2014} re-read the file, then retry",
        ws.p("missing")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_STALE_VERSION")));
    let r = ws.call_bare(
        "edit",
        json!({"file_path": "b.txt", "old_string": "q", "new_string": "b"}),
    );
    assert_eq!(err(&r).1, Some("FS_EDIT_NOT_FOUND"));
    // A policy but no session: no owner (§6.4), so writes may only create
    // and edits are unobserved; nothing is recorded.
    let r = ws.call_as(
        None,
        "write",
        json!({"file_path": "b.txt", "content": "w\n"}),
    );
    let msg = format!(
        "Error: cannot overwrite existing \"{}\" without reading it first \u{2014} read the file, then retry",
        ws.p("b.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")));
    ok(&ws.call_as(None, "read", json!({"file_path": "b.txt"})));
    let r = ws.call_as(
        None,
        "edit",
        json!({"file_path": "b.txt", "old_string": "z", "new_string": "b"}),
    );
    let msg = format!(
        "Error: edit requires reading \"{}\" first \u{2014} read the file, then retry",
        ws.p("b.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")));
    ok(&ws.call_as(
        None,
        "write",
        json!({"file_path": "new.txt", "content": "n"}),
    ));
    assert_eq!(ws.get("b.txt"), b"z\n");
}

#[test]
fn sessions_are_isolated() {
    let ws = Ws::new();
    ws.put("i.txt", "x\n");
    ok(&ws.call_as(Some("a"), "read", json!({"file_path": "i.txt"})));
    let args = json!({"file_path": "i.txt", "old_string": "x", "new_string": "y"});
    assert_eq!(
        err(&ws.call_as(Some("b"), "edit", args.clone())).1,
        Some("FS_NOT_OBSERVED")
    );
    ok(&ws.call_as(Some("a"), "edit", args));
}

#[test]
fn stat_budget_read_one_write_and_edit_zero() {
    let ws = Ws::new();
    ws.put("a.txt", "x\n");
    // The stats the tools make, counted at the seam.
    let counting = Arc::new(TestFs::confined(&ws.root));
    let fs = TextFs::new(counting.clone());
    let ctx = ws.ctx(Some("s"));
    let stats = || counting.stats();
    let p = Some(&ws.policy);
    files::read(&ws.cfg, &fs, p, &json!({"file_path": "a.txt"}), &ctx).unwrap();
    assert_eq!(stats(), 1);
    let args = json!({"file_path": "a.txt", "old_string": "x", "new_string": "y"});
    files::edit(&ws.cfg, &fs, p, &args, &ctx).unwrap();
    files::write(
        &ws.cfg,
        &fs,
        p,
        &json!({"file_path": "a.txt", "content": "z"}),
        &ctx,
    )
    .unwrap();
    assert_eq!(stats(), 1);
    // A missing read costs one stat, the recovering write none.
    assert!(files::read(&ws.cfg, &fs, p, &json!({"file_path": "m.txt"}), &ctx).is_err());
    files::write(
        &ws.cfg,
        &fs,
        p,
        &json!({"file_path": "m.txt", "content": "z"}),
        &ctx,
    )
    .unwrap();
    assert_eq!(stats(), 2);
}

#[test]
fn absolute_paths_ignore_the_workdir() {
    let ws = Ws::new();
    ws.put("abs.txt", "a\n");
    let ctx = CallContext::new("/nonexistent/dir");
    let args = json!({"file_path": ws.p("abs.txt")});
    let (content, _) = files::read(&ws.cfg, &ws.fs, None, &args, &ctx).unwrap();
    assert!(content.starts_with(&format!("<path>{}</path>", ws.p("abs.txt"))));
}

// ---- LocalFs -------------------------------------------------------------

fn version(fs: &TextFs, root: &Path, rel: &str) -> String {
    let t = fs.resolve(rel, root).unwrap();
    fs.stat(&t).unwrap().unwrap().version.0
}

#[test]
fn version_tracks_ctime_and_chmod() {
    let ws = Ws::new();
    ws.put("v.txt", "abc");
    let v1 = version(&ws.fs, &ws.root, "v.txt");
    assert_eq!(v1.split(':').count(), 5);
    // Same size, mtime restored: ctime still moves.
    let mtime = std::fs::metadata(ws.path("v.txt"))
        .unwrap()
        .modified()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(ws.path("v.txt"), "xyz").unwrap();
    let f = std::fs::File::options()
        .write(true)
        .open(ws.path("v.txt"))
        .unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    let v2 = version(&ws.fs, &ws.root, "v.txt");
    assert_ne!(v1, v2);
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::set_permissions(ws.path("v.txt"), std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_ne!(v2, version(&ws.fs, &ws.root, "v.txt"));
}

#[test]
fn symlink_aliases_share_one_version() {
    let ws = Ws::new();
    ws.put("real.txt", "one\n");
    std::os::unix::fs::symlink(ws.path("real.txt"), ws.path("alias.txt")).unwrap();
    let a = ws.fs.resolve("alias.txt", &ws.root).unwrap();
    let r = ws.fs.resolve("real.txt", &ws.root).unwrap();
    assert_eq!(a.key, r.key);
    assert_eq!(
        version(&ws.fs, &ws.root, "alias.txt"),
        version(&ws.fs, &ws.root, "real.txt")
    );
    // A read through one alias authorizes an edit through the other, and
    // the symlink survives the atomic replace.
    ok(&ws.read("alias.txt"));
    ok(&ws.call(
        "edit",
        json!({"file_path": "real.txt", "old_string": "one", "new_string": "two"}),
    ));
    ok(&ws.call(
        "edit",
        json!({"file_path": "alias.txt", "old_string": "two", "new_string": "three"}),
    ));
    assert!(std::fs::symlink_metadata(ws.path("alias.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(ws.get("real.txt"), b"three\n");
}

#[test]
fn concurrent_writers_one_wins_one_is_stale() {
    for round in 0..10 {
        let ws = Arc::new(Ws::new());
        ws.put("c.txt", "base\n");
        ok(&ws.call_as(Some("a"), "read", json!({"file_path": "c.txt"})));
        ok(&ws.call_as(Some("b"), "read", json!({"file_path": "c.txt"})));
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = ["a", "b"]
            .into_iter()
            .map(|s| {
                let (ws, barrier) = (Arc::clone(&ws), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    let content = format!("{s} {round}\n").repeat(1000);
                    ws.call_as(
                        Some(s),
                        "write",
                        json!({"file_path": "c.txt", "content": content}),
                    )
                })
            })
            .collect();
        let results: Vec<ToolResult> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let winners: Vec<usize> = (0..2).filter(|&i| !results[i].is_error).collect();
        assert_eq!(winners.len(), 1, "round {round}: {results:?}");
        let loser = &results[1 - winners[0]];
        assert_eq!(err(loser).1, Some("FS_STALE_VERSION"));
        let s = ["a", "b"][winners[0]];
        assert_eq!(
            ws.get("c.txt"),
            format!("{s} {round}\n").repeat(1000).as_bytes()
        );
    }
}

#[test]
fn concurrent_creators_never_replace_each_other() {
    for _ in 0..10 {
        let ws = Arc::new(Ws::new());
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = ["first", "second"]
            .into_iter()
            .map(|c| {
                let (ws, barrier) = (Arc::clone(&ws), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    let t = ws.fs.resolve("n.txt", &ws.root).unwrap();
                    barrier.wait();
                    ws.fs
                        .write_text(&t, c, &WriteGuard::CreateIfAbsent)
                        .map(|_| c)
                })
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let won: Vec<&str> = results
            .iter()
            .filter_map(|r| r.as_ref().ok().copied())
            .collect();
        assert_eq!(won.len(), 1);
        let lost = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_eq!(lost.code.as_str(), "FS_NOT_OBSERVED");
        assert_eq!(ws.get("n.txt"), won[0].as_bytes());
    }
}

#[test]
fn create_if_absent_preserves_an_existing_file() {
    let ws = Ws::new();
    ws.put("x.txt", "theirs");
    let t = ws.fs.resolve("x.txt", &ws.root).unwrap();
    let e = ws
        .fs
        .write_text(&t, "mine", &WriteGuard::CreateIfAbsent)
        .unwrap_err();
    assert_eq!(e.code.as_str(), "FS_NOT_OBSERVED");
    assert_eq!(ws.get("x.txt"), b"theirs");
    // No staging directory is left behind.
    let names: Vec<_> = std::fs::read_dir(&ws.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["x.txt"]);
}

#[test]
fn list_dir_in_name_order() {
    let ws = Ws::new();
    ws.put("d/b", "");
    ws.put("d/a", "");
    std::fs::create_dir(ws.path("d/c")).unwrap();
    let t = ws.fs.resolve("d", &ws.root).unwrap();
    let names: Vec<_> = ws
        .fs
        .list_dir(&t)
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    let t = ws.fs.resolve("d/a", &ws.root).unwrap();
    assert_eq!(
        ws.fs.list_dir(&t).unwrap_err().code.as_str(),
        "FS_NOT_DIRECTORY"
    );
}

#[test]
fn concurrent_edits_one_is_stale() {
    // Two sessions read the same version, then edit at once: whichever
    // publishes second finds the file changed since its read, however the
    // threads are scheduled (one session editing twice would legitimately
    // succeed twice when its edits do not overlap: its own edit is its
    // observation).
    for round in 0..10 {
        let ws = Arc::new(Ws::new());
        ws.put("e.txt", "left right\n");
        for s in ["a", "b"] {
            ok(&ws.call_as(Some(s), "read", json!({"file_path": "e.txt"})));
        }
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = [("a", "left", "L"), ("b", "right", "R")]
            .into_iter()
            .map(|(session, old, new)| {
                let (ws, barrier) = (Arc::clone(&ws), Arc::clone(&barrier));
                std::thread::spawn(move || {
                    barrier.wait();
                    let args = json!({"file_path": "e.txt", "old_string": old, "new_string": new});
                    ws.call_as(Some(session), "edit", args)
                })
            })
            .collect();
        let results: Vec<ToolResult> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        let stale: Vec<_> = results.iter().filter(|r| r.is_error).collect();
        assert_eq!(stale.len(), 1, "round {round}: {results:?}");
        assert_eq!(err(stale[0]).1, Some("FS_STALE_VERSION"));
        let got = String::from_utf8(ws.get("e.txt")).unwrap();
        assert!(got == "L right\n" || got == "left R\n", "{got}");
    }
}

#[test]
fn dangling_symlink_targets() {
    let ws = Ws::new();
    std::os::unix::fs::symlink(ws.path("nowhere"), ws.path("dangling")).unwrap();
    // Create-only (a session that never read it): the link is not replaced.
    let r = ws.call("write", json!({"file_path": "dangling", "content": "x"}));
    let msg = format!(
        "Error: cannot write \"{}\": not a regular file",
        ws.p("dangling")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_REGULAR_FILE")));
    assert!(std::fs::symlink_metadata(ws.path("dangling"))
        .unwrap()
        .file_type()
        .is_symlink());
    // Reading it finds nothing.
    assert_eq!(err(&ws.read("dangling")).1, Some("FS_NOT_FOUND"));
}

#[test]
fn before_text_and_diff_basis_limit_in_utf8_bytes() {
    let ws = Ws::new();
    let fs = TextFs::new(Arc::new(LocalFs::new())).with_diff_basis_max_bytes(4);
    let t = fs.resolve("d.txt", &ws.root).unwrap();
    let out = fs.write_text(&t, "abc", &WriteGuard::None).unwrap();
    assert_eq!((out.operation.as_str(), out.before), ("create", None));
    let out = fs.write_text(&t, "a\r\n", &WriteGuard::None).unwrap();
    assert_eq!(out.before.as_deref(), Some("abc"));
    assert_eq!(out.after, "a\n");
    std::fs::write(ws.path("d.txt"), "abcd").unwrap();
    // The old file is 4 bytes: at the limit, no basis.
    let out = fs.write_text(&t, "x", &WriteGuard::None).unwrap();
    assert_eq!(out.before, None);
    // Two characters, four UTF-8 bytes: at the limit.
    let out = fs
        .write_text(&t, "\u{e9}\u{e9}", &WriteGuard::None)
        .unwrap();
    assert_eq!(out.before, None);
    // An old binary file has no text basis.
    ws.put("b.bin", b"\0\0");
    let t = fs.resolve("b.bin", &ws.root).unwrap();
    let out = fs.write_text(&t, "t", &WriteGuard::None).unwrap();
    assert_eq!((out.operation.as_str(), out.before), ("update", None));
}

#[test]
fn file_tools_through_the_dispatch() {
    use dsh_search::tool::Tools;
    let ws = Ws::new();
    ws.put("a.txt", "alpha\n");
    let tools = Tools::new(
        Default::default(),
        Arc::new(dsh_search::NativeBackend::new()),
    );
    let ctx = ws.ctx(Some("s"));
    let r = tools.call("read", &json!({"file_path": "a.txt", "offset": "2"}), &ctx);
    assert_eq!(
        err(&r),
        (
            "Error: invalid arguments: \"offset\" must be a number",
            Some("INVALID_ARGS")
        )
    );
    let edit = json!({"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"});
    assert_eq!(
        err(&tools.call("edit", &edit, &ctx)).1,
        Some("FS_NOT_OBSERVED")
    );
    ok(&tools.call("read", &json!({"file_path": "a.txt"}), &ctx));
    let r = tools.call("edit", &edit, &ctx);
    assert_eq!(
        ok(&r),
        format!("The file {} has been updated successfully.", ws.p("a.txt"))
    );
    assert_eq!(ws.get("a.txt"), b"beta\n");
    // The bare provider on request.
    let bare = Tools::new(
        Default::default(),
        Arc::new(dsh_search::NativeBackend::new()),
    )
    .without_observation_policy();
    let w = json!({"file_path": "a.txt", "content": "gamma\n"});
    ok(&bare.call("write", &w, &ctx));
    assert_eq!(ws.get("a.txt"), b"gamma\n");
}

#[test]
fn nul_in_path_and_symlink_loops_are_clear_errors() {
    let ws = Ws::new();
    let r = ws.read("a\0b");
    let msg = format!(
        "Error: cannot resolve \"{}\": the path contains a NUL byte",
        ws.p("a\\0b")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
    std::os::unix::fs::symlink(ws.path("loop"), ws.path("loop")).unwrap();
    let r = ws.read("loop");
    let msg = format!(
        "Error: cannot resolve \"{}\": Too many levels of symbolic links",
        ws.p("loop")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_IO_ERROR")));
    let r = ws.call("write", json!({"file_path": "loop", "content": "x"}));
    assert_eq!(err(&r).1, Some("FS_IO_ERROR"));
    assert!(std::fs::symlink_metadata(ws.path("loop"))
        .unwrap()
        .file_type()
        .is_symlink());
}

// ---- the text layer over another filesystem ------------------------------

/// Where [`mounted`] shows a workspace: a path that does not exist on the
/// host, so that anything reaching for the host disk finds nothing.
const MOUNT: &str = "/dsh-search-test-mount/ws";

/// `ws`'s directory seen at [`MOUNT`], and a context there.
fn mounted(ws: &Ws) -> (Arc<TestFs>, TextFs, CallContext) {
    assert!(
        !Path::new(MOUNT).exists(),
        "{MOUNT} must not exist on the host"
    );
    let fs = Arc::new(TestFs::mounted(&ws.root, MOUNT));
    let text = TextFs::new(fs.clone());
    (fs, text, CallContext::new(MOUNT).session("s"))
}

fn call_on(ws: &Ws, text: &TextFs, ctx: &CallContext, tool: &str, args: Value) -> ToolResult {
    let f = match tool {
        "read" => files::read,
        "write" => files::write,
        "edit" => files::edit,
        _ => unreachable!(),
    };
    match f(&ws.cfg, text, Some(&ws.policy), &args, ctx) {
        Ok((content, value)) => ToolResult::ok(content, value),
        Err(e) => ToolResult::error(e),
    }
}

#[test]
fn file_tools_over_a_filesystem_that_is_not_the_host_disk() {
    let ws = Ws::new();
    ws.put("a.txt", "one\r\ntwo\r\n");
    ws.put("d/b.txt", "b\n");
    ws.put("outside-the-mount.txt", "x\n");
    let (_, text, ctx) = mounted(&ws);
    let call = |tool: &str, args: Value| call_on(&ws, &text, &ctx, tool, args);
    // read: the display path is the workspace's, the bytes the host's.
    let r = call("read", json!({"file_path": "a.txt"}));
    assert_eq!(
        ok(&r),
        envelope(
            &format!("{MOUNT}/a.txt"),
            "1: one\n2: two\n\n(End of file - total 2 lines)"
        )
    );
    // edit: the CRLF rules and the observation policy, above the seam.
    let r = call(
        "edit",
        json!({"file_path": "a.txt", "old_string": "two", "new_string": "three"}),
    );
    assert_eq!(
        ok(&r),
        format!("The file {MOUNT}/a.txt has been updated successfully.")
    );
    assert_eq!(ws.get("a.txt"), b"one\r\nthree\r\n");
    // write: parents created, a new file 0600, the policy's create-only.
    let r = call(
        "write",
        json!({"file_path": "n/e/w.txt", "content": "new\n"}),
    );
    assert_eq!(
        ok(&r),
        envelope(&format!("{MOUNT}/n/e/w.txt"), "Created file")
    );
    assert_eq!(ws.get("n/e/w.txt"), b"new\n");
    let mode = std::fs::metadata(ws.path("n/e/w.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let r = call("write", json!({"file_path": "d/b.txt", "content": "z"}));
    assert_eq!(
        err(&r),
        (
            format!(
                "Error: cannot overwrite existing \"{MOUNT}/d/b.txt\" without reading it first — read the file, then retry"
            )
            .as_str(),
            Some("FS_NOT_OBSERVED")
        )
    );
    // Missing files are missing in the workspace, whatever the host has.
    let r = call("read", json!({"file_path": "nope.txt"}));
    let msg = format!("Error: cannot read \"{MOUNT}/nope.txt\": not found");
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
    let host_path = ws.p("outside-the-mount.txt");
    let r = call("read", json!({"file_path": host_path}));
    assert_eq!(err(&r).1, Some("FS_NOT_FOUND"));
    // The text layer's own operations.
    let t = text.resolve("d", Path::new(MOUNT)).unwrap();
    assert_eq!(t.key, Path::new(MOUNT).join("d"));
    let names: Vec<_> = text
        .list_dir(&t)
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.kind))
        .collect();
    assert_eq!(
        names,
        [("b.txt".to_string(), dsh_search::fs::FileKind::File)]
    );
    let t = text.resolve("d/missing/x", Path::new(MOUNT)).unwrap();
    assert_eq!(t.key, Path::new(MOUNT).join("d/missing/x"));
    assert_eq!(text.stat(&t).unwrap(), None);
}

#[test]
fn symlinks_resolve_inside_the_workspace_filesystem() {
    let ws = Ws::new();
    ws.put("real/f.txt", "f\n");
    std::os::unix::fs::symlink(ws.path("real"), ws.path("link")).unwrap();
    let (_, text, ctx) = mounted(&ws);
    let a = text.resolve("link/f.txt", Path::new(MOUNT)).unwrap();
    let b = text.resolve("real/f.txt", Path::new(MOUNT)).unwrap();
    assert_eq!(a.key, b.key);
    assert_eq!(a.key, Path::new(MOUNT).join("real/f.txt"));
    // `..` climbs out of the real directory, as on disk.
    let c = text
        .resolve("link/../real/f.txt", Path::new(MOUNT))
        .unwrap();
    assert_eq!(c.display, Path::new(MOUNT).join("real/f.txt"));
    let r = call_on(&ws, &text, &ctx, "read", json!({"file_path": "link/f.txt"}));
    ok(&r);
}

/// A concurrent writer that rewrites the file (a different size each time,
/// so its version always changes) before the first `n` writes.
fn concurrent_writer(n: usize) -> impl FnMut(&Path, usize) + Send {
    move |host: &Path, write: usize| {
        if write <= n {
            let text = format!("{}\none\ntwo\n", "theirs".repeat(write));
            std::fs::write(host, text).unwrap();
        }
    }
}

#[test]
fn edit_without_a_version_is_redone_over_a_concurrent_write() {
    let ws = Ws::new();
    ws.put("a.txt", "one\ntwo\n");
    let fs = Arc::new(TestFs::confined(&ws.root).before_write(concurrent_writer(1)));
    let text = TextFs::new(fs.clone());
    let ctx = ws.ctx(None);
    let args = json!({"file_path": "a.txt", "old_string": "two", "new_string": "TWO"});
    // The bare provider: no session, no observed version.
    let (content, value) = files::edit(&ws.cfg, &text, None, &args, &ctx).unwrap();
    assert_eq!(
        content,
        format!("The file {} has been updated successfully.", ws.p("a.txt"))
    );
    // Nothing lost: the other writer's line and the edit are both there,
    // and the diff basis is what the edit replaced.
    assert_eq!(ws.get("a.txt"), b"theirs\none\nTWO\n");
    assert_eq!(value["before"], "theirs\none\ntwo\n");
    assert_eq!(value["after"], "theirs\none\nTWO\n");
    // One publish refused as stale, one published.
    assert_eq!(fs.writes(), 2);
}

#[test]
fn edit_with_an_observed_version_is_stale_after_a_concurrent_write() {
    let ws = Ws::new();
    ws.put("a.txt", "one\ntwo\n");
    let fs = Arc::new(TestFs::confined(&ws.root).before_write(concurrent_writer(1)));
    let text = TextFs::new(fs.clone());
    let ctx = ws.ctx(Some("s"));
    ok(&call_on(
        &ws,
        &text,
        &ctx,
        "read",
        json!({"file_path": "a.txt"}),
    ));
    let args = json!({"file_path": "a.txt", "old_string": "two", "new_string": "TWO"});
    let r = call_on(&ws, &text, &ctx, "edit", args);
    let msg = format!(
        "Error: cannot edit \"{}\": file changed since it was read — re-read the file, then retry",
        ws.p("a.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_STALE_VERSION")));
    assert_eq!(ws.get("a.txt"), b"theirs\none\ntwo\n");
    assert_eq!(fs.writes(), 1);
}

#[test]
fn unconditional_write_shows_exactly_the_text_it_replaced() {
    let ws = Ws::new();
    ws.put("a.txt", "mine\n");
    let fs = Arc::new(TestFs::confined(&ws.root).before_write(concurrent_writer(1)));
    let text = TextFs::new(fs.clone());
    let t = text.resolve("a.txt", &ws.root).unwrap();
    let out = text.write_text(&t, "ours\n", &WriteGuard::None).unwrap();
    assert_eq!(out.operation.as_str(), "update");
    assert_eq!(out.before.as_deref(), Some("theirs\none\ntwo\n"));
    assert_eq!(ws.get("a.txt"), b"ours\n");
    assert_eq!(fs.writes(), 2);
}

#[test]
fn retries_are_bounded() {
    let attempts = dsh_search::fs::ATTEMPTS;
    let ws = Ws::new();
    ws.put("a.txt", "one\ntwo\n");
    let fs = Arc::new(TestFs::confined(&ws.root).before_write(concurrent_writer(usize::MAX)));
    let text = TextFs::new(fs.clone());
    let t = text.resolve("a.txt", &ws.root).unwrap();
    // An edit that never gets a quiet moment gives up, as stale.
    let edit = dsh_search::fs::LiteralEdit {
        old_string: "two".into(),
        new_string: "TWO".into(),
        replace_all: false,
    };
    let e = text.edit_text(&t, &edit, None).unwrap_err();
    assert_eq!(e.code.as_str(), "FS_STALE_VERSION");
    assert_eq!(fs.writes(), attempts);
    assert!(!String::from_utf8(ws.get("a.txt")).unwrap().contains("TWO"));
    // An unconditional write is published in the end, with no basis.
    let out = text.write_text(&t, "ours\n", &WriteGuard::None).unwrap();
    assert_eq!(out.before, None);
    assert_eq!(ws.get("a.txt"), b"ours\n");
    assert_eq!(fs.writes(), 2 * attempts);
}
