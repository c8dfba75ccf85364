//! rg's own argv for the two invocations of `contract.md` §2, recognized
//! by shape ([`Invocation::parse`]) and answered in-process with rg's bytes
//! and exit code ([`RawRun`]): the command line's `--format raw` and the
//! Node binding's `rg()`.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

use crate::backend::rg::{glob_args, grep_args};
use crate::backend::{NativeBackend, SearchBackend};
use crate::cancel::CancelToken;
use crate::fs::FsHints;
use crate::outcome::{GlobResults, GrepResults, Outcome, Status};
use crate::request::{GlobRequest, GrepRequest};

/// What the glob argv looks like, for error messages.
const GLOB_SHAPE: &str = "--no-config --files --glob=<pattern> --sort=modified --no-ignore \
     --hidden --glob=!**/.git --glob=!**/.git/** … --glob=!**/.sl/** [-- <path>]";

/// What the grep argv looks like, for error messages.
const GREP_SHAPE: &str = "--no-config --json --regexp=<pattern> [--glob=<include>] [-- <path>]";

/// One of the two invocations of `contract.md` §2, with its workdir and
/// cancellation.
///
/// rg's own argument lists, answered in-process (`contract.md` §2 and §12).
///
/// A harness that spawns rg builds one of two argv vectors. [`Invocation`]
/// recognizes them by shape ([`Invocation::parse`]: anything else is an
/// [`InvocationError`] naming what was expected), runs one on a
/// [`SearchBackend`] and gives back what the rg binary would have printed
/// and exited with ([`RawRun`]): the command line's `--format raw` and the
/// Node binding's `rg()` both go through it.
///
/// # Example
///
/// ```
/// use dsh_search::Invocation;
/// use dsh_search::NativeBackend;
///
/// let dir = std::env::temp_dir().join(format!("dsh-search-inv-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("a.txt"), "one\nTODO: two\n")?;
///
/// let argv = ["--no-config", "--json", "--regexp=TODO", "--", "a.txt"];
/// let run = Invocation::parse(&argv, &dir)?.run(&NativeBackend::new());
/// assert_eq!(run.exit_code(), Some(0));
/// let out = run.into_output();
/// assert!(out.stdout.starts_with(br#"{"type":"begin","data":{"path":{"text":"a.txt"}}}"#));
/// assert!(out.stderr.is_empty());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub enum Invocation {
    /// `rg --no-config --files --glob=<pattern> … [-- <path>]`.
    Glob(GlobRequest),
    /// `rg --no-config --json --regexp=<pattern> [--glob=<include>] [-- <path>]`.
    Grep(GrepRequest),
}

/// An argv that is neither invocation of `contract.md` §2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvocationError {
    /// The 0-based index of the first element that does not fit, when one
    /// does not (`None`: the argv is too short, or has no known head).
    pub index: Option<usize>,
    /// What was wrong there.
    pub reason: String,
}

impl fmt::Display for InvocationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.index {
            Some(i) => write!(f, "unsupported rg argv: argument {i}: {}", self.reason)?,
            None => write!(f, "unsupported rg argv: {}", self.reason)?,
        }
        write!(
            f,
            "; expected the glob invocation `{GLOB_SHAPE}` or the grep invocation `{GREP_SHAPE}`"
        )
    }
}

impl std::error::Error for InvocationError {}

impl Invocation {
    /// Recognize `argv` (rg's arguments, without the program name) as one
    /// of the two invocations, run in `workdir`.
    ///
    /// The shape is exact: every element as the harness builds it, in its
    /// order, the optional ones where they go. A NUL byte anywhere is
    /// refused too (no process can be given one: Node's spawn throws).
    pub fn parse<S: AsRef<str>>(
        argv: &[S],
        workdir: impl Into<PathBuf>,
    ) -> Result<Invocation, InvocationError> {
        let argv: Vec<&str> = argv.iter().map(AsRef::as_ref).collect();
        if let Some(i) = argv.iter().position(|a| a.contains('\0')) {
            return Err(error(Some(i), "it contains a NUL byte"));
        }
        let workdir = workdir.into();
        match argv.get(1).copied() {
            _ if argv.first() != Some(&"--no-config") => Err(error(
                (!argv.is_empty()).then_some(0),
                format!(
                    "the first argument must be `--no-config`, not {}",
                    shown(&argv, 0)
                ),
            )),
            Some("--files") => parse_glob(&argv, workdir).map(Invocation::Glob),
            Some("--json") => parse_grep(&argv, workdir).map(Invocation::Grep),
            _ => Err(error(
                (argv.len() > 1).then_some(1),
                format!(
                    "the second argument must be `--files` (glob) or `--json` (grep), not {}",
                    shown(&argv, 1)
                ),
            )),
        }
    }

    /// Set the cancellation: a search stopped by it ends
    /// [`Status::Cancelled`].
    pub fn cancel(mut self, cancel: CancelToken) -> Invocation {
        match &mut self {
            Invocation::Glob(r) => r.cancel = cancel,
            Invocation::Grep(r) => r.cancel = cancel,
        }
        self
    }

    /// Run on `backend`.
    pub fn run(&self, backend: &dyn SearchBackend) -> RawRun {
        match self {
            Invocation::Glob(r) => RawRun::Glob(backend.glob(r)),
            Invocation::Grep(r) => RawRun::Grep(backend.grep(r)),
        }
    }

    /// Run on the native engine with rg's stdout handed to `stdout` as it
    /// is made, not kept: a grep's lines as each file's search ends
    /// ([`NativeBackend::grep_streaming`]), a glob's paths once sorted (rg
    /// sorts them all before it prints one). The returned output's
    /// `stdout` is empty; its stderr and status are the run's. A caller
    /// that keeps only part of the stream (a tail) holds only that part.
    pub fn run_streaming<F: FsHints>(
        &self,
        backend: &NativeBackend<F>,
        stdout: &(dyn Fn(&[u8]) + Sync),
    ) -> RawOutput {
        let run = match self {
            Invocation::Glob(r) => {
                let outcome = backend.glob(r);
                if outcome.status.exit_code().is_some() {
                    let mut chunk = Vec::with_capacity(CHUNK);
                    for f in &outcome.results.files {
                        chunk.extend_from_slice(f);
                        chunk.push(b'\n');
                        if chunk.len() >= CHUNK {
                            stdout(&chunk);
                            chunk.clear();
                        }
                    }
                    if !chunk.is_empty() {
                        stdout(&chunk);
                    }
                }
                RawRun::Glob(Outcome {
                    results: GlobResults::default(),
                    ..outcome
                })
            }
            Invocation::Grep(r) => RawRun::Grep(backend.grep_streaming(r, stdout)),
        };
        run.into_output()
    }
}

/// The size of the pieces a glob's listing is handed over in.
const CHUNK: usize = 64 * 1024;

fn error(index: Option<usize>, reason: impl Into<String>) -> InvocationError {
    InvocationError {
        index,
        reason: reason.into(),
    }
}

/// Element `i` quoted for a message, or "nothing" past the end.
fn shown(argv: &[&str], i: usize) -> String {
    match argv.get(i) {
        Some(a) => format!("`{a}`"),
        None => "nothing (the argv ends there)".into(),
    }
}

fn parse_glob(argv: &[&str], workdir: PathBuf) -> Result<GlobRequest, InvocationError> {
    let pattern = argv
        .get(2)
        .and_then(|a| a.strip_prefix("--glob="))
        .ok_or_else(|| {
            error(
                Some(2),
                format!(
                    "glob's third argument must be `--glob=<pattern>`, not {}",
                    shown(argv, 2)
                ),
            )
        })?;
    let mut req = GlobRequest::new(pattern, workdir);
    // The path, if any, is the last element after `--`; the rest must be
    // exactly what the rg backend's argv builder makes of the request (the
    // one place the shape is written down).
    req.path = path_after_dashes(argv).map(OsString::from);
    same_shape(argv, &glob_args(&req), "glob")?;
    Ok(req)
}

fn parse_grep(argv: &[&str], workdir: PathBuf) -> Result<GrepRequest, InvocationError> {
    let pattern = argv
        .get(2)
        .and_then(|a| a.strip_prefix("--regexp="))
        .ok_or_else(|| {
            error(
                Some(2),
                format!(
                    "grep's third argument must be `--regexp=<pattern>`, not {}",
                    shown(argv, 2)
                ),
            )
        })?;
    let mut req = GrepRequest::new(pattern, workdir);
    req.include = argv
        .get(3)
        .and_then(|a| a.strip_prefix("--glob="))
        .map(str::to_string);
    req.path = path_after_dashes(argv).map(OsString::from);
    same_shape(argv, &grep_args(&req), "grep")?;
    Ok(req)
}

/// The last element when the one before it is `--` (and is not the
/// pattern's own slot).
fn path_after_dashes(argv: &[&str]) -> Option<String> {
    match argv {
        [_, _, _, .., "--", path] => Some(path.to_string()),
        _ => None,
    }
}

/// `argv` equals `want`, else an error at the first element that differs.
fn same_shape(argv: &[&str], want: &[OsString], what: &str) -> Result<(), InvocationError> {
    let Some(i) = (0..argv.len().max(want.len()))
        .find(|&i| argv.get(i).map(OsStr::new) != want.get(i).map(OsString::as_os_str))
    else {
        return Ok(());
    };
    let want: Option<String> = want.get(i).map(|w| w.to_string_lossy().into_owned());
    let reason = match (argv.get(i), want) {
        (Some(got), Some(w)) => format!("{what} expects `{w}` here, not `{got}`"),
        (None, Some(w)) => format!("{what} expects `{w}` here, but the argv ends"),
        (Some(got), None) if *got == "--" || argv[..i].contains(&"--") => {
            "`--` must be followed by exactly one path (rg would search each)".to_string()
        }
        (Some(got), None) => {
            format!("{what} expects `--` and one path, or the end of the argv, not `{got}`")
        }
        (None, None) => unreachable!("i is below the longer length"),
    };
    Err(error(Some(i), reason))
}

/// What one invocation printed and how it ended, as the rg binary would
/// have: its outcome, with rg's stdout, stderr and exit code derived from it.
#[derive(Clone, Debug)]
pub enum RawRun {
    /// A glob's outcome.
    Glob(Outcome<GlobResults>),
    /// A grep's outcome.
    Grep(Outcome<GrepResults>),
}

/// The bytes and the exit code of a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawOutput {
    /// What rg prints on stdout (nothing for a run that did not exit).
    pub stdout: Vec<u8>,
    /// What rg prints on stderr, each line with its `\n`.
    pub stderr: Vec<u8>,
    /// How the run ended; [`Status::Exited`] carries rg's exit code.
    pub status: Status,
}

impl RawRun {
    /// How the run ended.
    pub fn status(&self) -> &Status {
        match self {
            RawRun::Glob(o) => &o.status,
            RawRun::Grep(o) => &o.status,
        }
    }

    /// rg's exit code, when the search ran to one.
    pub fn exit_code(&self) -> Option<i32> {
        self.status().exit_code()
    }

    /// rg's stderr lines, without their terminators.
    pub fn stderr_lines(&self) -> &[String] {
        match self {
            RawRun::Glob(o) => &o.stderr,
            RawRun::Grep(o) => &o.stderr,
        }
    }

    /// Write rg's stdout: the listed paths or the `--json` lines. Writes
    /// nothing for a run that did not exit (its results are partial, and rg
    /// would have printed them as it went; no caller can use them).
    pub fn write_stdout(&self, w: &mut dyn Write) -> io::Result<()> {
        if self.exit_code().is_none() {
            return Ok(());
        }
        match self {
            RawRun::Glob(o) => o.results.write_raw(w),
            RawRun::Grep(o) => o.results.write_raw(w),
        }
    }

    /// Why there is no exit code to mirror, for a run that did not exit:
    /// cancelled, over its budget, not started, killed, malformed output.
    pub fn failure(&self) -> Option<String> {
        failure(self.status())
    }

    /// The run as bytes.
    pub fn into_output(self) -> RawOutput {
        let mut stdout = Vec::new();
        self.write_stdout(&mut stdout)
            .expect("writing to a Vec cannot fail");
        let mut stderr = Vec::new();
        for line in self.stderr_lines() {
            stderr.extend_from_slice(line.as_bytes());
            stderr.push(b'\n');
        }
        RawOutput {
            stdout,
            stderr,
            status: self.status().clone(),
        }
    }
}

impl RawOutput {
    /// rg's exit code, when the search ran to one.
    pub fn exit_code(&self) -> Option<i32> {
        self.status.exit_code()
    }

    /// Why there is no exit code, as [`RawRun::failure`].
    pub fn failure(&self) -> Option<String> {
        failure(&self.status)
    }
}

/// Why a run that ended with `status` has no exit code to mirror.
fn failure(status: &Status) -> Option<String> {
    Some(match status {
        Status::Exited(_) => return None,
        Status::Cancelled => "the search was cancelled".into(),
        Status::OverBudget => "the search was stopped at its output budget".into(),
        Status::Signaled(Some(sig)) => format!("rg was killed by {sig}"),
        Status::Signaled(None) => "rg was killed by a signal".into(),
        Status::LaunchFailed(why) => why.clone(),
        Status::Malformed(why) => format!("malformed ripgrep --json output ({why})"),
    })
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;

    use super::Invocation;
    use crate::GlobRequest;

    fn glob_argv(pattern: &str, path: Option<&str>) -> Vec<String> {
        let mut req = GlobRequest::new(pattern, "/w");
        req.path = path.map(Into::into);
        crate::backend::rg::glob_args(&req)
            .into_iter()
            .map(|a| a.into_string().unwrap())
            .collect()
    }

    fn parse(argv: &[String]) -> Result<Invocation, String> {
        Invocation::parse(argv, "/w").map_err(|e| e.to_string())
    }

    fn strs(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    macro_rules! accepts {
        ($name:ident, $argv:expr, $check:expr) => {
            #[test]
            fn $name() {
                let inv = parse(&$argv).unwrap();
                #[allow(clippy::redundant_closure_call, reason = "the table's check")]
                ($check)(inv);
            }
        };
    }

    macro_rules! rejects {
        ($name:ident, $argv:expr, $needle:expr) => {
            #[test]
            fn $name() {
                let msg = parse(&$argv).unwrap_err();
                assert!(msg.contains($needle), "{msg}");
                assert!(msg.contains("expected the glob invocation"), "{msg}");
            }
        };
    }

    accepts!(glob_without_path, glob_argv("**/*.rs", None), |i| match i {
        Invocation::Glob(r) => assert_eq!((r.pattern.as_str(), r.path), ("**/*.rs", None)),
        other => panic!("{other:?}"),
    });
    accepts!(
        glob_with_dash_path,
        glob_argv("*", Some("-x")),
        |i| match i {
            Invocation::Glob(r) => assert_eq!(r.path.as_deref(), Some(OsStr::new("-x"))),
            other => panic!("{other:?}"),
        }
    );
    accepts!(glob_empty_pattern, glob_argv("", None), |i| match i {
        Invocation::Glob(r) => assert_eq!(r.pattern, ""),
        other => panic!("{other:?}"),
    });
    accepts!(
        grep_plain,
        strs(&["--no-config", "--json", "--regexp=a|b"]),
        |i| match i {
            Invocation::Grep(r) => {
                assert_eq!((r.pattern.as_str(), r.include, r.path), ("a|b", None, None))
            }
            other => panic!("{other:?}"),
        }
    );
    accepts!(
        grep_include_and_path,
        strs(&[
            "--no-config",
            "--json",
            "--regexp=x",
            "--glob=*.ts",
            "--",
            "src"
        ]),
        |i| match i {
            Invocation::Grep(r) => {
                assert_eq!(
                    (r.include.as_deref(), r.path.as_deref()),
                    (Some("*.ts"), Some(OsStr::new("src")))
                )
            }
            other => panic!("{other:?}"),
        }
    );
    accepts!(
        grep_pattern_with_equals,
        strs(&["--no-config", "--json", "--regexp=--regexp=x"]),
        |i| match i {
            Invocation::Grep(r) => assert_eq!(r.pattern, "--regexp=x"),
            other => panic!("{other:?}"),
        }
    );

    rejects!(empty, Vec::<String>::new(), "`--no-config`");
    rejects!(
        no_config_missing,
        strs(&["--json", "--regexp=x"]),
        "argument 0"
    );
    rejects!(
        other_mode,
        strs(&["--no-config", "--count", "x"]),
        "`--files` (glob) or `--json`"
    );
    rejects!(
        grep_no_regexp,
        strs(&["--no-config", "--json", "-e", "x"]),
        "--regexp=<pattern>"
    );
    rejects!(
        grep_extra_flag,
        strs(&["--no-config", "--json", "--regexp=x", "--hidden"]),
        "not `--hidden`"
    );
    rejects!(
        grep_two_paths,
        strs(&["--no-config", "--json", "--regexp=x", "--", "a", "b"]),
        "exactly one path"
    );
    rejects!(
        grep_dangling_dashes,
        strs(&["--no-config", "--json", "--regexp=x", "--"]),
        "exactly one path"
    );
    rejects!(
        glob_two_paths,
        {
            let mut v = glob_argv("*", Some("a"));
            v.push("b".into());
            v
        },
        "exactly one path"
    );
    rejects!(
        nul_byte,
        strs(&["--no-config", "--json", "--regexp=a\0b"]),
        "argument 2: it contains a NUL byte"
    );
    rejects!(
        glob_missing_exclude,
        {
            let mut v = glob_argv("*", None);
            v.truncate(14);
            v
        },
        "`--glob=!**/.jj` here, but the argv ends"
    );
    rejects!(
        glob_reordered,
        {
            let mut v = glob_argv("*", None);
            v.swap(3, 4);
            v
        },
        "argument 3"
    );
}
