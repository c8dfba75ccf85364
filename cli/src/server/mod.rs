//! The tools served to other processes (`contract.md` §12): an MCP server
//! on stdio ([`mcp`], `dsh-search mcp`) and a JSON-lines server
//! ([`jsonl`], `dsh-search serve`).
//!
//! Both sit on [`Tools::call`] and the tools' definitions, and share what
//! is not protocol:
//!
//! - the [`Tools`] come from the common setup the command line uses too
//!   ([`crate::setup::make_tools`]: backend, configuration, spill
//!   store, filesystem, guard), so every common option applies as it does to
//!   one CLI call; a server keeps its sessions (read observations, guard
//!   counters) in memory for its life unless `--session` names a persistent
//!   one ([`tools_for`]);
//! - one connection is one session: its id is `--session`, else a random id
//!   drawn when the server starts ([`connection_session`]);
//! - the calls in flight are registered with their cancellation tokens
//!   (`InFlight`), so that a cancellation request, SIGINT, SIGTERM or
//!   SIGHUP (`on_signal`) stops them;
//! - stdout carries protocol messages only; every log line goes to stderr;
//! - the same bounds on what a client may cost: a request line's bytes
//!   and JSON values ([`decode`]), the calls in flight
//!   ([`MAX_CALLS_IN_FLIGHT`], [`MAX_BYTES_IN_FLIGHT`]), and the answers
//!   waiting for a client that does not read them ([`MAX_BACKLOG`]: the
//!   server stops reading until they are written).

pub(crate) mod decode;
pub(crate) mod jsonl;
mod lines;
pub(crate) mod log;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;
#[cfg(feature = "mcp")]
pub(crate) mod mcp_decode;
#[cfg(feature = "mcp")]
mod mcp_result;

use dsh_search::sync::RecoverPoison;
use std::collections::HashMap;
use std::hash::Hash;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dsh_search::tool::Tools;
use dsh_search::CancelToken;
use dsh_search::Sessions;

use crate::setup::Common;

/// How long a server waits, after a signal, for its cancelled calls to end
/// and its log to be written before it exits anyway. A cancelled search stops within milliseconds on
/// both backends (the rg backend's SIGKILL comes after `graceMs`).
pub(crate) const SIGNAL_DRAIN: Duration = Duration::from_secs(5);

/// The most calls (MCP: requests) a server holds at once, running or
/// waiting for a worker or for stdout: with that many in flight it reads
/// nothing more until one has answered.
pub(crate) const MAX_CALLS_IN_FLIGHT: usize = 1024;

/// The request bytes the calls in flight may hold together (each counts
/// its line's length) before the server stops reading; the line read last
/// may pass it, by at most [`decode::MAX_LINE_BYTES`].
pub(crate) const MAX_BYTES_IN_FLIGHT: usize = 256 << 20;

/// The most answers that may wait for stdout before the server stops
/// reading requests: a client that does not read its answers is not read
/// either, as a pipe's writer is blocked by a reader that stops.
pub(crate) const MAX_BACKLOG: usize = 16;

/// Whether `calls` in flight holding `bytes` leave room for another.
pub(crate) fn room(calls: usize, bytes: usize) -> bool {
    calls < MAX_CALLS_IN_FLIGHT && bytes < MAX_BYTES_IN_FLIGHT
}

/// The answers waiting to be written, and a wait for their number to
/// fall: the flow control of both servers.
#[derive(Default)]
pub(crate) struct Backlog {
    waiting: Mutex<usize>,
    fell: Condvar,
}

/// One answer waiting, until dropped.
pub(crate) struct Waiting<'a>(&'a Backlog);

impl Backlog {
    fn lock(&self) -> MutexGuard<'_, usize> {
        self.waiting.lock().recover_poison()
    }

    /// Count one answer waiting until the guard drops.
    pub(crate) fn enter(&self) -> Waiting<'_> {
        *self.lock() += 1;
        Waiting(self)
    }

    /// Block until fewer than `max` answers wait.
    pub(crate) fn wait_below(&self, max: usize) {
        let mut waiting = self.lock();
        while *waiting >= max {
            waiting = self.fell.wait(waiting).recover_poison();
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        *self.0.lock() -= 1;
        self.0.fell.notify_all();
    }
}

/// The tools of a server over the common options.
///
/// With `--session` they are exactly the command line's: the observation
/// policy and the guard counters persist in the state directory, shared
/// with CLI calls of the same session. Without it the command line runs the
/// bare provider (a CLI process has no earlier reads); a server has them,
/// so it applies the policy, with the sessions (and the guard's counters)
/// held in its memory.
pub(crate) fn tools_for(common: &Common) -> Result<Tools, String> {
    let sessions =
        crate::setup::session_store(common)?.unwrap_or_else(|| Arc::new(Sessions::in_memory()));
    let config = crate::setup::load_config(common)?;
    crate::setup::make_tools_with(common, config, Some(sessions))
}

/// The session id of a connection: `--session`, else `<prefix>-` and 16
/// random hex digits, new for every server process (one process serves one
/// connection).
pub(crate) fn connection_session(common: &Common, prefix: &str) -> String {
    if let Some(id) = &common.session {
        return id.clone();
    }
    let mut bytes = [0u8; 8];
    // Without randomness the id is still unique per process; only its
    // unpredictability is lost, which nothing relies on.
    if getrandom::fill(&mut bytes).is_err() {
        bytes = u64::from(std::process::id()).to_le_bytes();
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}-{hex}")
}

/// The server's base workdir: `--cwd` (made absolute), else the current
/// directory.
pub(crate) fn base_workdir(common: &Common) -> Result<PathBuf, String> {
    common
        .workdir()
        .and_then(std::path::absolute)
        .map_err(|e| format!("cannot determine the working directory: {e}"))
}

/// The calls a server is running, by key: their cancellation tokens, so
/// that a cancellation or a signal reaches them, and a count of the calls
/// that have not answered yet, so that the server can wait for them.
pub(crate) struct InFlight<K> {
    state: Mutex<State<K>>,
    idle: Condvar,
}

struct State<K> {
    tokens: HashMap<K, CancelToken>,
    /// Calls started and not yet answered (a call leaves `tokens` just
    /// before its answer is written, and `active` just after).
    active: usize,
    /// The request bytes of those calls.
    bytes: usize,
    /// Set by [`InFlight::cancel_all`]: a call that starts later is
    /// cancelled at once.
    closed: bool,
}

impl<K: Eq + Hash> InFlight<K> {
    pub(crate) fn new() -> InFlight<K> {
        InFlight {
            state: Mutex::new(State {
                tokens: HashMap::new(),
                active: 0,
                bytes: 0,
                closed: false,
            }),
            idle: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().recover_poison()
    }

    /// Register a call of `cost` request bytes: its token, or `None` when
    /// a call with the same key is still in flight. After
    /// [`InFlight::cancel_all`] the token comes back already cancelled.
    pub(crate) fn start(&self, key: K, cost: usize) -> Option<CancelToken> {
        let mut st = self.lock();
        if st.tokens.contains_key(&key) {
            return None;
        }
        let token = CancelToken::new();
        if st.closed {
            token.cancel();
        }
        st.tokens.insert(key, token.clone());
        st.active += 1;
        st.bytes += cost;
        Some(token)
    }

    /// The call `key` has its result: a cancellation can no longer reach
    /// it. Its answer is still to be written.
    pub(crate) fn settle(&self, key: &K) {
        self.lock().tokens.remove(key);
    }

    /// The call of `cost` request bytes has its answer written (or
    /// dropped).
    pub(crate) fn finish(&self, cost: usize) {
        let mut st = self.lock();
        st.active = st.active.saturating_sub(1);
        st.bytes = st.bytes.saturating_sub(cost);
        // Wakes `wait_idle` and `wait_room` alike.
        self.idle.notify_all();
    }

    /// Block until the calls in flight leave [`room`] for another.
    pub(crate) fn wait_room(&self) {
        let mut st = self.lock();
        while !room(st.active, st.bytes) {
            st = self.idle.wait(st).recover_poison();
        }
    }

    /// Cancel the call `key`; whether it was in flight.
    pub(crate) fn cancel(&self, key: &K) -> bool {
        match self.lock().tokens.get(key) {
            Some(token) => {
                token.cancel();
                true
            }
            None => false,
        }
    }

    /// Cancel every call in flight and every call that starts from now on;
    /// how many calls it reached (a call that has its result already is
    /// past cancelling, though its answer may not be written yet).
    pub(crate) fn cancel_all(&self) -> usize {
        let mut st = self.lock();
        st.closed = true;
        for token in st.tokens.values() {
            token.cancel();
        }
        st.tokens.len()
    }

    /// The number of calls not yet answered.
    #[cfg(test)]
    fn active(&self) -> usize {
        self.lock().active
    }

    /// Wait until every call has answered, at most `limit` (forever for
    /// `None`); whether they all did.
    pub(crate) fn wait_idle(&self, limit: Option<Duration>) -> bool {
        let deadline = limit.and_then(|l| Instant::now().checked_add(l));
        let mut st = self.lock();
        while st.active > 0 {
            st = match deadline {
                None => self.idle.wait(st).recover_poison(),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.idle.wait_timeout(st, left).recover_poison().0
                }
            };
        }
        true
    }
}

/// A server's last step before the process exits, at EOF or at a signal:
/// a save of the index in flight ends (at most `save` more), then the
/// queued log lines are written (at most [`log::FLUSH`]).
pub(crate) fn finish(save: Duration) {
    if !crate::setup::workspace::finish_saves(save) {
        log::line(
            "index",
            format_args!(
                "the index's save did not end in {} s; the next start builds it from the tree",
                save.as_secs()
            ),
        );
    }
    log::flush(log::FLUSH);
}

/// How long a server that reached the end of its input waits for a save
/// of the index in flight (the Linux tree's takes about a second).
pub(crate) const SAVE_DRAIN: Duration = Duration::from_secs(60);

/// A server's stop on a signal ([`on_signal`]): cancel the calls in
/// flight (`inflight` of `server`), wait up to [`SIGNAL_DRAIN`] for them
/// to answer, exit 0; each step said through `log`. A server whose signals
/// could not be armed runs on without them, and says so.
pub(crate) fn drain_on_signal<S, K>(
    common: &Common,
    server: Arc<S>,
    inflight: fn(&S) -> &InFlight<K>,
    log: fn(std::fmt::Arguments<'_>),
) where
    S: Send + Sync + 'static,
    K: Eq + Hash + 'static,
{
    let armed = on_signal(common, move |signal| {
        let calls = inflight(&server);
        // Counted as cancelled: a call answered a moment ago is no longer
        // in flight, though its answer's bookkeeping may not be done.
        let cancelled = calls.cancel_all();
        log(format_args!(
            "{signal}: cancelling {cancelled} call(s) in flight"
        ));
        // The queued log lines get what is left of the drain: a stderr
        // nobody reads must not hold the stop (`log`).
        calls.wait_idle(Some(SIGNAL_DRAIN.saturating_sub(log::FLUSH)));
        finish(SIGNAL_DRAIN);
        std::process::exit(0);
    });
    if let Err(e) = armed {
        log(format_args!(
            "signals will not stop the calls in flight: {e}"
        ));
    }
}

/// Run `stop` on a thread of its own when SIGINT, SIGTERM or SIGHUP
/// arrives (the first one only).
///
/// # Platform behavior
///
/// On Unix a signal-hook iterator thread waits for the signals. Elsewhere
/// the flag that the command line registers for the signals it can catch
/// (`common.cancel`, set on Ctrl-C) is polled every 50 ms.
pub(crate) fn on_signal(
    common: &Common,
    stop: impl FnOnce(&'static str) + Send + 'static,
) -> std::io::Result<()> {
    imp::on_signal(common, stop)
}

#[cfg(unix)]
mod imp {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;

    use crate::setup::Common;

    pub(super) fn on_signal(
        _common: &Common,
        stop: impl FnOnce(&'static str) + Send + 'static,
    ) -> std::io::Result<()> {
        let mut signals = Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        std::thread::Builder::new()
            .name("dsh-signals".to_string())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    stop(match signal {
                        SIGINT => "SIGINT",
                        SIGTERM => "SIGTERM",
                        _ => "SIGHUP",
                    });
                }
            })?;
        Ok(())
    }
}

#[cfg(not(unix))]
mod imp {
    use std::time::Duration;

    use crate::setup::Common;

    pub(super) fn on_signal(
        common: &Common,
        stop: impl FnOnce(&'static str) + Send + 'static,
    ) -> std::io::Result<()> {
        let flag = common.cancel.clone();
        std::thread::Builder::new()
            .name("dsh-signals".to_string())
            .spawn(move || {
                while !flag.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(50));
                }
                stop("a console signal");
            })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{room, InFlight, MAX_BYTES_IN_FLIGHT, MAX_CALLS_IN_FLIGHT};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn wait_room_blocks_at_the_count_or_the_bytes_until_a_call_finishes() {
        assert!(room(MAX_CALLS_IN_FLIGHT - 1, MAX_BYTES_IN_FLIGHT - 1));
        assert!(!room(MAX_CALLS_IN_FLIGHT, 0));
        assert!(!room(0, MAX_BYTES_IN_FLIGHT));
        let f = Arc::new(InFlight::new());
        f.start("big", MAX_BYTES_IN_FLIGHT).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let waiter = Arc::clone(&f);
        let t = std::thread::spawn(move || {
            waiter.wait_room();
            tx.send(()).unwrap();
        });
        assert!(rx.recv_timeout(Duration::from_millis(100)).is_err());
        f.settle(&"big");
        f.finish(MAX_BYTES_IN_FLIGHT);
        rx.recv().unwrap();
        t.join().unwrap();
    }

    #[test]
    fn a_key_is_in_flight_once() {
        let f = InFlight::new();
        let t = f.start(1, 0).unwrap();
        assert!(f.start(1, 0).is_none());
        assert!(f.cancel(&1));
        assert!(t.is_cancelled());
        f.settle(&1);
        assert!(!f.cancel(&1));
        assert!(f.start(1, 0).is_some(), "a settled key can be used again");
    }

    #[test]
    fn cancel_all_reaches_later_calls_and_wait_idle_counts_answers() {
        let f = InFlight::new();
        let a = f.start("a", 0).unwrap();
        assert_eq!(f.cancel_all(), 1);
        assert!(a.is_cancelled());
        assert!(f.start("b", 0).unwrap().is_cancelled());
        assert_eq!(f.active(), 2);
        assert!(!f.wait_idle(Some(Duration::from_millis(10))));
        f.settle(&"a");
        f.finish(0);
        f.settle(&"b");
        f.finish(0);
        assert!(f.wait_idle(Some(Duration::ZERO)));
    }
}
