//! rg dies with the process that started it, even one killed outright.
//!
//! rg runs in a process group of its own (`process.rs`), out of reach of a
//! signal to ours, so a `kill -9` of this process would otherwise leave it
//! running, reparented, for as long as its input lasts: forever on a FIFO.
//! On Linux, Android and FreeBSD the kernel can signal a child when its
//! parent dies (`PR_SET_PDEATHSIG`, `PROC_PDEATHSIG_CTL`), but only the child
//! can ask for it, between fork and exec. The crate has no `unsafe` code, so
//! there is no `pre_exec` hook: the child first runs this binary again as a
//! trampoline ([`intercept`]), which asks for SIGKILL on its parent's death
//! and then `exec`s rg in place. exec keeps the pid, the process group, the
//! descriptors, the directory, the environment and the death signal, so
//! rg's output and exit status are exactly those of rg started directly.
//!
//! The death signal belongs to the parent *thread* that spawned the child,
//! not the process. That is safe here: `process::run` returns only after rg
//! is reaped, so the spawning thread outlives rg whenever this process does.
//!
//! A program that embeds the library gets this by calling [`intercept`]
//! first in `main` (the `dsh-search` binary does, in `cli::run`); without
//! it, rg is spawned directly and a killed embedder can leave it behind.
//!
//! # Platform behavior
//!
//! Elsewhere (macOS, Windows) there is no such signal: an rg whose parent
//! is killed outright (SIGKILL, `TerminateProcess`) runs on until its input
//! ends. A stop, a timeout and the signals the CLI and the servers handle
//! still end it (`process.rs: stop`).

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
use std::ffi::OsString;
use std::process::Command;
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
use std::sync::atomic::{AtomicBool, Ordering};

/// The first argument that makes this binary the trampoline.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
const ARG: &str = "__dsh-search-rg-trampoline";

/// What the trampoline prints on stderr, then the OS error number, when rg
/// cannot be executed (exit status 127): `process.rs` turns it back into
/// the launch failure a direct spawn would have reported.
pub(crate) const EXEC_FAILED: &str = "\0dsh-search-trampoline: exec failed: ";

/// Whether this process answers [`ARG`] (set by [`intercept`]).
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
static ENABLED: AtomicBool = AtomicBool::new(false);

/// Call first in `main`. When this process was started as the trampoline,
/// this sets the death signal, checks the parent is still the one that
/// started it and `exec`s rg: it never returns then (it exits 127 with
/// [`EXEC_FAILED`] when rg cannot be executed, 1 when the parent died
/// already). Otherwise it returns, and later rg processes of this process
/// are started through the trampoline.
pub fn intercept() {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    {
        let mut args = std::env::args_os().skip(1);
        if args.next().is_some_and(|a| a == ARG) {
            trampoline(args.collect());
        }
        ENABLED.store(true, Ordering::Release);
    }
}

/// `<parent pid> <program> <args…>`: never returns.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn trampoline(args: Vec<OsString>) -> ! {
    use std::io::Write as _;
    use std::os::unix::process::CommandExt as _;
    let (Some(parent), Some(program)) = (args.first(), args.get(1)) else {
        std::process::exit(2)
    };
    let parent: Option<i32> = parent.to_str().and_then(|p| p.parse().ok());
    let signal = Some(rustix::process::Signal::KILL);
    if rustix::process::set_parent_process_death_signal(signal).is_err() {
        std::process::exit(1)
    }
    // A parent that died between the fork and the prctl signals nobody: we
    // have been reparented already.
    if rustix::process::getppid().map(|p| p.as_raw_nonzero().get()) != parent {
        std::process::exit(1)
    }
    let err = Command::new(program).args(&args[2..]).exec();
    let mut stderr = std::io::stderr().lock();
    let _ = write!(stderr, "{EXEC_FAILED}{}", err.raw_os_error().unwrap_or(0));
    std::process::exit(127)
}

/// The command that starts `program`: through the trampoline when this
/// process answers it and its executable can be found, else directly.
pub(crate) fn command(program: &std::path::Path) -> Command {
    #[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
    if ENABLED.load(Ordering::Acquire) {
        if let Ok(exe) = std::env::current_exe() {
            let mut c = Command::new(exe);
            c.arg(ARG).arg(std::process::id().to_string()).arg(program);
            return c;
        }
    }
    Command::new(program)
}
