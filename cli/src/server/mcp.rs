//! `dsh-search mcp`: the tools as a Model Context Protocol server on stdio
//! (`contract.md` §12), on the official Rust SDK, `rmcp`.
//!
//! - `tools/list` gives glob, grep, read, write and edit with the
//!   definitions' names, descriptions and input schemas (and hints: the
//!   searches and read are read-only, write and edit are not).
//! - `tools/call` runs [`Tools::call`] as a direct call of the
//!   connection's session and answers with the tool's content as one text
//!   block, `isError`, in `_meta` the error's name and code
//!   (`dsh-search/error`) and the presentation meta's counts
//!   (`dsh-search/meta`; its page too with `--meta-page`, held to
//!   `searchMetaMaxBytes`), and `structuredContent` only as
//!   `--structured-content` asks (`mcp_result`: by default none, so that
//!   every client shows the model the text, and the result is bounded by
//!   the text's caps). An unknown tool is a JSON-RPC error (`-32602`), as
//!   the MCP specification asks; everything else is a tool result.
//! - The workdir is `--cwd`, else the client's first `file://` root (asked
//!   once with `roots/list` when the client declares roots, again after
//!   `notifications/roots/list_changed`), else the current directory.
//! - `notifications/cancelled` cancels the call's token: the search stops
//!   and the call ends with the aborted error (which the protocol then does
//!   not send: the client gave up on it). A log line on stderr says how
//!   long the call took to stop.
//! - Calls run concurrently, at most [`MAX_WORKERS`] at once, each on a
//!   blocking thread of a small Tokio runtime that lives only inside this
//!   module: the library's engine and tools stay synchronous.
//! - Stdout carries JSON-RPC messages only, written by `StdioLines`,
//!   which also answers every line that is not a message (not JSON: `-32700`;
//!   not a valid message, longer than [`MAX_LINE_BYTES`] or holding more
//!   than [`MAX_VALUES`] JSON values: `-32600`) and reads on.
//! - Flow control, as `serve` has it (`super`): `StdioLines` stops reading
//!   while [`MAX_BACKLOG`] messages wait for stdout, whatever they answer
//!   (results, `tools/list`, errors for malformed lines), and while
//!   [`MAX_CALLS_IN_FLIGHT`] requests (or [`MAX_BYTES_IN_FLIGHT`] request
//!   bytes) have not answered. A call's arguments are an open object, as
//!   the seed's schema validation has it: unknown keys pass. At EOF the calls in flight are cancelled (the client
//!   closes stdin to shut the server down) and the server exits 0; so it
//!   does after SIGINT, SIGTERM or SIGHUP.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_search::tool::{definitions, CallContext, Tools};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ClientNotification, ErrorCode, Implementation,
    JsonObject, JsonRpcMessage, ListToolsResult, PaginatedRequestParams, RequestId,
    ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleServer, RxJsonRpcMessage, TxJsonRpcMessage,
};
use rmcp::transport::{StdioReader, StdioWriter, Transport};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{watch, Mutex as AsyncMutex, Semaphore};

use super::decode::MAX_LINE_BYTES;
#[cfg(doc)]
use super::decode::MAX_VALUES;
use super::jsonl::MAX_WORKERS;
use super::lines::{CappedLine, Step};
use super::mcp_decode::{error_line, mcp_line, McpLine};
use super::mcp_result::ResultShape;
use super::{InFlight, MAX_BACKLOG};
#[cfg(doc)]
use super::{MAX_BYTES_IN_FLIGHT, MAX_CALLS_IN_FLIGHT};
use crate::setup::{Common, StructuredContent};

/// How long the server waits for the client's answer to `roots/list`.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(10);

fn log(msg: std::fmt::Arguments<'_>) {
    super::log::line("mcp", msg);
}

/// `dsh-search mcp`: serve stdin and stdout until EOF or a signal, with
/// `structured` as `structuredContent` (`--structured-content`) and the
/// presentation meta's page in `_meta` when `page` (`--meta-page`).
pub(crate) fn run(common: &Common, structured: StructuredContent, page: bool) -> u8 {
    let handler = match Handler::new(common, structured, page) {
        Ok(h) => h,
        Err(e) => return crate::setup::fail(e),
    };
    super::log::catch_panics("mcp");
    super::drain_on_signal(common, Arc::clone(&handler.inflight), |i| i, log);
    // The calls hold at most MAX_WORKERS blocking threads (`running`); a
    // thread that has just finished a call is not idle yet when the next
    // call starts, and Tokio would start another (hundreds, under a
    // stream of calls): the pool is capped instead. Two more for the
    // blocking stdio that the transport falls back to when stdin or
    // stdout is not a pipe.
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .thread_name("dsh-mcp")
        .max_blocking_threads(MAX_WORKERS + 2)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => return crate::setup::fail(format!("cannot start the MCP runtime: {e}")),
    };
    let inflight = Arc::clone(&handler.inflight);
    runtime.block_on(async move {
        // `stdio_pipes` reads a pipe through the reactor, so that nothing is
        // left blocked in a read of stdin when the server stops.
        let (reader, writer) = rmcp::transport::stdio_pipes();
        match handler
            .serve(StdioLines::new(reader, writer, inflight))
            .await
        {
            Ok(running) => {
                if let Err(e) = running.waiting().await {
                    log(format_args!("the service stopped abnormally: {e}"));
                }
            }
            // EOF or a closed pipe before the client initialized: nothing
            // to serve.
            Err(e) => log(format_args!("the client did not initialize: {e}")),
        }
    });
    // Whatever is left is dropped, which cancels its call; the blocking
    // threads of cancelled calls end within milliseconds.
    runtime.shutdown_timeout(Duration::from_millis(500));
    super::finish(super::SAVE_DRAIN);
    0
}

/// Where a call's workdir comes from.
enum Workdir {
    /// `--cwd`.
    Fixed(PathBuf),
    /// The client's first `file://` root, else `fallback` (the current
    /// directory); `current` caches the answer until the roots change.
    Roots {
        fallback: PathBuf,
        current: AsyncMutex<Option<PathBuf>>,
    },
}

/// The MCP face of [`Tools`] for one connection (one session).
struct Handler {
    tools: Tools,
    listed: Arc<Vec<Tool>>,
    instructions: String,
    session: String,
    workdir: Workdir,
    /// What a result carries beside its text.
    shape: ResultShape,
    inflight: Arc<InFlight<u64>>,
    next_call: AtomicU64,
    /// [`MAX_WORKERS`] permits: a call runs holding one.
    running: Arc<Semaphore>,
}

impl Handler {
    fn new(common: &Common, structured: StructuredContent, page: bool) -> Result<Handler, String> {
        let tools = super::tools_for(common)?;
        let base = super::base_workdir(common)?;
        let workdir = match common.cwd {
            Some(_) => Workdir::Fixed(base),
            None => Workdir::Roots {
                fallback: base,
                current: AsyncMutex::new(None),
            },
        };
        let listed = tools
            .definitions()
            .iter()
            .map(mcp_tool)
            .collect::<Result<Vec<_>, _>>()?;
        let shape = ResultShape {
            structured,
            page,
            meta_cap: tools.config().search.search_meta_max_bytes,
        };
        Ok(Handler {
            instructions: definitions::system_prompt(tools.config()),
            shape,
            tools,
            listed: Arc::new(listed),
            session: super::connection_session(common, "mcp"),
            workdir,
            inflight: Arc::new(InFlight::new()),
            next_call: AtomicU64::new(0),
            running: Arc::new(Semaphore::new(MAX_WORKERS)),
        })
    }

    /// The workdir of a call made in `context`.
    async fn workdir(&self, context: &RequestContext<RoleServer>) -> PathBuf {
        let (fallback, current) = match &self.workdir {
            Workdir::Fixed(dir) => return dir.clone(),
            Workdir::Roots { fallback, current } => (fallback, current),
        };
        // Held across the roots request: concurrent first calls ask once.
        let mut current = current.lock().await;
        if let Some(dir) = &*current {
            return dir.clone();
        }
        let dir = first_root(context)
            .await
            .unwrap_or_else(|| fallback.clone());
        *current = Some(dir.clone());
        dir
    }
}

/// The client's first `file://` root, when it declares roots and answers.
///
/// Roots are deprecated from protocol 2026-07-28 on (SEP-2577); a client
/// on that protocol gets `--cwd` or the current directory.
#[allow(
    deprecated,
    reason = "roots are how pre-2026 clients name their workspace"
)]
async fn first_root(context: &RequestContext<RoleServer>) -> Option<PathBuf> {
    let declared = context
        .client_capabilities()
        .is_some_and(|c| c.roots.is_some());
    if !declared || context.peer.peer_info().is_none() {
        return None;
    }
    match tokio::time::timeout(ROOTS_TIMEOUT, context.peer.list_roots()).await {
        Ok(Ok(list)) => list.roots.iter().find_map(|r| file_uri_path(&r.uri)),
        Ok(Err(e)) => {
            log(format_args!(
                "roots/list failed, using the current directory: {e}"
            ));
            None
        }
        Err(_) => {
            log(format_args!(
                "roots/list got no answer in {ROOTS_TIMEOUT:?}, using the current directory"
            ));
            None
        }
    }
}

/// The local path of a `file://` URI (host empty or `localhost`),
/// percent-decoded; `None` for any other URI.
///
/// # Platform behavior
///
/// On Unix the decoded bytes are the path, whatever their encoding. On
/// Windows they must be UTF-8, and `/C:/x` becomes `C:/x`.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    let scheme = uri.get(..7)?;
    if !scheme.eq_ignore_ascii_case("file://") {
        return None;
    }
    let rest = &uri[7..];
    let path = match rest.find('/') {
        Some(0) => rest,
        Some(i) if rest[..i].eq_ignore_ascii_case("localhost") => &rest[i..],
        _ => return None,
    };
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let bytes: Vec<u8> = percent_encoding::percent_decode_str(path).collect();
    let path = imp::path_from_bytes(bytes)?;
    path.is_absolute().then_some(path)
}

#[cfg(unix)]
mod imp {
    use std::ffi::OsString;
    use std::os::unix::ffi::OsStringExt;
    use std::path::PathBuf;

    pub(super) fn path_from_bytes(bytes: Vec<u8>) -> Option<PathBuf> {
        Some(PathBuf::from(OsString::from_vec(bytes)))
    }
}

#[cfg(not(unix))]
mod imp {
    use std::path::PathBuf;

    pub(super) fn path_from_bytes(bytes: Vec<u8>) -> Option<PathBuf> {
        let s = String::from_utf8(bytes).ok()?;
        let b = s.as_bytes();
        let drive = b.len() >= 3 && b[0] == b'/' && b[1].is_ascii_alphabetic() && b[2] == b':';
        Some(PathBuf::from(if drive { &s[1..] } else { &s[..] }))
    }
}

/// One definition as an MCP tool: name, description, the input schema.
fn mcp_tool(def: &definitions::ToolDefinition) -> Result<Tool, String> {
    let schema: JsonObject = serde_json::from_str(&def.schema_json())
        .map_err(|e| format!("the {} schema is not a JSON object: {e}", def.name))?;
    let mut tool = Tool::new(def.name.as_str(), def.description.clone(), schema);
    let read_only = def.name.is_read_only();
    tool.annotations = Some(
        ToolAnnotations::new()
            .read_only(read_only)
            .destructive(!read_only)
            .open_world(false),
    );
    Ok(tool)
}

/// A call registered in flight until it is dropped: then its token is
/// cancelled (a no-op once it has finished; it stops the work if the
/// service dropped the request) and it leaves the registry.
struct Registered<'a> {
    inflight: &'a InFlight<u64>,
    key: u64,
    token: dsh_search::CancelToken,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.token.cancel();
        self.inflight.settle(&self.key);
        self.inflight.finish(0);
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("dsh-search", env!("CARGO_PKG_VERSION")))
            .with_instructions(self.instructions.clone())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.listed.to_vec()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if !self.listed.iter().any(|t| t.name == name) {
            let names: Vec<&str> = self.listed.iter().map(|t| &*t.name).collect();
            return Err(McpError::new(
                ErrorCode::INVALID_PARAMS,
                format!(
                    "unknown tool {}; available tools: {}",
                    serde_json::to_string(&name).unwrap_or_default(),
                    names.join(", ")
                ),
                None,
            ));
        }
        let args = Value::Object(request.arguments.unwrap_or_default());
        let workdir = self.workdir(&context).await;
        // The transport bounds the requests in flight; this bounds the
        // ones running. A call cancelled while it waits never runs.
        let permit = tokio::select! {
            permit = Arc::clone(&self.running).acquire_owned() => permit.ok(),
            () = context.ct.cancelled() => None,
        };
        let Some(permit) = permit else {
            return Err(McpError::internal_error("the call was cancelled", None));
        };
        let key = self.next_call.fetch_add(1, Ordering::Relaxed);
        // Counted by the transport ([`Outstanding`]), not here: cost 0.
        let Some(token) = self.inflight.start(key, 0) else {
            unreachable!("call keys are never reused");
        };
        let registered = Registered {
            inflight: &self.inflight,
            key,
            token: token.clone(),
        };
        let mut ctx = CallContext::new(workdir).session(self.session.clone());
        ctx.cancel = token;
        let tools = self.tools.clone();
        let tool = name.clone();
        let shape = self.shape;
        // The MCP result is made here too, off the runtime's thread: a
        // value of megabytes is dropped, a meta measured.
        let mut job = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let result = tools.call(&tool, &args, &ctx);
            let code = result
                .error
                .as_ref()
                .and_then(|e| e.code())
                .map(str::to_string);
            (code, shape.result(result))
        });
        let outcome = tokio::select! {
            outcome = &mut job => outcome,
            () = context.ct.cancelled() => {
                let asked = Instant::now();
                registered.token.cancel();
                let outcome = job.await;
                let how = match &outcome {
                    Ok((code, _)) => code.as_deref().unwrap_or("a result").to_string(),
                    Err(_) => "a panic".to_string(),
                };
                log(format_args!(
                    "request {} ({name}) cancelled by the client: ended with {how} {} ms later",
                    context.id.clone().into_json_value(),
                    asked.elapsed().as_millis()
                ));
                outcome
            }
        };
        drop(registered);
        match outcome {
            Ok((_, result)) => Ok(result.into()),
            Err(_) => Err(McpError::internal_error(
                "the call panicked; the server goes on",
                None,
            )),
        }
    }

    async fn on_roots_list_changed(&self, _context: NotificationContext<RoleServer>) {
        if let Workdir::Roots { current, .. } = &self.workdir {
            *current.lock().await = None;
        }
    }
}

/// What [`StdioLines::fill_line`] found.
enum LineRead {
    Line,
    /// Longer than [`MAX_LINE_BYTES`] (the rest of it is skipped).
    TooLong,
    Eof,
}

/// The requests read and not yet answered, by id (JSON text): their count
/// and request bytes, bounded by [`MAX_CALLS_IN_FLIGHT`] and
/// [`MAX_BYTES_IN_FLIGHT`] ([`super::room`]). A request leaves when its
/// answer is written, or when the client cancels it (rmcp then drops the
/// answer).
#[derive(Default)]
struct Outstanding {
    /// Each request's cost, by id; a client may reuse an id.
    costs: HashMap<String, Vec<usize>>,
    count: usize,
    bytes: usize,
}

impl Outstanding {
    fn start(&mut self, id: String, cost: usize) {
        self.costs.entry(id).or_default().push(cost);
        self.count += 1;
        self.bytes += cost;
    }

    fn finish(&mut self, id: &str) {
        let Some(costs) = self.costs.get_mut(id) else {
            return;
        };
        if let Some(cost) = costs.pop() {
            self.count -= 1;
            self.bytes -= cost;
        }
        if costs.is_empty() {
            self.costs.remove(id);
        }
    }
}

/// An id's key in [`Outstanding`]: its JSON text.
fn id_key(id: &RequestId) -> String {
    id.clone().into_json_value().to_string()
}

/// One message on its way to stdout, from the moment it is handed over
/// until it is written (or dropped): counted in the backlog, and the
/// answer of `answers` (when it is one) in flight.
struct Answering {
    backlog: Arc<watch::Sender<usize>>,
    answers: Option<(Arc<watch::Sender<Outstanding>>, String)>,
}

impl Answering {
    fn new(
        backlog: &Arc<watch::Sender<usize>>,
        answers: Option<(Arc<watch::Sender<Outstanding>>, String)>,
    ) -> Answering {
        backlog.send_modify(|n| *n += 1);
        Answering {
            backlog: Arc::clone(backlog),
            answers,
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.backlog.send_modify(|n| *n -= 1);
        if let Some((outstanding, id)) = &self.answers {
            outstanding.send_modify(|o| o.finish(id));
        }
    }
}

/// The stdio transport: newline-delimited JSON-RPC, like rmcp's own, but a
/// line that is not a message gets an error response instead of being
/// dropped in silence (`contract.md` §12: a malformed message gets a
/// JSON-RPC error), and reading stops while the client does not read.
///
/// rmcp's service loop reads on whatever its writes do (each answer is a
/// task of its own), so the flow control is here: `receive` waits while
/// [`MAX_BACKLOG`] messages wait for stdout.
///
/// At EOF it cancels the calls in flight before it reports the end: the
/// client closed its side to shut the server down (the MCP stdio
/// lifecycle), so the server stops their work instead of finishing it.
struct StdioLines {
    reader: BufReader<StdioReader>,
    /// The line read so far, or the rest of a line longer than
    /// [`MAX_LINE_BYTES`] being skipped (kept across a dropped `receive`).
    capped: CappedLine,
    writer: Arc<AsyncMutex<Option<StdioWriter>>>,
    inflight: Arc<InFlight<u64>>,
    /// The messages waiting for stdout.
    backlog: Arc<watch::Sender<usize>>,
    outstanding: Arc<watch::Sender<Outstanding>>,
}

impl StdioLines {
    fn new(reader: StdioReader, writer: StdioWriter, inflight: Arc<InFlight<u64>>) -> StdioLines {
        StdioLines {
            reader: BufReader::new(reader),
            capped: CappedLine::new(MAX_LINE_BYTES),
            writer: Arc::new(AsyncMutex::new(Some(writer))),
            inflight,
            backlog: Arc::new(watch::Sender::new(0)),
            outstanding: Arc::new(watch::Sender::new(Outstanding::default())),
        }
    }

    /// Read up to the end of a line into `self.capped.line`.
    ///
    /// Cancellation-safe, as rmcp's service loop needs (it polls
    /// `receive` in a `select!` and drops it when another branch is ready
    /// first): the partial line and the skipping state live in `self`, and
    /// nothing is consumed from the reader without being kept or skipped.
    async fn fill_line(&mut self) -> std::io::Result<LineRead> {
        loop {
            let available = self.reader.fill_buf().await?;
            let (take, step) = self.capped.feed(available);
            self.reader.consume(take);
            match step {
                Step::Line => return Ok(LineRead::Line),
                Step::TooLong => return Ok(LineRead::TooLong),
                Step::Eof => return Ok(LineRead::Eof),
                Step::More => {}
            }
        }
    }

    /// Answer a line that is not a message under `id` (JSON text).
    ///
    /// The write runs as a task of its own: `receive` may be dropped at any
    /// await, and a write cut in the middle would leave half a line. It is
    /// counted in the backlog like every other message.
    fn answer_error(&self, error: &McpError, id: Option<&str>) {
        let line = error_line(error, id);
        let answering = Answering::new(&self.backlog, None);
        // A failed write shows again, and ends the service, on the next
        // send; here it only loses this error answer.
        let writer = Arc::clone(&self.writer);
        tokio::spawn(async move {
            let _ = write_bytes(&writer, line.into_bytes()).await;
            drop(answering);
        });
    }

    /// Account for a message read: a request enters [`Outstanding`]; a
    /// cancellation ends its request's turn there.
    fn admit(&self, message: &RxJsonRpcMessage<RoleServer>, cost: usize) {
        match message {
            JsonRpcMessage::Request(request) => {
                let id = id_key(&request.id);
                self.outstanding.send_modify(|o| o.start(id, cost));
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::CancelledNotification(c) = &n.notification {
                    if let Some(id) = &c.params.request_id {
                        let id = id_key(id);
                        self.outstanding.send_modify(|o| o.finish(&id));
                    }
                }
            }
            _ => {}
        }
    }
}

async fn write_message(
    writer: &AsyncMutex<Option<StdioWriter>>,
    message: &TxJsonRpcMessage<RoleServer>,
) -> std::io::Result<()> {
    let bytes = serde_json::to_vec(message).map_err(std::io::Error::other)?;
    write_bytes(writer, bytes).await
}

/// Write one message and its newline, whole, and flush.
async fn write_bytes(
    writer: &AsyncMutex<Option<StdioWriter>>,
    mut bytes: Vec<u8>,
) -> std::io::Result<()> {
    bytes.push(b'\n');
    let mut writer = writer.lock().await;
    let w = writer
        .as_mut()
        .ok_or_else(|| std::io::Error::new(std::io::ErrorKind::NotConnected, "stdout is closed"))?;
    w.write_all(&bytes).await?;
    w.flush().await
}

impl Transport<RoleServer> for StdioLines {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl std::future::Future<Output = Result<(), Self::Error>> + Send + 'static {
        let answered = match &item {
            JsonRpcMessage::Response(r) => Some(&r.id),
            JsonRpcMessage::Error(e) => e.id.as_ref(),
            _ => None,
        };
        let answers = answered.map(|id| (Arc::clone(&self.outstanding), id_key(id)));
        let answering = Answering::new(&self.backlog, answers);
        let writer = Arc::clone(&self.writer);
        async move {
            let written = write_message(&writer, &item).await;
            drop(answering);
            written
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            // Flow control: nothing more is read while the client leaves
            // the answers unread, or while its requests are not done.
            // (Cancellation-safe: waits on watches.)
            let mut outstanding = self.outstanding.subscribe();
            let _ = outstanding
                .wait_for(|o| super::room(o.count, o.bytes))
                .await;
            drop(outstanding);
            let mut backlog = self.backlog.subscribe();
            let _ = backlog.wait_for(|n| *n < MAX_BACKLOG).await;
            match self.fill_line().await {
                Ok(LineRead::Line) => {}
                Ok(LineRead::TooLong) => {
                    let why = format!("the message is longer than {MAX_LINE_BYTES} bytes");
                    self.answer_error(&McpError::invalid_request(why, None), None);
                    continue;
                }
                Ok(LineRead::Eof) => {
                    self.inflight.cancel_all();
                    return None;
                }
                Err(e) => {
                    log(format_args!("cannot read stdin, stopping: {e}"));
                    self.inflight.cancel_all();
                    return None;
                }
            }
            // From here on nothing awaits: the line is handled whole.
            let line = std::mem::take(&mut self.capped.line);
            match mcp_line(&line) {
                McpLine::Blank => {}
                McpLine::Ignore { why } => log(format_args!("{why}")),
                McpLine::Reject { error, id } => self.answer_error(&error, id.as_deref()),
                McpLine::Message(message) => {
                    self.admit(&message, line.len());
                    return Some(*message);
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        if let Some(mut w) = self.writer.lock().await.take() {
            w.flush().await?;
        }
        Ok(())
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::file_uri_path;
    use std::path::PathBuf;

    #[test]
    fn file_uris_become_paths() {
        assert_eq!(
            file_uri_path("file:///tmp/a%20b"),
            Some(PathBuf::from("/tmp/a b"))
        );
        assert_eq!(
            file_uri_path("file://localhost/srv/x"),
            Some(PathBuf::from("/srv/x"))
        );
        assert_eq!(file_uri_path("FILE:///w?q#f"), Some(PathBuf::from("/w")));
        assert_eq!(file_uri_path("file://host/x"), None);
        assert_eq!(file_uri_path("https://example.com/x"), None);
        assert_eq!(file_uri_path("file:"), None);
    }
}
