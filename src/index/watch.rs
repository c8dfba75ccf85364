//! The watcher that keeps the mirror of a local tree current: inotify on
//! Linux (`docs/index.md`, "Kept current"), one watch per mirrored
//! directory, read without blocking so that a call drains every event the
//! kernel queued before it started ([`Watcher::drain`]). Elsewhere there is
//! no watcher: [`Watcher::new`] fails and the index validates its mirror at
//! each call instead (`validate.rs`).

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};

/// What the events drained since the last call say changed, by paths
/// relative to the mirrored root.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Directories whose entries were added, removed or renamed: listed
    /// again (their order on disk may have changed).
    pub(crate) dirs: BTreeSet<PathBuf>,
    /// Entries whose content or metadata changed: stat'ed (and a file
    /// read) again. `(directory, name)`.
    pub(crate) names: BTreeSet<(PathBuf, Vec<u8>)>,
    /// The kernel dropped events (`IN_Q_OVERFLOW`), or the root itself
    /// went away or was replaced: only a rebuild is exact.
    pub(crate) lost: Option<&'static str>,
}

impl Changes {
    pub(crate) fn is_empty(&self) -> bool {
        self.dirs.is_empty() && self.names.is_empty() && self.lost.is_none()
    }
}

/// Why a directory could not be watched.
#[derive(Debug)]
pub(crate) enum WatchError {
    /// The watch limit (`ENOSPC`: `fs.inotify.max_user_watches`, or the
    /// index's own limit): the tree cannot be kept current.
    Limit,
    /// This directory only (unreadable): it is not mirrored, and the view
    /// reads it from the filesystem.
    Dir,
    /// There is no directory there (gone, or not a directory): not
    /// mirrored either, as [`WatchError::Dir`]; an overlay's layer may
    /// lack a directory the other holds.
    Missing,
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;
    use std::collections::HashMap;
    use std::mem::MaybeUninit;

    use rustix::fd::OwnedFd;
    use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

    pub(crate) struct Watcher {
        fd: OwnedFd,
        /// Watch descriptor → the directory, relative to the root.
        wds: HashMap<i32, PathBuf>,
        /// The root's watch.
        root_wd: Option<i32>,
        limit: Option<usize>,
        buf: Vec<MaybeUninit<u8>>,
    }

    impl Watcher {
        pub(crate) fn new(limit: Option<usize>) -> io::Result<Watcher> {
            let fd = inotify::init(CreateFlags::NONBLOCK | CreateFlags::CLOEXEC)?;
            Ok(Watcher {
                fd,
                wds: HashMap::new(),
                root_wd: None,
                limit,
                buf: vec![MaybeUninit::uninit(); 64 * 1024],
            })
        }

        /// Watch the directory `abs` (`rel` below the root), before it is
        /// listed: whatever changes after the listing is then an event.
        pub(crate) fn add(&mut self, abs: &Path, rel: &Path) -> Result<(), WatchError> {
            if self.limit.is_some_and(|l| self.wds.len() >= l) {
                return Err(WatchError::Limit);
            }
            let mask = WatchFlags::CREATE
                | WatchFlags::DELETE
                | WatchFlags::MOVED_FROM
                | WatchFlags::MOVED_TO
                | WatchFlags::MODIFY
                | WatchFlags::ATTRIB
                | WatchFlags::CLOSE_WRITE
                | WatchFlags::DELETE_SELF
                | WatchFlags::MOVE_SELF
                | WatchFlags::DONT_FOLLOW
                | WatchFlags::ONLYDIR;
            match inotify::add_watch(&self.fd, abs, mask) {
                Ok(wd) => {
                    if rel.as_os_str().is_empty() {
                        self.root_wd = Some(wd);
                    }
                    self.wds.insert(wd, rel.to_path_buf());
                    Ok(())
                }
                Err(rustix::io::Errno::NOSPC) => Err(WatchError::Limit),
                Err(rustix::io::Errno::NOENT | rustix::io::Errno::NOTDIR) => {
                    Err(WatchError::Missing)
                }
                Err(_) => Err(WatchError::Dir),
            }
        }

        /// Stop watching `rel` and every directory below it (gone from the
        /// mirror).
        pub(crate) fn forget(&mut self, rel: &Path) {
            let gone: Vec<i32> = self
                .wds
                .iter()
                .filter(|(_, p)| p.starts_with(rel))
                .map(|(&wd, _)| wd)
                .collect();
            for wd in gone {
                self.wds.remove(&wd);
                let _ = inotify::remove_watch(&self.fd, wd);
            }
        }

        /// How many directories are watched.
        pub(crate) fn len(&self) -> usize {
            self.wds.len()
        }

        /// Every event queued so far, read without blocking.
        pub(crate) fn drain(&mut self) -> io::Result<Changes> {
            let mut changes = Changes::default();
            let mut reader = inotify::Reader::new(&self.fd, &mut self.buf);
            loop {
                let event = match reader.next() {
                    Ok(e) => e,
                    Err(rustix::io::Errno::WOULDBLOCK) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(e) => return Err(e.into()),
                };
                let flags = event.events();
                if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                    changes.lost = Some("the watcher's queue overflowed");
                    continue;
                }
                let wd = event.wd();
                if Some(wd) == self.root_wd
                    && flags.intersects(
                        ReadFlags::DELETE_SELF | ReadFlags::MOVE_SELF | ReadFlags::UNMOUNT,
                    )
                {
                    changes.lost = Some("the root was removed or moved");
                }
                if flags.contains(ReadFlags::IGNORED) {
                    // The kernel dropped the watch (the directory is gone):
                    // its parent's event says so.
                    if Some(wd) == self.root_wd {
                        changes.lost = Some("the root's watch was dropped");
                    }
                    self.wds.remove(&wd);
                    continue;
                }
                let (Some(rel), Some(name)) = (self.wds.get(&wd), event.file_name()) else {
                    // An event of a directory itself: its parent's watch
                    // reports it with the name. The root's parent is not
                    // watched, and the root's permissions decide what the
                    // whole mirror may answer (`chmod 000`, or readable but
                    // not searchable): only a build says what it holds now.
                    if Some(wd) == self.root_wd && flags.contains(ReadFlags::ATTRIB) {
                        changes.lost = Some("the root's permissions or owner changed");
                    }
                    continue;
                };
                let name = name.to_bytes().to_vec();
                if flags.intersects(
                    ReadFlags::CREATE
                        | ReadFlags::DELETE
                        | ReadFlags::MOVED_FROM
                        | ReadFlags::MOVED_TO,
                ) {
                    changes.dirs.insert(rel.clone());
                }
                changes.names.insert((rel.clone(), name));
            }
            Ok(changes)
        }
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;

    /// No watcher off Linux: the index answers every call by the scan.
    pub(crate) struct Watcher(());

    impl Watcher {
        pub(crate) fn new(_limit: Option<usize>) -> io::Result<Watcher> {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the index watches the disk on Linux only",
            ))
        }

        pub(crate) fn add(&mut self, _abs: &Path, _rel: &Path) -> Result<(), WatchError> {
            Err(WatchError::Limit)
        }

        pub(crate) fn forget(&mut self, _rel: &Path) {}

        pub(crate) fn len(&self) -> usize {
            0
        }

        pub(crate) fn drain(&mut self) -> io::Result<Changes> {
            Ok(Changes::default())
        }
    }
}

pub(crate) use imp::Watcher;

/// The kind of network filesystem `root` is on, if it is on one that
/// inotify cannot follow: it reports only the changes made through this
/// machine's kernel, not another client's or the server's (`statfs`'s
/// `f_type`, the magic numbers of `linux/magic.h` and the filesystems'
/// own). A FUSE filesystem (sshfs, rclone) is counted: its changes are the
/// daemon's to report, and most report none.
#[cfg(target_os = "linux")]
pub(crate) fn network_fs(root: &Path) -> Option<&'static str> {
    let kind = rustix::fs::statfs(root).ok()?.f_type as i64 as u32;
    Some(match kind {
        0x6969 => "nfs",
        0x517b => "smb",
        0xff53_4d42 => "cifs",
        0xfe53_4d42 => "smb2",
        0x6573_5546 => "fuse",
        0x00c3_6400 => "ceph",
        0x0102_1997 => "9p",
        0x5346_414f => "afs",
        0x7375_7245 => "coda",
        0x0bd0_0bd0 => "lustre",
        0x4750_4653 => "gpfs",
        _ => return None,
    })
}

/// No filesystem is told apart off Linux: there is no watcher there.
#[cfg(not(target_os = "linux"))]
pub(crate) fn network_fs(_root: &Path) -> Option<&'static str> {
    None
}
