//! The bottom of dsh-search: what the filesystems (`dsh-search-fs`), the
//! engine, the index and the tools (`dsh-search`) all share, and nothing
//! that knows of any of them.
//!
//! - [`cancel`]: [`CancelToken`], the cancellation a call shares with the
//!   work it started, and the io error of a reader stopped by it.
//! - [`sync`]: [`sync::RecoverPoison`], a lock taken past another thread's
//!   panic.
//! - [`js`]: JavaScript's `trim`, which the tools' argument checks and the
//!   filesystem's path resolution inherit from the original tools.
//! - [`quoting`]: how a file name is shown to the model (README, deliberate
//!   difference D6), by the tools and by an overlay's diff alike.
//!
//! `dsh-search` re-exports [`CancelToken`], [`cancelled_error`] and
//! [`sync`] where its users find them (`dsh_search::CancelToken`,
//! `dsh_search::sync`); the rest is its internals' and the filesystems'.

pub mod cancel;
pub mod js;
pub mod quoting;
pub mod sync;

pub use cancel::{cancelled_error, is_cancelled_error, CancelToken};
