//! rg's stderr texts (`crates/core/messages.rs`, `flags/hiargs.rs`) and the
//! re-formatting of walk errors whose paths name our absolute walk path.

use std::fmt::Write as _;
use std::path::Path;

use super::paths::Root;

/// rg's stderr, one entry per line, and whether an error was reported
/// (`messages.rs: err_message!` sets `errored`).
#[derive(Clone, Debug, Default)]
pub(crate) struct Messages {
    pub(crate) lines: Vec<String>,
    pub(crate) errored: bool,
    /// The first error of the whole filesystem met (`fs::unavailable`: a
    /// remote host lost), printed once, before the other lines
    /// ([`Messages::into_lines`]), instead of once per file.
    unavailable: Option<String>,
}

impl Messages {
    /// An error about one file or directory, `describe`d as rg would print
    /// it, or, when it is an error of the whole filesystem
    /// ([`crate::fs::is_unavailable`]), that error alone, once.
    pub(crate) fn io_error(&mut self, err: &std::io::Error, describe: impl FnOnce() -> String) {
        if crate::fs::is_unavailable(err) {
            self.unavailable(&err.to_string());
        } else {
            self.error(&describe());
        }
    }

    /// An error of the whole filesystem, `message` its text: kept if it is
    /// the first.
    pub(crate) fn unavailable(&mut self, message: &str) {
        self.errored = true;
        if self.unavailable.is_none() {
            self.unavailable = Some(message.to_string());
        }
    }

    /// Whether an error of the whole filesystem was met.
    pub(crate) fn met_unavailable(&self) -> bool {
        self.unavailable.is_some()
    }

    /// [`Messages::io_error`] for a walk error.
    pub(crate) fn walk_error(&mut self, err: &ignore::Error, root: &Root) {
        match err.io_error().filter(|e| crate::fs::is_unavailable(e)) {
            Some(io) => self.io_error(io, String::new),
            None => self.error(&walk_error(err, root)),
        }
    }

    /// The lines to print: the error of the whole filesystem first, if
    /// one was met.
    pub(crate) fn into_lines(self) -> Vec<String> {
        match self.unavailable {
            Some(u) => std::iter::once(format!("rg: {u}"))
                .chain(self.lines)
                .collect(),
            None => self.lines,
        }
    }

    /// `err_message!`: print `rg: {msg}` and remember that rg will exit 2.
    pub(crate) fn error(&mut self, msg: &str) {
        self.errored = true;
        self.print(msg);
    }

    /// `ignore_message!`: print without changing the exit code.
    pub(crate) fn print(&mut self, msg: &str) {
        // `eprintln_locked!` writes `rg: ` once, then the whole message, so
        // only its first line carries the prefix.
        let mut first = true;
        for line in msg.split('\n') {
            if first {
                self.lines.push(format!("rg: {line}"));
                first = false;
            } else {
                self.lines.push(line.to_string());
            }
        }
    }

    /// Merge another thread's messages.
    pub(crate) fn extend(&mut self, other: Messages) {
        self.errored |= other.errored;
        self.lines.extend(other.lines);
        if self.unavailable.is_none() {
            self.unavailable = other.unavailable;
        }
    }
}

/// `main.rs: eprint_nothing_searched`.
pub(crate) const NOTHING_SEARCHED: &str = "No files were searched, which means ripgrep probably \
applied a filter you didn't expect.\nRunning with --debug will show why files are being skipped.";

/// The text rg prints for a failed matcher build (`hiargs.rs: matcher_rust`,
/// `suggest_multiline` and `suggest_text`). The PCRE2 hint is
/// compiled out of a `cargo install`ed rg, the reference binary.
pub(crate) fn regex_error(err: &str) -> String {
    let mut msg = err.to_string();
    if msg.contains("the literal") && msg.contains("not allowed") {
        msg.push_str(
            "\n\nConsider enabling multiline mode with the --multiline flag (or -U for short).\n\
             When multiline mode is enabled, new line characters can be matched.",
        );
    }
    if msg.contains("pattern contains \"\\0\"") {
        msg.push_str(
            "\n\nConsider enabling text mode with the --text flag (or -a for short). Otherwise,\n\
             binary detection is enabled and matching a NUL byte is impossible.",
        );
    }
    msg
}

/// `err` about `path`: the crate's private `Error::with_path` (ignore 0.4.29
/// `lib.rs`), which the engine's own walk and ignore-file reading
/// reproduce.
pub(crate) fn at_path(err: ignore::Error, path: &Path) -> ignore::Error {
    ignore::Error::WithPath {
        path: path.to_path_buf(),
        err: Box::new(err),
    }
}

/// `ignore::Error`'s `Display` (ignore 0.4.29 `lib.rs`) with every path
/// mapped back to the one rg walked.
pub(crate) fn walk_error(err: &ignore::Error, root: &Root) -> String {
    let mut out = String::new();
    fmt_error(err, root, &mut out);
    out
}

fn show(root: &Root, p: &Path) -> String {
    root.rg_path(p).display().to_string()
}

fn fmt_error(err: &ignore::Error, root: &Root, out: &mut String) {
    use ignore::Error;
    match err {
        Error::Partial(errs) => {
            for (i, e) in errs.iter().enumerate() {
                if i > 0 {
                    out.push('\n');
                }
                fmt_error(e, root, out);
            }
        }
        Error::WithLineNumber { line, err } => {
            let _ = write!(out, "line {line}: ");
            fmt_error(err, root, out);
        }
        Error::WithPath { path, err } => {
            let _ = write!(out, "{}: ", show(root, path));
            fmt_error(err, root, out);
        }
        Error::WithDepth { err, .. } => fmt_error(err, root, out),
        Error::Loop { ancestor, child } => {
            let _ = write!(
                out,
                "File system loop found: {} points to an ancestor {}",
                show(root, child),
                show(root, ancestor)
            );
        }
        Error::Io(io) => {
            let _ = write!(out, "{io}");
        }
        other => {
            let _ = write!(out, "{other}");
        }
    }
}

/// walkdir's error for a directory it could not read (`error.rs`), wrapped
/// by ignore's `Error::from_walkdir` (`WithPath`).
pub(crate) fn dir_error(root: &Root, path: &Path, io: &std::io::Error) -> String {
    let shown = root.rg_path(path).display().to_string();
    format!("{shown}: IO error for operation on {shown}: {io}")
}

#[cfg(test)]
mod tests {
    use super::*;

    // Texts checked against rg 15.2.0 by hand:
    //   rg --no-config --json --regexp='a
    // b'     and    rg --no-config --json --regexp='\x00'
    #[test]
    fn multiline_hint() {
        let m = regex_error("the literal \"\\n\" is not allowed in a regex");
        assert_eq!(
            m,
            "the literal \"\\n\" is not allowed in a regex\n\n\
             Consider enabling multiline mode with the --multiline flag (or -U for short).\n\
             When multiline mode is enabled, new line characters can be matched."
        );
    }

    #[test]
    fn prefix_only_on_first_line() {
        let mut m = Messages::default();
        m.error(NOTHING_SEARCHED);
        assert!(m.errored);
        assert_eq!(
            m.lines,
            vec![
                "rg: No files were searched, which means ripgrep probably applied a filter you didn't expect.".to_string(),
                "Running with --debug will show why files are being skipped.".to_string(),
            ]
        );
    }
}
