//! CPU-bound file work stops at a signal: `edit`'s counting and replacing
//! and `read`'s decoding of a large generated file, through the binary.
//!
//! No timed target: each case first runs uncancelled to learn how long the
//! work takes on this machine and build, then runs again and is signalled a
//! third of the way in; it must end as aborted, change nothing, and exit
//! within half the whole work's time (at least 100 ms), before the two
//! thirds the work would still need.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};

/// 48 MiB of short lines, each with four `w`s: a count of `w` is millions
/// of occurrences, seconds of work in a debug build.
fn big_file(path: &Path) {
    let line = "hello world wide web hello world wide web\n";
    let n = (48 << 20) / line.len();
    std::fs::write(path, line.repeat(n)).unwrap();
}

fn start(cwd: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The exit code and the output (stdout and stderr) of `child`.
fn finish(child: Child) -> (Option<i32>, String) {
    let o = child.wait_with_output().unwrap();
    let text =
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    (o.status.code(), text)
}

#[test]
fn edit_and_read_stop_at_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().canonicalize().unwrap();
    let file = cwd.join("big.txt");
    big_file(&file);
    let original = std::fs::read(&file).unwrap();
    let cases: [(&str, &[&str], &str); 3] = [
        (
            "edit, ambiguous (counting only)",
            &["edit", "big.txt", "--old", "w", "--new", "X"],
            "edit aborted",
        ),
        (
            "edit --replace-all (counting and replacing)",
            &[
                "edit",
                "big.txt",
                "--old",
                "w",
                "--new",
                "X",
                "--replace-all",
            ],
            "edit aborted",
        ),
        (
            "read of the last lines (decoding)",
            &["read", "big.txt", "--offset", "1000000", "--limit", "1"],
            "read aborted",
        ),
    ];
    for (name, args, aborted) in cases {
        // Uncancelled: how long the whole work takes here. The replacing
        // edit writes the file; put it back.
        let t = Instant::now();
        let (code, out) = finish(start(&cwd, args));
        let whole = t.elapsed();
        assert!(!out.contains("aborted"), "{name}: {out}");
        if code == Some(0) && args[0] == "edit" {
            std::fs::write(&file, &original).unwrap();
        } else {
            assert!(code.is_some(), "{name}: {out}");
        }

        let t = Instant::now();
        let child = start(&cwd, args);
        std::thread::sleep(whole / 3);
        let signalled = Instant::now();
        kill_process(Pid::from_raw(child.id() as i32).unwrap(), Signal::TERM).unwrap();
        let (code, out) = finish(child);
        let after = signalled.elapsed();
        assert_eq!(code, Some(2), "{name}: {out}");
        assert!(out.contains(aborted), "{name}: {out}");
        assert!(
            std::fs::read(&file).unwrap() == original,
            "{name}: the file changed"
        );
        assert!(
            after < (whole / 2).max(Duration::from_millis(100)),
            "{name}: ended {after:?} after SIGTERM; the whole work takes {whole:?} (started {:?} before)",
            signalled - t
        );
    }
}
