//! The file tools and the guard on Windows, under Wine
//! (`scripts/test-windows windows_files::`, README "Platforms",
//! `contract.md` §6 and §7): names in any letter case are one file for the
//! read-before-write policy and the session state; the guard's closest
//! names for a path typed in another case; device names (`NUL`,
//! `src\aux.txt`) never opened by read, write or edit, and glob and grep
//! on them equal to rg.exe; CRLF and BOM files through read and edit, byte
//! for byte as on Linux (`seed-reference.md` §6.1, §6.3;
//! `src/tool/files/tests.rs`).

use std::path::Path;
use std::sync::Arc;

use dsh_search::tool::{CallContext, ToolResult};
use dsh_search::{
    Config, GlobRequest, GlobResults, GrepRequest, GrepResults, Guard, NativeBackend, Outcome,
    RgBackend, SearchBackend, Tools,
};
use serde_json::{json, Value};

use crate::util::tools::retried;
use crate::util::tree::{file, Tree};
use crate::util::{glob, grep, rg, Case, Mode, Report};

/// The tools as a harness runs them: the observation policy (in memory)
/// and the guard, on `backend`.
fn tools(backend: Arc<dyn SearchBackend>) -> Tools {
    Tools::new(Config::default(), backend).with_guard(Arc::new(Guard::default()))
}

/// Both backends, the rg one spawning rg.exe: the reference the
/// conformance environment puts first on `PATH` (`util::rg::env`).
fn backends() -> Vec<(&'static str, Arc<dyn SearchBackend>)> {
    rg::env().expect("the Windows tests need rg.exe");
    vec![
        ("native", Arc::new(NativeBackend::new())),
        (
            "rg",
            Arc::new(Retried(crate::util::rg::reference_backend())),
        ),
    ]
}

/// The rg backend, its start again when Wine failed it
/// (`util::rg::is_wine_spawn_flake`, README "Platforms").
struct Retried(RgBackend);

impl SearchBackend for Retried {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn searches_local_disk(&self) -> bool {
        self.0.searches_local_disk()
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        retried(|| self.0.glob(req))
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        retried(|| self.0.grep(req))
    }
}

fn call(t: &Tools, root: &Path, session: &str, tool: &str, args: Value) -> ToolResult {
    t.call(tool, &args, &CallContext::new(root).session(session))
}

fn ok(r: &ToolResult) -> &str {
    assert!(!r.is_error, "unexpected error: {}", r.content);
    &r.content
}

/// An error result's content and code.
fn err(r: &ToolResult) -> (&str, Option<&str>) {
    assert!(r.is_error, "unexpected success: {}", r.content);
    (&r.content, r.error.as_ref().and_then(|e| e.code()))
}

fn envelope(p: &str, body: &str) -> String {
    format!("<path>{p}</path>\n<type>file</type>\n<content>\n{body}\n</content>")
}

/// The display path of `typed` in the workdir `root`: Node's
/// `path.win32.resolve` (`seed-reference.md` §6.1), the lexical join with
/// `.` dropped, `..` applied and every separator `\`, a drive kept as typed.
/// With a `..` in the path the workdir is its real path first (without the
/// `\\?\` prefix, as Node's `realpathSync` gives it).
fn shown(root: &Path, typed: &str) -> String {
    let base = if typed.split(['\\', '/']).any(|s| s == "..") {
        let real = std::fs::canonicalize(root).unwrap();
        let real = real.to_str().unwrap();
        real.strip_prefix(r"\\?\").unwrap_or(real).to_string()
    } else {
        root.display().to_string()
    };
    let full = if typed.as_bytes().get(1) == Some(&b':') {
        typed.to_string()
    } else {
        format!("{base}\\{typed}")
    };
    let mut out: Vec<&str> = Vec::new();
    for seg in full.split(['\\', '/']) {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    out.join("\\")
}

/// The names in `dir`, sorted. A write's staging directory
/// (`.dsh-search-staging.*`, `contract.md` §6) is left out: under Wine one
/// is left behind after a successful write, which is the atomic write's
/// matter (`crates/fs/src/local/publish.rs`), not these tests'.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.starts_with(".dsh-search-staging."))
        .collect();
    names.sort();
    names
}

/// `p` with its drive letter in the other case (`C:\x` is `c:\x`).
fn other_drive_case(p: &str) -> String {
    let mut chars = p.chars();
    let d = chars.next().unwrap();
    assert_eq!(chars.clone().next(), Some(':'), "{p}");
    let flipped = if d.is_ascii_uppercase() {
        d.to_ascii_lowercase()
    } else {
        d.to_ascii_uppercase()
    };
    format!("{flipped}{}", chars.as_str())
}

/// Every spelling of `src\main.rs` the model may type on Windows.
fn spellings(root: &Path) -> Vec<String> {
    let abs = format!("{}\\src\\main.rs", root.display());
    let mut all: Vec<String> = [
        "src\\main.rs",
        "src\\Main.rs",
        "SRC\\MAIN.RS",
        "src/main.rs",
        ".\\src\\main.rs",
        "Src/./mAin.rs",
        "src\\..\\SRC\\main.rs",
    ]
    .map(String::from)
    .into();
    all.push(abs.clone());
    all.push(other_drive_case(&abs));
    all.push(other_drive_case(
        &abs.replace("\\src\\main.rs", "\\SRC\\Main.RS"),
    ));
    all
}

/// Read one spelling, then edit and write through any other: NTFS's names
/// are case-insensitive, so every spelling is one file for the
/// observation policy (`seed-reference.md` §6.4), as the same spelling is.
#[test]
fn one_file_in_any_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    let disk = root.join("src").join("main.rs");
    let t = tools(Arc::new(NativeBackend::new()));
    let names = spellings(root);
    for (i, a) in names.iter().enumerate() {
        for (j, b) in names.iter().enumerate() {
            std::fs::write(&disk, "fn main() {}\n").unwrap();
            let s = format!("s{i}-{j}");
            let what = format!("read {a}, then edit and write {b}");
            let r = call(&t, root, &s, "read", json!({ "file_path": a }));
            assert_eq!(
                ok(&r),
                envelope(
                    &shown(root, a),
                    "1: fn main() {}\n\n(End of file - total 1 lines)"
                ),
                "{what}"
            );
            let r = call(
                &t,
                root,
                &s,
                "edit",
                json!({"file_path": b, "old_string": "main", "new_string": "start"}),
            );
            assert!(!r.is_error, "{what}: {}", r.content);
            assert_eq!(
                r.content,
                format!("The file {} has been updated successfully.", shown(root, b)),
                "{what}"
            );
            assert_eq!(std::fs::read(&disk).unwrap(), b"fn start() {}\n", "{what}");
            // The edit recorded the new version, under the same key: a write
            // through the first spelling replaces it.
            let r = call(
                &t,
                root,
                &s,
                "write",
                json!({"file_path": a, "content": "x\r\n"}),
            );
            assert!(!r.is_error, "{what}: {}", r.content);
            assert_eq!(
                r.content,
                envelope(&shown(root, a), "Updated file"),
                "{what}"
            );
            assert_eq!(std::fs::read(&disk).unwrap(), b"x\r\n", "{what}");
        }
    }
}

/// A file never read is refused whatever the spelling, even after another
/// file was read in the session (`seed-reference.md` §6.4, §6.5).
#[test]
fn unread_file_refused_in_any_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src").join("main.rs"), "fn main() {}\n").unwrap();
    std::fs::write(root.join("src").join("lib.rs"), "mod a;\n").unwrap();
    let t = tools(Arc::new(NativeBackend::new()));
    for (i, b) in spellings(root).iter().enumerate() {
        let s = format!("u{i}");
        ok(&call(
            &t,
            root,
            &s,
            "read",
            json!({"file_path": "src\\lib.rs"}),
        ));
        let p = shown(root, b);
        let r = call(
            &t,
            root,
            &s,
            "write",
            json!({"file_path": b, "content": "x"}),
        );
        let msg = format!(
            "Error: cannot overwrite existing \"{p}\" without reading it first \u{2014} read the file, then retry"
        );
        assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")), "{b}");
        let r = call(
            &t,
            root,
            &s,
            "edit",
            json!({"file_path": b, "old_string": "main", "new_string": "x"}),
        );
        let msg = format!(
            "Error: edit requires reading \"{p}\" first \u{2014} read the file, then retry"
        );
        assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")), "{b}");
    }
    assert_eq!(
        std::fs::read(root.join("src").join("main.rs")).unwrap(),
        b"fn main() {}\n"
    );
}

/// A file that does not exist yet is one file in any spelling too: its key
/// ends in the name as typed. A read that found no file records it absent
/// (`seed-reference.md` §6.4), so an edit in another spelling is
/// `not found`, not `edit requires reading`; a write creates it, and an
/// edit in a third spelling is allowed.
#[test]
fn missing_file_is_one_file_in_any_spelling() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    // Without the guard: it would deny the read of a missing file.
    let t = Tools::new(Config::default(), Arc::new(NativeBackend::new()));
    let r = call(&t, root, "m", "read", json!({"file_path": "Notes.TXT"}));
    let msg = format!(
        "Error: cannot read \"{}\": not found",
        shown(root, "Notes.TXT")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
    let r = call(
        &t,
        root,
        "m",
        "edit",
        json!({"file_path": "notes.txt", "old_string": "a", "new_string": "b"}),
    );
    let msg = format!(
        "Error: cannot edit \"{}\": not found",
        shown(root, "notes.txt")
    );
    assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_FOUND")));
    // The same in another session, which saw nothing: unobserved.
    let r = call(
        &t,
        root,
        "other",
        "edit",
        json!({"file_path": "notes.txt", "old_string": "a", "new_string": "b"}),
    );
    assert_eq!(err(&r).1, Some("FS_NOT_OBSERVED"));
    let r = call(
        &t,
        root,
        "m",
        "write",
        json!({"file_path": "NOTES.txt", "content": "a\n"}),
    );
    assert_eq!(ok(&r), envelope(&shown(root, "NOTES.txt"), "Created file"));
    let r = call(
        &t,
        root,
        "m",
        "edit",
        json!({"file_path": "notes.TXT", "old_string": "a", "new_string": "b"}),
    );
    ok(&r);
    assert_eq!(listing(root), ["NOTES.txt"]);
    assert_eq!(std::fs::read(root.join("notes.txt")).unwrap(), b"b\n");
}

/// The guard's zero-result counters are session state too: `src`, `SRC`,
/// `.\Src\` and the absolute path are one target (README "The search-path
/// guard"), on both backends.
#[test]
fn zero_result_target_in_any_spelling() {
    for (label, backend) in backends() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir(root.join("src")).unwrap();
        std::fs::write(root.join("src").join("main.rs"), "fn main() {}\n").unwrap();
        let t = tools(backend);
        let abs = other_drive_case(&format!("{}\\SRC", root.display()));
        for p in ["src", "SRC", ".\\Src\\", abs.as_str(), "src/"] {
            let r = call(
                &t,
                root,
                "z",
                "grep",
                json!({"pattern": "absent", "path": p}),
            );
            assert_eq!(r.content, "No matches found", "[{label}] {p}");
        }
        let r = call(
            &t,
            root,
            "z",
            "grep",
            json!({"pattern": "other", "path": "sRc"}),
        );
        assert_eq!(
            r.content,
            "Error: grep found no matches in \"sRc\" 5 times in a row; stop searching it with \
             new patterns: read the file directly, use another source, or report that nothing \
             was found",
            "[{label}]"
        );
    }
}

/// A path typed in another case with a misspelled name: the guard finds
/// the closest names without regard to case (README "The search-path
/// guard", its `src/mian.rs` example) and joins them to the directory as
/// typed, with `\`, which is what the glob call it suggests prints there
/// (checked against rg.exe through the rg backend).
#[test]
fn closest_names_for_a_path_in_another_case() {
    for (label, backend) in backends() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("src").join("tool")).unwrap();
        for (p, content) in [
            ("src\\main.rs", "fn main() {}\n"),
            ("src\\lib.rs", "pub mod guard;\n"),
            ("src\\guard.rs", "// guard\n"),
            ("src\\tool\\mod.rs", "mod x;\n"),
            ("README.md", "# readme\n"),
        ] {
            std::fs::write(root.join(p), content).unwrap();
        }
        let t = tools(backend);
        let r = call(
            &t,
            root,
            "g",
            "grep",
            json!({"pattern": "fn", "path": "SRC\\mian.rs"}),
        );
        assert_eq!(
            r.content,
            r#"Error: path "SRC\\mian.rs" does not exist; the nearest existing directory is "SRC", whose closest entries are "SRC\\main.rs", "SRC\\lib.rs", "SRC\\guard.rs"; list it with glob {"pattern":"*","path":"SRC"}, then retry with a path that exists"#,
            "[{label}]"
        );
        let r = call(&t, root, "g", "read", json!({"file_path": "Src/GAURD.RS"}));
        assert_eq!(
            r.content,
            r#"Error: file_path "Src/GAURD.RS" does not exist; the nearest existing directory is "Src", whose closest entries are "Src\\guard.rs", "Src\\main.rs", "Src\\lib.rs"; list it with glob {"pattern":"*","path":"Src"}, then retry with a path that exists"#,
            "[{label}]"
        );
        let r = call(
            &t,
            root,
            "g",
            "glob",
            json!({"pattern": "*", "path": "src\\TOOLS"}),
        );
        assert_eq!(
            r.content,
            r#"Error: path "src\\TOOLS" does not exist; the nearest existing directory is "src", whose closest entries are "src\\tool/", "src\\lib.rs", "src\\main.rs"; list it with glob {"pattern":"*","path":"src"}, then retry with a path that exists"#,
            "[{label}]"
        );
        let r = call(&t, root, "g", "read", json!({"file_path": "readme.mdx"}));
        assert_eq!(
            r.content,
            r#"Error: file_path "readme.mdx" does not exist; the nearest existing directory is ".", whose closest entries are "README.md", "src/"; list it with glob {"pattern":"*"}, then retry with a path that exists"#,
            "[{label}]"
        );
        // The suggested call lists the suggested names, as rg.exe prints them.
        let r = call(
            &t,
            root,
            "g",
            "glob",
            json!({"pattern": "*.rs", "path": "SRC"}),
        );
        let mut listed: Vec<&str> = r.content.lines().collect();
        listed.sort_unstable();
        assert_eq!(
            listed,
            [
                "SRC\\guard.rs",
                "SRC\\lib.rs",
                "SRC\\main.rs",
                "SRC\\tool\\mod.rs"
            ],
            "[{label}]"
        );
    }
}

/// The device names, as typed, and the name each error quotes.
const DEVICES: &[(&str, &str)] = &[
    ("NUL", "NUL"),
    ("con", "con"),
    ("Aux.txt", "Aux.txt"),
    ("COM1", "COM1"),
    ("lpt1.log", "lpt1.log"),
    ("prn.tar.gz", "prn.tar.gz"),
    ("nul.", "nul."),
    ("NUL ", "NUL "),
    ("con .txt", "con .txt"),
    ("src\\nul.txt", "nul.txt"),
    ("src/CoM3.rs", "CoM3.rs"),
    ("src\\LPT9", "LPT9"),
    ("CONOUT$", "CONOUT$"),
];

/// read, write and edit never open a device name as a file, in any case,
/// with an extension, trailing dots or spaces, in any directory: each
/// refuses it, saying the name is reserved on Windows (`contract.md` §6),
/// with or without the guard, and nothing is created.
#[test]
fn device_names_refused_by_the_file_tools() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    let guarded = tools(Arc::new(NativeBackend::new()));
    let bare =
        Tools::new(Config::default(), Arc::new(NativeBackend::new())).without_observation_policy();
    for (typed, name) in DEVICES {
        let p = shown(root, typed);
        for (label, t) in [("guarded", &guarded), ("bare", &bare)] {
            let calls = [
                ("read", json!({ "file_path": typed })),
                ("write", json!({"file_path": typed, "content": "x"})),
                (
                    "edit",
                    json!({"file_path": typed, "old_string": "a", "new_string": "b"}),
                ),
            ];
            for (tool, args) in calls {
                let r = call(t, root, "d", tool, args);
                let msg = format!(
                    "Error: cannot {tool} \"{p}\": \"{name}\" is a reserved device name on Windows"
                );
                assert_eq!(
                    err(&r),
                    (msg.as_str(), Some("FS_NOT_REGULAR_FILE")),
                    "[{label}] {tool} {typed:?}"
                );
            }
        }
    }
    assert_eq!(listing(root), ["src"]);
    assert!(listing(&root.join("src")).is_empty());
}

/// glob and grep on a device name stay equal to rg.exe, raw and at the
/// tool level, on both backends (the conformance harness). Only names
/// whose open cannot wait are searched: `NUL` (empty) and what is not a
/// device; `CON` and `aux.txt` are only listed by glob (a stat).
#[test]
fn device_names_searched_as_rg_does() {
    let Some(env) = rg::env() else { return };
    let tree = Tree::build(&[
        file("src/main.rs", "fn main() {}\n"),
        file("notes.txt", "x marks\n"),
    ]);
    let mut cases: Vec<Case> = Vec::new();
    for p in [
        "NUL",
        "nul",
        "CON",
        "aux.txt",
        "src\\nul.txt",
        "NUL.",
        "COM1",
        "lpt1.log",
    ] {
        cases.push(glob("*", Some(p)));
    }
    for p in ["NUL", "src\\NUL", "nul.txt"] {
        cases.push(grep("x", Some(p), None));
    }
    let mut report = Report::new("windows_device_names");
    report.run_all(env, &tree, &cases, Mode::InProcess);
    report.finish();
}

/// CRLF and a UTF-8 BOM through read and edit, as on Linux
/// (`src/tool/files/tests.rs`: `edit_crlf_bom_and_lone_cr`,
/// `read_strips_bom`): read strips the BOM and one `\r` before each `\n`
/// (`seed-reference.md` §6.1); edit keeps CRLF (every `\n` of a CRLF
/// majority file written `\r\n`, a lone `\r` kept) and, like the seed's
/// strict decoder, does not write the BOM back (§6.3).
#[test]
fn crlf_and_utf8_bom_through_read_and_edit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let t = tools(Arc::new(NativeBackend::new()));
    let put = |name: &str, bytes: &[u8]| std::fs::write(root.join(name), bytes).unwrap();
    let get = |name: &str| std::fs::read(root.join(name)).unwrap();

    put("c.txt", b"\xEF\xBB\xBFa\r\nb\r\nc\nd\re\r\n");
    let r = call(&t, root, "c", "read", json!({"file_path": "c.txt"}));
    assert_eq!(
        ok(&r),
        envelope(
            &shown(root, "c.txt"),
            "1: a\n2: b\n3: c\n4: d\re\n\n(End of file - total 4 lines)"
        )
    );
    let r = call(
        &t,
        root,
        "c",
        "edit",
        json!({"file_path": "c.txt", "old_string": "b\r\nc", "new_string": "B\nC"}),
    );
    assert_eq!(
        ok(&r),
        format!(
            "The file {} has been updated successfully.",
            shown(root, "c.txt")
        )
    );
    assert_eq!(get("c.txt"), b"a\r\nB\r\nC\r\nd\re\r\n");
    assert_eq!(r.value.unwrap()["before"], json!("a\nb\nc\nd\re\n"));

    // Plain CRLF, replace_all: CRLF kept, the other message.
    put("w.txt", b"one\r\ntwo\r\ntwo\r\n");
    ok(&call(&t, root, "c", "read", json!({"file_path": "w.txt"})));
    let r = call(
        &t,
        root,
        "c",
        "edit",
        json!({"file_path": "w.txt", "old_string": "two\n", "new_string": "three\n",
               "replace_all": true}),
    );
    assert_eq!(
        ok(&r),
        format!(
            "The file {} has been updated. All occurrences were successfully replaced.",
            shown(root, "w.txt")
        )
    );
    assert_eq!(get("w.txt"), b"one\r\nthree\r\nthree\r\n");

    // An LF majority stays LF; the CRLF line in it stays as it was.
    put("l.txt", b"\xEF\xBB\xBFx\ny\nz\r\n");
    let r = call(&t, root, "c", "read", json!({"file_path": "l.txt"}));
    assert_eq!(
        ok(&r),
        envelope(
            &shown(root, "l.txt"),
            "1: x\n2: y\n3: z\n\n(End of file - total 3 lines)"
        )
    );
    ok(&call(
        &t,
        root,
        "c",
        "edit",
        json!({"file_path": "l.txt", "old_string": "y", "new_string": "Y"}),
    ));
    assert_eq!(get("l.txt"), b"x\nY\nz\n");

    // write converts nothing (`seed-reference.md` §6.2).
    let r = call(
        &t,
        root,
        "c",
        "write",
        json!({"file_path": "n.txt", "content": "\u{feff}p\r\nq"}),
    );
    assert_eq!(ok(&r), envelope(&shown(root, "n.txt"), "Created file"));
    assert_eq!(get("n.txt"), b"\xEF\xBB\xBFp\r\nq");
}

/// UTF-16 files (a BOM of either order) are not UTF-8 text: read and edit
/// refuse them and leave them untouched (`seed-reference.md` §6.1: a NUL
/// in the first 8192 bytes is `binary file`, bytes that are not UTF-8 are
/// `invalid UTF-8 text`; §6.3 the same for edit), though grep transcodes
/// them as rg does (`rg-semantics.md`).
#[test]
fn utf16_bom_files_through_read_and_edit() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let t = tools(Arc::new(NativeBackend::new()));
    let bare =
        Tools::new(Config::default(), Arc::new(NativeBackend::new())).without_observation_policy();
    let files: [(&str, &[u8], &str); 3] = [
        ("le.txt", b"\xFF\xFEa\x00\r\x00\n\x00", "binary file"),
        ("be.txt", b"\xFE\xFF\x00a\x00\r\x00\n", "binary file"),
        // U+4E2D U+6587 in UTF-16LE: no NUL, and not UTF-8.
        ("cjk.txt", b"\xFF\xFE\x2D\x4E\x87\x65", "invalid UTF-8 text"),
    ];
    for (name, bytes, what) in files {
        std::fs::write(root.join(name), bytes).unwrap();
        let p = shown(root, name);
        let r = call(&t, root, "u", "read", json!({ "file_path": name }));
        let msg = format!("Error: cannot read \"{p}\": {what}");
        assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_TEXT")), "{name}");
        // The failed read recorded nothing: the edit is unobserved.
        let args = json!({"file_path": name, "old_string": "a", "new_string": "b"});
        let r = call(&t, root, "u", "edit", args.clone());
        let msg = format!(
            "Error: edit requires reading \"{p}\" first \u{2014} read the file, then retry"
        );
        assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_OBSERVED")), "{name}");
        // Without the policy, edit's own decoder refuses it.
        let r = call(&bare, root, "u", "edit", args);
        let msg = format!("Error: cannot edit \"{p}\": {what}");
        assert_eq!(err(&r), (msg.as_str(), Some("FS_NOT_TEXT")), "{name}");
        assert_eq!(std::fs::read(root.join(name)).unwrap(), bytes, "{name}");
    }
    let r = call(
        &t,
        root,
        "u",
        "grep",
        json!({"pattern": "a", "include": "le.txt"}),
    );
    assert_eq!(r.content, "Found 1 match\n\nle.txt\nLine 1: a");
}
