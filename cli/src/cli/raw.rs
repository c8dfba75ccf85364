//! `--format raw`: print exactly what rg prints for the invocation
//! (`contract.md` §8): the stdout bytes, rg's stderr lines, rg's exit code.
//!
//! A search that did not run to an exit code (cancelled, over a budget, not
//! started, killed by a signal, malformed `--json`) has no rg output to
//! mirror: it prints `dsh-search: <why>` on stderr, after any stderr lines
//! rg did print, and exits 2. The bytes and the reason come from
//! [`RawRun`], which the Node binding's `rg()` shares.

use std::io::{self, BufWriter, Write};

use dsh_search::{GlobRequest, GrepRequest};
use dsh_search::{Invocation, RawRun};

use super::{GlobArgs, GrepArgs};
use crate::setup::{fail, Common};

/// `dsh-search glob --format raw`.
pub(crate) fn glob(common: &Common, args: &GlobArgs) -> u8 {
    run(common, |workdir| {
        let mut req = GlobRequest::new(args.pattern.clone(), workdir);
        req.path = args.path.clone();
        Invocation::Glob(req)
    })
}

/// `dsh-search grep --format raw`.
pub(crate) fn grep(common: &Common, args: &GrepArgs) -> u8 {
    run(common, |workdir| {
        let mut req = GrepRequest::new(args.pattern.clone(), workdir);
        req.path = args.path.clone();
        req.include = args.include.clone();
        Invocation::Grep(req)
    })
}

/// Run the invocation `build` makes for the workdir on the chosen backend.
fn run(common: &Common, build: impl FnOnce(std::path::PathBuf) -> Invocation) -> u8 {
    let workdir = match common.workdir() {
        Ok(dir) => dir,
        Err(e) => return fail(format_args!("cannot use the current directory: {e}")),
    };
    let invocation = build(workdir);
    let backend = match crate::setup::backend(common) {
        Ok(b) => b,
        Err(e) => return fail(e),
    };
    finish(&invocation.cancel(common.cancel.clone()).run(&*backend))
}

/// Print stdout (only for a run that exited), then stderr, and return the
/// exit code.
fn finish(run: &RawRun) -> u8 {
    match print_stdout(run) {
        Ok(()) => {}
        // rg exits 0 quietly when its reader goes away
        // (ripgrep `core/main.rs`: "broken pipe" → exit 0).
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => return 0,
        Err(e) => return fail(format_args!("cannot write to standard output: {e}")),
    }
    print_stderr(run.stderr_lines());
    match (run.exit_code(), run.failure()) {
        // rg's codes are 0, 1 and 2; anything else is clamped to an error.
        (Some(code), _) => u8::try_from(code).unwrap_or(2),
        (None, Some(why)) => fail(why),
        (None, None) => unreachable!("a run without an exit code has a failure"),
    }
}

fn print_stdout(run: &RawRun) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(64 * 1024, io::stdout().lock());
    run.write_stdout(&mut out)?;
    out.flush()
}

fn print_stderr(lines: &[String]) {
    let mut err = io::stderr().lock();
    for line in lines {
        // Nothing useful can be done when stderr itself is gone.
        let _ = writeln!(err, "{line}");
    }
}
