//! The operations of the seam as SFTP requests on one session, each an
//! `async fn` that sends its requests together where it can (a file's
//! `READ`s, a listing's `READDIR`s, `OPEN` with `STAT`) and waits for the
//! replies: stat, read, list, and the errno a missing path stands for.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;

use bytes::Bytes;
use dsh_search_base::cancel::CancelToken;

use super::proto::{self, Reply};
use super::runtime::cancelled;
use super::session::{Closing, Session};
use super::staging;
use crate::seam::{errno, FileType, Listing, Metadata};

/// `READDIR`s in flight per listing: OpenSSH answers each with up to 100
/// names, in order, and an `EOF` status once the directory is read. The
/// first round asks two (the names of a directory of up to 98 entries and
/// its `EOF`: most of a source tree's directories), the later ones four: four
/// from the start cost a small directory two `READDIR`s answered `EOF`
/// for nothing, a third of the requests of a listing of the medium tree
/// (BENCHMARKS.md, "The live index over SFTP").
const READDIRS_FIRST: usize = 2;
const READDIRS_IN_FLIGHT: usize = 4;
/// `READ`s in flight per file.
const READS_IN_FLIGHT: usize = 32;

/// All of `futs`, polled together (so that their requests are all in
/// flight at once), their outputs in order.
pub(super) async fn join_all<F: Future>(futs: Vec<F>) -> Vec<F::Output> {
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

/// `STAT` or `LSTAT`.
pub(super) async fn stat(session: &Session, path: &[u8], follow: bool) -> io::Result<Metadata> {
    let kind = if follow {
        proto::FXP_STAT
    } else {
        proto::FXP_LSTAT
    };
    let r = session
        .call(kind, |o| o.bytes(path))
        .await
        .and_then(Reply::into_attrs);
    Ok(refine(session, path, r).await?.metadata(path))
}

/// `r`, with a not-found or invalid-argument error made the errno the
/// disk would report.
pub(super) async fn refine<T>(session: &Session, path: &[u8], r: io::Result<T>) -> io::Result<T> {
    match r {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(not_found(session, path).await),
        // OpenSSH sends `ENAMETOOLONG` as `SSH_FX_BAD_MESSAGE`, as it
        // sends `EINVAL`: a component longer than `NAME_MAX` (255 bytes)
        // or a path of `PATH_MAX` (4096 bytes) is what the kernel refuses
        // with the former (`path_resolution(7)`).
        Err(e) if e.kind() == io::ErrorKind::InvalidInput && too_long(path) => {
            Err(errno::name_too_long())
        }
        r => r,
    }
}

/// Whether Linux refuses `path` with `ENAMETOOLONG`.
fn too_long(path: &[u8]) -> bool {
    path.len() >= 4096 || path.split(|&b| b == b'/').any(|c| c.len() > 255)
}

/// The errno behind `SSH_FX_NO_SUCH_FILE` for `path`: OpenSSH's
/// `errno_to_portable` sends `ENOTDIR` as that code too, and rg prints
/// the two differently (`Not a directory (os error 20)`). A component
/// that exists and is not a directory (or a trailing `/` after a file)
/// makes it `ENOTDIR`; the nearest existing ancestor being a directory
/// leaves it `ENOENT`. Costs requests on this error path only.
async fn not_found(session: &Session, path: &[u8]) -> io::Error {
    let mut end = path.len();
    while end > 1 && path[end - 1] == b'/' {
        end -= 1;
    }
    if end < path.len() {
        let base = &path[..end];
        if let Ok(Reply::Attrs(a)) = session.call(proto::FXP_STAT, |o| o.bytes(base)).await {
            if a.kind() != FileType::Dir {
                return errno::not_a_directory();
            }
        }
    }
    // ELOOP comes as the same code: follow the links by hand, as
    // `path_resolution(7)` would (40 of them at most).
    let mut link = path[..end].to_vec();
    for _ in 0..=40 {
        match session.call(proto::FXP_LSTAT, |o| o.bytes(&link)).await {
            Ok(Reply::Attrs(a)) if a.kind() == FileType::Symlink => {}
            _ => break,
        }
        let readlink = session.call(proto::FXP_READLINK, |o| o.bytes(&link)).await;
        let Ok(target) = readlink.and_then(Reply::into_name) else {
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
        session.call(proto::FXP_LSTAT, |o| o.bytes(&link)).await,
        Ok(Reply::Attrs(a)) if a.kind() == FileType::Symlink
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
        match session.call(proto::FXP_STAT, |o| o.bytes(parent)).await {
            Ok(Reply::Attrs(a)) if a.kind() == FileType::Dir => break,
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
    session: &Arc<Session>,
    handle: &[u8],
    size: u64,
    cancel: Option<&CancelToken>,
) -> io::Result<Bytes> {
    let chunk = u64::from(session.max_read.load(Ordering::Relaxed));
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
                session.call(proto::FXP_READ, move |o| o.bytes(handle).u64(at).u32(len))
            })
            .collect();
        for (&(at, len), reply) in ranges.iter().zip(join_all(reads).await) {
            if at != offset {
                // An earlier read came back short: read on from there.
                break;
            }
            let Some(d) = reply?.into_data()? else {
                return Ok(data.into());
            };
            offset += d.len() as u64;
            if (d.len() as u64) < len && data.is_empty() {
                // The whole file in one reply: its bytes as they came,
                // uncopied.
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
    }
}

/// Read the regular file at `path`, listed with `size` bytes, for a read
/// ahead: `OPEN`, then its `READ`s (the end-of-file probe with them), and
/// `CLOSE` without waiting for its reply.
pub(super) async fn read_listed(
    session: &Arc<Session>,
    path: &[u8],
    size: u64,
) -> io::Result<Bytes> {
    let handle = Closing {
        session,
        handle: session
            .call(proto::FXP_OPEN, |o| {
                o.bytes(path).u32(proto::FXF_READ).u32(0)
            })
            .await?
            .into_handle()?,
    };
    read_handle(session, &handle.handle, size, None).await
}

/// Open and read the file at `path`: `OPEN` with `STAT` (or, when the
/// kind is not known to be a regular file, `STAT` first: opening a FIFO
/// would block the server), then the reads.
pub(super) async fn read_whole(
    session: &Arc<Session>,
    path: &[u8],
    known_file: bool,
    max: Option<u64>,
    cancel: Option<&CancelToken>,
) -> io::Result<(Metadata, Option<Bytes>)> {
    match open_file(session, path, known_file, max, cancel, false).await? {
        (meta, Some(Opened::Whole(data))) => Ok((meta, Some(data))),
        (meta, _) => Ok((meta, None)),
    }
}

/// What [`open_file`] opened.
pub(super) enum Opened {
    /// The file's bytes, read whole.
    Whole(Bytes),
    /// Its open handle, to stream: the file is larger than [`WHOLE_MAX`].
    Handle(Vec<u8>),
}

/// Files up to this size are read whole when opened and served from
/// memory (the engine checks them in place); larger ones are streamed
/// ([`Stream`](super::stream::Stream)), so a search or a read holds a
/// bounded part of any file.
pub(super) const WHOLE_MAX: u64 = 1 << 20;

/// [`read_whole`], or, when `stream` and the file is larger than
/// [`WHOLE_MAX`], its open handle for a [`Stream`](super::stream::Stream).
pub(super) async fn open_file(
    session: &Arc<Session>,
    path: &[u8],
    known_file: bool,
    max: Option<u64>,
    cancel: Option<&CancelToken>,
    stream: bool,
) -> io::Result<(Metadata, Option<Opened>)> {
    let open = || {
        session.call(proto::FXP_OPEN, |o| {
            o.bytes(path).u32(proto::FXF_READ).u32(0)
        })
    };
    let (meta, handle) = if known_file {
        let (h, m) = tokio::join!(open(), stat(session, path, true));
        match (h, m) {
            (Ok(h), Ok(m)) => (m, h.into_handle()?),
            (Ok(h), Err(e)) => {
                if let Ok(h) = h.into_handle() {
                    session.close_later(h);
                }
                return Err(e);
            }
            (Err(e), _) => return Err(e),
        }
    } else {
        let m = stat(session, path, true).await?;
        if !m.kind.is_file() || max.is_some_and(|max| m.len > max) {
            return Ok((m, None));
        }
        (m, open().await?.into_handle()?)
    };
    let mut handle = Closing { session, handle };
    if !meta.kind.is_file() || max.is_some_and(|max| meta.len > max) {
        return Ok((meta, None));
    }
    if stream && meta.len > WHOLE_MAX {
        let h = std::mem::take(&mut handle.handle);
        return Ok((meta, Some(Opened::Handle(h))));
    }
    let data = read_handle(session, &handle.handle, meta.len, cancel).await;
    drop(handle);
    let data = data?;
    if max.is_some_and(|max| data.len() as u64 > max) {
        return Ok((meta, None));
    }
    Ok((meta, Some(Opened::Whole(data))))
}

/// List the directory at `path`: `OPENDIR`, then `READDIR`s several at a
/// time until one says `EOF`.
pub(super) async fn list_dir(
    session: &Arc<Session>,
    path: &[u8],
    listing: &mut Listing,
) -> io::Result<()> {
    let opened = session
        .call(proto::FXP_OPENDIR, |o| o.bytes(path))
        .await
        .and_then(Reply::into_handle);
    let handle = Closing {
        session,
        handle: refine(session, path, opened).await?,
    };
    let h = &handle.handle;
    let mut full = path.to_vec();
    if full.last() != Some(&b'/') {
        full.push(b'/');
    }
    let base = full.len();
    let mut in_flight = READDIRS_FIRST;
    let result = 'outer: loop {
        let reads = (0..in_flight)
            .map(|_| session.call(proto::FXP_READDIR, move |o| o.bytes(h)))
            .collect();
        in_flight = READDIRS_IN_FLIGHT;
        for reply in join_all(reads).await {
            match reply.and_then(Reply::into_names) {
                Ok(Some(names)) => {
                    for (name, attrs) in names {
                        // A write's staged file (this process's or
                        // another's) is no workspace file: it is there
                        // only until the write publishes it.
                        if name == b"." || name == b".." || staging::is_staged(&name) {
                            continue;
                        }
                        full.truncate(base);
                        full.extend_from_slice(&name);
                        let meta = attrs.metadata(&full);
                        if meta.kind == FileType::Unknown {
                            listing.push(&name, FileType::Unknown);
                        } else {
                            listing.push_with_metadata(&name, meta.kind, meta);
                        }
                    }
                }
                Ok(None) => break 'outer Ok(()),
                Err(e) => break 'outer Err(e),
            }
        }
    };
    drop(handle);
    result
}
