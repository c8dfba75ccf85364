//! Both servers stop when told to, whatever their pipes do
//! (`contract.md` §12 "stderr"): SIGTERM with a stderr whose reader is gone
//! or that nobody reads (a full pipe), and a client killed with calls in
//! flight (every pipe closed at once). A server's log is written off the
//! call path, so none of these may block its stop or its answers.
//!
//! Each case runs on `serve` and on `mcp`, as a real process over real
//! pipes; a server still alive after [`STOP`] is killed and fails the case.

use std::io::Write;
use std::os::fd::OwnedFd;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use rustix::process::{kill_process, Pid, Signal};
use serde_json::json;

use crate::util::ws::Ws;

/// How long a server may take to stop. Its own bound is 5 s after a
/// signal (`SIGNAL_DRAIN`); a hang is forever, so the margin costs nothing.
const STOP: Duration = Duration::from_secs(20);

/// What the server's stderr is.
#[derive(Clone, Copy, Debug)]
enum Stderr {
    /// A pipe whose read end is closed: every write fails (EPIPE).
    Closed,
    /// A pipe filled to capacity that nobody reads: every write blocks.
    Full,
}

/// A pipe: (read end, write end), closed on exec: a server started
/// meanwhile by another test must not hold an end of it.
fn pipe() -> (OwnedFd, OwnedFd) {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).unwrap()
}

/// A pipe whose buffer is full, written without blocking and handed back
/// blocking (the flag is the open file's, which the child shares).
fn full_pipe() -> (OwnedFd, OwnedFd) {
    use rustix::fs::{fcntl_getfl, fcntl_setfl, OFlags};
    let (r, w) = pipe();
    let flags = fcntl_getfl(&w).unwrap();
    fcntl_setfl(&w, flags | OFlags::NONBLOCK).unwrap();
    let chunk = [b'x'; 4096];
    loop {
        match rustix::io::write(&w, &chunk) {
            Ok(_) => {}
            Err(rustix::io::Errno::AGAIN) => break,
            Err(e) => panic!("filling the pipe: {e}"),
        }
    }
    fcntl_setfl(&w, flags).unwrap();
    (r, w)
}

/// `dsh-search <server>` on `ws` with stdin a pipe (returned), `stdout`,
/// and stderr as `stderr` says. The pipe end kept for a full
/// stderr is returned too, to be held until the case ends.
fn start(
    ws: &Ws,
    server: &str,
    stdout: Stdio,
    stderr: Stderr,
) -> (Child, std::process::ChildStdin, OwnedFd) {
    let (r, w) = match stderr {
        Stderr::Closed => pipe(),
        Stderr::Full => full_pipe(),
    };
    let kept = match stderr {
        Stderr::Closed => {
            drop(r);
            // Something must be returned: a descriptor of no consequence.
            rustix::io::dup(&w).unwrap()
        }
        Stderr::Full => r,
    };
    let mut child = ws
        .bin()
        .arg(server)
        .stdin(Stdio::piped())
        .stdout(stdout)
        .stderr(Stdio::from(w))
        .spawn()
        .expect("dsh-search starts");
    let stdin = child.stdin.take().unwrap();
    (child, stdin, kept)
}

/// Wait for `child` to exit, at most [`STOP`]; killed and `None` past it.
fn wait_stop(child: &mut Child) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + STOP;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The lines a client of `server` sends to start `n` calls (after the
/// handshake, for MCP), each a grep of the tree.
fn calls(server: &str, n: usize) -> String {
    let mut lines = String::new();
    if server == "mcp" {
        for msg in [
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "stop-test", "version": "1"}}}),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        ] {
            lines += &format!("{msg}\n");
        }
    }
    for id in 0..n {
        let args = json!({"pattern": "needle", "output_mode": "content"});
        let msg = if server == "mcp" {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": "grep", "arguments": args}})
        } else {
            json!({"id": id, "tool": "grep", "arguments": args})
        };
        lines += &format!("{msg}\n");
    }
    lines
}

const SERVERS: [&str; 2] = ["serve", "mcp"];

#[test]
fn sigterm_stops_a_server_whose_stderr_is_closed_or_unread() {
    // stdout discarded, or a full pipe nobody reads (the answers' writes
    // block as well).
    for server in SERVERS {
        for (stderr, stdout_full) in [
            (Stderr::Closed, false),
            (Stderr::Full, false),
            (Stderr::Full, true),
        ] {
            let ws = Ws::needles(20);
            let (stdout, _out) = if stdout_full {
                let (r, w) = full_pipe();
                (Stdio::from(w), Some(r))
            } else {
                (Stdio::null(), None)
            };
            let (mut child, mut stdin, _kept) = start(&ws, server, stdout, stderr);
            // Calls first, so that the server logs and answers while its
            // stderr cannot take a line.
            stdin.write_all(calls(server, 8).as_bytes()).unwrap();
            stdin.flush().unwrap();
            std::thread::sleep(Duration::from_millis(300));
            let pid = Pid::from_child(&child);
            kill_process(pid, Signal::TERM).unwrap();
            let status = wait_stop(&mut child);
            assert!(
                status.is_some(),
                "{server}, stderr {stderr:?}, stdout full {stdout_full}: still running {STOP:?} after SIGTERM"
            );
            assert_eq!(
                status.unwrap().code(),
                Some(0),
                "{server}, stderr {stderr:?}, stdout full {stdout_full}"
            );
            drop(stdin);
        }
    }
}

#[test]
fn a_server_outlives_no_killed_client() {
    // The client is gone at once: stdin at EOF, stdout and stderr closed,
    // with calls in flight whose answers cannot be written.
    for server in SERVERS {
        for stderr in [Stderr::Closed, Stderr::Full] {
            let ws = Ws::needles(200);
            let (out_r, out_w) = pipe();
            let (mut child, mut stdin, kept) = start(&ws, server, Stdio::from(out_w), stderr);
            // The answers' writes fail (EPIPE), and the server logs that.
            drop(out_r);
            stdin.write_all(calls(server, 32).as_bytes()).unwrap();
            std::thread::sleep(Duration::from_millis(300));
            drop(stdin);
            let status = wait_stop(&mut child);
            assert!(
                status.is_some(),
                "{server}, stderr {stderr:?}: still running {STOP:?} after its client went"
            );
            drop(kept);
        }
    }
}
