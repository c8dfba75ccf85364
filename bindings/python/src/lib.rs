//! The Python module of dsh-search, `dsh_search._native` (the package
//! `dsh_search` re-exports it; docs/packaging.md).
//!
//! The same primitives as the Node addon (`bindings/node/src/lib.rs`), for
//! Python's calling conventions:
//!
//! - `rg`: one of rg's two argv vectors (`dsh_search::Invocation`) run on
//!   the native engine, returning rg's stdout, stderr and exit code;
//! - `Tools`: the tools over the workspace its options name (the keys
//!   and checks of Node's `new Tools(options)`, `bindings/common`), with
//!   one method per tool returning the text the model reads (what
//!   `dsh-search TOOL` prints), and `call` for the whole result object.
//!
//! Every search and tool call runs on a thread of its own while the
//! calling thread waits without the GIL, so other Python threads run; the
//! waiting thread takes the GIL back every 50 ms to run Python's signal
//! handlers, and an exception one raises (`KeyboardInterrupt` at Ctrl-C)
//! cancels the call, which stops at its next check, and is raised once
//! the call has stopped.
//!
//! Every path parameter takes `str`, `bytes` or `os.PathLike` (`FsPath`, below),
//! without loss: a directory whose name is not UTF-8 is the directory
//! named. The tools' own `path` and `file_path` are text, as a model gives
//! them (`text_path`, below).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use dsh_search::tool::{CallContext, ToolResult, Tools as ToolSet};
use dsh_search::{CancelToken, Invocation, NativeBackend, Workspace};
use pyo3::exceptions::{PyException, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use pyo3::Borrowed;
use serde_json::{json, Value};

#[path = "../../common/options.rs"]
mod options;

pyo3::create_exception!(
    _native,
    ToolError,
    PyException,
    "A tool's error result: the message is the text the model reads (`content`), `code` the error's code."
);

/// How often a waiting call takes the GIL back to run signal handlers.
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Run `work` on a thread of its own; wait for it without the GIL, running
/// Python's signal handlers every [`SIGNAL_POLL`]. An exception a handler
/// raises cancels `cancel` and is returned once `work` has ended, so that
/// nothing runs on after the interrupt (a real rg the `rg` backend started
/// is stopped and reaped by then).
fn off_thread<T: Send + 'static>(
    py: Python<'_>,
    cancel: &CancelToken,
    work: impl FnOnce() -> T + Send + 'static,
) -> PyResult<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .name("dsh-search-call".into())
        .spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(work)));
        })
        .map_err(|e| PyRuntimeError::new_err(format!("dsh-search: cannot start a thread: {e}")))?;
    let mut rx = rx;
    loop {
        // The receiver goes into the closure and back: it is Send, not Sync.
        let (answer, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
        rx = back;
        match answer {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(panic)) => {
                let what = panic
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                return Err(PyRuntimeError::new_err(format!(
                    "dsh-search: internal error: {what}"
                )));
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Err(interrupt) = py.check_signals() {
                    cancel.cancel();
                    let _ = py.detach(move || rx.recv());
                    return Err(interrupt);
                }
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(PyRuntimeError::new_err(
                    "dsh-search: internal error: the call's thread ended without an answer",
                ))
            }
        }
    }
}

/// A path parameter: `str`, `bytes` or `os.PathLike` of either, as
/// `os.fspath` gives it (whose `TypeError` names the three), without loss.
///
/// A `str` is encoded as Python encodes file names (`os.fsencode`): on
/// Unix its `surrogateescape` gives back the bytes of a name that is not
/// UTF-8, which `os.fsdecode` made the `str`. `bytes` are decoded with
/// `os.fsdecode` first, which makes the same bytes of them again on Unix
/// and is Python's own reading of a `bytes` path on Windows. (pyo3's
/// `PathBuf` takes the `str` the same way, but refuses `bytes`.)
struct FsPath(PathBuf);

impl<'a, 'py> FromPyObject<'a, 'py> for FsPath {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<FsPath> {
        let os = obj.py().import("os")?;
        let path = os.call_method1("fspath", (obj,))?;
        let path = if path.is_instance_of::<PyBytes>() {
            os.call_method1("fsdecode", (path,))?
        } else {
            path
        };
        Ok(FsPath(path.extract()?))
    }
}

/// A tool's `path` or `file_path` as the text the tool takes (a model's
/// arguments are JSON strings; the command line refuses such a path too):
/// one that is not UTF-8 is refused, never changed.
fn text_path(path: FsPath, what: &str) -> PyResult<String> {
    path.0.into_os_string().into_string().map_err(|p| {
        PyValueError::new_err(format!(
            "{what} {p:?} is not UTF-8: the tools take text paths (a directory whose name is not, as the root or a call's cwd, is taken as it is)"
        ))
    })
}

/// `dir` made absolute against the current directory (as `os.path.abspath`
/// would: the call runs on another thread, which must not depend on it),
/// and checked to be an existing directory.
fn local_dir(dir: &Path, who: &str) -> PyResult<PathBuf> {
    let dir = std::path::absolute(dir)
        .map_err(|e| PyValueError::new_err(format!("{who}: cwd {dir:?}: {e}")))?;
    options::existing_dir_path(&dir).map_err(|e| PyValueError::new_err(format!("{who}: cwd {e}")))
}

/// rg's own answer to `args` (its arguments without the program name, one
/// of the two invocations of contract.md §2) in `cwd`, computed in-process:
/// `(stdout, stderr, exit_code)`, byte for byte what rg 15.2.0 gives.
#[pyfunction]
fn rg<'py>(
    py: Python<'py>,
    args: Vec<String>,
    cwd: FsPath,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>, i32)> {
    dsh_search::set_search_threads_from_env();
    let workdir = local_dir(&cwd.0, "rg")?;
    let cancel = CancelToken::new();
    let invocation = Invocation::parse(&args, workdir)
        .map_err(|e| PyValueError::new_err(format!("rg: {e}")))?
        .cancel(cancel.clone());
    let run = off_thread(py, &cancel, move || {
        invocation.run(&NativeBackend::new()).into_output()
    })?;
    match run.exit_code() {
        Some(code) => Ok((
            PyBytes::new(py, &run.stdout),
            PyBytes::new(py, &run.stderr),
            code,
        )),
        None => Err(PyRuntimeError::new_err(format!(
            "rg: {}",
            run.failure().unwrap_or_default()
        ))),
    }
}

/// The session of a `Tools` object that names none: one per object, so
/// that its reads are what its writes and edits are checked against.
fn fresh_session() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("python-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

/// The model-facing tools (glob, grep, read, write, edit) over one
/// workspace: `Tools(root, *, index=False, fs="local", backend="native",
/// overlay=None, config=None, identity=None, known_hosts=None,
/// session=None)`.
#[pyclass(frozen, module = "dsh_search._native")]
struct Tools {
    tools: Arc<ToolSet>,
    workspace: Arc<Workspace>,
    /// The calls' directory when a call names none.
    root: PathBuf,
    /// The calls' session when a call names none.
    session: String,
}

#[pymethods]
impl Tools {
    #[new]
    #[pyo3(signature = (root, *, index = false, fs = None, backend = None, overlay = None, config = None, identity = None, known_hosts = None, session = None))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn new(
        py: Python<'_>,
        root: FsPath,
        index: bool,
        fs: Option<String>,
        backend: Option<String>,
        overlay: Option<FsPath>,
        config: Option<Bound<'_, PyAny>>,
        identity: Option<FsPath>,
        known_hosts: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<Tools> {
        dsh_search::set_search_threads_from_env();
        let remote = fs.as_deref().is_some_and(|f| f.starts_with("sftp://"));
        let absolute = |p: FsPath, key: &str| {
            std::path::absolute(&p.0)
                .map_err(|e| PyValueError::new_err(format!("Tools: {key} {:?}: {e}", p.0)))
        };
        // A remote root is a path on the host, never resolved here.
        let root = if remote {
            root.0
        } else {
            absolute(root, "root")?
        };
        // The paths go to the workspace as paths, never through text: a
        // name that is not UTF-8 is the directory it names.
        let options = options::ToolsOptions {
            config: config
                .map(|c| to_json(py, &c, "Tools: config"))
                .transpose()?,
            backend,
            fs,
            // Without the index, an sftp:// workspace has no root of its
            // own: `root` is then only the calls' default directory on
            // the host.
            root: (!remote || index).then(|| root.clone()),
            overlay: overlay.map(|p| absolute(p, "overlay")).transpose()?,
            identity: identity.map(|p| absolute(p, "identity")).transpose()?,
            known_hosts: known_hosts
                .map(|p| absolute(p, "known_hosts"))
                .transpose()?,
            index,
        };
        let (workspace, tools) = py
            .detach(|| options::make_tools(options))
            .map_err(PyValueError::new_err)?;
        Ok(Tools {
            tools: Arc::new(tools),
            workspace: Arc::new(workspace),
            root,
            session: session.unwrap_or_else(fresh_session),
        })
    }

    /// The tool definitions (name, description, parameters, prompt), as
    /// `dsh-search definitions` prints them.
    fn definitions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        from_json(py, &self.tools.definitions_json())
    }

    /// Call tool `name` with `args` (a dict); the whole result object
    /// (`content`, `isError`, `error`, `value`, `meta`), as `--format json`
    /// prints it. An error result is returned, not raised.
    #[pyo3(signature = (name, args, *, cwd = None, session = None))]
    fn call<'py>(
        &self,
        py: Python<'py>,
        name: String,
        args: Bound<'py, PyAny>,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let args = to_json(py, &args, "Tools.call: args")?;
        let result = self.run(py, name, args, cwd, session)?;
        let text = serde_json::to_string(&result)
            .map_err(|e| PyRuntimeError::new_err(format!("Tools.call: {e}")))?;
        from_json(py, &text)
    }

    /// `glob`: the files whose path matches `pattern`, newest first.
    #[pyo3(signature = (pattern, path = None, *, cwd = None, session = None))]
    fn glob(
        &self,
        py: Python<'_>,
        pattern: String,
        path: Option<FsPath>,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<String> {
        let path = path.map(|p| text_path(p, "Tools.glob: path")).transpose()?;
        let args = json!({ "pattern": pattern, "path": path });
        self.text(py, "glob", args, cwd, session)
    }

    /// `grep`: the lines that match `pattern`, in the files `include`
    /// selects under `path`.
    #[pyo3(signature = (pattern, path = None, include = None, *, cwd = None, session = None))]
    fn grep(
        &self,
        py: Python<'_>,
        pattern: String,
        path: Option<FsPath>,
        include: Option<String>,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<String> {
        let path = path.map(|p| text_path(p, "Tools.grep: path")).transpose()?;
        let args = json!({ "pattern": pattern, "path": path, "include": include });
        self.text(py, "grep", args, cwd, session)
    }

    /// `read`: the file's lines, numbered, from `offset` (1-based), at most
    /// `limit` of them.
    #[pyo3(signature = (file_path, offset = None, limit = None, *, cwd = None, session = None))]
    fn read(
        &self,
        py: Python<'_>,
        file_path: FsPath,
        offset: Option<u64>,
        limit: Option<u64>,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<String> {
        let file_path = text_path(file_path, "Tools.read: file_path")?;
        let args = json!({ "file_path": file_path, "offset": offset, "limit": limit });
        self.text(py, "read", args, cwd, session)
    }

    /// `write`: the file's whole new content (an existing file must have
    /// been read in the session first).
    #[pyo3(signature = (file_path, content, *, cwd = None, session = None))]
    fn write(
        &self,
        py: Python<'_>,
        file_path: FsPath,
        content: String,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<String> {
        let file_path = text_path(file_path, "Tools.write: file_path")?;
        let args = json!({ "file_path": file_path, "content": content });
        self.text(py, "write", args, cwd, session)
    }

    /// `edit`: `old_string` replaced by `new_string` (once, unless
    /// `replace_all`).
    #[pyo3(signature = (file_path, old_string, new_string, replace_all = false, *, cwd = None, session = None))]
    #[allow(clippy::too_many_arguments, reason = "Python keyword arguments")]
    fn edit(
        &self,
        py: Python<'_>,
        file_path: FsPath,
        old_string: String,
        new_string: String,
        replace_all: bool,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<String> {
        let file_path = text_path(file_path, "Tools.edit: file_path")?;
        let args = json!({
            "file_path": file_path,
            "old_string": old_string,
            "new_string": new_string,
            "replace_all": replace_all,
        });
        self.text(py, "edit", args, cwd, session)
    }
}

impl Tools {
    /// Run tool `name` off the calling thread; its result object.
    fn run(
        &self,
        py: Python<'_>,
        name: String,
        args: Value,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<ToolResult> {
        let workdir = match cwd.map(|c| c.0) {
            Some(cwd) if self.workspace.is_remote() => options::remote_dir_path(&cwd)
                .map_err(|e| PyValueError::new_err(format!("Tools: cwd {e}")))?,
            Some(cwd) => local_dir(&cwd, "Tools")?,
            None if self.workspace.is_remote() => self.root.clone(),
            None => local_dir(&self.root, "Tools")?,
        };
        let mut ctx = CallContext::new(workdir);
        ctx.session_id = Some(session.unwrap_or_else(|| self.session.clone()));
        let cancel = CancelToken::new();
        ctx.cancel = cancel.clone();
        let tools = self.tools.clone();
        let remote = self.workspace.is_remote().then(|| self.workspace.clone());
        off_thread(py, &cancel, move || -> Result<ToolResult, String> {
            if let Some(workspace) = &remote {
                options::check_remote_cwd(workspace, &ctx.workdir)
                    .map_err(|e| format!("Tools: {e}"))?;
            }
            Ok(tools.call(&name, &args, &ctx))
        })?
        .map_err(PyValueError::new_err)
    }

    /// Tool `name`'s text: its content, or a [`ToolError`] with it.
    fn text(
        &self,
        py: Python<'_>,
        name: &str,
        args: Value,
        cwd: Option<FsPath>,
        session: Option<String>,
    ) -> PyResult<String> {
        // Arguments left at None are left out, as a model leaves them out.
        let args = match args {
            Value::Object(o) => {
                Value::Object(o.into_iter().filter(|(_, v)| !v.is_null()).collect())
            }
            other => other,
        };
        let result = self.run(py, name.to_owned(), args, cwd, session)?;
        if result.is_error {
            let code = result
                .error
                .as_ref()
                .and_then(|e| e.code())
                .map(str::to_owned);
            let err = ToolError::new_err(result.content);
            err.value(py).setattr("code", code)?;
            return Err(err);
        }
        Ok(result.content)
    }
}

/// `value` as JSON, through Python's own `json` module (a dict, list, …).
fn to_json(py: Python<'_>, value: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    let text: String = py
        .import("json")?
        .call_method1("dumps", (value,))
        .map_err(|e| PyValueError::new_err(format!("{what} must be JSON-serializable: {e}")))?
        .extract()?;
    serde_json::from_str(&text).map_err(|e| PyValueError::new_err(format!("{what}: {e}")))
}

fn from_json<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyAny>> {
    py.import("json")?.call_method1("loads", (text,))
}

/// The version of the crate this module was built from, the workspace's
/// one version.
const VERSION: &str = env!("CARGO_PKG_VERSION");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(rg, m)?)?;
    m.add_class::<Tools>()?;
    m.add("ToolError", m.py().get_type::<ToolError>())?;
    m.add("__version__", VERSION)?;
    Ok(())
}
