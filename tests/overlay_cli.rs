//! `dsh-search --overlay DIR changes [--diff]` through the binary, over an
//! overlay directory written by the library.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;

use dsh_search::fs::{FileSystem, LocalFs, OverlayFs, WriteGuard};
use dsh_search::CancelToken;

/// A workdir with two files, and a place for the overlay directory.
struct Setup {
    _tmp: tempfile::TempDir,
    ws: PathBuf,
    dir: PathBuf,
}

fn setup() -> Setup {
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let ws = root.join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("a.txt"), "one\ntwo\n").unwrap();
    std::fs::write(ws.join("same.txt"), "same\n").unwrap();
    Setup {
        _tmp: tmp,
        dir: root.join("overlay"),
        ws,
    }
}

fn overlay(s: &Setup) -> OverlayFs<LocalFs, LocalFs> {
    OverlayFs::on_disk(Arc::new(LocalFs::new()), &s.ws, &s.dir).unwrap()
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

/// stdout, stderr and the exit status of the binary run in `cwd`.
fn run(cwd: &Path, args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
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
    put(&fs, &s.ws.join("a.txt"), "one\nthree\n");
    put(&fs, &s.ws.join("same.txt"), "same\n");
    put(&fs, &s.ws.join("sub/new.txt"), "new\n");
    let dir = s.dir.to_str().unwrap();
    assert_eq!(
        run(&s.ws, &["--overlay", dir, "changes"]),
        ("M a.txt\nA sub/new.txt\n".into(), String::new(), 0)
    );
    let (diff, _, code) = run(&s.ws, &["changes", "--diff", "--overlay", dir]);
    assert_eq!(code, 0);
    assert_eq!(diff, fs.diff().unwrap());
    assert!(diff.starts_with("--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+three\n--- /dev/null\n+++ b/sub/new.txt\n"), "{diff}");
    // The workdir is untouched.
    assert_eq!(
        std::fs::read_to_string(s.ws.join("a.txt")).unwrap(),
        "one\ntwo\n"
    );
    assert!(!s.ws.join("sub").exists());
}

#[test]
fn changes_of_a_new_overlay_is_empty() {
    let s = setup();
    let dir = s.dir.to_str().unwrap();
    assert_eq!(
        run(&s.ws, &["--overlay", dir, "changes"]),
        (String::new(), String::new(), 0)
    );
    assert!(s.dir.join("workspace").is_file());
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
                std::fs::create_dir(s.ws.join("sub")).unwrap();
                let file = s.ws.parent().unwrap().join("file");
                std::fs::write(&file, "").unwrap();
                let args: Vec<String> = $args
                    .iter()
                    .map(|a: &&str| a.replace("DIR", s.dir.to_str().unwrap()).replace("FILE", file.to_str().unwrap()))
                    .collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let (stdout, stderr, code) = run(&s.ws.join($cwd), &args);
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
    refused_overlay_for_glob: "", ["--overlay", "DIR", "glob", "*"] => "--overlay is only read by `changes`";
    refused_overlay_for_write: "", ["--overlay", "DIR", "write", "a.txt"] => "--overlay is only read by `changes`";
}
