//! Issue 11, the search half: each case is a reproduction that failed
//! before its fix, run as the user ran it (a real `dsh-search` process, a
//! real rg 15.2.0, real files in a temporary directory) on both backends
//! where the behaviour has one.

use crate::util;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

/// The two backends every search case runs on.
const BACKENDS: [&str; 2] = ["native", "rg"];

/// One named reproduction, run once per backend it applies to.
struct Case {
    name: &'static str,
    backends: &'static [&'static str],
    run: fn(backend: &str),
}

/// Run every case on its backends; a failure names the case and the backend
/// and the others still run.
fn run_table(cases: &[Case]) {
    // The reference rg: missing or wrong, the test fails here.
    util::rg::env().expect("the reference rg 15.2.0 (scripts/test installs it)");
    let mut failed = Vec::new();
    for case in cases {
        for backend in case.backends {
            let label = format!("{} [{backend}]", case.name);
            if !util::selected(&label) {
                continue;
            }
            let run = case.run;
            let b = backend.to_string();
            if let Err(e) = std::panic::catch_unwind(move || run(&b)) {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failed.push(format!("{label}: {msg}"));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// `dsh-search --backend <b> --cwd <cwd> <args…>`, stdin `/dev/null`.
fn dsh<S: AsRef<OsStr>>(backend: &str, cwd: &Path, args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .arg("--backend")
        .arg(backend)
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dsh-search")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

// ------------------------------------------------------------ item 9

/// A glob whose one result is a file named `No files found` is a result
/// (exit 0), not an empty search (exit 1): emptiness is the result's typed
/// field, not its text.
fn file_named_like_the_empty_text(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("No files found"), "No matches found\n").unwrap();
    let o = dsh(backend, dir.path(), &["glob", "No*"]);
    assert_eq!(text(&o), "No files found\n");
    assert_eq!(o.status.code(), Some(0), "glob: {o:?}");
    let o = dsh(backend, dir.path(), &["glob", "*.absent"]);
    assert_eq!(
        (text(&o).as_str(), o.status.code()),
        ("No files found\n", Some(1))
    );
    let o = dsh(backend, dir.path(), &["grep", "nowhere"]);
    assert_eq!(
        (text(&o).as_str(), o.status.code()),
        ("No matches found\n", Some(1))
    );
}

// ------------------------------------------------------------ item 11

/// A `maxInlineBytes` smaller than the spill notice: the result stays
/// whole (the replacement would exceed the cap, `seed-reference.md` §3.9)
/// and no spill file is left behind that nothing points to.
fn inline_cap_smaller_than_the_notice(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let spill = dir.path().join("spill");
    std::fs::create_dir(&ws).unwrap();
    let lines: String = (0..8).map(|i| format!("needle line {i}\n")).collect();
    std::fs::write(ws.join("a.txt"), lines).unwrap();
    let config = dir.path().join("config.json");
    let cfg = json!({"maxInlineBytes": 100, "spillRoot": spill});
    std::fs::write(&config, cfg.to_string()).unwrap();
    let o = dsh(
        backend,
        &ws,
        &[
            OsStr::new("--config"),
            config.as_os_str(),
            OsStr::new("--session"),
            OsStr::new("s1"),
            OsStr::new("grep"),
            OsStr::new("needle"),
        ],
    );
    let out = text(&o);
    assert!(out.len() > 100, "the text is over the cap: {out:?}");
    assert!(out.starts_with("Found 8 matches\n\na.txt\nLine 1: needle line 0\n"));
    assert!(!out.contains("Omitted"), "{out}");
    let left: Vec<_> = walkdir::WalkDir::new(&spill)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_path_buf())
        .collect();
    assert!(left.is_empty(), "orphan spill files: {left:?}");
}

/// `offset 1e308` is reported as given, the way the original writes a
/// number, not as the saturated `u64`.
fn offset_reported_as_given(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let cases = [
        ("1e308", "offset 1e+308 is out of range"),
        (
            "18446744073709551616",
            "offset 18446744073709552000 is out of range",
        ),
        ("40", "offset 40 is out of range"),
    ];
    for (offset, want) in cases {
        let args = format!(r#"{{"file_path":"a.txt","offset":{offset}}}"#);
        let o = dsh(backend, dir.path(), &["call", "read", &args]);
        assert!(text(&o).contains(want), "{offset}: {}", text(&o));
        assert_eq!(o.status.code(), Some(2));
    }
}

// ------------------------------------------------------------ item 6

/// The pids of `parent`'s children, from /proc.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` still runs (a zombie has ended; only its entry is left).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
            !matches!(after.split_whitespace().next(), Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// Wait for `done` with a generous bound (a liveness check, not a timing
/// assertion: the machine may be slow, it must not be forever).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `mkfifo p; dsh-search --backend rg grep x p`, then `kill -9` of the
/// CLI: rg, blocked on the FIFO in a process group of its own, must die
/// with it instead of running on forever.
fn rg_dies_with_a_killed_cli(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p");
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(st.success());
    let mut cli = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .args(["--backend", backend, "--cwd"])
        .arg(dir.path())
        .args(["grep", "x", "p"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rg = Vec::new();
    eventually("rg started", || {
        rg = children(cli.id())
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "rg")
            })
            .collect();
        !rg.is_empty()
    });
    let _ = cli.kill(); // SIGKILL: no handler runs
    let _ = cli.wait();
    let leftover = rg.clone();
    let start = Instant::now();
    while rg.iter().any(|&p| alive(p)) && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let orphans: Vec<u32> = leftover.into_iter().filter(|&p| alive(p)).collect();
    for &p in &orphans {
        // Clean up what this test started before failing.
        let _ = Command::new("kill").arg("-9").arg(p.to_string()).status();
    }
    assert!(
        orphans.is_empty(),
        "rg outlived its killed parent: {orphans:?}"
    );
}

#[test]
fn harden_search() {
    let both: &'static [&'static str] = &BACKENDS;
    run_table(&[
        Case {
            name: "a file named `No files found` is a result (exit 0)",
            backends: both,
            run: file_named_like_the_empty_text,
        },
        Case {
            name: "maxInlineBytes under the notice: text kept whole, no orphan spill",
            backends: both,
            run: inline_cap_smaller_than_the_notice,
        },
        Case {
            name: "offset 1e308 is reported as given",
            backends: &["native"],
            run: offset_reported_as_given,
        },
        Case {
            name: "rg dies with a CLI killed by SIGKILL",
            backends: &["rg"],
            run: rg_dies_with_a_killed_cli,
        },
    ]);
}
