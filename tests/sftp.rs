//! Remote workspaces over SFTP against a real OpenSSH `sshd` on 127.0.0.1
//! (`docs/contract.md` §11, `tests/util/sshd.rs`).

use std::path::Path;

use dsh_search::fs::{FileSystem, FsWrite, Listing, WriteGuard};
use dsh_search::CancelToken;

use crate::util::sshd;

#[test]
fn sftp_seam_basics() {
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("d/e")).unwrap();
    std::fs::write(root.join("a.txt"), "hello\n").unwrap();
    let big: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("d/big.bin"), &big).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    let fs = sshd::shared_fs();
    assert_eq!(
        fs.canonicalize(&root.join("link")).unwrap(),
        root.join("a.txt")
    );
    let m = fs.metadata(&root.join("a.txt")).unwrap();
    assert!(m.kind.is_file());
    assert_eq!(m.len, 6);
    assert!(fs
        .symlink_metadata(&root.join("link"))
        .unwrap()
        .kind
        .is_symlink());
    assert_eq!(
        fs.read_link(&root.join("link")).unwrap(),
        Path::new("a.txt")
    );
    let dir = fs.open_dir(&root).unwrap();
    let mut listing = Listing::new();
    fs.list(&dir, &mut listing);
    assert!(listing.error().is_none());
    let mut names: Vec<String> = listing
        .iter()
        .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["a.txt", "d", "link"]);
    let mut data = Vec::new();
    std::io::Read::read_to_end(
        &mut fs
            .open(&root.join("d/big.bin"), &CancelToken::new())
            .unwrap(),
        &mut data,
    )
    .unwrap();
    assert!(data == big, "the 1 MB file reads back whole");
    let err = fs.metadata(&root.join("missing")).unwrap_err();
    assert_eq!(err.to_string(), "No such file or directory (os error 2)");
    let w = fs
        .write(
            &root.join("new/dir/f.txt"),
            b"x\n",
            &WriteGuard::CreateIfAbsent,
            &CancelToken::new(),
        )
        .unwrap();
    assert!(!w.replaced);
    assert_eq!(std::fs::read(root.join("new/dir/f.txt")).unwrap(), b"x\n");
    assert!(matches!(
        fs.write(
            &root.join("new/dir/f.txt"),
            b"y\n",
            &WriteGuard::CreateIfAbsent,
            &CancelToken::new()
        ),
        Err(dsh_search::fs::WriteError::Exists)
    ));
    let v = w.metadata.version();
    let w2 = fs
        .write(
            &root.join("new/dir/f.txt"),
            b"yy\n",
            &WriteGuard::ReplaceIfVersion(v.clone()),
            &CancelToken::new(),
        )
        .unwrap();
    assert!(w2.replaced);
    assert!(matches!(
        fs.write(
            &root.join("new/dir/f.txt"),
            b"z\n",
            &WriteGuard::ReplaceIfVersion(v),
            &CancelToken::new()
        ),
        Err(dsh_search::fs::WriteError::Stale)
    ));
    assert_eq!(std::fs::read(root.join("new/dir/f.txt")).unwrap(), b"yy\n");
    let names: Vec<_> = std::fs::read_dir(root.join("new/dir"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "no staged file left: {names:?}");
}

/// The conformance tables over SFTP (`util::sftp_share`): every third case
/// of each, the native engine over the shared `sshd` against rg on the
/// same tree, raw and at the tool level.
#[test]
fn sftp_conformance_tables() {
    crate::util::sftp_share(3, 1, || {
        for (_, table) in crate::conformance::OVER_SFTP {
            table();
        }
    });
}

/// Every test of `conformance` is in its list of tables run over SFTP or
/// in its list of tests left local (with the reason), as the test binary
/// lists them: a table added there cannot be forgotten here.
#[test]
fn sftp_runs_every_conformance_table() {
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args(["--list", "conformance::"])
        .output()
        .expect("the test binary lists its tests");
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut tests: Vec<&str> = stdout
        .lines()
        .filter_map(|l| l.strip_suffix(": test")?.strip_prefix("conformance::"))
        .collect();
    let mut listed: Vec<&str> = crate::conformance::OVER_SFTP
        .iter()
        .map(|(name, _)| *name)
        .chain(crate::conformance::LOCAL_ONLY.iter().map(|(name, _)| *name))
        .collect();
    tests.sort_unstable();
    listed.sort_unstable();
    assert!(tests.len() > 20, "{stdout}");
    assert_eq!(
        tests, listed,
        "conformance's tests, and those its lists name"
    );
}

/// A share of the random trees over SFTP: every tenth tree, every tenth
/// case of it.
#[test]
fn sftp_random_trees() {
    crate::util::sftp_share(10, 10, crate::random_trees::random_trees_match_rg);
}

/// Each connection fault: one clear line naming the host, reported by
/// `connect` (so by the command line before any search), no hang, no
/// panic.
#[test]
fn sftp_connection_faults() {
    let keys = sshd::keys();
    let shared = sshd::shared();
    let empty = keys.dir.path().join("known_hosts.empty");
    std::fs::write(&empty, "").unwrap();
    // The usual host key on record, the server presenting another.
    let changed = sshd::Sshd::start_with(&keys.other_host_key);
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let cases: Vec<(&str, dsh_search::fs::SftpBuilder, &str)> = vec![
        (
            "wrong key",
            shared.builder().identity(&keys.stranger_key),
            "the server refused the key",
        ),
        (
            "unknown host key",
            shared.builder().known_hosts(&empty),
            "host key not known: no ssh-ed25519 key for [127.0.0.1]:",
        ),
        (
            "changed host key",
            changed.builder(),
            "host key changed: the server's ssh-ed25519 key differs from the one in",
        ),
        (
            "refused connection",
            shared.builder().port(closed_port),
            "cannot connect: Connection refused",
        ),
        (
            "missing identity file",
            shared
                .builder()
                .identity(keys.dir.path().join("no-such-key")),
            "cannot load the identity",
        ),
    ];
    let mut failures = Vec::new();
    for (name, builder, expected) in cases {
        let fs = builder.build().unwrap();
        let msg = match fs.connect() {
            Ok(()) => {
                failures.push(format!("{name}: connected"));
                continue;
            }
            Err(e) => e.to_string(),
        };
        if !msg.contains(expected)
            || msg.contains('\n')
            || !msg.starts_with("sftp://root@127.0.0.1:")
        {
            failures.push(format!(
                "{name}: {msg:?} (expected one line with {expected:?})"
            ));
        }
        // Every operation after it says the same, without hanging.
        if let Err(e) = fs.metadata(Path::new("/")) {
            if !e.to_string().contains(expected) {
                failures.push(format!("{name}: a later call said {e}"));
            }
        } else {
            failures.push(format!("{name}: a later call succeeded"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A server whose packet announces more than OpenSSH's 256 KiB
/// (`SFTP_MAX_MSG_LENGTH`) ends the session at its header, with one line
/// naming the length and the limit: neither buffered without bound nor
/// waited on until a timeout. The first case is the common one, text a
/// shell startup file prints before the server starts ("Welc" as a
/// length); the second a server that answers the handshake, then sends a
/// length of 2^32-1 with a few bytes and nothing more.
#[test]
fn sftp_packet_over_openssh_limit() {
    let shell_text = sshd::Sshd::start_subsystem(
        "printf 'Welcome to the host\\n'\nexec /usr/lib/openssh/sftp-server",
    );
    // INIT is 9 bytes, VERSION (3, no extensions) too; the huge length
    // goes to the first request, once one comes.
    let huge_reply = sshd::Sshd::start_subsystem(
        "head -c 9 >/dev/null\nprintf '\\0\\0\\0\\5\\2\\0\\0\\0\\3'\n\
         head -c 1 >/dev/null\nprintf '\\377\\377\\377\\377partial'\nexec cat >/dev/null",
    );
    let cases = [
        (
            "shell text",
            &shell_text,
            "the server sent an SFTP packet of 1466264675 bytes, over the limit of 262144 \
             (OpenSSH's SFTP_MAX_MSG_LENGTH): its first bytes read \"Welc\"; does a shell \
             startup file on the host print text?",
        ),
        (
            "huge reply",
            &huge_reply,
            "the server sent an SFTP packet of 4294967295 bytes, over the limit of 262144 \
             (OpenSSH's SFTP_MAX_MSG_LENGTH)",
        ),
    ];
    let mut failures = Vec::new();
    for (name, server, expected) in cases {
        let fs = server.fs();
        for call in ["metadata", "a later metadata"] {
            match fs.metadata(Path::new("/")) {
                Ok(_) => failures.push(format!("{name}: {call} succeeded")),
                Err(e) => {
                    let msg = e.to_string();
                    let url = format!("sftp://root@127.0.0.1:{}: ", server.port);
                    if !msg.starts_with(&url) || !msg.contains(expected) || msg.contains('\n') {
                        failures.push(format!(
                            "{name}: {call}: {msg:?} (expected one line with {expected:?})"
                        ));
                    }
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A tree of many files for the searches that a fault interrupts.
fn many_files(root: &Path, n: usize) {
    for i in 0..n {
        let d = root.join(format!("d{}", i % 20));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join(format!("f{i}.txt")),
            format!("line {i}\nneedle {i}\n").repeat(50),
        )
        .unwrap();
    }
}

/// The server killed before and during searches: each call fails with one
/// clear line (no hang past the timeout, no panic), and once the server is
/// back the next call reconnects and answers like rg.
#[test]
fn sftp_server_killed_and_back() {
    use dsh_search::{GlobRequest, GrepRequest, NativeBackend, SearchBackend};
    let server = sshd::Sshd::start();
    let fs = std::sync::Arc::new(
        server
            .builder()
            .timeout(std::time::Duration::from_secs(10))
            .build()
            .unwrap(),
    );
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    many_files(&root, 400);
    let backend = NativeBackend::on(fs.clone());
    let grep = || backend.grep(&GrepRequest::new("needle 39", &root));
    let first = grep();
    assert_eq!(
        first.status,
        dsh_search::Status::Exited(0),
        "{}",
        first.stderr.join("\n")
    );
    // Killed while idle: the next call says so, in one line.
    server.kill();
    let down = backend.glob(&GlobRequest::new("*", &root));
    let said = format!("{:?} {}", down.status, down.stderr.join("\n"));
    assert_ne!(down.status, dsh_search::Status::Exited(0), "{said}");
    assert!(said.contains("sftp://root@127.0.0.1:"), "{said}");
    // Killed mid-search: the search ends (with an error or, if it was
    // quick, complete) well before the timeout.
    server.resume();
    let searching = {
        let backend = NativeBackend::on(fs.clone());
        let root = root.clone();
        std::thread::spawn(move || {
            let started = std::time::Instant::now();
            let o = backend.grep(&GrepRequest::new("needle 39", &root));
            (o, started.elapsed())
        })
    };
    std::thread::sleep(std::time::Duration::from_millis(30));
    server.kill();
    let (mid, took) = searching.join().expect("no panic");
    assert!(
        took < std::time::Duration::from_secs(10),
        "the search took {took:?}"
    );
    if mid.status != dsh_search::Status::Exited(0) {
        let said = format!("{:?} {}", mid.status, mid.stderr.join("\n"));
        assert!(said.contains("sftp://root@127.0.0.1:"), "{said}");
    }
    // Back: the next call reconnects and answers as before.
    server.resume();
    let again = grep();
    let raw = |o: &dsh_search::Outcome<dsh_search::GrepResults>| {
        let mut out = Vec::new();
        o.results.write_raw(&mut out).unwrap();
        crate::util::rg::normalize_grep(&out)
    };
    assert_eq!(again.status, first.status);
    assert!(
        raw(&again) == raw(&first),
        "the same matches after the reconnection"
    );
    assert!(fs.stats().connects >= 2, "{:?}", fs.stats());
}

/// Each SFTP session of a workspace is a server process of its own on the
/// host, as many as the workspace asks for; when one of them ends, the
/// workspace's next calls reconnect and answer as before.
#[test]
fn sftp_sessions_are_server_processes() {
    use dsh_search::{GrepRequest, NativeBackend, SearchBackend, Status};
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    many_files(&root, 200);
    let raw = |o: &dsh_search::Outcome<dsh_search::GrepResults>| {
        let mut out = Vec::new();
        o.results.write_raw(&mut out).unwrap();
        crate::util::rg::normalize_grep(&out)
    };
    // (sessions asked for, server processes expected)
    for (asked, want) in [(None, 2), (Some(1), 1), (Some(3), 3)] {
        let server = sshd::Sshd::start();
        let mut builder = server.builder();
        if let Some(n) = asked {
            builder = builder.sessions(n);
        }
        let fs = std::sync::Arc::new(builder.build().unwrap());
        let backend = NativeBackend::on(fs.clone());
        let grep = || backend.grep(&GrepRequest::new("needle 39", &root));
        let first = grep();
        assert_eq!(
            first.status,
            Status::Exited(0),
            "{}",
            first.stderr.join("\n")
        );
        // The servers' processes, once those of an ended connection have
        // exited (a guard against a hang, not a timed assertion).
        let sftp = || -> Vec<u32> {
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            loop {
                let procs = server.session_processes();
                let sftp: Vec<u32> = procs
                    .iter()
                    .filter(|(_, cmd)| cmd.ends_with("@internal-sftp"))
                    .map(|&(pid, _)| pid)
                    .collect();
                if sftp.len() == want || std::time::Instant::now() > deadline {
                    assert_eq!(sftp.len(), want, "sessions {asked:?}: {procs:?}");
                    return sftp;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        };
        // One session's server ends (the last: the first serves the
        // engine's own requests, the others only work ahead).
        let last = *sftp().last().unwrap();
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &last.to_string()])
            .status()
            .unwrap();
        assert!(killed.success());
        // A call may still meet the ended session (and say so, naming the
        // host); the next one has reconnected.
        let mut outcomes = vec![grep()];
        if outcomes[0].status != Status::Exited(0) {
            let said = format!("{:?} {}", outcomes[0].status, outcomes[0].stderr.join("\n"));
            assert!(said.contains("sftp://root@127.0.0.1:"), "{said}");
            outcomes.push(grep());
        }
        let again = outcomes.last().unwrap();
        assert_eq!(
            again.status,
            Status::Exited(0),
            "{}",
            again.stderr.join("\n")
        );
        assert!(
            raw(again) == raw(&first),
            "the same matches after a session ended"
        );
        assert_eq!(
            fs.stats().connects,
            2,
            "sessions {asked:?}: {:?}",
            fs.stats()
        );
        sftp();
    }
}

/// A file deleted between the listing and the read: the read fails as on
/// the disk (`No such file or directory (os error 2)`), the connection
/// stays usable.
#[test]
fn sftp_file_deleted_after_listing() {
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    std::fs::write(root.join("gone.txt"), "x\n").unwrap();
    let fs = sshd::shared_fs();
    let dir = fs.open_dir(&root).unwrap();
    let mut listing = Listing::new();
    fs.list(&dir, &mut listing);
    assert_eq!(listing.len(), 1);
    std::fs::remove_file(root.join("gone.txt")).unwrap();
    let err = fs
        .open_at(&dir, &root, std::ffi::OsStr::new("gone.txt"))
        .unwrap_err();
    assert_eq!(err.to_string(), "No such file or directory (os error 2)");
    assert!(fs.metadata(&root).unwrap().kind.is_dir());
}

/// A permission-denied directory and file as uid 65534 (`nobody` logs in
/// with the same key): the native engine over SFTP prints what rg run as
/// uid 65534 on the disk prints.
#[test]
fn sftp_permission_denied_as_nobody() {
    use crate::util::rg;
    use crate::util::tree::{file, mode, Tree};
    let env = rg::env().expect("rg");
    let tree = Tree::build(&[
        file("ok.txt", "needle ok\n"),
        file("noread.txt", "needle secret\n"),
        mode("noread.txt", 0o000),
        file("nodir/inner.txt", "needle inner\n"),
        mode("nodir", 0o000),
        file("z.txt", "needle z\n"),
    ]);
    let fs = sshd::shared().builder().user("nobody").build().unwrap();
    let backend = dsh_search::NativeBackend::on(std::sync::Arc::new(fs));
    let mut failures = Vec::new();
    for call in [
        rg::Call::Glob {
            pattern: "*".into(),
            path: None,
        },
        rg::Call::Grep {
            pattern: "needle".into(),
            path: None,
            include: None,
        },
        rg::Call::Grep {
            pattern: "needle".into(),
            path: Some("nodir".into()),
            include: None,
        },
        rg::Call::Grep {
            pattern: "needle".into(),
            path: Some("noread.txt".into()),
            include: None,
        },
    ] {
        let expected = rg::run_rg_nobody(env, &call, tree.root());
        let actual = rg::run_backend(&backend, &call, tree.root());
        if let Some(d) = rg::diff(&call, &expected, &actual) {
            failures.push(format!("{call:?}\n{d}"));
        }
        assert!(
            expected.status.contains('2'),
            "rg as uid 65534 must hit the denial: {}",
            expected.status
        );
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The command line over SFTP: the same output as on the disk, and each
/// refusal one line with exit 2.
#[test]
fn sftp_command_line() {
    use crate::util::tree::{file, Tree};
    // Distinct whole-second mtimes (the tree builder's default): SFTP v3
    // carries whole seconds, so files written within one second would tie
    // over SFTP and fall back to the server's listing order, while the
    // local disk still tells them apart by nanoseconds (README, limits).
    let tree = Tree::build(&[file("a.txt", "needle a\n"), file("sub/b.txt", "needle b\n")]);
    let root = tree.root().canonicalize().unwrap();
    let server = sshd::shared();
    let bin = env!("CARGO_BIN_EXE_dsh-search");
    let run = |args: &[String]| {
        let out = std::process::Command::new(bin).args(args).output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let cwd = vec!["--cwd".to_string(), root.display().to_string()];
    let mut sftp = server.cli_args();
    sftp.extend(cwd.clone());
    for tool in [
        vec!["glob", "*"],
        vec!["grep", "needle"],
        vec!["read", "a.txt"],
    ] {
        let tool: Vec<String> = tool.into_iter().map(String::from).collect();
        let local = run(&[cwd.clone(), tool.clone()].concat());
        let remote = run(&[sftp.clone(), tool.clone()].concat());
        assert_eq!(remote.0, local.0, "{tool:?}: {}", remote.2);
        assert_eq!(remote.1, local.1, "{tool:?}");
    }
    let keys = sshd::keys();
    let refusals: Vec<(Vec<String>, &str)> = vec![
        (
            [
                sftp.clone(),
                vec!["--backend".into(), "rg".into(), "glob".into(), "*".into()],
            ]
            .concat(),
            "--backend rg searches the local disk only",
        ),
        (
            vec![
                "--fs".into(),
                format!("sftp://root@127.0.0.1:{}", server.port),
                "--identity".into(),
                keys.stranger_key.display().to_string(),
                "--known-hosts".into(),
                server.known_hosts.display().to_string(),
                "--cwd".into(),
                root.display().to_string(),
                "glob".into(),
                "*".into(),
            ],
            "the server refused the key",
        ),
        (
            [
                server.cli_args(),
                vec!["--cwd".into(), "relative".into(), "glob".into(), "*".into()],
            ]
            .concat(),
            "needs --cwd with the remote workdir as an absolute path",
        ),
        (
            vec![
                "--fs".into(),
                "sftp://host/path".into(),
                "glob".into(),
                "*".into(),
            ],
            "no path after the host",
        ),
        (
            vec![
                "--fs".into(),
                "sftp://host:0".into(),
                "glob".into(),
                "*".into(),
            ],
            "the port is not a number from 1 to 65535",
        ),
    ];
    for (args, expected) in refusals {
        let (code, _, stderr) = run(&args);
        assert_eq!(code, Some(2), "{args:?}: {stderr}");
        // One line (clap adds a usage hint under a parse error).
        let first = stderr.lines().next().unwrap_or("");
        assert!(first.contains(expected), "{args:?}: {stderr:?}");
        if !first.starts_with("error: invalid value") {
            assert_eq!(stderr.trim_end().lines().count(), 1, "{args:?}: {stderr:?}");
        }
    }
}

/// A server that stops answering: each call fails once the workspace's
/// timeout has passed (not later), and once the server answers again the
/// same connection serves the next call. A cancelled search returns at
/// once and leaves the connection usable.
#[test]
fn sftp_timeout_and_cancellation() {
    use dsh_search::{CancelToken, GrepRequest, NativeBackend, SearchBackend, Status};
    use std::time::{Duration, Instant};
    let server = sshd::Sshd::start();
    let fs = std::sync::Arc::new(
        server
            .builder()
            .timeout(Duration::from_secs(2))
            .build()
            .unwrap(),
    );
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    many_files(&root, 300);
    fs.connect().unwrap();
    server.signal_sessions("STOP");
    let started = Instant::now();
    let err = fs.metadata(&root).unwrap_err();
    let took = started.elapsed();
    server.signal_sessions("CONT");
    assert_eq!(err.kind(), std::io::ErrorKind::TimedOut, "{err}");
    assert!(err.to_string().contains("no answer within 2 s"), "{err}");
    assert!(took < Duration::from_secs(8), "took {took:?}");
    assert!(fs.metadata(&root).unwrap().kind.is_dir());
    // Cancelled mid-search.
    let backend = NativeBackend::on(fs.clone());
    let cancel = CancelToken::new();
    let mut req = GrepRequest::new("needle 1", &root);
    req.cancel = cancel.clone();
    let c = cancel.clone();
    let canceller = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(20));
        c.cancel();
    });
    let started = Instant::now();
    let o = backend.grep(&req);
    canceller.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "took {:?}",
        started.elapsed()
    );
    assert!(
        matches!(o.status, Status::Cancelled | Status::Exited(0)),
        "{:?}",
        o.status
    );
    let again = backend.grep(&GrepRequest::new("needle 1", &root));
    assert_eq!(again.status, Status::Exited(0), "{:?}", again.stderr);
    assert_eq!(
        fs.stats().connects,
        1,
        "one connection throughout: {:?}",
        fs.stats()
    );
}

/// One write at a time per workspace, not per process: while a write to a
/// stalled host waits for its answer, writes to another host's workspace
/// go through at once; the stalled write then completes once its host
/// answers again.
#[test]
fn sftp_writes_wait_for_their_own_host_only() {
    use std::time::{Duration, Instant};
    let (stalled, other) = (sshd::Sshd::start(), sshd::Sshd::start());
    let slow = std::sync::Arc::new(
        stalled
            .builder()
            .timeout(Duration::from_secs(10))
            .build()
            .unwrap(),
    );
    let fast = other.fs();
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    slow.connect().unwrap();
    fast.connect().unwrap();
    stalled.signal_sessions("STOP");
    let waiting = {
        let (slow, path) = (slow.clone(), root.join("slow.txt"));
        std::thread::spawn(move || {
            slow.write(&path, b"slow\n", &WriteGuard::None, &CancelToken::new())
        })
    };
    // The stalled write holds its workspace's lock by now.
    std::thread::sleep(Duration::from_millis(500));
    let started = Instant::now();
    for i in 0..3 {
        let path = root.join(format!("fast{i}.txt"));
        fast.write(&path, b"fast\n", &WriteGuard::None, &CancelToken::new())
            .unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"fast\n");
    }
    let took = started.elapsed();
    let stalled_still = !waiting.is_finished();
    stalled.signal_sessions("CONT");
    let written = waiting.join().unwrap();
    assert!(
        took < Duration::from_secs(5),
        "the other host's writes took {took:?}: {written:?}"
    );
    assert!(stalled_still, "the stalled host answered: {written:?}");
    assert!(written.is_ok(), "{written:?}");
    assert_eq!(std::fs::read(root.join("slow.txt")).unwrap(), b"slow\n");
}

/// Authentication by the SSH agent (no `--identity`): a real `ssh-agent`
/// holding the user's key, the command line over SFTP equal to the local
/// disk; and an empty agent, refused in one line with exit 2.
#[test]
fn sftp_agent_authentication() {
    use crate::util::tree::{file, Tree};
    let tree = Tree::build(&[file("a.txt", "needle a\n"), file("sub/b.txt", "needle b\n")]);
    let root = tree.root().canonicalize().unwrap();
    let server = sshd::shared();
    let keys = sshd::keys();
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("agent.sock");
    let mut agent = std::process::Command::new("ssh-agent")
        .arg("-D")
        .arg("-a")
        .arg(&sock)
        .stdout(std::process::Stdio::null())
        .spawn()
        .expect("ssh-agent (openssh-client) must be installed");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !sock.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "ssh-agent never listened"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let bin = env!("CARGO_BIN_EXE_dsh-search");
    let run = |args: &[String], agent_sock: Option<&Path>| {
        let mut cmd = std::process::Command::new(bin);
        cmd.args(args).env_remove("SSH_AUTH_SOCK");
        if let Some(s) = agent_sock {
            cmd.env("SSH_AUTH_SOCK", s);
        }
        let out = cmd.output().unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let remote: Vec<String> = vec![
        "--fs".into(),
        format!("sftp://root@127.0.0.1:{}", server.port),
        "--known-hosts".into(),
        server.known_hosts.display().to_string(),
        "--cwd".into(),
        root.display().to_string(),
    ];
    let local: Vec<String> = vec!["--cwd".into(), root.display().to_string()];
    let grep: Vec<String> = vec!["grep".into(), "needle".into()];

    // The agent holds no key yet: refused, in one line naming the agent.
    let (code, _, err) = run(&[remote.clone(), grep.clone()].concat(), Some(&sock));
    let failure = format!("{code:?} {err:?}");
    // With the user's key added, the same call as on the disk.
    let added = std::process::Command::new("ssh-add")
        .arg(&keys.user_key)
        .env("SSH_AUTH_SOCK", &sock)
        .output()
        .unwrap();
    let on_disk = run(&[local, grep.clone()].concat(), None);
    let over_agent = run(&[remote.clone(), grep.clone()].concat(), Some(&sock));
    // No agent at all: refused too.
    let (no_agent_code, _, no_agent_err) = run(&[remote, grep].concat(), None);
    let _ = agent.kill();
    let _ = agent.wait();

    assert_eq!(code, Some(2), "an empty agent: {failure}");
    assert!(
        err.contains("agent") && err.trim_end().lines().count() == 1,
        "an empty agent is named in one line: {err:?}"
    );
    assert!(added.status.success(), "ssh-add: {:?}", added);
    assert_eq!(over_agent.0, on_disk.0, "{}", over_agent.2);
    assert_eq!(over_agent.1, on_disk.1);
    assert!(
        over_agent.1.contains("Found 2 matches"),
        "{:?}",
        over_agent.1
    );
    assert_eq!(no_agent_code, Some(2), "{no_agent_err}");
    assert!(
        no_agent_err.contains("SSH_AUTH_SOCK") && no_agent_err.trim_end().lines().count() == 1,
        "{no_agent_err:?}"
    );
}

/// `dsh-search serve` over SFTP: the JSON-lines server takes the common
/// options, and its answers over SFTP are the ones on the disk.
#[test]
fn sftp_serve() {
    use crate::util::tree::{file, Tree};
    use std::io::{BufRead, Write};
    let tree = Tree::build(&[file("a.txt", "needle a\n"), file("sub/b.txt", "needle b\n")]);
    let root = tree.root().canonicalize().unwrap();
    let server = sshd::shared();
    let bin = env!("CARGO_BIN_EXE_dsh-search");
    let requests = [
        serde_json::json!({"id": 1, "tool": "glob", "arguments": {"pattern": "*"}}),
        serde_json::json!({"id": 2, "tool": "grep", "arguments": {"pattern": "needle"}}),
        serde_json::json!({"id": 3, "tool": "read", "arguments": {"file_path": "sub/b.txt"}}),
    ];
    let serve = |fs_args: Vec<String>| {
        let mut child = std::process::Command::new(bin)
            .args(fs_args)
            .arg("--cwd")
            .arg(&root)
            .arg("serve")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut answers = Vec::new();
        // One at a time: answers come as calls finish.
        for r in &requests {
            writeln!(stdin, "{r}").unwrap();
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            answers.push(serde_json::from_str::<serde_json::Value>(&line).unwrap());
        }
        drop(stdin);
        assert!(child.wait().unwrap().success());
        answers
    };
    let over_sftp = serve(server.cli_args());
    let on_disk = serve(Vec::new());
    assert_eq!(over_sftp, on_disk);
    assert_eq!(
        over_sftp[1]["result"]["content"],
        "Found 2 matches\n\na.txt\nLine 1: needle a\n\nsub/b.txt\nLine 1: needle b"
    );
}

/// A dangling symlink over SFTP: `write` through the command line answers
/// as on the disk (refused as not a regular file, exit 2), bare and with a
/// session, and neither the link's target nor a file in the link's place
/// appears; the seam refuses it too, and `canonicalize` fails for it as
/// `realpath(3)` does (OpenSSH's `REALPATH` resolves it to its target).
#[test]
fn sftp_write_refuses_a_dangling_symlink() {
    use dsh_search::fs::{LocalFs, WriteError};
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    let (w, elsewhere) = (root.join("w"), root.join("elsewhere"));
    std::fs::create_dir_all(&w).unwrap();
    std::fs::create_dir_all(&elsewhere).unwrap();
    let target = elsewhere.join("x.txt");
    std::os::unix::fs::symlink(&target, w.join("dang")).unwrap();
    let server = sshd::shared();
    let bin = env!("CARGO_BIN_EXE_dsh-search");
    let state = root.join("state");
    let run = |args: &[String]| {
        use std::io::Write;
        let mut child = std::process::Command::new(bin)
            .args(args)
            .env("HOME", &state)
            .env("XDG_STATE_HOME", &state)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A write refused before its content is read may exit first: the
        // pipe is then closed, and what counts is its answer.
        let _ = child.stdin.take().unwrap().write_all(b"P\n");
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let cwd = vec!["--cwd".to_string(), w.display().to_string()];
    let mut failures = Vec::new();
    for tool in [
        vec!["write", "dang"],
        vec!["--session", "s", "write", "dang"],
    ] {
        let tool: Vec<String> = tool.into_iter().map(String::from).collect();
        let local = run(&[cwd.clone(), tool.clone()].concat());
        let remote = run(&[server.cli_args(), cwd.clone(), tool.clone()].concat());
        assert_eq!(local.0, Some(2), "{tool:?}: the disk refuses: {}", local.1);
        assert!(local.1.contains("not a regular file"), "{}", local.1);
        if remote != local {
            failures.push(format!("{tool:?}: sftp {remote:?}, disk {local:?}"));
        }
        if target.exists() {
            failures.push(format!("{tool:?}: the link's target was created"));
            std::fs::remove_file(&target).unwrap();
        }
        if !std::fs::symlink_metadata(w.join("dang"))
            .unwrap()
            .file_type()
            .is_symlink()
        {
            failures.push(format!("{tool:?}: the link was replaced"));
            std::fs::remove_file(w.join("dang")).unwrap();
            std::os::unix::fs::symlink(&target, w.join("dang")).unwrap();
        }
    }
    let fs = sshd::shared_fs();
    let disk = LocalFs::new().canonicalize(&w.join("dang")).unwrap_err();
    match fs.canonicalize(&w.join("dang")) {
        Err(e) if e.to_string() == disk.to_string() => {}
        other => failures.push(format!("canonicalize: {other:?}, the disk: {disk}")),
    }
    for guard in [WriteGuard::None, WriteGuard::CreateIfAbsent] {
        match fs.write(&w.join("dang"), b"P\n", &guard, &CancelToken::new()) {
            Err(WriteError::NotRegular(_)) => {}
            other => failures.push(format!("seam write {guard:?}: {other:?}")),
        }
    }
    assert!(!target.exists(), "the link's target was created");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Host keys are checked as OpenSSH's `ssh` checks them: a table of
/// `known_hosts` variants, each given to `ssh -o StrictHostKeyChecking=yes`
/// and to the workspace against the same `sshd`; both accept, or both
/// refuse. The hashed lines are `ssh-keygen -H`'s own.
#[test]
fn sftp_known_hosts_as_ssh() {
    let keys = sshd::keys();
    let server = sshd::shared();
    let port = server.port;
    let td = tempfile::tempdir().unwrap();
    let public = |k: &Path| {
        let text = std::fs::read_to_string(k.with_extension("pub")).unwrap();
        text.trim().to_string()
    };
    let (key, other) = (public(&keys.host_key), public(&keys.other_host_key));
    let blob = key.split(' ').nth(1).unwrap().to_string();
    let ecdsa = {
        let k = td.path().join("ecdsa");
        let out = std::process::Command::new("ssh-keygen")
            .args(["-q", "-t", "ecdsa", "-N", "", "-f"])
            .arg(&k)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        public(&k)
    };
    let me = format!("[127.0.0.1]:{port}");
    // `ssh-keygen -H` of a one-line file.
    let hashed = |line: &str| {
        let f = td.path().join("to-hash");
        std::fs::write(&f, format!("{line}\n")).unwrap();
        let out = std::process::Command::new("ssh-keygen")
            .args(["-q", "-H", "-f"])
            .arg(&f)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(text.starts_with("|1|"), "{text}");
        text.trim().to_string()
    };
    let good_hash = hashed(&format!("{me} {key}"));
    let wrong_hash = hashed(&format!("[127.0.0.1]:{} {key}", port + 1));
    // One character of the hash changed.
    let mut broken = good_hash.clone().into_bytes();
    let at = good_hash.find(' ').unwrap() - 3;
    broken[at] = if broken[at] == b'A' { b'B' } else { b'A' };
    let broken = String::from_utf8(broken).unwrap();
    let cases: Vec<(&str, String)> = vec![
        ("plain", format!("{me} {key}")),
        ("plain among others", format!("a,{me},b {key}")),
        (
            "tabs between the fields",
            format!("{me}\tssh-ed25519\t{blob}"),
        ),
        ("comments and blanks", format!("# x\n\n   {me} {key}\n")),
        ("empty", String::new()),
        ("hashed", good_hash.clone()),
        ("hashed for another port", wrong_hash),
        ("hashed, the hash altered", broken),
        ("negated", format!("!{me},{me} {key}")),
        ("negated after", format!("{me},!{me} {key}")),
        ("negated other host", format!("!other,{me} {key}")),
        ("negated wildcard", format!("*,!127.0.0.* {key}")),
        (
            "revoked plus plain",
            format!("@revoked {me} {key}\n{me} {key}"),
        ),
        (
            "plain plus revoked wildcard",
            format!("{me} {key}\n@revoked * {key}"),
        ),
        (
            "revoked another key",
            format!("@revoked * {other}\n{me} {key}"),
        ),
        (
            "revoked hashed",
            format!("@revoked {good_hash}\n{me} {key}"),
        ),
        ("cert-authority only", format!("@cert-authority {me} {key}")),
        (
            "cert-authority plus plain",
            format!("@cert-authority * {other}\n{me} {key}"),
        ),
        ("unknown marker", format!("@trusted {me} {key}")),
        (
            "two markers",
            format!("@revoked @revoked {me} {key}\n{me} {key}"),
        ),
        ("wildcard star", format!("* {key}")),
        ("wildcard port", format!("[127.0.0.1]:* {key}")),
        ("wildcard question", format!("[127.0.0.?]:{port} {key}")),
        ("wildcard elsewhere", format!("[127.0.0.2]:* {key}")),
        ("no port", format!("127.0.0.1 {key}")),
        (
            "no port, revoked with it",
            format!("@revoked {me} {key}\n127.0.0.1 {key}"),
        ),
        (
            "no port, revoked without it",
            format!("@revoked 127.0.0.1 {key}\n127.0.0.1 {key}"),
        ),
        (
            "no port, changed with it",
            format!("{me} {other}\n127.0.0.1 {key}"),
        ),
        ("no port, another key", format!("127.0.0.1 {other}")),
        ("another type only", format!("{me} {ecdsa}")),
        (
            "another type, then right",
            format!("{me} {ecdsa}\n{me} {key}"),
        ),
        ("another port", format!("[127.0.0.1]:{} {key}", port + 1)),
        ("port 22 form", format!("[127.0.0.1]:22 {key}")),
        ("changed", format!("{me} {other}")),
        ("changed, then right", format!("{me} {other}\n{me} {key}")),
        ("type name not the key's", format!("{me} ssh-rsa {blob}")),
        ("key not base64", format!("{me} ssh-ed25519 !!!!")),
    ];
    let mut failures = Vec::new();
    for (name, text) in &cases {
        let file = td.path().join("known_hosts");
        std::fs::write(&file, text).unwrap();
        let ssh = std::process::Command::new("ssh")
            .args(["-F", "/dev/null", "-o", "StrictHostKeyChecking=yes"])
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", file.display()))
            .args([
                "-o",
                "GlobalKnownHostsFile=/dev/null",
                "-o",
                "BatchMode=yes",
                "-o",
                "CheckHostIP=no",
                "-o",
                "UpdateHostKeys=no",
                "-o",
                "IdentitiesOnly=yes",
                "-i",
            ])
            .arg(&keys.user_key)
            .args(["-p", &port.to_string(), "root@127.0.0.1", "true"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("ssh runs (scripts/test installs openssh-client)");
        let ssh_accepts = ssh.status.success();
        let ours = server
            .builder()
            .known_hosts(&file)
            .build()
            .unwrap()
            .connect();
        if ours.is_ok() != ssh_accepts {
            failures.push(format!(
                "{name}: ssh {} ({}), ours {ours:?}\n{text}",
                if ssh_accepts { "accepts" } else { "refuses" },
                String::from_utf8_lossy(&ssh.stderr).trim()
            ));
        }
        let said = ours.err().map(|e| e.to_string()).unwrap_or_default();
        let expected = match *name {
            "revoked plus plain" => {
                "host key revoked: the server's ssh-ed25519 key is marked @revoked in"
            }
            "cert-authority only" => "host certificates are not supported",
            "changed" => "host key changed",
            _ => "",
        };
        if !said.contains(expected) {
            failures.push(format!("{name}: {said:?} (expected {expected:?})"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Large remote files stream through the searcher in bounded pieces, as on
/// the disk: a grep of a walked tree holding a 256 MiB text file (its only
/// match on its last line) and a 1 TiB sparse file (rg stops at its first
/// NUL), a grep of the large file named explicitly, and a `read` of it,
/// each run by the command line over SFTP: the output equals rg's (the
/// disk's for `read`), and the process's peak resident memory stays far
/// under the file (held whole, it took the file's size, and the sparse
/// file never ended).
#[test]
fn sftp_large_files_in_bounded_memory() {
    use crate::util::rg;
    use std::io::Write;
    const SIZE: usize = 256 << 20;
    const PEAK_KB: u64 = 96 << 10;
    let env = rg::env().expect("rg");
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    {
        let line = format!("{}\n", "hay ".repeat(255));
        let mut f = std::io::BufWriter::new(std::fs::File::create(root.join("big.txt")).unwrap());
        for _ in 0..SIZE / line.len() {
            f.write_all(line.as_bytes()).unwrap();
        }
        f.write_all(b"the needle at the end\n").unwrap();
    }
    std::fs::create_dir(root.join("walk")).unwrap();
    std::fs::write(root.join("walk/a.txt"), "needle a\n").unwrap();
    let sparse = std::fs::File::create(root.join("walk/sparse.bin")).unwrap();
    sparse.set_len(1 << 40).unwrap();
    drop(sparse);
    let server = sshd::shared();
    let bin = env!("CARGO_BIN_EXE_dsh-search");
    // The peak resident memory (GNU time), the run bounded by `timeout`.
    let run = |args: &[std::ffi::OsString]| {
        let out = std::process::Command::new("/usr/bin/time")
            .args(["-f", "maxrss_kb=%M", "timeout", "-s", "KILL", "300", bin])
            .args(args)
            .current_dir(&root)
            .env("HOME", env.ctl.join("home"))
            .output()
            .expect("GNU time at /usr/bin/time (apt-get install time)");
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let kb: u64 = stderr
            .lines()
            .find_map(|l| l.strip_prefix("maxrss_kb="))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no maxrss in {stderr}"));
        let stderr: Vec<String> = stderr
            .lines()
            .filter(|l| !l.starts_with("maxrss_kb="))
            .map(String::from)
            .collect();
        let raw = rg::Raw {
            stdout: out.stdout,
            stderr,
            status: match out.status.code() {
                Some(c) => format!("exit {c}"),
                None => format!("{:?}", out.status),
            },
        };
        (raw, kb)
    };
    let sftp: Vec<std::ffi::OsString> = server.cli_args().into_iter().map(Into::into).collect();
    let mut failures = Vec::new();
    for call in [
        rg::Call::Grep {
            pattern: "needle".into(),
            path: None,
            include: None,
        },
        rg::Call::Grep {
            pattern: "needle".into(),
            path: Some("big.txt".into()),
            include: None,
        },
    ] {
        let expected = rg::run_rg(env, &call, &root);
        assert!(
            String::from_utf8_lossy(&expected.stdout).contains("the needle at the end"),
            "rg finds the match at the end"
        );
        let (actual, kb) = run(&[sftp.clone(), call.cli_argv("native", &root)].concat());
        if let Some(d) = rg::diff(&call, &expected, &actual) {
            failures.push(format!("{call:?}\n{d}"));
        }
        eprintln!("{call:?}: peak {kb} KiB");
        if kb > PEAK_KB {
            failures.push(format!("{call:?}: peak {kb} KiB for a {SIZE}-byte file"));
        }
    }
    // `read` shows a window of lines: the disk's answer, in bounded memory.
    let read: Vec<std::ffi::OsString> = ["--cwd", &root.display().to_string(), "read", "big.txt"]
        .iter()
        .map(Into::into)
        .collect();
    let (disk, _) = run(&read);
    let (remote, kb) = run(&[sftp.clone(), read].concat());
    if remote != disk {
        failures.push(format!(
            "read: {} / the disk: {}",
            remote.status, disk.status
        ));
    }
    eprintln!("read: peak {kb} KiB");
    if kb > PEAK_KB {
        failures.push(format!("read: peak {kb} KiB for a {SIZE}-byte file"));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A write's staged file is no workspace file: while another workspace
/// writes into a directory again and again, every glob and grep over SFTP
/// succeeds and lists no `.NAME.<hex>.dsh-staged` (one was seen in 81 of
/// 181 globs before).
#[test]
fn sftp_staged_files_never_listed() {
    use dsh_search::{GlobRequest, GrepRequest, NativeBackend, SearchBackend, Status};
    const CALLS: usize = 40;
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    std::fs::write(root.join("d/target.txt"), "needle\n").unwrap();
    std::fs::write(root.join("other.txt"), "needle\n").unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, target) = (stop.clone(), root.join("d/target.txt"));
        let fs = sshd::shared().fs();
        std::thread::spawn(move || {
            let mut writes = 0;
            // Content large enough that staging takes a few round trips.
            let content = "needle\n".repeat(20_000);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) && writes < 100_000 {
                fs.write(
                    &target,
                    content.as_bytes(),
                    &WriteGuard::None,
                    &CancelToken::new(),
                )
                .unwrap();
                writes += 1;
            }
            writes
        })
    };
    let backend = NativeBackend::on(sshd::shared_fs());
    let mut failures = Vec::new();
    for i in 0..CALLS {
        let (status, out, stderr) = if i % 2 == 0 {
            let o = backend.glob(&GlobRequest::new("*", &root));
            let mut out = Vec::new();
            o.results.write_raw(&mut out).unwrap();
            (o.status, out, o.stderr)
        } else {
            let o = backend.grep(&GrepRequest::new("needle", &root));
            let mut out = Vec::new();
            o.results.write_raw(&mut out).unwrap();
            (o.status, out, o.stderr)
        };
        let out = String::from_utf8_lossy(&out);
        if status != Status::Exited(0) || out.contains("dsh-staged") {
            failures.push(format!("call {i}: {status:?} {stderr:?}\n{out}"));
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let writes = writer.join().expect("the writer does not panic");
    assert!(writes > 10, "the writer ran ({writes} writes)");
    assert!(
        failures.is_empty(),
        "{} of {CALLS}:\n{}",
        failures.len(),
        failures[..failures.len().min(3)].join("\n")
    );
}

/// The staged files a killed writer left on the host are swept by the next
/// write into their directory, under the local disk's rules: only files of
/// the exact staged shape, regular, owned by the login, and untouched for
/// 15 minutes (a live writer's is modified by every `WRITE`); anything else
/// stays.
#[test]
fn sftp_stale_staged_files_are_swept() {
    use std::os::unix::fs::{chown, symlink};
    use std::time::{Duration, SystemTime};
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    let d = root.join("d");
    std::fs::create_dir(&d).unwrap();
    let old = SystemTime::now() - Duration::from_secs(2 * 3600);
    let make = |name: &str, age: SystemTime| {
        let f = std::fs::File::create(d.join(name)).unwrap();
        f.set_len(1 << 20).unwrap();
        f.set_modified(age).unwrap();
    };
    // (name, swept)
    let cases = [
        (".target.txt.0123456789abcdef.dsh-staged", true),
        (".other.rs.fedcba9876543210.dsh-staged", true),
        (".live.txt.00000000000000aa.dsh-staged", false),
        (".notes.dsh-staged", false),
        (".dir.00000000000000bb.dsh-staged", false),
        (".link.00000000000000cc.dsh-staged", false),
        (".foreign.00000000000000dd.dsh-staged", false),
    ];
    make(cases[0].0, old);
    make(cases[1].0, old);
    make(cases[2].0, SystemTime::now());
    make(cases[3].0, old);
    std::fs::create_dir(d.join(cases[4].0)).unwrap();
    symlink("target.txt", d.join(cases[5].0)).unwrap();
    make(cases[6].0, old);
    chown(d.join(cases[6].0), Some(65534), Some(65534)).unwrap();
    let fs = sshd::shared_fs();
    fs.write(
        &d.join("target.txt"),
        b"new\n",
        &WriteGuard::None,
        &CancelToken::new(),
    )
    .unwrap();
    let mut failures = Vec::new();
    for (name, swept) in cases {
        let there = std::fs::symlink_metadata(d.join(name)).is_ok();
        if there == swept {
            failures.push(format!(
                "{name}: {}",
                if there { "kept" } else { "removed" }
            ));
        }
    }
    assert_eq!(std::fs::read(d.join("target.txt")).unwrap(), b"new\n");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A connection lost mid-search is one error of the whole workspace,
/// reported once and first (`rg: sftp://…: connection lost`), not once
/// for every file and directory the search then meets (each of them
/// failing to reconnect to the killed server): the first line names the
/// host whole, and no other line mentions it.
#[test]
fn sftp_lost_connection_reported_once() {
    use dsh_search::{GlobRequest, GrepRequest, NativeBackend, SearchBackend, Status};
    use std::time::{Duration, Instant};
    let td = tempfile::tempdir().unwrap();
    let root = td.path().canonicalize().unwrap();
    many_files(&root, 3000);
    let mut failures = Vec::new();
    for grep in [true, false] {
        // A search that ended before the kill proves nothing (a loaded
        // machine may let a glob finish first): it is run again, at most
        // five times, and never counts as a pass.
        let mut outcome = None;
        for _ in 0..5 {
            let server = sshd::Sshd::start();
            let fs = std::sync::Arc::new(
                server
                    .builder()
                    .timeout(Duration::from_secs(10))
                    .build()
                    .unwrap(),
            );
            fs.connect().unwrap();
            let searching = {
                let backend = NativeBackend::on(fs.clone());
                let root = root.clone();
                std::thread::spawn(move || {
                    if grep {
                        let o = backend.grep(&GrepRequest::new("needle 39", &root));
                        (o.status, o.stderr)
                    } else {
                        let o = backend.glob(&GlobRequest::new("*", &root));
                        (o.status, o.stderr)
                    }
                })
            };
            // Killed once the search is under way.
            let started = fs.stats().requests;
            let deadline = Instant::now() + Duration::from_secs(10);
            while fs.stats().requests < started + 20
                && Instant::now() < deadline
                && !searching.is_finished()
            {
                std::thread::sleep(Duration::from_millis(1));
            }
            server.kill();
            let (status, stderr) = searching.join().expect("no panic");
            if status == Status::Exited(0) && stderr.is_empty() {
                continue;
            }
            outcome = Some((status, stderr, server.port));
            break;
        }
        let Some((status, stderr, port)) = outcome else {
            failures.push(format!(
                "{}: the search ended before the kill five times",
                if grep { "grep" } else { "glob" }
            ));
            continue;
        };
        let host = format!("rg: sftp://root@127.0.0.1:{port}: ");
        let mentions = stderr.iter().filter(|l| l.contains("sftp://")).count();
        if status != Status::Exited(2)
            || !stderr.first().is_some_and(|l| l.starts_with(&host))
            || mentions != 1
        {
            failures.push(format!(
                "{}: {status:?}, {mentions} lines name the host, first {:?} of {}",
                if grep { "grep" } else { "glob" },
                stderr.first(),
                stderr.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
