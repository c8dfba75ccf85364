//! Work done ahead of the engine on what it says it will open or list, so
//! that its requests are in flight before the engine waits on them.
//!
//! Files ([`FsHints::will_open`]): a window of files and bytes granted
//! in the order of the hints, each file read by a chain of continuations on
//! the session's reader (its `OPEN` reply sends its `READ`, the `READ`
//! reply its `CLOSE`), with no task, channel or wake-up of its own; a
//! searching thread takes the bytes from the file's slot, waiting on it
//! only while its reply is on the way.
//!
//! Directories ([`FsHints::will_list`], [`FsHints::will_list_tree`]):
//! each listed by a task, in one of a bounded number of places
//! ([`AHEAD_DIRS`]), the listing held by the parent [`SftpDir`] until the
//! engine opens the directory; a listing the engine asked for starts its
//! own subdirectories' as soon as it is in ([`Spec`]).
//!
//! What failed or never started, the engine reads or lists itself, and
//! reports what that finds, exactly as without the work ahead.

use std::collections::{HashMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::future::Future;
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::Poll;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dsh_search_base::sync::RecoverPoison;

use super::ops::{list_dir, read_listed, WHOLE_MAX};
use super::proto::{self, Reply};
use super::session::Session;
use super::{join_name, SftpDir, SftpFs};
use crate::names::{os_bytes, os_str, path_bytes};
use crate::seam::{FileType, Listing};
#[cfg(doc)]
use crate::FileSystem;

/// Files read ahead at once: handles open on the server, and replies the
/// searching threads have not taken yet.
const FILES: usize = 128;
/// The bytes those files may hold, in KiB.
const KIB: u64 = 16 * 1024;
/// The largest file read ahead: one the operations read whole when it is
/// opened ([`WHOLE_MAX`]); a larger one is read when it is opened.
pub(super) const FILE_MAX: u64 = WHOLE_MAX;

enum State {
    /// Waiting for a place in the window: the engine may claim it and read
    /// the file itself rather than wait.
    Queued,
    /// Its requests are in flight.
    Started,
    /// Read (or failed: the engine then reads the file itself, and reports
    /// what that read finds, exactly as without the read ahead).
    Done(Option<Bytes>),
    /// Claimed by the engine before it started, taken, or given up: it
    /// holds no place.
    Over,
    /// Given up while in flight: its place is given back when it ends.
    Abandoned,
}

struct Slot {
    session: Arc<Session>,
    path: Vec<u8>,
    size: u64,
    kib: u64,
    state: Mutex<State>,
    done: Condvar,
}

struct Places {
    files: usize,
    kib: u64,
    queue: VecDeque<Arc<Slot>>,
}

/// The window, shared by a filesystem's directories.
pub(crate) struct FileWindow {
    places: Mutex<Places>,
    /// Where a file longer than one `READ` is read (a task).
    rt: tokio::runtime::Handle,
}

/// One file's read ahead, held by its directory: given up when dropped.
pub(crate) struct FileAhead {
    slot: Arc<Slot>,
    window: Arc<FileWindow>,
}

impl FileWindow {
    pub(crate) fn new(rt: tokio::runtime::Handle) -> Arc<FileWindow> {
        Arc::new(FileWindow {
            places: Mutex::new(Places {
                files: 0,
                kib: 0,
                queue: VecDeque::new(),
            }),
            rt,
        })
    }

    /// Queue the regular file at `path`, listed with `size` bytes, and
    /// start what the window has room for.
    pub(crate) fn hint(
        self: &Arc<FileWindow>,
        session: Arc<Session>,
        path: Vec<u8>,
        size: u64,
    ) -> FileAhead {
        let slot = Arc::new(Slot {
            session,
            path,
            size,
            kib: (size / 1024 + 1).min(KIB),
            state: Mutex::new(State::Queued),
            done: Condvar::new(),
        });
        self.places
            .lock()
            .recover_poison()
            .queue
            .push_back(slot.clone());
        self.pump();
        FileAhead {
            slot,
            window: self.clone(),
        }
    }

    /// Start the queued files the window has room for, in order.
    fn pump(self: &Arc<FileWindow>) {
        let mut started = Vec::new();
        {
            let mut p = self.places.lock().recover_poison();
            while let Some(front) = p.queue.front().cloned() {
                let mut state = front.state.lock().recover_poison();
                if !matches!(*state, State::Queued) {
                    drop(state);
                    p.queue.pop_front();
                    continue;
                }
                if p.files >= FILES || (p.files > 0 && p.kib + front.kib > KIB) {
                    break;
                }
                *state = State::Started;
                p.files += 1;
                p.kib += front.kib;
                drop(state);
                started.extend(p.queue.pop_front());
            }
        }
        for slot in started {
            self.start(slot);
        }
    }

    fn release(self: &Arc<FileWindow>, kib: u64) {
        {
            let mut p = self.places.lock().recover_poison();
            p.files -= 1;
            p.kib -= kib;
        }
        self.pump();
    }

    /// Read the file: `OPEN`, then its `READ` (a byte longer than its
    /// size: a short read of a disk file is its end, draft-ietf-secsh-
    /// filexfer-02 §6.4, so the end costs no request of its own) and its
    /// `CLOSE` together, the `CLOSE` not waited for. OpenSSH's
    /// `sftp-server` serves a connection's requests one at a time in the
    /// order they come, so the `READ` is served before the `CLOSE`; a
    /// server that closed first would fail the `READ`, and the engine would
    /// then read the file itself. A file longer than one `READ` is read by
    /// a task.
    fn start(self: &Arc<FileWindow>, slot: Arc<Slot>) {
        let chunk = u64::from(slot.session.max_read.load(Ordering::Relaxed));
        if slot.size + 1 > chunk {
            let window = self.clone();
            self.rt.spawn(async move {
                let data = read_listed(&slot.session, &slot.path, slot.size).await;
                window.finish(&slot, data.ok());
            });
            return;
        }
        let window = self.clone();
        let len = (slot.size + 1) as u32;
        let opened = slot.clone();
        let sent = slot.session.send_then(
            proto::FXP_OPEN,
            |o| o.bytes(&slot.path).u32(proto::FXF_READ).u32(0),
            move |session, reply| {
                let handle = match reply {
                    Ok(Reply::Handle(h)) => h,
                    _ => return window.finish(&opened, None),
                };
                let read = {
                    let window = window.clone();
                    let slot = opened.clone();
                    move |session: &Arc<Session>, reply: io::Result<Reply>| {
                        let data = match reply {
                            Ok(Reply::Data(d)) if (d.len() as u64) < u64::from(len) => {
                                session.count_read(d.len());
                                Some(d)
                            }
                            Ok(Reply::Status(proto::FX_EOF, _)) => Some(Bytes::new()),
                            // Grown past a `READ`, or an error: the engine
                            // reads it itself.
                            _ => None,
                        };
                        window.finish(&slot, data);
                    }
                };
                let h = handle.clone();
                if session
                    .send_then(proto::FXP_READ, |o| o.bytes(&h).u64(0).u32(len), read)
                    .is_err()
                {
                    return window.finish(&opened, None);
                }
                session.close_later(handle);
            },
        );
        if sent.is_err() {
            self.finish(&slot, None);
        }
    }

    /// The file's read ended with `data` (`None`: failed).
    fn finish(self: &Arc<FileWindow>, slot: &Slot, data: Option<Bytes>) {
        let mut state = slot.state.lock().recover_poison();
        if matches!(*state, State::Abandoned) {
            *state = State::Over;
            drop(state);
            return self.release(slot.kib);
        }
        *state = State::Done(data);
        drop(state);
        slot.done.notify_all();
    }
}

impl FileAhead {
    /// The file's bytes: `Ok(None)` when its read never started (it never
    /// will) or failed, and the caller reads the file itself.
    pub(crate) fn take(self, timeout: Duration, url: &str) -> io::Result<Option<Bytes>> {
        let deadline = Instant::now() + timeout;
        let mut state = self.slot.state.lock().recover_poison();
        loop {
            match std::mem::replace(&mut *state, State::Over) {
                State::Queued => return Ok(None),
                State::Done(data) => {
                    drop(state);
                    self.window.release(self.slot.kib);
                    return Ok(data);
                }
                State::Started => {
                    *state = State::Started;
                    let now = Instant::now();
                    if now >= deadline {
                        return Err(io::Error::new(
                            io::ErrorKind::TimedOut,
                            format!("{url}: no answer within {} s", timeout.as_secs_f64()),
                        ));
                    }
                    state = self
                        .slot
                        .done
                        .wait_timeout(state, deadline - now)
                        .recover_poison()
                        .0;
                }
                other => {
                    *state = other;
                    return Ok(None);
                }
            }
        }
    }
}

impl Drop for FileAhead {
    fn drop(&mut self) {
        let mut state = self.slot.state.lock().recover_poison();
        match std::mem::replace(&mut *state, State::Over) {
            State::Started => *state = State::Abandoned,
            State::Done(_) => {
                drop(state);
                self.window.release(self.slot.kib);
            }
            _ => {}
        }
    }
}

/// Directories listed ahead of the engine ([`FsHints::will_list`]) at
/// once, in flight or waiting to be taken; past it a directory is listed
/// when the engine lists it.
const AHEAD_DIRS: usize = 256;
/// The places among them that only listings the engine asked for take.
const AHEAD_DIRS_NAMED: usize = 64;
/// Directories listed ahead of a walk that lists the whole tree
/// ([`FsHints::will_list_tree`]): every listing is wanted, so the only
/// bound is memory (a listing is its names).
const AHEAD_TREE_DIRS: usize = 4096;

/// The names of the subdirectories a walk of the whole tree leaves out at
/// every depth ([`FsHints::will_list_tree`]).
type LeftOut = &'static [&'static [u8]];

/// A place among the [`AHEAD_DIRS`] listings ahead, given back when dropped.
struct DirPlace(Arc<AtomicUsize>);

impl Drop for DirPlace {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// One directory's listing ahead: aborted when dropped.
pub(super) struct DirAhead {
    task: tokio::task::JoinHandle<(Listing, io::Result<()>, DirPlace)>,
    spec: Arc<Spec>,
}

impl Drop for DirAhead {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The listings of a directory's subdirectories, started one level beyond
/// what the engine has asked for: a directory listed ahead because the
/// engine will list it ([`FsHints::will_list`]) starts listing its own
/// subdirectories as soon as its listing is in, before the engine, which
/// may be several directories behind, gets to it and names them. A
/// subdirectory the engine then skips (ignored) cost one listing, never
/// its own subdirectories': a directory named by nobody speculates no
/// further until the engine names it.
pub(super) struct Spec {
    state: Mutex<SpecState>,
    children: Mutex<HashMap<OsString, DirAhead>>,
    /// Named through [`FsHints::will_list_tree`], or below such a
    /// directory, with the names the walk leaves out (the VCS
    /// directories): it lists every other subdirectory, so their listings
    /// start as soon as this one is in, at every depth (as far as
    /// [`AHEAD_TREE_DIRS`] allows).
    tree: Option<LeftOut>,
}

enum SpecState {
    /// Not named by the engine yet; its subdirectories, once listed.
    Unnamed(Option<Vec<OsString>>),
    Named,
}

/// What a listing ahead needs to start others.
#[derive(Clone)]
struct Lister {
    session: Arc<Session>,
    places: Arc<AtomicUsize>,
    rt: tokio::runtime::Handle,
}

impl Lister {
    /// Start listing the directory at `path`, if there is a place (a
    /// speculative one leaves [`AHEAD_DIRS_NAMED`] of them to the listings
    /// the engine asks for).
    fn start(&self, path: Vec<u8>, named: bool, tree: Option<LeftOut>) -> Option<DirAhead> {
        let limit = if tree.is_some() {
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
            state: Mutex::new(if named || tree.is_some() {
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
            let r = list_dir(&lister.session, &path, &mut listing).await;
            if r.is_ok() {
                let subdirs: Vec<OsString> = listing
                    .iter()
                    .filter(|&(_, kind)| kind == FileType::Dir)
                    .map(|(name, _)| os_str(name).into_owned())
                    .collect();
                let mut state = shared.state.lock().recover_poison();
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
        Some(DirAhead { task, spec })
    }

    /// Start listing the subdirectories `names` of the directory at `path`.
    fn speculate(&self, spec: &Spec, path: &[u8], names: Vec<OsString>) {
        let mut children = spec.children.lock().recover_poison();
        for name in names {
            if spec.tree.is_some_and(|out| out.contains(&os_bytes(&name))) {
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
    fn name(&self, ahead: &DirAhead, path: &[u8]) {
        let later = {
            let mut state = ahead.spec.state.lock().recover_poison();
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
    std::mem::take(&mut *slot.lock().recover_poison())
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

impl SftpFs {
    /// Start listing the subdirectory `name` of `dir` for the engine
    /// ([`FsHints::will_list`]; `tree`: [`FsHints::will_list_tree`], with
    /// the names its walk leaves out), or take the listing its parent's
    /// speculation started.
    pub(super) fn list_ahead(
        &self,
        dir: &SftpDir,
        dir_path: &Path,
        name: &OsStr,
        tree: Option<LeftOut>,
    ) {
        // A walk that lists the whole tree (glob) spreads its listings over
        // the sessions; a grep's stay on the first with its files.
        let Some(session) = self.live_session(tree.is_some()) else {
            return;
        };
        let lister = Lister {
            session,
            places: self.ahead_dirs.clone(),
            rt: self.rt.handle().clone(),
        };
        let path = path_bytes(&join_name(dir_path, name)).to_vec();
        let spec = dir.spec.lock().recover_poison().clone();
        let started = spec.and_then(|s| s.children.lock().recover_poison().remove(name));
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
            .recover_poison()
            .insert(name.to_os_string(), ahead);
    }

    /// The bytes of the file `name` of `dir` if a read ahead of it was
    /// started; `None` when there was none, it had not started (it never
    /// will), or it failed: the caller then reads the file itself, and
    /// reports what that read finds, exactly as without the read ahead.
    pub(super) fn take_ahead(&self, dir: &SftpDir, name: &OsStr) -> io::Result<Option<Bytes>> {
        let ahead = dir.ahead.lock().recover_poison().remove(name);
        match ahead {
            Some(ahead) => ahead.take(self.timeout, &self.target.url()),
            None => Ok(None),
        }
    }

    /// The listing of `dir` started ahead, into `listing`: true when it
    /// was there and complete; false when there was none or it failed (the
    /// caller then lists the directory itself, and records what that finds).
    pub(super) fn take_listed(&self, dir: &SftpDir, listing: &mut Listing) -> io::Result<bool> {
        let Some(mut ahead) = take(&dir.listed) else {
            return Ok(false);
        };
        *dir.spec.lock().recover_poison() = Some(ahead.spec.clone());
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
}
