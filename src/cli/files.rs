//! The file tools on the command line: `read`, `write`, `edit`.
//!
//! Without `--session` the tools run on the bare provider: no observation
//! policy, unconditional writes and edits. With `--session ID` the policy
//! applies and the session's observations persist in the state directory
//! (`$DSH_SEARCH_STATE_DIR`, `$XDG_STATE_HOME/dsh-search` or
//! `~/.local/state/dsh-search`), so `read` then `edit` as two commands
//! behaves like two calls of one session.

use std::io::{Read, Write};
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{Common, EditArgs, ReadArgs, WriteArgs};
use crate::fs::LocalFs;
use crate::session::Sessions;
use crate::tool::files::{self, FilesConfig, ObservationPolicy};
use crate::tool::{CallContext, ToolError, ToolResult};

type ToolFn = fn(
    &FilesConfig,
    &dyn crate::fs::FileSystem,
    Option<&ObservationPolicy>,
    &Value,
    &CallContext,
) -> Result<(String, Value), ToolError>;

/// `dsh-search read`.
pub fn read(common: &Common, args: &ReadArgs) -> u8 {
    let mut a = Map::new();
    a.insert("file_path".into(), json!(args.file));
    if let Some(o) = args.offset {
        a.insert("offset".into(), json!(o));
    }
    if let Some(l) = args.limit {
        a.insert("limit".into(), json!(l));
    }
    run(common, files::read, &Value::Object(a))
}

/// `dsh-search write`.
pub fn write(common: &Common, args: &WriteArgs) -> u8 {
    let mut bytes = Vec::new();
    if let Err(e) = std::io::stdin().read_to_end(&mut bytes) {
        return super::fail(format!("cannot read standard input: {e}"));
    }
    let Ok(content) = String::from_utf8(bytes) else {
        return super::fail("standard input is not UTF-8 text");
    };
    run(
        common,
        files::write,
        &json!({ "file_path": args.file, "content": content }),
    )
}

/// `dsh-search edit`.
pub fn edit(common: &Common, args: &EditArgs) -> u8 {
    let mut a = json!({
        "file_path": args.file,
        "old_string": args.old,
        "new_string": args.new,
    });
    if args.replace_all {
        a["replace_all"] = json!(true);
    }
    run(common, files::edit, &a)
}

fn run(common: &Common, tool: ToolFn, args: &Value) -> u8 {
    let cfg = match load_config(common) {
        Ok(cfg) => cfg,
        Err(msg) => return super::fail(msg),
    };
    let workdir = match common.workdir() {
        Ok(dir) => dir,
        Err(e) => return super::fail(format!("cannot determine the current directory: {e}")),
    };
    let state_dir = Sessions::default_state_dir();
    let mut fs = LocalFs::new();
    if let Some(dir) = &state_dir {
        fs = fs.with_lock_dir(dir.join("locks"));
    }
    let mut ctx = CallContext::new(workdir);
    let policy = match &common.session {
        Some(id) => {
            let Some(dir) = state_dir else {
                return super::fail(
                    "--session needs a state directory: set DSH_SEARCH_STATE_DIR, XDG_STATE_HOME or HOME",
                );
            };
            ctx = ctx.session(id.clone());
            Some(ObservationPolicy::new(Arc::new(Sessions::persistent(dir))))
        }
        None => None,
    };
    let result = match tool(&cfg, &fs, policy.as_ref(), args, &ctx) {
        Ok((content, value)) => ToolResult::ok(content, value),
        Err(e) => ToolResult::error(e),
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", result.content);
    let _ = out.flush();
    if result.is_error {
        2
    } else {
        0
    }
}

/// The file tools' keys from `--config`; other keys belong to other tools.
fn load_config(common: &Common) -> Result<FilesConfig, String> {
    let mut cfg = FilesConfig::default();
    let Some(path) = &common.config else {
        return Ok(cfg);
    };
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not valid JSON: {e}", path.display()))?;
    let Value::Object(map) = value else {
        return Err(format!("{} must hold a JSON object", path.display()));
    };
    for key in FilesConfig::KEYS {
        if let Some(v) = map.get(key) {
            cfg.set(key, v)?;
        }
    }
    Ok(cfg)
}
