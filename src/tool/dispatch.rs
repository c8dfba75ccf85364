//! The one entry point: a tool name, JSON arguments and a [`CallContext`]
//! in, a [`ToolResult`] out, in the registry's order (`contract.md` §5):
//! pre-dispatch abort, schema validation, the guard, the tool's own
//! checks, execution under the timeout, and for a direct call the spill
//! of an over-cap result and the presentation meta.

use std::path::Path;
use std::sync::{Arc, Mutex};

use crate::sync::RecoverPoison;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::backend::SearchBackend;
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::fs::{DynFileSystem, LocalFs, TextFs};
use crate::index::{Answer, IndexedBackend};
use crate::session::Sessions;
use crate::spill::{apply_inline_cap, SpillRef, SpillSource, SpillStore};
use crate::tool::args::{validate, GlobArgs, GrepArgs};
use crate::tool::definitions::{self, ToolDefinition};
use crate::tool::files::{self, ObservationPolicy};
use crate::tool::name::ToolName;
use crate::tool::render;
use crate::tool::result::{ToolError, ToolResult};
use crate::tool::search::{run_glob, run_grep, Searched, Searcher};
use crate::tool::CallContext;

/// A check that runs before a tool executes (the search-path guard).
///
/// Both methods get the filesystem the call runs on, the one the tools were
/// built with (or the local disk, for a `read` of a spill reference): a
/// guard looks at the workspace through it, never at the host disk.
pub trait CallGuard: Send + Sync {
    /// `Some(reason)` denies the call: it renders `Error: <reason>`, with no
    /// code, and the tool does not run. Runs after schema validation.
    fn check(
        &self,
        tool: ToolName,
        args: &Value,
        ctx: &CallContext,
        fs: &dyn DynFileSystem,
    ) -> Option<String>;

    /// Sees the final result of a call the guard allowed.
    fn after(
        &self,
        _tool: ToolName,
        _args: &Value,
        _ctx: &CallContext,
        _fs: &dyn DynFileSystem,
        _result: &ToolResult,
    ) {
    }
}

/// The `index` value of a glob or grep of an indexed workspace that ended
/// before a search was asked for (its arguments refused, the guard, a
/// cancellation before dispatch).
const NO_SEARCH: &str = "none";

/// Why the scan answers a grep of a text the spill store saved.
const SAVED: &str = "a saved result is outside the index";

/// The tools over one backend, with their configuration, an optional spill
/// store and an optional guard. Cheap to share: every field is immutable
/// but the last saved result, which the clones share.
#[derive(Clone)]
pub struct Tools {
    config: Arc<Config>,
    /// The backend, or the index's: the latter also says which of its
    /// paths answered.
    search: Searcher,
    spill: Option<Arc<dyn SpillStore>>,
    guard: Option<Arc<dyn CallGuard>>,
    /// The workspace: the file tools' text layer over its filesystem.
    text: TextFs,
    /// The local disk, where the spill store's references are, and the
    /// engine that greps them there.
    spill_fs: TextFs,
    spill_search: Searcher,
    policy: Option<ObservationPolicy>,
    /// The definitions, built once: they depend on the configuration only,
    /// and building them (texts, schemas) is a fixed cost per call.
    defs: Arc<Vec<ToolDefinition>>,
    /// The last complete result saved, pointed at again by a call whose
    /// complete result is the same text while the store still holds it
    /// ([`SpillStore::holds`]).
    last_saved: Arc<Mutex<Option<Saved>>>,
}

/// A complete result the spill store saved.
struct Saved {
    owner: String,
    tool: ToolName,
    name: String,
    content: String,
    saved: SpillRef,
}

impl Tools {
    /// Tools over `backend` with `config`, no spill store and no guard.
    ///
    /// The file tools work on the local disk, under the observation policy
    /// with sessions held in memory. Their results say nothing of an index,
    /// whatever `backend` is: [`Tools::indexed`] builds the tools of an
    /// indexed workspace.
    pub fn new(config: Config, backend: Arc<dyn SearchBackend>) -> Tools {
        Tools::searching(config, Searcher::Backend(backend))
    }

    /// [`Tools::new`] over the backend of a live index: every glob and grep
    /// result says in its `meta` which path of the index answered it
    /// (`docs/index.md`, "What `meta` says").
    pub fn indexed(config: Config, backend: IndexedBackend) -> Tools {
        Tools::searching(config, Searcher::Index(Arc::new(backend)))
    }

    fn searching(config: Config, search: Searcher) -> Tools {
        let local = |config: &Config| {
            TextFs::new(Arc::new(LocalFs::new()))
                .with_diff_basis_max_bytes(config.fs.diff_basis_max_bytes)
        };
        Tools {
            defs: Arc::new(definitions::all(&config)),
            text: local(&config),
            spill_fs: local(&config),
            spill_search: Searcher::Backend(Arc::new(crate::backend::NativeBackend::new())),
            config: Arc::new(config),
            search,
            spill: None,
            guard: None,
            policy: Some(ObservationPolicy::default()),
            last_saved: Arc::default(),
        }
    }

    /// The workspace's filesystem: what `read`, `write`, `edit` and the
    /// guard work on. By default, the local disk ([`LocalFs`]).
    ///
    /// The spill store's references stay where the store wrote them: a
    /// `read` (or the guard's look at a `grep` path) of one goes to the
    /// local disk whatever the workspace (see [`SpillStore::is_reference`]).
    pub fn with_filesystem(mut self, fs: Arc<dyn DynFileSystem>) -> Tools {
        self.text = TextFs::new(fs).with_diff_basis_max_bytes(self.config.fs.diff_basis_max_bytes);
        self
    }

    /// Tools whose every call works on the workspace `fs`: the native engine
    /// searches it and the file tools and the guard read and write it.
    pub fn on_workspace<F: crate::fs::FsHints + crate::fs::FsWrite>(
        config: Config,
        fs: Arc<F>,
    ) -> Tools {
        let backend = Arc::new(crate::backend::NativeBackend::on(fs.clone()));
        Tools::new(config, backend).with_filesystem(fs)
    }

    /// Grep the spill store's references with `engine` (a workspace's,
    /// [`crate::WorkspaceOptions::engine`]). By default, the process's.
    pub(crate) fn with_spill_engine(mut self, engine: &crate::Engine) -> Tools {
        let backend = crate::backend::NativeBackend::new().with_engine(engine.clone());
        self.spill_search = Searcher::Backend(Arc::new(backend));
        self
    }

    /// Keep the sessions' read observations in `sessions` (for example a
    /// persistent store shared by processes). By default, in memory.
    pub fn with_sessions(mut self, sessions: Arc<Sessions>) -> Tools {
        self.policy = Some(ObservationPolicy::new(sessions));
        self
    }

    /// Run the file tools on the bare provider: no read-before-write
    /// policy, unconditional writes and edits. By default the policy is on.
    pub fn without_observation_policy(mut self) -> Tools {
        self.policy = None;
        self
    }

    /// The workspace's filesystem.
    pub fn filesystem(&self) -> &Arc<dyn DynFileSystem> {
        self.text.filesystem()
    }

    /// Save over-cap results of direct calls in `store`. By default there
    /// is no store, and over-cap results say they could not be saved.
    pub fn with_spill_store(mut self, store: Arc<dyn SpillStore>) -> Tools {
        self.spill = Some(store);
        self
    }

    /// Run `guard` before every call. By default there is none.
    pub fn with_guard(mut self, guard: Arc<dyn CallGuard>) -> Tools {
        self.guard = Some(guard);
        self
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The backend.
    pub fn backend(&self) -> &dyn SearchBackend {
        self.search.backend()
    }

    /// The index's backend, for tools built by [`Tools::indexed`].
    pub fn index(&self) -> Option<&IndexedBackend> {
        self.search.index()
    }

    /// The definitions of the five tools.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.defs.to_vec()
    }

    /// The definitions as one JSON array, each in the seed's key order
    /// ([`ToolDefinition::to_json`]): what `dsh-search definitions` prints,
    /// the JSON-lines server answers and the bindings return.
    pub fn definitions_json(&self) -> String {
        let defs: Vec<String> = self.defs.iter().map(|d| d.to_json()).collect();
        format!("[{}]", defs.join(","))
    }

    /// Dispatch one call by the name it arrived with: the one place a
    /// tool's name is parsed ([`ToolName`]). Never panics on any input;
    /// every failure is an error result, an unknown name too.
    pub fn call(&self, name: &str, args: &Value, ctx: &CallContext) -> ToolResult {
        match ToolName::parse(name) {
            Some(tool) => self.call_tool(tool, args, ctx),
            None if ctx.cancel.is_cancelled() => ToolResult::error(aborted_before_dispatch()),
            None => {
                let available: Vec<&str> = ToolName::ALL.iter().map(|t| t.as_str()).collect();
                ToolResult::error(ToolError::plain(format!(
                    "unknown tool {}; available tools: {}",
                    serde_json::to_string(name).unwrap_or_default(),
                    available.join(", ")
                )))
            }
        }
    }

    /// [`Tools::call`] of a tool already named.
    pub fn call_tool(&self, tool: ToolName, args: &Value, ctx: &CallContext) -> ToolResult {
        let Searched {
            value: mut result,
            answer,
        } = self.dispatch(tool, args, ctx);
        // An indexed workspace says in every glob and grep result which
        // path answered it (`docs/index.md`, "What `meta` says"); nothing
        // else of the result changes, and an unindexed workspace adds
        // nothing.
        if self.search.index().is_some() && tool.is_search() {
            let said = match answer {
                Some(a) => a.meta_value(),
                None => NO_SEARCH.to_string(),
            };
            match &mut result.meta {
                Some(Value::Object(meta)) => {
                    meta.insert("index".into(), Value::String(said));
                }
                _ => result.meta = Some(serde_json::json!({ "index": said })),
            }
        }
        result
    }

    /// [`Tools::call`] without the index's `meta` key, and which path of
    /// the index answered a glob or grep that asked for a search.
    fn dispatch(&self, tool: ToolName, args: &Value, ctx: &CallContext) -> Searched<ToolResult> {
        let refused = |e| Searched::unanswered(ToolResult::error(e));
        if ctx.cancel.is_cancelled() {
            return refused(aborted_before_dispatch());
        }
        // `defs` is built from `ToolName::ALL`: every tool has its definition.
        let Some(def) = self.defs.iter().find(|d| d.name == tool) else {
            return refused(ToolError::plain(format!("no definition for {tool}")));
        };
        let unshown = self.unshown_path(tool, args, ctx);
        let args = unshown.as_ref().unwrap_or(args);
        let obj = match validate(&def.params, args) {
            Ok(obj) => obj,
            Err(e) => return refused(e),
        };
        let text = self.text_for(tool, args, ctx);
        let fs = &**text.filesystem();
        if let Some(guard) = &self.guard {
            if let Some(reason) = guard.check(tool, args, ctx, fs) {
                return refused(ToolError::plain(reason));
            }
        }
        let file_tool = |run| Searched::unanswered(self.file_tool(run, tool, text, args, ctx));
        let searched = match tool {
            ToolName::Glob => self.glob(obj, ctx),
            ToolName::Grep => self.grep(obj, ctx),
            ToolName::Read => file_tool(files::read),
            ToolName::Write => file_tool(files::write),
            ToolName::Edit => file_tool(files::edit),
        };
        if let Some(guard) = &self.guard {
            guard.after(tool, args, ctx, fs, &searched.value);
        }
        searched
    }

    /// The arguments with the path argument replaced by the name it
    /// stands for, when it is the escaped form the tools show a name in
    /// (`quoting::unshown`, D6) and no file is literally named so; `None`
    /// leaves the arguments as they are.
    fn unshown_path(&self, tool: ToolName, args: &Value, ctx: &CallContext) -> Option<Value> {
        let key = tool.path_argument();
        let raw = args.get(key)?.as_str()?;
        let unshown = crate::quoting::unshown(raw)?;
        let fs = self.text.filesystem();
        if fs.symlink_metadata(&ctx.workdir.join(raw)).is_ok() {
            return None;
        }
        let mut args = args.clone();
        args[key] = Value::String(unshown);
        Some(args)
    }

    /// The filesystem a call works on: the workspace's, except for a `read`
    /// or a `grep` of a text the spill store saved for this session, which
    /// is on the local disk. The footer of an over-cap result tells the
    /// model to read or grep its locator, and that must work in every
    /// workspace (`contract.md` §10).
    fn text_for(&self, tool: ToolName, args: &Value, ctx: &CallContext) -> &TextFs {
        if !matches!(tool, ToolName::Read | ToolName::Grep) {
            return &self.text;
        }
        match args.get(tool.path_argument()).and_then(Value::as_str) {
            Some(p) if self.is_spill_reference(p, ctx) => &self.spill_fs,
            _ => &self.text,
        }
    }

    /// Whether `path` names a text the spill store saved for this session.
    fn is_spill_reference(&self, path: &str, ctx: &CallContext) -> bool {
        match (&self.spill, ctx.session_id.as_deref()) {
            (Some(store), Some(owner)) => store.is_reference(owner, Path::new(path)),
            _ => false,
        }
    }

    /// Whether a grep of `path` runs on the local disk's engine: a spill
    /// reference, unless the backend searches the local disk already (the
    /// rg backend; [`SearchBackend::searches_local_disk`]).
    fn greps_saved(&self, path: Option<&str>, ctx: &CallContext) -> bool {
        path.is_some_and(|p| {
            !self.search.backend().searches_local_disk() && self.is_spill_reference(p, ctx)
        })
    }

    fn glob(
        &self,
        obj: &serde_json::Map<String, Value>,
        ctx: &CallContext,
    ) -> Searched<ToolResult> {
        let args = match GlobArgs::from_validated(obj) {
            Ok(a) => a,
            Err(e) => return Searched::unanswered(ToolResult::error(e)),
        };
        let cfg = &self.config.search;
        self.search_under_deadline(ctx, |cancel| {
            run_glob(&self.search, &args, ctx, cancel, cfg)
        })
        .map(|value| self.present(value, ctx))
    }

    fn grep(
        &self,
        obj: &serde_json::Map<String, Value>,
        ctx: &CallContext,
    ) -> Searched<ToolResult> {
        let args = match GrepArgs::from_validated(obj) {
            Ok(a) => a,
            Err(e) => return Searched::unanswered(ToolResult::error(e)),
        };
        let cfg = &self.config.search;
        let saved = self.greps_saved(args.path.as_deref(), ctx);
        let search = if saved {
            &self.spill_search
        } else {
            &self.search
        };
        let mut searched =
            self.search_under_deadline(ctx, |cancel| run_grep(search, &args, ctx, cancel, cfg));
        // A saved result is read from the local disk, never the index.
        if saved {
            searched.answer = Some(Answer::Scan(SAVED.into()));
        }
        searched.map(|value| self.present(value, ctx))
    }

    /// A search's value as its tool result: spilled when a direct call is
    /// over the inline cap, rendered, with the direct call's meta; or its
    /// error.
    fn present<V: render::Shown>(
        &self,
        value: Result<V, ToolError>,
        ctx: &CallContext,
    ) -> ToolResult {
        let value = match value {
            Ok(v) => v,
            Err(e) => return ToolResult::error(e),
        };
        let cfg = &self.config.search;
        let spilled = if ctx.direct && value.over_cap(cfg) {
            self.save(ctx, V::TOOL, V::ARTIFACT, value.artifact(cfg))
        } else {
            None
        };
        let content = value.render(cfg, spilled.as_ref());
        let meta = ctx.direct.then(|| value.meta(cfg));
        let empty = value.is_empty();
        let mut result = self.finish(V::TOOL, content, value.into_json(), meta, ctx);
        result.empty = empty;
        result
    }

    /// read, write or edit; for read no spill (spill-policy skips it,
    /// `seed-reference.md` §3.9).
    fn file_tool(
        &self,
        run_tool: files::FileToolFn,
        tool: ToolName,
        text: &TextFs,
        args: &Value,
        ctx: &CallContext,
    ) -> ToolResult {
        let run =
            |ctx: &CallContext| run_tool(&self.config.fs, text, self.policy.as_ref(), args, ctx);
        let read = tool == ToolName::Read;
        let out = match read {
            true => run(ctx),
            false => self.mutation(ctx, run),
        };
        match out {
            Ok((content, value)) if read => ToolResult::ok(content, value),
            Ok((content, value)) => self.finish(tool, content, value, None, ctx),
            Err(e) => ToolResult::error(e),
        }
    }

    /// `write` with the content read from `content` until its end, one
    /// chunk at a time: the `write` tool streaming through the dispatch's
    /// filesystem, policy and spill policy (the guard has no write rule).
    /// `dsh-search write` streams its standard input so. The caller's
    /// cancellation ends it (while the content arrives, or while it waits
    /// for another writer's lock) with nothing written; `timeoutMs` does
    /// not, as the content arrives at the caller's pace (`producer |
    /// dsh-search write log` may take any time).
    pub fn write_stream(
        &self,
        file_path: &str,
        content: &mut dyn std::io::Read,
        ctx: &CallContext,
    ) -> ToolResult {
        if ctx.cancel.is_cancelled() {
            return ToolResult::error(aborted_before_dispatch());
        }
        match files::write_stream(&self.text, self.policy.as_ref(), file_path, content, ctx) {
            Ok((text, value)) => self.finish(ToolName::Write, text, value, None, ctx),
            Err(e) => ToolResult::error(e),
        }
    }

    /// A write or edit under the call's cancellation and `timeoutMs`: a wait
    /// for another writer's lock ends at either, and the mutation is then
    /// not performed (the filesystem checks the token right before
    /// publishing). Unlike a search, a mutation that was published keeps
    /// its success even if the deadline passed meanwhile: the file changed,
    /// and the result must say so.
    fn mutation<T>(
        &self,
        ctx: &CallContext,
        work: impl FnOnce(&CallContext) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        let mut out = None;
        let timed_out = self.under_deadline(ctx, |cancel| {
            let mut own = ctx.clone();
            own.cancel = cancel.clone();
            out = Some(work(&own));
            Ok(())
        });
        match (out, timed_out) {
            (Some(Ok(v)), _) => Ok(v),
            (Some(Err(e)), Err(timeout)) if e.code() == Some("FS_ABORTED") => Err(timeout),
            (Some(Err(e)), _) => Err(e),
            (None, Err(e)) => Err(e),
            // `under_deadline` always runs its work.
            (None, Ok(())) => Err(ToolError::plain("the call was not run")),
        }
    }

    /// A successful result, after the spill policy of a direct call.
    fn finish(
        &self,
        tool: ToolName,
        content: String,
        value: Value,
        meta: Option<Value>,
        ctx: &CallContext,
    ) -> ToolResult {
        let content = match self.config.spill.max_inline_bytes {
            Some(max) if ctx.direct => apply_inline_cap(
                &content,
                max,
                tool.as_str(),
                ctx.session_id.as_deref(),
                self.spill.as_deref(),
            )
            .unwrap_or(content),
            _ => content,
        };
        let mut result = ToolResult::ok(content, value);
        result.meta = meta;
        result
    }

    /// Save a complete result, best effort: no session, no store or a
    /// failed save all mean "not saved", never an error (§3.6). The same
    /// text as the last one saved, for the same session and tool, is not
    /// saved again while the store still holds it: the call points at it
    /// (`docs/tools.md`, "Spill").
    fn save(
        &self,
        ctx: &CallContext,
        tool: ToolName,
        name: &str,
        content: String,
    ) -> Option<SpillRef> {
        let owner = ctx.session_id.as_deref()?;
        let store = self.spill.as_deref()?;
        {
            let last = self.last_saved.lock().recover_poison();
            if let Some(l) = &*last {
                let same = l.owner == owner && l.tool == tool && l.name == name;
                if same && l.content == content && store.holds(owner, &l.saved, &content) {
                    return Some(l.saved.clone());
                }
            }
        }
        let source = SpillSource {
            tool_name: tool.to_string(),
            call_id: None,
            label: "result".to_string(),
        };
        let saved = store.save_text(owner, &source, name, &content).ok()?;
        *self.last_saved.lock().recover_poison() = Some(Saved {
            owner: owner.to_string(),
            tool,
            name: name.to_string(),
            content,
            saved: saved.clone(),
        });
        Some(saved)
    }

    /// Run `work` with a token of its own, cancelled when the caller
    /// cancels or when `timeoutMs` passes. When the deadline fired first,
    /// the result is the timeout error whatever the work returned
    /// (timeout-policy, `seed-reference.md` §4.4).
    fn under_deadline<T>(
        &self,
        ctx: &CallContext,
        work: impl FnOnce(&CancelToken) -> Result<T, ToolError>,
    ) -> Result<T, ToolError> {
        match self.deadline(ctx, work) {
            (_, Some(timeout)) => Err(timeout),
            (out, None) => out,
        }
    }

    /// [`Tools::under_deadline`] for a search: the value is the timeout
    /// error when the deadline fired first, and the answer is the
    /// search's whatever the value (the index answered, even if too late).
    fn search_under_deadline<V>(
        &self,
        ctx: &CallContext,
        work: impl FnOnce(&CancelToken) -> Searched<Result<V, ToolError>>,
    ) -> Searched<Result<V, ToolError>> {
        let (searched, timed_out) = self.deadline(ctx, work);
        searched.map(|value| match timed_out {
            Some(timeout) => Err(timeout),
            None => value,
        })
    }

    /// Run `work` with the call's own token, and the timeout error when
    /// the deadline fired before it returned.
    fn deadline<R>(
        &self,
        ctx: &CallContext,
        work: impl FnOnce(&CancelToken) -> R,
    ) -> (R, Option<ToolError>) {
        let timeout_ms = self.config.search.timeout_ms;
        let deadline = Instant::now().checked_add(Duration::from_millis(timeout_ms));
        // The call's own token: the caller's cancellation and the deadline
        // reach the work through it, with no thread watching either.
        let token = CancelToken::child(&ctx.cancel, deadline);
        let out = work(&token);
        let timed_out = token.timed_out().then(|| {
            ToolError::coded(
                "ToolTimeoutError",
                "TOOL_TIMEOUT",
                format!("tool call timed out after {timeout_ms}ms"),
            )
        });
        (out, timed_out)
    }
}

/// A call cancelled before it was dispatched (`contract.md` §5).
fn aborted_before_dispatch() -> ToolError {
    ToolError::coded(
        "AbortError",
        "ABORTED_BEFORE_DISPATCH",
        "tool call aborted before dispatch",
    )
}
