//! A large remote file read in bounded pieces as the engine pulls them
//! (`Read`), as the local disk's reader is: a window of `READ`s in flight
//! ahead of the reader, each sent as soon as one is taken, so the file
//! streams at the link's pace and at most the window is held, whatever the
//! file's size. The engine's reader (grep's `FileReader`, explicit files'
//! windows, `read`'s decoder) then behaves as on the disk: a binary file
//! stops at its first NUL after one buffer, a clean miss is checked as it
//! comes.

use std::collections::VecDeque;
use std::io::{self, Read};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dsh_search_base::cancel::CancelToken;

use super::proto::{self, Reply};
use super::runtime::cancelled;
use super::session::Session;

/// `READ`s in flight per streamed file: with OpenSSH's 255 KiB reads, about
/// 4 MiB ahead of the reader (enough to keep a loopback or LAN link busy,
/// bounded whatever the file's size).
const IN_FLIGHT: usize = 16;

/// How often a wait for a reply looks at the cancellation flag.
const POLL: Duration = Duration::from_millis(20);

/// One `READ` on its way: where it reads, how much it asked for, and where
/// its reply arrives (sent there by the session's reader task).
struct Pending {
    len: u64,
    reply: mpsc::Receiver<io::Result<Reply>>,
}

/// An open remote file read in order from its start.
pub(super) struct Stream {
    session: Arc<Session>,
    handle: Vec<u8>,
    chunk: u64,
    /// Where the next `READ` reads.
    next: u64,
    /// `READ`s go up to here: a byte past the listed size at first, so
    /// that the last one comes back short and the end costs no request of
    /// its own (draft-ietf-secsh-filexfer-02 §6.4: a short read of a disk
    /// file is its end); further only when a file grew past it.
    limit: u64,
    pending: VecDeque<Pending>,
    /// The reply being served, and how much of it is.
    data: Bytes,
    pos: usize,
    eof: bool,
    timeout: Duration,
    url: String,
    cancel: Option<CancelToken>,
}

impl Stream {
    /// Stream the open `handle` of a regular file listed with `size`
    /// bytes; its first `READ`s leave now. The handle is closed when the
    /// stream is dropped.
    pub(super) fn new(
        session: Arc<Session>,
        handle: Vec<u8>,
        size: u64,
        timeout: Duration,
        url: String,
        cancel: Option<CancelToken>,
    ) -> io::Result<Stream> {
        let chunk = u64::from(session.max_read.load(Ordering::Relaxed));
        let mut s = Stream {
            session,
            handle,
            chunk,
            next: 0,
            limit: size.saturating_add(1),
            pending: VecDeque::with_capacity(IN_FLIGHT),
            data: Bytes::new(),
            pos: 0,
            eof: false,
            timeout,
            url,
            cancel,
        };
        s.top_up()?;
        Ok(s)
    }

    /// Send `READ`s until [`IN_FLIGHT`] are on their way or the limit is
    /// reached.
    fn top_up(&mut self) -> io::Result<()> {
        while !self.eof && self.pending.len() < IN_FLIGHT {
            if self.next >= self.limit {
                if !self.pending.is_empty() {
                    break;
                }
                // Every read so far came back whole: the file grew.
                self.limit = self.next + self.chunk;
            }
            let len = self.chunk.min(self.limit - self.next);
            let (tx, rx) = mpsc::sync_channel(1);
            let (at, handle) = (self.next, &self.handle);
            self.session.send_then(
                proto::FXP_READ,
                |o| o.bytes(handle).u64(at).u32(len as u32),
                move |session, reply| {
                    if let Ok(Reply::Data(d)) = &reply {
                        session.count_read(d.len());
                    }
                    // The stream may be gone (dropped early): the reply is.
                    let _ = tx.send(reply);
                },
            )?;
            self.pending.push_back(Pending { len, reply: rx });
            self.next += len;
        }
        Ok(())
    }

    /// The next piece of the file into `data`, or the end.
    fn advance(&mut self) -> io::Result<()> {
        self.top_up()?;
        let Some(front) = self.pending.pop_front() else {
            self.eof = true;
            return Ok(());
        };
        match self.wait(&front.reply)?.into_data()? {
            Some(d) => {
                if (d.len() as u64) < front.len {
                    self.end();
                }
                self.data = d;
                self.pos = 0;
            }
            None => self.end(),
        }
        // The next `READ` leaves before the engine works on this one.
        self.top_up()
    }

    /// The file ended: the `READ`s still on their way are dropped (their
    /// replies, past the end, go nowhere).
    fn end(&mut self) {
        self.eof = true;
        self.pending.clear();
    }

    /// The reply on `rx`, waiting at most the workspace's timeout and
    /// stopping once the call is cancelled.
    fn wait(&self, rx: &mpsc::Receiver<io::Result<Reply>>) -> io::Result<Reply> {
        let deadline = Instant::now() + self.timeout;
        loop {
            if self.cancel.as_ref().is_some_and(CancelToken::is_cancelled) {
                return Err(cancelled());
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{}: no answer within {} s",
                        self.url,
                        self.timeout.as_secs_f64()
                    ),
                ));
            }
            match rx.recv_timeout(POLL.min(deadline - now)) {
                Ok(reply) => return reply,
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    return Err(crate::unavailable(
                        io::ErrorKind::ConnectionAborted,
                        format!("{}: connection lost", self.url),
                    ))
                }
            }
        }
    }
}

impl Read for Stream {
    /// As `read(2)` of a regular file: as many bytes as asked for unless
    /// the file ends (the engine's reader relies on it to split lines and
    /// detect binary data where it would on the disk).
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            if self.pos == self.data.len() {
                if self.eof {
                    break;
                }
                self.advance()?;
                continue;
            }
            let k = (buf.len() - n).min(self.data.len() - self.pos);
            buf[n..n + k].copy_from_slice(&self.data[self.pos..self.pos + k]);
            self.pos += k;
            n += k;
        }
        Ok(n)
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // Sent after the `READ`s still on their way, which the server
        // answers first.
        self.session.close_later(std::mem::take(&mut self.handle));
    }
}

impl std::fmt::Debug for Stream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stream")
            .field("next", &self.next)
            .field("eof", &self.eof)
            .finish()
    }
}
