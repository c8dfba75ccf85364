//! The file tools `read`, `write` and `edit` (`seed-reference.md` §6), over
//! a [`FileSystem`], with the read-before-write [`ObservationPolicy`].
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

use serde_json::Value;

pub use edit::edit;
pub use policy::ObservationPolicy;
pub use read::{read, ReadWindow};
pub use write::write;

use crate::fs::{FsError, FsErrorCode};
use crate::tool::ToolError;

/// The configuration keys of the file tools (`seed-reference.md` §9.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilesConfig {
    /// `readLimit`: default and maximum lines of one read.
    pub read_limit: u64,
    /// `readMaxLineLength`: UTF-16 units kept per line.
    pub read_max_line_length: usize,
    /// `readMaxBytes`: byte cap of one read's selected lines.
    pub read_max_bytes: usize,
    /// `readStreamMinSize`: files at least this large are streamed.
    pub read_stream_min_size: u64,
}

impl Default for FilesConfig {
    fn default() -> FilesConfig {
        FilesConfig {
            read_limit: 2000,
            read_max_line_length: 2000,
            read_max_bytes: 51_200,
            read_stream_min_size: 10 * 1024 * 1024,
        }
    }
}

impl FilesConfig {
    /// The configuration keys, in the seed's validation order.
    pub const KEYS: [&'static str; 4] = [
        "readLimit",
        "readMaxLineLength",
        "readMaxBytes",
        "readStreamMinSize",
    ];

    /// Set one key from its JSON value. `Ok(false)`: not a key of the file
    /// tools. `Err`: the seed's message, e.g.
    /// `tool-fs: readLimit must be a positive integer`.
    pub fn set(&mut self, key: &str, value: &Value) -> Result<bool, String> {
        if !Self::KEYS.contains(&key) {
            return Ok(false);
        }
        let n = value
            .as_f64()
            .filter(|n| n.is_finite() && n.fract() == 0.0 && *n >= 1.0)
            .ok_or_else(|| format!("tool-fs: {key} must be a positive integer"))?;
        let n = if n >= u64::MAX as f64 {
            u64::MAX
        } else {
            n as u64
        };
        let us = usize::try_from(n).unwrap_or(usize::MAX);
        match key {
            "readLimit" => self.read_limit = n,
            "readMaxLineLength" => self.read_max_line_length = us,
            "readMaxBytes" => self.read_max_bytes = us,
            _ => self.read_stream_min_size = n,
        }
        Ok(true)
    }
}

/// `read`'s description (`seed-reference.md` §5.2).
pub const READ_DESCRIPTION: &str = "Read a UTF-8 text file and return line-numbered content.";
/// `write`'s description.
pub const WRITE_DESCRIPTION: &str = "Create or fully replace a UTF-8 text file.";
/// `edit`'s description.
pub const EDIT_DESCRIPTION: &str = "Edit an existing UTF-8 text file by replacing literal text.";

/// `read`'s system-prompt section (`tool:read`, order 100).
pub const READ_PROMPT: &str = "Use the read tool \u{2014} not shell commands like cat \u{2014} to inspect text files. Results include line numbers. Use offset and limit to continue reading large files.";
/// `write`'s system-prompt section (`tool:write`, order 101).
pub const WRITE_PROMPT: &str = "Use the write tool to create files or completely replace file contents. Existing files are overwritten, so read an existing file first (the default fs-observation-policy requires it) and prefer edit for targeted changes.";
/// `edit`'s system-prompt section (`tool:edit`, order 102).
pub const EDIT_PROMPT: &str = "Use the edit tool for targeted changes to existing UTF-8 text files. It replaces literal old_string with new_string; by default old_string must appear exactly once. If old_string appears multiple times, provide a more specific old_string or set replace_all to true. Read the file first (the default fs-observation-policy requires it), unless you just created or edited it in this session.";

/// `read`'s parameter schema as sent, key order included
/// (`seed-reference.md` §5.3). Text, not a `Value`: a `Value` would sort
/// the keys.
pub fn read_schema_json(read_limit: u64) -> String {
    format!(
        r#"{{"type":"object","properties":{{"file_path":{{"type":"string","description":"Path to read, resolved by the filesystem backend."}},"offset":{{"type":"number","description":"1-based first line to return. Defaults to 1."}},"limit":{{"type":"number","description":"Maximum number of lines to return. Defaults to {read_limit}."}}}},"required":["file_path"]}}"#
    )
}

/// `write`'s parameter schema as sent.
pub const WRITE_SCHEMA_JSON: &str = r#"{"type":"object","properties":{"file_path":{"type":"string","description":"Path to write, resolved by the filesystem backend."},"content":{"type":"string","description":"Full UTF-8 text content to write."}},"required":["file_path","content"]}"#;

/// `edit`'s parameter schema as sent.
pub const EDIT_SCHEMA_JSON: &str = r#"{"type":"object","properties":{"file_path":{"type":"string","description":"Path to edit, resolved by the filesystem backend."},"old_string":{"type":"string","description":"Literal text to replace. Must match exactly."},"new_string":{"type":"string","description":"Literal replacement text. Use an empty string to delete the match."},"replace_all":{"type":"boolean","description":"Replace all matches. Defaults to false; when false, old_string must appear exactly once."}},"required":["file_path","old_string","new_string"]}"#;

/// A string argument; the schema made sure it is one when present.
fn str_arg<'a>(args: &'a Value, name: &str) -> &'a str {
    args.get(name).and_then(Value::as_str).unwrap_or("")
}

/// `file_path`, checked non-blank (JavaScript `trim`, as the seed).
fn file_path_arg(args: &Value) -> Result<&str, ToolError> {
    let path = str_arg(args, "file_path");
    if crate::fs::js_trim(path).is_empty() {
        return Err(ToolError::plain("file_path must be a non-empty string"));
    }
    Ok(path)
}

/// An `FsError` as the tool result's error (`info.name` = `FsError`).
pub(crate) fn fs_error(e: FsError) -> ToolError {
    ToolError::coded("FsError", e.code.as_str(), e.message)
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
    format!("<path>{display}</path>\n<type>file</type>\n<content>\n{body}\n</content>")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_json() {
        for s in [
            read_schema_json(2000),
            WRITE_SCHEMA_JSON.into(),
            EDIT_SCHEMA_JSON.into(),
        ] {
            serde_json::from_str::<Value>(&s).unwrap();
        }
    }

    #[test]
    fn config_rejects_non_positive_integers() {
        let mut c = FilesConfig::default();
        assert_eq!(c.set("readLimit", &serde_json::json!(2)), Ok(true));
        assert_eq!(c.read_limit, 2);
        assert_eq!(c.set("other", &serde_json::json!(2)), Ok(false));
        for bad in [
            serde_json::json!(0),
            serde_json::json!(1.5),
            serde_json::json!("3"),
        ] {
            assert_eq!(
                c.set("readMaxBytes", &bad),
                Err("tool-fs: readMaxBytes must be a positive integer".to_string())
            );
        }
    }
}
