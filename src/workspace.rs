//! A workspace from its description (`contract.md` §10–12): which
//! filesystem holds it, which backend searches it, and the tools over both.
//! The command line, its servers and the bindings all build theirs here,
//! so that they accept the same combinations and refuse the others with
//! the same errors.
//!
//! - `address`: [`FsSpec`], the filesystem as text (`--fs`), parsed;
//! - `options`: [`WorkspaceOptions`], the description, one setter per
//!   option;
//! - here: [`WorkspaceError`], and the assembly: [`WorkspaceOptions::open`]
//!   checks the combination, opens the filesystem and the index, and
//!   [`Workspace`] hands out the backend and the tools over them.

mod address;
mod options;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::backend::rg::RgConfig;
use crate::backend::{BackendKind, Engine, NativeBackend, RgBackend, SearchBackend};
use crate::config::Config;
#[cfg(feature = "sftp")]
use crate::fs::SftpFs;
use crate::fs::{DynFileSystem, FileSystem, FsHints, LocalFs, MemFs, OverlayFs};
use crate::guard::Guard;
use crate::index::{Index, IndexWatch};
use crate::session::Sessions;
use crate::spill::LocalSpillStore;
use crate::tool::Tools;

pub use address::{FsSpec, ParseFsSpecError, SftpAddress};
pub use options::{known_hosts_from_env, ssh_user_from_env, WorkspaceOptions};

/// Why a workspace cannot be opened or its tools built.
#[derive(Debug)]
#[non_exhaustive]
pub enum WorkspaceError {
    /// The rg backend was asked for over a filesystem other than the
    /// local disk without an overlay: rg searches the disk only (it is the
    /// reference).
    RgNeedsLocalDisk,
    /// An overlay over an SFTP workspace (its upper layer would be local,
    /// its lower remote).
    OverlayOverSftp,
    /// An identity or known-hosts file for a workspace that is not SFTP.
    SftpOptionsWithoutSftp,
    /// An SFTP workspace in a build without the `sftp` feature.
    NoSftpFeature,
    /// An SFTP workspace without a known-hosts file to check the host
    /// key against.
    NoKnownHosts,
    /// `mem`, an overlay or the index without a root to load, cover or
    /// index.
    NoRoot,
    /// A path that must be absolute is not (`what` names it).
    Relative {
        /// Which path: `root`, `mem ROOT`, `overlay`.
        what: &'static str,
        /// The path given.
        path: PathBuf,
    },
    /// The directory `mem` loads cannot be read.
    LoadMem {
        /// The directory.
        root: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// The overlay directory cannot be used.
    Overlay(io::Error),
    /// The remote host cannot be reached or refuses the login (the message
    /// names the host).
    Sftp(io::Error),
    /// The configuration's spill root cannot be used.
    SpillRoot(io::Error),
    /// The index ([`WorkspaceOptions::index`]) asked of a workspace it
    /// cannot serve (the rg backend); says which.
    IndexUnsupported(&'static str),
    /// The index's root cannot be resolved.
    Index(io::Error),
    /// `mem`, an overlay or `sftp://` on Windows, where they are not
    /// available: they hold `/`-separated Unix paths (`contract.md` §10),
    /// not drive paths.
    UnixPathsOnly,
}

impl fmt::Display for WorkspaceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WorkspaceError::RgNeedsLocalDisk => f.write_str(
                "the rg backend searches the local disk only: it cannot be used with a mem, sftp:// or overlay workspace",
            ),
            WorkspaceError::OverlayOverSftp => {
                f.write_str("an overlay cannot be used with an sftp:// workspace")
            }
            WorkspaceError::SftpOptionsWithoutSftp => {
                f.write_str("an identity or known-hosts file goes with an sftp:// workspace")
            }
            WorkspaceError::NoSftpFeature => f.write_str(
                "sftp:// workspaces need the `sftp` feature, which this build lacks",
            ),
            // The one wording of this refusal: the command line and the
            // bindings show it as it is.
            WorkspaceError::NoKnownHosts => f.write_str(
                "an sftp:// workspace needs a known-hosts file to check the host key against: none was given, and without HOME there is no ~/.ssh/known_hosts to take",
            ),
            WorkspaceError::NoRoot => {
                f.write_str("mem, an overlay and the index need the root directory they load, cover or index")
            }
            WorkspaceError::Relative { what, path } => write!(
                f,
                "the {what} {} is relative: pass an absolute path",
                path.display()
            ),
            WorkspaceError::LoadMem { root, source } => {
                write!(f, "cannot load {} into memory: {source}", root.display())
            }
            WorkspaceError::Overlay(e) | WorkspaceError::Sftp(e) => write!(f, "{e}"),
            WorkspaceError::SpillRoot(e) => write!(f, "cannot use the spill root: {e}"),
            WorkspaceError::IndexUnsupported(what) => {
                write!(f, "the index is not available for {what}: it answers through the native engine")
            }
            WorkspaceError::Index(e) => write!(f, "cannot index the root: {e}"),
            WorkspaceError::UnixPathsOnly => f.write_str(
                "mem, overlay and sftp:// workspaces are not available on Windows: they hold `/`-separated Unix paths, not drive paths",
            ),
        }
    }
}

impl std::error::Error for WorkspaceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WorkspaceError::LoadMem { source: e, .. }
            | WorkspaceError::Overlay(e)
            | WorkspaceError::Sftp(e)
            | WorkspaceError::SpillRoot(e)
            | WorkspaceError::Index(e) => Some(e),
            _ => None,
        }
    }
}

impl WorkspaceOptions {
    /// Open the workspace: load `mem`, create the overlay directory, set
    /// up the SFTP filesystem (not connected yet: see
    /// [`Workspace::connect`]). Refuses the combinations that cannot work
    /// (the rg backend off the local disk, an overlay over SFTP, SSH files
    /// without SFTP) and relative paths.
    pub fn open(&self) -> Result<Workspace, WorkspaceError> {
        // Refused before anything is loaded or created: `mem` would read
        // the whole tree into memory first, an overlay create its directory.
        let local_disk = matches!(self.fs, FsSpec::Local) && self.overlay.is_none();
        if self.backend == BackendKind::Rg && !local_disk {
            return Err(WorkspaceError::RgNeedsLocalDisk);
        }
        let index_root = if self.index {
            let unsupported = match (&self.fs, self.overlay.is_some(), self.backend) {
                (_, _, BackendKind::Rg) => Some("the rg backend"),
                _ => None,
            };
            if let Some(what) = unsupported {
                return Err(WorkspaceError::IndexUnsupported(what));
            }
            let root = self.root.as_deref().ok_or(WorkspaceError::NoRoot)?;
            Some(absolute("root", root)?.to_path_buf())
        } else {
            None
        };
        let fs = self.open_fs()?;
        let engine = self.engine.clone().unwrap_or_else(Engine::process_default);
        let index = match index_root {
            Some(root) => Some(
                fs.index(
                    &root,
                    self.index_store.as_deref(),
                    &engine,
                    self.index_watch,
                )
                .map_err(WorkspaceError::Index)?,
            ),
            None => None,
        };
        Ok(Workspace {
            fs,
            backend: self.backend,
            rg: self.rg.clone(),
            index,
            engine,
        })
    }

    fn open_fs(&self) -> Result<Fs, WorkspaceError> {
        let unix_paths = !matches!(self.fs, FsSpec::Local) || self.overlay.is_some();
        if cfg!(windows) && unix_paths {
            return Err(WorkspaceError::UnixPathsOnly);
        }
        if let FsSpec::Sftp(address) = &self.fs {
            return self.open_sftp(address);
        }
        if self.identity.is_some() || self.known_hosts.is_some() {
            return Err(WorkspaceError::SftpOptionsWithoutSftp);
        }
        let local = Arc::new(LocalFs::new());
        let overlay = match self.overlay.as_deref() {
            Some(dir) => Some(absolute("overlay", dir)?),
            None => None,
        };
        let mem_root = match &self.fs {
            FsSpec::Mem(Some(dir)) => Some(absolute("mem ROOT", dir)?),
            _ => None,
        };
        // The root an overlay covers and git's excludes are looked up from:
        // the one given, else the directory `mem:ROOT` names.
        let root = || -> Result<&Path, WorkspaceError> {
            match self.root.as_deref() {
                Some(root) => absolute("root", root),
                None => mem_root.ok_or(WorkspaceError::NoRoot),
            }
        };
        Ok(match (&self.fs, overlay) {
            (FsSpec::Local, None) => Fs::Local(local),
            (FsSpec::Local, Some(dir)) => Fs::Overlay(Arc::new(
                OverlayFs::on_disk(local, root()?, dir).map_err(WorkspaceError::Overlay)?,
            )),
            (FsSpec::Mem(_), overlay) => {
                let root = root()?;
                let mem = Arc::new(load_mem(&local, mem_root.unwrap_or(root), root)?);
                match overlay {
                    None => Fs::Mem(mem),
                    Some(dir) => Fs::MemOverlay(Arc::new(
                        OverlayFs::on_disk(mem, root, dir).map_err(WorkspaceError::Overlay)?,
                    )),
                }
            }
            (FsSpec::Sftp(_), _) => unreachable!("opened above"),
        })
    }

    #[cfg(not(feature = "sftp"))]
    fn open_sftp(&self, _address: &SftpAddress) -> Result<Fs, WorkspaceError> {
        Err(WorkspaceError::NoSftpFeature)
    }

    #[cfg(feature = "sftp")]
    fn open_sftp(&self, address: &SftpAddress) -> Result<Fs, WorkspaceError> {
        if self.overlay.is_some() {
            return Err(WorkspaceError::OverlayOverSftp);
        }
        let known_hosts = self
            .known_hosts
            .as_ref()
            .ok_or(WorkspaceError::NoKnownHosts)?;
        let mut b = SftpFs::builder(&address.host)
            .port(address.port)
            .known_hosts(known_hosts);
        if let Some(user) = &address.user {
            b = b.user(user);
        }
        if let Some(key) = &self.identity {
            b = b.identity(key);
        }
        let fs = b.build().map_err(WorkspaceError::Sftp)?;
        Ok(Fs::Sftp(Arc::new(fs)))
    }
}

/// `path`, when it is absolute.
fn absolute<'a>(what: &'static str, path: &'a Path) -> Result<&'a Path, WorkspaceError> {
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(WorkspaceError::Relative {
            what,
            path: path.to_path_buf(),
        })
    }
}

/// `mem`: `dir` loaded into memory at its own absolute path, with the
/// host's git global excludes as seen from `root`, so that a search there
/// prints what rg prints on the disk.
fn load_mem(local: &LocalFs, dir: &Path, root: &Path) -> Result<MemFs, WorkspaceError> {
    let mut mem = MemFs::load(dir).map_err(|source| WorkspaceError::LoadMem {
        root: dir.to_path_buf(),
        source,
    })?;
    if let Some((path, bytes)) = local.git_global_excludes(root) {
        mem = mem.with_git_global_excludes(path, bytes);
    }
    Ok(mem)
}

/// The filesystems a workspace can be on.
enum Fs {
    Local(Arc<LocalFs>),
    Mem(Arc<MemFs>),
    Overlay(Arc<OverlayFs<LocalFs, LocalFs>>),
    MemOverlay(Arc<OverlayFs<MemFs, LocalFs>>),
    #[cfg(feature = "sftp")]
    Sftp(Arc<SftpFs>),
}

/// An open workspace: its filesystem and the backend that searches it.
/// Made by [`WorkspaceOptions::open`].
pub struct Workspace {
    fs: Fs,
    backend: BackendKind,
    rg: Option<PathBuf>,
    index: Option<Index>,
    engine: Engine,
}

impl Fs {
    /// A live index of `root` on this filesystem, searching with `engine`.
    fn index(
        &self,
        root: &Path,
        store: Option<&Path>,
        engine: &Engine,
        watch: IndexWatch,
    ) -> io::Result<Index> {
        let engine = engine.clone();
        match self {
            Fs::Local(fs) => Index::on(fs.clone(), root, None, store, engine, watch),
            Fs::Mem(fs) => Index::on(fs.clone(), root, None, store, engine, watch),
            Fs::Overlay(fs) => Index::on(fs.clone(), root, None, store, engine, watch),
            Fs::MemOverlay(fs) => Index::on(fs.clone(), root, None, store, engine, watch),
            #[cfg(feature = "sftp")]
            Fs::Sftp(fs) => Index::on(fs.clone(), root, None, store, engine, watch),
        }
    }
}

impl fmt::Debug for Workspace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let fs = match &self.fs {
            Fs::Local(_) => "local",
            Fs::Mem(_) => "mem",
            Fs::Overlay(_) => "overlay",
            Fs::MemOverlay(_) => "mem+overlay",
            #[cfg(feature = "sftp")]
            Fs::Sftp(_) => "sftp",
        };
        f.debug_struct("Workspace")
            .field("fs", &fs)
            .field("backend", &self.backend)
            .field("index", &self.index)
            .field("engine", &self.engine)
            .finish()
    }
}

impl Workspace {
    /// Whether the workspace is on a remote host: the calls' workdirs are
    /// then remote absolute paths, not directories on the local disk.
    pub fn is_remote(&self) -> bool {
        #[cfg(feature = "sftp")]
        if let Fs::Sftp(_) = self.fs {
            return true;
        }
        false
    }

    /// Connect a remote workspace now (and reconnect a dropped
    /// connection), so that a wrong key, an unknown host key or a refused
    /// connection is one clear error naming the host; nothing for the
    /// others. Without it the first operation connects.
    pub fn connect(&self) -> Result<(), WorkspaceError> {
        #[cfg(feature = "sftp")]
        if let Fs::Sftp(fs) = &self.fs {
            return fs.connect().map_err(WorkspaceError::Sftp);
        }
        Ok(())
    }

    /// The filesystem: what the file tools and the guard work on, and what
    /// a caller checks a call's workdir on.
    pub fn filesystem(&self) -> Arc<dyn DynFileSystem> {
        match &self.fs {
            Fs::Local(fs) => fs.clone(),
            Fs::Mem(fs) => fs.clone(),
            Fs::Overlay(fs) => fs.clone(),
            Fs::MemOverlay(fs) => fs.clone(),
            #[cfg(feature = "sftp")]
            Fs::Sftp(fs) => fs.clone(),
        }
    }

    /// A remote workspace's traffic so far ([`SftpStats`](crate::fs::SftpStats): requests, round
    /// trips, bytes read), its index's listings included; `None` for the
    /// others.
    #[cfg(feature = "sftp")]
    pub fn sftp_stats(&self) -> Option<crate::fs::SftpStats> {
        match &self.fs {
            Fs::Sftp(fs) => Some(fs.stats()),
            _ => None,
        }
    }

    /// The tree in memory of a `mem` workspace (under an overlay, its
    /// lower layer), to change through the library: [`MemFs`]'s methods
    /// change it in place, and the workspace's index, if any, follows each
    /// change (`docs/index.md`). `None` for the other filesystems.
    pub fn memory(&self) -> Option<Arc<MemFs>> {
        match &self.fs {
            Fs::Mem(fs) => Some(fs.clone()),
            Fs::MemOverlay(fs) => Some(fs.lower().clone()),
            _ => None,
        }
    }

    /// The workspace's index, when [`WorkspaceOptions::index`] asked for
    /// one.
    pub fn index(&self) -> Option<&Index> {
        self.index.as_ref()
    }

    /// The search backend over the workspace: the engine on its
    /// filesystem (through the index when there is one), with the
    /// [`Engine`] of [`WorkspaceOptions::engine`], or rg (local disk only)
    /// with the configuration's `graceMs`.
    pub fn backend(&self, config: &Config) -> Arc<dyn SearchBackend> {
        fn native<F: FsHints>(fs: &Arc<F>, engine: &Engine) -> Arc<dyn SearchBackend> {
            Arc::new(NativeBackend::on(fs.clone()).with_engine(engine.clone()))
        }
        if self.backend == BackendKind::Rg {
            // `open` allowed it on the local disk only.
            return Arc::new(RgBackend::with_config(RgConfig {
                path: self.rg.clone(),
                grace: Duration::from_millis(config.search.grace_ms),
            }));
        }
        if let Some(index) = &self.index {
            return Arc::new(index.backend());
        }
        match &self.fs {
            Fs::Local(fs) => native(fs, &self.engine),
            Fs::Mem(fs) => native(fs, &self.engine),
            Fs::Overlay(fs) => native(fs, &self.engine),
            Fs::MemOverlay(fs) => native(fs, &self.engine),
            #[cfg(feature = "sftp")]
            Fs::Sftp(fs) => native(fs, &self.engine),
        }
    }

    /// The tools over the workspace, as the command line, the servers and
    /// the Node binding deploy them: the backend, `config`, a local spill
    /// store at the configuration's spill root, the workspace's filesystem
    /// and the search-path guard (`contract.md` §7).
    ///
    /// With `sessions`, the observation policy (read before write) and the
    /// guard's zero-result counters keep their state there (in memory, or
    /// persistent in a directory shared by processes). Without, the file
    /// tools are the bare provider (no observation policy) and the guard
    /// counts in memory.
    pub fn tools(
        &self,
        config: Config,
        sessions: Option<Arc<Sessions>>,
    ) -> Result<Tools, WorkspaceError> {
        let store =
            LocalSpillStore::new(config.spill.root.clone()).map_err(WorkspaceError::SpillRoot)?;
        let guard = config.guard.clone();
        // Through the index when there is one (`open` refuses one with the
        // rg backend): its results then say which path answered
        // (`docs/index.md`).
        let tools = match &self.index {
            Some(index) => Tools::indexed(config.clone(), index.backend()),
            None => Tools::new(config.clone(), self.backend(&config)),
        };
        let tools = tools
            .with_spill_store(Arc::new(store))
            .with_spill_engine(&self.engine)
            .with_filesystem(self.filesystem());
        Ok(match sessions {
            Some(sessions) => tools
                .with_sessions(sessions.clone())
                .with_guard(Arc::new(Guard::with_counters(guard, sessions))),
            None => tools
                .without_observation_policy()
                .with_guard(Arc::new(Guard::new(guard))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(options: &WorkspaceOptions) -> String {
        options.open().unwrap_err().to_string()
    }

    #[test]
    fn impossible_combinations_are_refused() {
        // The rg backend off the local disk is refused before the tree is
        // loaded (a root that does not exist would fail the load) and
        // before an overlay directory is created.
        let td = tempfile::tempdir().unwrap();
        let missing = td.path().join("missing");
        let mut o = WorkspaceOptions::new(FsSpec::Mem(None));
        o.root(&missing).backend(BackendKind::Rg);
        assert!(open(&o).contains("rg backend searches the local disk only"));
        let upper = td.path().join("upper");
        for fs in [FsSpec::Local, FsSpec::Mem(None)] {
            let mut o = WorkspaceOptions::new(fs);
            o.root(td.path()).overlay(&upper).backend(BackendKind::Rg);
            assert!(open(&o).contains("rg backend searches the local disk only"));
            assert!(!upper.exists(), "the overlay directory was created");
        }
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.known_hosts("/k");
        assert!(open(&o).contains("goes with an sftp:// workspace"));
        let o = WorkspaceOptions::new(FsSpec::Mem(None));
        assert!(open(&o).contains("need the root directory"));
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.root(td.path()).overlay("rel");
        assert!(open(&o).contains("the overlay rel is relative"));
        let mut o = WorkspaceOptions::new(FsSpec::Mem(Some("rel".into())));
        o.root(td.path());
        assert!(open(&o).contains("the mem ROOT rel is relative"));
    }

    #[test]
    fn the_index_is_refused_where_it_cannot_serve_yet() {
        let td = tempfile::tempdir().unwrap();
        let upper = td.path().join("upper");
        let mut o = WorkspaceOptions::new(FsSpec::Mem(None));
        o.root(td.path()).backend(BackendKind::Rg).index(true);
        assert!(open(&o).contains("rg backend searches the local disk only"));
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.root(td.path())
            .overlay(&upper)
            .backend(BackendKind::Rg)
            .index(true);
        assert!(open(&o).contains("rg backend searches the local disk only"));
        assert!(!upper.exists(), "the overlay directory was created");
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.root(td.path()).backend(BackendKind::Rg).index(true);
        assert!(open(&o)
            .contains("not available for the rg backend: it answers through the native engine"));
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.index(true);
        assert!(open(&o).contains("need the root directory"));
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.root(td.path()).index(true);
        let ws = o.open().unwrap();
        assert!(ws.index().is_some());
        let mut o = WorkspaceOptions::new(FsSpec::Mem(None));
        o.root(td.path()).index(true);
        let ws = o.open().unwrap();
        assert!(ws.index().is_some());
        // Outside the workspace, as an overlay directory must be.
        let ov = tempfile::tempdir().unwrap();
        let mut o = WorkspaceOptions::new(FsSpec::Local);
        o.root(td.path()).overlay(ov.path()).index(true);
        let ws = o.open().unwrap();
        assert!(ws.index().is_some());
        assert!(WorkspaceOptions::new(FsSpec::Local)
            .open()
            .unwrap()
            .index()
            .is_none());
    }

    #[cfg(feature = "sftp")]
    #[test]
    fn sftp_needs_known_hosts_and_no_overlay() {
        let address = SftpAddress {
            user: None,
            host: "h".into(),
            port: 22,
        };
        let o = WorkspaceOptions::new(FsSpec::Sftp(address.clone()));
        assert!(open(&o).contains("needs a known-hosts file"));
        let mut o = WorkspaceOptions::new(FsSpec::Sftp(address));
        o.known_hosts("/k").overlay("/o");
        assert!(open(&o).contains("an overlay cannot be used with an sftp://"));
        o = WorkspaceOptions::new(o.fs.clone());
        o.known_hosts("/k");
        let ws = o.open().unwrap();
        assert!(ws.is_remote());
    }
}
