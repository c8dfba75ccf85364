//! The rg backend against a real `rg` 15.2.0: the argv it builds, that no
//! argument reaches a shell, the parsing of rg's `--files` and `--json`
//! output (re-serialized byte for byte), stopping and reaping rg on
//! cancellation and at the output budget, and the CLI's `--format raw`.
//!
//! Some cases put a small shell script in rg's place (`RgBackend::with_path`)
//! to see exactly what the child receives, or to act in ways rg does not
//! (ignore SIGTERM, die of a signal, print malformed JSON).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use dsh_search::backend::rg::{glob_args, grep_args, RgConfig};
use dsh_search::event::Event;
use dsh_search::{GlobRequest, GrepRequest, RgBackend, SearchBackend, Status};

/// The rg binary: `DSH_SEARCH_RG`, else `rg` on `PATH`. A missing rg fails
/// the test: a skipped check is not a passed check.
fn rg_path() -> PathBuf {
    if let Some(p) = std::env::var_os("DSH_SEARCH_RG").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("rg"))
        .find(|c| c.is_file())
        .unwrap_or_else(|| {
            panic!(
                "these tests need ripgrep 15.2.0: run `cargo install ripgrep --locked \
                 --version 15.2.0` and put it on PATH, or set DSH_SEARCH_RG"
            )
        })
}

fn rg() -> RgBackend {
    RgBackend::with_path(rg_path())
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// The canonical form of a temp dir, as `/proc/<pid>/cwd` shows it.
fn canon(dir: &Path) -> PathBuf {
    dir.canonicalize().unwrap()
}

fn strings(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// An executable `sh` script at `dir/name`.
///
/// Written by a `sh` child, never through a descriptor of this process:
/// a test thread forking at that moment would inherit a write descriptor
/// to the script until its exec, and exec'ing the script meanwhile fails
/// with ETXTBSY ("Text file busy").
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join(name);
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(r#"cat > "$1" && chmod 755 "$1""#)
        .arg("sh")
        .arg(&path)
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
        .unwrap();
    drop(stdin);
    assert!(
        child.wait().unwrap().success(),
        "writing {}",
        path.display()
    );
    path
}

/// `'…'` quoting for embedding a path in a test script.
fn sh_quote(p: &Path) -> String {
    format!("'{}'", p.to_str().unwrap().replace('\'', "'\\''"))
}

/// A script that runs the real rg with its arguments, keeps a copy of rg's
/// exact stdout in `copy`, prints it and exits with rg's code.
fn tee_rg(dir: &Path, copy: &Path) -> RgBackend {
    let body = format!(
        "{rg} \"$@\" > {copy}\ncode=$?\ncat {copy}\nexit $code",
        rg = sh_quote(&rg_path()),
        copy = sh_quote(copy),
    );
    RgBackend::with_path(script(dir, "tee-rg", &body))
}

/// Processes whose current directory is `dir`.
fn procs_in(dir: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        if std::fs::read_link(entry.path().join("cwd")).is_ok_and(|cwd| cwd == dir) {
            found.push(pid);
        }
    }
    found
}

/// Wait until some process runs in `dir`; a guard against a hang, not a
/// timed assertion.
fn wait_for_procs(dir: &Path) -> Vec<u32> {
    let start = Instant::now();
    loop {
        let pids = procs_in(dir);
        if !pids.is_empty() {
            return pids;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no process started in {}",
            dir.display()
        );
        thread::sleep(Duration::from_millis(10));
    }
}

fn assert_gone(pids: &[u32]) {
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} outlived the call"
        );
    }
}

/// Run `call` on a thread and return its result; a guard against a hang
/// (a call that never returns fails the test), not a timed assertion.
fn returns<T: Send + 'static>(call: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || tx.send(call()).unwrap());
    rx.recv_timeout(Duration::from_secs(120))
        .expect("the call did not return")
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

// ---------------------------------------------------------------- argv

#[test]
fn glob_argv_is_the_seed_vector() {
    // seed-reference.md §1.1, the exact vector for {pattern:"*.md", path:"docs dir"}.
    let req = GlobRequest::new("*.md", "/w").path("docs dir");
    assert_eq!(
        glob_args(&req),
        strings(&[
            "--no-config",
            "--files",
            "--glob=*.md",
            "--sort=modified",
            "--no-ignore",
            "--hidden",
            "--glob=!**/.git",
            "--glob=!**/.git/**",
            "--glob=!**/.svn",
            "--glob=!**/.svn/**",
            "--glob=!**/.hg",
            "--glob=!**/.hg/**",
            "--glob=!**/.bzr",
            "--glob=!**/.bzr/**",
            "--glob=!**/.jj",
            "--glob=!**/.jj/**",
            "--glob=!**/.sl",
            "--glob=!**/.sl/**",
            "--",
            "docs dir",
        ])
    );
    let no_path = glob_args(&GlobRequest::new("*.md", "/w"));
    assert_eq!(no_path.len(), 18);
    assert_eq!(no_path.last().unwrap(), "--glob=!**/.sl/**");
}

#[test]
fn grep_argv_is_the_seed_example() {
    // seed-reference.md §1.2.
    let req = GrepRequest::new("x", "/w")
        .path("-leading-dash")
        .include("*.{ts,tsx}");
    assert_eq!(
        grep_args(&req),
        strings(&[
            "--no-config",
            "--json",
            "--regexp=x",
            "--glob=*.{ts,tsx}",
            "--",
            "-leading-dash"
        ])
    );
    assert_eq!(
        grep_args(&GrepRequest::new("-e", "/w")),
        strings(&["--no-config", "--json", "--regexp=-e"])
    );
}

#[test]
fn command_display_reproduces_the_call() {
    let dir = tmp();
    std::fs::write(dir.path().join("a.md"), "x").unwrap();
    let cmd = rg()
        .glob_command(&GlobRequest::new("*.md", dir.path()))
        .unwrap();
    // The displayed line, run by a shell, lists what the backend lists.
    let out = Command::new("sh")
        .arg("-c")
        .arg(cmd.to_string())
        .output()
        .unwrap();
    assert_eq!(out.stdout, b"a.md\n");
    assert!(cmd.to_string().contains(" '--glob=!**/.git' "));
}

// ------------------------------------------------- hostile arguments

const HOSTILE: [&str; 7] = [
    "$(touch pwned1)",
    "`touch pwned2`",
    "'; touch pwned3; '",
    "\"; touch pwned4; \"",
    "a\nb",
    "--files",
    "*[?]{x,y}",
];

#[test]
fn hostile_strings_reach_rg_verbatim() {
    let dir = tmp();
    let capture = dir.path().join("argv");
    let body = format!(
        "printf '%s\\0' \"$@\" > {c}\npwd >> {c}\nreadlink /proc/$$/fd/0 >> {c}",
        c = sh_quote(&capture)
    );
    let fake = RgBackend::with_path(script(dir.path(), "fake-rg", &body));
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    for s in HOSTILE {
        let req = GrepRequest::new(s, &work).path(s).include(s);
        let out = fake.grep(&req);
        assert_eq!(out.status, Status::Exited(0), "{s:?}");
        let mut expect = Vec::new();
        for arg in [
            "--no-config".to_string(),
            "--json".to_string(),
            format!("--regexp={s}"),
            format!("--glob={s}"),
            "--".to_string(),
            s.to_string(),
        ] {
            expect.extend_from_slice(arg.as_bytes());
            expect.push(0);
        }
        expect.extend_from_slice(canon(&work).as_os_str().as_bytes());
        expect.extend_from_slice(b"\n/dev/null\n");
        assert_eq!(std::fs::read(&capture).unwrap(), expect, "{s:?}");

        let req = GlobRequest::new(s, &work).path(s);
        fake.glob(&req);
        let argv = std::fs::read(&capture).unwrap();
        let argv: Vec<&[u8]> = argv.split(|&b| b == 0).collect();
        assert_eq!(
            argv[..3],
            [
                &b"--no-config"[..],
                b"--files",
                format!("--glob={s}").as_bytes()
            ]
        );
        assert_eq!(argv[18], b"--");
        assert_eq!(argv[19], s.as_bytes());
    }
    let names: Vec<_> = std::fs::read_dir(&work).unwrap().collect();
    assert!(names.is_empty(), "something ran a shell: {names:?}");
}

#[test]
fn hostile_strings_with_real_rg_create_nothing() {
    let dir = tmp();
    for s in HOSTILE {
        let glob = rg().glob(&GlobRequest::new(s, dir.path()));
        // Nothing exists, so nothing matches any of them as a glob.
        assert_eq!(glob.status, Status::Exited(1), "{s:?}: {:?}", glob.stderr);
        let grep = rg().grep(&GrepRequest::new("x", dir.path()).path(s));
        assert_eq!(grep.status, Status::Exited(2), "{s:?}");
        // rg names the path it was given: it was a path, not a flag. (A
        // newline in it splits rg's message into stderr lines.)
        assert_eq!(
            grep.stderr.join("\n"),
            format!(
                "rg: {s}: IO error for operation on {s}: No such file or directory (os error 2)"
            ),
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn newline_in_a_path_is_one_argument() {
    let dir = tmp();
    std::fs::write(dir.path().join("a\nb"), "needle\n").unwrap();
    let out = rg().grep(&GrepRequest::new("needle", dir.path()).path("a\nb"));
    assert_eq!(out.status, Status::Exited(0));
    let m: Vec<_> = out.results.matches().collect();
    assert_eq!(m.len(), 1);
    assert_eq!(&m[0].path[..], b"a\nb");
    // --files prints the name as is, so it splits in two entries (§2.2).
    let glob = rg().glob(&GlobRequest::new("*", dir.path()));
    assert_eq!(glob.results.files, vec![b"a".to_vec(), b"b".to_vec()]);
}

// ---------------------------------------------------------- parsing

#[test]
fn bytes_forms_parse_and_reserialize_exactly() {
    let dir = tmp();
    let name = OsStr::from_bytes(b"caf\xe9.txt");
    std::fs::write(dir.path().join(name), b"caf\xe9 hello\nplain hello\n").unwrap();
    std::fs::write(dir.path().join("utf8.txt"), "h\u{e9} hello \"q\"\t\u{1}\n").unwrap();
    let copy = dir.path().join("..").join(format!(
        "{}.out",
        dir.path().file_name().unwrap().to_str().unwrap()
    ));
    let backend = tee_rg(dir.path(), &copy);
    let out = backend.grep(&GrepRequest::new("hello", dir.path()).include("!tee-rg"));
    let raw = std::fs::read(&copy).unwrap();
    std::fs::remove_file(&copy).unwrap();
    assert_eq!(out.status, Status::Exited(0), "{:?}", out.stderr);

    let mut again = Vec::new();
    out.results.write_raw(&mut again).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&again),
        String::from_utf8_lossy(&raw)
    );
    assert_eq!(again, raw);

    let latin: Vec<_> = out
        .results
        .matches()
        .filter(|m| &m.path[..] == b"caf\xe9.txt")
        .collect();
    assert_eq!(latin.len(), 2);
    let first = latin.iter().find(|m| m.line_number == 1).unwrap();
    assert_eq!(&*first.lines, b"caf\xe9 hello\n");
    assert_eq!(first.absolute_offset, 0);
    assert_eq!(first.submatches.len(), 1);
    assert_eq!(
        &first.lines[first.submatches[0].start..first.submatches[0].end],
        b"hello"
    );
    assert!(
        raw.windows(9).any(|w| w == b"{\"bytes\":"),
        "rg used the bytes form"
    );
    assert!(matches!(out.results.events.last(), Some(Event::Summary(_))));
    let begins = out
        .results
        .events
        .iter()
        .filter(|e| matches!(e, Event::Begin(b) if b.path == b"caf\xe9.txt"))
        .count();
    assert_eq!(begins, 1);
}

#[test]
fn glob_lists_raw_name_bytes_in_rgs_order() {
    let dir = tmp();
    let copy = dir.path().with_extension("out");
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join(OsStr::from_bytes(b"\xff.txt")), "").unwrap();
    std::fs::write(dir.path().join("d/b.txt"), "").unwrap();
    std::fs::write(dir.path().join(".hidden.txt"), "").unwrap();
    std::fs::create_dir(dir.path().join(".git")).unwrap();
    std::fs::write(dir.path().join(".git/c.txt"), "").unwrap();
    let out = tee_rg(dir.path(), &copy).glob(&GlobRequest::new("*.txt", dir.path()));
    let raw = std::fs::read(&copy).unwrap();
    std::fs::remove_file(&copy).unwrap();
    assert_eq!(out.status, Status::Exited(0));
    let mut again = Vec::new();
    out.results.write_raw(&mut again).unwrap();
    assert_eq!(again, raw);
    let mut files = out.results.files.clone();
    files.sort();
    assert_eq!(
        files,
        vec![
            b".hidden.txt".to_vec(),
            b"d/b.txt".to_vec(),
            b"\xff.txt".to_vec()
        ]
    );
}

#[test]
fn no_match_is_exit_1_with_a_summary() {
    let dir = tmp();
    std::fs::write(dir.path().join("a"), "abc\n").unwrap();
    let out = rg().grep(&GrepRequest::new("zzz", dir.path()));
    assert_eq!(out.status, Status::Exited(1));
    assert!(out.stderr.is_empty());
    assert_eq!(out.results.events.len(), 1);
    let Event::Summary(s) = &out.results.events[0] else {
        panic!("{:?}", out.results.events)
    };
    assert_eq!(s.stats.searches, 1);
    assert_eq!(s.stats.bytes_searched, 4);
}

#[test]
fn errors_are_exit_2_with_rgs_stderr_lines() {
    let dir = tmp();
    let out = rg().glob(&GlobRequest::new("*", dir.path()).path("nonexist"));
    assert_eq!(out.status, Status::Exited(2));
    // The text of seed-reference.md §1.6, after its "exit 2): " prefix.
    assert_eq!(
        out.stderr,
        ["rg: nonexist: IO error for operation on nonexist: No such file or directory (os error 2)"]
    );
    let out = rg().grep(&GrepRequest::new("(", dir.path()));
    assert_eq!(out.status, Status::Exited(2));
    assert_eq!(
        out.stderr,
        [
            "rg: regex parse error:",
            "    (?:()",
            "    ^",
            "error: unclosed group"
        ]
    );
}

#[test]
fn malformed_json_is_reported_only_for_exit_0() {
    let dir = tmp();
    let bad = RgBackend::with_path(script(dir.path(), "bad", "echo 'not json'; exit 0"));
    let out = bad.grep(&GrepRequest::new("x", dir.path()));
    assert_eq!(out.status, Status::Malformed("a line is not JSON".into()));
    let bad = RgBackend::with_path(script(
        dir.path(),
        "bad2",
        "echo '{}'; echo oops >&2; exit 2",
    ));
    let out = bad.grep(&GrepRequest::new("x", dir.path()));
    assert_eq!(out.status, Status::Exited(2));
    assert_eq!(out.stderr, ["oops"]);
}

// ---------------------------------------------------- launch failures

#[test]
fn launch_failures() {
    let dir = tmp();
    let missing = RgBackend::with_path(dir.path().join("no-rg"));
    let out = missing.grep(&GrepRequest::new("x", dir.path()));
    assert!(
        matches!(out.status, Status::LaunchFailed(_)),
        "{:?}",
        out.status
    );

    let out = rg().grep(&GrepRequest::new("x", dir.path().join("gone")));
    let Status::LaunchFailed(why) = out.status else {
        panic!("{:?}", out.status)
    };
    assert!(why.contains("is not a directory"), "{why}");

    for req in [
        GrepRequest::new("a\0b", dir.path()),
        GrepRequest::new("a", dir.path()).path("p\0"),
        GrepRequest::new("a", dir.path()).include("\0"),
    ] {
        let out = rg().grep(&req);
        assert!(
            matches!(out.status, Status::LaunchFailed(_)),
            "{:?}",
            out.status
        );
    }
    let out = rg().glob(&GlobRequest::new("\0", dir.path()));
    assert!(
        matches!(out.status, Status::LaunchFailed(_)),
        "{:?}",
        out.status
    );
}

#[test]
fn a_signal_we_did_not_send_is_reported() {
    let dir = tmp();
    let dies = RgBackend::with_path(script(dir.path(), "dies", "kill -KILL $$"));
    let out = dies.glob(&GlobRequest::new("*", dir.path()));
    assert_eq!(out.status, Status::Signaled(Some("SIGKILL".into())));
}

// ------------------------------------------------ stopping and reaping

#[test]
fn cancel_stops_rg_blocked_on_a_fifo() {
    let dir = tmp();
    let work = canon(dir.path());
    mkfifo(&work.join("fifo"));
    let req = GrepRequest::new("x", &work).path("fifo");
    let cancel = req.cancel.clone();
    let call = thread::spawn(move || returns(move || rg().grep(&req)));
    // rg blocks opening a FIFO nobody writes to: it would never finish.
    let pids = wait_for_procs(&work);
    cancel.cancel();
    let out = call.join().unwrap();
    assert_eq!(out.status, Status::Cancelled);
    assert_gone(&pids);
    assert!(procs_in(&work).is_empty());
}

#[test]
fn cancel_before_the_call_spawns_nothing() {
    let dir = tmp();
    let capture = dir.path().join("ran");
    let body = format!("touch {}", sh_quote(&capture));
    let fake = RgBackend::with_path(script(dir.path(), "fake", &body));
    let req = GlobRequest::new("*", dir.path());
    req.cancel.cancel();
    assert_eq!(fake.glob(&req).status, Status::Cancelled);
    assert!(!capture.exists());
}

#[test]
fn sigkill_follows_an_ignored_sigterm_and_reaches_the_group() {
    let dir = tmp();
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let work = canon(&work);
    // SIG_IGN survives exec, so both sleeps ignore SIGTERM too.
    let body = "trap '' TERM\nsleep 1000 &\nsleep 1000";
    let stubborn = RgBackend::with_config(RgConfig {
        path: Some(script(dir.path(), "stubborn", body)),
        grace: Duration::from_millis(100),
    });
    let req = GlobRequest::new("*", &work);
    let cancel = req.cancel.clone();
    let call = thread::spawn(move || returns(move || stubborn.glob(&req)));
    let start = Instant::now();
    let pids = loop {
        let pids = procs_in(&work);
        if pids.len() >= 3 {
            break pids;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "script did not start"
        );
        thread::sleep(Duration::from_millis(10));
    };
    cancel.cancel();
    let out = call.join().unwrap();
    assert_eq!(out.status, Status::Cancelled);
    // The background sleep is not our child: only the group kill reaches it.
    // It is reparented and reaped by init, so wait for it to go.
    let start = Instant::now();
    while !procs_in(&work).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{pids:?} survived"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn over_budget_stops_an_endless_grep() {
    let dir = tmp();
    let work = canon(dir.path());
    let fifo = work.join("fifo");
    mkfifo(&fifo);
    // An endless stream of matching lines: without the budget stop, the call
    // would never return. The writer ends when rg is gone (EPIPE).
    let writer = thread::spawn(move || {
        use std::io::Write as _;
        let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
        let line = b"needle in a haystack\n".repeat(1000);
        while f.write_all(&line).is_ok() {}
    });
    let mut req = GrepRequest::new("needle", &work).path("fifo");
    req.raw_budget = Some(100_000);
    let out = returns(move || rg().grep(&req));
    assert_eq!(out.status, Status::OverBudget);
    let mut raw = Vec::new();
    out.results.write_raw(&mut raw).unwrap();
    assert!(raw.len() <= 100_000, "{}", raw.len());
    assert!(out.results.matches().count() > 10);
    assert!(procs_in(&work).is_empty());
    writer.join().unwrap();
}

#[test]
fn over_budget_glob_keeps_whole_names_within_the_budget() {
    let dir = tmp();
    for i in 0..200 {
        std::fs::write(dir.path().join(format!("file-{i:04}.txt")), "").unwrap();
    }
    let mut req = GlobRequest::new("*.txt", dir.path());
    req.raw_budget = Some(100);
    let out = rg().glob(&req);
    assert_eq!(out.status, Status::OverBudget);
    assert!(out.results.raw_len() <= 100);
    assert_eq!(out.results.files.len(), 100 / "file-0000.txt\n".len());
    assert!(procs_in(&canon(dir.path())).is_empty());

    // Exactly at the budget is not over it.
    let mut req = GlobRequest::new("file-0000.txt", dir.path());
    req.raw_budget = Some("file-0000.txt\n".len() as u64);
    assert_eq!(rg().glob(&req).status, Status::Exited(0));
}

// --------------------------------------------------------- CLI raw mode

fn cli(dir: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .args(args)
        .current_dir(dir)
        .env("DSH_SEARCH_RG", rg_path())
        .output()
        .unwrap()
}

#[test]
fn cli_raw_glob_is_rgs_output() {
    let dir = tmp();
    std::fs::write(dir.path().join("a.md"), "").unwrap();
    std::fs::write(dir.path().join("-b.md"), "").unwrap();
    let ours = cli(
        dir.path(),
        &["glob", "--backend", "rg", "--format", "raw", "*.md"],
    );
    let theirs = Command::new(rg_path())
        .args(glob_args(&GlobRequest::new("*.md", dir.path())))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(ours.stdout, theirs.stdout);
    assert_eq!(ours.status.code(), Some(0));

    let ours = cli(
        dir.path(),
        &[
            "glob",
            "--format",
            "raw",
            "--backend",
            "rg",
            "--",
            "*.md",
            "-b.md",
        ],
    );
    assert_eq!(ours.stdout, b"-b.md\n");
}

/// A path argument that is not UTF-8 (a Latin-1 file name, and one that
/// does not exist) is rg's path in raw mode: the CLI on both backends
/// prints what the real rg prints, byte for byte (`elapsed` masked).
#[test]
fn cli_raw_takes_a_path_that_is_not_utf8() {
    use std::os::unix::ffi::OsStringExt as _;
    let dir = tmp();
    let cwd = canon(dir.path());
    let name = OsString::from_vec(b"caf\xe9.txt".to_vec());
    std::fs::write(cwd.join(&name), "hi\n").unwrap();
    let missing = OsString::from_vec(b"nowhere-\xff".to_vec());
    for path in [&name, &missing] {
        let glob = GlobRequest::new("*", &cwd).path(path.clone());
        let grep = GrepRequest::new("hi", &cwd).path(path.clone());
        for (tool, rg_argv) in [("glob", glob_args(&glob)), ("grep", grep_args(&grep))] {
            let want = Command::new(rg_path())
                .args(&rg_argv)
                .current_dir(&cwd)
                .output()
                .unwrap();
            for backend in ["native", "rg"] {
                let mut args: Vec<OsString> =
                    strings(&[tool, "--format", "raw", "--backend", backend, "--"]);
                args.push(if tool == "glob" { "*" } else { "hi" }.into());
                args.push(path.clone());
                let got = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
                    .args(&args)
                    .current_dir(&cwd)
                    .env("DSH_SEARCH_RG", rg_path())
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                let label = format!("{tool} {path:?} [{backend}]");
                let out = |o: &std::process::Output| match tool {
                    "grep" => crate::util::rg::normalize_grep(&o.stdout),
                    _ => o.stdout.clone(),
                };
                let (g, w) = (out(&got), out(&want));
                assert!(
                    g == w,
                    "{label}:\n{}\n{}",
                    String::from_utf8_lossy(&g),
                    String::from_utf8_lossy(&w)
                );
                assert_eq!(got.stderr, want.stderr, "{label}");
                assert_eq!(got.status.code(), want.status.code(), "{label}");
            }
        }
    }
}

#[test]
fn cli_raw_grep_dash_pattern_and_errors() {
    let dir = tmp();
    std::fs::write(dir.path().join("-p.txt"), "-x marks\n").unwrap();
    let out = cli(
        dir.path(),
        &[
            "grep",
            "--backend",
            "rg",
            "--format",
            "raw",
            "--",
            "-x",
            "-p.txt",
        ],
    );
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(
        "{\"type\":\"begin\",\"data\":{\"path\":{\"text\":\"-p.txt\"}}}\n\
         {\"type\":\"match\",\"data\":{\"path\":{\"text\":\"-p.txt\"},\"lines\":{\"text\":\"-x marks\\n\"}"
    ));
    assert_eq!(text.lines().count(), 4);

    let out = cli(
        dir.path(),
        &[
            "grep",
            "--backend",
            "rg",
            "--format",
            "raw",
            "x",
            "nonexist",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8(out.stderr).unwrap(),
        "rg: nonexist: IO error for operation on nonexist: No such file or directory (os error 2)\n"
    );

    let out = cli(
        dir.path(),
        &[
            "grep",
            "--backend",
            "rg",
            "--format",
            "raw",
            "--cwd",
            "gone",
            "x",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .starts_with("dsh-search: could not start `cd gone && "));
}

#[test]
fn cli_raw_broken_pipe_exits_0() {
    let dir = tmp();
    for i in 0..3000 {
        std::fs::write(dir.path().join(format!("f{i:05}")), "").unwrap();
    }
    let bin = env!("CARGO_BIN_EXE_dsh-search");
    let line = format!(
        "{} glob --backend rg --format raw '*' | head -c 1 >/dev/null; echo \"${{PIPESTATUS[0]}}\"",
        sh_quote(Path::new(bin))
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(line)
        .current_dir(dir.path())
        .env("DSH_SEARCH_RG", rg_path())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "0\n");
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
}

#[test]
fn a_straggler_holding_the_pipes_is_killed_with_the_group() {
    let dir = tmp();
    let work = dir.path().join("w");
    std::fs::create_dir(&work).unwrap();
    let work = canon(&work);
    // The leader dies of SIGTERM; its child ignores it and keeps stdout open.
    let body = "(trap '' TERM; exec sleep 1000) &\nwait";
    let leader = RgBackend::with_config(RgConfig {
        path: Some(script(dir.path(), "leader", body)),
        grace: Duration::from_secs(600),
    });
    let req = GlobRequest::new("*", &work);
    let cancel = req.cancel.clone();
    let call = thread::spawn(move || returns(move || leader.glob(&req)));
    let start = Instant::now();
    while procs_in(&work).len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "script did not start"
        );
        thread::sleep(Duration::from_millis(10));
    }
    cancel.cancel();
    assert_eq!(call.join().unwrap().status, Status::Cancelled);
    let start = Instant::now();
    while !procs_in(&work).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the straggler survived"
        );
        thread::sleep(Duration::from_millis(10));
    }
}

/// SIGINT or SIGTERM to the CLI cancels the running call on either
/// backend: the CLI prints the aborted error and exits 2, and rg (in its own
/// process group, out of reach of a terminal's signal) is stopped too.
#[test]
fn cli_signal_cancels_the_call_and_stops_rg() {
    use rustix::process::{kill_process, Pid, Signal};
    for (backend, signal, procs) in [
        ("rg", Signal::INT, 2),
        ("rg", Signal::TERM, 2),
        ("native", Signal::INT, 1),
    ] {
        let dir = tmp();
        let root = canon(dir.path());
        mkfifo(&root.join("f"));
        let child = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
            .current_dir(&root)
            .env("DSH_SEARCH_RG", rg_path())
            .args(["grep", "--backend", backend, "--", "x", "f"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The CLI, and rg when it is the backend, are both blocked on the
        // FIFO once they show up in the directory.
        let start = Instant::now();
        while procs_in(&root).len() < procs {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "{backend}: nothing started"
            );
            thread::sleep(Duration::from_millis(10));
        }
        thread::sleep(Duration::from_millis(200));
        let pid = Pid::from_raw(child.id() as i32).unwrap();
        kill_process(pid, signal).unwrap();
        let out = returns(move || child.wait_with_output().unwrap());
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "Error: grep was aborted before completion (tool timeout or caller cancellation)\n",
            "{backend}"
        );
        assert_eq!(out.status.code(), Some(2), "{backend}");
        assert_eq!(
            procs_in(&root),
            Vec::<u32>::new(),
            "{backend}: a process outlived the call"
        );
    }
}
