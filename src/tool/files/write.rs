//! `write` (`seed-reference.md` §6.2): resolve, ask the policy for the
//! write's condition, write, record the new version. The tool never stats.

use std::io::Read;

use serde_json::{json, Value};

use super::ObservationPolicy;
use super::{
    envelope, file_path_arg, fs_error, refuse_directory_path, str_arg, with_remedy, FilesConfig,
};
use crate::fs::{ResolvedPath, TextFs, Verb, Version, WriteGuard, WriteOperation};
use crate::tool::{CallContext, ToolError};

/// Run `write`.
pub(crate) fn write(
    _cfg: &FilesConfig,
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    args: &Value,
    ctx: &CallContext,
) -> Result<(String, Value), ToolError> {
    let file_path = file_path_arg(args)?;
    let content = str_arg(args, "content");
    let (target, intent) = prepare(fs, policy, file_path, ctx)?;
    let out = fs
        .write_text_with_cancel(&target, content, &intent, &ctx.cancel)
        .map_err(|e| fs_error(with_remedy(e)))?;
    let (text, mut value) = written(policy, ctx, &target, &out.version, out.operation)?;
    // Moved, not serialized: `json!` would copy texts that may be large.
    value["before"] = out.before.map_or(Value::Null, Value::String);
    value["after"] = Value::String(out.after);
    Ok((text, value))
}

/// Run `write` with the content read from `content` until its end, held one
/// chunk at a time (`dsh-search write` streams its standard input so): the
/// same checks, policy and result text as [`write()`]; the value has no
/// `before` or `after` text (both `null`).
pub(crate) fn write_stream(
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    file_path: &str,
    content: &mut dyn Read,
    ctx: &CallContext,
) -> Result<(String, Value), ToolError> {
    if crate::js::is_blank(file_path) {
        return Err(ToolError::plain("file_path must be a non-empty string"));
    }
    let (target, intent) = prepare(fs, policy, file_path, ctx)?;
    let out = fs
        .write_stream(&target, content, &intent, &ctx.cancel)
        .map_err(|e| fs_error(with_remedy(e)))?;
    let (text, mut value) = written(policy, ctx, &target, &out.version, out.operation)?;
    value["before"] = Value::Null;
    value["after"] = Value::Null;
    Ok((text, value))
}

/// The target and the policy's condition for a write to `file_path`.
fn prepare(
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    file_path: &str,
    ctx: &CallContext,
) -> Result<(ResolvedPath, WriteGuard), ToolError> {
    let target = fs
        .resolve_for(Verb::Write, file_path, &ctx.workdir)
        .map_err(fs_error)?;
    refuse_directory_path(Verb::Write, file_path, &target)?;
    let intent = match policy {
        Some(policy) => policy
            .write_intent(ctx.session_id.as_deref(), &target, &ctx.cancel)
            .map_err(|e| fs_error(with_remedy(e)))?,
        None => WriteGuard::None,
    };
    Ok((target, intent))
}

/// After a write landed: the session observes the version it wrote (so
/// the next edit needs no read), and the result's text and value (without
/// `before` and `after`, which the caller adds).
fn written(
    policy: Option<&ObservationPolicy>,
    ctx: &CallContext,
    target: &ResolvedPath,
    version: &Version,
    operation: WriteOperation,
) -> Result<(String, Value), ToolError> {
    if let Some(policy) = policy {
        policy
            .observe(ctx.session_id.as_deref(), target, Some(version))
            .map_err(fs_error)?;
    }
    let p = target.display_str();
    let text = envelope(&p, said(operation));
    Ok((text, json!({ "path": p, "operation": operation.as_str() })))
}

fn said(operation: WriteOperation) -> &'static str {
    match operation {
        WriteOperation::Create => "Created file",
        WriteOperation::Update => "Updated file",
    }
}
