//! One SFTP session: a channel of the SSH connection running the `sftp`
//! subsystem (its own `sftp-server` on the host), its requests multiplexed
//! by id so that any number are in flight at once (`docs/contract.md`
//! §11): a request is queued for the writer task, which sends all that
//! accumulated as one channel write, and its reply is dispatched by the
//! reader task to the task waiting for it or to a continuation.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use dsh_search_base::sync::RecoverPoison;
use russh::client::Msg;
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf};
use tokio::sync::{oneshot, Notify};

use super::connect::Ssh;
use super::frame::{Framer, TooLong};
use super::proto::{self, Out, Reply};

/// The largest read and write every server serves whole
/// (draft-ietf-secsh-filexfer-02 §3: servers serve at least 32 KiB).
const SERVED_AT_LEAST: u32 = 32 * 1024;
/// The largest read and write asked for, whatever the server announces:
/// OpenSSH's own (`limits@openssh.com` says 255 KiB).
const SERVED_AT_MOST: u32 = 255 * 1024;

/// The extensions the server announced that the filesystem uses.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Extensions {
    pub(crate) posix_rename: bool,
    pub(crate) fsync: bool,
    pub(crate) limits: bool,
}

/// Counters of one filesystem's traffic, across its connections.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) requests: AtomicU64,
    pub(crate) round_trips: AtomicU64,
    pub(crate) bytes_read: AtomicU64,
    pub(crate) connects: AtomicU64,
    /// Requests of every session sent and not answered: a request sent
    /// while there are none is a round trip.
    in_flight: AtomicU64,
}

/// A continuation: what to do with a reply, on the reader task.
type Then = Box<dyn FnOnce(&Arc<Session>, io::Result<Reply>) + Send>;

/// What a reply goes to: a task waiting for it, or a continuation run
/// by the reader as soon as it comes (which may send the next request
/// then and there, without waking anything).
enum Waiter {
    Task(oneshot::Sender<io::Result<Reply>>),
    Then(Then),
}

impl Waiter {
    fn answer(self, session: &Arc<Session>, reply: io::Result<Reply>) {
        match self {
            Waiter::Task(tx) => {
                let _ = tx.send(reply);
            }
            Waiter::Then(f) => f(session, reply),
        }
    }
}

struct Pending {
    waiters: HashMap<u32, Waiter>,
    /// Requests sent whose replies have not come, waited for or not (a
    /// `CLOSE` nobody waits for still occupies the wire).
    in_flight: usize,
    /// Why the session ended, once it has: every later request fails so.
    dead: Option<String>,
}

/// One SFTP session (one `sftp-server` on the host) over an SSH
/// connection that may carry others.
pub(crate) struct Session {
    /// The connection, which lives as long as its sessions.
    ssh: Arc<Ssh>,
    /// Requests not yet handed to the channel, whole packets end to end:
    /// the writer task sends all that accumulated as one channel write, so
    /// that the requests issued together travel in one SSH packet (one
    /// encryption and one read for the server) rather than one each.
    outbox: Mutex<Vec<u8>>,
    /// Wakes the writer task when the outbox stops being empty.
    flush: Notify,
    pending: Mutex<Pending>,
    next_id: AtomicU32,
    pub(crate) ext: Extensions,
    /// The largest read and write the server serves whole.
    pub(crate) max_read: AtomicU32,
    pub(crate) max_write: AtomicU32,
    counters: Arc<Counters>,
    url: String,
}

/// The session ended: an error of the whole workspace, reported once.
fn lost(url: &str, why: &str) -> io::Error {
    crate::unavailable(io::ErrorKind::ConnectionAborted, format!("{url}: {why}"))
}

impl Session {
    /// Start an SFTP session on `ssh` (a channel running the subsystem,
    /// its own `sftp-server` on the host) and negotiate version 3.
    pub(crate) async fn start(
        ssh: &Arc<Ssh>,
        url: &str,
        counters: Arc<Counters>,
    ) -> io::Result<Arc<Session>> {
        let fail = |what: String| io::Error::other(format!("{url}: {what}"));
        let channel = ssh
            .channel_open_session()
            .await
            .map_err(|e| fail(format!("cannot open a session channel: {e}")))?;
        channel
            .request_subsystem(true, "sftp")
            .await
            .map_err(|e| fail(format!("cannot start the sftp subsystem: {e}")))?;
        let (mut read, write) = channel.split();
        let init = Out(vec![0, 0, 0, 0, proto::FXP_INIT])
            .u32(proto::VERSION)
            .finish();
        write
            .data_bytes(init)
            .await
            .map_err(|e| fail(format!("cannot start the sftp subsystem: {e}")))?;
        let mut framer = Framer::default();
        let mut packets = Vec::new();
        while packets.is_empty() {
            match read.wait().await {
                Some(ChannelMsg::Data { data }) => {
                    framer.push(data, &mut packets).map_err(|e| {
                        fail(if packets.is_empty() {
                            first_too_long(e)
                        } else {
                            e.to_string()
                        })
                    })?;
                }
                Some(ChannelMsg::ExitStatus { .. })
                | Some(ChannelMsg::Eof)
                | Some(ChannelMsg::Close)
                | None => return Err(fail("the server has no sftp subsystem".into())),
                Some(_) => {}
            }
        }
        // The server speaks only when spoken to: nothing follows its
        // VERSION before the first request, but what does is read on.
        let version = packets.remove(0);
        if version.first() != Some(&proto::FXP_VERSION) {
            return Err(fail("the server did not answer the SFTP handshake".into()));
        }
        let mut r = proto::In(&version[1..]);
        let v = r.u32()?;
        if v != proto::VERSION {
            return Err(fail(format!(
                "the server speaks SFTP version {v}, not {}",
                proto::VERSION
            )));
        }
        let mut ext = Extensions::default();
        while let (Ok(name), Ok(_)) = (r.bytes(), r.bytes()) {
            match name {
                b"posix-rename@openssh.com" => ext.posix_rename = true,
                b"fsync@openssh.com" => ext.fsync = true,
                b"limits@openssh.com" => ext.limits = true,
                _ => {}
            }
        }
        let session = Arc::new(Session {
            ssh: ssh.clone(),
            outbox: Mutex::new(Vec::new()),
            flush: Notify::new(),
            pending: Mutex::new(Pending {
                waiters: HashMap::new(),
                in_flight: 0,
                dead: None,
            }),
            next_id: AtomicU32::new(1),
            ext,
            max_read: AtomicU32::new(SERVED_AT_LEAST),
            max_write: AtomicU32::new(SERVED_AT_LEAST),
            counters,
            url: url.to_string(),
        });
        tokio::spawn(reader(read, framer, packets, session.clone()));
        tokio::spawn(writer(write, session.clone()));
        if ext.limits {
            // limits@openssh.com: max-packet, max-read, max-write, max-open.
            if let Ok(Reply::Extended(body)) = session
                .call(proto::FXP_EXTENDED, |o| o.bytes(b"limits@openssh.com"))
                .await
            {
                let mut r = proto::In(&body);
                if let (Ok(_), Ok(rd), Ok(wr)) = (r.u64(), r.u64(), r.u64()) {
                    let clamp = |n: u64| {
                        n.clamp(u64::from(SERVED_AT_LEAST), u64::from(SERVED_AT_MOST)) as u32
                    };
                    session.max_read.store(clamp(rd), Ordering::Relaxed);
                    session.max_write.store(clamp(wr), Ordering::Relaxed);
                }
            }
        }
        Ok(session)
    }

    /// End the connection this session is on, and so its other sessions
    /// (their servers exit), without waiting for them to be dropped.
    pub(crate) async fn disconnect(&self) {
        let _ = self
            .ssh
            .disconnect(russh::Disconnect::ByApplication, "", "en")
            .await;
    }

    /// Whether the session has ended.
    pub(crate) fn is_dead(&self) -> bool {
        self.pending.lock().recover_poison().dead.is_some()
    }

    /// Queue one request for the writer task, its reply to go to `waiter`
    /// (or nowhere). Synchronous, so that a request can be sent from
    /// anywhere (a reply's handler, an engine thread) without a task.
    fn send(
        &self,
        kind: u8,
        body: impl FnOnce(Out) -> Out,
        waiter: Option<Waiter>,
    ) -> io::Result<u32> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let packet = body(Out::new(kind, id)).finish();
        {
            let mut p = self.pending.lock().recover_poison();
            if let Some(why) = &p.dead {
                return Err(lost(&self.url, why));
            }
            if self.counters.in_flight.fetch_add(1, Ordering::Relaxed) == 0 {
                self.counters.round_trips.fetch_add(1, Ordering::Relaxed);
            }
            p.in_flight += 1;
            if let Some(w) = waiter {
                p.waiters.insert(id, w);
            }
        }
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        let was_empty = {
            let mut out = self.outbox.lock().recover_poison();
            let was_empty = out.is_empty();
            out.extend_from_slice(&packet);
            was_empty
        };
        if was_empty {
            self.flush.notify_one();
        }
        Ok(id)
    }

    /// Send one request and wait for its reply.
    pub(crate) async fn call(&self, kind: u8, body: impl FnOnce(Out) -> Out) -> io::Result<Reply> {
        let (tx, rx) = oneshot::channel();
        let id = self.send(kind, body, Some(Waiter::Task(tx)))?;
        // Abandoned (the caller's future dropped on a timeout or a
        // cancellation): the reply is dropped when it comes.
        let guard = Abandon { session: self, id };
        let reply = rx.await.map_err(|_| lost(&self.url, "connection lost"))?;
        std::mem::forget(guard);
        if let Ok(Reply::Data(d)) = &reply {
            self.counters
                .bytes_read
                .fetch_add(d.len() as u64, Ordering::Relaxed);
        }
        reply
    }

    /// Send one request; `then` gets its reply (or the reason the session
    /// ended) on the reader task, and must not block.
    pub(crate) fn send_then(
        &self,
        kind: u8,
        body: impl FnOnce(Out) -> Out,
        then: impl FnOnce(&Arc<Session>, io::Result<Reply>) + Send + 'static,
    ) -> io::Result<()> {
        self.send(kind, body, Some(Waiter::Then(Box::new(then))))
            .map(|_| ())
    }

    /// Count `n` file bytes received in a `READ` reply.
    pub(crate) fn count_read(&self, n: usize) {
        self.counters
            .bytes_read
            .fetch_add(n as u64, Ordering::Relaxed);
    }

    /// Close a handle without waiting for the reply (nothing the caller
    /// could do about a failed close of a handle it only read).
    pub(crate) fn close_later(&self, handle: Vec<u8>) {
        let _ = self.send(proto::FXP_CLOSE, |o| o.bytes(&handle), None);
    }

    fn kill(self: &Arc<Session>, why: &str) {
        let waiters = {
            let mut p = self.pending.lock().recover_poison();
            p.dead.get_or_insert_with(|| why.to_string());
            // Its requests will not be answered.
            let gone = std::mem::take(&mut p.in_flight);
            self.counters
                .in_flight
                .fetch_sub(gone as u64, Ordering::Relaxed);
            std::mem::take(&mut p.waiters)
        };
        for (_, w) in waiters {
            w.answer(self, Err(lost(&self.url, why)));
        }
        self.flush.notify_one();
    }
}

struct Abandon<'c> {
    session: &'c Session,
    id: u32,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        self.session
            .pending
            .lock()
            .recover_poison()
            .waiters
            .remove(&self.id);
    }
}

/// The handshake's first packet too long: most often no packet at all but
/// text that a shell startup file on the host printed before the server
/// started (OpenSSH's `sftp` fails so too, and says to make the shell
/// quiet for non-interactive sessions).
fn first_too_long(e: TooLong) -> String {
    let head = e.len.to_be_bytes();
    format!(
        "{e}: its first bytes read {:?}; does a shell startup file on the host print text? \
         It must print nothing for non-interactive sessions",
        String::from_utf8_lossy(&head)
    )
}

/// Send what the outbox holds, as it accumulates, until the session ends.
async fn writer(write: ChannelWriteHalf<Msg>, session: Arc<Session>) {
    loop {
        session.flush.notified().await;
        loop {
            let out = std::mem::take(&mut *session.outbox.lock().recover_poison());
            if out.is_empty() {
                break;
            }
            if let Err(e) = write.data_bytes(out).await {
                session.kill(&format!("connection lost ({e})"));
                return;
            }
        }
        if session.is_dead() {
            return;
        }
    }
}

/// Dispatch replies to their waiters until the channel ends or its data
/// cannot be read on; then fail every waiter, and every later request,
/// with the reason. A reply's bytes stay in the buffer the channel
/// delivered them in, when they came whole in one: a `DATA` reply is a
/// slice of it, not a copy (`frame`).
async fn reader(
    mut read: ChannelReadHalf,
    mut framer: Framer,
    first: Vec<Bytes>,
    session: Arc<Session>,
) {
    dispatch(&session, first);
    let why = loop {
        match read.wait().await {
            Some(ChannelMsg::Data { data }) => {
                let mut replies = Vec::new();
                let cut = framer.push(data, &mut replies);
                dispatch(&session, replies);
                if let Err(e) = cut {
                    break e.to_string();
                }
            }
            Some(ChannelMsg::Eof) | Some(ChannelMsg::Close) | None => {
                break "connection lost".to_string()
            }
            Some(ChannelMsg::ExitStatus { .. }) => break "the sftp server exited".to_string(),
            Some(_) => {}
        }
    };
    session.kill(&why);
}

/// Hand the replies of one chunk of the channel's data to their waiters.
fn dispatch(session: &Arc<Session>, replies: Vec<Bytes>) {
    if replies.is_empty() {
        return;
    }
    {
        // Every reply in the chunk came in together: none of their
        // requests is waiting any more, whatever the dispatch sends.
        let mut p = session.pending.lock().recover_poison();
        let answered = p.in_flight.min(replies.len());
        p.in_flight -= answered;
        session
            .counters
            .in_flight
            .fetch_sub(answered as u64, Ordering::Relaxed);
    }
    for packet in replies {
        if packet.len() < 5 {
            continue;
        }
        let id = u32::from_be_bytes(packet[1..5].try_into().unwrap());
        let reply = Reply::parse(packet[0], packet.slice(5..));
        let waiter = session.pending.lock().recover_poison().waiters.remove(&id);
        match (waiter, reply) {
            (Some(w), reply) => w.answer(session, reply),
            // A handle opened for a request that was abandoned: close
            // it, or the server keeps it open for the session's life.
            (None, Ok(Reply::Handle(h))) => session.close_later(h),
            (None, _) => {}
        }
    }
}

/// An open handle, closed when dropped: also when the listing is abandoned
/// (a listing ahead given up, a timeout), or the server keeps it open for
/// the session's life.
pub(super) struct Closing<'c> {
    pub(super) session: &'c Arc<Session>,
    pub(super) handle: Vec<u8>,
}

impl Drop for Closing<'_> {
    fn drop(&mut self) {
        // Empty: handed on (a stream closes it).
        if !self.handle.is_empty() {
            self.session.close_later(std::mem::take(&mut self.handle));
        }
    }
}
