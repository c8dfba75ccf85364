//! `dsh-search serve`: the tools over JSON lines (`contract.md` §12).
//!
//! # Wire format
//!
//! One request per line on stdin, one answer per line on stdout, UTF-8
//! JSON, each line ending in `\n` (a `\r` before it is ignored, and so are
//! blank lines). Calls run concurrently and answers come as they finish, so
//! a client matches them by `id`.
//!
//! ## Requests
//!
//! - A call: `{"id": ID, "tool": NAME, "arguments": {…}, "cwd": DIR,
//!   "session": S, "value": B}`. `arguments` defaults to `{}`; `cwd` (a
//!   string, relative to the server's workdir, which is `--cwd` or the
//!   current directory) defaults to that workdir; `session` defaults to
//!   the connection's session (`--session`, else an id drawn at start);
//!   `value` (a boolean) defaults to true.
//!   Answer: `{"id": ID, "result": {content, isError, error?, value?,
//!   meta?}}`, the object `dsh-search call … --format json` prints, without
//!   `value` when the request said `"value": false`: the canonical value
//!   holds every path or match (3 MB for glob `*` on the Linux tree),
//!   which a client that only shows the text need not read. Every call is
//!   a direct call (it spills over-cap results and carries meta).
//! - A cancellation: `{"id": ID, "cancel": true}` cancels the call `ID`,
//!   whose answer is then the aborted error. It has no answer of its own;
//!   the cancellation of a call that already answered is ignored.
//! - The definitions: `{"id": ID, "definitions": true}`. Answer:
//!   `{"id": ID, "definitions": [...]}`, the array `dsh-search definitions`
//!   prints (each definition's keys in the seed's order).
//!
//! `ID` is a string or a number; the answer echoes its JSON text exactly as
//! it came (`1e2` stays `1e2`, `"\u0041"` stays `"\u0041"`), and ids are
//! told apart by that text. A call's `ID` must not be the `ID` of a call
//! still in flight.
//!
//! ## Errors
//!
//! A line that is not a valid request gets `{"id": <its id or null>,
//! "error": "<why>"}` and the server reads on: a line that is not JSON or
//! not an object, nests deeper than 128 levels (answered under its id when
//! the id can be read), is longer than [`MAX_LINE_BYTES`] or holds more
//! than [`MAX_VALUES`] JSON values; a request without an id, with a key it
//! does not know, with a field of the wrong type, or with the id of a call
//! in flight. A request that is
//! well formed but whose call fails (an unknown tool, arguments that do not
//! match the tool's schema) gets the tool's error result, as `Tools::call`
//! returns it (the arguments' root object is open, as the seed's schema
//! validation has it: unknown keys pass).
//!
//! ## Flow control
//!
//! The server stops reading while [`MAX_BACKLOG`] answers wait for stdout
//! (a client that does not read its answers), and while
//! [`MAX_CALLS_IN_FLIGHT`] calls, or calls of [`MAX_BYTES_IN_FLIGHT`]
//! request bytes, have not answered (at most [`MAX_WORKERS`] run, the
//! others wait their turn), so its memory stays bounded whatever the client
//! writes. While it does not read, it reads no cancellation either: the
//! search tools' timeout still ends a search.
//!
//! ## End
//!
//! At EOF the server finishes the calls in flight, writes their answers
//! and exits 0. SIGINT, SIGTERM or SIGHUP cancel every call in flight; the
//! server writes their (aborted) answers and exits 0.

use dsh_search::sync::RecoverPoison;
use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

use dsh_search::tool::{CallContext, Tools};
use serde_json::Value;

use super::decode::{self, Request, MAX_LINE_BYTES};
use super::lines::{CappedLine, Step};
#[cfg(doc)]
use super::{decode::MAX_VALUES, MAX_BYTES_IN_FLIGHT, MAX_CALLS_IN_FLIGHT};
use super::{Backlog, InFlight, MAX_BACKLOG};
use crate::setup::Common;

/// Calls run at once; further calls wait in a queue (their cancellation
/// still works: a call cancelled in the queue answers at once).
pub(crate) const MAX_WORKERS: usize = 64;

/// How long a worker with nothing to do waits for the next call.
const WORKER_IDLE: Duration = Duration::from_secs(5);

/// `dsh-search serve`: serve stdin and stdout until EOF or a signal.
pub(crate) fn run(common: &Common) -> u8 {
    let (tools, workdir) = match super::tools_for(common).and_then(|t| {
        let w = super::base_workdir(common)?;
        Ok((t, w))
    }) {
        Ok(x) => x,
        Err(e) => return crate::setup::fail(e),
    };
    let session = super::connection_session(common, "serve");
    super::log::catch_panics("serve");
    let server = Arc::new(Server::new(tools, workdir, session, Box::new(io::stdout())));
    super::drain_on_signal(common, Arc::clone(&server), |s| &s.inflight, log);
    server.serve(io::stdin().lock());
    super::finish(super::SAVE_DRAIN);
    0
}

fn log(msg: std::fmt::Arguments<'_>) {
    super::log::line("serve", msg);
}

/// A JSON-lines server over one input and one output.
pub(crate) struct Server {
    tools: Tools,
    workdir: PathBuf,
    session: String,
    /// `dsh-search definitions`'s array on one line, built once.
    definitions: String,
    out: Mutex<Output>,
    /// Keyed by the id's JSON text, so that `1` and `"1"` are two ids.
    inflight: InFlight<String>,
    /// The answers waiting for stdout.
    backlog: Backlog,
    pool: Mutex<Pool>,
    /// Wakes an idle worker when a job is queued.
    work_ready: Condvar,
}

struct Output {
    w: Box<dyn Write + Send>,
    /// A write failed: the client is gone, nothing more is written.
    broken: bool,
}

#[derive(Default)]
struct Pool {
    /// Worker threads alive, busy or idle.
    running: usize,
    /// Of those, the ones waiting for a job.
    idle: usize,
    queue: VecDeque<Job>,
}

struct Job {
    /// The id's JSON text, echoed in the answer.
    id: String,
    tool: String,
    arguments: Value,
    ctx: CallContext,
    /// Whether the answer carries the canonical value.
    value: bool,
    /// The request line's bytes, counted in flight until the answer.
    cost: usize,
}

/// Fill and feed until a line, a line past the cap, or the end.
fn read_line(input: &mut impl BufRead, capped: &mut CappedLine) -> io::Result<Step> {
    loop {
        let available = match input.fill_buf() {
            Ok(a) => a,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let (take, step) = capped.feed(available);
        input.consume(take);
        if step != Step::More {
            return Ok(step);
        }
    }
}

impl Server {
    /// A server answering on `out`, with `workdir` as the base of every
    /// request's `cwd` and `session` as the session of requests without
    /// one.
    pub(crate) fn new(
        tools: Tools,
        workdir: PathBuf,
        session: String,
        out: Box<dyn Write + Send>,
    ) -> Server {
        let definitions = tools.definitions_json();
        Server {
            tools,
            workdir,
            session,
            definitions,
            out: Mutex::new(Output {
                w: out,
                broken: false,
            }),
            inflight: InFlight::new(),
            backlog: Backlog::default(),
            pool: Mutex::new(Pool::default()),
            work_ready: Condvar::new(),
        }
    }

    /// Read requests from `input` until EOF (or until the output breaks),
    /// then wait for the calls in flight to answer.
    pub(crate) fn serve(self: &Arc<Self>, mut input: impl BufRead) {
        let mut capped = CappedLine::new(MAX_LINE_BYTES);
        loop {
            // A client that does not read its answers is not read either,
            // nor one whose calls are not done.
            self.inflight.wait_room();
            self.backlog.wait_below(MAX_BACKLOG);
            match read_line(&mut input, &mut capped) {
                Ok(Step::Line) => {
                    let line = std::mem::take(&mut capped.line);
                    self.handle(&line);
                }
                Ok(Step::TooLong) => self.reject(
                    "null",
                    &format!("the request line is longer than {MAX_LINE_BYTES} bytes"),
                ),
                Ok(_) => break,
                Err(e) => {
                    log(format_args!("cannot read stdin, stopping: {e}"));
                    break;
                }
            }
            if self.output().broken {
                break;
            }
        }
        self.inflight.wait_idle(None);
    }

    fn output(&self) -> MutexGuard<'_, Output> {
        self.out.lock().recover_poison()
    }

    /// Write one answer line. A failed write means the client is gone: the
    /// calls in flight are cancelled and nothing more is written.
    fn write_line(&self, line: &str) {
        let _waiting = self.backlog.enter();
        let mut out = self.output();
        if out.broken {
            return;
        }
        let w = &mut out.w;
        let written = w
            .write_all(line.as_bytes())
            .and_then(|()| w.write_all(b"\n"))
            .and_then(|()| w.flush());
        if let Err(e) = written {
            out.broken = true;
            drop(out);
            log(format_args!("cannot write stdout, stopping: {e}"));
            self.inflight.cancel_all();
        }
    }

    fn reject(&self, id: &str, why: &str) {
        let why = serde_json::to_string(why).unwrap_or_default();
        self.write_line(&format!("{{\"id\":{id},\"error\":{why}}}"));
    }

    fn handle(self: &Arc<Self>, line: &[u8]) {
        let request = match decode::jsonl_request(line) {
            Ok(Some(request)) => request,
            Ok(None) => return,
            Err(rejection) => return self.reject(&rejection.id, &rejection.why),
        };
        match request {
            Request::Cancel { id } => {
                // The answer is the call's own (aborted) one; a call that
                // already answered is past cancelling.
                self.inflight.cancel(&id);
            }
            Request::Definitions { id } => self.write_line(&format!(
                "{{\"id\":{id},\"definitions\":{}}}",
                self.definitions
            )),
            Request::Call {
                id,
                tool,
                arguments,
                cwd,
                session,
                value,
            } => {
                let cost = line.len();
                let Some(token) = self.inflight.start(id.clone(), cost) else {
                    let why = format!("a call with id {id} is still in flight");
                    return self.reject(&id, &why);
                };
                let workdir = match cwd {
                    Some(dir) => self.workdir.join(dir),
                    None => self.workdir.clone(),
                };
                let session = session.as_deref().unwrap_or(&self.session);
                let mut ctx = CallContext::new(workdir).session(session);
                ctx.cancel = token;
                self.submit(Job {
                    id,
                    tool,
                    arguments,
                    ctx,
                    value,
                    cost,
                });
            }
        }
    }

    fn pool(&self) -> MutexGuard<'_, Pool> {
        self.pool.lock().recover_poison()
    }

    /// Queue `job` for a worker: an idle one if there is one, else a new
    /// one, unless [`MAX_WORKERS`] are busy (it then waits its turn).
    fn submit(self: &Arc<Self>, job: Job) {
        let mut pool = self.pool();
        pool.queue.push_back(job);
        if pool.idle >= pool.queue.len() {
            self.work_ready.notify_one();
            return;
        }
        if pool.running >= MAX_WORKERS {
            return;
        }
        pool.running += 1;
        drop(pool);
        let server = Arc::clone(self);
        let spawned = std::thread::Builder::new()
            .name("dsh-serve-call".to_string())
            .spawn(move || server.worker());
        if spawned.is_err() {
            // No thread: with no worker at all the job runs here, on the
            // reader's thread, rather than not at all.
            let mut pool = self.pool();
            pool.running -= 1;
            if pool.running == 0 {
                if let Some(job) = pool.queue.pop_front() {
                    drop(pool);
                    self.run_job(job);
                }
            }
        }
    }

    /// Run queued jobs; leave after [`WORKER_IDLE`] without one. A worker
    /// that stays a while saves the next call a thread start (a third of
    /// the transport's overhead, measured: BENCHMARKS.md).
    fn worker(&self) {
        let mut pool = self.pool();
        loop {
            if let Some(job) = pool.queue.pop_front() {
                drop(pool);
                self.run_job(job);
                pool = self.pool();
                continue;
            }
            pool.idle += 1;
            let (guard, wait) = self
                .work_ready
                .wait_timeout(pool, WORKER_IDLE)
                .recover_poison();
            pool = guard;
            pool.idle -= 1;
            if wait.timed_out() && pool.queue.is_empty() {
                pool.running -= 1;
                return;
            }
        }
    }

    fn run_job(&self, job: Job) {
        // Counted out however this ends: a call never left in flight is
        // what lets `serve` return at EOF.
        let _finish = Finish(&self.inflight, job.cost);
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            let mut result = self.tools.call(&job.tool, &job.arguments, &job.ctx);
            if !job.value {
                result.value = None;
            }
            result
        }));
        self.inflight.settle(&job.id);
        match outcome.map(|r| serde_json::to_string(&r)) {
            Ok(Ok(result)) => {
                self.write_line(&format!("{{\"id\":{},\"result\":{result}}}", job.id))
            }
            Ok(Err(e)) => self.reject(
                &job.id,
                &format!("internal error: the result does not serialize: {e}"),
            ),
            Err(_) => self.reject(
                &job.id,
                "internal error: the call panicked; the server goes on",
            ),
        }
    }
}

/// Ends a call's time in flight when dropped.
struct Finish<'a>(&'a InFlight<String>, usize);

impl Drop for Finish<'_> {
    fn drop(&mut self) {
        self.0.finish(self.1);
    }
}
