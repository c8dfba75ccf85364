//! Files read ahead of the searching threads ([`FileSystem::will_open`]):
//! a window of files and bytes granted in the order of the hints, each
//! file read by a chain of continuations on the connection's reader (its
//! `OPEN` reply sends its `READ`, the `READ` reply its `CLOSE`), with no
//! task, channel or wake-up of its own; a searching thread takes the bytes
//! from the file's slot, waiting on it only while its reply is on the way.
//!
//! [`FileSystem::will_open`]: crate::fs::FileSystem::will_open

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::conn::Conn;
use super::proto::{self, Reply};

/// Files read ahead at once: handles open on the server, and replies the
/// searching threads have not taken yet.
const FILES: usize = 128;
/// The bytes those files may hold, in KiB.
const KIB: u64 = 16 * 1024;
/// The largest file read ahead; a larger one is read when it is opened.
pub(crate) const MAX: u64 = 1 << 20;

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
    conn: Arc<Conn>,
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
pub(crate) struct Window {
    places: Mutex<Places>,
    /// Where a file longer than one `READ` is read (a task).
    rt: tokio::runtime::Handle,
}

/// One file's read ahead, held by its directory: given up when dropped.
pub(crate) struct Ahead {
    slot: Arc<Slot>,
    window: Arc<Window>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Window {
    pub(crate) fn new(rt: tokio::runtime::Handle) -> Arc<Window> {
        Arc::new(Window {
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
    pub(crate) fn hint(self: &Arc<Window>, conn: Arc<Conn>, path: Vec<u8>, size: u64) -> Ahead {
        let slot = Arc::new(Slot {
            conn,
            path,
            size,
            kib: (size / 1024 + 1).min(KIB),
            state: Mutex::new(State::Queued),
            done: Condvar::new(),
        });
        lock(&self.places).queue.push_back(slot.clone());
        self.pump();
        Ahead {
            slot,
            window: self.clone(),
        }
    }

    /// Start the queued files the window has room for, in order.
    fn pump(self: &Arc<Window>) {
        let mut started = Vec::new();
        {
            let mut p = lock(&self.places);
            while let Some(front) = p.queue.front().cloned() {
                let mut state = lock(&front.state);
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

    fn release(self: &Arc<Window>, kib: u64) {
        {
            let mut p = lock(&self.places);
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
    fn start(self: &Arc<Window>, slot: Arc<Slot>) {
        let chunk = u64::from(slot.conn.max_read.load(Ordering::Relaxed));
        if slot.size + 1 > chunk {
            let window = self.clone();
            self.rt.spawn(async move {
                let data = super::read_listed(&slot.conn, &slot.path, slot.size).await;
                window.finish(&slot, data.ok());
            });
            return;
        }
        let window = self.clone();
        let len = (slot.size + 1) as u32;
        let opened = slot.clone();
        let sent = slot.conn.send_then(
            proto::FXP_OPEN,
            |o| o.bytes(&slot.path).u32(proto::FXF_READ).u32(0),
            move |conn, reply| {
                let handle = match reply {
                    Ok(Reply::Handle(h)) => h,
                    _ => return window.finish(&opened, None),
                };
                let read = {
                    let window = window.clone();
                    let slot = opened.clone();
                    move |conn: &Arc<Conn>, reply: io::Result<Reply>| {
                        let data = match reply {
                            Ok(Reply::Data(d)) if (d.len() as u64) < u64::from(len) => {
                                conn.count_read(d.len());
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
                if conn
                    .send_then(proto::FXP_READ, |o| o.bytes(&h).u64(0).u32(len), read)
                    .is_err()
                {
                    return window.finish(&opened, None);
                }
                conn.close_later(handle);
            },
        );
        if sent.is_err() {
            self.finish(&slot, None);
        }
    }

    /// The file's read ended with `data` (`None`: failed).
    fn finish(self: &Arc<Window>, slot: &Slot, data: Option<Bytes>) {
        let mut state = lock(&slot.state);
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

impl Ahead {
    /// The file's bytes: `Ok(None)` when its read never started (it never
    /// will) or failed, and the caller reads the file itself.
    pub(crate) fn take(self, timeout: Duration, url: &str) -> io::Result<Option<Bytes>> {
        let deadline = Instant::now() + timeout;
        let mut state = lock(&self.slot.state);
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
                        .unwrap_or_else(|e| e.into_inner())
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

impl Drop for Ahead {
    fn drop(&mut self) {
        let mut state = lock(&self.slot.state);
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
