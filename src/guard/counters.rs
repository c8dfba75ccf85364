//! Where the zero-result counters live: per session, per target.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// The consecutive zero-result grep counts of each session and target.
///
/// A count of 0 is the same as no entry; implementations drop such entries.
pub trait ZeroResultStore: Send + Sync {
    /// The count of `target` (a resolved absolute path) in `session`.
    fn get(&self, session: &str, target: &str) -> u32;
    /// Set the count of `target` in `session`.
    fn set(&self, session: &str, target: &str, count: u32);
}

/// Counters kept in memory for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryCounters(Mutex<BTreeMap<String, BTreeMap<String, u32>>>);

impl ZeroResultStore for MemoryCounters {
    fn get(&self, session: &str, target: &str) -> u32 {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(session)
            .and_then(|s| s.get(target))
            .copied()
            .unwrap_or(0)
    }

    fn set(&self, session: &str, target: &str, count: u32) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if count == 0 {
            if let Some(s) = map.get_mut(session) {
                s.remove(target);
                if s.is_empty() {
                    map.remove(session);
                }
            }
        } else {
            map.entry(session.to_string())
                .or_default()
                .insert(target.to_string(), count);
        }
    }
}
