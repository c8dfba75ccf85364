//! The workspace options of the bindings' `Tools` (Node's `new
//! Tools(options)`, Python's `Tools(root, …)`), shared by both: each crate
//! includes this file (`#[path]`), so that both build a workspace from the
//! same keys with the same checks and the same messages, as `dsh-search
//! serve` builds one from its options.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use dsh_search::backend::rg::rg_from_env;
use dsh_search::config::Config;
use dsh_search::tool::Tools;
use dsh_search::{BackendKind, FsSpec, Sessions, Workspace, WorkspaceError, WorkspaceOptions};
use serde_json::Value;

/// The workspace and its tools for the options object (see
/// [`NativeTools`]): built the way `dsh-search serve` builds them for its
/// options, with the sessions (read observations, guard counters) in
/// memory for the life of the object.
pub(crate) fn make_tools(options: &Value) -> std::result::Result<(Workspace, Tools), String> {
    const KEYS: [&str; 8] = [
        "config",
        "backend",
        "fs",
        "overlay",
        "root",
        "identity",
        "knownHosts",
        "index",
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
    let config = match obj.get("config") {
        None | Some(Value::Null) => Config::default(),
        Some(v) => Config::from_json(v).map_err(|e| e.to_string())?,
    };
    let backend = match obj.get("backend").and_then(Value::as_str) {
        None | Some("native") => BackendKind::Native,
        Some("rg") => BackendKind::Rg,
        Some(other) => return Err(format!("Tools: backend {other:?}: use native or rg")),
    };
    let fs = match obj.get("fs").and_then(Value::as_str) {
        None => FsSpec::Local,
        Some(s) => s.parse::<FsSpec>().map_err(|e| format!("Tools: fs: {e}"))?,
    };
    let text = |key: &str| obj.get(key).and_then(Value::as_str).map(PathBuf::from);
    let remote = matches!(fs, FsSpec::Sftp(_));
    let index = match obj.get("index") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(on)) => *on,
        Some(_) => return Err("Tools: index must be a boolean".into()),
    };
    let mut o = WorkspaceOptions::new(fs);
    o.backend(backend).rg_path(rg_from_env()).index(index);
    if remote && !index && obj.contains_key("root") {
        return Err("Tools: root names a local directory (for mem and an overlay), or with index the remote directory the index mirrors: an sftp:// workspace without index has none; a call's cwd is the remote directory".into());
    }
    if remote && index && !obj.contains_key("root") {
        return Err("Tools: index over sftp:// needs root: the remote directory to mirror (an absolute path on the host)".into());
    }
    if let Some(root) = text("root") {
        let root = if remote {
            remote_dir_path(&root.to_string_lossy())
        } else {
            existing_dir_path(&root)
        };
        o.root(root.map_err(|e| format!("Tools: root: {e}"))?);
    }
    if let Some(dir) = text("overlay") {
        o.overlay(dir);
    }
    if let Some(key) = text("identity") {
        o.identity(key);
    }
    if let Some(file) = text("knownHosts") {
        o.known_hosts(file);
    }
    // The SSH defaults, as the command line takes them.
    o.ssh_defaults_from_env();
    let workspace = o.open().map_err(|e| match e {
        WorkspaceError::NoKnownHosts => "Tools: an sftp:// workspace needs knownHosts (there is no HOME to find ~/.ssh/known_hosts in)".to_string(),
        e => format!("Tools: {e}"),
    })?;
    let tools = workspace
        .tools(config, Some(Arc::new(Sessions::in_memory())))
        .map_err(|e| format!("Tools: {e}"))?;
    Ok((workspace, tools))
}

/// Whether `cwd` is a directory on the remote host (connecting first, so
/// that a login or host-key failure says so rather than "no such
/// directory").
pub(crate) fn check_remote_cwd(
    workspace: &Workspace,
    cwd: &Path,
) -> std::result::Result<(), String> {
    workspace.connect().map_err(|e| e.to_string())?;
    match workspace.filesystem().metadata(cwd) {
        Ok(m) if m.kind.is_dir() => Ok(()),
        Ok(_) => Err(format!("cwd {cwd:?} is not a directory on the remote host")),
        Err(e) => Err(format!(
            "cwd {cwd:?} is not an existing directory on the remote host ({e})"
        )),
    }
}

/// A remote workdir: an absolute path (checked on the host by the call).
pub(crate) fn remote_dir_path(dir: &str) -> std::result::Result<PathBuf, String> {
    if dir.is_empty() {
        return Err("is empty: pass an absolute directory on the remote host".into());
    }
    let path = PathBuf::from(dir);
    if !path.is_absolute() {
        return Err(format!(
            "{dir:?} is relative: pass an absolute directory on the remote host"
        ));
    }
    Ok(path)
}

/// `dir` as a path, when it names an existing absolute directory.
pub(crate) fn existing_dir_path(dir: &Path) -> std::result::Result<PathBuf, String> {
    if dir.as_os_str().is_empty() {
        return Err("is empty: pass an existing directory".into());
    }
    if !dir.is_absolute() {
        return Err(format!(
            "{:?} is relative: pass an absolute directory (the addon never uses the process's current directory)",
            dir
        ));
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(dir.to_path_buf()),
        Ok(_) => Err(format!("{dir:?} is not a directory")),
        Err(e) => Err(format!("{dir:?} is not an existing directory ({e})")),
    }
}
