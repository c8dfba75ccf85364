//! `edit` (`seed-reference.md` §6.3): the argument checks, the policy's
//! version guard, the literal edit, the new version recorded.

use serde_json::{json, Value};

use super::{
    file_path_arg, fs_error, refuse_directory_path, str_arg, with_remedy, FilesConfig,
    ObservationPolicy,
};
use crate::fs::{LiteralEdit, TextFs, Verb};
use crate::tool::{CallContext, ToolError};

/// Run `edit`.
pub(crate) fn edit(
    _cfg: &FilesConfig,
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    args: &Value,
    ctx: &CallContext,
) -> Result<(String, Value), ToolError> {
    let file_path = file_path_arg(args)?;
    let old_string = str_arg(args, "old_string");
    let new_string = str_arg(args, "new_string");
    let replace_all = args
        .get("replace_all")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if old_string.is_empty() {
        return Err(ToolError::plain("old_string must be a non-empty string"));
    }
    // Compared raw: strings differing only in CRLF versus LF pass here
    // (`seed-reference.md` §10 item 17).
    if old_string == new_string {
        return Err(ToolError::plain("old_string and new_string must differ"));
    }
    let owner = ctx.session_id.as_deref();
    let target = fs
        .resolve_for(Verb::Edit, file_path, &ctx.workdir)
        .map_err(fs_error)?;
    refuse_directory_path(Verb::Edit, file_path, &target)?;
    let guard = match policy {
        Some(policy) => policy
            .edit_intent(owner, &target, &ctx.cancel)
            .map_err(|e| fs_error(with_remedy(e)))?,
        None => None,
    };
    let literal = LiteralEdit {
        old_string: old_string.to_string(),
        new_string: new_string.to_string(),
        replace_all,
    };
    let out = fs
        .edit_text_with_cancel(&target, &literal, guard.as_ref(), &ctx.cancel)
        .map_err(|e| fs_error(with_remedy(e)))?;
    if let Some(policy) = policy {
        policy
            .observe(owner, &target, Some(&out.version))
            .map_err(fs_error)?;
    }
    let p = target.display_str();
    // The message follows the argument, not the number of replacements.
    let content = if replace_all {
        let p = crate::quoting::shown(&p);
        format!("The file {p} has been updated. All occurrences were successfully replaced.")
    } else {
        let p = crate::quoting::shown(&p);
        format!("The file {p} has been updated successfully.")
    };
    // Moved, not serialized: `json!` would copy texts that may be large.
    let mut value = json!({ "path": p });
    value["before"] = Value::String(out.before);
    value["after"] = Value::String(out.after);
    Ok((content, value))
}
