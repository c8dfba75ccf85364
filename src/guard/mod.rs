//! The search-path guard (`contract.md` §7): [`Guard`] denies, before they
//! run, the calls that cannot help (a missing path, an edit whose
//! `old_string` is absent or ambiguous, a grep that keeps finding nothing
//! on one target), with one line that says what to do instead. `target`
//! resolves and looks up paths, `message` words the denials, `counters`
//! keeps the zero-result counts.

mod counters;
mod message;
mod target;

use std::sync::Arc;

use serde_json::Value;

use crate::fs::count_occurrences;
use crate::fs::decode_whole;
use crate::fs::DynFileSystem;
use crate::tool::{CallContext, CallGuard, ToolName, ToolResult};

use crate::config::GuardConfig;
pub use counters::{MemoryCounters, ZeroResultStore};

use target::{Presence, Workdir};

use crate::cancel::CancelToken;

/// The search-path guard. Cheap to share: `check` and `after` take `&self`.
///
/// The search-path guard (`contract.md` §7, seed `003_…`).
///
/// It runs on the raw arguments of a call, after schema validation and
/// before the tool's own checks, and either allows the call (`None`) or
/// denies it with a one-line reason, rendered `Error: <reason>` with no code
/// (`seed-reference.md` §7). Its rules:
///
/// - glob or grep whose `path` does not exist, read whose `file_path` does
///   not exist: denied, with the nearest existing directory,
///   the closest names in it and the glob call that lists it;
/// - edit of a file of at most `maxEditBytes` whose `old_string` is absent,
///   or present more than once without `replace_all`, counted exactly as
///   edit counts (BOM stripped, CRLF normalized, non-overlapping);
/// - a grep on a target (its resolved `path`, or the workdir) that found
///   nothing `zeroResultBlock` times in a row in the session: denied, until a
///   grep on that target finds something.
///
/// Whenever it cannot decide (no path, a non-string or blank path, an
/// unusable workdir, a stat failing for another reason than absence, a binary
/// or unreadable file) it allows: the tool then reports what is wrong. It
/// never changes the result of a call it allows.
///
/// It looks at the workspace only through the filesystem the call runs on
/// (the [`DynFileSystem`] a [`Tools`](crate::tool::Tools) passes it), so an
/// in-memory or overlay workspace is guarded as itself, not as the host
/// disk.
#[derive(Clone)]
pub struct Guard {
    config: GuardConfig,
    counters: Arc<dyn ZeroResultStore>,
}

impl std::fmt::Debug for Guard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Guard")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Default for Guard {
    fn default() -> Guard {
        Guard::new(GuardConfig::default())
    }
}

impl Guard {
    /// A guard whose zero-result counters live in memory, per session.
    pub fn new(config: GuardConfig) -> Guard {
        Guard::with_counters(config, Arc::new(MemoryCounters::default()))
    }

    /// A guard whose zero-result counters live in `counters` (e.g. the
    /// persisted session state of the CLI).
    pub fn with_counters(config: GuardConfig, counters: Arc<dyn ZeroResultStore>) -> Guard {
        Guard { config, counters }
    }

    /// The configuration.
    pub fn config(&self) -> &GuardConfig {
        &self.config
    }

    /// Before the call, in the workspace `fs`: `Some(reason)` denies it,
    /// `None` allows it.
    pub fn check(
        &self,
        tool: ToolName,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
    ) -> Option<String> {
        if self.config.disabled {
            return None;
        }
        match tool {
            ToolName::Glob | ToolName::Grep => self.check_search(tool, args, ctx, fs),
            ToolName::Read => check_read(args, ctx, fs),
            ToolName::Edit => self.check_edit(args, ctx, fs),
            ToolName::Write => None,
        }
    }

    /// After a call the guard allowed: count greps that found nothing, per
    /// session and target; a grep that found something resets its target.
    pub fn after(
        &self,
        tool: ToolName,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
        result: &ToolResult,
    ) {
        if self.config.disabled || tool != ToolName::Grep || result.is_error {
            return;
        }
        let Some((session, target)) = grep_target(args, ctx, fs) else {
            return;
        };
        if result.empty {
            self.counters.bump(session, &target.key);
        } else {
            self.counters.reset(session, &target.key);
        }
    }

    /// glob and grep: the path must exist; grep must not be blocked.
    fn check_search(
        &self,
        tool: ToolName,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
    ) -> Option<String> {
        if let Some(raw) = path_arg(args, "path")? {
            let wd = Workdir::usable(fs, &ctx.workdir)?;
            match target::search_target(&wd, raw) {
                Presence::Exists => {}
                Presence::Absent => return missing(&wd, "path", raw, &ctx.cancel),
                Presence::Unknown => return None,
            }
        }
        if tool != ToolName::Grep {
            return None;
        }
        let (session, target) = grep_target(args, ctx, fs)?;
        let count = self.counters.get(session, &target.key);
        (u64::from(count) >= self.config.zero_result_block)
            .then(|| message::zero_result_block(&target.display, count))
    }

    /// edit: `old_string` must be in the file exactly once, or at least once
    /// with `replace_all`, counted as edit counts (`seed-reference.md` §6.3).
    fn check_edit(
        &self,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
    ) -> Option<String> {
        let raw = path_arg(args, "file_path")??;
        let old = args.get("old_string")?.as_str().filter(|s| !s.is_empty())?;
        // Equal strings are the tool's own argument error; leave it to say so.
        if args.get("new_string").and_then(Value::as_str) == Some(old) {
            return None;
        }
        let replace_all = match args.get("replace_all") {
            None | Some(Value::Bool(false)) => false,
            Some(Value::Bool(true)) => true,
            Some(_) => return None,
        };
        let wd = Workdir::usable(fs, &ctx.workdir)?;
        if names_device(raw) {
            return None;
        }
        let path = wd.resolve(raw);
        let bytes = read_bytes(fs, &path, self.config.max_edit_bytes)?;
        // Exactly edit's decoder: a NUL anywhere is binary, strict UTF-8,
        // the leading BOM stripped (`seed-reference.md` §6.3). A cancelled
        // decode or count denies nothing: the tool itself then aborts.
        let text = decode_whole(&bytes, &ctx.cancel)?.ok()?;
        let count = count_occurrences(text, old, &ctx.cancel)?;
        let file = wd.display(&path);
        match count {
            0 => Some(message::edit_not_found(&file)),
            n if n > 1 && !replace_all => Some(message::edit_ambiguous(&file, n)),
            _ => None,
        }
    }
}

/// The dispatch's seam (`contract.md` §5): the guard runs after schema
/// validation and before the tool's own checks, and sees every result.
impl CallGuard for Guard {
    fn check(
        &self,
        tool: ToolName,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
    ) -> Option<String> {
        Guard::check(self, tool, args, ctx, fs)
    }

    fn after(
        &self,
        tool: ToolName,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
        result: &ToolResult,
    ) {
        Guard::after(self, tool, args, ctx, fs, result);
    }
}

/// read: the file must exist.
fn check_read(args: &Value, ctx: &CallContext, fs: &dyn DynFileSystem) -> Option<String> {
    let raw = path_arg(args, "file_path")??;
    let wd = Workdir::usable(fs, &ctx.workdir)?;
    if names_device(raw) {
        return None;
    }
    match target::file_target(&wd, raw).1 {
        Presence::Absent => missing(&wd, "file_path", raw, &ctx.cancel),
        Presence::Exists | Presence::Unknown => None,
    }
}

/// Whether `path` names a Windows device (`NUL`, `src\\aux.txt`): the
/// guard allows it without a look, which would open the device (a read of
/// `CON` waits on the console), and the file tool refuses it with its own
/// clear error (`contract.md` §6). Never on other platforms.
fn names_device(path: &str) -> bool {
    cfg!(windows) && crate::fs::resolve::reserved_segment(path).is_some()
}

/// The denial for `raw`, which does not exist; `None` (allow) when no
/// ancestor can be found to point at.
fn missing(wd: &Workdir<'_>, arg: &str, raw: &str, cancel: &CancelToken) -> Option<String> {
    let near = target::nearest(wd, &wd.resolve(raw), cancel)?;
    Some(message::missing_path(arg, raw, &near))
}

/// The path argument `name`: `Some(None)` when absent, `Some(Some(s))` for a
/// usable string, `None` (cannot decide: allow) for a non-string or a blank
/// string (the tool's own check reports a blank one).
fn path_arg<'a>(args: &'a Value, name: &str) -> Option<Option<&'a str>> {
    match args.get(name) {
        None => Some(None),
        Some(Value::String(s)) if !crate::js::is_blank(s) => Some(Some(s)),
        Some(_) => None,
    }
}

/// The target a grep counts against.
struct Target {
    /// Counter key: the lexical absolute path (`seed-reference.md` §6.1),
    /// in upper case on Windows.
    key: String,
    /// How the model writes it.
    display: String,
}

/// The session and target of a grep, when it has both.
fn grep_target<'a>(
    args: &Value,
    ctx: &'a CallContext,
    fs: &dyn DynFileSystem,
) -> Option<(&'a str, Target)> {
    let session = ctx.session_id.as_deref()?;
    let raw = path_arg(args, "path")?.unwrap_or(".");
    let wd = Workdir::usable(fs, &ctx.workdir)?;
    let p = wd.resolve(raw);
    // On Windows `src` and `SRC` are one directory, so one target: the key
    // in the case Windows compares names in, as the file tools' keys.
    let key = p.to_string_lossy();
    let key = if cfg!(windows) {
        crate::fs::resolve::windows_upcase(&key)
    } else {
        key.into_owned()
    };
    let target = Target {
        key,
        display: wd.display(&p),
    };
    Some((session, target))
}

/// The file's bytes, or `None` when it is no regular file (the tool
/// reports that, or its absence), cannot be read, or is larger than `max`
/// bytes. Read on one open file, never blocking: a file swapped for a
/// FIFO does not hang the guard.
fn read_bytes(fs: &dyn DynFileSystem, path: &std::path::Path, max: u64) -> Option<Vec<u8>> {
    fs.read_file(path, max).ok()?.1
}
