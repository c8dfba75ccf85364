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

/// Which filesystem holds a workspace, as the command line's `--fs` and the
/// Node binding's `fs` option spell it: `local`, `mem`, `mem:ROOT` or
/// `sftp://[USER@]HOST[:PORT]` (parse it with [`str::parse`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum FsSpec {
    /// The local disk (the default).
    #[default]
    Local,
    /// A copy in memory of a directory, at the same absolute path: the
    /// one named here, else the workspace's root
    /// ([`WorkspaceOptions::root`]). Writes stay in memory.
    Mem(Option<PathBuf>),
    /// A host over SFTP; the calls' workdirs are remote absolute paths.
    Sftp(SftpAddress),
}

/// The address of a remote workspace: `sftp://[USER@]HOST[:PORT]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SftpAddress {
    /// The login. `None`: [`crate::fs::SftpBuilder::user`]'s default
    /// (`root`); the command line fills in `$USER` before opening.
    pub user: Option<String>,
    /// The host name or address (an IPv6 address without its brackets).
    pub host: String,
    /// The SSH port (22 when the address names none).
    pub port: u16,
}

/// A string that is not an [`FsSpec`]; says what is accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseFsSpecError(String);

impl fmt::Display for ParseFsSpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ParseFsSpecError {}

impl std::str::FromStr for FsSpec {
    type Err = ParseFsSpecError;

    fn from_str(s: &str) -> Result<FsSpec, ParseFsSpecError> {
        let err = |msg: String| Err(ParseFsSpecError(msg));
        match s {
            "local" => Ok(FsSpec::Local),
            "mem" => Ok(FsSpec::Mem(None)),
            _ => match s.strip_prefix("mem:") {
                Some("") => err("mem: needs a ROOT directory after the colon".into()),
                Some(root) => Ok(FsSpec::Mem(Some(PathBuf::from(root)))),
                None => match s.strip_prefix("sftp://") {
                    Some(rest) => parse_sftp(rest).map(FsSpec::Sftp).map_err(ParseFsSpecError),
                    None => err(format!(
                        "unknown filesystem {s:?}: use local, mem[:ROOT] or sftp://[USER@]HOST[:PORT]"
                    )),
                },
            },
        }
    }
}

/// `[USER@]HOST[:PORT]` (an IPv6 address in brackets). Parsed whether or
/// not the build has the `sftp` feature: [`WorkspaceOptions::open`] says
/// that it lacks it.
fn parse_sftp(rest: &str) -> Result<SftpAddress, String> {
    let bad = |why: &str| {
        format!("invalid sftp:// address {rest:?}: {why} (use sftp://[USER@]HOST[:PORT])")
    };
    if rest.contains('/') {
        return Err(bad(
            "no path after the host: the remote workdir is the call's",
        ));
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
        None => crate::fs::SSH_PORT,
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 => n,
            _ => return Err(bad("the port is not a number from 1 to 65535")),
        },
    };
    Ok(SftpAddress {
        user,
        host: host.to_string(),
        port,
    })
}

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
            WorkspaceError::NoKnownHosts => f.write_str(
                "an sftp:// workspace needs a known-hosts file to check the host key against",
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

/// How to open a workspace: the filesystem, its root, an overlay, the
/// backend, and for SFTP the key and the known hosts. Reusable: each
/// [`WorkspaceOptions::open`] opens a new workspace.
///
/// A workspace from its description (`contract.md` §10–12): which
/// filesystem holds it (the local disk, a copy in memory, an overlay
/// directory over either, a host over SFTP), which backend searches it, and
/// the tools over both.
///
/// The command line (`--fs`, `--overlay`, `--backend`, `--identity`,
/// `--known-hosts`), its servers and the Node binding (`new Tools({fs,
/// overlay, root, backend, identity, knownHosts})`) describe a workspace
/// the same way and build it here, so that they all accept the same
/// combinations and refuse the others with the same errors.
///
/// Nothing here reads the environment or the process's current directory:
/// the caller passes absolute paths, the rg binary and the SSH defaults
/// (`$USER`, `~/.ssh/known_hosts`) it wants.
///
/// # Example
///
/// ```
/// use dsh_search::tool::CallContext;
/// use dsh_search::{Config, FsSpec, Sessions, WorkspaceOptions};
/// use std::sync::Arc;
///
/// let dir = std::env::temp_dir().join(format!("dsh-search-ws-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// std::fs::write(dir.join("a.txt"), "TODO: one\n")?;
///
/// // `--fs mem`: the directory copied into memory at the same path.
/// let spec: FsSpec = "mem".parse()?;
/// let workspace = WorkspaceOptions::new(spec).root(&dir).open()?;
/// let tools = workspace.tools(Config::default(), Some(Arc::new(Sessions::in_memory())))?;
/// let r = tools.call("write", &serde_json::json!({"file_path": "b.txt", "content": "TODO: two\n"}),
///                    &CallContext::new(&dir));
/// assert!(!r.is_error, "{}", r.content);
/// let r = tools.call("grep", &serde_json::json!({"pattern": "TODO"}), &CallContext::new(&dir));
/// assert_eq!(r.content, "Found 2 matches\n\na.txt\nLine 1: TODO: one\n\nb.txt\nLine 1: TODO: two");
/// // The write went to memory, not to the disk.
/// assert!(!dir.join("b.txt").exists());
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct WorkspaceOptions {
    fs: FsSpec,
    root: Option<PathBuf>,
    overlay: Option<PathBuf>,
    backend: BackendKind,
    rg: Option<PathBuf>,
    identity: Option<PathBuf>,
    known_hosts: Option<PathBuf>,
    index: bool,
    index_store: Option<PathBuf>,
    index_watch: IndexWatch,
    engine: Option<Engine>,
}

impl WorkspaceOptions {
    /// Options for a workspace on `fs`.
    pub fn new(fs: FsSpec) -> WorkspaceOptions {
        WorkspaceOptions {
            fs,
            ..WorkspaceOptions::default()
        }
    }

    /// The directory `mem` loads (unless its spec names one), an overlay
    /// covers and the index mirrors; an absolute path on the local disk
    /// (for `sftp://`, where only the index uses it, on the remote host).
    /// Also where git's global excludes are looked up from for `mem`. By
    /// default, the directory `mem:ROOT` names, else none: `mem`, an
    /// overlay and the index then fail with [`WorkspaceError::NoRoot`].
    pub fn root(&mut self, dir: impl Into<PathBuf>) -> &mut WorkspaceOptions {
        self.root = Some(dir.into());
        self
    }

    /// An overlay directory on the local disk (created if missing) over
    /// the root: `write` and `edit` change only it, every tool sees the
    /// merged view. By default, none.
    pub fn overlay(&mut self, dir: impl Into<PathBuf>) -> &mut WorkspaceOptions {
        self.overlay = Some(dir.into());
        self
    }

    /// The search backend. [`BackendKind::Rg`] searches the local disk
    /// only. By default, [`BackendKind::Native`].
    pub fn backend(&mut self, kind: BackendKind) -> &mut WorkspaceOptions {
        self.backend = kind;
        self
    }

    /// The rg binary of [`BackendKind::Rg`]. By default, `None`: the first
    /// `rg` on `PATH`.
    pub fn rg_path(&mut self, path: Option<PathBuf>) -> &mut WorkspaceOptions {
        self.rg = path;
        self
    }

    /// With [`FsSpec::Sftp`]: the private key to log in with. By default,
    /// none: the SSH agent.
    pub fn identity(&mut self, key: impl Into<PathBuf>) -> &mut WorkspaceOptions {
        self.identity = Some(key.into());
        self
    }

    /// With [`FsSpec::Sftp`]: the known-hosts file the host key must be
    /// in; an unknown or changed key is refused. Required for SFTP (the
    /// command line passes `~/.ssh/known_hosts` by default).
    pub fn known_hosts(&mut self, file: impl Into<PathBuf>) -> &mut WorkspaceOptions {
        self.known_hosts = Some(file.into());
        self
    }

    /// With [`FsSpec::Sftp`]: what `ssh` takes from the environment, where
    /// the options leave it unset: the login `$USER` when the address
    /// names none ([`ssh_user_from_env`]), and the known-hosts file
    /// `~/.ssh/known_hosts` when [`WorkspaceOptions::known_hosts`] named
    /// none ([`known_hosts_from_env`]; without a `HOME` there is none, and
    /// [`WorkspaceOptions::open`] refuses the workspace). Nothing for the
    /// other filesystems. The one place the programs built on the library
    /// (the command line, the Node binding) fill in the SSH defaults; call
    /// it after the caller's own options, which it never replaces.
    pub fn ssh_defaults_from_env(&mut self) -> &mut WorkspaceOptions {
        if let FsSpec::Sftp(address) = &mut self.fs {
            if address.user.is_none() {
                address.user = ssh_user_from_env();
            }
            if self.known_hosts.is_none() {
                self.known_hosts = known_hosts_from_env();
            }
        }
        self
    }

    /// Keep a live index of the root ([`Index`], `docs/index.md`): glob
    /// answered from a mirror of the tree, grep opening only the files
    /// that can match, every answer the scan's byte for byte. For a
    /// long-lived workspace with the native backend (the rg backend is
    /// refused), with a root: on the local disk (kept current by a
    /// watcher), in memory (by the tree's own journal of its changes),
    /// through an overlay (by both layers' feeds; the overlay directory's
    /// `upper/` is created when the index starts), or over SFTP (the root
    /// is then the remote directory, listed again before every call and
    /// compared with the mirror).
    /// It is built in the background when the workspace opens; until then,
    /// and whenever it cannot vouch for its mirror, calls are answered by
    /// the scan. Where the local disk has no watcher (off Linux, past the
    /// watch limit, a network filesystem) the mirror is validated at each
    /// call instead ([`WorkspaceOptions::index_watch`]). By default, off.
    pub fn index(&mut self, on: bool) -> &mut WorkspaceOptions {
        self.index = on;
        self
    }

    /// Save the index in the directory `dir` (created, private to the
    /// user) after each build, and start the next process's build from
    /// it: the tree is walked and every entry's metadata compared with
    /// the saved one (size, mtime, ctime, inode), so only the files that
    /// changed are read again (`docs/index.md`, "Restart without a
    /// rebuild"). A saved index that cannot be used (truncated, corrupt,
    /// of another version or root) is ignored ([`IndexStatus::saved`]
    /// says why). On the local disk of a Unix system only: elsewhere the
    /// index is built from the tree every time. By default, `None`: not
    /// saved.
    ///
    /// [`IndexStatus::saved`]: crate::IndexStatus::saved
    pub fn index_store(&mut self, dir: Option<PathBuf>) -> &mut WorkspaceOptions {
        self.index_store = dir;
        self
    }

    /// How the index learns of changes (`docs/index.md`, "Where there is no
    /// watcher"): [`IndexWatch::Os`], the system's watcher where there is
    /// one (inotify on Linux) and validation at each call where there is
    /// none; [`IndexWatch::None`], validation at each call on any system
    /// (the mirror checked against the tree's metadata, only what changed
    /// read). By default, [`IndexWatch::Os`].
    pub fn index_watch(&mut self, watch: IndexWatch) -> &mut WorkspaceOptions {
        self.index_watch = watch;
        self
    }

    /// The engine the native backend searches with, and the index's
    /// searches: its worker threads and their settings ([`Engine`]). By
    /// default, [`Engine::process_default`].
    pub fn engine(&mut self, engine: Engine) -> &mut WorkspaceOptions {
        self.engine = Some(engine);
        self
    }

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

/// The login `ssh` uses when an `sftp://` address names none, for the
/// programs built on the library (the command line, the Node binding):
/// `$USER`.
pub fn ssh_user_from_env() -> Option<String> {
    std::env::var("USER").ok()
}

/// The known-hosts file `ssh` checks by default, for the programs built on
/// the library: `~/.ssh/known_hosts`. `None` without a `HOME`.
pub fn known_hosts_from_env() -> Option<PathBuf> {
    let home = std::env::var_os("HOME")?;
    Some(PathBuf::from(home).join(".ssh").join("known_hosts"))
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
        let tools = Tools::new(config.clone(), self.backend(&config))
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

    fn spec(s: &str) -> Result<FsSpec, String> {
        s.parse::<FsSpec>().map_err(|e| e.to_string())
    }

    fn sftp(user: Option<&str>, host: &str, port: u16) -> Result<FsSpec, String> {
        Ok(FsSpec::Sftp(SftpAddress {
            user: user.map(String::from),
            host: host.into(),
            port,
        }))
    }

    #[test]
    fn specs_parse() {
        assert_eq!(spec("local"), Ok(FsSpec::Local));
        assert_eq!(spec("mem"), Ok(FsSpec::Mem(None)));
        assert_eq!(spec("mem:/w"), Ok(FsSpec::Mem(Some("/w".into()))));
        assert_eq!(spec("sftp://h"), sftp(None, "h", 22));
        assert_eq!(spec("sftp://u@h:2222"), sftp(Some("u"), "h", 2222));
        assert_eq!(spec("sftp://u@[::1]:2"), sftp(Some("u"), "::1", 2));
        assert_eq!(spec("sftp://a@b@h"), sftp(Some("a@b"), "h", 22));
    }

    #[test]
    fn bad_specs_say_what_is_accepted() {
        for (s, why) in [
            (
                "zip",
                "unknown filesystem \"zip\": use local, mem[:ROOT] or sftp://",
            ),
            ("mem:", "mem: needs a ROOT directory"),
            ("sftp://", "no host"),
            ("sftp://@h", "empty user"),
            ("sftp://h/dir", "no path after the host"),
            ("sftp://h:0", "the port is not a number from 1 to 65535"),
            ("sftp://h:x", "the port is not a number"),
            ("sftp://[::1", "unclosed ["),
            ("sftp://[::1]x", "junk after the address"),
        ] {
            let e = spec(s).unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
    }

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

    /// The SSH defaults fill in what the options leave unset, from this
    /// process's environment (read, never changed), and nothing else.
    #[test]
    fn ssh_defaults_fill_only_what_is_unset() {
        let sftp = |user: Option<&str>| {
            FsSpec::Sftp(SftpAddress {
                user: user.map(Into::into),
                host: "h".into(),
                port: 2222,
            })
        };
        let user = |o: &WorkspaceOptions| match &o.fs {
            FsSpec::Sftp(a) => a.user.clone(),
            _ => None,
        };
        let mut bare = WorkspaceOptions::new(sftp(None));
        bare.ssh_defaults_from_env();
        assert_eq!(user(&bare), ssh_user_from_env());
        assert_eq!(bare.known_hosts, known_hosts_from_env());
        let mut given = WorkspaceOptions::new(sftp(Some("me")));
        given.known_hosts("/k").ssh_defaults_from_env();
        assert_eq!(user(&given).as_deref(), Some("me"));
        assert_eq!(given.known_hosts.as_deref(), Some(Path::new("/k")));
        for fs in [FsSpec::Local, FsSpec::Mem(None)] {
            let mut local = WorkspaceOptions::new(fs.clone());
            local.ssh_defaults_from_env();
            assert_eq!((&local.fs, &local.known_hosts), (&fs, &None));
        }
    }
}
