//! The seam's write over SFTP (`docs/contract.md` §10, §11): the guard
//! checked against the remote attributes, the content staged in a fresh
//! file next to the target, then published in one step: the standard
//! `RENAME` (OpenSSH links the staged file, so it never replaces) for a
//! create, `posix-rename@openssh.com` (`rename(2)`, atomic) for a replace.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use dsh_search_base::cancel::CancelToken;
use dsh_search_base::sync::RecoverPoison;

use super::ops::{join_all, stat};
use super::proto::{self, Reply};
use super::session::Session;
use super::{staging, SftpFs};
use crate::names::path_bytes;
use crate::seam::{errno, FileSystem, FileType, Metadata, WriteError, WriteGuard, Written};

pub(super) fn write(
    fs: &SftpFs,
    path: &Path,
    content: &[u8],
    guard: &WriteGuard,
    cancel: &CancelToken,
) -> Result<Written, WriteError> {
    // One write at a time per workspace: the guard's check and the
    // publication must not interleave with another thread's. The lock is
    // this filesystem's, so a host that is slow to answer holds up the
    // writes to itself and to no other workspace.
    let _serial = fs.writes.lock().recover_poison();
    let io_err = |e: io::Error| WriteError::Io(path.to_path_buf(), e);
    // A final symlink is followed: its target is replaced and the link
    // stays, as on the local disk (`LocalFs` publishes at the real path).
    // A missing file, or a dangling symlink (which `publish` refuses),
    // keeps its own path.
    let real = FileSystem::canonicalize(fs, path).ok();
    let target = real.as_deref().unwrap_or(path);
    let outcome = fs.run(Some(cancel), |c| async move {
        publish(&c, target, content, guard, cancel).await
    });
    match outcome {
        Ok(r) => r,
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(WriteError::Cancelled),
        Err(e) => Err(io_err(e)),
    }
}

async fn lookup(session: &Session, path: &[u8]) -> io::Result<Option<Metadata>> {
    match stat(session, path, true).await {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// `mkdir -p` of `dir`: the missing ancestors created, top down; a
/// component that is not a directory is [`WriteError::NotDirectory`].
async fn make_dirs(session: &Session, dir: &Path) -> Result<(), WriteError> {
    let io_err = |e: io::Error| WriteError::Io(dir.to_path_buf(), e);
    let mut missing: Vec<PathBuf> = Vec::new();
    let mut at = Some(dir);
    while let Some(d) = at {
        match lookup(session, path_bytes(d)).await.map_err(io_err)? {
            Some(m) if m.kind.is_dir() => break,
            Some(_) => return Err(WriteError::NotDirectory(d.to_path_buf())),
            None => missing.push(d.to_path_buf()),
        }
        at = d.parent();
    }
    for d in missing.iter().rev() {
        let r = session
            .call(proto::FXP_MKDIR, |o| {
                o.bytes(path_bytes(d)).perm(Some(0o777))
            })
            .await;
        if let Err(e) = r.and_then(Reply::into_ok) {
            // Created meanwhile by another writer: fine.
            match lookup(session, path_bytes(d)).await {
                Ok(Some(m)) if m.kind.is_dir() => {}
                _ => return Err(WriteError::Io(d.clone(), e)),
            }
        }
    }
    Ok(())
}

async fn publish(
    session: &Arc<Session>,
    path: &Path,
    content: &[u8],
    guard: &WriteGuard,
    cancel: &CancelToken,
) -> io::Result<Result<Written, WriteError>> {
    let target = path_bytes(path);
    let old = lookup(session, target).await?;
    // A dangling symlink is not a regular file: `STAT` follows it to
    // nothing, and publishing would replace the link with a file.
    if old.is_none()
        && stat(session, target, false)
            .await
            .is_ok_and(|m| m.kind.is_symlink())
    {
        return Ok(Err(WriteError::NotRegular(FileType::Symlink)));
    }
    if let Err(refused) = guard.admits(old.as_ref()) {
        return Ok(Err(refused));
    }
    if cancel.is_cancelled() {
        return Ok(Err(WriteError::Cancelled));
    }
    let parent = path.parent().unwrap_or(Path::new("/"));
    if let Err(e) = make_dirs(session, parent).await {
        return Ok(Err(e));
    }
    let mode = old.as_ref().map_or(0o600, |m| m.mode);
    let name = path
        .file_name()
        .map_or(&b""[..], |n| path_bytes(Path::new(n)));
    let mut nonce = [0u8; 8];
    getrandom::fill(&mut nonce).map_err(|e| io::Error::other(e.to_string()))?;
    let mut tmp = path_bytes(parent).to_vec();
    if tmp.last() != Some(&b'/') {
        tmp.push(b'/');
    }
    tmp.extend_from_slice(&staging::staged_name(name, u64::from_le_bytes(nonce)));
    let staged = &tmp[..];
    let flags = proto::FXF_WRITE | proto::FXF_CREAT | proto::FXF_EXCL;
    let handle = session
        .call(proto::FXP_OPEN, |o| {
            o.bytes(staged).u32(flags).perm(Some(0o600))
        })
        .await
        .and_then(Reply::into_handle)?;
    // The leftovers of killed writers in the same directory are swept
    // while the content goes out (`staging::sweep`), against the server's
    // clock as our fresh staged file shows it.
    let sweep = async {
        if let Ok(Reply::Attrs(ours)) = session.call(proto::FXP_LSTAT, |o| o.bytes(staged)).await {
            staging::sweep(session, path_bytes(parent), ours).await;
        }
    };
    let (result, ()) = tokio::join!(stage(session, &handle, staged, content, mode), sweep);
    let closed = session
        .call(proto::FXP_CLOSE, |o| o.bytes(&handle))
        .await
        .and_then(Reply::into_ok);
    let staged_ok = result.and(closed);
    let remove = || async {
        let _ = session.call(proto::FXP_REMOVE, |o| o.bytes(staged)).await;
    };
    if let Err(e) = staged_ok {
        remove().await;
        return Err(e);
    }
    if cancel.is_cancelled() {
        remove().await;
        return Ok(Err(WriteError::Cancelled));
    }
    let published = match guard {
        WriteGuard::CreateIfAbsent => {
            let r = session
                .call(proto::FXP_RENAME, |o| o.bytes(staged).bytes(target))
                .await
                .and_then(Reply::into_ok);
            if let Err(e) = r {
                remove().await;
                if lookup(session, target).await.ok().flatten().is_some() {
                    return Ok(Err(WriteError::Exists));
                }
                return Err(e);
            }
            Ok(())
        }
        _ if session.ext.posix_rename => session
            .call(proto::FXP_EXTENDED, |o| {
                o.bytes(b"posix-rename@openssh.com")
                    .bytes(staged)
                    .bytes(target)
            })
            .await
            .and_then(Reply::into_ok),
        _ => {
            // No atomic replace offered: remove, then rename (a reader
            // may see the file missing in between).
            if old.is_some() {
                session
                    .call(proto::FXP_REMOVE, |o| o.bytes(target))
                    .await
                    .and_then(Reply::into_ok)?;
            }
            session
                .call(proto::FXP_RENAME, |o| o.bytes(staged).bytes(target))
                .await
                .and_then(Reply::into_ok)
        }
    };
    if let Err(e) = published {
        remove().await;
        return Err(e);
    }
    let metadata = stat(session, target, true).await?;
    Ok(Ok(Written {
        replaced: old.is_some(),
        metadata,
    }))
}

/// Write `content` to the staged file's `handle`, every `WRITE` in flight
/// at once, the mode set exactly (the server's umask applied to the
/// open's), and `fsync@openssh.com` where offered.
async fn stage(
    session: &Arc<Session>,
    handle: &[u8],
    staged: &[u8],
    content: &[u8],
    mode: u32,
) -> io::Result<()> {
    let chunk = session.max_write.load(Ordering::Relaxed) as usize;
    for wave in content.chunks(chunk * 16) {
        let base = wave.as_ptr() as usize - content.as_ptr() as usize;
        let writes = wave
            .chunks(chunk)
            .enumerate()
            .map(|(i, piece)| {
                let at = (base + i * chunk) as u64;
                session.call(proto::FXP_WRITE, move |o| {
                    o.bytes(handle).u64(at).bytes(piece)
                })
            })
            .collect();
        for r in join_all(writes).await {
            r.and_then(Reply::into_ok)?;
        }
    }
    if mode != 0o600 {
        session
            .call(proto::FXP_SETSTAT, |o| o.bytes(staged).perm(Some(mode)))
            .await
            .and_then(Reply::into_ok)?;
    }
    if session.ext.fsync {
        let r = session
            .call(proto::FXP_EXTENDED, |o| {
                o.bytes(b"fsync@openssh.com").bytes(handle)
            })
            .await;
        match r? {
            Reply::Status(proto::FX_OK, _) => {}
            Reply::Status(c, m) => return Err(proto::status_error(c, &m)),
            _ => return Err(errno::invalid()),
        }
    }
    Ok(())
}
