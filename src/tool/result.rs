//! The result object of a tool call and the errors that become one
//! (`seed-reference.md` §4.5).

use serde::Serialize;

/// `info` of an error result: present only for the harness's coded errors
/// (`SearchError`, `FsError`, `ToolArgsError`, `ToolTimeoutError`, …).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    /// The error class name, e.g. `SearchError`.
    pub name: String,
    /// The machine-readable code, e.g. `SEARCH_FAILED`.
    pub code: String,
}

/// An error a tool call ends with. Its message is what follows `Error: `.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolError {
    /// The message shown to the model after `Error: `.
    pub message: String,
    /// Name and code, for coded errors; `None` for plain ones (argument
    /// checks, guard denials).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub info: Option<ErrorInfo>,
}

impl ToolError {
    /// A plain error: no name, no code.
    pub fn plain(message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            info: None,
        }
    }

    /// A coded error.
    pub fn coded(name: &str, code: &str, message: impl Into<String>) -> ToolError {
        ToolError {
            message: message.into(),
            info: Some(ErrorInfo {
                name: name.to_string(),
                code: code.to_string(),
            }),
        }
    }

    /// The error's code, if it has one.
    pub fn code(&self) -> Option<&str> {
        self.info.as_ref().map(|i| i.code.as_str())
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// `{ content, isError, error?, value?, meta? }` (`contract.md` §5).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ToolResult {
    /// The text the model sees.
    pub content: String,
    /// Whether the call failed.
    #[serde(rename = "isError")]
    pub is_error: bool,
    /// The error, when the call failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ToolError>,
    /// The canonical value, when the call succeeded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<serde_json::Value>,
    /// Presentation metadata (direct calls only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub meta: Option<serde_json::Value>,
    /// Whether the call was a glob or grep that found nothing (it renders
    /// `No files found` / `No matches found`). The CLI's exit status and the
    /// guard's zero-result counter read this, never the text: a file may be
    /// named `No files found`.
    #[serde(skip)]
    pub empty: bool,
}

impl ToolResult {
    /// A successful result.
    pub fn ok(content: String, value: serde_json::Value) -> ToolResult {
        ToolResult {
            content,
            is_error: false,
            error: None,
            value: Some(value),
            meta: None,
            empty: false,
        }
    }

    /// A successful glob or grep result that found nothing.
    pub fn empty_search(content: String, value: serde_json::Value) -> ToolResult {
        ToolResult {
            empty: true,
            ..ToolResult::ok(content, value)
        }
    }

    /// An error result: content `Error: <message>`.
    pub fn error(err: ToolError) -> ToolResult {
        ToolResult {
            content: format!("Error: {}", err.message),
            is_error: true,
            error: Some(err),
            value: None,
            meta: None,
            empty: false,
        }
    }
}
