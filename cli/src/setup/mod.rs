//! What every command sets up, in one place: the common options
//! ([`Common`]), the configuration, the workspace and its backend
//! ([`workspace`]), the session store, the tools, the call context, and
//! how a result is printed and becomes an exit status. The command line's
//! subcommands (`crate::cli`) and the servers (`crate::server`) build on
//! it and never on each other; it imports neither.
//!
//! With `--session ID` one persistent session store (the state directory:
//! `$DSH_SEARCH_STATE_DIR`, `$XDG_STATE_HOME/dsh-search` or
//! `~/.local/state/dsh-search`) holds both the observation policy's reads
//! and the guard's counters, so that separate invocations add up.

mod options;
pub(crate) mod workspace;

pub(crate) use options::{Common, Format, StructuredContent};

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use dsh_search::backend::SearchBackend;
use dsh_search::config::Config;
use dsh_search::tool::{CallContext, ToolResult, Tools};
use dsh_search::Sessions;
use serde_json::Value;

/// The configuration `--config` names, or the defaults.
pub(crate) fn load_config(common: &Common) -> Result<Config, String> {
    match &common.config {
        Some(path) => Config::load(path).map_err(|e| e.to_string()),
        None => Ok(Config::default()),
    }
}

/// The backend the common options name, over their workspace, with the
/// configuration's `graceMs` for rg (`--format raw`).
pub(crate) fn backend(common: &Common) -> Result<Arc<dyn SearchBackend>, String> {
    let config = load_config(common)?;
    Ok(workspace::open(common, &config)?.backend(&config))
}

/// The deployment's tools for the common options: the configured backend,
/// a local spill store, the guard.
pub(crate) fn make_tools(common: &Common) -> Result<Tools, String> {
    make_tools_with(common, load_config(common)?, session_store(common)?)
}

/// [`make_tools`] with the configuration given as a value instead of
/// `--config`, and the sessions given: with them, the observation policy
/// and the guard's counters over that one store; without, the bare
/// provider (no observation policy, unconditional writes and edits) and a
/// guard that counts in memory.
pub(crate) fn make_tools_with(
    common: &Common,
    config: Config,
    sessions: Option<Arc<Sessions>>,
) -> Result<Tools, String> {
    let workspace = workspace::open(common, &config)?;
    workspace
        .tools(config, sessions)
        .map_err(workspace::describe)
}

/// The persistent session store for `--session`, `None` without it.
pub(crate) fn session_store(common: &Common) -> Result<Option<Arc<Sessions>>, String> {
    if common.session.is_none() {
        return Ok(None);
    }
    let dir = state_dir_from_env().ok_or(
        "--session needs a state directory: set DSH_SEARCH_STATE_DIR, XDG_STATE_HOME or HOME",
    )?;
    Ok(Some(Arc::new(Sessions::persistent(dir))))
}

/// The tools and the call context of the common options, in that order.
pub(crate) fn tools_and_context(common: &Common) -> Result<(Tools, CallContext), String> {
    Ok((make_tools(common)?, context(common)?))
}

/// One call through the tools' dispatch, printed in `format`.
pub(crate) fn run_call(common: &Common, tool: &str, args: &Value, format: Format) -> u8 {
    let (tools, ctx) = match tools_and_context(common) {
        Ok(both) => both,
        Err(e) => return fail(e),
    };
    let result = tools.call(tool, args, &ctx);
    match format {
        Format::Json => match serde_json::to_string(&result) {
            Ok(s) => print(&s),
            Err(e) => return fail(e),
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
pub(crate) fn exit_code(result: &ToolResult) -> u8 {
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

/// The state directory of `--session`: `$DSH_SEARCH_STATE_DIR`, else
/// `$XDG_STATE_HOME/dsh-search`, else `$HOME/.local/state/dsh-search`. Read
/// here, at the edge; the library's [`Sessions::persistent`] takes a
/// directory.
///
/// # Platform behavior
///
/// On Windows, where `HOME` is usually unset, `%LOCALAPPDATA%\dsh-search`
/// comes last.
pub(crate) fn state_dir_from_env() -> Option<PathBuf> {
    let env = |k: &str| {
        std::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(dir) = env("DSH_SEARCH_STATE_DIR") {
        return Some(dir);
    }
    if let Some(dir) = env("XDG_STATE_HOME").filter(|d| d.is_absolute()) {
        return Some(dir.join("dsh-search"));
    }
    if let Some(home) = env("HOME") {
        return Some(home.join(".local/state/dsh-search"));
    }
    #[cfg(windows)]
    if let Some(dir) = env("LOCALAPPDATA") {
        return Some(dir.join("dsh-search"));
    }
    None
}

/// Print a command-level failure (not a tool result) and return exit
/// status 2.
pub(crate) fn fail(msg: impl std::fmt::Display) -> u8 {
    use std::io::Write;
    // Not `eprintln!`, which panics when stderr is closed.
    let _ = writeln!(std::io::stderr(), "dsh-search: {msg}");
    2
}
