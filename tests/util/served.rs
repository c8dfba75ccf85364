//! A server process (`dsh-search serve` or `dsh-search mcp`) driven over
//! its pipes, line by line, as a client in another language would.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// How long a test waits for one answer before it calls the server hung.
/// Not a timing target: a hang guard, generous for a loaded 2-core machine.
pub const PATIENCE: Duration = Duration::from_secs(60);

pub struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
    /// While set, the stdout reader stops reading (after the line at hand):
    /// a client that does not read its answers.
    paused: Arc<(Mutex<bool>, Condvar)>,
}

/// What `/proc/PID/status` and `/proc/PID/fd` say of a process.
#[derive(Clone, Copy, Debug)]
pub struct Usage {
    /// Resident memory now, in KiB (`VmRSS`).
    pub rss_kib: u64,
    /// The resident memory's high-water mark, in KiB (`VmHWM`).
    pub hwm_kib: u64,
    pub threads: u64,
    /// Open file descriptors.
    pub fds: usize,
}

impl Served {
    /// `dsh-search <args>` with piped stdin, stdout and stderr.
    pub fn start(cwd: &Path, args: &[&str]) -> Served {
        Served::start_with(cwd, args, &[])
    }

    /// The same with extra environment variables.
    pub fn start_with(cwd: &Path, args: &[&str], env: &[(&str, &Path)]) -> Served {
        let mut cmd = Command::new(super::rg::dsh_search_exe());
        cmd.current_dir(cwd).args(args);
        for (k, v) in env {
            cmd.env(k, v);
        }
        Served::spawn(&mut cmd)
    }

    /// `cmd` (the binary on a workspace fixture, `Ws::cmd`) with piped
    /// stdin, stdout and stderr.
    pub fn spawn(cmd: &mut Command) -> Served {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("dsh-search starts");
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        let paused = Arc::new((Mutex::new(false), Condvar::new()));
        let gate = Arc::clone(&paused);
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
                let (lock, cv) = &*gate;
                let mut paused = lock.lock().unwrap();
                while *paused {
                    paused = cv.wait(paused).unwrap();
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let (mut err, sink) = (child.stderr.take().unwrap(), Arc::clone(&stderr));
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    return;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Served {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
            paused,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stop reading stdout (after the line being read, if any), so that the
    /// server's writes block once the pipe is full.
    pub fn pause_reading(&self) {
        *self.paused.0.lock().unwrap() = true;
    }

    /// Read stdout again.
    pub fn resume_reading(&self) {
        *self.paused.0.lock().unwrap() = false;
        self.paused.1.notify_all();
    }

    /// The server's stdin, for a writer thread of the test's own; `send`
    /// and `close` no longer apply.
    pub fn take_stdin(&mut self) -> ChildStdin {
        self.stdin.take().expect("stdin is open")
    }

    /// The server's memory, threads and open descriptors now.
    pub fn usage(&self) -> Usage {
        let pid = self.pid();
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        let field = |name: &str| -> u64 {
            let line = status
                .lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .unwrap_or_else(|| panic!("no {name} in /proc/{pid}/status"));
            let number = line.trim().trim_end_matches(" kB");
            number.parse().unwrap()
        };
        Usage {
            rss_kib: field("VmRSS"),
            hwm_kib: field("VmHWM"),
            threads: field("Threads"),
            fds: std::fs::read_dir(format!("/proc/{pid}/fd"))
                .unwrap()
                .count(),
        }
    }

    /// Write `bytes` and a newline.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Write `bytes` as they are (part of a line, say).
    pub fn send_part(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Write one JSON value as a line.
    pub fn send(&mut self, v: &Value) {
        self.send_raw(v.to_string().as_bytes());
    }

    /// The next stdout line, parsed; panics after [`PATIENCE`].
    pub fn recv(&self) -> Value {
        let line = self.recv_line();
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// The next stdout line as text.
    pub fn recv_line(&self) -> String {
        match self.lines.recv_timeout(PATIENCE) {
            Ok(line) => line,
            Err(e) => panic!(
                "no answer in {PATIENCE:?} ({e:?}); stderr:\n{}",
                self.stderr()
            ),
        }
    }

    /// Whether another stdout line comes within `wait`.
    pub fn quiet_for(&self, wait: Duration) -> Option<String> {
        self.lines.recv_timeout(wait).ok()
    }

    /// Give back the stdin [`Served::take_stdin`] took.
    pub fn give_stdin(&mut self, stdin: ChildStdin) {
        self.stdin = Some(stdin);
    }

    /// Close stdin (EOF for the server).
    pub fn close(&mut self) {
        self.stdin.take();
    }

    /// Wait for the process to exit; panics after [`PATIENCE`].
    pub fn wait(&mut self) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if start.elapsed() > PATIENCE {
                let _ = self.child.kill();
                panic!(
                    "the server did not exit in {PATIENCE:?}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Everything the server wrote on stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait until stderr contains `needle`; panics after [`PATIENCE`].
    pub fn wait_stderr(&self, needle: &str) -> String {
        let start = Instant::now();
        loop {
            let err = self.stderr();
            if err.contains(needle) {
                return err;
            }
            if start.elapsed() > PATIENCE {
                panic!("stderr never said {needle:?}:\n{err}");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Send `signal` to the server.
    #[cfg(unix)]
    pub fn signal(&self, signal: rustix::process::Signal) {
        let pid = rustix::process::Pid::from_raw(self.pid() as i32).unwrap();
        rustix::process::kill_process(pid, signal).unwrap();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
