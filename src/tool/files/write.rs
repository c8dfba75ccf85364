//! `write` (`seed-reference.md` §6.2): resolve, ask the policy for the
//! write's condition, write, record the new version. The tool never stats.

use serde_json::{json, Value};

use super::ObservationPolicy;
use super::{envelope, file_path_arg, fs_error, str_arg, with_remedy, FilesConfig};
use crate::fs::{TextFs, WriteGuard, WriteOperation};
use crate::tool::{CallContext, ToolError};

/// Run `write`.
pub fn write(
    _cfg: &FilesConfig,
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    args: &Value,
    ctx: &CallContext,
) -> Result<(String, Value), ToolError> {
    let file_path = file_path_arg(args)?;
    let content = str_arg(args, "content");
    let owner = ctx.session_id.as_deref();
    let target = fs.resolve(file_path, &ctx.workdir).map_err(fs_error)?;
    let intent = match policy {
        Some(policy) => policy
            .write_intent(owner, &target)
            .map_err(|e| fs_error(with_remedy(e)))?,
        None => WriteGuard::None,
    };
    let out = fs
        .write_text(&target, content, &intent)
        .map_err(|e| fs_error(with_remedy(e)))?;
    if let Some(policy) = policy {
        policy
            .observe(owner, &target, Some(&out.version))
            .map_err(fs_error)?;
    }
    let p = target.display_str();
    let said = match out.operation {
        WriteOperation::Create => "Created file",
        WriteOperation::Update => "Updated file",
    };
    let value = json!({
        "path": p,
        "operation": out.operation.as_str(),
        "before": out.before,
        "after": out.after,
    });
    Ok((envelope(&p, said), value))
}
