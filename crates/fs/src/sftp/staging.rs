//! The files a write stages next to its target over SFTP
//! (`.NAME.<16 hex digits>.dsh-staged`), kept out of every listing, and
//! the sweep of those a killed writer left behind.
//!
//! The sweep follows the local disk's rules (`fs::local::publish`): only
//! what provably is ours, only once its writer is gone. SFTP has no lock
//! that dies with its writer, so "gone" is age: a live writer's staged file
//! is modified by every `WRITE`, and between the last one and its rename
//! there are only a few requests; one untouched for [`STALE`] by the
//! server's own clock (compared with the mtime of the file this write just
//! staged) is a leftover. "Ours": the exact name shape, a regular file
//! (not a link, not a directory), owned by the login that stages this
//! write.

use std::sync::Arc;

use super::proto::{self, Attrs, Reply};
use super::session::{Closing, Session};

/// The suffix of a staged file's name.
const SUFFIX: &[u8] = b".dsh-staged";

/// How long a staged file stays untouched before it is a leftover.
pub(super) const STALE: u32 = 15 * 60;

/// The staged file's name for a target named `name`: `.NAME.<nonce as 16
/// hex digits>.dsh-staged`.
pub(super) fn staged_name(name: &[u8], nonce: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(name.len() + 30);
    out.push(b'.');
    out.extend_from_slice(name);
    out.extend_from_slice(format!(".{nonce:016x}").as_bytes());
    out.extend_from_slice(SUFFIX);
    out
}

/// Whether `name` has the shape [`staged_name`] gives: a listing leaves it
/// out (a transient staged file of a write in progress is no workspace
/// file), and the sweep considers it.
pub(super) fn is_staged(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(b".").and_then(|r| r.strip_suffix(SUFFIX)) else {
        return false;
    };
    // `NAME.` then 16 lowercase hex digits, NAME not empty.
    rest.len() > 17
        && rest[rest.len() - 17] == b'.'
        && rest[rest.len() - 16..]
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
}

/// Remove the leftovers in the directory `dir`: staged files of a shape
/// [`is_staged`] accepts, regular, owned by `ours`'s owner and untouched
/// for [`STALE`] before `ours` (the file this write staged, just created)
/// was modified. Failures are ignored: the sweep is housekeeping, never a
/// reason for a write to fail.
pub(super) async fn sweep(session: &Arc<Session>, dir: &[u8], ours: Attrs) {
    let (Some(now), Some(owner)) = (ours.mtime, ours.uid) else {
        return;
    };
    let Ok(handle) = session
        .call(proto::FXP_OPENDIR, |o| o.bytes(dir))
        .await
        .and_then(Reply::into_handle)
    else {
        return;
    };
    let handle = Closing { session, handle };
    let mut stale = Vec::new();
    while let Ok(Reply::Name(names)) = session
        .call(proto::FXP_READDIR, |o| o.bytes(&handle.handle))
        .await
    {
        for (name, a) in names {
            let leftover = is_staged(&name)
                && a.perm.is_some_and(|p| p & 0o170_000 == 0o100_000)
                && a.uid == Some(owner)
                && a.mtime.is_some_and(|m| m.saturating_add(STALE) <= now);
            if leftover {
                stale.push(name);
            }
        }
    }
    drop(handle);
    for name in stale {
        let mut path = dir.to_vec();
        if path.last() != Some(&b'/') {
            path.push(b'/');
        }
        path.extend_from_slice(&name);
        let _ = session.call(proto::FXP_REMOVE, |o| o.bytes(&path)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_names_round_trip() {
        let n = staged_name(b"target.txt", 0x0123_4567_89ab_cdef);
        assert_eq!(n, b".target.txt.0123456789abcdef.dsh-staged");
        assert!(is_staged(&n));
        assert!(is_staged(&staged_name(b"x", u64::MAX)));
        assert!(is_staged(&staged_name(
            b".hidden.0000000000000000.dsh-staged",
            7
        )));
    }

    #[test]
    fn other_names_are_not_staged() {
        for name in [
            &b".0123456789abcdef.dsh-staged"[..],
            b"..0123456789abcdef.dsh-staged",
            b".x.0123456789ABCDEF.dsh-staged",
            b".x.0123456789abcde.dsh-staged",
            b".x-0123456789abcdef.dsh-staged",
            b"x.0123456789abcdef.dsh-staged",
            b".x.0123456789abcdef.dsh-staged~",
            b".notes.dsh-staged",
            b"",
        ] {
            assert!(!is_staged(name), "{}", String::from_utf8_lossy(name));
        }
    }
}
