//! Names as bytes on every platform.
//!
//! On Unix a name is its bytes. Elsewhere the seam sees the `OsStr`'s
//! encoded bytes (WTF-8 on Windows), and bytes that are not valid there
//! become a lossily decoded name: the crate forbids `unsafe`, and a
//! Windows name always round-trips through `to_string_lossy` unless it
//! holds an unpaired surrogate.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::Path;

/// The bytes of `s`.
pub fn os_bytes(s: &OsStr) -> &[u8] {
    #[cfg(unix)]
    {
        std::os::unix::ffi::OsStrExt::as_bytes(s)
    }
    #[cfg(not(unix))]
    {
        s.as_encoded_bytes()
    }
}

/// The bytes of a path.
pub fn path_bytes(p: &Path) -> &[u8] {
    os_bytes(p.as_os_str())
}

/// The name whose bytes are `b`.
pub fn os_str(b: &[u8]) -> Cow<'_, OsStr> {
    #[cfg(unix)]
    {
        Cow::Borrowed(std::os::unix::ffi::OsStrExt::from_bytes(b))
    }
    #[cfg(not(unix))]
    {
        match std::str::from_utf8(b) {
            Ok(s) => Cow::Borrowed(OsStr::new(s)),
            Err(_) => Cow::Owned(String::from_utf8_lossy(b).into_owned().into()),
        }
    }
}

/// The path whose bytes are `b`.
pub fn path(b: &[u8]) -> Cow<'_, Path> {
    match os_str(b) {
        Cow::Borrowed(s) => Cow::Borrowed(Path::new(s)),
        Cow::Owned(s) => Cow::Owned(s.into()),
    }
}

/// The owned path whose bytes are `b`.
pub fn path_buf(b: Vec<u8>) -> std::path::PathBuf {
    #[cfg(unix)]
    {
        <std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(b).into()
    }
    #[cfg(not(unix))]
    {
        path(&b).into_owned()
    }
}

/// The separator `Path::join` puts between a directory and a name: `\` on
/// Windows, `/` elsewhere. rg names every walked entry by `Path::join` of
/// its directory and its name (`ignore`'s `DirEntryRaw::from_entry`), so
/// `rg.exe` prints `src\main.rs` while the path the user typed keeps its
/// own separators (`src/sub\a.txt`).
pub const JOIN_SEP: u8 = if cfg!(windows) { b'\\' } else { b'/' };

/// Whether `b` is a path separator: `/`, and on Windows `\` too.
pub fn is_sep(b: u8) -> bool {
    b == b'/' || (cfg!(windows) && b == b'\\')
}

/// Whether `p` ends with a separator as `Path::join` tests it before it
/// adds one.
pub fn ends_with_sep(p: &[u8]) -> bool {
    p.last().is_some_and(|&b| is_sep(b))
}

/// Whether `Path::join` puts [`JOIN_SEP`] between `dir` and a name: not
/// after an empty path or a separator, and on Windows not after a bare
/// drive (`C:` joined with `x` is `C:x`, std's `PathBuf::push`).
pub fn join_needs_sep(dir: &[u8]) -> bool {
    let bare_drive =
        cfg!(windows) && dir.len() == 2 && dir[1] == b':' && dir[0].is_ascii_alphabetic();
    !dir.is_empty() && !ends_with_sep(dir) && !bare_drive
}

/// `p` without trailing separators, unless they are its root (`C:\`,
/// `\\srv\share\`, which have no parent): `GetCurrentDirectoryW`
/// reports `C:\w` for a directory entered as `C:\w\`.
#[cfg(windows)]
pub fn trim_trailing_separators(p: std::path::PathBuf) -> std::path::PathBuf {
    let mut b = path_bytes(&p).to_vec();
    while ends_with_sep(&b) && path(&b).parent().is_some() {
        b.pop();
    }
    path_buf(b)
}
