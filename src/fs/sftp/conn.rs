//! One SSH connection and the SFTP sessions on it: the host key checked
//! against `known_hosts`, key authentication (a key file or the agent), and
//! in each session requests multiplexed by id so that any number are in
//! flight at once (`docs/contract.md` §11).

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use russh::client::{self, Handle, Msg};
use russh::keys::{self, PrivateKeyWithHashAlg, PublicKeyOrCertificate};
use russh::{ChannelMsg, ChannelReadHalf, ChannelWriteHalf};
use tokio::sync::{oneshot, Notify};

use super::known_hosts::{self, Verdict};
use super::proto::{self, Out, Reply};

/// Where and as whom to connect.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) user: String,
    pub(crate) identity: Option<PathBuf>,
    pub(crate) known_hosts: PathBuf,
}

impl Target {
    /// `sftp://USER@HOST:PORT`, how errors name the host.
    pub(crate) fn url(&self) -> String {
        format!("sftp://{}@{}:{}", self.user, self.host, self.port)
    }
}

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
type Then = Box<dyn FnOnce(&Arc<Conn>, io::Result<Reply>) + Send>;

/// What a reply goes to: a task waiting for it, or a continuation run
/// by the reader as soon as it comes (which may send the next request
/// then and there, without waking anything).
enum Waiter {
    Task(oneshot::Sender<io::Result<Reply>>),
    Then(Then),
}

impl Waiter {
    fn answer(self, conn: &Arc<Conn>, reply: io::Result<Reply>) {
        match self {
            Waiter::Task(tx) => {
                let _ = tx.send(reply);
            }
            Waiter::Then(f) => f(conn, reply),
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
pub(crate) struct Conn {
    /// The connection, which lives as long as its sessions.
    ssh: Arc<Handle<Checker>>,
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

/// The connection's handler: checks the server's key strictly against
/// `known_hosts` and remembers why it refused one.
pub(crate) struct Checker {
    host: String,
    port: u16,
    known_hosts: PathBuf,
    refusal: Arc<Mutex<Option<String>>>,
}

impl client::Handler for Checker {
    type Error = russh::Error;

    async fn check_server_key(
        &mut self,
        key: &PublicKeyOrCertificate,
    ) -> Result<bool, Self::Error> {
        let key = match key {
            PublicKeyOrCertificate::PublicKey { key, .. } => key,
            PublicKeyOrCertificate::Certificate(_) => {
                *self.refusal.lock().unwrap() =
                    Some("the server presented a host certificate, which is not supported".into());
                return Ok(false);
            }
        };
        let shown = self.known_hosts.display();
        let text = match std::fs::read(&self.known_hosts) {
            Ok(text) => text,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => {
                *self.refusal.lock().unwrap() = Some(format!(
                    "cannot check the host key against {shown}: {}",
                    super::io_text(&e)
                ));
                return Ok(false);
            }
        };
        let name = known_hosts::host_name(&self.host, self.port);
        let alg = key.algorithm();
        let verdict = match known_hosts::check(&text, &self.host, self.port, key) {
            Verdict::Trusted => return Ok(true),
            Verdict::Revoked(line) => format!(
                "host key revoked: the server's {alg} key is marked @revoked in {shown} line {line}"
            ),
            Verdict::Changed(line) => format!(
                "host key changed: the server's {alg} key differs from the one in {shown} line {line}"
            ),
            Verdict::Unknown {
                cert_authority: Some(line),
            } => format!(
                "host key not known: {name} is named only by the @cert-authority line {line} of \
                 {shown}, and host certificates are not supported (add the host's key with \
                 ssh-keyscan)"
            ),
            Verdict::Unknown {
                cert_authority: None,
            } => format!(
                "host key not known: no {alg} key for {name} in {shown} (add it with ssh-keyscan)"
            ),
        };
        *self.refusal.lock().unwrap() = Some(verdict);
        Ok(false)
    }
}

/// The session ended: an error of the whole workspace, reported once.
fn lost(url: &str, why: &str) -> io::Error {
    crate::fs::unavailable(io::ErrorKind::ConnectionAborted, format!("{url}: {why}"))
}

/// Connect and authenticate: a connection that carries the sessions of
/// [`Conn::start`].
pub(crate) async fn connect(
    target: &Target,
    counters: &Counters,
) -> io::Result<Arc<Handle<Checker>>> {
    let url = target.url();
    let fail = |what: String| io::Error::other(format!("{url}: {what}"));
    let config = Arc::new(client::Config {
        nodelay: true,
        // The SFTP window: reads of 255 KiB several at once.
        window_size: 16 * 1024 * 1024,
        maximum_packet_size: 64 * 1024,
        // AES-GCM first: with the processor's AES instructions it
        // costs both ends a fraction of ChaCha20-Poly1305 (russh's
        // first choice) per byte, and a search moves every byte it
        // reads. The rest of the list is russh's own.
        preferred: russh::Preferred {
            cipher: std::borrow::Cow::Borrowed(&[
                russh::cipher::AES_128_GCM,
                russh::cipher::AES_256_GCM,
                russh::cipher::CHACHA20_POLY1305,
                russh::cipher::AES_256_CTR,
                russh::cipher::AES_192_CTR,
                russh::cipher::AES_128_CTR,
            ]),
            ..Default::default()
        },
        ..Default::default()
    });
    let refusal = Arc::new(Mutex::new(None));
    let checker = Checker {
        host: target.host.clone(),
        port: target.port,
        known_hosts: target.known_hosts.clone(),
        refusal: refusal.clone(),
    };
    let addr = (target.host.as_str(), target.port);
    let mut ssh = match client::connect(config, addr, checker).await {
        Ok(h) => h,
        Err(e) => {
            if let Some(why) = refusal.lock().unwrap().take() {
                return Err(io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("{url}: {why}"),
                ));
            }
            return Err(match e {
                russh::Error::IO(io) => fail(format!("cannot connect: {}", super::io_text(&io))),
                e => fail(format!("cannot connect: {e}")),
            });
        }
    };
    authenticate(&mut ssh, target, &url).await?;
    counters.connects.fetch_add(1, Ordering::Relaxed);
    Ok(Arc::new(ssh))
}

impl Conn {
    /// Start an SFTP session on `ssh` (a channel running the subsystem,
    /// its own `sftp-server` on the host) and negotiate version 3.
    pub(crate) async fn start(
        ssh: &Arc<Handle<Checker>>,
        url: &str,
        counters: Arc<Counters>,
    ) -> io::Result<Arc<Conn>> {
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
        let init = Out(vec![0, 0, 0, 0, proto::FXP_INIT]).u32(3).finish();
        write
            .data_bytes(init)
            .await
            .map_err(|e| fail(format!("cannot start the sftp subsystem: {e}")))?;
        let mut buf = Vec::new();
        let version = loop {
            if let Some(p) = take_packet(&mut buf) {
                break p;
            }
            match read.wait().await {
                Some(ChannelMsg::Data { data }) => buf.extend_from_slice(&data),
                Some(ChannelMsg::ExitStatus { .. })
                | Some(ChannelMsg::Eof)
                | Some(ChannelMsg::Close)
                | None => return Err(fail("the server has no sftp subsystem".into())),
                Some(_) => {}
            }
        };
        if version.first() != Some(&proto::FXP_VERSION) {
            return Err(fail("the server did not answer the SFTP handshake".into()));
        }
        let mut r = proto::In(&version[1..]);
        let v = r.u32()?;
        if v != 3 {
            return Err(fail(format!("the server speaks SFTP version {v}, not 3")));
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
        let conn = Arc::new(Conn {
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
            // draft-ietf-secsh-filexfer-02 §3: servers serve at least 32 KiB.
            max_read: AtomicU32::new(32 * 1024),
            max_write: AtomicU32::new(32 * 1024),
            counters,
            url: url.to_string(),
        });
        tokio::spawn(reader(read, buf, conn.clone()));
        tokio::spawn(writer(write, conn.clone()));
        if ext.limits {
            // limits@openssh.com: max-packet, max-read, max-write, max-open.
            if let Ok(Reply::Extended(body)) = conn
                .call(proto::FXP_EXTENDED, |o| o.bytes(b"limits@openssh.com"))
                .await
            {
                let mut r = proto::In(&body);
                if let (Ok(_), Ok(rd), Ok(wr)) = (r.u64(), r.u64(), r.u64()) {
                    let clamp = |n: u64| n.clamp(32 * 1024, 255 * 1024) as u32;
                    conn.max_read.store(clamp(rd), Ordering::Relaxed);
                    conn.max_write.store(clamp(wr), Ordering::Relaxed);
                }
            }
        }
        Ok(conn)
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
        self.pending.lock().unwrap().dead.is_some()
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
            let mut p = self.pending.lock().unwrap();
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
            let mut out = self.outbox.lock().unwrap();
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
        let guard = Abandon { conn: self, id };
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
        then: impl FnOnce(&Arc<Conn>, io::Result<Reply>) + Send + 'static,
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

    fn kill(self: &Arc<Conn>, why: &str) {
        let waiters = {
            let mut p = self.pending.lock().unwrap();
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
    conn: &'c Conn,
    id: u32,
}

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        self.conn.pending.lock().unwrap().waiters.remove(&self.id);
    }
}

/// One whole packet (type byte onwards) off the front of `buf`.
fn take_packet(buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let len = u32::from_be_bytes(buf.get(..4)?.try_into().unwrap()) as usize;
    if buf.len() < 4 + len {
        return None;
    }
    let packet = buf[4..4 + len].to_vec();
    buf.drain(..4 + len);
    Some(packet)
}

/// Send what the outbox holds, as it accumulates, until the session ends.
async fn writer(write: ChannelWriteHalf<Msg>, conn: Arc<Conn>) {
    loop {
        conn.flush.notified().await;
        loop {
            let out = std::mem::take(&mut *conn.outbox.lock().unwrap());
            if out.is_empty() {
                break;
            }
            if let Err(e) = write.data_bytes(out).await {
                conn.kill(&format!("connection lost ({e})"));
                return;
            }
        }
        if conn.is_dead() {
            return;
        }
    }
}

/// The whole packets (type byte onwards) at the front of `chunk`, as
/// slices of it, and how many bytes they take.
fn packets(chunk: &Bytes) -> (Vec<Bytes>, usize) {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(head) = chunk.get(at..at + 4) {
        let len = u32::from_be_bytes(head.try_into().unwrap()) as usize;
        if chunk.len() - at - 4 < len {
            break;
        }
        out.push(chunk.slice(at + 4..at + 4 + len));
        at += 4 + len;
    }
    (out, at)
}

/// Dispatch replies to their waiters until the channel ends; then fail
/// every waiter, and every later request, with the reason. A reply's bytes
/// stay in the buffer the channel delivered them in: a `DATA` reply is a
/// slice of it, not a copy.
async fn reader(mut read: ChannelReadHalf, mut partial: Vec<u8>, conn: Arc<Conn>) {
    let mut chunk = Bytes::from(std::mem::take(&mut partial));
    let why = loop {
        let (replies, used) = packets(&chunk);
        partial.extend_from_slice(&chunk[used..]);
        if !replies.is_empty() {
            // Every reply in the chunk came in together: none of their
            // requests is waiting any more, whatever the dispatch sends.
            let mut p = conn.pending.lock().unwrap();
            let answered = p.in_flight.min(replies.len());
            p.in_flight -= answered;
            conn.counters
                .in_flight
                .fetch_sub(answered as u64, Ordering::Relaxed);
        }
        for packet in replies {
            if packet.len() < 5 {
                continue;
            }
            let id = u32::from_be_bytes(packet[1..5].try_into().unwrap());
            let reply = Reply::parse(packet[0], packet.slice(5..));
            let waiter = conn.pending.lock().unwrap().waiters.remove(&id);
            match (waiter, reply) {
                (Some(w), reply) => w.answer(&conn, reply),
                // A handle opened for a request that was abandoned: close
                // it, or the server keeps it open for the session's life.
                (None, Ok(Reply::Handle(h))) => conn.close_later(h),
                (None, _) => {}
            }
        }
        match read.wait().await {
            Some(ChannelMsg::Data { data }) => {
                chunk = if partial.is_empty() {
                    // Whole packets in a chunk of their own (the usual
                    // case): sliced where they are.
                    data
                } else {
                    partial.extend_from_slice(&data);
                    Bytes::from(std::mem::take(&mut partial))
                };
            }
            Some(ChannelMsg::Eof) | Some(ChannelMsg::Close) | None => break "connection lost",
            Some(ChannelMsg::ExitStatus { .. }) => break "the sftp server exited",
            Some(_) => chunk = Bytes::new(),
        }
    };
    conn.kill(why);
}

/// Authenticate with the identity file, else with each of the agent's keys.
async fn authenticate(ssh: &mut Handle<Checker>, target: &Target, url: &str) -> io::Result<()> {
    let denied =
        |what: String| io::Error::new(io::ErrorKind::PermissionDenied, format!("{url}: {what}"));
    if let Some(path) = &target.identity {
        let key = keys::load_secret_key(path, None).map_err(|e| {
            io::Error::other(format!(
                "{url}: cannot load the identity {}: {e}",
                path.display()
            ))
        })?;
        let hash = if key.algorithm().is_rsa() {
            ssh.best_supported_rsa_hash().await.ok().flatten().flatten()
        } else {
            None
        };
        let result = ssh
            .authenticate_publickey(
                &target.user,
                PrivateKeyWithHashAlg::new(Arc::new(key), hash),
            )
            .await
            .map_err(|e| io::Error::other(format!("{url}: authentication failed: {e}")))?;
        if result.success() {
            return Ok(());
        }
        return Err(denied(format!(
            "the server refused the key {} for user {}",
            path.display(),
            target.user
        )));
    }
    let mut agent = connect_agent().await.map_err(|e| {
        denied(format!(
            "no --identity and no usable SSH agent ({AGENT_PLACE}): {e}"
        ))
    })?;
    let identities = agent
        .request_identities()
        .await
        .map_err(|e| denied(format!("the SSH agent cannot list its keys: {e}")))?;
    for id in &identities {
        let key = id.public_key().into_owned();
        let hash = if key.algorithm().is_rsa() {
            ssh.best_supported_rsa_hash().await.ok().flatten().flatten()
        } else {
            None
        };
        if let Ok(r) = ssh
            .authenticate_publickey_with(&target.user, key, hash, &mut agent)
            .await
        {
            if r.success() {
                return Ok(());
            }
        }
    }
    Err(denied(format!(
        "the server refused the SSH agent's {} key(s) for user {}",
        identities.len(),
        target.user
    )))
}

/// Where the SSH agent is looked for, as errors name it.
#[cfg(unix)]
const AGENT_PLACE: &str = "SSH_AUTH_SOCK";
/// Where the SSH agent is looked for, as errors name it.
#[cfg(windows)]
const AGENT_PLACE: &str = r"SSH_AUTH_SOCK, or the pipe \\.\pipe\openssh-ssh-agent";

/// The SSH agent as OpenSSH's `ssh` finds it: on Unix the socket named by
/// `SSH_AUTH_SOCK`; on Windows the named pipe `SSH_AUTH_SOCK` names, or
/// else the Windows OpenSSH agent's own pipe (OpenSSH-for-Windows'
/// `ssh_get_authentication_socket` default).
async fn connect_agent() -> Result<
    keys::agent::client::AgentClient<Box<dyn keys::agent::client::AgentStream + Send + Unpin>>,
    keys::Error,
> {
    use keys::agent::client::AgentClient;
    #[cfg(unix)]
    let client = AgentClient::connect_env().await?;
    #[cfg(windows)]
    let client = {
        let pipe = std::env::var_os("SSH_AUTH_SOCK")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| r"\\.\pipe\openssh-ssh-agent".into());
        AgentClient::connect_named_pipe(pipe).await?
    };
    Ok(AgentClient::connect(client.into_inner()))
}
