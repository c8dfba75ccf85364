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
#[cfg(feature = "sftp")]
use crate::fs::SftpFs;
use crate::fs::{DynFileSystem, FileSystem, LocalFs, MemFs, OverlayFs};

/// `--fs` values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsArg {
    /// The local disk.
    Local,
    /// A copy in memory of `ROOT` (`None`: the workdir).
    Mem(Option<PathBuf>),
    /// A host over SFTP: `sftp://[USER@]HOST[:PORT]`.
    Sftp {
        /// The login (default: `$USER`).
        user: Option<String>,
        /// The host name or address.
        host: String,
        /// The SSH port.
        port: u16,
    },
}

/// `sftp://[USER@]HOST[:PORT]` (an IPv6 address in brackets).
#[cfg(feature = "sftp")]
fn parse_sftp(rest: &str) -> Result<FsArg, String> {
    let bad = |why: &str| {
        format!("invalid sftp:// address {rest:?}: {why} (use sftp://[USER@]HOST[:PORT])")
    };
    if rest.contains('/') {
        return Err(bad("no path after the host: the remote workdir is --cwd"));
    }
    let (user, hostport) = match rest.rsplit_once('@') {
        Some((u, h)) if !u.is_empty() => (Some(u.to_string()), h),
        Some(_) => return Err(bad("empty user")),
        None => (None, rest),
    };
    let (host, port) = if let Some(v6) = hostport.strip_prefix('[') {
        match v6.split_once(']') {
            Some((h, "")) => (h, None),
            Some((h, p)) => match p.strip_prefix(':') {
                Some(p) => (h, Some(p)),
                None => return Err(bad("junk after the address")),
            },
            None => return Err(bad("unclosed [")),
        }
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (hostport, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None => 22,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad("the port is not a number from 1 to 65535")),
        },
    };
    Ok(FsArg::Sftp {
        user,
        host: host.to_string(),
        port,
    })
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
                None => match s.strip_prefix("sftp://") {
                    #[cfg(feature = "sftp")]
                    Some(rest) => parse_sftp(rest),
                    #[cfg(not(feature = "sftp"))]
                    Some(_) => Err(
                        "sftp:// workspaces need the `sftp` feature, which this build lacks".into(),
                    ),
                    None => Err(format!(
                        "unknown filesystem {s:?}: use local, mem[:ROOT] or sftp://[USER@]HOST[:PORT]"
                    )),
                },
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
    /// A host over SFTP (`--fs sftp://…`).
    #[cfg(feature = "sftp")]
    Sftp(Arc<SftpFs>),
}

impl Workspace {
    /// The workspace for the common options; `local` is the local disk
    /// with the command line's cross-process locks.
    pub fn open(common: &Common, local: LocalFs) -> Result<Workspace, String> {
        if let FsArg::Sftp { user, host, port } = &common.fs {
            #[cfg(not(feature = "sftp"))]
            {
                let _ = (user, host, port);
                return Err(
                    "sftp:// workspaces need the `sftp` feature, which this build lacks".into(),
                );
            }
            #[cfg(feature = "sftp")]
            return open_sftp(common, user.as_deref(), host, *port);
        }
        if common.identity.is_some() || common.known_hosts.is_some() {
            return Err("--identity and --known-hosts go with --fs sftp://".into());
        }
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
            (FsArg::Sftp { .. }, _) => unreachable!("opened above"),
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
            #[cfg(feature = "sftp")]
            Workspace::Sftp(fs) => fs.clone(),
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
            #[cfg(feature = "sftp")]
            (BackendArg::Native, Workspace::Sftp(fs)) => Ok(native(fs)),
            (BackendArg::Rg, Workspace::Local(_)) => Ok(Arc::new(RgBackend::with_config(RgConfig {
                // The edge reads the environment; the backend takes a path.
                path: rg_from_env(),
                grace: Duration::from_millis(config.search.grace_ms),
            }))),
            (BackendArg::Rg, _) => Err(
                "--backend rg searches the local disk only: it cannot be used with --fs mem, --fs sftp:// or --overlay"
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

/// `--fs sftp://…`: the host's filesystem, connected now so that a wrong
/// key, an unknown host key or a refused connection is one clear error.
/// `--cwd` names a remote directory, so it must be absolute; an overlay
/// is refused (its upper layer would be local, its lower remote).
#[cfg(feature = "sftp")]
fn open_sftp(
    common: &Common,
    user: Option<&str>,
    host: &str,
    port: u16,
) -> Result<Workspace, String> {
    if common.overlay.is_some() {
        return Err("--overlay cannot be used with --fs sftp://".into());
    }
    match &common.cwd {
        Some(d) if d.is_absolute() => {}
        _ => {
            return Err(
                "--fs sftp:// needs --cwd with the remote workdir as an absolute path".into(),
            )
        }
    }
    let mut b = SftpFs::builder(host).port(port);
    // The defaults from the environment, read here at the edge.
    if let Some(u) = user
        .map(String::from)
        .or_else(|| std::env::var("USER").ok())
    {
        b = b.user(u);
    }
    if let Some(k) = &common.identity {
        b = b.identity(k);
    }
    match &common.known_hosts {
        Some(k) => b = b.known_hosts(k),
        None => {
            let home = std::env::var_os("HOME")
                .ok_or("no --known-hosts and no HOME to find ~/.ssh/known_hosts in")?;
            b = b.known_hosts(PathBuf::from(home).join(".ssh/known_hosts"));
        }
    }
    let fs = b.build().map_err(|e| e.to_string())?;
    fs.connect().map_err(|e| e.to_string())?;
    Ok(Workspace::Sftp(Arc::new(fs)))
}
