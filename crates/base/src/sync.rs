//! Locks that outlive a panic.
//!
//! Every `Mutex` and `RwLock` of dsh-search (its library, the filesystems,
//! its binary and its Node binding) is taken through [`RecoverPoison`]: a
//! call that panicked while holding one must not fail every later call of a
//! long-lived process (a server, a Node host). What these locks guard is kept consistent by each
//! critical section itself (a value is replaced whole, a count moved by
//! one), so the data a panicking thread left is the data to go on with.

use std::sync::{LockResult, PoisonError};

/// The guard of a lock whether or not a thread panicked while holding it.
pub trait RecoverPoison<G> {
    /// The guard, poisoned or not.
    fn recover_poison(self) -> G;
}

impl<G> RecoverPoison<G> for LockResult<G> {
    fn recover_poison(self) -> G {
        self.unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::RecoverPoison;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_poisoned_lock_gives_its_data() {
        let m = Arc::new(Mutex::new(1));
        let m2 = Arc::clone(&m);
        let _ = std::thread::spawn(move || {
            let mut g = m2.lock().unwrap();
            *g = 2;
            panic!("poison the lock");
        })
        .join();
        assert!(m.is_poisoned());
        assert_eq!(*m.lock().recover_poison(), 2);
    }
}
