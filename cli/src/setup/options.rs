//! The options every subcommand takes ([`Common`], flattened into the
//! command line's parser) and the values they hold: what the command line
//! and the servers are both set up from.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use dsh_search::backend::BackendKind;
use dsh_search::CancelToken;

/// Options every subcommand takes.
#[derive(Clone, Debug, Args)]
pub(crate) struct Common {
    /// The search backend: the in-process engine or a real `rg`.
    #[arg(long, global = true, value_enum, default_value_t = BackendArg::Native)]
    pub(crate) backend: BackendArg,
    /// The workdir (rg's current directory); defaults to the current directory.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) cwd: Option<PathBuf>,
    /// A JSON file with the tools' and the guard's configuration keys.
    #[arg(long, global = true, value_name = "FILE.json")]
    pub(crate) config: Option<PathBuf>,
    /// The session id: owner of spills, read observations and guard counters.
    #[arg(long, global = true, value_name = "ID")]
    pub(crate) session: Option<String>,
    /// The workspace's filesystem: `local` (the disk), `mem[:ROOT]`, a
    /// copy of ROOT (default: the workdir) in memory, at the same path, or
    /// `sftp://[USER@]HOST[:PORT]`, a host over SSH (`--cwd` is then the
    /// remote workdir, an absolute path).
    #[arg(long, global = true, value_name = "FS", default_value = "local")]
    pub(crate) fs: dsh_search::FsSpec,
    /// With `--fs sftp://`: the private key to log in with (default: the
    /// SSH agent at SSH_AUTH_SOCK).
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) identity: Option<PathBuf>,
    /// With `--fs sftp://`: the known-hosts file the host key must be in
    /// (default: ~/.ssh/known_hosts); an unknown or changed key is refused.
    #[arg(long, global = true, value_name = "FILE")]
    pub(crate) known_hosts: Option<PathBuf>,
    /// The overlay directory: an upper layer on the local disk over the
    /// workdir. write and edit change only it; every tool sees the merged
    /// view; `changes` lists what it holds.
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) overlay: Option<PathBuf>,
    /// Keep a live index of the workdir for the life of the process
    /// (`docs/index.md`): for `serve` and `mcp`, whose calls then skip the
    /// files that cannot match, with the same answers. Any --fs and
    /// --overlay (over sftp:// the workdir is --cwd); the native backend
    /// only.
    #[arg(long, global = true)]
    pub(crate) index: bool,
    /// With --index: do not save the index in the state directory, nor
    /// start from a saved one (by default it is saved after each build,
    /// and a restart reads again only the files that changed).
    #[arg(long, global = true)]
    pub(crate) no_index_save: bool,
    /// With --index: how the index learns of changes. `os`: the system's
    /// watcher where there is one (inotify on Linux), else the mirror
    /// validated at each call; `none`: validated at each call on any system
    /// (the tree's metadata walked in parallel, only the changed files read
    /// again). Default: the configuration's indexWatch, else `os`.
    #[arg(long, global = true, value_name = "WATCH")]
    pub(crate) index_watch: Option<IndexWatchArg>,
    /// Set by SIGINT, SIGTERM or SIGHUP (Ctrl-C or Ctrl-Break on Windows):
    /// the running call stops (an rg child included, which lives in its own
    /// process group and would not get the terminal's signal).
    #[arg(skip)]
    pub(crate) cancel: CancelToken,
}

/// `--index-watch` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum IndexWatchArg {
    /// The system's watcher where there is one.
    Os,
    /// Validate the mirror at each call.
    None,
}

impl From<IndexWatchArg> for dsh_search::IndexWatch {
    fn from(w: IndexWatchArg) -> dsh_search::IndexWatch {
        match w {
            IndexWatchArg::Os => dsh_search::IndexWatch::Os,
            IndexWatchArg::None => dsh_search::IndexWatch::None,
        }
    }
}

/// `--backend` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum BackendArg {
    /// The in-process engine.
    Native,
    /// A real `rg` process.
    Rg,
}

impl From<BackendArg> for BackendKind {
    fn from(b: BackendArg) -> BackendKind {
        match b {
            BackendArg::Native => BackendKind::Native,
            BackendArg::Rg => BackendKind::Rg,
        }
    }
}

/// `--format` values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// The result's content, as the model sees it, and a newline.
    #[default]
    Text,
    /// The whole result object.
    Json,
    /// What `rg` itself prints, on stdout and stderr, with its exit code.
    Raw,
}

/// `mcp --structured-content` values: what a `tools/call` result carries
/// beside its text (`docs/servers.md`, "What a result carries").
///
/// Clients disagree on which field the model reads when a result has both
/// a text and `structuredContent`: some show the model `structuredContent`
/// alone, others append it to the text. Only a result without it shows
/// every client's model the text, with its caps, previews and spill.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum StructuredContent {
    /// Nothing: the text is all a client can show the model.
    #[default]
    None,
    /// glob's and grep's counts from their presentation meta, `{shape,
    /// total, truncated}`: a few dozen bytes (nothing for the other tools).
    Meta,
    /// The tool's whole canonical value, unbounded (every path, every
    /// match): for hosts that keep it out of the model's context.
    Full,
}

impl Common {
    /// The workdir: `--cwd`, else the process's current directory.
    pub(crate) fn workdir(&self) -> std::io::Result<PathBuf> {
        match &self.cwd {
            Some(dir) => Ok(dir.clone()),
            None => std::env::current_dir(),
        }
    }
}
