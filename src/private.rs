//! Directories private to this user, and the files in them: the index's
//! store (`docs/index.md`, "Restart without a rebuild") and the spill's
//! session directories (`docs/tools.md`, "Spill").
//!
//! Whoever can write such a directory can plant a link where the process
//! will write, or a FIFO or a huge file where it will read, so each is
//! checked as OpenSSH checks `~/.ssh` before trusting it: it must be a
//! directory, not a symbolic link, owned by the effective user, and not
//! writable by group or others. The check is made on the directory as
//! opened (`O_NOFOLLOW`, then `fstat`), and every file in it is opened
//! relative to that descriptor (`openat`), so a directory swapped after
//! the check is not the one written to. Files are created exclusively
//! (`O_CREAT|O_EXCL|O_NOFOLLOW`) under names no other user can predict,
//! and read only after their kind, owner, mode and size were checked on
//! the open file, and never past the size checked.
//!
//! Elsewhere than Unix there are no owners or modes to check: the paths
//! are used as they are, files still created exclusively under random
//! names.

use std::ffi::OsStr;
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Why a directory or a file in it was not used.
#[derive(Debug)]
pub(crate) enum PrivateError {
    /// It exists but cannot be trusted: a link, another user's, writable by
    /// others, not a directory (or, for a file, not a regular file), or too
    /// large. The path, and why.
    Unsafe(PathBuf, String),
    /// The system refused: the path and the error.
    Io(PathBuf, io::Error),
}

impl PrivateError {
    /// A file or directory that is not there.
    pub(crate) fn is_missing(&self) -> bool {
        matches!(self, PrivateError::Io(_, e) if e.kind() == io::ErrorKind::NotFound)
    }
}

impl fmt::Display for PrivateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrivateError::Unsafe(p, why) => write!(f, "{}: {why}", p.display()),
            PrivateError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl From<PrivateError> for io::Error {
    fn from(e: PrivateError) -> io::Error {
        match e {
            PrivateError::Io(_, ref inner) => io::Error::new(inner.kind(), e.to_string()),
            PrivateError::Unsafe(..) => {
                io::Error::new(io::ErrorKind::PermissionDenied, e.to_string())
            }
        }
    }
}

/// A directory checked as private, held open.
pub(crate) struct PrivateDir {
    path: PathBuf,
    #[cfg(unix)]
    fd: rustix::fd::OwnedFd,
}

impl PrivateDir {
    /// `dir`, created (mode 0700, with its missing parents) when it does
    /// not exist, then opened and checked; with `parent`, the directory
    /// holding it is checked first in the same way (the state directory
    /// that holds the index's store).
    pub(crate) fn open(dir: &Path, parent: bool) -> Result<PrivateDir, PrivateError> {
        imp::open(dir, parent)
    }

    /// The directory's path, as given.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The contents of the regular file `name`, at most `max` bytes: a
    /// link, a FIFO, a device, another user's file, one writable by
    /// others or one over `max` bytes is refused before anything is read.
    pub(crate) fn read(&self, name: &OsStr, max: u64) -> Result<Vec<u8>, PrivateError> {
        let path = self.path.join(name);
        let (file, len) = imp::open_private_file(self, name, &path)?;
        if len > max {
            return Err(PrivateError::Unsafe(
                path,
                format!("{len} bytes, over the limit of {max}"),
            ));
        }
        // The size checked is the most read: a file that grows meanwhile
        // is read to that size, and its checksum then fails.
        let mut bytes = Vec::with_capacity(len as usize);
        file.take(len)
            .read_to_end(&mut bytes)
            .map_err(|e| PrivateError::Io(path, e))?;
        Ok(bytes)
    }

    /// A new file (mode 0600) named `prefix`, random hex and `suffix`,
    /// created exclusively: never an existing file or link. Its name and
    /// the open file.
    pub(crate) fn create_new(
        &self,
        prefix: &str,
        suffix: &str,
    ) -> Result<(String, File), PrivateError> {
        loop {
            let name = format!("{prefix}{}{suffix}", random_hex(6).map_err(|e| self.io(e))?);
            match imp::create_new(self, &name) {
                Ok(file) => return Ok((name, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(PrivateError::Io(self.path.join(&name), e)),
            }
        }
    }

    /// Replace the file `name` with `bytes`, atomically: a new file of an
    /// unpredictable name, written and synced, then renamed over it.
    pub(crate) fn write_atomically(&self, name: &OsStr, bytes: &[u8]) -> Result<(), PrivateError> {
        let path = self.path.join(name);
        // Errors name the file replaced, not the temporary one.
        let prefix = format!(".{}.", name.to_string_lossy());
        let (tmp, mut file) = self.create_new(&prefix, ".tmp").map_err(|e| match e {
            PrivateError::Io(_, e) => PrivateError::Io(path.clone(), e),
            e => e,
        })?;
        let written = file
            .write_all(bytes)
            .and_then(|()| file.sync_all())
            .and_then(|()| imp::rename(self, OsStr::new(&tmp), name));
        if let Err(e) = written {
            let _ = imp::remove(self, OsStr::new(&tmp));
            return Err(PrivateError::Io(path, e));
        }
        Ok(())
    }

    fn io(&self, e: io::Error) -> PrivateError {
        PrivateError::Io(self.path.clone(), e)
    }
}

/// `bytes` random bytes as lowercase hex.
pub(crate) fn random_hex(bytes: usize) -> io::Result<String> {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).map_err(|e| io::Error::other(e.to_string()))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates directories: 0700 on Unix, the defaults elsewhere.
pub(crate) fn dir_builder(recursive: bool) -> std::fs::DirBuilder {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(recursive);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder
}

#[cfg(unix)]
mod imp {
    use super::*;
    use rustix::fd::OwnedFd;
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, Stat, CWD};

    const DIR: OFlags = OFlags::RDONLY
        .union(OFlags::DIRECTORY)
        .union(OFlags::NOFOLLOW)
        .union(OFlags::CLOEXEC);

    pub(super) fn open(dir: &Path, parent: bool) -> Result<PrivateDir, PrivateError> {
        let io = |p: &Path, e: rustix::io::Errno| PrivateError::Io(p.to_path_buf(), e.into());
        let (at, name) = match (parent, dir.parent(), dir.file_name()) {
            (true, Some(up), Some(name)) => {
                let up = if up.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    up
                };
                if !up.exists() {
                    dir_builder(true)
                        .create(up)
                        .map_err(|e| PrivateError::Io(up.to_path_buf(), e))?;
                }
                let fd = open_dir(CWD, up.as_os_str(), up, Holder::Parent)?;
                (Some(fd), name)
            }
            _ => (None, dir.as_os_str()),
        };
        let fd = match &at {
            Some(up) => match open_dir(up, name, dir, Holder::Own) {
                Err(e) if e.is_missing() => {
                    match rustix::fs::mkdirat(up, name, Mode::from_raw_mode(0o700)) {
                        Ok(()) => {}
                        Err(e) if e == rustix::io::Errno::EXIST => {}
                        Err(e) => return Err(io(dir, e)),
                    }
                    open_dir(up, name, dir, Holder::Own)?
                }
                other => other?,
            },
            None => match open_dir(CWD, name, dir, Holder::Own) {
                Err(e) if e.is_missing() => {
                    dir_builder(true)
                        .create(dir)
                        .map_err(|e| PrivateError::Io(dir.to_path_buf(), e))?;
                    open_dir(CWD, name, dir, Holder::Own)?
                }
                other => other?,
            },
        };
        Ok(PrivateDir {
            path: dir.to_path_buf(),
            fd,
        })
    }

    /// The directory `name` of `at`, not through a link, checked.
    fn open_dir<Fd: rustix::fd::AsFd + Copy>(
        at: Fd,
        name: &OsStr,
        path: &Path,
        holder: Holder,
    ) -> Result<OwnedFd, PrivateError> {
        let fd = match rustix::fs::openat(at, name, DIR, Mode::empty()) {
            Ok(fd) => fd,
            // O_NOFOLLOW on a link: ELOOP, or ENOTDIR with O_DIRECTORY
            // (Linux); O_DIRECTORY on a file: ENOTDIR.
            Err(rustix::io::Errno::LOOP | rustix::io::Errno::NOTDIR) => {
                let link = rustix::fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW)
                    .is_ok_and(|st| FileType::from_raw_mode(st.st_mode) == FileType::Symlink);
                let why = if link {
                    "a symbolic link, not a directory"
                } else {
                    "not a directory"
                };
                return Err(PrivateError::Unsafe(path.to_path_buf(), why.into()));
            }
            Err(e) => return Err(PrivateError::Io(path.to_path_buf(), e.into())),
        };
        let st =
            rustix::fs::fstat(&fd).map_err(|e| PrivateError::Io(path.to_path_buf(), e.into()))?;
        check(&st, path, holder)?;
        Ok(fd)
    }

    /// Which of the two directories is checked.
    #[derive(Clone, Copy, PartialEq, Eq)]
    enum Holder {
        /// The private directory itself, or a file in it: the user's, and
        /// writable by no one else.
        Own,
        /// The directory holding it (whoever can rename entries there can
        /// put another directory in its place): the user's or root's, and
        /// writable by no one else unless sticky (`/tmp`, where only an
        /// entry's owner can rename or remove it).
        Parent,
    }

    fn check(st: &Stat, path: &Path, holder: Holder) -> Result<(), PrivateError> {
        let me = rustix::process::geteuid().as_raw();
        let parent = holder == Holder::Parent;
        if st.st_uid != me && !(parent && st.st_uid == 0) {
            return Err(PrivateError::Unsafe(
                path.to_path_buf(),
                format!("owned by uid {}, not by this user (uid {me})", st.st_uid),
            ));
        }
        let sticky = st.st_mode & 0o1000 != 0;
        if st.st_mode & 0o022 != 0 && !(parent && sticky) {
            return Err(PrivateError::Unsafe(
                path.to_path_buf(),
                format!(
                    "writable by group or others (mode {:o})",
                    st.st_mode & 0o7777
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn open_private_file(
        dir: &PrivateDir,
        name: &OsStr,
        path: &Path,
    ) -> Result<(File, u64), PrivateError> {
        // O_NONBLOCK: a FIFO opened for reading does not wait for a writer.
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&dir.fd, name, flags, Mode::empty()) {
            Ok(fd) => fd,
            Err(rustix::io::Errno::LOOP) => {
                return Err(PrivateError::Unsafe(
                    path.to_path_buf(),
                    "a symbolic link, not a regular file".into(),
                ))
            }
            Err(e) => return Err(PrivateError::Io(path.to_path_buf(), e.into())),
        };
        let st =
            rustix::fs::fstat(&fd).map_err(|e| PrivateError::Io(path.to_path_buf(), e.into()))?;
        let kind = FileType::from_raw_mode(st.st_mode);
        if kind != FileType::RegularFile {
            return Err(PrivateError::Unsafe(
                path.to_path_buf(),
                format!("not a regular file ({})", kind_name(kind)),
            ));
        }
        check(&st, path, Holder::Own)?;
        Ok((File::from(fd), st.st_size as u64))
    }

    fn kind_name(kind: FileType) -> &'static str {
        match kind {
            FileType::Fifo => "a FIFO",
            FileType::Directory => "a directory",
            FileType::CharacterDevice => "a character device",
            FileType::BlockDevice => "a block device",
            FileType::Socket => "a socket",
            FileType::Symlink => "a symbolic link",
            _ => "of an unknown kind",
        }
    }

    pub(super) fn create_new(dir: &PrivateDir, name: &str) -> io::Result<File> {
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(
            &dir.fd,
            name,
            flags,
            Mode::from_raw_mode(0o600),
        )?))
    }

    pub(super) fn rename(dir: &PrivateDir, from: &OsStr, to: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::renameat(&dir.fd, from, &dir.fd, to)?)
    }

    pub(super) fn remove(dir: &PrivateDir, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&dir.fd, name, AtFlags::empty())?)
    }
}

#[cfg(not(unix))]
mod imp {
    use super::*;

    pub(super) fn open(dir: &Path, _parent: bool) -> Result<PrivateDir, PrivateError> {
        dir_builder(true)
            .create(dir)
            .map_err(|e| PrivateError::Io(dir.to_path_buf(), e))?;
        Ok(PrivateDir {
            path: dir.to_path_buf(),
        })
    }

    pub(super) fn open_private_file(
        _dir: &PrivateDir,
        _name: &OsStr,
        path: &Path,
    ) -> Result<(File, u64), PrivateError> {
        let io = |e| PrivateError::Io(path.to_path_buf(), e);
        let meta = std::fs::symlink_metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(PrivateError::Unsafe(
                path.to_path_buf(),
                "not a regular file".into(),
            ));
        }
        let file = File::open(path).map_err(io)?;
        let len = file.metadata().map_err(io)?.len();
        Ok((file, len))
    }

    pub(super) fn create_new(dir: &PrivateDir, name: &str) -> io::Result<File> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.path.join(name))
    }

    pub(super) fn rename(dir: &PrivateDir, from: &OsStr, to: &OsStr) -> io::Result<()> {
        std::fs::rename(dir.path.join(from), dir.path.join(to))
    }

    pub(super) fn remove(dir: &PrivateDir, name: &OsStr) -> io::Result<()> {
        std::fs::remove_file(dir.path.join(name))
    }
}
