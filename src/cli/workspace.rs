//! The workspace the common options name (`--fs`, `--overlay`;
//! `docs/contract.md` §10): the one filesystem every tool of the call
//! works on, and the search backend over it.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::{BackendArg, Common};
use crate::backend::rg::{rg_from_env, RgConfig};
use crate::backend::{NativeBackend, RgBackend, SearchBackend};
use crate::config::Config;
use crate::fs::{DynFileSystem, FileSystem, LocalFs, MemFs, OverlayFs};

/// `--fs` values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsArg {
    /// The local disk.
    Local,
    /// A copy in memory of `ROOT` (`None`: the workdir).
    Mem(Option<PathBuf>),
}

impl std::str::FromStr for FsArg {
    type Err = String;

    fn from_str(s: &str) -> Result<FsArg, String> {
        match s {
            "local" => Ok(FsArg::Local),
            "mem" => Ok(FsArg::Mem(None)),
            _ => match s.strip_prefix("mem:") {
                Some("") => Err("mem: needs a ROOT directory after the colon".into()),
                Some(root) => Ok(FsArg::Mem(Some(PathBuf::from(root)))),
                None if s.starts_with("sftp://") => Err(
                    "sftp:// workspaces are not supported by this build yet: use local or mem[:ROOT]"
                        .into(),
                ),
                None => Err(format!(
                    "unknown filesystem {s:?}: use local or mem[:ROOT]"
                )),
            },
        }
    }
}

/// The filesystem of one invocation.
pub enum Workspace {
    /// The local disk (`--fs local`, the default).
    Local(Arc<LocalFs>),
    /// A tree loaded into memory (`--fs mem[:ROOT]`); writes vanish at exit.
    Mem(Arc<MemFs>),
    /// An overlay directory over the local disk (`--overlay DIR`).
    Overlay(Arc<OverlayFs<LocalFs, LocalFs>>),
    /// An overlay directory over a tree in memory (`--fs mem --overlay DIR`).
    MemOverlay(Arc<OverlayFs<MemFs, LocalFs>>),
}

impl Workspace {
    /// The workspace for the common options; `local` is the local disk
    /// with the command line's cross-process locks.
    pub fn open(common: &Common, local: LocalFs) -> Result<Workspace, String> {
        let workdir = common
            .workdir()
            .map_err(|e| format!("cannot use the current directory: {e}"))?;
        let workdir = absolute(&workdir)?;
        let local = Arc::new(local);
        let ws = match (&common.fs, &common.overlay) {
            (FsArg::Local, None) => Workspace::Local(local),
            (FsArg::Local, Some(dir)) => Workspace::Overlay(Arc::new(
                OverlayFs::on_disk(local, &workdir, dir).map_err(|e| e.to_string())?,
            )),
            (FsArg::Mem(root), overlay) => {
                let mem = Arc::new(load_mem(
                    &local,
                    root.as_deref().unwrap_or(&workdir),
                    &workdir,
                )?);
                match overlay {
                    None => Workspace::Mem(mem),
                    Some(dir) => Workspace::MemOverlay(Arc::new(
                        OverlayFs::on_disk(mem, &workdir, dir).map_err(|e| e.to_string())?,
                    )),
                }
            }
        };
        Ok(ws)
    }

    /// The filesystem, for the file tools and the guard.
    pub fn filesystem(&self) -> Arc<dyn DynFileSystem> {
        match self {
            Workspace::Local(fs) => fs.clone(),
            Workspace::Mem(fs) => fs.clone(),
            Workspace::Overlay(fs) => fs.clone(),
            Workspace::MemOverlay(fs) => fs.clone(),
        }
    }

    /// The search backend `--backend` names, over this workspace. The rg
    /// backend searches the local disk only (it is the reference); the rg
    /// process gets the configured `graceMs`.
    pub fn backend(
        &self,
        kind: BackendArg,
        config: &Config,
    ) -> Result<Arc<dyn SearchBackend>, String> {
        fn native<F: FileSystem>(fs: &Arc<F>) -> Arc<dyn SearchBackend> {
            Arc::new(NativeBackend::on(fs.clone()))
        }
        match (kind, self) {
            (BackendArg::Native, Workspace::Local(fs)) => Ok(native(fs)),
            (BackendArg::Native, Workspace::Mem(fs)) => Ok(native(fs)),
            (BackendArg::Native, Workspace::Overlay(fs)) => Ok(native(fs)),
            (BackendArg::Native, Workspace::MemOverlay(fs)) => Ok(native(fs)),
            (BackendArg::Rg, Workspace::Local(_)) => Ok(Arc::new(RgBackend::with_config(RgConfig {
                // The edge reads the environment; the backend takes a path.
                path: rg_from_env(),
                grace: Duration::from_millis(config.search.grace_ms),
            }))),
            (BackendArg::Rg, _) => Err(
                "--backend rg searches the local disk only: it cannot be used with --fs mem or --overlay"
                    .into(),
            ),
        }
    }
}

/// The workdir made absolute against the process's current directory (the
/// filesystems take absolute paths).
fn absolute(workdir: &Path) -> Result<PathBuf, String> {
    if workdir.is_absolute() {
        return Ok(workdir.to_path_buf());
    }
    std::env::current_dir()
        .map(|d| d.join(workdir))
        .map_err(|e| format!("cannot use the current directory: {e}"))
}

/// `--fs mem[:ROOT]`: ROOT loaded into memory at its own absolute path,
/// with the host's git global excludes, so that a search there prints
/// what rg prints on the disk.
fn load_mem(local: &LocalFs, root: &Path, workdir: &Path) -> Result<MemFs, String> {
    let root = absolute(root)?;
    let mut mem = MemFs::load(&root)
        .map_err(|e| format!("cannot load {} into memory: {e}", root.display()))?;
    if let Some((path, bytes)) = local.git_global_excludes(workdir) {
        mem = mem.with_git_global_excludes(path, bytes);
    }
    Ok(mem)
}
