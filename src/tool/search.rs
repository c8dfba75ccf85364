//! From a backend's [`Outcome`] to a canonical value or a `SearchError`:
//! the failure ladder of `contract.md` §3 (`seed-reference.md` §2.4, HEAD),
//! the same for both backends; and, for an indexed workspace, which path
//! of the index answered ([`Searched`]).

use std::sync::Arc;

use serde_json::Value;

use crate::backend::SearchBackend;
use crate::cancel::CancelToken;
use crate::config::SearchConfig;
use crate::event::Event;
use crate::index::{Answer, IndexedBackend};
use crate::js::js_trim;
use crate::outcome::{by_path_then_line, GlobResults, GrepResults, Outcome, Status};
use crate::request::{GlobRequest, GrepRequest};
use crate::tool::args::{GlobArgs, GrepArgs};
use crate::tool::display::display_path;
use crate::tool::result::ToolError;
use crate::tool::{CallContext, ToolName};

/// What the tools search through: any backend, or the backend of a live
/// index, which also says which of its paths answered each call
/// (`docs/index.md`, "What `meta` says"). The index is a layer below the
/// tools and above the backend: the tools name its backend here, and the
/// [`SearchBackend`] trait knows nothing of it.
#[derive(Clone)]
pub(super) enum Searcher {
    /// A backend without an index: no answer to report.
    Backend(Arc<dyn SearchBackend>),
    /// An indexed workspace's backend.
    Index(Arc<IndexedBackend>),
}

impl Searcher {
    /// The backend, whichever it is.
    pub(super) fn backend(&self) -> &dyn SearchBackend {
        match self {
            Searcher::Backend(b) => &**b,
            Searcher::Index(b) => &**b,
        }
    }

    /// The index's backend, when the searches go through one.
    pub(super) fn index(&self) -> Option<&IndexedBackend> {
        match self {
            Searcher::Backend(_) => None,
            Searcher::Index(b) => Some(b),
        }
    }

    /// [`SearchBackend::glob`], and which path of the index answered.
    fn glob(&self, req: &GlobRequest) -> Searched<Outcome<GlobResults>> {
        match self {
            Searcher::Backend(b) => Searched::unanswered(b.glob(req)),
            Searcher::Index(b) => Searched::from(b.glob_answered(req)),
        }
    }

    /// [`SearchBackend::grep`], and which path of the index answered.
    fn grep(&self, req: &GrepRequest) -> Searched<Outcome<GrepResults>> {
        match self {
            Searcher::Backend(b) => Searched::unanswered(b.grep(req)),
            Searcher::Index(b) => Searched::from(b.grep_answered(req)),
        }
    }
}

/// What a search at the tool level gives: its value (an outcome, a
/// canonical value or the failure ladder's error, a tool result), and
/// which path of the workspace's index answered it: `None` without an
/// index, or when the call ended before a search was asked for.
#[derive(Debug)]
pub(super) struct Searched<T> {
    /// The value.
    pub(super) value: T,
    /// Which path of the index answered.
    pub(super) answer: Option<Answer>,
}

impl<T> Searched<T> {
    /// A value no index answered for.
    pub(super) fn unanswered(value: T) -> Searched<T> {
        Searched {
            value,
            answer: None,
        }
    }

    /// The same answer for another value (the next step of the call).
    pub(super) fn map<U>(self, f: impl FnOnce(T) -> U) -> Searched<U> {
        Searched {
            value: f(self.value),
            answer: self.answer,
        }
    }
}

impl<T> From<(T, Answer)> for Searched<T> {
    fn from((value, answer): (T, Answer)) -> Searched<T> {
        Searched {
            value,
            answer: Some(answer),
        }
    }
}

/// glob's canonical value: `{ root, paths }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GlobValue {
    /// `.` without a path, else the path in display form.
    pub(crate) root: String,
    /// Every listed file in rg's order, in display form.
    pub(crate) paths: Vec<String>,
}

/// One grep match: `{ path, lineNumber, line }`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct GrepMatch {
    /// The file, in display form.
    pub(crate) path: String,
    /// 1-based line number.
    pub(crate) line_number: u64,
    /// The whole line without its `\n` or `\r\n`.
    pub(crate) line: String,
}

/// grep's canonical value: `{ matches }`, ordered by display path bytes,
/// then line number (contract D2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct GrepValue {
    /// The matches.
    pub(crate) matches: Vec<GrepMatch>,
}

impl GlobValue {
    /// As JSON, its strings moved rather than copied.
    pub(crate) fn into_json(self) -> Value {
        let paths = self.paths.into_iter().map(Value::String).collect();
        let mut obj = serde_json::Map::new();
        obj.insert("root".to_string(), Value::String(self.root));
        obj.insert("paths".to_string(), Value::Array(paths));
        Value::Object(obj)
    }
}

impl GrepValue {
    /// As JSON, its strings moved rather than copied (a spilled grep holds
    /// tens of thousands of matches).
    pub(crate) fn into_json(self) -> Value {
        let matches = self
            .matches
            .into_iter()
            .map(|m| {
                let mut obj = serde_json::Map::new();
                obj.insert("path".to_string(), Value::String(m.path));
                obj.insert("lineNumber".to_string(), Value::from(m.line_number));
                obj.insert("line".to_string(), Value::String(m.line));
                Value::Object(obj)
            })
            .collect();
        let mut obj = serde_json::Map::new();
        obj.insert("matches".to_string(), Value::Array(matches));
        Value::Object(obj)
    }
}

/// A `SearchError` (`seed-reference.md` §4.1).
pub(super) fn search_error(code: &str, message: impl Into<String>) -> ToolError {
    ToolError::coded("SearchError", code, message)
}

fn aborted(tool: ToolName) -> ToolError {
    search_error(
        "SEARCH_ABORTED",
        format!("{tool} was aborted before completion (tool timeout or caller cancellation)"),
    )
}

fn launch_failed(tool: ToolName) -> ToolError {
    search_error(
        "SEARCH_FAILED",
        format!("{tool} could not start its search command (ripgrep launch failed)"),
    )
}

/// Whether any of the tokens was cancelled: the call's own (which the
/// deadline cancels) or the caller's.
fn any_cancelled(tokens: &[&CancelToken]) -> bool {
    tokens.iter().any(|t| t.is_cancelled())
}

/// The stderr excerpt: rg's stderr as the seam would have kept it (the
/// lines, each ending in `\n`, tail-kept within `max_bytes`), JS-trimmed,
/// with ` [stderr truncated]` when bytes were dropped. `None` when empty.
pub(super) fn stderr_excerpt(lines: &[String], max_bytes: u64) -> Option<String> {
    let mut text = String::new();
    for l in lines {
        // rg's messages quote file names raw: escaped here (D6).
        text.push_str(&crate::quoting::escaped_line(l));
        text.push('\n');
    }
    let max = usize::try_from(max_bytes).unwrap_or(usize::MAX);
    let lossy = text.len() > max;
    let kept = crate::spill::utf8_tail(&text, max);
    let trimmed = js_trim(kept);
    if trimmed.is_empty() {
        return None;
    }
    Some(if lossy {
        format!("{trimmed} [stderr truncated]")
    } else {
        trimmed.to_string()
    })
}

/// rg's messages (a line starting with `rg: ` and the lines that continue
/// it) in byte order. rg prints them in the order its threads meet them,
/// which changes from run to run and differs between the backends; the
/// tool's text must not (README, deliberate difference D5).
fn in_stable_order(lines: &[String]) -> Vec<String> {
    let mut messages: Vec<Vec<&String>> = Vec::new();
    for l in lines {
        match messages.last_mut() {
            Some(m) if !l.starts_with("rg: ") => m.push(l),
            _ => messages.push(vec![l]),
        }
    }
    messages.sort();
    messages.into_iter().flatten().cloned().collect()
}

/// Steps 2–9 of the failure ladder (`contract.md` §3) for an outcome: `Ok(true)` for exit 0 (parse
/// the results), `Ok(false)` for exit 1 (an empty value), or the error.
fn failure_ladder<T>(
    tool: ToolName,
    outcome: &Outcome<T>,
    tokens: &[&CancelToken],
    config: &SearchConfig,
) -> Result<bool, ToolError> {
    // A search that could not start is a launch failure even when the
    // signal aborted meanwhile (seed §2.4 step 3).
    if let Status::LaunchFailed(_) = outcome.status {
        return Err(launch_failed(tool));
    }
    // Step 5: an abort wins over any exit code, even 0.
    if any_cancelled(tokens) || outcome.status == Status::Cancelled {
        return Err(aborted(tool));
    }
    let code = match &outcome.status {
        Status::Signaled(sig) => {
            return Err(search_error(
                "SEARCH_FAILED",
                format!(
                    "{tool} search command was killed by signal {}",
                    sig.as_deref().unwrap_or("(unknown)")
                ),
            ))
        }
        // Contract D4: both backends stop at the budget, so there is no
        // partial stdout to measure; the seam's "retained" wording applies.
        Status::OverBudget => {
            return Err(search_error(
                "SEARCH_RAW_OUTPUT_OVERFLOW",
                format!(
                    "{tool} produced more raw output than the subprocess seam retained within the {}-byte cap; narrow pattern, path, or include and retry",
                    config.raw_output_max_bytes
                ),
            ))
        }
        // The rg backend's --json line that was not one of rg's messages
        // (seed §2.1): the whole search fails.
        Status::Malformed(detail) => {
            return Err(search_error(
                "SEARCH_FAILED",
                format!("{tool} received malformed ripgrep --json output ({detail})"),
            ))
        }
        Status::Exited(code) => *code,
        Status::Cancelled | Status::LaunchFailed(_) => unreachable!("handled above"),
    };
    match code {
        0 => Ok(true),
        1 => Ok(false),
        n => {
            let excerpt =
                stderr_excerpt(&in_stable_order(&outcome.stderr), config.stderr_max_bytes);
            let lower = excerpt.as_deref().unwrap_or("").to_lowercase();
            if lower.contains("regex parse error") || lower.contains("error parsing glob") {
                return Err(search_error(
                    "SEARCH_INVALID_PATTERN",
                    format!(
                        "{tool} pattern rejected by ripgrep: {}",
                        excerpt.unwrap_or_default()
                    ),
                ));
            }
            let mut msg = format!("{tool} search failed (exit {n})");
            if let Some(e) = excerpt {
                msg.push_str(": ");
                msg.push_str(&e);
            }
            Err(search_error("SEARCH_FAILED", msg))
        }
    }
}

/// Run glob through `searcher`. `cancel` is the call's own token (handed
/// to the backend); `ctx.cancel` is the caller's.
pub(super) fn run_glob(
    searcher: &Searcher,
    args: &GlobArgs,
    ctx: &CallContext,
    cancel: &CancelToken,
    config: &SearchConfig,
) -> Searched<Result<GlobValue, ToolError>> {
    let tokens = [cancel, &ctx.cancel];
    if any_cancelled(&tokens) {
        return Searched::unanswered(Err(aborted(ToolName::Glob)));
    }
    let req = GlobRequest {
        pattern: args.pattern.clone(),
        path: args.path.clone().map(Into::into),
        workdir: ctx.workdir.clone(),
        cancel: cancel.clone(),
        raw_budget: Some(config.raw_output_max_bytes),
    };
    // Node's spawn refuses an argv element holding NUL before any process
    // exists: the launch failure, on both backends, without asking them.
    if req.nul_argument().is_some() {
        return Searched::unanswered(Err(launch_failed(ToolName::Glob)));
    }
    searcher
        .glob(&req)
        .map(|outcome| glob_value(outcome, args, ctx, &tokens, config))
}

/// glob's value from its outcome, or the failure ladder's error.
fn glob_value(
    outcome: Outcome<GlobResults>,
    args: &GlobArgs,
    ctx: &CallContext,
    tokens: &[&CancelToken],
    config: &SearchConfig,
) -> Result<GlobValue, ToolError> {
    let root = match &args.path {
        Some(p) => display_path(p, &ctx.workdir),
        None => ".".to_string(),
    };
    if !failure_ladder(ToolName::Glob, &outcome, tokens, config)? {
        return Ok(GlobValue {
            root,
            paths: Vec::new(),
        });
    }
    // The seed parses the `--files` stdout (`seed-reference.md` §2.2):
    // split on `\n`, empty segments skipped, so a name holding `\n` becomes
    // two entries, whichever backend listed it. Contract D1: file names
    // that are not UTF-8 are decoded lossily.
    let mut paths = Vec::with_capacity(outcome.results.files.len());
    for f in outcome.results.files {
        if f.is_empty() || memchr::memchr(b'\n', &f).is_some() {
            paths.extend(
                f.split(|&b| b == b'\n')
                    .filter(|seg| !seg.is_empty())
                    .map(|seg| display_path(&String::from_utf8_lossy(seg), &ctx.workdir)),
            );
            continue;
        }
        // The common case, a relative UTF-8 path, keeps its buffer.
        match String::from_utf8(f) {
            Ok(p) if !p.starts_with('/') => paths.push(p),
            Ok(p) => paths.push(display_path(&p, &ctx.workdir)),
            Err(e) => paths.push(display_path(
                &String::from_utf8_lossy(e.as_bytes()),
                &ctx.workdir,
            )),
        }
    }
    Ok(GlobValue { root, paths })
}

/// Run grep through `searcher`.
pub(super) fn run_grep(
    searcher: &Searcher,
    args: &GrepArgs,
    ctx: &CallContext,
    cancel: &CancelToken,
    config: &SearchConfig,
) -> Searched<Result<GrepValue, ToolError>> {
    let tokens = [cancel, &ctx.cancel];
    if any_cancelled(&tokens) {
        return Searched::unanswered(Err(aborted(ToolName::Grep)));
    }
    let req = GrepRequest {
        pattern: args.pattern.clone(),
        path: args.path.clone().map(Into::into),
        include: args.include.clone(),
        workdir: ctx.workdir.clone(),
        cancel: cancel.clone(),
        raw_budget: Some(config.raw_output_max_bytes),
    };
    // As for glob: no process could be started with a NUL in its argv.
    if req.nul_argument().is_some() {
        return Searched::unanswered(Err(launch_failed(ToolName::Grep)));
    }
    searcher
        .grep(&req)
        .map(|outcome| grep_value(outcome, ctx, &tokens, config))
}

/// grep's value from its outcome, or the failure ladder's error.
fn grep_value(
    outcome: Outcome<GrepResults>,
    ctx: &CallContext,
    tokens: &[&CancelToken],
    config: &SearchConfig,
) -> Result<GrepValue, ToolError> {
    if !failure_ladder(ToolName::Grep, &outcome, tokens, config)? {
        return Ok(GrepValue::default());
    }
    // A file's matches come one after another: its display path is worked
    // out once (it resolves the workdir for an absolute path).
    let mut last: Option<(&[u8], String)> = None;
    let mut matches: Vec<GrepMatch> = outcome
        .results
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Match(m) => Some(m),
            _ => None,
        })
        .map(|m| {
            let path = match &last {
                Some((raw, shown)) if *raw == &m.path[..] => shown.clone(),
                _ => {
                    // Contract D1 and D3: lossy paths and lines.
                    let shown = display_path(&String::from_utf8_lossy(&m.path), &ctx.workdir);
                    last = Some((&m.path[..], shown.clone()));
                    shown
                }
            };
            GrepMatch {
                path,
                line_number: m.line_number,
                line: strip_terminator(&String::from_utf8_lossy(&m.lines)).to_string(),
            }
        })
        .collect();
    // Contract D2: rg's file order varies from run to run; ours does not.
    matches.sort_by(|a, b| {
        by_path_then_line(
            (a.path.as_bytes(), a.line_number),
            (b.path.as_bytes(), b.line_number),
        )
    });
    Ok(GrepValue { matches })
}

/// Remove one trailing `\n` and the `\r` before it, if any (`/\r?\n$/`);
/// a lone trailing `\r` stays.
fn strip_terminator(line: &str) -> &str {
    match line.strip_suffix('\n') {
        Some(l) => l.strip_suffix('\r').unwrap_or(l),
        None => line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// rg's messages quote names raw; the tool's `search failed` text escapes
    /// them in place.
    #[test]
    fn search_failed_text_escapes_names() {
        let lines = vec![
            "rg: ./bad\u{1b}[1mname: Permission denied (os error 13)".to_string(),
            "rg: ./ok: Permission denied (os error 13)".to_string(),
        ];
        let text = stderr_excerpt(&lines, 65_536).unwrap();
        assert_eq!(
            text,
            "rg: ./bad\\u001b[1mname: Permission denied (os error 13)\n\
             rg: ./ok: Permission denied (os error 13)"
        );
    }

    #[test]
    fn terminators() {
        assert_eq!(strip_terminator("a\r\n"), "a");
        assert_eq!(strip_terminator("a\n"), "a");
        assert_eq!(strip_terminator("a\r"), "a\r");
        assert_eq!(strip_terminator("a\n\n"), "a\n");
        assert_eq!(strip_terminator("a\r\r\n"), "a\r");
    }

    #[test]
    fn excerpts() {
        let lines = vec!["rg: a".to_string(), "  ".to_string()];
        assert_eq!(stderr_excerpt(&lines, 100).unwrap(), "rg: a");
        assert_eq!(stderr_excerpt(&[], 100), None);
        assert_eq!(stderr_excerpt(&["  ".into()], 100), None);
        // "rg: first\nrg: second\n" keeps its last 8 bytes: "second\n".
        let two = vec!["rg: first".to_string(), "rg: second".to_string()];
        assert_eq!(
            stderr_excerpt(&two, 8).unwrap(),
            "second [stderr truncated]"
        );
        assert_eq!(stderr_excerpt(&two, 21).unwrap(), "rg: first\nrg: second");
    }

    #[test]
    fn messages_in_stable_order() {
        let lines = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // A message's continuation lines stay with it.
        let got = in_stable_order(&lines(&[
            "rg: b: Permission denied (os error 13)",
            "rg: No files were searched, which means …",
            "Running with --debug will show why files are being skipped.",
            "rg: a: Permission denied (os error 13)",
        ]));
        assert_eq!(
            got,
            lines(&[
                "rg: No files were searched, which means …",
                "Running with --debug will show why files are being skipped.",
                "rg: a: Permission denied (os error 13)",
                "rg: b: Permission denied (os error 13)",
            ])
        );
    }
}
