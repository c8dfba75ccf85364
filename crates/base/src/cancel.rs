//! Cancellation: [`CancelToken`], the flag a caller shares with the work it
//! started, with the call's deadline (`timeoutMs`), and the io error a
//! reader returns once its call is cancelled ([`cancelled_error`],
//! recognized by [`is_cancelled_error`]).

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A cancellation flag shared between a caller and the work it started.
///
/// Cloning gives another handle to the same token. The native engine checks
/// it in the walker and between buffers of a file; the rg backend kills rg's
/// process group when it is set.
///
/// Cooperative cancellation shared by a call and the work it started, with
/// the call's deadline.
///
/// A token is cancelled by [`CancelToken::cancel`] on any handle, by its
/// parent's cancellation, or by the passing of its deadline. No thread
/// watches the deadline: every holder already asks [`is_cancelled`] where
/// it can stop (the walker, between buffers, the rg child's wait), and the
/// question compares the clock with the deadline there. A call's timeout
/// (`timeoutMs`, `seed-reference.md` §4.4) is a child of the caller's token
/// with a deadline; [`CancelToken::timed_out`] says afterwards whether the
/// deadline, rather than a cancellation, stopped it.
///
/// [`is_cancelled`]: CancelToken::is_cancelled
#[derive(Clone, Debug, Default)]
pub struct CancelToken(Arc<Inner>);

#[derive(Debug, Default)]
struct Inner {
    /// Set by [`CancelToken::cancel`] (and by signal handlers, through
    /// [`CancelToken::flag`]).
    flag: Arc<AtomicBool>,
    /// The token whose cancellation this one inherits.
    parent: Option<CancelToken>,
    /// When this token cancels itself.
    deadline: Option<Instant>,
    /// What was seen first to cancel the token ([`Cause`]), latched at the
    /// first `is_cancelled` that returned true.
    cause: AtomicU8,
}

/// What cancelled a token, in the order `is_cancelled` looks: its own flag,
/// its parent, its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Cause {
    NotYet = 0,
    Cancelled = 1,
    Parent = 2,
    Deadline = 3,
}

impl CancelToken {
    /// A new token that is not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }

    /// A token cancelled when `parent` is, or when `deadline` passes
    /// (`None`: never by time), or by its own [`cancel`](Self::cancel);
    /// cancelling it leaves `parent` alone.
    pub fn child(parent: &CancelToken, deadline: Option<Instant>) -> CancelToken {
        CancelToken(Arc::new(Inner {
            parent: Some(parent.clone()),
            deadline,
            ..Inner::default()
        }))
    }

    /// Cancel every holder of this token (and its children). Idempotent.
    pub fn cancel(&self) {
        self.0.flag.store(true, Ordering::Release);
    }

    /// The token's own flag, for code that sets it from a signal handler,
    /// where nothing but an atomic store is allowed (the command line hands
    /// it to `signal_hook::flag::register`): storing `true` cancels the
    /// token as [`CancelToken::cancel`] does.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0.flag)
    }

    /// Whether the token is cancelled: [`CancelToken::cancel`] was called on
    /// any handle, its parent is cancelled, or its deadline has passed.
    pub fn is_cancelled(&self) -> bool {
        if self.0.cause.load(Ordering::Acquire) != Cause::NotYet as u8 {
            return true;
        }
        let cause = if self.0.flag.load(Ordering::Acquire) {
            Cause::Cancelled
        } else if self
            .0
            .parent
            .as_ref()
            .is_some_and(CancelToken::is_cancelled)
        {
            Cause::Parent
        } else if self.0.deadline.is_some_and(|d| Instant::now() >= d) {
            Cause::Deadline
        } else {
            return false;
        };
        // The first cause seen stays: a later cancellation does not turn a
        // timeout into an abort, nor the other way round.
        let _ = self.0.cause.compare_exchange(
            Cause::NotYet as u8,
            cause as u8,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        true
    }

    /// Whether the deadline cancelled the token, before its own flag or its
    /// parent did. Asked once the work is over, it also settles a deadline
    /// that passed while nothing was looking.
    pub fn timed_out(&self) -> bool {
        self.is_cancelled() && self.0.cause.load(Ordering::Acquire) == Cause::Deadline as u8
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

/// The error a reader returns once its call is cancelled: the engine's
/// readers return it, and a reader handed to
/// `dsh_search::Tools::write_stream` (the command
/// line's standard input) returns it too, so that the call ends with the
/// tool's aborted error rather than an io error.
pub fn cancelled_error() -> std::io::Error {
    std::io::Error::other(Cancelled)
}

/// Whether `e` is [`cancelled_error`]'s error: a reader stopped because its
/// call was cancelled.
pub fn is_cancelled_error(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Cancelled>())
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn child_follows_parent_not_the_reverse() {
        let parent = CancelToken::new();
        let child = CancelToken::child(&parent, None);
        child.cancel();
        assert!(child.is_cancelled() && !parent.is_cancelled());
        let child = CancelToken::child(&parent, None);
        parent.cancel();
        assert!(child.is_cancelled());
        assert!(!child.timed_out());
    }

    #[test]
    fn deadline_cancels_and_says_so() {
        let parent = CancelToken::new();
        let past = Instant::now().checked_sub(Duration::from_millis(1));
        let child = CancelToken::child(&parent, past);
        assert!(child.is_cancelled());
        assert!(child.timed_out());
        // Latched: a cancellation after the timeout does not change it.
        parent.cancel();
        assert!(child.timed_out());
    }

    #[test]
    fn cancellation_before_the_deadline_is_not_a_timeout() {
        let parent = CancelToken::new();
        let far = Instant::now().checked_add(Duration::from_secs(3600));
        let child = CancelToken::child(&parent, far);
        assert!(!child.is_cancelled());
        parent.cancel();
        assert!(child.is_cancelled());
        assert!(!child.timed_out());
    }

    #[test]
    fn signal_flag_is_the_token() {
        let token = CancelToken::new();
        token.flag().store(true, Ordering::Release);
        assert!(token.is_cancelled());
    }
}
