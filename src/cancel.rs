//! Cooperative cancellation shared by a call and the work it started.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A cancellation flag shared between a caller and the work it started.
///
/// Cloning gives another handle to the same flag. The native engine checks it
/// in the walker and between buffers of a file; the rg backend kills rg's
/// process group when it is set.
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A new token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// Cancel every holder of this token. Idempotent.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// The shared flag itself, for code that sets it from a signal handler.
    pub(crate) fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }

    /// Whether [`CancelToken::cancel`] was called on any handle.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// The marker error of a read stopped by cancellation.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("search cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// The error a reader returns once its call is cancelled.
pub(crate) fn cancelled_error() -> std::io::Error {
    std::io::Error::other(Cancelled)
}

/// Whether `e` is [`cancelled_error`]'s error: a reader stopped because its
/// call was cancelled.
pub(crate) fn is_cancelled_error(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}
