//! An agent session on every kind of workspace (`docs/contract.md` §10):
//! glob → read → edit → grep sees the edit, with the observation policy,
//! the guard and the spill store, run over an in-memory copy of a tree and
//! over overlays of it, and compared step by step with the same session on
//! the disk (whose answers the conformance suite checks against rg). The
//! lower layer of an overlay and the disk under an in-memory copy are never
//! touched; the guard's hints come from the workspace's own tree; spill
//! references open with `read` and `grep` wherever the workspace is.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_search::config::Config;
use dsh_search::fs::{ChangeKind, FileSystem, FsHints, FsWrite, LocalFs, MemFs, OverlayFs};
use dsh_search::tool::{CallContext, ToolResult, Tools};
use dsh_search::Guard;
use dsh_search::LocalSpillStore;
use dsh_search::{GrepRequest, NativeBackend, SearchBackend};
use serde_json::{json, Value};

use crate::util::ws::Ws;

const LIB: &str = "pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n";
const MAIN: &str = "fn main() {\n    println!(\"hello\");\n}\n";

/// The tree on disk: two sources, a README, an ignored file and enough
/// files under `many/` for glob to go over a cap of 5.
fn project() -> Ws {
    let ws = Ws::new();
    ws.file("src/lib.rs", LIB);
    ws.file("src/main.rs", MAIN);
    ws.file("README.md", "# demo\nhello\n");
    ws.file(".ignore", "ignored.txt\n");
    ws.file("ignored.txt", "hello\n");
    for i in 0..8 {
        ws.file(&format!("many/f{i}.txt"), format!("file {i}\n"));
    }
    // Distinct whole-second mtimes: glob's order must not depend on when
    // each run's tree happened to be written.
    let files = [
        "src/lib.rs",
        "src/main.rs",
        "README.md",
        ".ignore",
        "ignored.txt",
    ];
    let many: Vec<String> = (0..8).map(|i| format!("many/f{i}.txt")).collect();
    for (i, f) in files
        .iter()
        .copied()
        .chain(many.iter().map(String::as_str))
        .enumerate()
    {
        ws.set_mtime(f, 1_700_000_000 + i as u64);
    }
    ws
}

/// The changes an overlay holds, listed.
type Changes = Box<dyn Fn() -> Vec<(ChangeKind, PathBuf)>>;
/// Adds a directory to the workspace only.
type AddDir = Box<dyn Fn(&Path)>;
/// What one call gave: text, error code, value.
type Seen = (String, Option<String>, Option<Value>);

/// A kind of workspace over the tree at `root`, with what it lets the test
/// check afterwards.
struct Workspace {
    tools: Tools,
    /// The changes an overlay holds, when it is one.
    changes: Option<Changes>,
    /// Adds a directory to the workspace only (not to the disk), when the
    /// workspace can: the guard's hints must name it.
    add_dir: Option<AddDir>,
}

fn tools_on<F: FsHints + FsWrite>(fs: Arc<F>, spill: &Path) -> Tools {
    let mut config = Config::default();
    config.search.glob_max_results = 5;
    let store = LocalSpillStore::new(Some(spill.to_path_buf())).unwrap();
    Tools::on_workspace(config.clone(), fs)
        .with_spill_store(Arc::new(store))
        .with_guard(Arc::new(Guard::new(config.guard.clone())))
}

fn overlay_changes<L: FileSystem, U: FsWrite>(fs: Arc<OverlayFs<L, U>>) -> Changes {
    Box::new(move || {
        fs.changes()
            .unwrap()
            .into_iter()
            .map(|c| (c.kind, c.path))
            .collect()
    })
}

type Make = fn(&Path, &Path, &Path) -> Workspace;

/// The workspaces: (name, how to build it over `root` with the spill root
/// and a scratch directory, whether it writes through to the disk).
fn workspaces() -> Vec<(&'static str, Make, bool)> {
    vec![
        (
            "disk",
            |_root, spill, _scratch| Workspace {
                tools: tools_on(Arc::new(LocalFs::new()), spill),
                changes: None,
                add_dir: None,
            },
            true,
        ),
        (
            "in memory",
            |root, spill, _scratch| {
                let mem = Arc::new(MemFs::load(root).unwrap());
                let m = mem.clone();
                Workspace {
                    tools: tools_on(mem, spill),
                    changes: None,
                    add_dir: Some(Box::new(move |p| m.create_dir_all(p).unwrap())),
                }
            },
            false,
        ),
        (
            "overlay, upper in memory",
            |root, spill, _scratch| {
                let upper = Arc::new(MemFs::new());
                let fs = Arc::new(
                    OverlayFs::new(Arc::new(LocalFs::new()), root, upper.clone(), root).unwrap(),
                );
                Workspace {
                    tools: tools_on(fs.clone(), spill),
                    changes: Some(overlay_changes(fs)),
                    add_dir: None,
                }
            },
            false,
        ),
        (
            "overlay, upper on disk",
            |root, spill, scratch| {
                let fs = Arc::new(
                    OverlayFs::on_disk(Arc::new(LocalFs::new()), root, &scratch.join("ov"))
                        .unwrap(),
                );
                Workspace {
                    tools: tools_on(fs.clone(), spill),
                    changes: Some(overlay_changes(fs)),
                    add_dir: None,
                }
            },
            false,
        ),
        // The tree over SFTP to the tests' sshd (`docs/contract.md` §11):
        // every call, the guard's listings included, goes to the server.
        #[cfg(feature = "sftp")]
        (
            "over sftp",
            |_root, spill, _scratch| Workspace {
                tools: tools_on(crate::util::sshd::shared_fs(), spill),
                changes: None,
                add_dir: None,
            },
            true,
        ),
        (
            "overlay over memory, upper in memory",
            |root, spill, _scratch| {
                let lower = Arc::new(MemFs::load(root).unwrap());
                let fs =
                    Arc::new(OverlayFs::new(lower, root, Arc::new(MemFs::new()), root).unwrap());
                Workspace {
                    tools: tools_on(fs.clone(), spill),
                    changes: Some(overlay_changes(fs)),
                    add_dir: None,
                }
            },
            false,
        ),
    ]
}

/// What a call gave that the session's comparison looks at: the text, the
/// error code, the value (with the absolute paths that differ between
/// runs, the tree's and the spill root's, replaced; the version tokens,
/// which name inodes, masked).
fn seen(r: &ToolResult, root: &Path, spill: &Path) -> Seen {
    let mask = |s: &str| {
        let s = s
            .replace(spill.to_str().unwrap(), "<spill>")
            .replace(root.to_str().unwrap(), "<root>");
        // The spill file's 12 random hex digits.
        let mut out = String::new();
        let mut rest = s.as_str();
        while let Some(i) = rest.find("-glob-results.txt") {
            out.push_str(&rest[..i.saturating_sub(12)]);
            out.push_str("<random>-glob-results.txt");
            rest = &rest[i + "-glob-results.txt".len()..];
        }
        out.push_str(rest);
        out
    };
    let code = r.error.as_ref().and_then(|e| e.code()).map(str::to_string);
    let value = r.value.as_ref().map(|v| {
        let mut v: Value = serde_json::from_str(&mask(&v.to_string())).unwrap();
        if let Some(o) = v.as_object_mut() {
            if o.contains_key("version") {
                o.insert("version".into(), json!("<version>"));
            }
        }
        v
    });
    (mask(&r.content), code, value)
}

/// The session: every step's result, and the spill reference it read.
fn session(ws: &Workspace, root: &Path, spill: &Path) -> Vec<(String, Seen)> {
    let ctx = CallContext::new(root).session("agent");
    let t = &ws.tools;
    let mut steps = Vec::new();
    let mut step = |name: &str, tool: &str, args: Value| {
        let r = t.call(tool, &args, &ctx);
        steps.push((name.to_string(), seen(&r, root, spill)));
        r
    };
    step("glob *.rs", "glob", json!({"pattern": "*.rs"}));
    step("grep hello", "grep", json!({"pattern": "hello"}));
    step(
        "edit unread",
        "edit",
        json!({"file_path": "src/lib.rs", "old_string": "a + b", "new_string": "a - b"}),
    );
    step("read", "read", json!({"file_path": "src/lib.rs"}));
    step(
        "edit",
        "edit",
        json!({"file_path": "src/lib.rs", "old_string": "a + b", "new_string": "a.wrapping_add(b)"}),
    );
    step(
        "grep sees the edit",
        "grep",
        json!({"pattern": "wrapping_add"}),
    );
    step(
        "edit again, stale-free",
        "edit",
        json!({"file_path": "src/lib.rs", "old_string": "wrapping_add", "new_string": "saturating_add"}),
    );
    step(
        "write new",
        "write",
        json!({"file_path": "notes/todo.md", "content": "- hello again\n"}),
    );
    step("glob sees the new file", "glob", json!({"pattern": "*.md"}));
    step(
        "grep in the new file",
        "grep",
        json!({"pattern": "again", "path": "notes"}),
    );
    step(
        "read a missing path",
        "read",
        json!({"file_path": "src/lib.r"}),
    );
    step(
        "glob a missing path",
        "glob",
        json!({"pattern": "*", "path": "notez"}),
    );
    step(
        "edit absent text",
        "edit",
        json!({"file_path": "src/main.rs", "old_string": "nope", "new_string": "x"}),
    );
    let over = step("glob over the cap", "glob", json!({"pattern": "*.txt"}));
    let locator = over
        .content
        .split("stored at: ")
        .nth(1)
        .and_then(|f| f.split(". Use read").next())
        .unwrap_or_else(|| panic!("no spill reference in {:?}", over.content))
        .to_string();
    step("read the spill", "read", json!({"file_path": locator}));
    step(
        "grep the spill",
        "grep",
        json!({"pattern": "f3", "path": locator}),
    );
    steps
}

#[test]
fn agent_session_is_the_same_on_every_workspace() {
    let mut reference: Option<Vec<(String, Seen)>> = None;
    for (name, make, writes_through) in workspaces() {
        let ws = project();
        let root = ws.root.clone();
        let spill = tempfile::tempdir().unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let ws = make(&root, spill.path(), scratch.path());
        let steps = session(&ws, &root, spill.path());
        match &reference {
            None => {
                // The disk's session itself, checked by hand.
                let get = |n: &str| &steps.iter().find(|(s, _)| s == n).unwrap().1;
                assert_eq!(get("glob *.rs").0, "src/lib.rs\nsrc/main.rs");
                assert_eq!(get("edit unread").1.as_deref(), Some("FS_NOT_OBSERVED"));
                assert_eq!(get("edit").1, None);
                assert_eq!(
                    get("grep sees the edit").0,
                    "Found 1 match\n\nsrc/lib.rs\nLine 2:     a.wrapping_add(b)"
                );
                assert_eq!(get("edit again, stale-free").1, None);
                assert_eq!(
                    get("grep in the new file").0,
                    "Found 1 match\n\nnotes/todo.md\nLine 1: - hello again"
                );
                assert!(get("read a missing path").0.contains("lib.rs"));
                assert!(get("read the spill").0.contains("1: ignored.txt"));
                assert!(get("grep the spill").0.starts_with("Found 1 match"));
                reference = Some(steps);
            }
            Some(want) => {
                for ((step, got), (_, want)) in steps.iter().zip(want) {
                    assert_eq!(got, want, "{name}: step {step:?} differs from the disk");
                }
                assert_eq!(steps.len(), want.len(), "{name}");
            }
        }
        let on_disk = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
        if writes_through {
            assert!(on_disk.contains("saturating_add"), "{name}: {on_disk}");
        } else {
            assert_eq!(on_disk, LIB, "{name}: the disk was written");
            assert!(!root.join("notes").exists(), "{name}: the disk was written");
        }
        if let Some(changes) = &ws.changes {
            assert_eq!(
                changes(),
                vec![
                    (ChangeKind::Added, root.join("notes/todo.md")),
                    (ChangeKind::Modified, root.join("src/lib.rs")),
                ],
                "{name}"
            );
        }
    }
}

// A missing path is denied with the nearest names of the workspace's own
// tree: a directory that exists only in memory is offered, a directory that
// exists only on the disk is not.
#[test]
fn guard_hints_come_from_the_workspace() {
    let ws = project();
    let root = ws.root.clone();
    let spill = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let make = workspaces()
        .into_iter()
        .find(|(name, ..)| *name == "in memory")
        .unwrap()
        .1;
    let ws = make(&root, spill.path(), scratch.path());
    (ws.add_dir.as_ref().unwrap())(&root.join("srcmem"));
    std::fs::create_dir_all(root.join("srcdisk")).unwrap();
    let ctx = CallContext::new(&root).session("agent");
    let r = ws
        .tools
        .call("glob", &json!({"pattern": "*", "path": "srcx"}), &ctx);
    assert!(r.is_error, "{}", r.content);
    assert!(r.content.contains("srcmem"), "{}", r.content);
    assert!(!r.content.contains("srcdisk"), "{}", r.content);
    // And the in-memory directory is searchable, the disk-only one is not.
    let g = ws
        .tools
        .call("glob", &json!({"pattern": "*", "path": "srcdisk"}), &ctx);
    assert!(
        g.is_error && g.content.contains("does not exist"),
        "{}",
        g.content
    );
}

// A tree changed while searches run: every search ends with an outcome
// (rg's exit status), none panics, and a search after the changes stop
// sees the final tree exactly.
#[test]
fn in_memory_tree_changed_during_searches() {
    let ws = project();
    let root = ws.root.clone();
    let mem = Arc::new(MemFs::load(&root).unwrap());
    let engine = NativeBackend::on(mem.clone());
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (mem, root, stop) = (mem.clone(), root.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let dir = root.join(format!("churn/d{}", i % 7));
                mem.create_dir_all(&dir).unwrap();
                mem.write_file(dir.join(format!("f{i}.txt")), b"needle\n")
                    .unwrap();
                if i.is_multiple_of(3) {
                    let _ = mem.remove(root.join(format!("churn/d{}", (i + 3) % 7)));
                }
                i += 1;
            }
        })
    };
    for _ in 0..200 {
        let o = engine.grep(&GrepRequest::new("needle", &root));
        assert!(
            matches!(o.status, dsh_search::Status::Exited(0..=2)),
            "{:?}",
            o.status
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
    let _ = mem.remove(root.join("churn"));
    mem.write_file(root.join("churn/last.txt"), b"needle\n")
        .unwrap();
    let o = engine.grep(&GrepRequest::new("needle", &root));
    let paths: Vec<_> = o.results.matches().map(|m| m.path.to_vec()).collect();
    assert_eq!(paths, vec![b"churn/last.txt".to_vec()]);
}

/// A grep of a saved result on an indexed workspace in memory: the text is
/// on the local disk, outside the tree the index mirrors, so the tools grep
/// it with their own engine on the disk and say so in `meta`
/// (`docs/index.md`, "What `meta` says"); the index's backend never gets
/// the path (`SearchBackend::searches_local_disk`).
#[test]
fn a_saved_result_is_grepped_on_the_disk_under_an_index() {
    let ws = project();
    let root = ws.root.canonicalize().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let spill_root = spill.path().canonicalize().unwrap();
    let mut config = Config::default();
    config.search.glob_max_results = 5;
    config.spill.max_inline_bytes = None;
    config.spill.root = Some(spill_root.clone());
    let workspace = dsh_search::WorkspaceOptions::new(dsh_search::FsSpec::Mem(None))
        .root(&root)
        .index(true)
        .open()
        .unwrap();
    let index = workspace.index().expect("an index");
    assert!(index.wait_ready(std::time::Duration::from_secs(60)));
    let sessions = Arc::new(dsh_search::Sessions::in_memory());
    let tools = workspace.tools(config, Some(sessions)).unwrap();
    let ctx = CallContext::new(&root).session("s");
    let glob = tools.call("glob", &json!({"pattern": "*.txt"}), &ctx);
    assert_eq!(glob.meta.as_ref().unwrap()["index"], "mirror");
    let locator = glob
        .content
        .split("Full sorted result stored at: ")
        .nth(1)
        .and_then(|rest| rest.split(". Use read").next())
        .unwrap_or_else(|| panic!("no saved result: {}", glob.content));
    assert!(
        locator.starts_with(spill_root.to_str().unwrap()),
        "{locator}"
    );
    let grep = tools.call("grep", &json!({"pattern": "f3", "path": locator}), &ctx);
    assert_eq!(
        grep.content,
        format!("Found 1 match\n\n{locator}\nLine 5: many/f3.txt")
    );
    assert_eq!(
        grep.meta.as_ref().unwrap()["index"],
        "scan: a saved result is outside the index"
    );
}
