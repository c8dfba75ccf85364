//! The file tools' state on Windows, through the binary, under Wine
//! (`scripts/test-windows windows_session::`, README "Platforms"):
//!
//! - an atomic write over a target another process holds open without
//!   delete sharing: retried until the holder lets go, else a clear error
//!   with the old content whole and no staging left (`contract.md` §10);
//! - the session store's lock across concurrent processes: no observation
//!   is lost (`contract.md` §6);
//! - the state directory under `%LOCALAPPDATA%` when `HOME` is unset, and
//!   a spilled result in the user's temp directory read back (§8).

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::io::Write;
use std::os::windows::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::util::rg::dsh_search_exe;

/// `FILE_SHARE_READ` alone: others may read, not write, rename or delete
/// (https://learn.microsoft.com/windows/win32/api/fileapi/nf-fileapi-createfilew).
const FILE_SHARE_READ: u32 = 0x1;

/// The environment variables that choose the state and temp directories,
/// cleared for every child so that each test sets exactly its own.
const PLACE_VARS: [&str; 6] = [
    "DSH_SEARCH_STATE_DIR",
    "XDG_STATE_HOME",
    "HOME",
    "LOCALAPPDATA",
    "TMP",
    "TEMP",
];

/// `dsh-search <args>` in `cwd` with exactly the placement variables
/// `env` (the others of [`PLACE_VARS`] removed), `stdin` as its input.
fn run(cwd: &Path, args: &[&str], env: &[(&str, &Path)], stdin: &[u8]) -> Output {
    let mut cmd = Command::new(dsh_search_exe());
    cmd.current_dir(cwd)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for k in PLACE_VARS {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("dsh-search starts");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "status {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Whether a staging directory of the atomic write is in `dir` (the write
/// has its content staged and is about to publish).
fn staging_in(dir: &Path) -> bool {
    names(dir)
        .iter()
        .any(|n| n.starts_with(".dsh-search-staging."))
}

/// `path` held open as most Windows programs open a file: reading, with
/// read sharing only (no `FILE_SHARE_DELETE`), so that nobody can rename
/// over it while the handle lives.
fn hold(path: &Path) -> std::fs::File {
    OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ)
        .open(path)
        .unwrap()
}

/// First, what the test rests on: under Wine as on Windows, a rename over
/// a file held open without delete sharing is refused (MoveFileExW with
/// MOVEFILE_REPLACE_EXISTING, which `std::fs::rename` falls back to, fails
/// with ERROR_ACCESS_DENIED), and succeeds once the handle is closed.
#[test]
pub(crate) fn rename_over_a_held_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.txt");
    let staged = dir.path().join("s.txt");
    std::fs::write(&target, "old").unwrap();
    std::fs::write(&staged, "new").unwrap();
    let held = hold(&target);
    let e = std::fs::rename(&staged, &target).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(5), "{e}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "old");
    drop(held);
    std::fs::rename(&staged, &target).unwrap();
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
}

/// `edit` while another process holds the target open without delete
/// sharing, released once the edit has staged its content (and ~300 ms
/// more): the publish retries until the holder lets go, and the edit
/// succeeds with the new content (`contract.md` §10).
#[test]
pub(crate) fn write_waits_for_a_holder_that_lets_go() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("held.txt");
    std::fs::write(&target, "alpha beta\n").unwrap();
    let held = hold(&target);
    let watch = dir.path().to_path_buf();
    let done = Arc::new(AtomicBool::new(false));
    let over = Arc::clone(&done);
    let releaser = std::thread::spawn(move || {
        // Waits for the staging directory, not for a time: the edit has
        // read the file and is at its publish step when it appears (or
        // for the edit's end, should it fail before).
        while !staging_in(&watch) && !over.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(300));
        drop(held);
    });
    let out = run(
        dir.path(),
        &["edit", "--old", "alpha", "--new", "gamma", "held.txt"],
        &[],
        b"",
    );
    done.store(true, Ordering::SeqCst);
    releaser.join().unwrap();
    assert!(out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "gamma beta\n");
    assert_eq!(names(dir.path()), BTreeSet::from(["held.txt".to_string()]));
}

/// A holder that never lets go: `edit` under a short `timeoutMs`, and
/// `write` (whose stream has no timeout) after the retry limit, fail with
/// an error that names the path and says another process holds it open;
/// the old content is whole and no staging directory is left.
#[test]
pub(crate) fn write_over_a_held_file_fails_clearly() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("held.txt");
    std::fs::write(&target, "old content\n").unwrap();
    let config = tempfile::tempdir().unwrap();
    let config_file = config.path().join("c.json");
    std::fs::write(&config_file, r#"{"timeoutMs": 1000}"#).unwrap();
    let held = hold(&target);
    let config_arg = config_file.to_str().unwrap();
    let edit = run(
        dir.path(),
        &[
            "--config", config_arg, "edit", "--old", "old", "--new", "new", "held.txt",
        ],
        &[],
        b"",
    );
    let write = run(dir.path(), &["write", "held.txt"], &[], b"replaced\n");
    for (what, out) in [("edit", &edit), ("write", &write)] {
        assert_eq!(out.status.code(), Some(2), "{what}: {}", text(out));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.contains("held.txt\": another process holds the file open"),
            "{what}: {}",
            text(out)
        );
        assert_eq!(
            std::fs::read_to_string(&target).unwrap(),
            "old content\n",
            "{what}"
        );
        assert_eq!(
            names(dir.path()),
            BTreeSet::from(["held.txt".to_string()]),
            "{what}"
        );
    }
    drop(held);
    // Once let go, the same write goes through.
    let again = run(dir.path(), &["write", "held.txt"], &[], b"replaced\n");
    assert!(again.status.success(), "{}", text(&again));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "replaced\n");
}

/// The one session state file in `state` (`<state>\sessions\<hash>.json`),
/// parsed: it must be valid JSON.
fn state_file(state: &Path) -> serde_json::Value {
    let sessions = state.join("sessions");
    let files: Vec<_> = names(&sessions)
        .into_iter()
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?} in {}", sessions.display());
    let bytes = std::fs::read(sessions.join(&files[0])).unwrap();
    serde_json::from_slice(&bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&bytes)))
}

/// Eight processes at once, each a `read` then five `edit`s of its own
/// file (one process per call), all in one session (`--session`, the state directory from
/// `DSH_SEARCH_STATE_DIR`): the session's lock (its lock file held open
/// without sharing, `session.rs: lock`) serializes their updates of the
/// one state file, so none is lost. Each edit after the first needs the
/// observation the one before recorded (the read-before-write policy
/// refuses an unobserved or stale write), and the state file ends with all
/// eight observations, valid JSON.
#[test]
pub(crate) fn session_lock_keeps_every_observation() {
    const N: usize = 8;
    const ROUNDS: usize = 5;
    let work = tempfile::tempdir().unwrap();
    let state = tempfile::tempdir().unwrap();
    for i in 0..N {
        std::fs::write(work.path().join(format!("f{i}.txt")), format!("v0 {i}\n")).unwrap();
    }
    let workers: Vec<_> = (0..N)
        .map(|i| {
            let (work, state) = (work.path().to_path_buf(), state.path().to_path_buf());
            std::thread::spawn(move || {
                let file = format!("f{i}.txt");
                let env = [("DSH_SEARCH_STATE_DIR", state.as_path())];
                let read = run(&work, &["--session", "shared", "read", &file], &env, b"");
                assert!(read.status.success(), "read {file}: {}", text(&read));
                for round in 0..ROUNDS {
                    let (old, new) = (format!("v{round}"), format!("v{}", round + 1));
                    let args = [
                        "--session",
                        "shared",
                        "edit",
                        "--old",
                        &old,
                        "--new",
                        &new,
                        &file,
                    ];
                    let out = run(&work, &args, &env, b"");
                    assert!(out.status.success(), "{args:?}: {}", text(&out));
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let doc = state_file(state.path());
    assert_eq!(doc["session"], "shared", "{doc}");
    let observations = doc["observations"].as_object().unwrap();
    assert_eq!(observations.len(), N, "{doc}");
    for i in 0..N {
        let name = format!("f{i}.txt");
        assert_eq!(
            std::fs::read_to_string(work.path().join(&name)).unwrap(),
            format!("v{ROUNDS} {i}\n")
        );
        let (_, seen) = observations
            .iter()
            // Keys are in the case Windows compares names in (contract.md §6).
            .find(|(k, _)| k.to_uppercase().ends_with(&name.to_uppercase()))
            .unwrap_or_else(|| panic!("no observation of {name}: {doc}"));
        assert_eq!(seen["state"], "present", "{doc}");
    }
}

/// With `HOME` unset (as on Windows) and no other state directory named,
/// `--session` keeps its state in `%LOCALAPPDATA%\dsh-search`
/// (`cli/src/setup/mod.rs: state_dir_from_env`), and a `read` then an `edit` in
/// two processes add up there. A grep over the cap spills its complete
/// result into the user's temp directory (`%TMP%`, `std::env::temp_dir`,
/// `spill.rs: LocalSpillStore`), and the footer's reference opens with
/// `read` in a later process.
#[test]
pub(crate) fn state_and_spill_under_the_user_profile() {
    let work = tempfile::tempdir().unwrap();
    let profile = tempfile::tempdir().unwrap();
    let local = profile.path().join("Local");
    let temp = profile.path().join("Temp");
    std::fs::create_dir_all(&local).unwrap();
    std::fs::create_dir_all(&temp).unwrap();
    let env = [
        ("LOCALAPPDATA", local.as_path()),
        ("TMP", temp.as_path()),
        ("TEMP", temp.as_path()),
    ];
    std::fs::write(work.path().join("a.txt"), "alpha\n").unwrap();
    let lines: String = (0..300).map(|i| format!("needle {i}\n")).collect();
    std::fs::write(work.path().join("many.txt"), lines).unwrap();

    let read = run(work.path(), &["--session", "s", "read", "a.txt"], &env, b"");
    assert!(read.status.success(), "{}", text(&read));
    let edit = run(
        work.path(),
        &[
            "--session",
            "s",
            "edit",
            "--old",
            "alpha",
            "--new",
            "beta",
            "a.txt",
        ],
        &env,
        b"",
    );
    assert!(edit.status.success(), "{}", text(&edit));
    assert_eq!(
        std::fs::read_to_string(work.path().join("a.txt")).unwrap(),
        "beta\n"
    );
    let doc = state_file(&local.join("dsh-search"));
    assert_eq!(doc["session"], "s", "{doc}");
    assert!(
        doc["observations"]
            .as_object()
            .unwrap()
            .keys()
            .any(|k| k.to_uppercase().ends_with("A.TXT")),
        "{doc}"
    );

    let grep = run(
        work.path(),
        &["--session", "s", "grep", "needle"],
        &env,
        b"",
    );
    assert!(grep.status.success(), "{}", text(&grep));
    let said = String::from_utf8_lossy(&grep.stdout).into_owned();
    let (_, after) = said
        .split_once(" result stored at: ")
        .unwrap_or_else(|| panic!("no spill footer: {said}"));
    let (reference, _) = after.split_once(". Use read").unwrap();
    let spilled = Path::new(reference);
    assert!(
        spilled.starts_with(&temp),
        "{reference} not under {}",
        temp.display()
    );
    let back = run(
        work.path(),
        &["--session", "s", "read", reference, "--limit", "400"],
        &env,
        b"",
    );
    assert!(back.status.success(), "{}", text(&back));
    let shown = String::from_utf8_lossy(&back.stdout);
    assert!(
        shown.contains("Line 1: needle 0") && shown.contains("Line 300: needle 299"),
        "{shown}"
    );
}
