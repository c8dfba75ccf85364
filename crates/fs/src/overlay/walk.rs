//! Path resolution over the merged view.
//!
//! The kernel resolves a path one component at a time (`path_resolution(7)`):
//! each component but the last must be a directory, a symlink met on the way
//! is replaced by its target, `..` climbs out of the directory actually
//! reached, and the 41st symlink of one resolution fails with `ELOOP`.
//! Neither layer can do that walk alone here, since a symlink of the lower
//! layer may lead to an entry that exists only in the upper one (a lower
//! `link -> dir` and an upper `dir/new.txt` make `link/new.txt`), so the
//! overlay walks itself, asking [`OverlayFs::lstat`] about each component,
//! and reports the errno the disk reports at the component where the disk
//! stops. glibc's `realpath` (`std::fs::canonicalize`) walks the same way
//! with the same errors (`stdlib/canonicalize.c`).

use std::ffi::OsString;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::{Layer, OverlayFs};
use crate::names;
use crate::seam::{errno, FileSystem, FileType, FsWrite, Metadata};

/// Linux's `MAXSYMLINKS` and glibc's `__eloop_threshold`: a resolution may
/// follow 40 symlinks; the 41st fails with `ELOOP`.
pub(super) const MAX_LINKS: u32 = 40;

/// What the walk does with the last component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Last {
    /// Follow a symlink there (`stat`, `open`, `realpath`).
    Follow,
    /// Stop at a symlink there (`lstat`, `readlink`).
    NoFollow,
    /// Follow a symlink there, and accept that the path, from some
    /// component on, does not exist yet (a write creates it).
    Create,
}

/// A resolved path: no symlink, `.` or `..` left in it.
#[derive(Debug)]
pub(super) struct Found {
    /// The overlay path.
    pub(super) path: PathBuf,
    /// What is there, and in which layer; `None` only with
    /// [`Last::Create`], for a path that does not exist yet.
    pub(super) entry: Option<(Metadata, Layer)>,
}

impl Found {
    /// The metadata of an existing path.
    pub(super) fn metadata(&self) -> Metadata {
        self.entry.expect("resolved an existing path").0
    }

    /// The layer of an existing path.
    pub(super) fn layer(&self) -> Layer {
        self.entry.expect("resolved an existing path").1
    }
}

/// Why a walk stopped: the error and the path of the component it concerns.
#[derive(Debug)]
pub(super) struct Failed {
    pub(super) at: PathBuf,
    pub(super) error: io::Error,
}

impl From<Failed> for io::Error {
    fn from(f: Failed) -> io::Error {
        f.error
    }
}

/// One step of the walk.
#[derive(Debug)]
enum Seg {
    Name(OsString),
    Parent,
    /// What was resolved so far must be a directory: the path (or a
    /// symlink's target) ended with a separator or `/.`.
    Dir,
}

impl<L: FileSystem, U: FsWrite> OverlayFs<L, U> {
    /// Resolve `path` (absolute) through the merged view.
    pub(super) fn walk(&self, path: &Path, last: Last) -> Result<Found, Failed> {
        if !path.has_root() {
            return Err(Failed {
                at: path.to_path_buf(),
                error: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("not an absolute path: {}", path.display()),
                ),
            });
        }
        self.notice_upper();
        let mut resolved = PathBuf::new();
        // The steps still to take, the next one last.
        let mut pending = Vec::new();
        push_segments(path, &mut resolved, &mut pending);
        let mut links = 0;
        // The entry at `resolved`, when the last step found it.
        let mut entry = None;
        while let Some(seg) = pending.pop() {
            let name = match seg {
                Seg::Dir => continue,
                Seg::Parent => {
                    // `..` of the root is the root.
                    resolved.pop();
                    entry = None;
                    continue;
                }
                Seg::Name(name) => name,
            };
            let more = !pending.is_empty();
            let candidate = resolved.join(&name);
            let (meta, layer) = match self.lstat(&candidate) {
                Ok(found) => found,
                Err(e) if last == Last::Create && e.kind() == io::ErrorKind::NotFound => {
                    return create_tail(candidate, pending);
                }
                Err(error) => {
                    return Err(Failed {
                        at: candidate,
                        error,
                    })
                }
            };
            if meta.kind == FileType::Symlink && (more || last != Last::NoFollow) {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Failed {
                        at: candidate,
                        error: errno::too_many_links(),
                    });
                }
                let target = self
                    .read_link_in(layer, &candidate)
                    .map_err(|error| Failed {
                        at: candidate.clone(),
                        error,
                    })?;
                push_segments(&target, &mut resolved, &mut pending);
                entry = None;
                continue;
            }
            if more && meta.kind != FileType::Dir {
                return Err(Failed {
                    at: candidate,
                    error: errno::not_a_directory(),
                });
            }
            resolved = candidate;
            entry = Some((meta, layer));
        }
        let entry = match entry {
            Some(entry) => entry,
            // The walk ended on `..`, on a symlink's target such as `.`, or
            // on the root.
            None => self.lstat(&resolved).map_err(|error| Failed {
                at: resolved.clone(),
                error,
            })?,
        };
        Ok(Found {
            path: resolved,
            entry: Some(entry),
        })
    }

    /// The target of the symlink at `path`, read from the layer it is in.
    fn read_link_in(&self, layer: Layer, path: &Path) -> io::Result<PathBuf> {
        match layer {
            Layer::Lower | Layer::Both => self.lower.read_link(path),
            // The upper layer never receives a symlink from the overlay;
            // one put there by hand is read like a lower one.
            Layer::Upper => self
                .upper
                .read_link(&self.upper_path(path).expect("an upper path")),
        }
    }
}

/// A path that exists up to the parent of `missing`: the rest of the
/// steps are names to create. `..` below a missing directory does not
/// exist, and a path that must be a directory cannot be written as a file.
fn create_tail(missing: PathBuf, mut pending: Vec<Seg>) -> Result<Found, Failed> {
    let mut path = missing;
    while let Some(seg) = pending.pop() {
        match seg {
            Seg::Name(name) => path.push(name),
            Seg::Parent => {
                return Err(Failed {
                    at: path,
                    error: errno::not_found(),
                })
            }
            Seg::Dir => {
                return Err(Failed {
                    at: path,
                    error: errno::is_a_directory(),
                })
            }
        }
    }
    Ok(Found { path, entry: None })
}

/// Queue the components of `path` (a path or a symlink's target) so that
/// the first is taken next; an absolute one restarts from its root.
fn push_segments(path: &Path, resolved: &mut PathBuf, pending: &mut Vec<Seg>) {
    let mut segs = Vec::new();
    for c in path.components() {
        match c {
            Component::Prefix(p) => *resolved = PathBuf::from(p.as_os_str()),
            Component::RootDir => {
                // A rooted path restarts from the root, of the drive
                // reached so far on Windows.
                let mut root: PathBuf = resolved
                    .components()
                    .take_while(|c| matches!(c, Component::Prefix(_)))
                    .collect();
                root.push(Component::RootDir.as_os_str());
                *resolved = root;
            }
            Component::CurDir => {}
            Component::ParentDir => segs.push(Seg::Parent),
            Component::Normal(name) => segs.push(Seg::Name(name.to_os_string())),
        }
    }
    if must_be_dir(path) {
        segs.push(Seg::Dir);
    }
    pending.extend(segs.into_iter().rev());
}

/// Whether `path` ends so that it names a directory: with a separator or
/// with a `.` component, which `Path::components` drops.
fn must_be_dir(path: &Path) -> bool {
    let b = names::path_bytes(path);
    let sep = |c: u8| c == b'/' || (cfg!(windows) && c == b'\\');
    match b {
        [.., c] if sep(*c) => true,
        [.., s, b'.'] if sep(*s) => true,
        [b'.'] => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    macro_rules! dir_suffix {
        ($($name:ident: $path:expr => $want:expr;)*) => {
            $(
                #[test]
                fn $name() {
                    assert_eq!(must_be_dir(Path::new($path)), $want);
                }
            )*
        };
    }

    dir_suffix! {
        suffix_plain: "/a/b" => false;
        suffix_slash: "/a/b/" => true;
        suffix_dot: "/a/b/." => true;
        suffix_dot_slash: "/a/b/./" => true;
        suffix_dotdot: "/a/b/.." => false;
        suffix_dotfile: "/a/.b" => false;
        suffix_root: "/" => true;
    }

    fn steps(path: &str) -> (PathBuf, Vec<String>) {
        let mut resolved = PathBuf::new();
        let mut pending = Vec::new();
        push_segments(Path::new(path), &mut resolved, &mut pending);
        let steps = pending
            .iter()
            .rev()
            .map(|s| match s {
                Seg::Name(n) => n.to_string_lossy().into_owned(),
                Seg::Parent => "..".into(),
                Seg::Dir => "/".into(),
            })
            .collect();
        (resolved, steps)
    }

    #[cfg(unix)]
    #[test]
    fn segments_keep_parent_steps_and_the_directory_marker() {
        assert_eq!(
            steps("/a/./b/../c/"),
            (
                PathBuf::from("/"),
                vec!["a".into(), "b".into(), "..".into(), "c".into(), "/".into()]
            )
        );
    }

    #[cfg(unix)]
    #[test]
    fn an_absolute_target_restarts_from_the_root() {
        let mut resolved = PathBuf::from("/x/y");
        let mut pending = Vec::new();
        push_segments(Path::new("/t"), &mut resolved, &mut pending);
        assert_eq!(resolved, Path::new("/"));
        assert!(matches!(&pending[..], [Seg::Name(n)] if n == "t"));
    }

    #[cfg(unix)]
    #[test]
    fn a_relative_target_continues_from_the_links_directory() {
        let mut resolved = PathBuf::from("/x/y");
        let mut pending = Vec::new();
        push_segments(Path::new("../t"), &mut resolved, &mut pending);
        assert_eq!(resolved, Path::new("/x/y"));
        assert_eq!(pending.len(), 2);
    }
}
