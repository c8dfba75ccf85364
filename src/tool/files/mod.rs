//! The file tools `read`, `write` and `edit` (`seed-reference.md` §6), over
//! the text layer [`TextFs`](crate::fs::TextFs) of the workspace's
//! filesystem, with the read-before-write [`ObservationPolicy`].
//!
//! Each tool is one function taking the configuration, the filesystem, the
//! policy (`None`: the bare deployment, no policy), the arguments (already
//! checked against the tool's schema) and the call context; it returns the
//! content the model sees and the canonical value, or a [`ToolError`].
//! Filesystem failures are coded `FsError`s; the tools' own argument checks
//! are plain errors.

mod edit;
mod policy;
mod read;
mod write;

#[cfg(test)]
mod tests;

use serde_json::Value;

pub(crate) use edit::edit;
pub(crate) use policy::ObservationPolicy;
pub(crate) use read::read;
pub(crate) use write::{write, write_stream};

use crate::fs::{FsError, FsErrorCode, ResolvedPath, Verb};
use crate::tool::ToolError;

/// The file tools' configuration keys (`seed-reference.md` §9.2), loaded
/// and validated with the rest in [`crate::config`].
pub(crate) use crate::config::FsConfig as FilesConfig;

/// The shape of the three tool functions.
pub(crate) type FileToolFn = fn(
    &FilesConfig,
    &crate::fs::TextFs,
    Option<&ObservationPolicy>,
    &Value,
    &crate::tool::CallContext,
) -> Result<(String, Value), ToolError>;

/// A string argument; the schema made sure it is one when present.
fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

/// `file_path`, checked non-blank (JavaScript `trim`, as the seed).
fn file_path_arg(args: &Value) -> Result<&str, ToolError> {
    let path = str_arg(args, "file_path");
    if crate::js::is_blank(path) {
        return Err(ToolError::plain("file_path must be a non-empty string"));
    }
    Ok(path)
}

/// Refuse a `file_path` that names a directory by its form (a trailing `/`
/// or a last segment `.` or `..`), even one that does not exist: resolution
/// drops that form, and `write newdir/` must never create a file `newdir`.
/// The message is the one an existing directory gets.
fn refuse_directory_path(
    verb: Verb,
    file_path: &str,
    target: &ResolvedPath,
) -> Result<(), ToolError> {
    let last = file_path.rsplit('/').next().unwrap_or("");
    if file_path.ends_with('/') || last == "." || last == ".." {
        let shown = format!("{}/", target.display_str().trim_end_matches('/'));
        return Err(fs_error(FsError::cannot(
            FsErrorCode::NotRegularFile,
            verb,
            &shown,
            "not a regular file (the path names a directory)",
        )));
    }
    Ok(())
}

/// An `FsError` as the tool result's error (`info.name` = `FsError`).
pub(crate) fn fs_error(e: FsError) -> ToolError {
    // The message quotes the path raw: a name's control, bidi and
    // zero-width characters are escaped in place (D6).
    let message = crate::quoting::escaped_line(&e.message).into_owned();
    ToolError::coded("FsError", e.code.as_str(), message)
}

/// The remedy wrapper of write and edit (`seed-reference.md` §6.5).
pub(crate) fn with_remedy(e: FsError) -> FsError {
    match e.code {
        FsErrorCode::StaleVersion => e.with_remedy("re-read the file, then retry"),
        FsErrorCode::NotObserved => e.with_remedy("read the file, then retry"),
        _ => e,
    }
}

/// The `<path>…</path>` envelope shared by the three tools.
fn envelope(display: &str, body: &str) -> String {
    let display = crate::quoting::shown(display);
    format!("<path>{display}</path>\n<type>file</type>\n<content>\n{body}\n</content>")
}
