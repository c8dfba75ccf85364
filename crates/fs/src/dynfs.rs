//! The seam as a trait object, for the code that needs no monomorphized
//! fast path: the file tools, the guard and the command line hold an
//! `Arc<dyn DynFileSystem>`, implemented for every [`FileSystem`] that
//! writes ([`FsWrite`]).

use std::io;
use std::path::{Path, PathBuf};

use dsh_search_base::cancel::CancelToken;

use super::names;
use super::seam::{
    FileSystem, FileType, FsWrite, Listing, Metadata, WriteError, WriteGuard, Written,
};

/// The object-safe face of a writable [`FileSystem`] ([`FsWrite`]): every
/// path-taking operation of the seam.
pub trait DynFileSystem: Send + Sync {
    /// [`FileSystem::canonicalize`].
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;
    /// [`FileSystem::metadata`].
    fn metadata(&self, path: &Path) -> io::Result<Metadata>;
    /// [`FileSystem::symlink_metadata`].
    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata>;
    /// [`FileSystem::read_link`].
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;
    /// The entries of the directory at `path` (symlinks followed), in the
    /// filesystem's order, with their kinds as listed (an `Unknown` kind
    /// resolved without following links). A listing that fails part-way
    /// is an error.
    fn read_dir(&self, path: &Path) -> io::Result<Vec<(Vec<u8>, FileType)>>;
    /// [`FileSystem::open`], boxed.
    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<Box<dyn io::Read + Send>>;
    /// [`FileSystem::read_control`].
    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// [`FileSystem::read_file`].
    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)>;
    /// [`FsWrite::write`].
    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError>;
    /// [`FsWrite::write_from`].
    fn write_from(
        &self,
        path: &Path,
        content: &mut dyn io::Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError>;
}

impl<F: FsWrite> DynFileSystem for F {
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        FileSystem::canonicalize(self, path)
    }

    fn metadata(&self, path: &Path) -> io::Result<Metadata> {
        FileSystem::metadata(self, path)
    }

    fn symlink_metadata(&self, path: &Path) -> io::Result<Metadata> {
        FileSystem::symlink_metadata(self, path)
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        FileSystem::read_link(self, path)
    }

    fn read_dir(&self, path: &Path) -> io::Result<Vec<(Vec<u8>, FileType)>> {
        let dir = FileSystem::open_dir(self, path)?;
        let mut listing = Listing::new();
        FileSystem::list(self, &dir, &mut listing);
        if let Some(e) = listing.take_error() {
            return Err(e);
        }
        let mut out = Vec::with_capacity(listing.len());
        for (name, kind) in listing.iter() {
            let kind = if kind == FileType::Unknown {
                FileSystem::metadata_at(self, &dir, path, &names::os_str(name), false)
                    .map_or(FileType::Unknown, |m| m.kind)
            } else {
                kind
            };
            out.push((name.to_vec(), kind));
        }
        Ok(out)
    }

    fn open(&self, path: &Path, cancel: &CancelToken) -> io::Result<Box<dyn io::Read + Send>> {
        Ok(Box::new(FileSystem::open(self, path, cancel)?))
    }

    fn read_control(&self, path: &Path) -> io::Result<Vec<u8>> {
        FileSystem::read_control(self, path)
    }

    fn read_file(&self, path: &Path, max: u64) -> io::Result<(Metadata, Option<Vec<u8>>)> {
        FileSystem::read_file(self, path, max)
    }

    fn write(
        &self,
        path: &Path,
        content: &[u8],
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        FsWrite::write(self, path, content, guard, cancel)
    }

    fn write_from(
        &self,
        path: &Path,
        content: &mut dyn io::Read,
        guard: &WriteGuard,
        cancel: &CancelToken,
    ) -> Result<Written, WriteError> {
        FsWrite::write_from(self, path, content, guard, cancel)
    }
}
