//! [`WorkspaceOptions`]: the description of a workspace, one setter per
//! option, and the SSH defaults the programs built on the library take
//! from the environment. What the options open is assembled in the parent
//! module ([`WorkspaceOptions::open`]).

use std::path::PathBuf;

use super::address::FsSpec;
use crate::backend::{BackendKind, Engine};
use crate::index::IndexWatch;

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
    pub(super) fs: FsSpec,
    pub(super) root: Option<PathBuf>,
    pub(super) overlay: Option<PathBuf>,
    pub(super) backend: BackendKind,
    pub(super) rg: Option<PathBuf>,
    pub(super) identity: Option<PathBuf>,
    pub(super) known_hosts: Option<PathBuf>,
    pub(super) index: bool,
    pub(super) index_store: Option<PathBuf>,
    pub(super) index_watch: IndexWatch,
    pub(super) engine: Option<Engine>,
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
    /// overlay and the index then fail with [`WorkspaceError::NoRoot`](super::WorkspaceError::NoRoot).
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

    /// Keep a live index of the root ([`Index`](crate::Index), `docs/index.md`): glob
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

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::workspace::SftpAddress;

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
