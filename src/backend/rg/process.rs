//! Running one rg process: spawn, drain, stop, reap.
//!
//! The spawn reproduces the seed's subprocess seam (`seed-reference.md`
//! §1.4): no shell, stdin `/dev/null`, cwd = the workdir, the parent
//! environment minus secrets and `DSH_*`, its own process group so a stop
//! reaches everything it started. stdout and stderr are drained by one
//! thread each so neither pipe can fill and stall rg (ripgrep
//! `cli/src/process.rs: CommandReader` does the same for `--pre`).
//!
//! stdout is bounded by the request's budget; stderr is kept whole (the
//! seed's seam keeps a 65,536-byte tail, `seed-reference.md` §1.4; capping
//! it is the tool layer's choice, which sees the lines).
//!
//! A normal exit waits for both pipes to close: rg starts no processes of
//! its own (`--no-config` keeps `--pre` out), so its exit closes them. A
//! stop kills the whole process group, so nothing can hold them open.
//!
//! # Platform behavior
//!
//! On Unix, rg leads a process group of its own: the terminal's signals
//! do not reach it, and a stop sends SIGTERM to the group, then SIGKILL
//! after the grace period (`graceMs`). A death by signal is reported with
//! the signal's name.
//!
//! On Windows there is no group to kill and no SIGTERM: a stop kills rg
//! alone, at once, and the grace period is not used. A process rg started
//! would survive that, but rg starts none for these invocations, so the
//! pipes still close when it dies. Every exit has a code there, so a run
//! is never reported as signaled. See [`isolate`], [`stop`] and
//! [`exit_status`].

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Duration;
#[cfg(unix)]
use std::time::Instant;

#[cfg(unix)]
use rustix::process::{kill_process_group, Pid, Signal};

use super::command::RgCommand;
use crate::cancel::CancelToken;
use crate::outcome::Status;

/// How often the cancel token, the budget flag and the child are checked
/// while rg runs with its stdout open. The end of stdout (rg's exit, or the
/// budget) wakes the wait at once: a plain sleep of this length between
/// checks made every run last a multiple of it (a 100-file search, rg's
/// 5 ms, took 5.4 or 10.6 ms, whichever side of the first tick it ended).
const POLL: Duration = Duration::from_millis(5);

/// The check interval once stdout has ended: rg is exiting, and is reaped
/// within microseconds.
const REAP_POLL: Duration = Duration::from_micros(50);

/// The read size of the stdout and stderr drains.
const DRAIN_READ_SIZE: usize = 64 * 1024;

/// What one run produced.
pub(crate) struct Run {
    pub(crate) status: Status,
    /// stdout, cut after its last `\n` when the run was stopped (the tail of
    /// a killed stream is an incomplete line) or at the budget.
    pub(crate) stdout: Vec<u8>,
    /// stderr lines without their `\n`, decoded lossily.
    pub(crate) stderr: Vec<String>,
}

impl Run {
    fn failed(reason: String) -> Run {
        Run {
            status: Status::LaunchFailed(reason),
            stdout: Vec::new(),
            stderr: Vec::new(),
        }
    }
}

/// Why we stopped rg, when we did.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stop {
    Cancelled,
    OverBudget,
}

/// Run `cmd` to completion, or until `cancel` is set or stdout exceeds
/// `budget` bytes; then [`stop`] it (SIGTERM to its process group, SIGKILL
/// after `grace`, on Unix). The child is always reaped before this returns.
pub(crate) fn run(
    cmd: &RgCommand,
    env: &[(OsString, OsString)],
    cancel: &CancelToken,
    budget: Option<u64>,
    grace: Duration,
) -> Run {
    // The seed checks the signal before spawning (§2.4 step 1).
    if cancel.is_cancelled() {
        return Run {
            status: Status::Cancelled,
            stdout: Vec::new(),
            stderr: Vec::new(),
        };
    }
    let mut child = match spawn(cmd, env) {
        Ok(child) => child,
        Err(reason) => return Run::failed(reason),
    };
    let over = Arc::new(AtomicBool::new(false));
    let out = child.stdout.take().expect("stdout is piped");
    let err = child.stderr.take().expect("stderr is piped");
    let (ended, stdout_ended) = mpsc::channel();
    let out_thread = drain_stdout(out, budget, Arc::clone(&over), ended);
    let err_thread = drain(err);

    let mut stopped = None;
    let mut stdout_open = true;
    let exit = loop {
        if cancel.is_cancelled() {
            stopped = Some(Stop::Cancelled);
        } else if over.load(Ordering::Acquire) {
            stopped = Some(Stop::OverBudget);
        }
        if stopped.is_some() {
            break stop(&mut child, grace);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Ok(status),
            Ok(None) if stdout_open => {
                // Woken by the end of stdout (a message, or the drain gone),
                // else after POLL to look at the token again.
                if !matches!(
                    stdout_ended.recv_timeout(POLL),
                    Err(RecvTimeoutError::Timeout)
                ) {
                    stdout_open = false;
                }
            }
            Ok(None) => thread::sleep(REAP_POLL),
            Err(e) => break Err(e),
        }
    };
    // rg spawns nothing, so once it is reaped both pipes are at EOF.
    let mut stdout = out_thread.join().expect("stdout drain does not panic");
    let stderr = err_thread.join().expect("stderr drain does not panic");
    let stderr = split_lines(&stderr);

    // A cancellation that lands after rg finished still wins, as in the
    // seed (§2.4 step 5: checked before any exit code).
    if stopped.is_none() && cancel.is_cancelled() {
        stopped = Some(Stop::Cancelled);
    }
    if stopped.is_none() && over.load(Ordering::Acquire) {
        stopped = Some(Stop::OverBudget);
    }
    let status = match (stopped, exit) {
        (Some(stop), _) => {
            cut_to_budget(&mut stdout, budget);
            match stop {
                Stop::Cancelled => Status::Cancelled,
                Stop::OverBudget => Status::OverBudget,
            }
        }
        (None, Ok(status)) if status.code() == Some(127) && exec_failed(&stderr).is_some() => {
            let err = std::io::Error::from_raw_os_error(exec_failed(&stderr).unwrap_or(0));
            Status::LaunchFailed(format!("could not start `{cmd}`: {err}"))
        }
        (None, Ok(status)) => exit_status(status),
        (None, Err(e)) => Status::LaunchFailed(format!("could not wait for `{cmd}`: {e}")),
    };
    Run {
        status,
        stdout,
        stderr,
    }
}

/// The OS error the trampoline could not exec rg with, from its one stderr
/// line (`orphan::EXEC_FAILED`).
fn exec_failed(stderr: &[String]) -> Option<i32> {
    match stderr {
        [line] => line.strip_prefix(super::orphan::EXEC_FAILED)?.parse().ok(),
        _ => None,
    }
}

/// Start `cmd` with the scrubbed environment, and `env` set on top.
fn spawn(cmd: &RgCommand, env: &[(OsString, OsString)]) -> Result<Child, String> {
    // Through the trampoline where there is one, so rg dies with us.
    let mut command = super::orphan::command(&cmd.program);
    command
        .args(cmd.os_args())
        .current_dir(&cmd.cwd)
        .env_clear()
        .envs(scrubbed_env(std::env::vars_os()))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    isolate(&mut command);
    command.spawn().map_err(|e| {
        // std reports a missing cwd and a missing binary with the same
        // ENOENT; name the likelier culprit.
        let why = if !cmd.cwd.is_dir() {
            format!("the workdir {} is not a directory", cmd.cwd.display())
        } else {
            e.to_string()
        };
        format!("could not start `{cmd}`: {why}")
    })
}

/// The parent environment without the names the seed's subprocess seam
/// drops (`seed-reference.md` §1.4): any name matching
/// `/KEY|PASSWORD|SECRET|TOKEN/i`, and any name starting with `DSH_`
/// (case-insensitively). Everything else, `RIPGREP_CONFIG_PATH` included,
/// is kept; `--no-config` neutralizes that one.
pub(crate) fn scrubbed_env(
    vars: impl Iterator<Item = (OsString, OsString)>,
) -> Vec<(OsString, OsString)> {
    vars.filter(|(name, _)| keep_env(name)).collect()
}

fn keep_env(name: &OsStr) -> bool {
    let upper = name.to_string_lossy().to_ascii_uppercase();
    let secret = ["KEY", "PASSWORD", "SECRET", "TOKEN"]
        .iter()
        .any(|word| upper.contains(word));
    !secret && !upper.starts_with("DSH_")
}

/// Read stdout until EOF or until more than `budget` bytes arrived; then
/// raise `over` and return, closing the pipe (rg then dies of EPIPE/SIGPIPE
/// if our signal has not reached it yet). Either way `ended` is told (or
/// dropped), which wakes [`run`]'s wait.
fn drain_stdout(
    mut pipe: impl Read + Send + 'static,
    budget: Option<u64>,
    over: Arc<AtomicBool>,
    ended: mpsc::Sender<()>,
) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let mut chunk = vec![0; DRAIN_READ_SIZE];
        loop {
            match pipe.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
            if budget.is_some_and(|max| buf.len() as u64 > max) {
                over.store(true, Ordering::Release);
                break;
            }
        }
        // The receiver may be gone (the wait ended first): nothing to wake.
        let _ = ended.send(());
        buf
    })
}

fn drain(mut pipe: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        // An error ends the stream; what was read is kept.
        let _ = pipe.read_to_end(&mut buf);
        buf
    })
}

/// Keep rg out of the signals meant for us: it only stops when [`stop`]
/// stops it.
///
/// # Platform behavior
///
/// On Unix, a process group of its own (terminal signals go to the
/// foreground group, ours). On Windows, a new console process group
/// (`CREATE_NEW_PROCESS_GROUP`), which has Ctrl-C disabled; a console's
/// Ctrl-Break still reaches it. Elsewhere, nothing.
fn isolate(command: &mut Command) {
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt as _;
        command.process_group(0);
    }

    #[cfg(windows)]
    {
        use std::os::windows::process::CommandExt as _;
        // See: https://learn.microsoft.com/windows/win32/procthread/process-creation-flags
        const CREATE_NEW_PROCESS_GROUP: u32 = 0x0000_0200;
        command.creation_flags(CREATE_NEW_PROCESS_GROUP);
    }
    #[cfg(not(any(unix, windows)))]
    let _ = command;
}

/// Stop rg and reap it.
///
/// # Platform behavior
///
/// On Unix: SIGTERM to the process group, wait up to `grace`, then SIGKILL
/// the group. Elsewhere: kill the child at once (`Child::kill`, which is
/// `TerminateProcess` on Windows); `grace` is not used and nothing but rg
/// itself is killed.
fn stop(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    #[cfg(unix)]
    {
        stop_group(child, grace)
    }
    #[cfg(not(unix))]
    {
        let _ = grace;
        // An error means rg is already gone; wait reaps it either way.
        let _ = child.kill();
        child.wait()
    }
}

/// SIGTERM the process group, wait up to `grace`, then SIGKILL it; reap.
#[cfg(unix)]
fn stop_group(child: &mut Child, grace: Duration) -> std::io::Result<ExitStatus> {
    let pid = Pid::from_child(child);
    // ESRCH (already gone) is fine: try_wait below reaps it.
    let _ = kill_process_group(pid, Signal::TERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            // The leader is gone; anything left in its group (which keeps
            // the group id reserved) would hold our pipes open, so it goes
            // too. With no member left this is a harmless ESRCH.
            let _ = kill_process_group(pid, Signal::KILL);
            return Ok(status);
        }
        thread::sleep(POLL);
    }
    let _ = kill_process_group(pid, Signal::KILL);
    child.wait()
}

/// Keep only whole lines within the budget: a stopped stream ends in an
/// incomplete line, and bytes past the budget are not part of the result.
fn cut_to_budget(stdout: &mut Vec<u8>, budget: Option<u64>) {
    if let Some(max) = budget {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        stdout.truncate(max);
    }
    let keep = stdout
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    stdout.truncate(keep);
}

/// rg's exit code, or the signal it died of.
///
/// # Platform behavior
///
/// Only Unix has deaths without a code; elsewhere (Windows) every status
/// has one, a kill included (`TerminateProcess` gives exit code 1).
fn exit_status(status: ExitStatus) -> Status {
    match status.code() {
        Some(code) => Status::Exited(code),
        None => Status::Signaled(death_signal(status).map(str::to_string)),
    }
}

/// The name of the signal that ended `status`, when it is one rg can die of.
fn death_signal(status: ExitStatus) -> Option<&'static str> {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt as _;
        status.signal().and_then(signal_name)
    }
    #[cfg(not(unix))]
    {
        let _ = status;
        None
    }
}

/// The conventional name of a signal number, for the ones rg can die of.
#[cfg(unix)]
fn signal_name(raw: i32) -> Option<&'static str> {
    [
        (Signal::HUP, "SIGHUP"),
        (Signal::INT, "SIGINT"),
        (Signal::QUIT, "SIGQUIT"),
        (Signal::ILL, "SIGILL"),
        (Signal::TRAP, "SIGTRAP"),
        (Signal::ABORT, "SIGABRT"),
        (Signal::BUS, "SIGBUS"),
        (Signal::FPE, "SIGFPE"),
        (Signal::KILL, "SIGKILL"),
        (Signal::USR1, "SIGUSR1"),
        (Signal::SEGV, "SIGSEGV"),
        (Signal::USR2, "SIGUSR2"),
        (Signal::PIPE, "SIGPIPE"),
        (Signal::ALARM, "SIGALRM"),
        (Signal::TERM, "SIGTERM"),
        (Signal::XCPU, "SIGXCPU"),
        (Signal::XFSZ, "SIGXFSZ"),
        (Signal::SYS, "SIGSYS"),
    ]
    .into_iter()
    .find(|(sig, _)| sig.as_raw() == raw)
    .map(|(_, name)| name)
}

/// stderr → lines without `\n`, lossily decoded; a last line without a
/// terminator is kept.
fn split_lines(bytes: &[u8]) -> Vec<String> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == b'\n')
        .map(|l| String::from_utf8_lossy(l).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(vars: &[(&str, &str)]) -> Vec<String> {
        let vars = vars
            .iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        scrubbed_env(vars)
            .into_iter()
            .map(|(k, _)| k.into_string().unwrap())
            .collect()
    }

    #[test]
    fn env_scrub_matches_the_seed_seam() {
        let kept = names(&[
            ("PATH", "/bin"),
            ("HOME", "/h"),
            ("RIPGREP_CONFIG_PATH", "/c"),
            ("LC_ALL", "C"),
            ("https_proxy", "p"),
            ("OPENAI_API_KEY", "x"),
            ("monkey", "x"),
            ("db_password", "x"),
            ("MySecret", "x"),
            ("GH_TOKEN", "x"),
            ("DSH_SEARCH_RG", "x"),
            ("dsh_other", "x"),
            ("XDSH_KEEP", "x"),
        ]);
        assert_eq!(
            kept,
            [
                "PATH",
                "HOME",
                "RIPGREP_CONFIG_PATH",
                "LC_ALL",
                "https_proxy",
                "XDSH_KEEP"
            ]
        );
    }

    #[test]
    fn stderr_lines() {
        assert_eq!(split_lines(b""), Vec::<String>::new());
        assert_eq!(split_lines(b"a\nb\n"), ["a", "b"]);
        assert_eq!(split_lines(b"a\n\nb"), ["a", "", "b"]);
        assert_eq!(split_lines(b"\xff\n"), ["\u{fffd}"]);
    }

    #[test]
    fn cut_keeps_whole_lines_within_budget() {
        let mut v = b"ab\ncd\nef".to_vec();
        cut_to_budget(&mut v, Some(5));
        assert_eq!(v, b"ab\n");
        let mut v = b"ab\ncd\nef".to_vec();
        cut_to_budget(&mut v, None);
        assert_eq!(v, b"ab\ncd\n");
    }

    #[cfg(unix)]
    #[test]
    fn signal_names() {
        assert_eq!(signal_name(Signal::KILL.as_raw()), Some("SIGKILL"));
        assert_eq!(signal_name(Signal::TERM.as_raw()), Some("SIGTERM"));
        assert_eq!(signal_name(0), None);
    }
}
