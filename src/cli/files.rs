//! The file tools on the command line: `read`, `write`, `edit`.
//!
//! Without `--session` the tools run on the bare provider: no observation
//! policy, unconditional writes and edits. With `--session ID` the policy
//! applies and the session's observations persist in the state directory
//! (`$DSH_SEARCH_STATE_DIR`, `$XDG_STATE_HOME/dsh-search` or
//! `~/.local/state/dsh-search`), so `read` then `edit` as two commands
//! behaves like two calls of one session.

use std::io::Read;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{Common, EditArgs, Format, ReadArgs, WriteArgs};
use crate::fs::LocalFs;
use crate::session::Sessions;
use crate::tool::Tools;

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
    run(common, "read", &Value::Object(a))
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
        "write",
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
    run(common, "edit", &a)
}

/// One call through the tools' dispatch (schema, guard, the tool), printed
/// as text.
fn run(common: &Common, tool: &str, args: &Value) -> u8 {
    super::tools::run(common, tool, args, Format::Text)
}

/// The command line's local disk: with cross-process locks in the state
/// directory, so that concurrent invocations serialize like threads do.
pub fn local_fs() -> LocalFs {
    match Sessions::default_state_dir() {
        Some(dir) => LocalFs::new().with_lock_dir(dir.join("locks")),
        None => LocalFs::new(),
    }
}

/// The file tools' side of the command line's [`Tools`]: for `--session`
/// the observation policy over the persistent session store (without it:
/// the bare provider).
pub fn configure(tools: Tools, common: &Common) -> Result<Tools, String> {
    let state_dir = Sessions::default_state_dir();
    Ok(match &common.session {
        Some(_) => {
            let dir = state_dir.ok_or(
                "--session needs a state directory: set DSH_SEARCH_STATE_DIR, XDG_STATE_HOME or HOME",
            )?;
            tools.with_sessions(Arc::new(Sessions::persistent(dir)))
        }
        None => tools.without_observation_policy(),
    })
}
