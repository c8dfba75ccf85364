//! The workspace the common options name (`--fs`, `--overlay`,
//! `--backend`, `--identity`, `--known-hosts`; `docs/contract.md` §10):
//! the library's [`WorkspaceOptions`], with what only the command line
//! knows filled in here, at the edge: paths made absolute against the
//! current directory, the rg binary (`DSH_SEARCH_RG`), and the SSH
//! defaults (`$USER`, `~/.ssh/known_hosts`), which the library's
//! `WorkspaceOptions::ssh_defaults_from_env` fills in for the Node binding
//! too.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use dsh_search::backend::rg::rg_from_env;
use dsh_search::config::Config;
use dsh_search::{FsSpec, Workspace, WorkspaceError, WorkspaceOptions};

use super::Common;

/// Why a remote workspace needs `--cwd`.
const NEEDS_REMOTE_CWD: &str =
    "--fs sftp:// needs --cwd with the remote workdir as an absolute path";

/// The workspace of the common options, connected when it is remote (so
/// that a wrong key, an unknown host key or a refused connection is one
/// clear error before the call).
pub(crate) fn open(common: &Common, config: &Config) -> Result<Workspace, String> {
    let workdir = absolute(
        &common
            .workdir()
            .map_err(|e| format!("cannot use the current directory: {e}"))?,
    )?;
    let mut fs = common.fs.clone();
    if let FsSpec::Mem(Some(root)) = &mut fs {
        *root = absolute(root)?;
    }
    let remote = matches!(fs, FsSpec::Sftp(_));
    let mut options = WorkspaceOptions::new(fs);
    options
        .backend(common.backend.into())
        .rg_path(rg_from_env());
    let index = common.index || config.index;
    let remote_cwd = common.cwd.as_deref().filter(|p| p.is_absolute());
    if !remote {
        options.root(&workdir);
    } else if index {
        // The index mirrors the remote workdir.
        options.root(remote_cwd.ok_or(NEEDS_REMOTE_CWD)?);
    }
    if let Some(dir) = &common.overlay {
        options.overlay(absolute(dir)?);
    }
    options.index(index);
    options.index_watch(
        common
            .index_watch
            .map_or(config.index_watch, dsh_search::IndexWatch::from),
    );
    if index && !common.no_index_save {
        // Without a state directory there is nowhere to save it: built
        // from the tree at every start, as before.
        options.index_store(super::state_dir_from_env().map(|d| d.join("index")));
    }
    if let Some(key) = &common.identity {
        options.identity(key);
    }
    if let Some(file) = &common.known_hosts {
        options.known_hosts(file);
    }
    options.ssh_defaults_from_env();
    let workspace = options.open().map_err(describe)?;
    // `--cwd` names a remote directory: the local current directory means
    // nothing there.
    if remote && remote_cwd.is_none() {
        return Err(NEEDS_REMOTE_CWD.into());
    }
    workspace.connect().map_err(describe)?;
    if let Some(index) = workspace.index() {
        log_saved_index(index.clone());
        OPENED
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(index.clone());
    }
    Ok(workspace)
}

/// The indexes this process opened, for [`finish_saves`]. Process-wide:
/// the servers stop (at EOF, at a signal) far from where the workspace was
/// opened, and a process opens at most a few.
static OPENED: Mutex<Vec<dsh_search::Index>> = Mutex::new(Vec::new());

/// Before the process exits: let the saves of the index in flight end,
/// at most `timeout` in all, so that a server stopped right after its
/// build leaves the mirror for the next start instead of a half-written
/// file (`docs/index.md`, "Restart without a rebuild"). Whether they all
/// ended.
pub(crate) fn finish_saves(timeout: Duration) -> bool {
    let until = std::time::Instant::now() + timeout;
    let opened = OPENED.lock().unwrap_or_else(|e| e.into_inner()).clone();
    opened
        .iter()
        .all(|index| index.finish_save(until.saturating_duration_since(std::time::Instant::now())))
}

/// Say on stderr, once the first build ends, that a saved index could not
/// be used and was rebuilt from the tree, or that the state directory was
/// not trusted, and once its mirror is saved, that the save failed: one
/// line each, once per process, from a thread of its own, through the servers'
/// log queue, so that nothing waits for it (`docs/index.md`, "Restart
/// without a rebuild").
fn log_saved_index(index: dsh_search::Index) {
    let _ = std::thread::Builder::new()
        .name("dsh-index-log".to_string())
        .spawn(move || {
            let day = std::time::Duration::from_secs(24 * 3600);
            let log = |msg: std::fmt::Arguments<'_>| crate::server::log::line("index", msg);
            index.wait_ready(day);
            let status = index.status();
            if let Some(why) = status.saved.strip_prefix("ignored: ") {
                log(format_args!(
                    "the saved index was ignored ({why}); built from the tree"
                ));
            }
            if let Some(why) = status.saved.strip_prefix("refused: ") {
                log(format_args!(
                    "the state directory is not private ({why}); the index is built from the tree and not saved"
                ));
            }
            index.wait_saved(day);
            let status = index.status();
            if let Some(error) = &status.save_error {
                log(format_args!(
                    "{error}; the next start builds it from the tree"
                ));
            }
        });
}

/// The library's error, worded with the command line's options where it
/// is about them.
pub(crate) fn describe(e: WorkspaceError) -> String {
    match e {
        WorkspaceError::RgNeedsLocalDisk => "--backend rg searches the local disk only: it cannot be used with --fs mem, --fs sftp:// or --overlay".into(),
        WorkspaceError::OverlayOverSftp => "--overlay cannot be used with --fs sftp://".into(),
        WorkspaceError::IndexUnsupported("the rg backend") => "the index (--index, or the configuration's index key) is not available with --backend rg: it answers through the native engine".into(),
        WorkspaceError::IndexUnsupported(what) => format!("the index (--index, or the configuration's index key) is not available for {what}: it answers through the native engine"),
        WorkspaceError::SftpOptionsWithoutSftp => {
            "--identity and --known-hosts go with --fs sftp://".into()
        }
        WorkspaceError::UnixPathsOnly => "--fs mem, --fs sftp:// and --overlay are not available on Windows: they hold `/`-separated Unix paths, not drive paths".into(),
        e => e.to_string(),
    }
}

/// `path` made absolute against the process's current directory (the
/// library takes absolute paths).
fn absolute(path: &Path) -> Result<PathBuf, String> {
    std::path::absolute(path).map_err(|e| format!("cannot use the current directory: {e}"))
}
