//! The workspace options through the binary: `--overlay DIR` for every
//! tool and `changes [--diff]` (over an overlay directory written by the
//! library, and by the tools), `--fs mem[:ROOT]`, and their refusals.

use std::path::Path;
use std::process::Stdio;
use std::sync::Arc;

use dsh_search::fs::{FsWrite, LocalFs, OverlayFs, WriteGuard};
use dsh_search::CancelToken;

use crate::util::ws::Ws;

/// A workdir with two files; the overlay directory goes beside it, at
/// `<base>/overlay`.
fn setup() -> Ws {
    Ws::new()
        .with("a.txt", "one\ntwo\n")
        .with("same.txt", "same\n")
}

fn overlay(s: &Ws) -> OverlayFs<LocalFs, LocalFs> {
    OverlayFs::on_disk(Arc::new(LocalFs::new()), &s.root, &s.base.join("overlay")).unwrap()
}

fn put(fs: &OverlayFs<LocalFs, LocalFs>, path: &Path, data: &str) {
    fs.write(
        path,
        data.as_bytes(),
        &WriteGuard::None,
        &CancelToken::new(),
    )
    .unwrap();
}

/// stdout, stderr and the exit status of the binary on `s` run with
/// `--cwd cwd`.
fn run(s: &Ws, cwd: &Path, args: &[&str]) -> (String, String, i32) {
    let out = s.bin().arg("--cwd").arg(cwd).args(args).output().unwrap();
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
        out.status.code().unwrap(),
    )
}

#[test]
fn changes_lists_and_diffs() {
    let s = setup();
    let fs = overlay(&s);
    put(&fs, &s.root.join("a.txt"), "one\nthree\n");
    put(&fs, &s.root.join("same.txt"), "same\n");
    put(&fs, &s.root.join("sub/new.txt"), "new\n");
    let overlay_dir = s.base.join("overlay");
    let dir = overlay_dir.to_str().unwrap();
    assert_eq!(
        run(&s, &s.root, &["--overlay", dir, "changes"]),
        ("M a.txt\nA sub/new.txt\n".into(), String::new(), 0)
    );
    let (diff, _, code) = run(&s, &s.root, &["changes", "--diff", "--overlay", dir]);
    assert_eq!(code, 0);
    assert_eq!(diff, fs.diff().unwrap());
    assert!(diff.starts_with("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n--- /dev/null\n+++ b/sub/new.txt\n"), "{diff}");
    // The workdir is untouched.
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!s.root.join("sub").exists());
}

/// A file name cannot forge `changes` lines or diff hunks, nor reach the
/// terminal raw: names are shown as the tools show them (quoted, escaped),
/// in the listing and in `--diff`'s headers.
#[test]
fn changes_show_hostile_names_escaped() {
    let s = setup();
    let fs = overlay(&s);
    put(&fs, &s.root.join("a.txt"), "one\nthree\n");
    put(
        &fs,
        &s.root.join("x\n+++ b/evil\n@@ -0,0 +1 @@\n+pwned"),
        "data\n",
    );
    put(&fs, &s.root.join("\u{1b}[31mred.txt"), "red\n");
    let overlay_dir = s.base.join("overlay");
    let dir = overlay_dir.to_str().unwrap();
    let (list, err, code) = run(&s, &s.root, &["--overlay", dir, "changes"]);
    assert_eq!((err.as_str(), code), ("", 0));
    assert_eq!(
        list,
        concat!(
            "A \"\\u001b[31mred.txt\"\n",
            "M a.txt\n",
            "A \"x\\n+++ b/evil\\n@@ -0,0 +1 @@\\n+pwned\"\n",
        )
    );
    let (diff, err, code) = run(&s, &s.root, &["--overlay", dir, "changes", "--diff"]);
    assert_eq!((err.as_str(), code), ("", 0));
    assert_eq!(
        diff,
        concat!(
            "--- /dev/null\n",
            "+++ \"b/\\u001b[31mred.txt\"\n",
            "@@ -0,0 +1 @@\n",
            "+red\n",
            "--- a/a.txt\n",
            "+++ b/a.txt\n",
            "@@ -1,2 +1,2 @@\n",
            " one\n",
            "-two\n",
            "+three\n",
            "--- /dev/null\n",
            "+++ \"b/x\\n+++ b/evil\\n@@ -0,0 +1 @@\\n+pwned\"\n",
            "@@ -0,0 +1 @@\n",
            "+data\n",
        )
    );
    assert!(!diff.contains('\u{1b}') && !list.contains('\u{1b}'));
}

#[test]
fn changes_of_a_new_overlay_is_empty() {
    let s = setup();
    let overlay_dir = s.base.join("overlay");
    let dir = overlay_dir.to_str().unwrap();
    assert_eq!(
        run(&s, &s.root, &["--overlay", dir, "changes"]),
        (String::new(), String::new(), 0)
    );
    assert!(s.base.join("overlay").join("workspace").is_file());
}

/// A `workspace` record written by hand names the workdir with or without
/// its ending newline; another workdir is refused by name.
#[test]
fn a_hand_written_workspace_record_needs_no_newline() {
    let s = setup();
    std::fs::create_dir(s.base.join("overlay")).unwrap();
    let overlay_dir = s.base.join("overlay");
    let dir = overlay_dir.to_str().unwrap();
    let ws = s.root.to_str().unwrap();
    for record in [ws.to_string(), format!("{ws}\n")] {
        std::fs::write(s.base.join("overlay").join("workspace"), &record).unwrap();
        assert_eq!(
            run(&s, &s.root, &["--overlay", dir, "changes"]),
            (String::new(), String::new(), 0),
            "{record:?}"
        );
    }
    std::fs::write(s.base.join("overlay").join("workspace"), "/elsewhere").unwrap();
    let (out, err, code) = run(&s, &s.root, &["--overlay", dir, "changes"]);
    assert_eq!((out.as_str(), code), ("", 2));
    assert_eq!(
        err,
        format!(
            "dsh-search: overlay directory {dir} holds the changes of the workspace /elsewhere, \
             not of {ws}: use another overlay directory\n"
        )
    );
}

/// Each case: arguments (`DIR` replaced by the overlay directory) run in
/// the workdir (or in its `sub` directory), and what stderr must say.
macro_rules! refused {
    ($($name:ident: $cwd:expr, $args:expr => $says:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let s = setup();
                overlay(&s);
                std::fs::create_dir(s.root.join("sub")).unwrap();
                let file = s.base.join("file");
                std::fs::write(&file, "").unwrap();
                let args: Vec<String> = $args
                    .iter()
                    .map(|a: &&str| a.replace("DIR", s.base.join("overlay").to_str().unwrap()).replace("FILE", file.to_str().unwrap()))
                    .collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (stdout, stderr, code) = run(&s, &s.root.join($cwd), &args);
                assert_eq!((stdout.as_str(), code), ("", 2), "{stderr}");
                assert!(stderr.starts_with("dsh-search: ") && stderr.contains($says), "{stderr}");
                assert_eq!(stderr.lines().count(), 1, "{stderr}");
            }
        )*
    };
}

refused! {
    refused_without_overlay: "", ["changes"] => "changes needs --overlay DIR";
    refused_overlay_is_a_file: "", ["--overlay", "FILE", "changes"] => "is not a directory";
    refused_other_workdir: "sub", ["--overlay", "DIR", "changes"] => "holds the changes of the workspace";
    refused_overlay_file_for_grep: "", ["--overlay", "FILE", "grep", "x"] => "is not a directory";
    refused_overlay_of_other_workdir_for_write: "sub", ["--overlay", "DIR", "write", "a.txt"] => "holds the changes of the workspace";
    refused_rg_over_overlay: "", ["--overlay", "DIR", "--backend", "rg", "grep", "x"] => "--backend rg searches the local disk only";
    refused_rg_in_memory: "", ["--fs", "mem", "--backend", "rg", "glob", "*"] => "--backend rg searches the local disk only";
    refused_missing_mem_root: "", ["--fs", "mem:/nonexistent/root", "grep", "x"] => "cannot load /nonexistent/root into memory: No such file or directory";
    refused_mem_root_is_a_file: "", ["--fs", "mem:FILE", "grep", "x"] => "into memory: Not a directory";
}

// The tools through an overlay directory: write and edit change only the
// overlay, every tool sees the merged view, across invocations, and
// `changes` lists what the tools did.
#[test]
fn tools_work_through_an_overlay() {
    let s = setup();
    let overlay_dir = s.base.join("overlay");
    let dir = overlay_dir.to_str().unwrap();
    let ov = |args: &[&str]| {
        let mut a = vec!["--overlay", dir, "--session", "ov"];
        a.extend_from_slice(args);
        run(&s, &s.root, &a)
    };
    assert_eq!(ov(&["read", "a.txt"]).2, 0);
    let (out, err, code) = ov(&["edit", "a.txt", "--old", "two", "--new", "three"]);
    assert_eq!(code, 0, "{out}{err}");
    assert_eq!(
        ov(&["grep", "three"]),
        (
            "Found 1 match\n\na.txt\nLine 2: three\n".into(),
            String::new(),
            0
        )
    );
    let out = s
        .bin()
        .args(["--overlay", dir, "--cwd"])
        .arg(&s.root)
        .args(["write", "notes/n.txt"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"note\n")?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        ov(&["glob", "*.txt", "--format", "raw"]).0.lines().count(),
        3,
        "a.txt, same.txt, notes/n.txt"
    );
    // The workdir itself is untouched; the overlay says what changed.
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!s.root.join("notes").exists());
    assert_eq!(
        run(&s, &s.root, &["--overlay", dir, "changes"]),
        ("M a.txt\nA notes/n.txt\n".into(), String::new(), 0)
    );
}

/// `--fs mem` over a tree that holds a sparse file of 1 TiB: the load is
/// refused with one line that names the file, exit 2 (it aborted trying to
/// allocate the whole file).
#[test]
fn mem_refuses_a_tree_that_does_not_fit() {
    let s = setup();
    std::fs::create_dir(s.root.join("d")).unwrap();
    let big = s.root.join("d/big.bin");
    std::fs::File::create(&big)
        .and_then(|f| f.set_len(1 << 40))
        .unwrap();
    for args in [
        &["--fs", "mem", "grep", "one"][..],
        &["--fs", "mem", "glob", "*"],
    ] {
        let (out, err, code) = run(&s, &s.root, args);
        assert_eq!((out.as_str(), code), ("", 2), "{err}");
        let want = format!(
            "dsh-search: cannot load {} into memory: {} is 1099511627776 bytes, more than ",
            s.root.display(),
            big.display()
        );
        assert!(err.starts_with(&want), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// The workspace's file `rel` as the tools see it: through the overlay
/// directory `overlay` when there is one.
fn seen(s: &Ws, overlay: Option<&str>, rel: &str) -> String {
    let mut args = Vec::new();
    if let Some(dir) = overlay {
        args.extend(["--overlay", dir]);
    }
    args.extend(["read", rel]);
    let (out, err, code) = run(s, &s.root, &args);
    assert_eq!(code, 0, "{err}");
    out
}

/// Ten processes edit one file at once, on the disk and through a new
/// overlay directory, for several rounds: every edit that reports success
/// is in the file, and one that does not was refused as stale (an edit
/// reads, then publishes under the version it read: `seed-reference.md`
/// §8.4, "concurrent writes → one is stale") and left nothing. Through the overlay, 1 to 7 of 10 survived: each process
/// decided once, at its start, whether the upper layer was in use, and one
/// that started before the first write checked its version against the
/// workspace's file and published over the others' edits (and a process
/// could read the overlay's `workspace` record half-written by another).
#[test]
fn ten_concurrent_edits_each_success_lands() {
    const ROUNDS: usize = 4;
    const WRITERS: usize = 10;
    for round in 0..ROUNDS {
        for through_overlay in [false, true] {
            let s = setup();
            std::fs::write(s.root.join("f.txt"), "END\n").unwrap();
            let overlay_dir = s.base.join("overlay");
            let dir = overlay_dir.to_str().unwrap();
            let overlay = through_overlay.then_some(dir);
            let children: Vec<_> = (0..WRITERS)
                .map(|n| {
                    let mut c = s.bin();
                    c.arg("--cwd").arg(&s.root);
                    if let Some(dir) = overlay {
                        c.args(["--overlay", dir]);
                    }
                    c.args(["edit", "f.txt", "--old", "END", "--new"])
                        .arg(format!("p{n}\nEND"))
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap()
                })
                .collect();
            let landed: Vec<bool> = children
                .into_iter()
                .map(|child| {
                    let out = child.wait_with_output().unwrap();
                    let stdout = String::from_utf8_lossy(&out.stdout);
                    assert!(
                        out.status.success() || stdout.contains("file changed since it was read"),
                        "round {round}, overlay {through_overlay}: {out:?}"
                    );
                    out.status.success()
                })
                .collect();
            assert!(landed.contains(&true), "round {round}: no edit landed");
            let text = seen(&s, overlay, "f.txt");
            for (n, landed) in landed.into_iter().enumerate() {
                assert_eq!(
                    text.contains(&format!(": p{n}\n")),
                    landed,
                    "round {round}, overlay {through_overlay}: p{n} reported {}:\n{text}",
                    if landed { "success" } else { "stale" }
                );
            }
            if through_overlay {
                assert_eq!(
                    std::fs::read_to_string(s.root.join("f.txt")).unwrap(),
                    "END\n"
                );
            }
        }
    }
}

/// One step of [`a_server_sees_later_cli_edits`]: a server call, or
/// an edit by the command line.
enum Step {
    Read,
    Edit(&'static str, &'static str),
    CliEdit(&'static str, &'static str),
}

/// A server started on the disk, or on an empty overlay directory, and the
/// command line edit one file in turn. The server sees the command line's
/// edit in its next read, and an edit of the text it read before that edit
/// is refused as stale, as on the disk: it never publishes over the other
/// process's change. Through the overlay the server read the old text and
/// its edit overwrote the command line's change.
#[test]
fn a_server_sees_later_cli_edits() {
    use serde_json::json;
    use Step::*;
    let steps = [
        CliEdit("one", "two"),
        Read,
        Edit("two", "three"),
        CliEdit("three", "three\nfour"),
        // The server's session read the file before that edit: stale,
        // although `three` is still there.
        Edit("three", "five"),
        Read,
        Edit("four", "six"),
    ];
    let mut answers = Vec::new();
    for through_overlay in [false, true] {
        let s = setup();
        std::fs::write(s.root.join("f.txt"), "one\n").unwrap();
        let overlay_dir = s.base.join("overlay");
        let dir = overlay_dir.to_str().unwrap();
        let overlay = through_overlay.then_some(dir);
        let mut args = Vec::new();
        if let Some(dir) = overlay {
            args.extend(["--overlay", dir]);
        }
        let mut server =
            crate::util::served::Served::start(&s.root, &[&args[..], &["serve"]].concat());
        let mut got = Vec::new();
        for (i, step) in steps.iter().enumerate() {
            let (tool, arguments) = match *step {
                CliEdit(old, new) => {
                    let cli = [&args[..], &["edit", "f.txt", "--old", old, "--new", new]].concat();
                    let (out, err, code) = run(&s, &s.root, &cli);
                    assert_eq!(code, 0, "{out}{err}");
                    got.push(format!("cli: {new}"));
                    continue;
                }
                Read => ("read", json!({"file_path": "f.txt"})),
                Edit(old, new) => (
                    "edit",
                    json!({"file_path": "f.txt", "old_string": old, "new_string": new}),
                ),
            };
            server.send(&json!({"id": i, "tool": tool, "arguments": arguments}));
            let answer = server.recv();
            let result = &answer["result"];
            let content = result["content"].as_str().unwrap_or_default();
            let ws = s.root.to_str().unwrap();
            got.push(format!(
                "{tool}: {} {} {}",
                result["isError"],
                result["error"]["info"]["code"],
                content.replace(ws, "[WS]")
            ));
            got.push(format!(
                "file: {}",
                seen(&s, overlay, "f.txt").replace(s.root.to_str().unwrap(), "[WS]")
            ));
        }
        answers.push(got);
    }
    let text = answers[0].join("\n");
    for want in ["1: two", "2: four", "FS_STALE_VERSION"] {
        assert!(text.contains(want), "{want}:\n{text}");
    }
    assert!(
        text.ends_with("1: three\n2: six\n\n(End of file - total 2 lines)\n</content>\n"),
        "{text}"
    );
    assert_eq!(answers[1].join("\n"), text, "the overlay as the disk");
}

// `--fs mem` prints what rg prints on the disk, and writes vanish.
#[test]
fn in_memory_workspace_prints_rg_s_output() {
    let s = setup();
    std::fs::write(s.root.join(".ignore"), "same.txt\n").unwrap();
    let rg = std::env::var_os("DSH_SEARCH_RG").expect("DSH_SEARCH_RG names the reference rg");
    let rg_out = s
        .command(rg)
        .args(["--no-config", "--json", "--regexp=o"])
        .current_dir(&s.root)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let (ours, _, code) = run(
        &s,
        &s.root,
        &["--fs", "mem", "grep", "--format", "raw", "--", "o"],
    );
    assert_eq!(code, rg_out.status.code().unwrap());
    let mask = |t: &str| {
        t.lines()
            .map(|l| match l.find("\"elapsed") {
                Some(i) => l[..i].to_string(),
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        mask(&ours),
        mask(&String::from_utf8(rg_out.stdout).unwrap())
    );
    let (out, _, code) = run(
        &s,
        &s.root,
        &["--fs", "mem", "edit", "a.txt", "--old", "one", "--new", "1"],
    );
    assert_eq!(code, 0, "{out}");
    // The edit happened in memory only.
    assert_eq!(
        std::fs::read_to_string(s.root.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
}

// `--fs mem` from a repository's subdirectory obeys the ignore files of
// the directories above the workdir, as rg does (`Ignore::add_parents`):
// the repository root's `.gitignore` (with its `.git`), `.ignore` and
// `.git/info/exclude`.
#[test]
fn in_memory_workspace_obeys_parent_ignore_files() {
    let ws = Ws::new();
    let repo = ws.base.join("repo");
    let sub = repo.join("sub");
    std::fs::create_dir_all(sub.join("deep")).unwrap();
    std::fs::create_dir_all(repo.join(".git/info")).unwrap();
    std::fs::write(repo.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    std::fs::write(repo.join(".git/info/exclude"), "excluded.rs\n").unwrap();
    std::fs::write(repo.join(".gitignore"), "ignored.rs\n").unwrap();
    std::fs::write(ws.base.join(".ignore"), "outer.rs\n").unwrap();
    for name in ["ignored.rs", "excluded.rs", "outer.rs", "kept.rs"] {
        std::fs::write(sub.join("deep").join(name), "needle\n").unwrap();
    }
    let rg = std::env::var_os("DSH_SEARCH_RG").expect("DSH_SEARCH_RG names the reference rg");
    for (ours, theirs) in [
        (
            &["--fs", "mem", "grep", "--format", "raw", "--", "needle"][..],
            &["--no-config", "--json", "--regexp=needle"][..],
        ),
        (
            &[
                "--fs", "mem", "grep", "--format", "raw", "--", "needle", "deep",
            ][..],
            &["--no-config", "--json", "--regexp=needle", "--", "deep"][..],
        ),
    ] {
        let rg_out = ws
            .command(&rg)
            .args(theirs)
            .current_dir(&sub)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let rg_text = String::from_utf8(rg_out.stdout).unwrap();
        assert!(rg_text.contains("deep/kept.rs"), "{rg_text}");
        assert!(!rg_text.contains("ignored.rs"), "{rg_text}");
        let (out, err, code) = run(&ws, &sub, ours);
        assert_eq!(code, rg_out.status.code().unwrap(), "{err}");
        let mask = |t: &str| {
            t.lines()
                .map(|l| match l.find("\"elapsed") {
                    Some(i) => l[..i].to_string(),
                    None => l.to_string(),
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(mask(&out), mask(&rg_text), "{ours:?}");
    }
}
