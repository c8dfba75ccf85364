//! Windows semantics against rg.exe 15.2.0, run under Wine by
//! `scripts/test-windows` (README "Platforms"), compared like the
//! conformance tables (raw level on both backends, tool level, `read` of
//! every returned path): paths typed with `\`, anchored to a drive or to a
//! root alone, in another letter case; the hidden attribute; names that are
//! odd but valid on Windows (the Unix tree of `conformance::odd_names`
//! holds names Windows cannot create); and a short session with each
//! server, `serve` and `mcp`, on both backends.

use serde_json::{json, Value};

use crate::util::served::Served;
use crate::util::tree::{dir, file, hidden_attr, mtime, Spec, Tree};
use crate::util::{glob, grep, rg, Case, Mode, Report};

fn check(name: &str, specs: &[Spec], cases: &[Case]) {
    let Some(env) = rg::env() else { return };
    let tree = Tree::build(specs);
    let mut report = Report::new(name);
    report.run_all(env, &tree, cases, Mode::InProcess);
    report.finish();
}

fn paths_tree() -> Vec<Spec> {
    vec![
        file(".git/HEAD", "ref: main\n"),
        file(".gitignore", "*.log\n/build/\n"),
        file("src/a.rs", "fn a() { needle(); }\n"),
        file("src/b.txt", "needle b\n"),
        file("src/sub/c.rs", "// needle c\n"),
        file("src/sub/x.log", "needle log\n"),
        file("src/.gitignore", "/sub/skip.txt\n"),
        file("src/sub/skip.txt", "needle skipped\n"),
        file("build/out.txt", "needle build\n"),
        file("docs/readme.md", "# needle\n"),
        file("top.txt", "needle top\n"),
        dir("empty"),
        mtime("src/a.rs", 5),
        mtime("top.txt", 5),
    ]
}

/// rg joins walked names with `\` (`Path::join`) and keeps the typed path
/// as typed: `src/sub\c.rs`, `.\src\a.rs`, `SRC\a.rs` (the filesystem
/// finds names in any case; the glob and ignore rules match the bytes).
/// A path anchored to a root alone (`\Users\…`) is on the workdir's drive,
/// one anchored to a drive alone (`C:src`) is relative to that drive's
/// directory, the workdir; rg's matchers see such a path whole, as the
/// workdir is no prefix of it (`gitignore.rs: Gitignore::strip`).
#[test]
pub(crate) fn typed_paths() {
    let paths: &[Option<&str>] = &[
        None,
        Some(".\\"),
        Some(".\\src"),
        Some(".\\src\\"),
        Some("src\\"),
        Some("src\\\\"),
        Some("src\\sub"),
        Some("src/sub\\"),
        Some(".\\.\\src"),
        Some(".\\/src"),
        Some("src\\..\\src"),
        Some("src\\a.rs"),
        Some(".\\src\\a.rs"),
        Some("src\\a.rs\\"),
        Some("SRC"),
        Some("Src\\SUB"),
        Some("src\\A.RS"),
        Some("BUILD"),
        Some("{root}\\src"),
        Some("{root}\\.\\src\\"),
        Some("{rootdir}\\src"),
        Some("{rootdir}"),
        Some("{drive}src"),
        Some("{drive}.\\src\\sub"),
        Some("{drive}"),
        Some("missing\\deeper"),
    ];
    let mut cases = Vec::new();
    for p in paths {
        for g in ["*", "*.rs", "src/*.rs", "**/sub/*", "src\\*.rs", "/src/**"] {
            cases.push(glob(g, *p));
        }
        cases.push(grep("needle", *p, None));
        cases.push(grep("needle", *p, Some("*.log")));
        cases.push(grep("needle", *p, Some("src/**")));
    }
    for p in [
        None,
        Some(".."),
        Some("..\\src"),
        Some("..\\.."),
        Some("..\\BUILD"),
    ] {
        cases.push(glob("*", p).cwd("src/sub"));
        cases.push(glob("*.rs", p).cwd("src/sub"));
        cases.push(grep("needle", p, None).cwd("src/sub"));
        cases.push(grep("needle", p, Some("*.txt")).cwd("src/sub"));
    }
    check("windows_typed_paths", &paths_tree(), &cases);
}

/// The other spellings of a path on Windows: verbatim (`\\?\C:\…`, which
/// rg.exe keeps as typed, and `std` does not normalize), the device
/// namespace (`\\.\C:\…`), the root written with `/`, and UNC paths,
/// which name no share under Wine (no SMB server): rg.exe's error for them
/// is the engine's too.
#[test]
pub(crate) fn other_path_spellings() {
    let mut cases = Vec::new();
    for p in [
        "\\\\?\\{root}\\src",
        "\\\\?\\{root}\\src\\a.rs",
        "\\\\.\\{root}\\src",
        "{root/}/src",
        "{root/}/src/sub/",
        "{root/}",
        "\\\\localhost\\c$\\missing",
        "\\\\?\\UNC\\localhost\\c$\\missing",
    ] {
        cases.push(glob("*", Some(p)));
        cases.push(glob("src/*.rs", Some(p)));
        cases.push(grep("needle", Some(p), None));
        cases.push(grep("needle", Some(p), Some("*.rs")));
    }
    check("windows_path_spellings", &paths_tree(), &cases);
}

/// Paths longer than `MAX_PATH` (260): std adds the verbatim prefix where
/// a path needs it and rg.exe prints what it walked, so both list, search
/// and name a tree 13 directories of 24 characters deep (over 320
/// characters below the temporary root) as they do a short one.
#[test]
pub(crate) fn paths_past_max_path() {
    let deep: String = (0..13)
        .map(|i| format!("directory-{i:02}-abcdefghijk/"))
        .collect();
    let specs = vec![
        file("top.txt", "needle top\n"),
        file(format!("{deep}deep.txt"), "needle deep\n"),
        file(format!("{deep}deep.rs"), "fn needle() {}\n"),
        mtime("top.txt", 5),
    ];
    let typed = deep.trim_end_matches('/').replace('/', "\\");
    let under_root = format!("{{root}}\\{typed}");
    let mut cases = Vec::new();
    for p in [None, Some(typed.as_str()), Some(under_root.as_str())] {
        cases.push(glob("*", p));
        cases.push(glob("*.rs", p));
        cases.push(grep("needle", p, None));
        cases.push(grep("needle", p, Some("*.txt")));
    }
    check("windows_past_max_path", &specs, &cases);
}

/// A workdir written with `/` (`--cwd C:/…/root`) answers as the same
/// workdir written with `\`, which is how rg.exe sees it: Windows keeps a
/// process's current directory with `\` (`GetCurrentDirectoryW`).
#[test]
pub(crate) fn workdir_written_with_slashes() {
    let Some(env) = rg::env() else { return };
    let tree = Tree::build(&paths_tree());
    let slashed = tree.root().to_str().unwrap().replace('\\', "/");
    for call in [
        crate::util::rg::Call::Glob {
            pattern: "*.rs".into(),
            path: None,
        },
        crate::util::rg::Call::Grep {
            pattern: "needle".into(),
            path: Some("src".into()),
            include: None,
        },
        crate::util::rg::Call::Grep {
            pattern: "needle".into(),
            path: Some(format!("{}\\docs", tree.root().display())),
            include: None,
        },
    ] {
        let want = rg::run_rg(env, &call, tree.root());
        for backend in ["native", "rg"] {
            let o = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-search"))
                .args(call.cli_argv(backend, std::path::Path::new(&slashed)))
                .stdin(std::process::Stdio::null())
                .output()
                .expect("run dsh-search");
            let got = rg::Raw::from_output(o);
            if let Some(d) = rg::diff(&call, &want, &got) {
                panic!("[{backend}] --cwd {slashed}: {d}");
            }
        }
    }
}

/// The hidden attribute hides an entry from grep as a leading `.` does
/// (ignore 0.4.29 `pathutil.rs: is_hidden` reads the attribute on
/// Windows); glob lists it (`--hidden`), an include glob whitelists it, and
/// a path named explicitly is searched.
#[test]
pub(crate) fn hidden_attribute() {
    let specs = vec![
        file("plain.txt", "needle plain\n"),
        file("attr.txt", "needle attribute\n"),
        file("attrdir/inner.txt", "needle in hidden dir\n"),
        file("attrdir/deep/d.rs", "needle deep\n"),
        file("shown/attr.rs", "needle rs attribute\n"),
        file("shown/ok.rs", "needle ok\n"),
        file(".dot.txt", "needle dot\n"),
        hidden_attr("attr.txt"),
        hidden_attr("attrdir"),
        hidden_attr("shown/attr.rs"),
    ];
    let mut cases = Vec::new();
    for path in [
        None,
        Some("."),
        Some("attrdir"),
        Some("attr.txt"),
        Some("shown"),
    ] {
        cases.push(grep("needle", path, None));
        for inc in ["*.txt", "*.rs", "attrdir/**", "*"] {
            cases.push(grep("needle", path, Some(inc)));
        }
        cases.push(glob("*", path));
        cases.push(glob("attr*", path));
    }
    check("windows_hidden_attribute", &specs, &cases);
}

/// Names that are unusual but valid on Windows, in paths rg prints and
/// `read` opens again.
#[test]
pub(crate) fn windows_names() {
    let specs = vec![
        file("sp ace/ünï cödé.txt", "needle unicode dir\n"),
        file("a'quote.txt", "needle quote\n"),
        file("amp&semi;.txt", "needle amp\n"),
        file("eq=at@.txt", "needle eq\n"),
        file("brace{x}.rs", "needle brace\n"),
        file("[br].rs", "needle bracket\n"),
        file("tilde~1.txt", "needle tilde\n"),
        file("bang!dollar$.md", "needle bang\n"),
        file("pct%caret^.md", "needle pct\n"),
        file("plus+comma,.txt", "needle plus\n"),
        file("back`tick.txt", "needle backtick\n"),
        file("日本語/名前.txt", "needle cjk\n"),
        file("emoji 😀.txt", "needle emoji\n"),
        file("UPPER.TXT", "needle upper\n"),
        file("lat.txt", b"needle \xe9t\xe9\n"),
    ];
    let mut cases = Vec::new();
    for p in [
        "*",
        "*.txt",
        "*.TXT",
        "*[!a-z]*",
        "**/名前.txt",
        "brace{x}*",
        "*\\{x\\}*",
    ] {
        cases.push(glob(p, None));
        cases.push(glob(p, Some(".\\")));
    }
    for p in ["needle", "é", "😀", "(?i)UPPER"] {
        cases.push(grep(p, None, None));
        cases.push(grep(p, Some("."), None));
    }
    for path in ["sp ace", "日本語\\名前.txt", "upper.txt", "tilde~1.txt"] {
        cases.push(grep("needle", Some(path), None));
        cases.push(glob("*", Some(path)));
    }
    check("windows_names", &specs, &cases);
}

/// A tree for the servers: `src\a.rs` and `src\sub\b.txt`.
fn served_tree() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src/sub")).unwrap();
    std::fs::write(dir.path().join("src/a.rs"), "fn a() { needle(); }\n").unwrap();
    std::fs::write(dir.path().join("src/sub/b.txt"), "no match\n").unwrap();
    dir
}

/// `dsh-search serve` answers a short session on Windows, on both
/// backends (the rg backend spawning rg.exe): search, read, edit, write,
/// with the paths rg.exe prints, then exits 0 at EOF (`contract.md` §12).
#[test]
pub(crate) fn serve_session() {
    let Some(_env) = rg::env() else { return };
    for backend in ["native", "rg"] {
        let dir = served_tree();
        let mut s = Served::start(dir.path(), &["--backend", backend, "serve"]);
        let mut ask = |id: &str, tool: &str, arguments: Value| {
            s.send(&json!({"id": id, "tool": tool, "arguments": arguments}));
            let answer = s.recv();
            assert_eq!(answer["id"], id, "[{backend}] {answer}");
            answer["result"]["content"]
                .as_str()
                .unwrap_or_else(|| panic!("[{backend}] no content: {answer}"))
                .to_string()
        };
        assert_eq!(ask("g", "glob", json!({"pattern": "*.rs"})), "src\\a.rs");
        assert_eq!(
            ask("r", "grep", json!({"pattern": "needle"})),
            "Found 1 match\n\nsrc\\a.rs\nLine 1: fn a() { needle(); }"
        );
        assert_eq!(
            ask(
                "p",
                "grep",
                json!({"pattern": "needle", "path": "src\\sub"})
            ),
            "No matches found"
        );
        let read = ask("d", "read", json!({"file_path": "src\\a.rs"}));
        let shown = dir.path().join("src").join("a.rs");
        assert!(
            read.contains(&format!("<path>{}</path>", shown.display()))
                && read.contains("1: fn a() { needle(); }"),
            "[{backend}] {read}"
        );
        let edit = ask(
            "e",
            "edit",
            json!({"file_path": "src/a.rs", "old_string": "needle", "new_string": "pin"}),
        );
        assert!(edit.contains("updated successfully"), "[{backend}] {edit}");
        assert_eq!(
            std::fs::read_to_string(&shown).unwrap(),
            "fn a() { pin(); }\n"
        );
        let write = ask(
            "w",
            "write",
            json!({"file_path": "new\\n.txt", "content": "needle new\n"}),
        );
        assert!(!write.starts_with("Error"), "[{backend}] {write}");
        assert_eq!(ask("n", "glob", json!({"pattern": "n.txt"})), "new\\n.txt");
        s.close();
        assert!(s.wait().success(), "[{backend}] {}", s.stderr());
    }
}

/// `dsh-search mcp` answers the handshake, lists its five tools and runs
/// them on Windows, then exits 0 at EOF (`contract.md` §12).
#[test]
pub(crate) fn mcp_session() {
    let Some(_env) = rg::env() else { return };
    for backend in ["native", "rg"] {
        let dir = served_tree();
        let cwd = dir.path().to_str().unwrap();
        let mut s = Served::start(dir.path(), &["--backend", backend, "--cwd", cwd, "mcp"]);
        s.send(
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "windows-test", "version": "1"}}}),
        );
        let init = s.recv();
        assert_eq!(init["result"]["serverInfo"]["name"], "dsh-search", "{init}");
        s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}));
        let list = s.recv();
        let mut names: Vec<&str> = list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("[{backend}] {list}"))
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        names.sort_unstable();
        assert_eq!(names, ["edit", "glob", "grep", "read", "write"]);
        let mut call = |id: u64, tool: &str, arguments: Value| {
            s.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}}));
            let answer = s.recv();
            assert_eq!(answer["id"], id, "[{backend}] {answer}");
            answer["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_else(|| panic!("[{backend}] no text: {answer}"))
                .to_string()
        };
        assert_eq!(
            call(2, "glob", json!({"pattern": "**/b.txt"})),
            "src\\sub\\b.txt"
        );
        assert_eq!(
            call(3, "grep", json!({"pattern": "needle", "include": "*.rs"})),
            "Found 1 match\n\nsrc\\a.rs\nLine 1: fn a() { needle(); }"
        );
        let read = call(4, "read", json!({"file_path": "src\\sub\\b.txt"}));
        assert!(read.contains("1: no match"), "[{backend}] {read}");
        s.close();
        assert!(s.wait().success(), "[{backend}] {}", s.stderr());
    }
}

/// `--fs mem`, `--fs sftp://` and `--overlay` hold `/`-separated Unix
/// paths, so on Windows they are refused when the workspace opens, with one
/// line that says so (`contract.md` §10), on every command; nothing is
/// loaded, created or connected.
#[test]
pub(crate) fn unix_path_workspaces_refused() {
    let dir = served_tree();
    let overlay = dir.path().join("ov");
    let overlay = overlay.to_str().unwrap();
    for args in [
        &["--fs", "mem", "grep", "needle"][..],
        &["--fs", "mem", "glob", "*"][..],
        &["--overlay", overlay, "grep", "needle"][..],
        &["--overlay", overlay, "read", "src\\a.rs"][..],
        &["--fs", "mem", "serve"][..],
        &["--fs", "sftp://127.0.0.1:9", "glob", "*"][..],
        &["--fs", "sftp://u@127.0.0.1:9", "grep", "x"][..],
    ] {
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-search"))
            .arg("--cwd")
            .arg(dir.path())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run dsh-search");
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(o.stdout.is_empty(), "{args:?}");
        assert_eq!(
            stderr,
            "dsh-search: --fs mem, --fs sftp:// and --overlay are not available on Windows: \
             they hold `/`-separated Unix paths, not drive paths\n",
            "{args:?}"
        );
        assert!(!dir.path().join("ov").exists(), "{args:?}");
    }
}

/// The live index on Windows (`docs/index.md`, "Where there is no
/// watcher"): no watcher there, so the mirror is validated at each call
/// (with the directories' listings' metadata), and every call after each
/// change made on the disk is rg.exe's, byte for byte, and answered by the
/// mirror; the root named without the verbatim prefix `canonicalize`
/// gives, or the walks would never meet the mirror (nothing would be
/// listed from it).
#[test]
fn the_index_validates_at_each_call_and_answers_as_rg() {
    use std::fs;
    use std::path::Path;
    use std::time::Duration;

    use dsh_search::{Config, FsSpec, IndexWatch, WorkspaceOptions};

    let Some(env) = rg::env() else { return };
    let tree = Tree::build(&paths_tree());
    let root = tree.root().to_path_buf();
    let mut report = Report::new("index on Windows");
    type Change = fn(&Path) -> std::io::Result<()>;
    let changes: [(&str, Change); 8] = [
        ("nothing", |_| Ok(())),
        ("a file created", |r| {
            fs::write(r.join("src/new.rs"), "needle new zq_rare\n")
        }),
        ("a file appended to", |r| {
            use std::io::Write as _;
            let mut f = fs::OpenOptions::new()
                .append(true)
                .open(r.join("top.txt"))?;
            f.write_all(b"zq_rare appended\n")
        }),
        ("a file rewritten with another size", |r| {
            fs::write(r.join("src/b.txt"), "zq_rare rewritten, longer\n")
        }),
        ("a file renamed into another directory", |r| {
            fs::rename(r.join("src/new.rs"), r.join("docs/moved.rs"))
        }),
        ("a directory made with a file", |r| {
            fs::create_dir_all(r.join("more/deep"))?;
            fs::write(r.join("more/deep/f.txt"), "needle deep zq_rare\n")
        }),
        ("a file removed", |r| {
            fs::remove_file(r.join("docs/readme.md"))
        }),
        ("a directory removed", |r| {
            fs::remove_dir_all(r.join("more"))
        }),
    ];
    for watch in [IndexWatch::Os, IndexWatch::None] {
        let ws = WorkspaceOptions::new(FsSpec::Local)
            .root(&root)
            .index(true)
            .index_watch(watch)
            .open()
            .expect("an indexed workspace opens");
        let index = ws.index().expect("asked for").clone();
        assert!(
            index.wait_ready(Duration::from_secs(120)),
            "{:?}",
            index.status()
        );
        let s = index.status();
        let want = match watch {
            IndexWatch::Os => "no watcher: the index watches the disk on Linux only",
            IndexWatch::None => "asked for",
        };
        assert_eq!(s.validates.as_deref(), Some(want), "{s:?}");
        let backend = ws.backend(&Config::default());
        let calls = [
            rg::Call::Glob {
                pattern: "*".into(),
                path: None,
            },
            rg::Call::Glob {
                pattern: "**/*.rs".into(),
                path: None,
            },
            rg::Call::Grep {
                pattern: "needle".into(),
                path: None,
                include: None,
            },
            rg::Call::Grep {
                pattern: "zq_rare".into(),
                path: None,
                include: None,
            },
            rg::Call::Grep {
                pattern: "needle".into(),
                path: Some("src".into()),
                include: None,
            },
        ];
        for (what, change) in &changes {
            change(&root).unwrap();
            for call in &calls {
                let label = format!("{watch}: {what}: {}", rg::describe(call, ""));
                report.count();
                let by_index = index.status().answered_by_index;
                let expected = rg::run_rg(env, call, &root);
                let actual = rg::run_backend(&*backend, call, &root);
                if let Some(d) = rg::diff(call, &expected, &actual) {
                    report.fail(format!("{label}\n{d}"));
                }
                if index.status().answered_by_index != by_index + 1 {
                    report.fail(format!(
                        "{label}: not answered by the index: {:?}",
                        index.status()
                    ));
                }
            }
        }
        let s = index.status();
        if s.dirs_listed == 0 || s.files_skipped == 0 {
            report.fail(format!(
                "{watch}: nothing listed from the mirror or spared: {s:?}"
            ));
        }
        // Put the tree back for the next mode.
        drop(ws);
        fs::write(root.join("docs/readme.md"), "# needle\n").unwrap();
    }
    report.finish();
}
