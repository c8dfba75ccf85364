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
use dsh_search::{BackendKind, FsSpec, Sessions, Workspace, WorkspaceOptions};
use serde_json::Value;

/// The options of a binding's `Tools`, typed: Node's come from its options
/// object (JSON), Python's keyword arguments go in directly, so that a path
/// never passes through text on the way (a Python path need not be UTF-8;
/// docs/packaging.md).
#[derive(Debug)]
pub(crate) struct ToolsOptions {
    /// The configuration keys, as JSON.
    pub(crate) config: Option<Value>,
    /// `native` or `rg`.
    pub(crate) backend: Option<String>,
    /// `local`, `mem`, `mem:ROOT` or `sftp://[USER@]HOST[:PORT]`.
    pub(crate) fs: Option<String>,
    /// The directory mem loads, the overlay covers and the index mirrors
    /// (with sftp:// and the index: the remote directory).
    pub(crate) root: Option<PathBuf>,
    /// The overlay's directory.
    pub(crate) overlay: Option<PathBuf>,
    /// sftp://: the private key.
    pub(crate) identity: Option<PathBuf>,
    /// sftp://: the known-hosts file.
    pub(crate) known_hosts: Option<PathBuf>,
    /// A live index of the root.
    pub(crate) index: bool,
    /// How the index learns of changes: `os` or `none` (default: the
    /// configuration's `indexWatch`, else `os`).
    pub(crate) index_watch: Option<String>,
}

/// The workspace and its tools for `options`: built the way `dsh-search
/// serve` builds them for its options, with the sessions (read
/// observations, guard counters) in memory for the life of the object.
pub(crate) fn make_tools(options: ToolsOptions) -> std::result::Result<(Workspace, Tools), String> {
    let config = match &options.config {
        None => Config::default(),
        Some(v) => Config::from_json(v).map_err(|e| e.to_string())?,
    };
    let backend = match options.backend.as_deref() {
        None | Some("native") => BackendKind::Native,
        Some("rg") => BackendKind::Rg,
        Some(other) => return Err(format!("Tools: backend {other:?}: use native or rg")),
    };
    let fs = match options.fs.as_deref() {
        None => FsSpec::Local,
        Some(s) => s.parse::<FsSpec>().map_err(|e| format!("Tools: fs: {e}"))?,
    };
    let remote = matches!(fs, FsSpec::Sftp(_));
    let index = options.index;
    let mut o = WorkspaceOptions::new(fs);
    let watch = match options.index_watch.as_deref() {
        None => config.index_watch,
        Some(w) => w.parse().map_err(|e| format!("Tools: index watch: {e}"))?,
    };
    o.backend(backend)
        .rg_path(rg_from_env())
        .index(index)
        .index_watch(watch);
    if remote && !index && options.root.is_some() {
        return Err("Tools: root names a local directory (for mem and an overlay), or with index the remote directory the index mirrors: an sftp:// workspace without index has none; a call's cwd is the remote directory".into());
    }
    if remote && index && options.root.is_none() {
        return Err("Tools: index over sftp:// needs root: the remote directory to mirror (an absolute path on the host)".into());
    }
    if let Some(root) = &options.root {
        let root = if remote {
            remote_dir_path(root)
        } else {
            existing_dir_path(root)
        };
        o.root(root.map_err(|e| format!("Tools: root: {e}"))?);
    }
    if let Some(dir) = options.overlay {
        o.overlay(dir);
    }
    if let Some(key) = options.identity {
        o.identity(key);
    }
    if let Some(file) = options.known_hosts {
        o.known_hosts(file);
    }
    // The SSH defaults, as the command line takes them.
    o.ssh_defaults_from_env();
    let workspace = o.open().map_err(|e| format!("Tools: {e}"))?;
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
pub(crate) fn remote_dir_path(dir: &Path) -> std::result::Result<PathBuf, String> {
    if dir.as_os_str().is_empty() {
        return Err("is empty: pass an absolute directory on the remote host".into());
    }
    if !dir.is_absolute() {
        return Err(format!(
            "{dir:?} is relative: pass an absolute directory on the remote host"
        ));
    }
    Ok(dir.to_path_buf())
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
