//! The request → rg argv mapping, in one place (`contract.md` §2,
//! `seed-reference.md` §1.1–§1.2), and a [`Display`](fmt::Display) that
//! reproduces the invocation by hand.

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::path::{Path, PathBuf};

use crate::request::{vcs_exclude_globs, GlobRequest, GrepRequest};

/// One rg invocation: the binary, its argv (without argv\[0\]) and its
/// working directory. Stdin is always `/dev/null`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RgCommand {
    /// The rg binary to run.
    pub program: PathBuf,
    /// The arguments, `--no-config` first; each is exactly one argv element.
    pub args: Vec<OsString>,
    /// rg's current directory.
    pub cwd: PathBuf,
}

/// The glob argv: `--no-config --files --glob=<pattern> --sort=modified
/// --no-ignore --hidden`, the twelve VCS excludes, then `-- <path>` only when
/// a path was given (`seed-reference.md` §1.1).
pub fn glob_args(req: &GlobRequest) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--no-config".into(),
        "--files".into(),
        format!("--glob={}", req.pattern).into(),
        "--sort=modified".into(),
        "--no-ignore".into(),
        "--hidden".into(),
    ];
    args.extend(vcs_exclude_globs().map(|g| format!("--glob={g}").into()));
    push_path(&mut args, req.path.as_deref());
    args
}

/// The grep argv: `--no-config --json --regexp=<pattern>`, then
/// `--glob=<include>` and `-- <path>` when given (`seed-reference.md` §1.2).
/// The `=` forms keep a pattern or glob starting with `-` from being read as
/// a flag; `--` does the same for the path.
pub fn grep_args(req: &GrepRequest) -> Vec<OsString> {
    let mut args: Vec<OsString> = vec![
        "--no-config".into(),
        "--json".into(),
        format!("--regexp={}", req.pattern).into(),
    ];
    if let Some(include) = &req.include {
        args.push(format!("--glob={include}").into());
    }
    push_path(&mut args, req.path.as_deref());
    args
}

fn push_path(args: &mut Vec<OsString>, path: Option<&OsStr>) {
    if let Some(path) = path {
        args.push("--".into());
        args.push(path.to_owned());
    }
}

impl fmt::Display for RgCommand {
    /// `cd <cwd> && <rg> <args…> < /dev/null`, each word quoted for a POSIX
    /// shell when it needs it. The child's environment is the scrubbed
    /// parent environment (`process.rs`), which this text omits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cd {} && ", quote(self.cwd.as_os_str()))?;
        write!(f, "{}", quote(self.program.as_os_str()))?;
        for arg in &self.args {
            write!(f, " {}", quote(arg))?;
        }
        write!(f, " < /dev/null")
    }
}

/// One POSIX shell word: unchanged when it only holds characters no shell
/// treats specially, else single-quoted with `'` written as `'\''` (the
/// seed's `singleQuote`, `seed-reference.md` §1.5).
pub(crate) fn quote(word: &OsStr) -> String {
    let text = word.to_string_lossy();
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.into_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

impl RgCommand {
    /// The command for `args` run by `program` in `cwd`.
    pub fn new(program: &Path, args: Vec<OsString>, cwd: &Path) -> RgCommand {
        RgCommand {
            program: program.to_path_buf(),
            args,
            cwd: cwd.to_path_buf(),
        }
    }

    /// The arguments as OS strings, for `std::process::Command`.
    pub(crate) fn os_args(&self) -> impl Iterator<Item = &OsStr> + '_ {
        self.args.iter().map(OsString::as_os_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_plain_and_hostile_words() {
        assert_eq!(quote(OsStr::new("--files")), "--files");
        assert_eq!(quote(OsStr::new("--glob=*.md")), "'--glob=*.md'");
        assert_eq!(quote(OsStr::new("it's")), "'it'\\''s'");
        assert_eq!(quote(OsStr::new("")), "''");
        assert_eq!(quote(OsStr::new("$(x)")), "'$(x)'");
    }

    #[test]
    fn display_is_one_shell_line() {
        let cmd = RgCommand::new(
            Path::new("/usr/bin/rg"),
            grep_args(&GrepRequest::new("a b", "/w d").path("-x")),
            Path::new("/w d"),
        );
        assert_eq!(
            cmd.to_string(),
            "cd '/w d' && /usr/bin/rg --no-config --json '--regexp=a b' -- -x < /dev/null"
        );
    }
}
