//! The seam's change feed: the changes made through a filesystem, for a
//! reader that keeps something derived from the tree (the live index,
//! `docs/index.md`, "How it stays current").
//!
//! A filesystem keeps a [`Journal`] and records each change in it; a
//! reader subscribes ([`MemFs::subscribe`](crate::MemFs::subscribe),
//! `SftpFs::subscribe`) and drains its [`Queue`] of [`Record`]s when it
//! wants to be current. A tree in memory changes only through its own
//! methods, so each of them records what it touched, as inotify says it
//! of the disk; SFTP records the paths its writes published, which a
//! comparison of sizes and mtimes may miss. The local disk keeps none:
//! its changes come from the operating system.
//!
//! Nothing is recorded while nobody listens: a filesystem without a
//! reader pays one relaxed atomic load per change.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use dsh_search_base::sync::RecoverPoison;

/// At most this many changes wait in a queue; past it the queue says that
/// it overflowed (as inotify's does at `max_queued_events`), and its
/// reader must rebuild what it keeps.
const QUEUE_MAX: usize = 1 << 16;

/// One change, by what names its place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Record {
    /// An entry `name` of the directory whose inode is `dir` was added,
    /// removed or replaced by another node (inotify's `IN_CREATE`,
    /// `IN_DELETE`, `IN_MOVED_*`).
    Entries {
        /// The directory's inode ([`Metadata::ino`](crate::Metadata::ino)).
        dir: u64,
        /// The entry's name.
        name: Box<[u8]>,
    },
    /// The content or metadata of the node at the entry `name` of the
    /// directory `dir` changed (`IN_MODIFY`, `IN_ATTRIB`).
    Node {
        /// The directory's inode ([`Metadata::ino`](crate::Metadata::ino)).
        dir: u64,
        /// The entry's name.
        name: Box<[u8]>,
    },
    /// Something changed that could not be placed (a path that no longer
    /// resolves once changed): the reader must rebuild what it keeps.
    Unplaced,
    /// A write published the file at this path (as the caller named it).
    Wrote(PathBuf),
}

/// The changes one reader has not taken yet.
#[derive(Debug, Default)]
pub struct Queue {
    state: Mutex<Pending>,
}

#[derive(Debug, Default)]
struct Pending {
    events: Vec<Record>,
    overflowed: bool,
}

impl Queue {
    /// Everything recorded since the last drain, and whether some of it
    /// was dropped.
    pub fn drain(&self) -> (Vec<Record>, bool) {
        let mut p = self.state.lock().recover_poison();
        let overflowed = std::mem::take(&mut p.overflowed);
        (std::mem::take(&mut p.events), overflowed)
    }

    fn push(&self, event: &Record) {
        let mut p = self.state.lock().recover_poison();
        if p.events.len() >= QUEUE_MAX {
            p.overflowed = true;
            p.events = Vec::new();
        } else if !p.overflowed {
            p.events.push(event.clone());
        }
    }
}

/// Where a filesystem records its changes: every live [`Queue`] gets each.
#[derive(Debug, Default)]
pub struct Journal {
    queues: Mutex<Vec<Weak<Queue>>>,
    /// Whether a queue may be live (a hint: set by `subscribe`, cleared
    /// when a recording finds none).
    listened: AtomicBool,
}

impl Journal {
    /// A new queue, which gets every change recorded from now on until it
    /// is dropped.
    pub fn subscribe(&self) -> Arc<Queue> {
        let queue = Arc::new(Queue::default());
        let mut queues = self.queues.lock().recover_poison();
        queues.push(Arc::downgrade(&queue));
        self.listened.store(true, Ordering::Release);
        queue
    }

    /// Whether some queue listens: the caller may skip working out what
    /// to record when none does.
    pub fn listened(&self) -> bool {
        self.listened.load(Ordering::Acquire)
    }

    /// Record `event` in every live queue.
    pub fn record(&self, event: Record) {
        if !self.listened() {
            return;
        }
        let mut queues = self.queues.lock().recover_poison();
        queues.retain(|q| match q.upgrade() {
            Some(q) => {
                q.push(&event);
                true
            }
            None => false,
        });
        if queues.is_empty() {
            self.listened.store(false, Ordering::Release);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_get_what_was_recorded_while_they_lived() {
        let j = Journal::default();
        j.record(Record::Wrote("/before".into()));
        let a = j.subscribe();
        j.record(Record::Wrote("/a".into()));
        let b = j.subscribe();
        j.record(Record::Wrote("/b".into()));
        assert_eq!(a.drain().0.len(), 2);
        assert_eq!(b.drain().0, vec![Record::Wrote("/b".into())]);
        drop(a);
        drop(b);
        j.record(Record::Wrote("/c".into()));
        assert!(!j.listened());
    }

    #[test]
    fn a_full_queue_says_it_overflowed() {
        let j = Journal::default();
        let q = j.subscribe();
        for _ in 0..=QUEUE_MAX {
            j.record(Record::Wrote("/x".into()));
        }
        let (events, overflowed) = q.drain();
        assert!(overflowed && events.is_empty());
        j.record(Record::Wrote("/y".into()));
        assert_eq!(q.drain(), (vec![Record::Wrote("/y".into())], false));
    }
}
