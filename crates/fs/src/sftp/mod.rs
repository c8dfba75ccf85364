//! A remote workspace over SFTP (`docs/contract.md` §11): the seam
//! implemented with SFTP version 3 requests to OpenSSH's `sftp-server` or
//! `internal-sftp`, over one SSH connection per workspace.
//!
//! The SSH layer is `russh` (pure Rust, `ring` for the cryptography). The
//! SFTP client on top is the crate's own, for byte-exact file names: a name
//! on the host is bytes, and the seam keeps it so (`bad\xffname.txt` is
//! listed, then opened again, under its own bytes: the `odd_names`
//! conformance table over SFTP), where `russh-sftp` decodes names lossily
//! into `String`s and takes `String` paths, so such a name could not
//! round-trip. Pipelining is not the reason: `russh-sftp`'s raw session
//! pipelines requests too. SFTP v3 is small (draft-ietf-secsh-filexfer-02),
//! and the client is what the seam needs of it and no more.
//!
//! What SFTP v3 does not carry, the filesystem does without: inodes and
//! devices (a version token is `0:hash(path):size:mtime:0`), change times,
//! and sub-second modification times (whole seconds; glob's order by mtime
//! then ties where the disk's would not).
//!
//! By job:
//!
//! - here: [`SftpFs`], its builder, and the seam ([`FileSystem`]) in terms
//!   of the modules below;
//! - [`connect`]: the SSH connection, the host key checked against
//!   [`known_hosts`], the login, and the sessions opened on it;
//! - [`session`]: one SFTP session, its requests multiplexed by id so that
//!   any number are in flight at once;
//! - [`frame`]: the channel's data cut into packets, each at most OpenSSH's
//!   limit long;
//! - [`proto`]: packets built and parsed, replies read as what their
//!   requests expect;
//! - [`ops`]: the operations (stat, read, list) as requests on a session;
//! - [`readahead`]: the files and directories the engine says it will open
//!   or list ([`FsHints::will_open`], [`FsHints::will_list`]), read
//!   and listed ahead of it in bounded windows;
//! - [`stream`]: a large file read in bounded pieces as the engine pulls;
//! - [`mod@write`] and [`staging`]: a write staged next to its target and
//!   published in one step;
//! - [`runtime`]: the synchronous seam over the asynchronous client (the
//!   Tokio runtime is private to each [`SftpFs`]: the seam stays
//!   synchronous and thread-safe, and the engine's threads take what was
//!   read ahead or wait on their own requests).

mod connect;
mod frame;
mod known_hosts;
mod ops;
mod proto;
mod readahead;
mod runtime;
mod session;
mod staging;
mod stream;
mod write;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use dsh_search_base::cancel::CancelToken;
use dsh_search_base::sync::RecoverPoison;

use self::connect::{Target, CONNECT_TIMEOUT};
use self::ops::{list_dir, open_file, read_whole, stat, Opened};
use self::proto::Reply;
use self::readahead::{DirAhead, FileAhead, FileWindow, Spec, FILE_MAX};
use self::session::{Counters, Session};
use super::journal::{Journal, Queue, Record};
use super::names::{os_str, path_bytes};
use super::seam::{
    errno, FileSystem, FileType, FsHints, FsWrite, Listing, Metadata, WriteError, WriteGuard,
    Written,
};

/// How long one operation may wait for the server before it fails with a
/// timeout (the tools' own timeout and cancellation stop it sooner).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// SFTP sessions per connection unless [`SftpBuilder::sessions`] says
/// otherwise.
const DEFAULT_SESSIONS: usize = 2;

/// Options of a remote workspace: `sftp://[USER@]HOST[:PORT]`, the key and
/// the known hosts.
#[derive(Clone, Debug)]
pub struct SftpBuilder {
    host: String,
    port: u16,
    user: Option<String>,
    identity: Option<PathBuf>,
    known_hosts: Option<PathBuf>,
    timeout: Duration,
    git_excludes: Option<PathBuf>,
    sessions: usize,
}

impl SftpBuilder {
    /// git's global excludes file on the remote host (default:
    /// `~/.config/git/ignore` of the login): SFTP cannot see the remote
    /// shell's `XDG_CONFIG_HOME` or git configuration.
    pub fn git_excludes(mut self, remote_path: impl Into<PathBuf>) -> SftpBuilder {
        self.git_excludes = Some(remote_path.into());
        self
    }

    /// The SSH port (default 22).
    pub fn port(mut self, port: u16) -> SftpBuilder {
        self.port = port;
        self
    }

    /// The remote user (default `root`; the command line passes `$USER`).
    pub fn user(mut self, user: impl Into<String>) -> SftpBuilder {
        self.user = Some(user.into());
        self
    }

    /// The private key file to authenticate with (default: the SSH agent
    /// at `SSH_AUTH_SOCK`).
    pub fn identity(mut self, path: impl Into<PathBuf>) -> SftpBuilder {
        self.identity = Some(path.into());
        self
    }

    /// The known-hosts file the host key is checked against, strictly
    /// (required; the command line passes `~/.ssh/known_hosts`).
    pub fn known_hosts(mut self, path: impl Into<PathBuf>) -> SftpBuilder {
        self.known_hosts = Some(path.into());
        self
    }

    /// How long one operation waits for the server at most (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> SftpBuilder {
        self.timeout = timeout;
        self
    }

    /// How many SFTP sessions the connection carries (1 to 8, default 2).
    /// Each is a server process of its own on the host (OpenSSH's
    /// `sftp-server` serves its requests one at a time), and the listings
    /// made ahead of a walk of the whole tree (glob) are spread over them.
    pub fn sessions(mut self, n: usize) -> SftpBuilder {
        self.sessions = n.clamp(1, 8);
        self
    }

    /// The filesystem; nothing is connected until the first operation (or
    /// [`SftpFs::connect`]).
    pub fn build(self) -> io::Result<SftpFs> {
        // The library reads no environment of its own: the command line
        // passes `~/.ssh/known_hosts` and `$USER` as the defaults.
        let known_hosts = self
            .known_hosts
            .ok_or_else(|| io::Error::other("no known-hosts file to check the host key against"))?;
        let user = self.user.unwrap_or_else(|| "root".into());
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("dsh-search-sftp")
            .enable_all()
            .build()?;
        Ok(SftpFs {
            window: FileWindow::new(rt.handle().clone()),
            target: Target {
                host: self.host,
                port: self.port,
                user,
                identity: self.identity,
                known_hosts,
            },
            timeout: self.timeout,
            rt,
            link: Mutex::new(None),
            sessions: self.sessions,
            spread: AtomicUsize::new(0),
            counters: Arc::new(Counters::default()),
            excludes: OnceLock::new(),
            git_excludes: self.git_excludes,
            ahead_dirs: Arc::new(AtomicUsize::new(0)),
            journal: Journal::default(),
            writes: Mutex::new(()),
        })
    }
}

/// Traffic of a remote workspace so far (across reconnections).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SftpStats {
    /// Requests sent.
    pub requests: u64,
    /// Requests sent while no other request was waiting for its reply:
    /// each costs the caller one network round trip; the others travel
    /// with one already paid for.
    pub round_trips: u64,
    /// File bytes received in `READ` replies.
    pub bytes_read: u64,
    /// SSH connections opened.
    pub connects: u64,
}

/// A directory of an [`SftpFs`]: its remote path, and the reads of its
/// files started ahead of the engine ([`FsHints::will_open`]), which
/// are abandoned with it.
pub struct SftpDir {
    path: PathBuf,
    ahead: Mutex<HashMap<OsString, FileAhead>>,
    /// The listings of its subdirectories started ahead of the engine.
    ahead_dirs: Mutex<HashMap<OsString, DirAhead>>,
    /// Its own listing, started ahead of the engine (taken from its
    /// parent's when it was opened).
    listed: Mutex<Option<DirAhead>>,
    /// The listings of its subdirectories started before the engine named
    /// them ([`Spec`]), once its own listing is taken.
    spec: Mutex<Option<Arc<Spec>>>,
}

impl SftpDir {
    fn new(path: PathBuf) -> SftpDir {
        SftpDir {
            path,
            ahead: Mutex::new(HashMap::new()),
            ahead_dirs: Mutex::new(HashMap::new()),
            listed: Mutex::new(None),
            spec: Mutex::new(None),
        }
    }
}

impl std::fmt::Debug for SftpDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SftpDir").field(&self.path).finish()
    }
}

/// A file of an [`SftpFs`]: a small one read whole when opened (with all
/// its reads in flight at once, or read ahead) and served from memory; a
/// larger one streamed in bounded pieces as it is read.
#[derive(Debug)]
pub struct SftpFile {
    body: Body,
}

#[derive(Debug)]
enum Body {
    Whole { data: Bytes, pos: usize },
    Stream(stream::Stream),
}

impl SftpFile {
    fn whole(data: Bytes) -> SftpFile {
        SftpFile {
            body: Body::Whole { data, pos: 0 },
        }
    }
}

impl Read for SftpFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.body {
            Body::Whole { data, pos } => {
                let n = buf.len().min(data.len() - *pos);
                buf[..n].copy_from_slice(&data[*pos..*pos + n]);
                *pos += n;
                Ok(n)
            }
            Body::Stream(s) => s.read(buf),
        }
    }
}

/// The filesystem of a host reached over SSH (`docs/contract.md` §11).
pub struct SftpFs {
    target: Target,
    timeout: Duration,
    rt: tokio::runtime::Runtime,
    /// The connection's sessions, opened on first use and again after one
    /// of them ends: the first serves the engine's requests, the files read
    /// ahead and a grep's listings; glob's listings take turns on all.
    link: Mutex<Option<Vec<Arc<Session>>>>,
    sessions: usize,
    /// Which session glob's next listing ahead goes to.
    spread: AtomicUsize,
    counters: Arc<Counters>,
    /// Where git's global excludes file is (found once).
    excludes: OnceLock<Option<PathBuf>>,
    git_excludes: Option<PathBuf>,
    /// The read-ahead window ([`FsHints::will_open`]).
    window: Arc<FileWindow>,
    /// Listings ahead now (at most [`readahead`]'s `AHEAD_DIRS`).
    ahead_dirs: Arc<AtomicUsize>,
    /// The paths its writes published, for the live index's queues
    /// (`docs/index.md`): a write that keeps a file's size within the
    /// second of its mtime is invisible to a listing.
    journal: Journal,
    /// Held by a write from its guard's check to its publication
    /// (`write.rs`): one write at a time on this host.
    writes: Mutex<()>,
}

impl std::fmt::Debug for SftpFs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SftpFs")
            .field("url", &self.target.url())
            .finish()
    }
}

impl SftpFs {
    /// Options for the host `host` (port 22, the agent, `~/.ssh/known_hosts`).
    pub fn builder(host: impl Into<String>) -> SftpBuilder {
        SftpBuilder {
            host: host.into(),
            port: crate::SSH_PORT,
            user: None,
            identity: None,
            known_hosts: None,
            timeout: DEFAULT_TIMEOUT,
            git_excludes: None,
            sessions: DEFAULT_SESSIONS,
        }
    }

    /// `sftp://USER@HOST:PORT`.
    pub fn url(&self) -> String {
        self.target.url()
    }

    /// Connect now (if not connected): a wrong key, an unknown or changed
    /// host key or a refused connection is reported here, once, with the
    /// host named.
    pub fn connect(&self) -> io::Result<()> {
        self.session().map(|_| ())
    }

    /// The traffic so far.
    pub fn stats(&self) -> SftpStats {
        let c = &self.counters;
        SftpStats {
            requests: c.requests.load(Ordering::Relaxed),
            round_trips: c.round_trips.load(Ordering::Relaxed),
            bytes_read: c.bytes_read.load(Ordering::Relaxed),
            connects: c.connects.load(Ordering::Relaxed),
        }
    }

    /// A queue of the paths written from now on, for the live index.
    pub fn subscribe(&self) -> Arc<Queue> {
        self.journal.subscribe()
    }

    /// A handle of the directory at `path`, without a round trip (the
    /// caller knows it is one: the live index's mirror listed it).
    pub fn dir_handle(&self, path: &Path) -> SftpDir {
        SftpDir::new(path.to_path_buf())
    }

    /// Open the regular file at `path` (`known_file`: listed as one; else
    /// it is stat'ed first, and opened only if it is one) for the engine:
    /// read whole when small, else streamed. `None` when it is not a
    /// regular file.
    fn open_streaming(
        &self,
        path: &Path,
        known_file: bool,
        cancel: Option<&CancelToken>,
    ) -> io::Result<(Metadata, Option<SftpFile>)> {
        let p = path_bytes(path);
        let (session, meta, opened) = self.run(cancel, |s| async move {
            let (meta, opened) = open_file(&s, p, known_file, None, cancel, true).await?;
            Ok((s, meta, opened))
        })?;
        let file = match opened {
            Some(Opened::Whole(data)) => Some(SftpFile::whole(data)),
            Some(Opened::Handle(handle)) => {
                let s = stream::Stream::new(
                    session,
                    handle,
                    meta.len,
                    self.timeout,
                    self.target.url(),
                    cancel.cloned(),
                )?;
                Some(SftpFile {
                    body: Body::Stream(s),
                })
            }
            None => None,
        };
        Ok((meta, file))
    }
}

/// The path of the entry `name` of the directory at `dir`.
fn join_name(dir: &Path, name: &OsStr) -> PathBuf {
    dir.join(name)
}

impl FileSystem for SftpFs {
    type Dir = SftpDir;
    type File = SftpFile;

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        let p = path_bytes(path);
        // OpenSSH's `REALPATH` (`sftp_realpath`) answers for a path whose
        // last component is missing, and resolves a dangling symlink to
        // where it points; `realpath(3)`, which the disk's answer comes
        // from, fails with `ENOENT` for both. The `STAT` that travels with
        // it says which: the file tools then key a dangling symlink by its
        // own path, never by its target's (a write would create the target).
        let real = self.run(None, |s| async move {
            let (real, exists) = tokio::join!(
                s.call(proto::FXP_REALPATH, |o| o.bytes(p)),
                stat(&s, p, true)
            );
            exists?;
            real.and_then(Reply::into_name)
        })?;
        Ok(PathBuf::from(os_str(&real).into_owned()))
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        let p = path_bytes(path);
        self.run(None, |s| async move { stat(&s, p, true).await })
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        let p = path_bytes(path);
        self.run(None, |s| async move { stat(&s, p, false).await })
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let p = path_bytes(path);
        let target = self.run(None, |s| async move {
            let r = s
                .call(proto::FXP_READLINK, |o| o.bytes(p))
                .await
                .and_then(Reply::into_name);
            ops::refine(&s, p, r).await
        })?;
        Ok(PathBuf::from(os_str(&target).into_owned()))
    }

    fn open_dir(&self, path: &Path) -> io::Result<SftpDir> {
        let m = FileSystem::metadata(self, path)?;
        if !m.kind.is_dir() {
            return Err(errno::not_a_directory());
        }
        Ok(SftpDir::new(path.to_path_buf()))
    }

    fn open_dir_at(
        &self,
        parent: &SftpDir,
        parent_path: &Path,
        name: &OsStr,
    ) -> io::Result<SftpDir> {
        // The entry was listed as a directory: its listing says the rest.
        let dir = SftpDir::new(join_name(parent_path, name));
        let ahead = parent.ahead_dirs.lock().recover_poison().remove(name);
        *dir.listed.lock().recover_poison() = ahead;
        Ok(dir)
    }

    fn list(&self, dir: &SftpDir, listing: &mut Listing) {
        listing.clear();
        match self.take_listed(dir, listing) {
            Ok(true) => return,
            Ok(false) => {}
            Err(e) => return listing.fail(e),
        }
        let p = path_bytes(&dir.path);
        let listing_ref = &mut *listing;
        if let Err(e) = self.run(None, |s| async move { list_dir(&s, p, listing_ref).await }) {
            listing.fail(e);
        }
    }

    fn metadata_at(
        &self,
        _dir: &SftpDir,
        dir_path: &Path,
        name: &OsStr,
        follow: bool,
    ) -> io::Result<Metadata> {
        let path = join_name(dir_path, name);
        let p = path_bytes(&path);
        self.run(None, |s| async move { stat(&s, p, follow).await })
    }

    fn open_at(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr) -> io::Result<SftpFile> {
        if let Some(data) = self.take_ahead(dir, name)? {
            return Ok(SftpFile::whole(data));
        }
        let path = join_name(dir_path, name);
        match self.open_streaming(&path, true, None) {
            Ok((_, Some(file))) => Ok(file),
            Ok((_, None)) => Err(errno::is_a_directory()),
            // `sftp-server`'s `open(2)` of a socket fails with `ENXIO`,
            // which SFTP v3 sends as a bare `SSH_FX_FAILURE`: say it as
            // the disk does (`open` by path stats first and says so too).
            Err(e) => match FileSystem::symlink_metadata(self, &path) {
                Ok(m) if m.kind == FileType::Socket => Err(errno::no_such_device()),
                _ => Err(e),
            },
        }
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<SftpFile> {
        match self.open_streaming(path, false, Some(cancel))? {
            (_, Some(file)) => Ok(file),
            (meta, None) if meta.kind.is_dir() => Err(errno::is_a_directory()),
            // A FIFO, socket or device on the remote host is never opened
            // there: `sftp-server` would block in `open(2)` for every
            // client of the connection.
            (_, None) => Err(errno::no_such_device()),
        }
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        let p = path_bytes(path);
        let (meta, data) = self.run(None, |s| async move {
            read_whole(&s, p, false, None, None).await
        })?;
        data.map(Vec::from).ok_or_else(|| {
            if meta.kind.is_dir() {
                errno::is_a_directory()
            } else {
                errno::no_such_device()
            }
        })
    }

    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)> {
        let p = path_bytes(path);
        let (meta, data) = self.run(None, |s| async move {
            read_whole(&s, p, false, Some(max), None).await
        })?;
        Ok((meta, data.map(Vec::from)))
    }

    fn git_global_excludes(&self, _workdir: &Path) -> Option<(PathBuf, Vec<u8>)> {
        // git's default location on the remote host, under the login's
        // home (`REALPATH .`, asked once): `$XDG_CONFIG_HOME` and
        // `core.excludesFile` are the remote shell's, which SFTP cannot
        // see. The file itself is read on every search, as rg reads it.
        let path = self
            .excludes
            .get_or_init(|| match &self.git_excludes {
                Some(p) => Some(p.clone()),
                None => FileSystem::canonicalize(self, Path::new("."))
                    .ok()
                    .map(|home| home.join(".config/git/ignore")),
            })
            .clone()?;
        let bytes = self.read_control(&path).ok()?;
        Some((path, bytes))
    }
}

impl FsHints for SftpFs {
    fn will_open(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr, metadata: Option<&Metadata>) {
        // Only a regular file of a known size (what the listing said) that
        // fits the window; the engine lists nothing else as one.
        let Some(size) = metadata
            .filter(|m| m.kind.is_file() && m.len <= FILE_MAX)
            .map(|m| m.len)
        else {
            return;
        };
        // Files are read on the first session: spreading them (or a grep's
        // listings) over two made a grep slower on 2 cores, where glob's
        // listings spread made glob faster (BENCHMARKS.md).
        let Some(session) = self.live_session(false) else {
            return;
        };
        let path = path_bytes(&join_name(dir_path, name)).to_vec();
        let ahead = self.window.hint(session, path, size);
        dir.ahead
            .lock()
            .recover_poison()
            .insert(name.to_os_string(), ahead);
    }

    fn lists_ahead(&self) -> bool {
        true
    }

    fn will_list(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr) {
        self.list_ahead(dir, dir_path, name, None);
    }

    fn will_list_tree(
        &self,
        dir: &SftpDir,
        dir_path: &Path,
        name: &OsStr,
        left_out: &'static [&'static [u8]],
    ) {
        self.list_ahead(dir, dir_path, name, Some(left_out));
    }

    fn contents<'f>(&self, file: &'f SftpFile) -> Option<&'f [u8]> {
        match &file.body {
            Body::Whole { data, .. } => Some(data),
            Body::Stream(_) => None,
        }
    }
}

impl FsWrite for SftpFs {
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        let written = write::write(self, path, content, guard, cancel)?;
        self.journal.record(Record::Wrote(path.to_path_buf()));
        Ok(written)
    }
}

impl SftpFs {
    /// The first session, connecting first when the connection is not
    /// open or one of its sessions has ended.
    fn session(&self) -> io::Result<Arc<Session>> {
        let mut slot = self.link.lock().recover_poison();
        if let Some(s) = alive(&slot) {
            return Ok(s[0].clone());
        }
        // One session ended: the others' connection ends too (work ahead
        // on it is abandoned), and a new one starts them all.
        if let Some(old) = slot.take() {
            self.rt.spawn(async move { old[0].disconnect().await });
        }
        let url = self.target.url();
        let open = async {
            let ssh = connect::ssh(&self.target, &self.counters.connects).await?;
            // Started together: each is a few round trips (any can be
            // the first).
            let mut starts = tokio::task::JoinSet::new();
            for _ in 0..self.sessions {
                let (ssh, url, counters) = (ssh.clone(), url.clone(), self.counters.clone());
                starts.spawn(async move { Session::start(&ssh, &url, counters).await });
            }
            let mut sessions = Vec::with_capacity(self.sessions);
            while let Some(started) = starts.join_next().await {
                sessions.push(started.map_err(io::Error::other)??);
            }
            Ok(sessions)
        };
        let sessions = self.rt.block_on(async {
            match tokio::time::timeout(CONNECT_TIMEOUT, open).await {
                Ok(r) => r,
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{url}: cannot connect: no answer within {} s",
                        CONNECT_TIMEOUT.as_secs()
                    ),
                )),
            }
        });
        // Whatever failed (the host, its key, the login), it fails every
        // file alike: one error of the whole workspace.
        let sessions = sessions.map_err(|e| crate::unavailable(e.kind(), e.to_string()))?;
        let first = sessions[0].clone();
        *slot = Some(sessions);
        Ok(first)
    }

    /// A session for work ahead, if the connection is open and alive
    /// (never connects): the next in turn when `spread`, else the first.
    fn live_session(&self, spread: bool) -> Option<Arc<Session>> {
        let slot = self.link.lock().recover_poison();
        let sessions = alive(&slot)?;
        let turn = if spread {
            self.spread.fetch_add(1, Ordering::Relaxed)
        } else {
            0
        };
        Some(sessions[turn % sessions.len()].clone())
    }
}

/// The connection's sessions, if it is open and none of them has ended.
fn alive(link: &Option<Vec<Arc<Session>>>) -> Option<&[Arc<Session>]> {
    link.as_deref().filter(|s| s.iter().all(|c| !c.is_dead()))
}

/// The fuzz target's entry into `known_hosts` parsing.
#[cfg(fuzzing)]
pub fn fuzz_known_hosts(data: &[u8]) {
    known_hosts::fuzz(data)
}

/// The fuzz target's entry into the cutting of a session's data into
/// packets.
#[cfg(fuzzing)]
pub fn fuzz_sftp_stream(data: &[u8]) {
    frame::fuzz(data)
}

/// The fuzz target's entry into the reply decoder: the type byte, then
/// the body.
#[cfg(fuzzing)]
pub fn fuzz_sftp_reply(data: &[u8]) {
    if let Some((&kind, body)) = data.split_first() {
        let _ = proto::Reply::parse(kind, bytes::Bytes::copy_from_slice(body));
    }
}
