//! The servers' log lines on stderr, written off the call path
//! (`contract.md` §12, "stderr"): a line is queued and a thread of its own
//! writes it, so that a stderr nobody reads (a full pipe blocks a write; a
//! closed one fails it) never blocks an answer, a call's end or the stop
//! at a signal, and never panics a thread that logs (`eprintln!` panics
//! when the write fails, which left a call unfinished and the server
//! waiting for it forever).
//!
//! At most [`QUEUE`] lines wait; past that a line is dropped and counted,
//! and the count is written before the next line that gets through. A
//! server that stops gives the queue [`FLUSH`] to drain ([`flush`]).

use std::collections::VecDeque;
use std::fmt;
use std::io::Write;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use dsh_search::sync::RecoverPoison;

/// The most lines that wait for stderr.
const QUEUE: usize = 256;

/// How long a stopping server waits for its queued lines to be written.
pub(crate) const FLUSH: Duration = Duration::from_secs(1);

struct Log {
    state: Mutex<State>,
    /// A line was queued.
    queued: Condvar,
    /// The queue was written out.
    written: Condvar,
}

struct State {
    lines: VecDeque<String>,
    /// Lines dropped since the last one written.
    dropped: u64,
    /// The writer holds a line it has not finished writing.
    writing: bool,
}

static LOG: Log = Log {
    state: Mutex::new(State {
        lines: VecDeque::new(),
        dropped: 0,
        writing: false,
    }),
    queued: Condvar::new(),
    written: Condvar::new(),
};

/// Whether the writer thread runs (started by the first line); without
/// it lines are dropped.
static WRITER: OnceLock<bool> = OnceLock::new();

/// Queue `dsh-search <server>: <msg>` for stderr; never blocks.
pub(crate) fn line(server: &str, msg: fmt::Arguments<'_>) {
    let started = WRITER.get_or_init(|| {
        std::thread::Builder::new()
            .name("dsh-log".to_string())
            .spawn(writer)
            .is_ok()
    });
    if !started {
        return;
    }
    let text = format!("dsh-search {server}: {msg}\n");
    let mut st = LOG.state.lock().recover_poison();
    if st.lines.len() >= QUEUE {
        st.dropped += 1;
        return;
    }
    st.lines.push_back(text);
    LOG.queued.notify_one();
}

/// Route panic messages through the queue: the default hook writes to
/// stderr from the panicking thread, and blocks there when nobody reads.
pub(crate) fn catch_panics(server: &'static str) {
    std::panic::set_hook(Box::new(move |info| line(server, format_args!("{info}"))));
}

/// Wait until the queued lines are written, at most `limit`; whether they
/// were.
pub(crate) fn flush(limit: Duration) -> bool {
    if WRITER.get() != Some(&true) {
        return true;
    }
    let log = &LOG;
    let deadline = Instant::now() + limit;
    let mut st = log.state.lock().recover_poison();
    while st.writing || !st.lines.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        st = log.written.wait_timeout(st, left).recover_poison().0;
    }
    true
}

/// The writer thread: each line as it comes, errors ignored (a client that
/// closed stderr loses its log, nothing else).
fn writer() {
    let log = &LOG;
    let mut st = log.state.lock().recover_poison();
    loop {
        let Some(text) = st.lines.pop_front() else {
            st.writing = false;
            log.written.notify_all();
            st = log.queued.wait(st).recover_poison();
            continue;
        };
        let dropped = std::mem::take(&mut st.dropped);
        st.writing = true;
        drop(st);
        let mut err = std::io::stderr().lock();
        if dropped > 0 {
            let _ = writeln!(
                err,
                "dsh-search: {dropped} log line(s) dropped: stderr was not read"
            );
        }
        let _ = err.write_all(text.as_bytes());
        drop(err);
        st = log.state.lock().recover_poison();
    }
}
