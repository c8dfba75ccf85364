//! The Node addon of dsh-search (`contract.md` §12, "Node").
//!
//! The native half of the npm package: the JavaScript in `index.js`
//! validates what JavaScript hands it, turns an `AbortSignal` into a
//! [`Cancel`], and builds the public `rg()`, `Tools` and
//! `wrapSubprocess()` on these primitives:
//!
//! - [`rg`]: one of rg's two argv vectors (`dsh_search::Invocation`) run on
//!   the native engine, resolving to rg's stdout, stderr and exit code;
//! - [`NativeTools`]: the tools over the workspace its options name
//!   (`dsh_search::WorkspaceOptions`, as the command line and its servers build
//!   it), with one call resolving to the `--format json` object as JSON
//!   text;
//! - [`check_rg_argv`]: whether an argv is one of the two, without running
//!   it (the subprocess wrapper's recognition).
//!
//! Every search and tool call runs on a thread of its own, not on libuv's
//! thread pool: a search that waits (on a FIFO nobody writes) must not hold
//! a thread the host's own `fs` and `crypto` calls need. Its promise is
//! settled on the JavaScript thread (a [`napi::JsDeferred`]), so the JavaScript
//! thread keeps turning; a panic becomes a rejected promise, not a dead
//! Node process.

use dsh_search::sync::RecoverPoison;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use dsh_search::tool::{CallContext, Tools};
use dsh_search::{CancelToken, Invocation, NativeBackend, Workspace};
use napi::bindgen_prelude::{Buffer, Object, ToNapiValue};
use napi::{Env, Error, Result};
use napi_derive::napi;
use serde_json::Value;

#[path = "../../common/options.rs"]
mod options;
use options::{check_remote_cwd, existing_dir_path, make_tools, remote_dir_path, ToolsOptions};

/// A cancellation flag JavaScript sets (from an `AbortSignal`'s `abort`
/// event) and a running search or call checks.
#[napi]
pub struct Cancel {
    token: CancelToken,
}

#[napi]
impl Cancel {
    /// A flag that is not set.
    #[napi(constructor)]
    #[allow(clippy::new_without_default, reason = "a JavaScript constructor")]
    pub fn new() -> Cancel {
        Cancel {
            token: CancelToken::new(),
        }
    }

    /// Set the flag: the search or call stops at its next check.
    #[napi]
    pub fn cancel(&self) {
        self.token.cancel();
    }
}

/// What the rg binary would have printed and exited with.
#[napi(object)]
pub struct RgOutput {
    /// rg's stdout bytes.
    pub stdout: Buffer,
    /// rg's stderr bytes (each line with its `\n`).
    pub stderr: Buffer,
    /// rg's exit code: 0, 1 or 2.
    pub exit_code: i32,
}

/// Run `argv` (rg's arguments without the program name, one of the two
/// invocations of `contract.md` §2) in the directory `cwd`, on a thread of
/// its own. Rejects an argv of another shape and a `cwd` that is not an
/// existing directory.
#[napi(ts_return_type = "Promise<RgOutput>")]
pub fn rg<'e>(env: &'e Env, argv: Vec<String>, cwd: String, cancel: &Cancel) -> Result<Object<'e>> {
    dsh_search::set_search_threads_from_env();
    let workdir = existing_dir(&cwd, "rg")?;
    let invocation = Invocation::parse(&argv, workdir)
        .map_err(|e| Error::from_reason(format!("rg: {e}")))?
        .cancel(cancel.token.clone());
    off_thread(
        env,
        "rg",
        &cancel.token,
        move || {
            let run = invocation.run(&NativeBackend::new()).into_output();
            match run.exit_code() {
                Some(code) => Ok((run.stdout, run.stderr, code)),
                // A cancelled search was already rejected on the JavaScript
                // side (with an AbortError) when its signal fired.
                None => Err(Error::from_reason(format!(
                    "rg: {}",
                    run.failure().unwrap_or_default()
                ))),
            }
        },
        |(stdout, stderr, exit_code)| {
            Ok(RgOutput {
                stdout: stdout.into(),
                stderr: stderr.into(),
                exit_code,
            })
        },
    )
}

/// What a run kept of rg's two streams (the subprocess wrapper's answer):
/// each stream's last bytes, up to its cap, and the count of all it
/// produced.
#[napi(object)]
pub struct RgTail {
    /// The last bytes of rg's stdout, at most the stdout cap.
    pub stdout: Buffer,
    /// How many bytes rg's stdout had in all.
    pub stdout_total: f64,
    /// The last bytes of rg's stderr, at most the stderr cap.
    pub stderr: Buffer,
    /// How many bytes rg's stderr had in all.
    pub stderr_total: f64,
    /// rg's exit code: 0, 1 or 2.
    pub exit_code: i32,
}

/// The last `max` bytes of a stream and the count of all of them, in at
/// most twice `max` bytes of memory (the seam's collector keeps a stream's
/// tail: seed-reference.md §1.4, §2.5).
struct Tail {
    max: usize,
    kept: Vec<u8>,
    total: u64,
}

impl Tail {
    fn new(max: usize) -> Tail {
        Tail {
            max,
            kept: Vec::new(),
            total: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        if bytes.len() >= self.max {
            self.kept.clear();
            self.kept
                .extend_from_slice(&bytes[bytes.len() - self.max..]);
            return;
        }
        self.kept.extend_from_slice(bytes);
        if self.kept.len() > self.max.saturating_mul(2) {
            self.kept.drain(..self.kept.len() - self.max);
        }
    }

    fn finish(mut self) -> (Vec<u8>, u64) {
        if self.kept.len() > self.max {
            self.kept.drain(..self.kept.len() - self.max);
        }
        (self.kept, self.total)
    }
}

/// `rg(argv, cwd, cancel)` for the subprocess wrapper: the same run, with
/// only each stream's last `stdout_max` / `stderr_max` bytes kept and the
/// count of all of them. rg's stdout is taken as the engine makes it
/// ([`Invocation::run_streaming`]), so a run whose output is many times
/// the cap holds the cap, not the output.
#[napi(ts_return_type = "Promise<RgTail>")]
pub fn rg_tail<'e>(
    env: &'e Env,
    argv: Vec<String>,
    cwd: String,
    cancel: &Cancel,
    stdout_max: f64,
    stderr_max: f64,
) -> Result<Object<'e>> {
    dsh_search::set_search_threads_from_env();
    let workdir = existing_dir(&cwd, "spawn")?;
    let invocation = Invocation::parse(&argv, workdir)
        .map_err(|e| Error::from_reason(format!("spawn: {e}")))?
        .cancel(cancel.token.clone());
    // A cap is a non-negative integer (checked in JavaScript); a float
    // converts saturating.
    let (stdout_max, stderr_max) = (stdout_max as usize, stderr_max as usize);
    off_thread(
        env,
        "spawn",
        &cancel.token,
        move || {
            let stdout = Mutex::new(Tail::new(stdout_max));
            let run = invocation.run_streaming(&NativeBackend::new(), &|bytes: &[u8]| {
                stdout.lock().recover_poison().push(bytes)
            });
            let Some(code) = run.exit_code() else {
                return Err(Error::from_reason(format!(
                    "spawn: {}",
                    run.failure().unwrap_or_default()
                )));
            };
            let mut stderr = Tail::new(stderr_max);
            stderr.push(&run.stderr);
            let stdout = stdout.into_inner().recover_poison();
            Ok((stdout.finish(), stderr.finish(), code))
        },
        |((stdout, stdout_total), (stderr, stderr_total), exit_code)| {
            Ok(RgTail {
                stdout: stdout.into(),
                stdout_total: stdout_total as f64,
                stderr: stderr.into(),
                stderr_total: stderr_total as f64,
                exit_code,
            })
        },
    )
}

/// What a call's promise is settled with, made on the JavaScript thread.
type Settle<D> = Box<dyn FnOnce(Env) -> Result<D> + Send>;

/// The stack of a call's thread: what libuv's pool threads have (8 MiB),
/// so a call that recurses deeply (a nested pattern) has the room it had
/// there. Only what is touched is committed.
const CALL_STACK: usize = 8 << 20;

/// Run `work` on a thread of its own and return a promise that `to_js`
/// settles with its result on the JavaScript thread (an error, or a panic
/// in `work`, rejects it). A thread per call: calls that wait (a FIFO, a
/// slow remote host) never hold one another back, nor the host's pool.
/// Nothing joins the thread: `process.exit()` does not wait for it, and
/// the environment's end cancels `cancel` ([`in_flight`]).
fn off_thread<'e, T, D>(
    env: &'e Env,
    who: &'static str,
    cancel: &CancelToken,
    work: impl FnOnce() -> Result<T> + Send + 'static,
    to_js: impl FnOnce(T) -> Result<D> + Send + 'static,
) -> Result<Object<'e>>
where
    T: Send + 'static,
    D: ToNapiValue + 'static,
{
    let registered = in_flight::register(env, cancel)?;
    let (deferred, promise) = env.create_deferred::<D, Settle<D>>()?;
    // The thread takes the deferred; if no thread starts, this function
    // rejects it (a deferred never settled would keep the event loop
    // alive for ever).
    let slot = Arc::new(Mutex::new(Some(deferred)));
    let theirs = Arc::clone(&slot);
    let started = std::thread::Builder::new()
        .name(format!("dsh-node-{who}"))
        .stack_size(CALL_STACK)
        .spawn(move || {
            let result = guarded(work).and_then(|r| r);
            drop(registered);
            let Some(deferred) = theirs.lock().recover_poison().take() else {
                return;
            };
            match result {
                Ok(value) => deferred.resolve(Box::new(move |_env| to_js(value))),
                Err(e) => deferred.reject(e),
            }
        });
    if let Err(e) = started {
        if let Some(deferred) = slot.lock().recover_poison().take() {
            deferred.reject(Error::from_reason(format!(
                "{who}: no thread could be started for the call: {e}"
            )));
        }
    }
    Ok(promise)
}

/// The calls in flight, by Node environment (the main thread's, each
/// worker's), so that an environment's end cancels its own calls: its
/// cleanup hook runs when the environment is torn down (a worker
/// terminated, the main thread's loop at its end; `process.exit()` runs
/// none: the `exit` event calls [`stop_calls`]). A search nobody can
/// receive the answer of stops instead of running on (on a FIFO, for ever)
/// in a thread that nothing joins. A deferred settled after that is
/// dropped (napi's own teardown hook for it has run).
mod in_flight {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::{Arc, Condvar, Mutex, MutexGuard};
    use std::time::{Duration, Instant};

    use dsh_search::sync::RecoverPoison;
    use dsh_search::CancelToken;
    use napi::{Env, Result};

    /// How long an environment's end waits for its cancelled calls to
    /// stop: a native search stops within milliseconds, and a real rg (the
    /// `rg` backend) is stopped and reaped, not left running without its
    /// parent (on a FIFO, for ever). A call still running then is left to
    /// the process's exit: the exit is never held longer.
    const STOP_WAIT: Duration = Duration::from_secs(1);

    /// Set when a call's work is done.
    #[derive(Default)]
    struct Done {
        done: Mutex<bool>,
        changed: Condvar,
    }

    type Table = HashMap<usize, HashMap<u64, (CancelToken, Arc<Done>)>>;

    /// Environment (its address) → call id → the call's token and end.
    static CALLS: Mutex<Option<Table>> = Mutex::new(None);
    static NEXT_ID: AtomicU64 = AtomicU64::new(0);

    fn calls() -> MutexGuard<'static, Option<Table>> {
        CALLS.lock().recover_poison()
    }

    /// A call's place in the table; dropped when the call's work is done.
    pub(crate) struct Registered {
        env: usize,
        id: u64,
        done: Arc<Done>,
    }

    impl Drop for Registered {
        fn drop(&mut self) {
            if let Some(env) = calls().as_mut().and_then(|t| t.get_mut(&self.env)) {
                env.remove(&self.id);
            }
            *self.done.done.lock().recover_poison() = true;
            self.done.changed.notify_all();
        }
    }

    /// Enter a call of `env`; the environment's first call registers its
    /// cleanup hook (one per environment, for its whole life).
    pub(crate) fn register(env: &Env, token: &CancelToken) -> Result<Registered> {
        let key = env.raw() as usize;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let done = Arc::new(Done::default());
        let first = {
            let mut table = calls();
            let envs = table.get_or_insert_with(HashMap::new);
            let first = !envs.contains_key(&key);
            let entry = (token.clone(), Arc::clone(&done));
            envs.entry(key).or_default().insert(id, entry);
            first
        };
        if first {
            if let Err(e) = env.add_env_cleanup_hook(key, cancel_all) {
                if let Some(envs) = calls().as_mut() {
                    envs.remove(&key);
                }
                return Err(e);
            }
        }
        Ok(Registered { env: key, id, done })
    }

    /// The calls of `env` still running: cancelled, and given
    /// [`STOP_WAIT`] in all to stop.
    pub(crate) fn stop(env: &Env) {
        cancel_all(env.raw() as usize);
    }

    /// The environment's end: cancel each of its calls still running, and
    /// give them [`STOP_WAIT`] in all to stop.
    fn cancel_all(key: usize) {
        let gone = calls().as_mut().and_then(|envs| envs.remove(&key));
        let gone: Vec<_> = gone.into_iter().flat_map(|c| c.into_values()).collect();
        for (token, _) in &gone {
            token.cancel();
        }
        let deadline = Instant::now() + STOP_WAIT;
        for (_, done) in &gone {
            let mut finished = done.done.lock().recover_poison();
            while !*finished {
                let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                    return;
                };
                finished = done.changed.wait_timeout(finished, left).recover_poison().0;
            }
        }
    }
}

/// Cancel the calls this environment has in flight and give them a
/// moment to stop (a real rg, under the `rg` backend, is stopped and
/// reaped). `process.exit()` ends the process without running the
/// environment's cleanup hooks, so the package calls this from the
/// process's `exit` event.
#[napi]
pub fn stop_calls(env: &Env) {
    in_flight::stop(env);
}

/// The median wall time, in microseconds, of `n` runs of `argv` in `cwd`
/// made in-process from Rust on this thread, as [`rg`] makes each run on
/// its own thread: the baseline of the binding's per-call overhead
/// (`bench/bench.js`; not part of the package's JavaScript surface).
#[napi]
pub fn time_in_process(argv: Vec<String>, cwd: String, n: u32) -> Result<f64> {
    dsh_search::set_search_threads_from_env();
    let invocation = Invocation::parse(&argv, existing_dir(&cwd, "timeInProcess")?)
        .map_err(|e| Error::from_reason(e.to_string()))?;
    let mut times: Vec<f64> = (0..n.max(1))
        .map(|_| {
            let start = std::time::Instant::now();
            let out = invocation.run(&NativeBackend::new()).into_output();
            std::hint::black_box(out);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// The version of the crate this addon was built from, the workspace's
/// one version: `index.js` refuses an addon whose version is not its
/// package's (a platform package left over from another release).
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}

/// `null` when `argv` (without the program name) is one of the two
/// invocations, else why it is not.
#[napi]
pub fn check_rg_argv(argv: Vec<String>) -> Option<String> {
    Invocation::parse(&argv, ".").err().map(|e| e.to_string())
}

/// `new Tools(options)` on the native side.
#[napi]
pub struct NativeTools {
    tools: Arc<Tools>,
    /// The workspace the tools work on: a call's cwd is checked on its
    /// filesystem (remote for `sftp://`).
    workspace: Arc<Workspace>,
}

/// The options of `new Tools(options)`, as JSON text: `config` (the
/// configuration keys), `backend` (`native` | `rg`), `fs` (`local` | `mem`
/// | `mem:ROOT` | `sftp://[USER@]HOST[:PORT]`), `overlay` (a directory),
/// `root` (the directory `mem` loads and the overlay covers), `identity`
/// and `knownHosts` (with `sftp://`: the private key, the known-hosts
/// file).
#[napi]
impl NativeTools {
    /// Build the tools, the way `dsh-search serve` builds them for its
    /// options: the backend, the configuration, a local spill store, the
    /// workspace's filesystem, the guard, and the sessions (read
    /// observations, guard counters) in memory for the life of the object.
    #[napi(constructor)]
    pub fn new(options_json: String) -> Result<NativeTools> {
        dsh_search::set_search_threads_from_env();
        let options: Value = serde_json::from_str(&options_json)
            .map_err(|e| Error::from_reason(format!("Tools: options are not JSON: {e}")))?;
        let options = tools_options(&options).map_err(Error::from_reason)?;
        let (workspace, tools) = guarded(|| make_tools(options))?.map_err(Error::from_reason)?;
        Ok(NativeTools {
            tools: Arc::new(tools),
            workspace: Arc::new(workspace),
        })
    }

    /// The tool definitions, as `dsh-search definitions` prints them.
    #[napi]
    pub fn definitions_json(&self) -> String {
        self.tools.definitions_json()
    }

    /// Call tool `name` with `args_json` (a JSON object) in `cwd`, for
    /// `session` when given; resolves to the result object as JSON text.
    /// `cwd` is a directory of the workspace's filesystem: on the local
    /// disk it is checked here; on a remote host it must be absolute, and
    /// it is checked there, off the JavaScript thread (connecting first:
    /// a refused login or an unknown host key rejects the call).
    #[napi(ts_return_type = "Promise<string>")]
    pub fn call<'e>(
        &self,
        env: &'e Env,
        name: String,
        args_json: String,
        cwd: String,
        session: Option<String>,
        cancel: &Cancel,
    ) -> Result<Object<'e>> {
        let args: Value = serde_json::from_str(&args_json)
            .map_err(|e| Error::from_reason(format!("Tools.call: args are not JSON: {e}")))?;
        let workdir = if self.workspace.is_remote() {
            remote_dir_path(Path::new(&cwd))
                .map_err(|e| Error::from_reason(format!("Tools.call: cwd {e}")))?
        } else {
            existing_dir(&cwd, "Tools.call")?
        };
        let mut ctx = CallContext::new(workdir);
        ctx.session_id = session;
        ctx.cancel = cancel.token.clone();
        let tools = self.tools.clone();
        // The remote workspace whose directory the call's cwd must be.
        let remote = self.workspace.is_remote().then(|| self.workspace.clone());
        off_thread(
            env,
            "call",
            &cancel.token,
            move || {
                if let Some(workspace) = &remote {
                    check_remote_cwd(workspace, &ctx.workdir)
                        .map_err(|e| Error::from_reason(format!("Tools.call: {e}")))?;
                }
                let result = tools.call(&name, &args, &ctx);
                serde_json::to_string(&result).map_err(|e| Error::from_reason(e.to_string()))
            },
            Ok,
        )
    }
}

/// The options object of `new Tools(options)` (which has checked each
/// key's type and resolved the local paths), typed.
fn tools_options(options: &Value) -> std::result::Result<ToolsOptions, String> {
    const KEYS: [&str; 9] = [
        "config",
        "backend",
        "fs",
        "overlay",
        "root",
        "identity",
        "knownHosts",
        "index",
        "indexWatch",
    ];
    let Value::Object(obj) = options else {
        return Err("Tools: options must be an object".into());
    };
    for key in obj.keys() {
        if !KEYS.contains(&key.as_str()) {
            return Err(format!(
                "Tools: unknown option {key:?}: use {}",
                KEYS.join(", ")
            ));
        }
    }
    let text = |key: &str| obj.get(key).and_then(Value::as_str).map(str::to_owned);
    let index = match obj.get("index") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(on)) => *on,
        Some(_) => return Err("Tools: index must be a boolean".into()),
    };
    Ok(ToolsOptions {
        config: obj.get("config").filter(|v| !v.is_null()).cloned(),
        backend: text("backend"),
        fs: text("fs"),
        root: text("root").map(PathBuf::from),
        overlay: text("overlay").map(PathBuf::from),
        identity: text("identity").map(PathBuf::from),
        known_hosts: text("knownHosts").map(PathBuf::from),
        index,
        index_watch: text("indexWatch"),
    })
}

/// `dir` as a path, when it names an existing directory.
fn existing_dir(dir: &str, who: &str) -> Result<PathBuf> {
    existing_dir_path(Path::new(dir)).map_err(|e| Error::from_reason(format!("{who}: cwd {e}")))
}

/// `f`, with a panic turned into an error instead of unwinding into Node.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Error::from_reason(format!("dsh-search: internal error: {what}"))
    })
}
