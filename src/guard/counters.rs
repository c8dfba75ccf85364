//! Where the zero-result counters live: per session, per target.

use crate::sync::RecoverPoison;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The consecutive zero-result grep counts of each session and target.
///
/// Each method is one atomic step, so that concurrent calls of one session
/// (threads, or CLI processes sharing a persisted state) never lose a count.
/// A count of 0 is the same as no entry.
pub trait ZeroResultStore: Send + Sync {
    /// The count of `target` (a resolved absolute path) in `session`.
    fn get(&self, session: &str, target: &str) -> u32;
    /// Add one to the count of `target` in `session`.
    fn bump(&self, session: &str, target: &str);
    /// Set the count of `target` in `session` back to 0.
    fn reset(&self, session: &str, target: &str);
}

/// Add one to `target`'s entry in a session's map.
pub(crate) fn bump_in(map: &mut BTreeMap<String, u32>, target: &str) {
    let n = map.entry(target.to_string()).or_insert(0);
    *n = n.saturating_add(1);
}

/// Counters kept in memory for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryCounters(Mutex<BTreeMap<String, BTreeMap<String, u32>>>);

impl MemoryCounters {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, BTreeMap<String, u32>>> {
        self.0.lock().recover_poison()
    }
}

impl ZeroResultStore for MemoryCounters {
    fn get(&self, session: &str, target: &str) -> u32 {
        let map = self.lock();
        map.get(session)
            .and_then(|s| s.get(target))
            .copied()
            .unwrap_or(0)
    }

    fn bump(&self, session: &str, target: &str) {
        bump_in(self.lock().entry(session.to_string()).or_default(), target);
    }

    fn reset(&self, session: &str, target: &str) {
        if let Some(s) = self.lock().get_mut(session) {
            s.remove(target);
        }
    }
}

/// The session state (`src/session.rs`): in memory, or persisted for the
/// command line. Best effort: a state that cannot be read counts as 0 and a
/// count that cannot be saved is dropped; the guard never fails a call for
/// its own bookkeeping.
impl ZeroResultStore for crate::session::Sessions {
    fn get(&self, session: &str, target: &str) -> u32 {
        self.with(session, |s| s.zero_results.get(target).copied())
            .ok()
            .flatten()
            .unwrap_or(0)
    }

    fn bump(&self, session: &str, target: &str) {
        let _ = self.with(session, |s| bump_in(&mut s.zero_results, target));
    }

    fn reset(&self, session: &str, target: &str) {
        let _ = self.with(session, |s| {
            s.zero_results.remove(target);
        });
    }
}
