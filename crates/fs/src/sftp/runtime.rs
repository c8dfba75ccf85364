//! The bridge from the synchronous seam to the asynchronous client: the
//! engine's threads block on their own work, run on the workspace's
//! private Tokio runtime with the workspace's timeout, and stop when the
//! call is cancelled.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use dsh_search_base::cancel::CancelToken;

use super::session::Session;
use super::SftpFs;

impl SftpFs {
    /// Run `work` on the first session, waiting at most the timeout, and
    /// stopping as soon as `cancel` is set: the outstanding requests are
    /// abandoned (their replies dropped when they come), the connection
    /// stays usable.
    pub(super) fn run<T, Fut>(
        &self,
        cancel: Option<&CancelToken>,
        work: impl FnOnce(Arc<Session>) -> Fut,
    ) -> io::Result<T>
    where
        Fut: Future<Output = io::Result<T>>,
    {
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(cancelled());
        }
        let session = self.session()?;
        let url = self.target.url();
        let timeout = self.timeout;
        self.rt.block_on(async move {
            let work = work(session);
            tokio::pin!(work);
            let deadline = tokio::time::sleep(timeout);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    r = &mut work => return r,
                    _ = &mut deadline => return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        format!("{url}: no answer within {} s", timeout.as_secs_f64()),
                    )),
                    _ = tokio::time::sleep(Duration::from_millis(20)), if cancel.is_some() => {
                        if cancel.is_some_and(CancelToken::is_cancelled) {
                            return Err(cancelled());
                        }
                    }
                }
            }
        })
    }
}

/// The error of a call stopped by its cancellation.
pub(super) fn cancelled() -> io::Error {
    io::Error::new(io::ErrorKind::Interrupted, "cancelled")
}
