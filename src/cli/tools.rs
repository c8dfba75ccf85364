//! The model-facing tools on the command line: `glob`, `grep` (text and
//! json formats), `call` and `definitions` (`contract.md` §8).
//!
//! A CLI call is a direct call: over-cap results spill to the local store
//! (when `--session` names an owner) and the result carries its meta.

use std::io::Write;
use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::{CallArgs, Common, Format, GlobArgs, GrepArgs};
use crate::config::Config;
use crate::guard::Guard;
use crate::session::Sessions;
use crate::spill::LocalSpillStore;
use crate::tool::{definitions, CallContext, ToolResult, Tools};

/// `dsh-search glob --format text|json`.
pub fn glob(common: &Common, args: &GlobArgs) -> u8 {
    let mut obj = Map::new();
    obj.insert("pattern".into(), json!(args.pattern));
    if let Some(p) = &args.path {
        obj.insert("path".into(), json!(p));
    }
    run(common, "glob", &Value::Object(obj), args.format)
}

/// `dsh-search grep --format text|json`.
pub fn grep(common: &Common, args: &GrepArgs) -> u8 {
    let mut obj = Map::new();
    obj.insert("pattern".into(), json!(args.pattern));
    if let Some(p) = &args.path {
        obj.insert("path".into(), json!(p));
    }
    if let Some(i) = &args.include {
        obj.insert("include".into(), json!(i));
    }
    run(common, "grep", &Value::Object(obj), args.format)
}

/// `dsh-search call TOOL JSON`.
pub fn call(common: &Common, args: &CallArgs) -> u8 {
    if args.format == Format::Raw {
        return super::fail("--format raw is only available for glob and grep");
    }
    let value: Value = match serde_json::from_str(&args.arguments) {
        Ok(v) => v,
        Err(e) => return super::fail(format!("the arguments are not valid JSON: {e}")),
    };
    run(common, &args.tool, &value, args.format)
}

/// `dsh-search definitions`.
pub fn definitions(common: &Common) -> u8 {
    let config = match load_config(common) {
        Ok(c) => c,
        Err(e) => return super::fail(e),
    };
    print(&definitions::to_json(&config));
    0
}

pub(crate) fn load_config(common: &Common) -> Result<Config, String> {
    match &common.config {
        Some(path) => Config::load(path),
        None => Ok(Config::default()),
    }
}

/// The deployment's tools for the common options: the configured backend,
/// a local spill store, the guard.
pub fn make_tools(common: &Common) -> Result<Tools, String> {
    make_tools_with(common, load_config(common)?)
}

/// [`make_tools`] with the configuration given as a value instead of
/// `--config` (the Node binding's `new Tools({config})`).
pub fn make_tools_with(common: &Common, config: Config) -> Result<Tools, String> {
    let store = LocalSpillStore::new(config.spill.root.clone())
        .map_err(|e| format!("cannot use the spill root: {e}"))?;
    let workspace = super::workspace::Workspace::open(common, super::files::local_fs())?;
    let backend = workspace.backend(common.backend, &config)?;
    let tools = Tools::new(config, backend)
        .with_spill_store(Arc::new(store))
        .with_filesystem(workspace.filesystem());
    let tools = super::files::configure(tools, common)?;
    // The search-path guard is on by default (`contract.md` §7); with
    // `--session` its counters persist in the session state, like the
    // read observations, so that separate invocations add up.
    let guard = match (&common.session, Sessions::default_state_dir()) {
        (Some(_), Some(dir)) => Guard::with_counters(
            tools.config().guard.clone(),
            Arc::new(Sessions::persistent(dir)),
        ),
        _ => Guard::new(tools.config().guard.clone()),
    };
    Ok(tools.with_guard(Arc::new(guard)))
}

/// One call through the tools' dispatch, printed in `format`.
pub(crate) fn run(common: &Common, tool: &str, args: &Value, format: Format) -> u8 {
    let tools = match make_tools(common) {
        Ok(t) => t,
        Err(e) => return super::fail(e),
    };
    let ctx = match context(common) {
        Ok(c) => c,
        Err(e) => return super::fail(e),
    };
    let result = tools.call(tool, args, &ctx);
    match format {
        Format::Json => match serde_json::to_string(&result) {
            Ok(s) => print(&s),
            Err(e) => return super::fail(e),
        },
        _ => print(&result.content),
    }
    exit_code(&result)
}

/// The call context of the common options: the workdir, the session, the
/// signals' cancellation.
pub(crate) fn context(common: &Common) -> Result<CallContext, String> {
    let workdir = common
        .workdir()
        .and_then(std::path::absolute)
        .map_err(|e| format!("cannot determine the working directory: {e}"))?;
    let mut ctx = CallContext::new(workdir);
    ctx.session_id = common.session.clone();
    ctx.cancel = common.cancel.clone();
    Ok(ctx)
}

/// 2 for an error result, 1 for an empty search, 0 otherwise.
pub fn exit_code(result: &ToolResult) -> u8 {
    if result.is_error {
        2
    } else if result.empty {
        1
    } else {
        0
    }
}

/// Print `text` and a newline; a closed stdout is not an error worth a
/// message.
pub(crate) fn print(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.write_all(b"\n");
    let _ = out.flush();
}
