//! The one error type of the filesystem layer (`seed-reference.md` §6.6).

use std::fmt;

/// What went wrong, as a machine-readable code. The names are the seed's
/// `FsErrorCode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FsErrorCode {
    /// The target (or, for `edit`'s intent, its observation) does not exist.
    NotFound,
    /// A directory was expected.
    NotDirectory,
    /// Binary or invalid UTF-8 content.
    NotText,
    /// A directory, FIFO, device or socket where a regular file was expected.
    NotRegularFile,
    /// Content over a byte limit.
    TooLarge,
    /// The operating system refused access.
    PermissionDenied,
    /// Any other I/O failure.
    IoError,
    /// The file changed (or vanished) since it was observed.
    StaleVersion,
    /// A mutation of a file that was never read.
    NotObserved,
    /// `old_string` matched more than once.
    AmbiguousEdit,
    /// `old_string` was not found.
    EditNotFound,
    /// The caller cancelled.
    Aborted,
}

impl FsErrorCode {
    /// The code as the seed spells it, e.g. `FS_NOT_FOUND`.
    pub fn as_str(self) -> &'static str {
        match self {
            FsErrorCode::NotFound => "FS_NOT_FOUND",
            FsErrorCode::NotDirectory => "FS_NOT_DIRECTORY",
            FsErrorCode::NotText => "FS_NOT_TEXT",
            FsErrorCode::NotRegularFile => "FS_NOT_REGULAR_FILE",
            FsErrorCode::TooLarge => "FS_TOO_LARGE",
            FsErrorCode::PermissionDenied => "FS_PERMISSION_DENIED",
            FsErrorCode::IoError => "FS_IO_ERROR",
            FsErrorCode::StaleVersion => "FS_STALE_VERSION",
            FsErrorCode::NotObserved => "FS_NOT_OBSERVED",
            FsErrorCode::AmbiguousEdit => "FS_AMBIGUOUS_EDIT",
            FsErrorCode::EditNotFound => "FS_EDIT_NOT_FOUND",
            FsErrorCode::Aborted => "FS_ABORTED",
        }
    }
}

impl fmt::Display for FsErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the file tools were doing when an operation failed: the verb of
/// `cannot <verb> "<path>": <what>` and of `<verb> aborted`
/// (`seed-reference.md` §6.6).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Verb {
    /// Reading a file (`read`).
    Read,
    /// Writing a file (`write`).
    Write,
    /// Editing a file (`edit`).
    Edit,
    /// Asking what a path is.
    Stat,
    /// Listing a directory.
    List,
    /// Resolving a path against the workdir.
    Resolve,
}

impl Verb {
    /// The verb as the messages write it: `read`, `write`, `edit`, `stat`,
    /// `list`, `resolve`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Read => "read",
            Verb::Write => "write",
            Verb::Edit => "edit",
            Verb::Stat => "stat",
            Verb::List => "list",
            Verb::Resolve => "resolve",
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed filesystem operation: a code, the complete message the model
/// sees (it already names the path), and the display path when known.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsError {
    /// The machine-readable code.
    pub code: FsErrorCode,
    /// The message, e.g. `cannot read "/w/a.txt": not found`.
    pub message: String,
    /// The display path of the target, when the error concerns one.
    pub path: Option<String>,
}

impl FsError {
    /// An error with a code and a message.
    pub fn new(code: FsErrorCode, message: impl Into<String>) -> FsError {
        FsError {
            code,
            message: message.into(),
            path: None,
        }
    }

    /// `cannot <verb> "<path>": <what>`, the shape of most seed messages.
    pub fn cannot(code: FsErrorCode, verb: Verb, path: &str, what: &str) -> FsError {
        FsError {
            code,
            message: format!("cannot {verb} \"{path}\": {what}"),
            path: Some(path.to_string()),
        }
    }

    /// The error for an I/O failure while doing `verb` on `path`: the
    /// common kinds get the seed's words, anything else the OS message.
    pub fn io(verb: Verb, path: &str, err: &std::io::Error) -> FsError {
        use std::io::ErrorKind;
        match err.kind() {
            ErrorKind::NotFound => FsError::cannot(FsErrorCode::NotFound, verb, path, "not found"),
            ErrorKind::PermissionDenied => FsError::cannot(
                FsErrorCode::PermissionDenied,
                verb,
                path,
                "permission denied",
            ),
            _ => FsError::cannot(FsErrorCode::IoError, verb, path, &io_message(err)),
        }
    }

    /// Append ` — <remedy>` to the message (`seed-reference.md` §6.5).
    pub fn with_remedy(mut self, remedy: &str) -> FsError {
        self.message = format!("{} \u{2014} {remedy}", self.message);
        self
    }
}

/// A file tool's call cancelled before it changed anything: `{verb}
/// aborted` (`seed-reference.md` §6.6), from the text layer and from the
/// literal edit alike.
pub fn aborted(verb: Verb) -> FsError {
    FsError::new(FsErrorCode::Aborted, format!("{verb} aborted"))
}

/// An OS error's text without Rust's ` (os error N)` tail.
pub fn io_message(err: &std::io::Error) -> String {
    let text = err.to_string();
    match text.rfind(" (os error ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

impl fmt::Display for FsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for FsError {}
