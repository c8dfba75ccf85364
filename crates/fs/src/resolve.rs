//! Path resolution for the file tools and the guard (`seed-reference.md`
//! §6.1), on the seam: the display path is the lexical absolute join of the
//! workdir and the requested path; the key is the real path, or for a
//! missing file the real path of its nearest existing ancestor plus the
//! missing suffix. Every question to the filesystem (a realpath) goes to
//! the workspace's [`DynFileSystem`], never to the host disk.

use std::io;
use std::path::{Component, Path, PathBuf};

use super::{DynFileSystem, FsError, FsErrorCode, Verb};

/// A path as the tools know it after resolution.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedPath {
    /// What the model sees: the lexical absolute join of the workdir and the
    /// requested path (symlinks not resolved).
    pub display: PathBuf,
    /// The identity of the file: two paths that name the same file (through
    /// symlinks) have the same key. Locks and observations are keyed by it.
    pub key: PathBuf,
}

impl ResolvedPath {
    /// The display path as text (lossy for a non-UTF-8 path).
    pub fn display_str(&self) -> String {
        self.display.to_string_lossy().into_owned()
    }

    /// The key as text (lossy for a non-UTF-8 path), as the observation
    /// policy and the session state compare it: on Windows in the case
    /// Windows compares names in (`windows_upcase`), so that `src\Main.rs`
    /// and `SRC\main.rs` are one file there, even when it does not exist
    /// yet (the missing suffix of a key is the path as typed). Elsewhere
    /// the key itself: Linux names are case-sensitive; macOS is left as
    /// Linux (README "Platforms": its default filesystem ignores case too,
    /// so two spellings of one file are one only where the real path
    /// gives both the case on disk).
    pub fn key_str(&self) -> String {
        let key = self.key.to_string_lossy();
        if cfg!(windows) {
            windows_upcase(&key)
        } else {
            key.into_owned()
        }
    }
}

/// `s` in the case NTFS compares names in: each UTF-16 unit mapped through
/// the volume's upcase table, as `RtlUpcaseUnicodeString` does. That table
/// is Unicode's simple uppercase mapping of the Basic Multilingual Plane,
/// so: a character of the BMP whose uppercase is one character becomes
/// that character; one whose uppercase is several (`ß`, `ŉ`) and one
/// outside the BMP (no upcase entry: the table is indexed by one UTF-16
/// unit) stay as they are. Pure, so that it is tested on every platform.
pub fn windows_upcase(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.len_utf16() != 1 {
                return c;
            }
            let mut up = c.to_uppercase();
            match (up.next(), up.next()) {
                (Some(u), None) if u.len_utf16() == 1 => u,
                _ => c,
            }
        })
        .collect()
}

/// Whether `path` has a `..` segment: between separators or at either end.
/// The separators are Node's `path.sep` and `/`: `\` is one on Windows.
pub(crate) fn has_dotdot_segment(path: &str) -> bool {
    path.split(|c| c == '/' || (cfg!(windows) && c == '\\'))
        .any(|seg| seg == "..")
}

/// Resolve `path` against `cwd` on `fs`; a failure says `cannot resolve`.
pub(crate) fn resolve(
    fs: &dyn DynFileSystem,
    path: &str,
    cwd: &Path,
) -> Result<ResolvedPath, FsError> {
    resolve_for(fs, Verb::Resolve, path, cwd)
}

/// [`resolve`] for a tool that will `verb` (read, write, edit) the file:
/// a path naming a Windows device is refused with that verb.
pub(crate) fn resolve_for(
    fs: &dyn DynFileSystem,
    verb: Verb,
    path: &str,
    cwd: &Path,
) -> Result<ResolvedPath, FsError> {
    if dsh_search_base::js::is_blank(path) {
        return Err(FsError::new(
            FsErrorCode::NotFound,
            "file_path must be a non-empty string",
        ));
    }
    // A relative workdir can only mean one relative to the process.
    let cwd = std::path::absolute(cwd).unwrap_or_else(|_| cwd.to_path_buf());
    let display = lexical_path(fs, path, &cwd);
    let shown = display.to_string_lossy().into_owned();
    if path.contains('\0') {
        // Shown escaped: a raw NUL in a message helps nobody.
        let shown = shown.replace('\0', "\\0");
        return Err(FsError::cannot(
            FsErrorCode::NotFound,
            Verb::Resolve,
            &shown,
            "the path contains a NUL byte",
        ));
    }
    // Before any question to the filesystem: on Windows even the realpath
    // of `src\nul.txt` opens the device NUL, and `con` waits on a console.
    // The path as typed: what the model named, not the workdir above it.
    if cfg!(windows) {
        if let Some(name) = reserved_segment(path) {
            return Err(reserved_error(verb, &shown, name));
        }
    }
    let key = real_key(fs, &display).map_err(|e| match e.kind() {
        io::ErrorKind::NotADirectory => FsError::cannot(
            FsErrorCode::NotFound,
            Verb::Resolve,
            &shown,
            "a parent path segment is not a directory",
        ),
        _ => FsError::io(Verb::Resolve, &shown, &e),
    })?;
    Ok(ResolvedPath { display, key })
}

/// The first segment of `path` (separated by `/` or `\`) that Windows
/// takes for a device, whatever the directory it is in: `CON`, `PRN`, `AUX`, `NUL`, `COM0`–`COM9`,
/// `LPT0`–`LPT9` (and `COM¹²³`, `LPT¹²³`), in any case, with or without an
/// extension (`aux.txt`, `nul.tar.gz`), with trailing dots or spaces
/// (`NUL.`, `nul .txt`): Windows cuts a name at its first `.` or `:` and
/// drops the spaces before it (Microsoft's "Naming Files, Paths, and
/// Namespaces"; `RtlIsDosDeviceName_U`); and `CONIN$`, `CONOUT$`, the
/// console's own names. Pure, so that it is tested on every platform; only
/// Windows refuses what it finds.
pub fn reserved_segment(path: &str) -> Option<&str> {
    path.split(['/', '\\']).find(|seg| is_reserved_name(seg))
}

/// Whether one file name is a Windows device name ([`reserved_segment`]).
pub(crate) fn is_reserved_name(name: &str) -> bool {
    let base = name.split(['.', ':']).next().unwrap_or("");
    let base = base.trim_end_matches(' ').to_ascii_uppercase();
    if ["CON", "PRN", "AUX", "NUL", "CONIN$", "CONOUT$"].contains(&base.as_str()) {
        return true;
    }
    let Some(n) = base
        .strip_prefix("COM")
        .or_else(|| base.strip_prefix("LPT"))
    else {
        return false;
    };
    let mut digits = n.chars();
    matches!(
        (digits.next(), digits.next()),
        (Some('0'..='9' | '\u{b9}' | '\u{b2}' | '\u{b3}'), None)
    )
}

/// The file tools' refusal of a device name on Windows.
pub(crate) fn reserved_error(verb: Verb, shown: &str, name: &str) -> FsError {
    FsError::cannot(
        FsErrorCode::NotRegularFile,
        verb,
        shown,
        &format!("\"{name}\" is a reserved device name on Windows"),
    )
}

/// The display path of `path` in the absolute workdir `cwd`: the lexical
/// join, on the workdir's realpath when either has a `..` segment (on the
/// workdir as is when that fails), so that `..` climbs out of the real
/// directory rather than out of a symlink's lexical parent; the seed does
/// the same before its lexical join. The guard resolves `file_path` with
/// this function too, so both name the same file.
pub fn lexical_path(fs: &dyn DynFileSystem, path: &str, cwd: &Path) -> PathBuf {
    let dotdot = has_dotdot_segment(path) || has_dotdot_segment(&cwd.to_string_lossy());
    let real = if dotdot {
        fs.canonicalize(cwd).ok().map(shown_form)
    } else {
        None
    };
    lexical_join(real.as_deref().unwrap_or(cwd), Path::new(path))
}

/// A real path as the file tools show it. On Windows, without the
/// verbatim prefix `std::fs::canonicalize` returns (Node's
/// `fs.realpathSync` has none): `\\?\C:\x` is `C:\x`,
/// `\\?\UNC\srv\share\x` is `\\srv\share\x`; a verbatim path with no
/// other spelling (a volume GUID) is kept. Elsewhere, unchanged.
pub fn shown_form(real: PathBuf) -> PathBuf {
    #[cfg(windows)]
    {
        use std::path::Prefix;
        let mut rest = real.components();
        let mut out = match rest.next() {
            Some(Component::Prefix(p)) => match p.kind() {
                Prefix::VerbatimDisk(d) => PathBuf::from(format!("{}:", char::from(d))),
                Prefix::VerbatimUNC(server, share) => {
                    let mut s = std::ffi::OsString::from(r"\\");
                    s.push(server);
                    s.push(r"\");
                    s.push(share);
                    PathBuf::from(s)
                }
                _ => return real,
            },
            _ => return real,
        };
        out.push(std::path::MAIN_SEPARATOR_STR);
        for c in rest.filter(|c| !matches!(c, Component::RootDir)) {
            out.push(c.as_os_str());
        }
        out
    }
    #[cfg(not(windows))]
    real
}

/// `base` joined with `path` (an absolute `path` replaces it), with `.`
/// dropped and `..` applied lexically, as Node's `path.resolve` does. On
/// Windows the result keeps its drive or UNC prefix and every separator is
/// `\` (`path.win32.resolve`: `C:/w/./a` is `C:\w\a`); `..` never
/// climbs above the root. A path on a drive without a root (`C:x`) is
/// relative to the base on the base's drive and to the drive's root on
/// another (Node's `path.win32.resolve` when no per-drive `=D:`
/// environment variable is set), as rg reaches it from its CWD.
pub fn lexical_join(base: &Path, path: &Path) -> PathBuf {
    let joined = match drive_relative(base, path) {
        Some(joined) => joined,
        None => base.join(path),
    };
    let mut out = PathBuf::new();
    if let Some(Component::Prefix(prefix)) = joined.components().next() {
        out.push(prefix.as_os_str());
    }
    out.push(std::path::MAIN_SEPARATOR_STR);
    for comp in joined.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(seg) => out.push(seg),
        }
    }
    out
}

/// `path` (`D:x`, a drive without a root) resolved from `base`: `base`
/// joined with `x` when `base` is on drive `D:` (either case), else
/// `D:\x`. `None` for any other path, and always on Unix.
pub fn drive_relative(base: &Path, path: &Path) -> Option<PathBuf> {
    use std::path::Prefix;
    let drive = |p: &Path| match p.components().next() {
        Some(Component::Prefix(x)) => match x.kind() {
            Prefix::Disk(d) | Prefix::VerbatimDisk(d) => Some(d.to_ascii_uppercase()),
            _ => None,
        },
        _ => None,
    };
    if !cfg!(windows) || path.has_root() {
        return None;
    }
    let d = drive(path)?;
    let rest: PathBuf = path.components().skip(1).collect();
    if drive(base) == Some(d) {
        Some(base.join(rest))
    } else {
        Some(PathBuf::from(format!("{}:\\", char::from(d))).join(rest))
    }
}

/// The real path of `path`, or of its nearest existing ancestor with the
/// missing suffix appended.
fn real_key(fs: &dyn DynFileSystem, path: &Path) -> io::Result<PathBuf> {
    let mut suffix: Vec<&std::ffi::OsStr> = Vec::new();
    let mut cur = path;
    loop {
        match fs.canonicalize(cur) {
            Ok(mut real) => {
                for seg in suffix.iter().rev() {
                    real.push(seg);
                }
                return Ok(real);
            }
            // Under Wine 8 `std::fs::canonicalize` (`GetFinalPathNameByHandleW`)
            // fails with ERROR_MORE_DATA (234) for a path past `MAX_PATH`
            // (`tests/windows.rs`, `paths_past_max_path`); Windows returns
            // such paths. The key is then the lexical path: only a link on a
            // path that long is not seen through.
            Err(e) if cfg!(windows) && e.raw_os_error() == Some(234) => {
                return Ok(path.to_path_buf());
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                match (cur.parent(), cur.file_name()) {
                    (Some(parent), Some(name)) => {
                        suffix.push(name);
                        cur = parent;
                    }
                    _ => return Err(e),
                }
            }
            Err(e) => return Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dotdot_segments() {
        assert!(has_dotdot_segment(".."));
        assert!(has_dotdot_segment("a/../b"));
        assert!(has_dotdot_segment("a/.."));
        assert!(has_dotdot_segment("../a"));
        assert!(!has_dotdot_segment("a..b/..c"));
        assert!(!has_dotdot_segment("..."));
    }

    #[test]
    fn reserved_names_in_any_case_directory_and_form() {
        for name in [
            "CON",
            "con",
            "Prn",
            "AUX",
            "nul",
            "NUL.",
            "NUL..",
            "NUL ",
            "nul .txt",
            "aux.txt",
            "Nul.tar.gz",
            "COM1",
            "com9",
            "COM0",
            "LPT1.log",
            "lpt5",
            "COM\u{b9}",
            "lpt\u{b3}.txt",
            "CONIN$",
            "conout$",
            "nul:stream",
        ] {
            assert!(is_reserved_name(name), "{name:?}");
        }
        for name in [
            "CONSOLE",
            "nul_",
            "xnul",
            " NUL",
            "COM",
            "COM10",
            "LPT",
            "lpt1x",
            "COM\u{b4}",
            "null.txt",
            "auxiliary",
            ".nul",
            "main.rs",
            "",
        ] {
            assert!(!is_reserved_name(name), "{name:?}");
        }
        assert_eq!(reserved_segment(r"src\nul.txt"), Some("nul.txt"));
        assert_eq!(reserved_segment("src/Aux.c"), Some("Aux.c"));
        assert_eq!(reserved_segment(r"C:\w\CON\x.rs"), Some("CON"));
        assert_eq!(reserved_segment(r"\\.\COM1"), Some("COM1"));
        assert_eq!(reserved_segment(r"C:\w\src/main.rs"), None);
        assert_eq!(reserved_segment(".."), None);
        let e = reserved_error(Verb::Read, "/w/src/nul.txt", "nul.txt");
        assert_eq!(
            e.message,
            r#"cannot read "/w/src/nul.txt": "nul.txt" is a reserved device name on Windows"#
        );
        assert_eq!(e.code, FsErrorCode::NotRegularFile);
    }

    #[test]
    fn windows_upcase_is_the_simple_uppercase_of_the_bmp() {
        assert_eq!(
            windows_upcase(r"c:\Users\Me\src\Main.rs"),
            r"C:\USERS\ME\SRC\MAIN.RS"
        );
        assert_eq!(windows_upcase("\u{e9}t\u{e9}.txt"), "\u{c9}T\u{c9}.TXT");
        assert_eq!(windows_upcase("\u{3c3}\u{3c2}"), "\u{3a3}\u{3a3}");
        assert_eq!(
            windows_upcase("\u{444}\u{430}\u{439}\u{43b}"),
            "\u{424}\u{410}\u{419}\u{41b}"
        );
        // Several characters in uppercase: kept (the simple mapping).
        assert_eq!(windows_upcase("stra\u{df}e"), "STRA\u{df}E");
        assert_eq!(windows_upcase("\u{149}"), "\u{149}");
        // Outside the BMP: no entry in the upcase table.
        assert_eq!(windows_upcase("\u{10428}"), "\u{10428}");
        // Already upper, digits, separators: unchanged.
        assert_eq!(windows_upcase(r"\\?\C:\A1_-.~"), r"\\?\C:\A1_-.~");
    }

    #[test]
    fn key_str_folds_case_on_windows_only() {
        let at = |key: &str| ResolvedPath {
            display: PathBuf::from(key),
            key: PathBuf::from(key),
        };
        let (a, b) = (at("/w/src/Main.rs"), at("/w/SRC/main.rs"));
        assert_eq!(a.key_str() == b.key_str(), cfg!(windows));
        assert_eq!(
            a.key_str(),
            if cfg!(windows) {
                "/W/SRC/MAIN.RS"
            } else {
                "/w/src/Main.rs"
            }
        );
    }

    #[test]
    fn lexical_join_normalizes() {
        let j = |b: &str, p: &str| lexical_join(Path::new(b), Path::new(p));
        assert_eq!(j("/w", "a/./b//c/"), PathBuf::from("/w/a/b/c"));
        assert_eq!(j("/w/x", "../a"), PathBuf::from("/w/a"));
        assert_eq!(j("/w", "/abs/../f"), PathBuf::from("/f"));
        assert_eq!(j("/", "../../a"), PathBuf::from("/a"));
    }
}
