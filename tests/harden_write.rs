//! The write path's hostile cases: each is a reproduction of a failure, run
//! through the built `dsh-search` binary as real processes on real files.
//!
//! The README's "What is promised" lists what these cases show.

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rustix::fs::FlockOperation;

use crate::util::ws::Ws;
use crate::util::{as_nobody, require_root};

const BIN: &str = env!("CARGO_BIN_EXE_dsh-search");

/// A workspace (mode 0777, so uid 65534 can write in it) beside its
/// state directories.
fn open_to_all() -> Ws {
    let ws = Ws::new();
    ws.chmod(&ws.base, 0o755);
    ws.chmod(&ws.root, 0o777);
    ws
}

/// The binary in the workspace, with state directory `state` (under the
/// temp root), its output piped.
fn cmd(ws: &Ws, state: &str, args: &[&str]) -> Command {
    let mut c = ws.cmd_state(state, args);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn run(ws: &Ws, state: &str, args: &[&str]) -> (String, i32) {
    text(cmd(ws, state, args).output().unwrap())
}

fn write(ws: &Ws, state: &str, args: &[&str], content: &[u8]) -> (String, i32) {
    let mut child = cmd(ws, state, args).stdin(Stdio::piped()).spawn().unwrap();
    // A write refused before it reads its input closes the pipe early.
    let _ = child.stdin.take().unwrap().write_all(content);
    text(child.wait_with_output().unwrap())
}

fn text(o: Output) -> (String, i32) {
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    (s, o.status.code().unwrap_or(-1))
}

/// Wait for `child` to exit; a hang (the defect these cases reproduce) fails
/// the test instead of hanging the suite. Not a timing assertion: a
/// working binary exits within milliseconds of the signal.
fn wait_exit(mut child: Child) -> (String, i32) {
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("dsh-search did not exit after it was cancelled");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    text(child.wait_with_output().unwrap())
}

/// Hold the lock every writer of a file in `dir` takes, as another writer
/// in the middle of its publish would. Blocking: a child another test just
/// forked may hold a copy of the previous holder's descriptor until it
/// execs.
fn hold_dir_lock(dir: &Path) -> std::fs::File {
    let f = std::fs::File::open(dir).unwrap();
    rustix::fs::flock(&f, FlockOperation::LockExclusive).unwrap();
    f
}

fn signal(child: &Child, sig: rustix::process::Signal) {
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, sig).unwrap();
}

// ---------------------------------------------------------------------------
// Item 1: ownership and set-id bits.

/// As root, `edit` and `write` of a set-uid file owned by 65534 keep its
/// owner, group and mode (a set-uid root file came out `-rwsr-xr-x root root`).
#[test]
fn root_keeps_owner_group_and_setuid() {
    require_root();
    let ws = open_to_all();
    for (name, args, stdin) in [
        (
            "edit",
            &["edit", "tool.sh", "--old", "a", "--new", "b"][..],
            None,
        ),
        (
            "write",
            &["write", "tool.sh"][..],
            Some(&b"#!/bin/sh\nb\n"[..]),
        ),
    ] {
        let p = ws.file("tool.sh", b"#!/bin/sh\na\n");
        std::os::unix::fs::chown(&p, Some(65534), Some(65534)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o4755)).unwrap();
        let (out, code) = match stdin {
            None => run(&ws, "state", args),
            Some(c) => write(&ws, "state", args, c),
        };
        assert_eq!(code, 0, "{name}: {out}");
        let m = std::fs::metadata(&p).unwrap();
        assert_eq!(
            (m.uid(), m.gid(), m.mode() & 0o7777),
            (65534, 65534, 0o4755),
            "{name}"
        );
        assert_eq!(ws.get("tool.sh"), b"#!/bin/sh\nb\n", "{name}");
    }
}

/// Where the owner cannot be kept (uid 65534 replacing root's set-uid,
/// set-gid file in a directory it may write), the set-id bits are not
/// published.
#[test]
fn owner_not_kept_means_no_setid_bits() {
    require_root();
    let ws = open_to_all();
    let p = ws.file("tool.sh", b"a\n");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o6755)).unwrap();
    let (out, code) = text(
        as_nobody(&cmd(
            &ws,
            "state",
            &["edit", "tool.sh", "--old", "a", "--new", "b"],
        ))
        .output()
        .unwrap(),
    );
    assert_eq!(code, 0, "{out}");
    let m = std::fs::metadata(&p).unwrap();
    assert_eq!(m.uid(), 65534);
    assert_eq!(
        m.mode() & 0o7777,
        0o0755,
        "set-id bits dropped, the rest kept"
    );
    assert_eq!(ws.get("tool.sh"), b"b\n");
}

/// A hard-linked target: the name written gets the new content in a new
/// inode; the other names keep the old content (the link is broken), as
/// the README documents.
#[test]
fn hard_linked_target_breaks_the_link() {
    let ws = open_to_all();
    let a = ws.file("a.txt", b"old\n");
    std::fs::hard_link(&a, ws.at("b.txt")).unwrap();
    let (out, code) = run(
        &ws,
        "state",
        &["edit", "a.txt", "--old", "old", "--new", "new"],
    );
    assert_eq!(code, 0, "{out}");
    assert_eq!(ws.get("a.txt"), b"new\n");
    assert_eq!(ws.get("b.txt"), b"old\n");
    assert_eq!(std::fs::metadata(ws.at("b.txt")).unwrap().nlink(), 1);
}

// ---------------------------------------------------------------------------
// Item 2: lost updates across processes.

/// How one loop of `no_lost_update_between_state_directories` changes the
/// shared file.
#[derive(Clone, Copy, Debug)]
enum Writer {
    /// `edit` without a session: retried by the tool until it lands.
    BareEdit,
    /// `--session` `read`, then `edit` over the version read; stale → again.
    SessionEdit,
    /// `--session` `read`, then `write` of what was read plus a line, over
    /// the version read; stale → again.
    SessionWrite,
}

/// One change by `writer` adding the line `tok`, through the overlay
/// directory `overlay` when there is one; whether it landed.
fn change(ws: &Ws, state: &str, writer: Writer, tok: &str, overlay: Option<&Path>) -> bool {
    let new = format!("{tok}\nEND");
    let mut head = Vec::new();
    if let Some(dir) = overlay {
        head = vec!["--overlay", dir.to_str().unwrap()];
    }
    let edit = [
        &head[..],
        &["edit", "shared.txt", "--old", "END", "--new", &new],
    ]
    .concat();
    let session = [&head[..], &["--session", "s"]].concat();
    let (out, code) = match writer {
        Writer::BareEdit => run(ws, state, &edit),
        Writer::SessionEdit | Writer::SessionWrite => {
            let (out, code) = run(ws, state, &[&session[..], &["read", "shared.txt"]].concat());
            assert_eq!(code, 0, "{out}");
            match writer {
                Writer::SessionEdit => {
                    run(ws, state, &[&session[..], &edit[head.len()..]].concat())
                }
                _ => {
                    // What the read saw, or newer: then the version check
                    // refuses the write, as it must.
                    let seen = String::from_utf8(shared(ws, overlay)).unwrap();
                    let content = seen.replace("END\n", &format!("{new}\n"));
                    let args = [&session[..], &["write", "shared.txt"]].concat();
                    write(ws, state, &args, content.as_bytes())
                }
            }
        }
    };
    match (writer, code) {
        (_, 0) => true,
        (Writer::BareEdit, _) => panic!("a bare edit retries until it lands: {out}"),
        _ => {
            assert!(out.contains("file changed since it was read"), "{out}");
            false
        }
    }
}

/// `shared.txt` as the tools see it: the overlay's copy once it has one.
fn shared(ws: &Ws, overlay: Option<&Path>) -> Vec<u8> {
    overlay
        .and_then(|dir| std::fs::read(dir.join("upper/shared.txt")).ok())
        .unwrap_or_else(|| ws.get("shared.txt"))
}

/// Three loops of real processes, each with its own state directory, change
/// one file at once: bare edits, session edits and session writes (each
/// over the version its session read). Every change that reported success
/// is in the file at the end (before, 56 of 259 writes and 40 of 207 edits
/// were lost).
#[test]
fn no_lost_update_between_state_directories() {
    no_lost_update(false);
}

/// The same through one overlay directory, new when the loops start: the
/// overlay gives the disk's guarantee across processes and sessions. (Only
/// the writers that start before the first write could lose an update
/// here; `overlay_cli::ten_concurrent_edits_each_success_lands` races ten of
/// them.)
#[test]
fn no_lost_update_between_state_directories_through_an_overlay() {
    no_lost_update(true);
}

fn no_lost_update(through_overlay: bool) {
    const EACH: usize = 15;
    let ws = open_to_all();
    ws.file("shared.txt", b"END\n");
    let dir = ws.base.join("overlay");
    let overlay = through_overlay.then_some(dir.as_path());
    let ws = &ws;
    let writers = [
        ("state-a", Writer::BareEdit),
        ("state-b", Writer::SessionEdit),
        ("state-c", Writer::SessionWrite),
    ];
    let landed: Vec<String> = std::thread::scope(|s| {
        let loops: Vec<_> = writers
            .iter()
            .map(|&(state, writer)| {
                s.spawn(move || {
                    let mut ok = Vec::new();
                    let mut tries = 0;
                    while ok.len() < EACH {
                        tries += 1;
                        assert!(tries < 50 * EACH, "{writer:?} made no progress");
                        let tok = format!("{writer:?}{}", ok.len());
                        if change(ws, state, writer, &tok, overlay) {
                            ok.push(tok);
                        }
                    }
                    ok
                })
            })
            .collect();
        loops.into_iter().flat_map(|l| l.join().unwrap()).collect()
    });
    let end = String::from_utf8(shared(ws, overlay)).unwrap();
    let lines: Vec<&str> = end.lines().collect();
    for tok in &landed {
        assert!(lines.contains(&tok.as_str()), "lost update {tok}:\n{end}");
    }
    assert_eq!(lines.len(), 3 * EACH + 1, "{end}");
    if overlay.is_some() {
        assert_eq!(ws.get("shared.txt"), b"END\n", "the workspace is untouched");
    }
}

#[test]
fn a_200mb_write_streams() {
    const SIZE: usize = 200 << 20;
    const PEAK: u64 = 64 << 20;
    let ws = open_to_all();
    let input = ws.base.join("input.txt");
    {
        let line = format!("{}\n", "x".repeat(1023));
        let mut f = std::io::BufWriter::new(std::fs::File::create(&input).unwrap());
        for _ in 0..SIZE / line.len() {
            f.write_all(line.as_bytes()).unwrap();
        }
    }
    let overlay = ws.base.join("overlay");
    for (name, extra, written) in [
        ("disk", vec![], ws.at("big.txt")),
        (
            "overlay",
            vec!["--overlay".to_string(), overlay.display().to_string()],
            overlay.join("upper/big.txt"),
        ),
    ] {
        let out = Command::new("/usr/bin/time")
            .args(["-f", "maxrss_kb=%M"])
            .arg(BIN)
            .arg("--cwd")
            .arg(&ws.root)
            .args(&extra)
            .args(["write", "big.txt"])
            .env("DSH_SEARCH_STATE_DIR", ws.base.join("state"))
            .stdin(std::fs::File::open(&input).unwrap())
            .output()
            .expect("GNU time at /usr/bin/time measures the peak memory (apt-get install time)");
        let (all, code) = text(out);
        assert_eq!(code, 0, "{name}: {all}");
        let kb: u64 = all
            .lines()
            .find_map(|l| l.strip_prefix("maxrss_kb="))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("{name}: no maxrss in {all}"));
        assert_eq!(
            std::fs::metadata(&written).unwrap().len(),
            SIZE as u64,
            "{name}"
        );
        assert!(
            kb * 1024 <= PEAK,
            "{name}: peak {kb} KiB for a {SIZE}-byte write"
        );
        std::fs::remove_file(&written).unwrap();
    }
    std::fs::remove_file(&input).unwrap();
}

// ---------------------------------------------------------------------------
// Item 5: cancellation.

/// `edit` and `write` waiting for another writer's lock end at SIGTERM and
/// SIGINT with nothing changed, even when the lock frees afterwards.
#[test]
fn lock_wait_ends_at_a_signal_and_nothing_changes() {
    use rustix::process::Signal;
    let ws = open_to_all();
    for (name, sig) in [("TERM", Signal::TERM), ("INT", Signal::INT)] {
        for tool in ["edit", "write"] {
            ws.file("f.txt", b"old\n");
            let lock = hold_dir_lock(&ws.root);
            let mut cmd = match tool {
                "edit" => cmd(
                    &ws,
                    "state",
                    &["edit", "f.txt", "--old", "old", "--new", "new"],
                ),
                _ => cmd(&ws, "state", &["write", "f.txt"]),
            };
            let mut child = cmd.stdin(Stdio::piped()).spawn().unwrap();
            let mut stdin = child.stdin.take().unwrap();
            if tool == "write" {
                stdin.write_all(b"new\n").unwrap();
            }
            drop(stdin);
            // Let it reach the lock; a signal that comes earlier must stop
            // it just the same.
            std::thread::sleep(Duration::from_millis(300));
            signal(&child, sig);
            let (out, code) = wait_exit(child);
            drop(lock);
            assert_eq!(code, 2, "{tool} {name}: {out}");
            assert!(
                out.contains(&format!("{tool} aborted")),
                "{tool} {name}: {out}"
            );
            assert_eq!(ws.get("f.txt"), b"old\n", "{tool} {name}");
        }
    }
}

/// A process holding `path`'s `flock` (util-linux flock) until its
/// standard input closes; returned once it holds it. A process of its own,
/// so that no child another test forks meanwhile inherits the lock.
fn lock_holder(path: &Path) -> Child {
    let mut holder = Command::new("flock")
        .arg(path)
        .args(["sh", "-c", "echo locked; exec cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("util-linux flock holds a lock for the test");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line, "locked\n");
    holder
}

/// Release a [`lock_holder`]'s lock.
fn release(mut holder: Child) {
    drop(holder.stdin.take());
    holder.wait().unwrap();
}

/// A session `edit` or `write` waiting for the session state's lock (held
/// by another process) ends at SIGTERM, with nothing changed.
#[test]
fn session_lock_wait_ends_at_a_signal() {
    use sha2::Digest;
    let ws = open_to_all();
    ws.file("f.txt", b"old\n");
    let (out, code) = run(&ws, "state", &["--session", "s", "read", "f.txt"]);
    assert_eq!(code, 0, "{out}");
    let digest = sha2::Sha256::digest(b"s");
    let stem: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    let lock = ws.base.join(format!("state/sessions/{stem}.lock"));
    assert!(lock.exists(), "the session's lock file is {lock:?}");
    for tool in ["edit", "write"] {
        let holder = lock_holder(&lock);
        let args: &[&str] = match tool {
            "edit" => &[
                "--session",
                "s",
                "edit",
                "f.txt",
                "--old",
                "old",
                "--new",
                "new",
            ],
            _ => &["--session", "s", "write", "f.txt"],
        };
        let mut child = cmd(&ws, "state", args)
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let _ = child.stdin.take().unwrap().write_all(b"new\n");
        std::thread::sleep(Duration::from_millis(300));
        signal(&child, rustix::process::Signal::TERM);
        let (out, code) = wait_exit(child);
        release(holder);
        assert_eq!(code, 2, "{tool}: {out}");
        assert!(out.contains(&format!("{tool} aborted")), "{tool}: {out}");
        assert_eq!(ws.get("f.txt"), b"old\n", "{tool}");
    }
}

/// The deadline (`timeoutMs`) ends a wait for another writer's lock too.
#[test]
fn lock_wait_ends_at_the_deadline() {
    let ws = open_to_all();
    ws.file("f.txt", b"old\n");
    let config = ws.base.join("config.json");
    std::fs::write(&config, r#"{"timeoutMs": 200}"#).unwrap();
    let lock = hold_dir_lock(&ws.root);
    let child = cmd(
        &ws,
        "state",
        &[
            "--config",
            config.to_str().unwrap(),
            "edit",
            "f.txt",
            "--old",
            "old",
            "--new",
            "new",
        ],
    )
    .spawn()
    .unwrap();
    let (out, code) = wait_exit(child);
    drop(lock);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("tool call timed out after 200ms"), "{out}");
    assert_eq!(ws.get("f.txt"), b"old\n");
}

/// Standard input that arrives slowly is not cut off by `timeoutMs`: it
/// comes at its producer's pace (`build | dsh-search write log`).
#[test]
fn slow_stdin_is_not_a_timeout() {
    let ws = open_to_all();
    let config = ws.base.join("config.json");
    std::fs::write(&config, r#"{"timeoutMs": 100}"#).unwrap();
    let mut child = cmd(
        &ws,
        "state",
        &["--config", config.to_str().unwrap(), "write", "log.txt"],
    )
    .stdin(Stdio::piped())
    .spawn()
    .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"one\n").unwrap();
    std::thread::sleep(Duration::from_millis(400));
    stdin.write_all(b"two\n").unwrap();
    drop(stdin);
    let (out, code) = wait_exit(child);
    assert_eq!(code, 0, "{out}");
    assert_eq!(ws.get("log.txt"), b"one\ntwo\n");
}

/// `sleep 30 | dsh-search write x`: TERM, INT and HUP end the wait for
/// standard input, and no file is created.
#[test]
fn stdin_wait_ends_at_term_int_hup() {
    use rustix::process::Signal;
    let ws = open_to_all();
    for (name, sig) in [
        ("TERM", Signal::TERM),
        ("INT", Signal::INT),
        ("HUP", Signal::HUP),
    ] {
        let mut child = cmd(&ws, "state", &["write", "x.txt"])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        // The writing end stays open: the write waits for data.
        let stdin = child.stdin.take().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        signal(&child, sig);
        let (out, code) = wait_exit(child);
        drop(stdin);
        assert_eq!(code, 2, "{name}: {out}");
        assert!(out.contains("write aborted"), "{name}: {out}");
        assert!(!ws.at("x.txt").exists(), "{name}");
    }
}

/// `--config <a FIFO>` is refused at once instead of blocking forever.
#[test]
fn config_fifo_is_refused() {
    let ws = open_to_all();
    let fifo = ws.base.join("config.fifo");
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    let child = cmd(
        &ws,
        "state",
        &["--config", fifo.to_str().unwrap(), "glob", "*"],
    )
    .spawn()
    .unwrap();
    let (out, code) = wait_exit(child);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("not a regular file"), "{out}");
}

// ---------------------------------------------------------------------------
// Item 7: a bare write needs no state directory.

/// With `HOME=/nonexistent` as an unprivileged user, and with the state
/// directory a file, a bare write succeeds; with `--session` the failure
/// names the state directory, not the target.
#[test]
fn bare_write_needs_no_state_directory() {
    require_root();
    let ws = open_to_all();
    let mut cmd = cmd(&ws, "state", &["write", "f.txt"]);
    cmd.env_remove("DSH_SEARCH_STATE_DIR")
        .env_remove("XDG_STATE_HOME")
        .env("HOME", "/nonexistent");
    let (out, code) = text(as_nobody(&cmd).output().unwrap());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Created file"), "{out}");

    let file = ws.base.join("state-file");
    std::fs::write(&file, "").unwrap();
    let (out, code) = write(&ws, "state-file", &["write", "g.txt"], b"g\n");
    assert_eq!(code, 0, "{out}");
    let (out, code) = write(
        &ws,
        "state-file",
        &["--session", "s", "write", "h.txt"],
        b"h\n",
    );
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "cannot use the session state directory \"{}\"",
            file.display()
        )),
        "{out}"
    );
    assert!(!ws.at("h.txt").exists());
}

// ---------------------------------------------------------------------------
// Item 11 (write half).

/// A dangling symlink: bare and session writes follow one rule, the safer
/// one: refused as not a regular file, the link kept, its target not made.
#[test]
fn dangling_symlink_one_rule_for_bare_and_session() {
    let ws = open_to_all();
    std::os::unix::fs::symlink(ws.base.join("outside.txt"), ws.at("link")).unwrap();
    for args in [
        &["write", "link"][..],
        &["--session", "s", "write", "link"][..],
    ] {
        let (out, code) = write(&ws, "state", args, b"x\n");
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(out.contains("not a regular file"), "{args:?}: {out}");
        assert!(std::fs::symlink_metadata(ws.at("link"))
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(!ws.base.join("outside.txt").exists());
    }
}

/// `write newdir/` names a directory: refused, and no file `newdir`.
#[test]
fn trailing_slash_names_a_directory() {
    let ws = open_to_all();
    for (args, stdin) in [
        (&["write", "newdir/"][..], &b"x\n"[..]),
        (&["--session", "s", "write", "newdir/"][..], &b"x\n"[..]),
        (
            &["edit", "newdir/", "--old", "a", "--new", "b"][..],
            &b""[..],
        ),
    ] {
        let (out, code) = write(&ws, "state", args, stdin);
        assert_eq!(code, 2, "{args:?}: {out}");
        assert!(
            out.contains("not a regular file (the path names a directory)"),
            "{args:?}: {out}"
        );
        assert!(!ws.at("newdir").exists(), "{args:?}");
    }
}

/// `edit` follows the original package's rules where they speak
/// (`seed-reference.md` §6.3 and §10 items 16–17): the BOM is not written
/// back, a CRLF-majority file becomes uniform CRLF, an LF-majority file
/// uniform LF; every other byte outside the replaced text is kept (a lone
/// `\r`, trailing spaces, no final newline).
#[test]
fn edit_bytes_follow_the_seed_rules() {
    let ws = open_to_all();
    for (name, before, after) in [
        ("bom", &b"\xef\xbb\xbfone two\n"[..], &b"one 2\n"[..]),
        ("crlf majority", b"one\r\ntwo\r\nx\n", b"one\r\n2\r\nx\r\n"),
        ("lf majority", b"one\ntwo\nx\r\n", b"one\n2\nx\n"),
        ("lone cr and spaces", b"a\rtwo  \t\nb", b"a\r2  \t\nb"),
    ] {
        ws.file("e.txt", before);
        let (out, code) = run(
            &ws,
            "state",
            &["edit", "e.txt", "--old", "two", "--new", "2"],
        );
        assert_eq!(code, 0, "{name}: {out}");
        assert_eq!(
            String::from_utf8_lossy(&ws.get("e.txt")),
            String::from_utf8_lossy(after),
            "{name}"
        );
    }
}

/// The rules of item 11 at the tool level on every filesystem of the seam
/// (the disk's two paths, in memory, an overlay), bare and with a session:
/// a dangling symlink is not written, a trailing slash names a directory.
#[test]
fn write_rules_on_every_filesystem() {
    use dsh_search::config::Config;
    use dsh_search::tool::{CallContext, Tools};
    use serde_json::json;
    let ws = open_to_all();
    std::os::unix::fs::symlink(ws.root.join("nowhere.txt"), ws.at("link")).unwrap();
    for way in crate::util::workspaces::ways(&ws.root, &ws.root) {
        for session in [false, true] {
            let tools =
                Tools::new(Config::default(), way.backend.clone()).with_filesystem(way.fs.clone());
            let (tools, ctx) = match session {
                true => (tools, CallContext::new(&ws.root).session("s")),
                false => (
                    tools.without_observation_policy(),
                    CallContext::new(&ws.root),
                ),
            };
            let label = format!("{} session={session}", way.label);
            for (path, expect) in [
                ("link", "not a regular file"),
                ("newdir/", "not a regular file (the path names a directory)"),
            ] {
                let r = tools.call("write", &json!({"file_path": path, "content": "x"}), &ctx);
                assert!(r.is_error, "{label} {path}: {}", r.content);
                assert!(r.content.contains(expect), "{label} {path}: {}", r.content);
            }
            assert!(!ws.at("nowhere.txt").exists(), "{label}");
            assert!(!ws.at("newdir").exists(), "{label}");
        }
    }
}
