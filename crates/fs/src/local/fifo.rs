//! Reading an explicitly named FIFO without blocking forever.
//!
//! rg opens a FIFO with a blocking `open(2)` and waits for a writer (W7). We
//! open it `O_NONBLOCK` and `poll(2)` with a short timeout, so the same wait
//! ends when the call is cancelled. On Linux a FIFO that never had a writer
//! does not report `POLLHUP`, so the poll keeps waiting like rg's open does;
//! once the last writer leaves, `read` returns 0 (end of file), as for rg.

use std::fs::File;
use std::io::{self, Read};

use rustix::event::{poll, PollFd, PollFlags};

use dsh_search_base::cancel::CancelToken;

/// Poll interval: how long a cancelled call may keep waiting.
const TICK_MS: i32 = 50;

/// A FIFO reader that gives up with an error once the token is cancelled.
#[derive(Debug)]
pub(super) struct FifoReader {
    file: File,
    cancel: CancelToken,
}

impl FifoReader {
    /// A reader of `file`, a FIFO opened `O_NONBLOCK`.
    pub(super) fn of(file: File, cancel: CancelToken) -> FifoReader {
        FifoReader { file, cancel }
    }
}

impl Read for FifoReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(dsh_search_base::cancel::cancelled_error());
            }
            let mut fds = [PollFd::new(&self.file, PollFlags::IN)];
            let timeout = rustix::event::Timespec {
                tv_sec: 0,
                tv_nsec: i64::from(TICK_MS) * 1_000_000,
            };
            match poll(&mut fds, Some(&timeout)) {
                Ok(0) => continue,
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            match self.file.read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }
}
