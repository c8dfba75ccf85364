//! The file tools through the `dsh-search` binary: sessions persisted across
//! processes, and a writer killed mid-write.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::util::ws::Ws;

/// The binary on `ws` with `args`: stdout and the exit code.
fn run(ws: &Ws, args: &[&str]) -> (String, i32) {
    out(ws.cmd(args).output().unwrap())
}

/// [`run`] with `content` on stdin.
fn write(ws: &Ws, args: &[&str], content: &str) -> (String, i32) {
    use std::io::Write;
    let mut child = ws
        .cmd(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // A write refused before it reads its input (the policy, a bad
    // target) closes the pipe early: that is not the test's failure.
    let _ = child.stdin.take().unwrap().write_all(content.as_bytes());
    out(child.wait_with_output().unwrap())
}

/// `rel`'s absolute path, as the tools print it.
fn p(ws: &Ws, rel: &str) -> String {
    ws.at(rel).to_string_lossy().into_owned()
}

/// `rel`'s text.
fn get(ws: &Ws, rel: &str) -> String {
    String::from_utf8(ws.get(rel)).unwrap()
}

fn out(o: Output) -> (String, i32) {
    (
        String::from_utf8(o.stdout).unwrap(),
        o.status.code().unwrap_or(-1),
    )
}

#[test]
fn session_read_then_edit_in_two_processes() {
    let cli = Ws::new();
    std::fs::write(cli.root.join("a.txt"), "hello\nworld\n").unwrap();
    let edit = [
        "--session",
        "s1",
        "edit",
        "a.txt",
        "--old",
        "hello",
        "--new",
        "bye",
    ];
    let (text, code) = run(&cli, &edit);
    assert_eq!(
        (text.as_str(), code),
        (
            format!(
                "Error: edit requires reading \"{}\" first \u{2014} read the file, then retry\n",
                p(&cli, "a.txt")
            )
            .as_str(),
            2
        )
    );
    assert_eq!(get(&cli, "a.txt"), "hello\nworld\n");
    let (text, code) = run(&cli, &["--session", "s1", "read", "a.txt", "--offset", "2"]);
    assert_eq!(code, 0);
    assert_eq!(
        text,
        format!(
            "<path>{}</path>\n<type>file</type>\n<content>\n2: world\n\n(End of file - total 2 lines)\n</content>\n",
            p(&cli, "a.txt")
        )
    );
    let (text, code) = run(&cli, &edit);
    assert_eq!(
        (text.as_str(), code),
        (
            format!(
                "The file {} has been updated successfully.\n",
                p(&cli, "a.txt")
            )
            .as_str(),
            0
        )
    );
    assert_eq!(get(&cli, "a.txt"), "bye\nworld\n");
    // Another session has seen nothing.
    let (_, code) = run(
        &cli,
        &[
            "--session",
            "s2",
            "edit",
            "a.txt",
            "--old",
            "bye",
            "--new",
            "x",
        ],
    );
    assert_eq!(code, 2);
}

#[test]
fn session_stale_after_external_change_and_unread_overwrite() {
    let cli = Ws::new();
    std::fs::write(cli.root.join("b.txt"), "one\n").unwrap();
    let (text, code) = write(&cli, &["--session", "s", "write", "b.txt"], "two\n");
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("without reading it first \u{2014} read the file, then retry"));
    assert_eq!(run(&cli, &["--session", "s", "read", "b.txt"]).1, 0);
    std::fs::write(cli.root.join("b.txt"), "external\n").unwrap();
    let (text, code) = write(&cli, &["--session", "s", "write", "b.txt"], "two\n");
    assert_eq!(
        (text.as_str(), code),
        (
            format!(
                "Error: cannot write \"{}\": file changed since it was read \u{2014} re-read the file, then retry\n",
                p(&cli, "b.txt")
            )
            .as_str(),
            2
        )
    );
    assert_eq!(get(&cli, "b.txt"), "external\n");
    assert_eq!(run(&cli, &["--session", "s", "read", "b.txt"]).1, 0);
    let (text, code) = write(&cli, &["--session", "s", "write", "b.txt"], "two\n");
    assert_eq!(code, 0, "{text}");
    assert_eq!(get(&cli, "b.txt"), "two\n");
    // The state lives outside the workspace.
    let names: Vec<_> = std::fs::read_dir(&cli.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["b.txt"]);
    assert!(cli.state.join("sessions").is_dir());
}

#[test]
fn without_session_the_provider_is_bare() {
    let cli = Ws::new();
    std::fs::write(cli.root.join("c.txt"), "one\n").unwrap();
    let (text, code) = write(&cli, &["write", "c.txt"], "two\n");
    assert_eq!(
        (text.as_str(), code),
        (
            format!(
                "<path>{}</path>\n<type>file</type>\n<content>\nUpdated file\n</content>\n",
                p(&cli, "c.txt")
            )
            .as_str(),
            0
        )
    );
    let (_, code) = run(
        &cli,
        &[
            "edit",
            "c.txt",
            "--old",
            "two",
            "--new",
            "three",
            "--replace-all",
        ],
    );
    assert_eq!(code, 0);
    assert_eq!(get(&cli, "c.txt"), "three\n");
    // The guard (on by default in the CLI) answers a missing file first;
    // with it off, read's own error shows.
    let config = cli.root.join("guard-off.json");
    std::fs::write(&config, r#"{"guard": {"disabled": true}}"#).unwrap();
    let config = config.to_str().unwrap();
    let (text, code) = run(&cli, &["read", "missing.txt", "--config", config]);
    assert_eq!(
        (text.as_str(), code),
        (
            format!(
                "Error: cannot read \"{}\": not found\n",
                p(&cli, "missing.txt")
            )
            .as_str(),
            2
        )
    );
    let (text, code) = run(&cli, &["read", "missing.txt"]);
    assert!(
        text.starts_with("Error: file_path \"missing.txt\" does not exist"),
        "{text}"
    );
    assert_eq!(code, 2);
}

/// The real rg, for listing what a glob call would see.
fn rg() -> PathBuf {
    if let Some(p) = std::env::var_os("DSH_SEARCH_RG") {
        return PathBuf::from(p);
    }
    let home = std::env::var_os("HOME").expect("HOME is set");
    let p = Path::new(&home).join(".cache/dsh-search/rg-15.2.0/bin/rg");
    assert!(
        p.is_file(),
        "rg 15.2.0 not found at {}: install it with `cargo install ripgrep --locked --version 15.2.0 --root ~/.cache/dsh-search/rg-15.2.0`, or set DSH_SEARCH_RG",
        p.display()
    );
    p
}

fn rg_files(dir: &Path) -> Vec<String> {
    let o = Command::new(rg())
        .args([
            "--no-config",
            "--files",
            "--hidden",
            "--no-ignore",
            "--sort=path",
        ])
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut v: Vec<String> = String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    v.sort();
    v
}

/// The staging directory of a write in flight, once its content file exists.
fn staging_content(dir: &Path) -> Option<PathBuf> {
    std::fs::read_dir(dir).ok()?.flatten().find_map(|e| {
        let name = e.file_name();
        let content = e.path().join("content");
        (name.to_string_lossy().starts_with(".dsh-search-staging.") && content.exists())
            .then_some(content)
    })
}

#[test]
fn writer_killed_mid_write_leaves_old_file_and_no_litter() {
    let cli = Ws::new();
    std::fs::write(cli.root.join("big.txt"), "old\n").unwrap();
    let input = cli.base.join("input.txt");
    // Large enough that the write is still in flight when it is seen; if
    // the writer wins the race anyway, try again with more.
    let mut size = 64 << 20;
    let killed = loop {
        std::fs::write(&input, "x".repeat(size)).unwrap();
        std::fs::write(cli.root.join("big.txt"), "old\n").unwrap();
        let mut child = cli
            .cmd(&["write", "big.txt"])
            .stdin(std::fs::File::open(&input).unwrap())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let seen = loop {
            if staging_content(&cli.root).is_some() {
                break true;
            }
            if child.try_wait().unwrap().is_some() {
                break false;
            }
            std::thread::yield_now();
        };
        if seen {
            child.kill().unwrap();
            // Reaped, so the pid no longer names a live process.
            child.wait().unwrap();
            break true;
        }
        child.wait().unwrap();
        if size >= 512 << 20 {
            break false;
        }
        size *= 2;
    };
    assert!(
        killed,
        "the writer always finished before it could be killed"
    );
    assert_eq!(get(&cli, "big.txt"), "old\n", "the old file is intact");
    // The killed writer left its staging directory; rg would list it.
    // (Its content and the marker only this code writes.)
    let listed = rg_files(&cli.root);
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert!(listed[0].starts_with(".dsh-search-staging."), "{listed:?}");
    assert!(listed[1].ends_with("/dsh-search-staging"), "{listed:?}");
    // The next write into the directory sweeps it.
    let (_, code) = write(&cli, &["write", "other.txt"], "o\n");
    assert_eq!(code, 0);
    assert_eq!(rg_files(&cli.root), ["big.txt", "other.txt"]);
    let _ = std::fs::remove_file(&input);
}

#[test]
fn relative_cwd_resolves_against_the_process_directory() {
    let cli = Ws::new();
    std::fs::write(cli.root.join("r.txt"), "r\n").unwrap();
    let o = cli
        .bin()
        .args(["--cwd", "ws", "read", "r.txt"])
        .current_dir(&cli.base)
        .output()
        .unwrap();
    let (text, code) = out(o);
    assert_eq!(code, 0);
    assert!(
        text.starts_with(&format!("<path>{}</path>\n", p(&cli, "r.txt"))),
        "{text}"
    );
}

#[test]
fn call_shares_the_session_store_and_validates() {
    let cli = Ws::new();
    std::fs::write(cli.root.join("d.txt"), "x\n").unwrap();
    let (text, code) = run(
        &cli,
        &["--session", "q", "call", "read", r#"{"file_path":"d.txt"}"#],
    );
    assert_eq!(code, 0, "{text}");
    let (text, code) = run(
        &cli,
        &[
            "--session",
            "q",
            "edit",
            "d.txt",
            "--old",
            "x",
            "--new",
            "y",
        ],
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(get(&cli, "d.txt"), "y\n");
    let (text, code) = run(
        &cli,
        &["call", "read", r#"{"file_path":"d.txt","limit":"1"}"#],
    );
    assert_eq!(
        (text.as_str(), code),
        ("Error: invalid arguments: \"limit\" must be a number\n", 2)
    );
}
