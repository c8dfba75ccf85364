//! `write` (`seed-reference.md` §6.2): resolve, ask the policy for the
//! write's condition, write, record the new version. The tool never stats.

use std::io::Read;

use serde_json::{json, Value};

use super::ObservationPolicy;
use super::{
    envelope, file_path_arg, fs_error, refuse_directory_path, str_arg, with_remedy, FilesConfig,
};
use crate::fs::{ResolvedPath, TextFs, WriteGuard, WriteOperation};
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
    let owner = ctx.session_id.as_deref();
    let (target, intent) = prepare(fs, policy, file_path, ctx)?;
    let out = fs
        .write_text_with_cancel(&target, content, &intent, &ctx.cancel)
        .map_err(|e| fs_error(with_remedy(e)))?;
    if let Some(policy) = policy {
        policy
            .observe(owner, &target, Some(&out.version))
            .map_err(fs_error)?;
    }
    let p = target.display_str();
    let said = said(out.operation);
    // Moved, not serialized: `json!` would copy texts that may be large.
    let mut value = json!({ "path": p, "operation": out.operation.as_str() });
    value["before"] = out.before.map_or(Value::Null, Value::String);
    value["after"] = Value::String(out.after);
    Ok((envelope(&p, said), value))
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
    let owner = ctx.session_id.as_deref();
    let (target, intent) = prepare(fs, policy, file_path, ctx)?;
    let out = fs
        .write_stream(&target, content, &intent, &ctx.cancel)
        .map_err(|e| fs_error(with_remedy(e)))?;
    if let Some(policy) = policy {
        policy
            .observe(owner, &target, Some(&out.version))
            .map_err(fs_error)?;
    }
    let p = target.display_str();
    let value = json!({
        "path": p,
        "operation": out.operation.as_str(),
        "before": null,
        "after": null,
    });
    Ok((envelope(&p, said(out.operation)), value))
}

/// The target and the policy's condition for a write to `file_path`.
fn prepare(
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    file_path: &str,
    ctx: &CallContext,
) -> Result<(ResolvedPath, WriteGuard), ToolError> {
    let target = fs
        .resolve_for("write", file_path, &ctx.workdir)
        .map_err(fs_error)?;
    refuse_directory_path("write", file_path, &target)?;
    let intent = match policy {
        Some(policy) => policy
            .write_intent(ctx.session_id.as_deref(), &target, &ctx.cancel)
            .map_err(|e| fs_error(with_remedy(e)))?,
        None => WriteGuard::None,
    };
    Ok((target, intent))
}

fn said(operation: WriteOperation) -> &'static str {
    match operation {
        WriteOperation::Create => "Created file",
        WriteOperation::Update => "Updated file",
    }
}
