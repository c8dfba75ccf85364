//! A remote workspace over SFTP (`docs/contract.md` §11): the seam
//! implemented with SFTP version 3 requests to OpenSSH's `sftp-server` or
//! `internal-sftp`, over one SSH connection per workspace.
//!
//! The SSH layer is `russh` (pure Rust, `ring` for the cryptography); the
//! SFTP client is the crate's own ([`proto`], [`conn`]), small enough to
//! pipeline exactly as the engine needs: a listing sends several `READDIR`s
//! at once, the files and subdirectories the engine says it will open
//! ([`FileSystem::will_open`], [`FileSystem::will_list`]) are read and
//! listed ahead of it in a bounded window, and a file's `READ`s all go at
//! once. The Tokio runtime that drives the connection is private to each
//! [`SftpFs`]: the seam stays synchronous and thread-safe, and the engine's
//! threads take what was read ahead or wait on their own requests.
//!
//! What SFTP v3 does not carry, the filesystem does without: inodes and
//! devices (a version token is `0:hash(path):size:mtime:0`), change times,
//! and sub-second modification times (whole seconds; glob's order by mtime
//! then ties where the disk's would not).

mod ahead;
mod conn;
mod known_hosts;
mod proto;
mod staging;
mod stream;

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;

use self::conn::{Conn, Counters, Target};
use self::proto::{Attrs, Reply};
use super::names::{os_str, path_bytes};
use super::seam::{
    errno, FileSystem, FileType, Listing, Metadata, WriteError, WriteGuard, Written,
};
use crate::cancel::CancelToken;

/// How long one operation may wait for the server before it fails with a
/// timeout (the tools' own timeout and cancellation stop it sooner).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting (TCP, key exchange, authentication) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// `READDIR`s in flight per listing: OpenSSH answers each with up to 100
/// names, in order, and an `EOF` status once the directory is read.
const READDIRS_IN_FLIGHT: usize = 4;
/// `READ`s in flight per file.
const READS_IN_FLIGHT: usize = 32;
/// Directories listed ahead of the engine ([`FileSystem::will_list`]) at
/// once, in flight or waiting to be taken; past it a directory is listed
/// when the engine lists it.
const AHEAD_DIRS: usize = 256;
/// The places among them that only listings the engine asked for take.
const AHEAD_DIRS_NAMED: usize = 64;
/// Directories listed ahead of a walk that lists the whole tree
/// ([`FileSystem::will_list_tree`]): every listing is wanted, so the only
/// bound is memory (a listing is its names).
const AHEAD_TREE_DIRS: usize = 4096;
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
            window: ahead::Window::new(rt.handle().clone()),
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
/// files started ahead of the engine ([`FileSystem::will_open`]), which
/// are abandoned with it.
pub struct SftpDir {
    path: PathBuf,
    ahead: Mutex<HashMap<OsString, ahead::Ahead>>,
    /// The listings of its subdirectories started ahead of the engine.
    ahead_dirs: Mutex<HashMap<OsString, AheadDir>>,
    /// Its own listing, started ahead of the engine (taken from its
    /// parent's when it was opened).
    listed: Mutex<Option<AheadDir>>,
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

/// A place among the [`AHEAD_DIRS`] listings ahead, given back when dropped.
struct DirPlace(Arc<AtomicUsize>);

impl Drop for DirPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One directory's listing ahead: aborted when dropped.
struct AheadDir {
    task: tokio::task::JoinHandle<(Listing, io::Result<()>, DirPlace)>,
    spec: Arc<Spec>,
}

impl Drop for AheadDir {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The listings of a directory's subdirectories, started one level beyond
/// what the engine has asked for: a directory listed ahead because the
/// engine will list it ([`FileSystem::will_list`]) starts listing its own
/// subdirectories as soon as its listing is in, before the engine, which
/// may be several directories behind, gets to it and names them. A
/// subdirectory the engine then skips (ignored) cost one listing, never
/// its own subdirectories': a directory named by nobody speculates no
/// further until the engine names it.
struct Spec {
    state: Mutex<SpecState>,
    children: Mutex<HashMap<OsString, AheadDir>>,
    /// Named through [`FileSystem::will_list_tree`], or below such a
    /// directory: the walk lists every subdirectory but the VCS ones, so
    /// their listings start as soon as this one is in, at every depth
    /// (as far as [`AHEAD_DIRS`] allows).
    tree: bool,
}

enum SpecState {
    /// Not named by the engine yet; its subdirectories, once listed.
    Unnamed(Option<Vec<OsString>>),
    Named,
}

/// What a listing ahead needs to start others.
#[derive(Clone)]
struct Lister {
    conn: Arc<Conn>,
    places: Arc<AtomicUsize>,
    rt: tokio::runtime::Handle,
}

impl Lister {
    /// Start listing the directory at `path`, if there is a place (a
    /// speculative one leaves [`AHEAD_DIRS_NAMED`] of them to the listings
    /// the engine asks for).
    fn start(&self, path: Vec<u8>, named: bool, tree: bool) -> Option<AheadDir> {
        let limit = if tree {
            AHEAD_TREE_DIRS
        } else if named {
            AHEAD_DIRS
        } else {
            AHEAD_DIRS - AHEAD_DIRS_NAMED
        };
        if self.places.fetch_add(1, Ordering::AcqRel) >= limit {
            self.places.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        let place = DirPlace(self.places.clone());
        let spec = Arc::new(Spec {
            // A listing of a tree the walk will list whole speculates on
            // its own subdirectories as a named one does.
            state: Mutex::new(if named || tree {
                SpecState::Named
            } else {
                SpecState::Unnamed(None)
            }),
            children: Mutex::new(HashMap::new()),
            tree,
        });
        let lister = self.clone();
        let shared = spec.clone();
        let task = self.rt.spawn(async move {
            let mut listing = Listing::new();
            let r = list_dir(&lister.conn, &path, &mut listing).await;
            if r.is_ok() {
                let subdirs: Vec<OsString> = listing
                    .iter()
                    .filter(|&(_, kind)| kind == FileType::Dir)
                    .map(|(name, _)| os_str(name).into_owned())
                    .collect();
                let mut state = shared.state.lock().unwrap_or_else(|e| e.into_inner());
                match &mut *state {
                    SpecState::Named => {
                        drop(state);
                        lister.speculate(&shared, &path, subdirs);
                    }
                    SpecState::Unnamed(later) => *later = Some(subdirs),
                }
            }
            (listing, r, place)
        });
        Some(AheadDir { task, spec })
    }

    /// Start listing the subdirectories `names` of the directory at `path`.
    fn speculate(&self, spec: &Spec, path: &[u8], names: Vec<OsString>) {
        let mut children = spec.children.lock().unwrap_or_else(|e| e.into_inner());
        for name in names {
            if spec.tree && crate::request::VCS_DIRS.iter().any(|v| name == *v) {
                continue;
            }
            let mut sub = path.to_vec();
            if sub.last() != Some(&b'/') {
                sub.push(b'/');
            }
            sub.extend_from_slice(path_bytes(Path::new(&name)));
            match self.start(sub, false, spec.tree) {
                Some(ahead) => {
                    children.insert(name, ahead);
                }
                None => break,
            }
        }
    }

    /// The engine named the directory at `path` listed by `ahead`: its
    /// subdirectories, if it is listed already, start now.
    fn name(&self, ahead: &AheadDir, path: &[u8]) {
        let later = {
            let mut state = ahead.spec.state.lock().unwrap_or_else(|e| e.into_inner());
            match std::mem::replace(&mut *state, SpecState::Named) {
                SpecState::Unnamed(later) => later,
                SpecState::Named => None,
            }
        };
        if let Some(names) = later {
            self.speculate(&ahead.spec, path, names);
        }
    }
}

fn take<T>(slot: &Mutex<T>) -> T
where
    T: Default,
{
    std::mem::take(&mut *slot.lock().unwrap_or_else(|e| e.into_inner()))
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
    link: Mutex<Option<Vec<Arc<Conn>>>>,
    sessions: usize,
    /// Which session glob's next listing ahead goes to.
    spread: AtomicUsize,
    counters: Arc<Counters>,
    /// Where git's global excludes file is (found once).
    excludes: OnceLock<Option<PathBuf>>,
    git_excludes: Option<PathBuf>,
    /// The read-ahead window ([`FileSystem::will_open`]).
    window: Arc<ahead::Window>,
    /// Listings ahead now (at most [`AHEAD_DIRS`]).
    ahead_dirs: Arc<AtomicUsize>,
}

/// The connection's sessions, if it is open and none of them has ended.
fn alive(link: &Option<Vec<Arc<Conn>>>) -> Option<&[Arc<Conn>]> {
    link.as_deref().filter(|s| s.iter().all(|c| !c.is_dead()))
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
            port: 22,
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
        self.conn().map(|_| ())
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

    /// Start listing the subdirectory `name` of `dir` for the engine
    /// ([`FileSystem::will_list`]; `tree`: [`FileSystem::will_list_tree`]),
    /// or take the listing its parent's speculation started.
    fn list_ahead(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr, tree: bool) {
        // A walk that lists the whole tree (glob) spreads its listings over
        // the sessions; a grep's stay on the first with its files.
        let Some(conn) = self.live_conn(tree) else {
            return;
        };
        let lister = Lister {
            conn,
            places: self.ahead_dirs.clone(),
            rt: self.rt.handle().clone(),
        };
        let path = path_bytes(&join_name(dir_path, name)).to_vec();
        let spec = dir.spec.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let started = spec.and_then(|s| {
            s.children
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(name)
        });
        let ahead = match started {
            Some(ahead) => {
                lister.name(&ahead, &path);
                ahead
            }
            None => match lister.start(path, true, tree) {
                Some(ahead) => ahead,
                None => return,
            },
        };
        dir.ahead_dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_os_string(), ahead);
    }

    /// A session for work ahead, if the connection is open and alive
    /// (never connects): the next in turn when `spread`, else the first.
    fn live_conn(&self, spread: bool) -> Option<Arc<Conn>> {
        let slot = self.link.lock().unwrap_or_else(|e| e.into_inner());
        let sessions = alive(&slot)?;
        let turn = if spread {
            self.spread.fetch_add(1, Ordering::Relaxed)
        } else {
            0
        };
        Some(sessions[turn % sessions.len()].clone())
    }

    /// The bytes of the file `name` of `dir` if a read ahead of it was
    /// started; `None` when there was none, it had not started (it never
    /// will), or it failed: the caller then reads the file itself, and
    /// reports what that read finds, exactly as without the read ahead.
    fn take_ahead(&self, dir: &SftpDir, name: &OsStr) -> io::Result<Option<Bytes>> {
        let ahead = dir
            .ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        match ahead {
            Some(ahead) => ahead.take(self.timeout, &self.target.url()),
            None => Ok(None),
        }
    }

    /// The listing of `dir` started ahead, into `listing`: true when it
    /// was there and complete; false when there was none or it failed (the
    /// caller then lists the directory itself, and records what that finds).
    fn take_listed(&self, dir: &SftpDir, listing: &mut Listing) -> io::Result<bool> {
        let Some(mut ahead) = take(&dir.listed) else {
            return Ok(false);
        };
        *dir.spec.lock().unwrap_or_else(|e| e.into_inner()) = Some(ahead.spec.clone());
        let done = match ready(&mut ahead.task) {
            Some(done) => done.ok(),
            None => self.run(None, |_| async move { Ok((&mut ahead.task).await.ok()) })?,
        };
        match done {
            Some((mut fetched, Ok(()), _place)) => {
                std::mem::swap(&mut listing.names, &mut fetched.names);
                std::mem::swap(&mut listing.entries, &mut fetched.entries);
                std::mem::swap(&mut listing.metadata, &mut fetched.metadata);
                Ok(true)
            }
            _ => Ok(false),
        }
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
        let (conn, meta, opened) = self.run(cancel, |c| async move {
            let (meta, opened) = open_file(&c, p, known_file, None, cancel, true).await?;
            Ok((c, meta, opened))
        })?;
        let file = match opened {
            Some(Opened::Whole(data)) => Some(SftpFile::whole(data)),
            Some(Opened::Handle(handle)) => {
                let s = stream::Stream::new(
                    conn,
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

    /// The first session, connecting first when the connection is not
    /// open or one of its sessions has ended.
    fn conn(&self) -> io::Result<Arc<Conn>> {
        let mut slot = self.link.lock().unwrap_or_else(|e| e.into_inner());
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
            let ssh = conn::connect(&self.target, &self.counters).await?;
            // Started together: each is a few round trips (any can be
            // the first).
            let mut starts = tokio::task::JoinSet::new();
            for _ in 0..self.sessions {
                let (ssh, url, counters) = (ssh.clone(), url.clone(), self.counters.clone());
                starts.spawn(async move { Conn::start(&ssh, &url, counters).await });
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
        let sessions = sessions.map_err(|e| crate::fs::unavailable(e.kind(), e.to_string()))?;
        let first = sessions[0].clone();
        *slot = Some(sessions);
        Ok(first)
    }

    /// Run `work` on the connection, waiting at most the timeout, and
    /// stopping as soon as `cancel` is set: the outstanding requests are
    /// abandoned (their replies dropped when they come), the connection
    /// stays usable.
    fn run<T, Fut>(
        &self,
        cancel: Option<&CancelToken>,
        work: impl FnOnce(Arc<Conn>) -> Fut,
    ) -> io::Result<T>
    where
        Fut: Future<Output = io::Result<T>>,
    {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled());
        }
        let conn = self.conn()?;
        let url = self.target.url();
        let timeout = self.timeout;
        self.rt.block_on(async move {
            let work = work(conn);
            tokio::pin!(work);
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    r = &mut work => return r,
                    _ = &mut deadline => return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("{url}: no answer within {} s", timeout.as_secs_f64()),
                    )),
                    _ = tokio::time::sleep(Duration::from_millis(20)), if cancel.is_some() => {
                        if cancel.is_some_and(CancelToken::is_cancelled) {
                            return Err(cancelled());
                        }
                    }
                }
            }
        })
    }
}

/// The output of `task` if it has finished, polled once without a runtime.
fn ready<T>(task: &mut tokio::task::JoinHandle<T>) -> Option<Result<T, tokio::task::JoinError>> {
    if !task.is_finished() {
        return None;
    }
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    match Pin::new(task).poll(&mut cx) {
        Poll::Ready(r) => Some(r),
        Poll::Pending => None,
    }
}

fn cancelled() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "cancelled")
}

/// An OS error's text without Rust's ` (os error N)` tail.
fn io_text(e: &io::Error) -> String {
    super::io_message(e)
}

/// The error a status reply stands for, with the errno the disk would
/// have reported where SFTP v3 has a code for it.
fn status_error(code: u32, msg: &str) -> io::Error {
    match code {
        proto::FX_NO_SUCH_FILE => errno::not_found(),
        proto::FX_PERMISSION_DENIED => errno::permission_denied(),
        proto::FX_EOF => io::Error::from(io::ErrorKind::UnexpectedEof),
        8 => io::Error::new(
            io::ErrorKind::Unsupported,
            format!("operation unsupported by the server: {msg}"),
        ),
        _ if msg.is_empty() => io::Error::other("the server failed the request"),
        _ => io::Error::other(msg.to_string()),
    }
}

fn unexpected() -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, "unexpected SFTP reply")
}

fn expect_ok(r: io::Result<Reply>) -> io::Result<()> {
    match r? {
        Reply::Status(proto::FX_OK, _) => Ok(()),
        Reply::Status(c, m) => Err(status_error(c, &m)),
        _ => Err(unexpected()),
    }
}

fn expect_handle(r: io::Result<Reply>) -> io::Result<Vec<u8>> {
    match r? {
        Reply::Handle(h) => Ok(h),
        Reply::Status(c, m) => Err(status_error(c, &m)),
        _ => Err(unexpected()),
    }
}

fn expect_attrs(r: io::Result<Reply>) -> io::Result<Attrs> {
    match r? {
        Reply::Attrs(a) => Ok(a),
        Reply::Status(c, m) => Err(status_error(c, &m)),
        _ => Err(unexpected()),
    }
}

fn expect_name(r: io::Result<Reply>) -> io::Result<Vec<u8>> {
    match r? {
        Reply::Name(mut n) if !n.is_empty() => Ok(n.swap_remove(0).0),
        Reply::Status(c, m) => Err(status_error(c, &m)),
        _ => Err(unexpected()),
    }
}

/// All of `futs`, polled together (so that their requests are all in
/// flight at once), their outputs in order.
async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
    let mut futs: Vec<Pin<Box<F>>> = futs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = futs.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut done = true;
        for (f, o) in futs.iter_mut().zip(out.iter_mut()) {
            if o.is_none() {
                match f.as_mut().poll(cx) {
                    Poll::Ready(v) => *o = Some(v),
                    Poll::Pending => done = false,
                }
            }
        }
        if done {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await;
    out.into_iter()
        .map(|o| o.expect("polled to completion"))
        .collect()
}

/// The kind the permission bits' `S_IFMT` names.
fn kind_of(perm: Option<u32>) -> FileType {
    match perm.map(|p| p & 0o170_000) {
        Some(0o100_000) => FileType::File,
        Some(0o040_000) => FileType::Dir,
        Some(0o120_000) => FileType::Symlink,
        Some(0o010_000) => FileType::Fifo,
        Some(0o140_000) => FileType::Socket,
        Some(0o020_000) | Some(0o060_000) => FileType::Device,
        _ => FileType::Unknown,
    }
}

/// FNV-1a of the path: SFTP v3 has no inode, and the version token needs
/// a number that names the file.
fn path_id(path: &[u8]) -> u64 {
    path.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn metadata_of(path: &[u8], a: &Attrs) -> Metadata {
    Metadata {
        kind: kind_of(a.perm),
        len: a.size.unwrap_or(0),
        mtime: a.mtime.map(|s| (i64::from(s), 0)),
        mode: a.perm.unwrap_or(0) & 0o7777,
        dev: 0,
        ino: path_id(path),
        ctime: None,
    }
}

fn join_name(dir: &Path, name: &OsStr) -> PathBuf {
    dir.join(name)
}

/// `STAT` or `LSTAT`.
async fn stat(conn: &Conn, path: &[u8], follow: bool) -> io::Result<Metadata> {
    let kind = if follow {
        proto::FXP_STAT
    } else {
        proto::FXP_LSTAT
    };
    let r = expect_attrs(conn.call(kind, |o| o.bytes(path)).await);
    Ok(metadata_of(path, &refine(conn, path, r).await?))
}

/// `r`, with a not-found error made the errno the disk would report.
async fn refine<T>(conn: &Conn, path: &[u8], r: io::Result<T>) -> io::Result<T> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(not_found(conn, path).await),
        r => r,
    }
}

/// The errno behind `SSH_FX_NO_SUCH_FILE` for `path`: OpenSSH's
/// `errno_to_portable` sends `ENOTDIR` as that code too, and rg prints
/// the two differently (`Not a directory (os error 20)`). A component
/// that exists and is not a directory (or a trailing `/` after a file)
/// makes it `ENOTDIR`; the nearest existing ancestor being a directory
/// leaves it `ENOENT`. Costs requests on this error path only.
async fn not_found(conn: &Conn, path: &[u8]) -> io::Error {
    let mut end = path.len();
    while end > 1 && path[end - 1] == b'/' {
        end -= 1;
    }
    if end < path.len() {
        let base = &path[..end];
        if let Ok(Reply::Attrs(a)) = conn.call(proto::FXP_STAT, |o| o.bytes(base)).await {
            if kind_of(a.perm) != FileType::Dir {
                return errno::not_a_directory();
            }
        }
    }
    // ELOOP comes as the same code: follow the links by hand, as
    // `path_resolution(7)` would (40 of them at most).
    let mut link = path[..end].to_vec();
    for _ in 0..=40 {
        match conn.call(proto::FXP_LSTAT, |o| o.bytes(&link)).await {
            Ok(Reply::Attrs(a)) if kind_of(a.perm) == FileType::Symlink => {}
            _ => break,
        }
        let Ok(target) = expect_name(conn.call(proto::FXP_READLINK, |o| o.bytes(&link)).await)
        else {
            break;
        };
        link = if target.starts_with(b"/") {
            target
        } else {
            let dir = link.iter().rposition(|&b| b == b'/').unwrap_or(0);
            let mut next = link[..=dir].to_vec();
            next.extend_from_slice(&target);
            next
        };
    }
    if matches!(
        conn.call(proto::FXP_LSTAT, |o| o.bytes(&link)).await,
        Ok(Reply::Attrs(a)) if kind_of(a.perm) == FileType::Symlink
    ) {
        return errno::too_many_links();
    }
    // The ancestors, nearest first.
    let mut at = end;
    while let Some(slash) = path[..at].iter().rposition(|&b| b == b'/') {
        if slash == 0 {
            break;
        }
        let parent = &path[..slash];
        match conn.call(proto::FXP_STAT, |o| o.bytes(parent)).await {
            Ok(Reply::Attrs(a)) if kind_of(a.perm) == FileType::Dir => break,
            Ok(Reply::Attrs(_)) => return errno::not_a_directory(),
            _ => at = slash,
        }
    }
    errno::not_found()
}

/// Read the open `handle` of a regular file of `size` bytes to its end:
/// every `READ` of the expected size at once (up to [`READS_IN_FLIGHT`]),
/// the last one a byte longer than what is left. SFTP v3 guarantees that a
/// read of a regular disk file returns the bytes asked for or up to the end
/// of the file (draft-ietf-secsh-filexfer-02 §6.4), so a reply shorter than
/// its request is the end, and the end costs no request of its own (for a
/// small file: one `READ`). A file that grew reads on from where the data
/// stopped.
async fn read_handle(
    conn: &Arc<Conn>,
    handle: &[u8],
    size: u64,
    cancel: Option<&CancelToken>,
) -> io::Result<Bytes> {
    let chunk = u64::from(conn.max_read.load(Ordering::Relaxed));
    let mut data = Vec::new();
    let mut offset = 0u64;
    loop {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled());
        }
        // (offset, length): up to one byte past the expected end.
        let mut ranges = Vec::new();
        let mut at = offset;
        while at <= size && ranges.len() < READS_IN_FLIGHT {
            ranges.push((at, chunk.min(size + 1 - at)));
            at += chunk;
        }
        if ranges.is_empty() {
            ranges.push((offset, chunk));
        }
        let reads = ranges
            .iter()
            .map(|&(at, len)| {
                let len = len as u32;
                conn.call(proto::FXP_READ, move |o| o.bytes(handle).u64(at).u32(len))
            })
            .collect();
        for (&(at, len), reply) in ranges.iter().zip(join_all(reads).await) {
            if at != offset {
                // An earlier read came back short: read on from there.
                break;
            }
            match reply? {
                Reply::Data(d) => {
                    offset += d.len() as u64;
                    if (d.len() as u64) < len && data.is_empty() {
                        // The whole file in one reply: its bytes as they
                        // came, uncopied.
                        return Ok(d);
                    }
                    if data.is_empty() {
                        data.reserve_exact(size.min(1 << 30) as usize + 1);
                    }
                    data.extend_from_slice(&d);
                    if (d.len() as u64) < len {
                        return Ok(data.into());
                    }
                }
                Reply::Status(proto::FX_EOF, _) => return Ok(data.into()),
                Reply::Status(c, m) => return Err(status_error(c, &m)),
                _ => return Err(unexpected()),
            }
        }
    }
}

/// Read the regular file at `path`, listed with `size` bytes, for a read
/// ahead: `OPEN`, then its `READ`s (the end-of-file probe with them), and
/// `CLOSE` without waiting for its reply.
async fn read_listed(conn: &Arc<Conn>, path: &[u8], size: u64) -> io::Result<Bytes> {
    let handle = Closing {
        conn,
        handle: expect_handle(
            conn.call(proto::FXP_OPEN, |o| {
                o.bytes(path).u32(proto::FXF_READ).u32(0)
            })
            .await,
        )?,
    };
    read_handle(conn, &handle.handle, size, None).await
}

/// Open and read the file at `path`: `OPEN` with `STAT` (or, when the
/// kind is not known to be a regular file, `STAT` first: opening a FIFO
/// would block the server), then the reads.
async fn read_whole(
    conn: &Arc<Conn>,
    path: &[u8],
    known_file: bool,
    max: Option<u64>,
    cancel: Option<&CancelToken>,
) -> io::Result<(Metadata, Option<Bytes>)> {
    match open_file(conn, path, known_file, max, cancel, false).await? {
        (meta, Some(Opened::Whole(data))) => Ok((meta, Some(data))),
        (meta, _) => Ok((meta, None)),
    }
}

/// What [`open_file`] opened.
enum Opened {
    /// The file's bytes, read whole.
    Whole(Bytes),
    /// Its open handle, to stream: the file is larger than [`WHOLE_MAX`].
    Handle(Vec<u8>),
}

/// Files up to this size are read whole when opened and served from
/// memory (the engine checks them in place); larger ones are streamed
/// ([`stream`]), so a search or a read holds a bounded part of any file.
const WHOLE_MAX: u64 = ahead::MAX;

/// [`read_whole`], or, when `stream` and the file is larger than
/// [`WHOLE_MAX`], its open handle for a [`stream::Stream`].
async fn open_file(
    conn: &Arc<Conn>,
    path: &[u8],
    known_file: bool,
    max: Option<u64>,
    cancel: Option<&CancelToken>,
    stream: bool,
) -> io::Result<(Metadata, Option<Opened>)> {
    let open = || {
        conn.call(proto::FXP_OPEN, |o| {
            o.bytes(path).u32(proto::FXF_READ).u32(0)
        })
    };
    let (meta, handle) = if known_file {
        let (h, m) = tokio::join!(open(), stat(conn, path, true));
        match (h, m) {
            (Ok(h), Ok(m)) => (m, expect_handle(Ok(h))?),
            (Ok(h), Err(e)) => {
                if let Ok(h) = expect_handle(Ok(h)) {
                    conn.close_later(h);
                }
                return Err(e);
            }
            (Err(e), _) => return Err(e),
        }
    } else {
        let m = stat(conn, path, true).await?;
        if !m.kind.is_file() || max.is_some_and(|max| m.len > max) {
            return Ok((m, None));
        }
        (m, expect_handle(open().await)?)
    };
    let mut handle = Closing { conn, handle };
    if !meta.kind.is_file() || max.is_some_and(|max| meta.len > max) {
        return Ok((meta, None));
    }
    if stream && meta.len > WHOLE_MAX {
        let h = std::mem::take(&mut handle.handle);
        return Ok((meta, Some(Opened::Handle(h))));
    }
    let data = read_handle(conn, &handle.handle, meta.len, cancel).await;
    drop(handle);
    let data = data?;
    if max.is_some_and(|max| data.len() as u64 > max) {
        return Ok((meta, None));
    }
    Ok((meta, Some(Opened::Whole(data))))
}

/// List the directory at `path`: `OPENDIR`, then `READDIR`s several at a
/// time until one says `EOF`.
async fn list_dir(conn: &Arc<Conn>, path: &[u8], listing: &mut Listing) -> io::Result<()> {
    let opened = expect_handle(conn.call(proto::FXP_OPENDIR, |o| o.bytes(path)).await);
    let handle = Closing {
        conn,
        handle: refine(conn, path, opened).await?,
    };
    let h = &handle.handle;
    let mut full = path.to_vec();
    if full.last() != Some(&b'/') {
        full.push(b'/');
    }
    let base = full.len();
    let result = 'outer: loop {
        let reads = (0..READDIRS_IN_FLIGHT)
            .map(|_| conn.call(proto::FXP_READDIR, move |o| o.bytes(h)))
            .collect();
        for reply in join_all(reads).await {
            match reply {
                Ok(Reply::Name(names)) => {
                    for (name, attrs) in names {
                        // A write's staged file (this process's or
                        // another's) is no workspace file: it is there
                        // only until the write publishes it.
                        if name == b"." || name == b".." || staging::is_staged(&name) {
                            continue;
                        }
                        full.truncate(base);
                        full.extend_from_slice(&name);
                        let meta = metadata_of(&full, &attrs);
                        if meta.kind == FileType::Unknown {
                            listing.push(&name, FileType::Unknown);
                        } else {
                            listing.push_with_metadata(&name, meta.kind, meta);
                        }
                    }
                }
                Ok(Reply::Status(proto::FX_EOF, _)) => break 'outer Ok(()),
                Ok(Reply::Status(c, m)) => break 'outer Err(status_error(c, &m)),
                Ok(_) => break 'outer Err(unexpected()),
                Err(e) => break 'outer Err(e),
            }
        }
    };
    drop(handle);
    result
}

/// An open handle, closed when dropped: also when the listing is abandoned
/// (a listing ahead given up, a timeout), or the server keeps it open for
/// the session's life.
struct Closing<'c> {
    conn: &'c Arc<Conn>,
    handle: Vec<u8>,
}

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        // Empty: handed on (a stream closes it).
        if !self.handle.is_empty() {
            self.conn.close_later(std::mem::take(&mut self.handle));
        }
    }
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
        let real = self.run(None, |c| async move {
            let (real, exists) = tokio::join!(
                c.call(proto::FXP_REALPATH, |o| o.bytes(p)),
                stat(&c, p, true)
            );
            exists?;
            expect_name(real)
        })?;
        Ok(PathBuf::from(os_str(&real).into_owned()))
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        let p = path_bytes(path);
        self.run(None, |c| async move { stat(&c, p, true).await })
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        let p = path_bytes(path);
        self.run(None, |c| async move { stat(&c, p, false).await })
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        let p = path_bytes(path);
        let target = self.run(None, |c| async move {
            expect_name(c.call(proto::FXP_READLINK, |o| o.bytes(p)).await)
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
        let ahead = parent
            .ahead_dirs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
        *dir.listed.lock().unwrap_or_else(|e| e.into_inner()) = ahead;
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
        if let Err(e) = self.run(None, |c| async move { list_dir(&c, p, listing_ref).await }) {
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
        self.run(None, |c| async move { stat(&c, p, follow).await })
    }

    fn will_open(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr, metadata: Option<&Metadata>) {
        // Only a regular file of a known size (what the listing said) that
        // fits the window; the engine lists nothing else as one.
        let Some(size) = metadata
            .filter(|m| m.kind.is_file() && m.len <= ahead::MAX)
            .map(|m| m.len)
        else {
            return;
        };
        // Files are read on the first session: spreading them (or a grep's
        // listings) over two made a grep slower on 2 cores, where glob's
        // listings spread made glob faster (BENCHMARKS.md).
        let Some(conn) = self.live_conn(false) else {
            return;
        };
        let path = path_bytes(&join_name(dir_path, name)).to_vec();
        let ahead = self.window.hint(conn, path, size);
        dir.ahead
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name.to_os_string(), ahead);
    }

    fn lists_ahead(&self) -> bool {
        true
    }

    fn will_list(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr) {
        self.list_ahead(dir, dir_path, name, false);
    }

    fn will_list_tree(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr) {
        self.list_ahead(dir, dir_path, name, true);
    }

    fn open_at(&self, dir: &SftpDir, dir_path: &Path, name: &OsStr) -> io::Result<SftpFile> {
        if let Some(data) = self.take_ahead(dir, name)? {
            return Ok(SftpFile::whole(data));
        }
        let path = join_name(dir_path, name);
        self.open_streaming(&path, true, None)?
            .1
            .ok_or_else(errno::is_a_directory)
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

    fn contents<'f>(&self, file: &'f SftpFile) -> Option<&'f [u8]> {
        match &file.body {
            Body::Whole { data, .. } => Some(data),
            Body::Stream(_) => None,
        }
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        let p = path_bytes(path);
        let (meta, data) = self.run(None, |c| async move {
            read_whole(&c, p, false, None, None).await
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
        let (meta, data) = self.run(None, |c| async move {
            read_whole(&c, p, false, Some(max), None).await
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

    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        write::write(self, path, content, guard, cancel)
    }
}

mod write;

/// The fuzz target's entry into `known_hosts` parsing.
#[cfg(fuzzing)]
pub(crate) fn fuzz_known_hosts(data: &[u8]) {
    known_hosts::fuzz(data)
}

/// The fuzz target's entry into the reply decoder: the type byte, then
/// the body.
#[cfg(fuzzing)]
pub(crate) fn fuzz_sftp_reply(data: &[u8]) {
    if let Some((&kind, body)) = data.split_first() {
        let _ = proto::Reply::parse(kind, bytes::Bytes::copy_from_slice(body));
    }
}
