//! Decoding one line of the MCP server's stdio: a JSON-RPC message for
//! rmcp's service loop, or the error that answers a line that is not one.
//!
//! Pure, like `decode.rs` (its sibling here and in the fuzz targets, which
//! compile both files by `#[path]`; see there why).

use rmcp::model::{
    CallToolRequestParams, ClientRequest, InitializeRequestParams, JsonRpcMessage,
    PaginatedRequestParams,
};
use rmcp::service::{RoleServer, RxJsonRpcMessage};
use rmcp::ErrorData as McpError;
use serde_json::Value;

use super::decode::{envelope, raw_id, too_many_values, too_many_values_message};

/// What one line of stdin is.
#[derive(Debug)]
pub(crate) enum McpLine {
    /// Blank: skipped.
    Blank,
    /// A message for the service loop.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Not a valid message: answered with `error` under `id` (its JSON
    /// text; `None` answers under `null`).
    Reject { error: McpError, id: Option<String> },
    /// A notification that is not valid: JSON-RPC never answers one; `why`
    /// is for the log.
    Ignore { why: String },
}

/// Decode one line (its `\n`, a `\r` before it and a leading UTF-8 BOM
/// are not part of the message).
pub(crate) fn mcp_line(line: &[u8]) -> McpLine {
    let line = trim_line(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return McpLine::Blank;
    }
    if too_many_values(line) {
        let error = McpError::invalid_request(too_many_values_message(), None);
        return match envelope(line) {
            Some((None, true)) => McpLine::Ignore {
                why: too_many_values_message(),
            },
            Some((id, _)) => McpLine::Reject { error, id },
            None => McpLine::Reject { error, id: None },
        };
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line) {
        Ok(message) => match misparsed(&message) {
            Some((error, id)) => McpLine::Reject {
                error,
                id: Some(id),
            },
            None => McpLine::Message(Box::new(message)),
        },
        Err(e) => classify(line, &e),
    }
}

/// The answer to a line that is not a message, written by hand rather
/// than as rmcp's `JsonRpcError`, which leaves out an unknown id (JSON-RPC
/// 2.0 wants `"id": null` there) and would parse the id it echoes.
pub(crate) fn error_line(error: &McpError, id: Option<&str>) -> String {
    let message = Value::from(&*error.message);
    format!(
        r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":{message}}}}}"#,
        id.unwrap_or("null"),
        error.code.0
    )
}

/// Why a line that is not a message was rejected, with the id to answer.
fn classify(line: &[u8], error: &serde_json::Error) -> McpLine {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => {
            let error = McpError::parse_error(format!("the line is not JSON: {e}"), None);
            return match envelope(line) {
                // Too deep, but an object with an id or a method: answered
                // under its id, or (a notification) not at all.
                Some((None, true)) => McpLine::Ignore {
                    why: error.message.to_string(),
                },
                Some((id, _)) => McpLine::Reject { error, id },
                None => McpLine::Reject { error, id: None },
            };
        }
    };
    if value.get("method").is_some() && value.get("id").is_none() {
        return McpLine::Ignore {
            why: format!("ignored a notification that is not valid: {error}"),
        };
    }
    // The id as it came, when it is one JSON-RPC allows.
    let id = value
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .map(|id| raw_id(line).unwrap_or_else(|| id.to_string()));
    McpLine::Reject {
        error: McpError::invalid_request(format!("not a valid JSON-RPC message: {error}"), None),
        id,
    }
}

/// A request for a method this server implements whose params do not
/// parse: rmcp takes it for a custom request and would answer "method not
/// found" (`-32601`); it is `-32602`, invalid params, with serde's reason.
fn misparsed(message: &RxJsonRpcMessage<RoleServer>) -> Option<(McpError, String)> {
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CustomRequest(custom) = &request.request else {
        return None;
    };
    let params = custom.params.clone().unwrap_or(Value::Null);
    let error = match custom.method.as_str() {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "tools/list" => serde_json::from_value::<Option<PaginatedRequestParams>>(params).err(),
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params).err(),
        _ => None,
    }?;
    let why = format!("invalid params for {}: {error}", custom.method);
    Some((
        McpError::invalid_params(why, None),
        request.id.clone().into_json_value().to_string(),
    ))
}

/// A line without its `\n`, a `\r` before it and a leading UTF-8 BOM.
fn trim_line(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}
