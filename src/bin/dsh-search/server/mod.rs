//! The tools served to other processes (`contract.md` §12): an MCP server
//! on stdio ([`mcp`], `dsh-search mcp`) and a JSON-lines server
//! ([`jsonl`], `dsh-search serve`).
//!
//! Both sit on [`Tools::call`] and the tools' definitions, and share what
//! is not protocol:
//!
//! - the [`Tools`] come from the command line's common setup
//!   ([`crate::cli::setup::make_tools`]: backend, configuration, spill
//!   store, filesystem, guard), so every common option applies as it does to
//!   one CLI call; a server keeps its sessions (read observations, guard
//!   counters) in memory for its life unless `--session` names a persistent
//!   one ([`tools_for`]);
//! - one connection is one session: its id is `--session`, else a random id
//!   drawn when the server starts ([`connection_session`]);
//! - the calls in flight are registered with their cancellation tokens
//!   (`InFlight`), so that a cancellation request, SIGINT, SIGTERM or
//!   SIGHUP (`on_signal`) stops them;
//! - stdout carries protocol messages only; every log line goes to stderr.

pub(crate) mod jsonl;
#[cfg(feature = "mcp")]
pub(crate) mod mcp;

use std::collections::HashMap;
use std::hash::Hash;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use dsh_search::tool::Tools;
use dsh_search::CancelToken;
use dsh_search::Sessions;

use crate::cli::Common;

/// How long a server waits, after a signal, for its cancelled calls to end
/// before it exits anyway. A cancelled search stops within milliseconds on
/// both backends (the rg backend's SIGKILL comes after `graceMs`).
pub(crate) const SIGNAL_DRAIN: Duration = Duration::from_secs(5);

/// The tools of a server over the common options.
///
/// With `--session` they are exactly the command line's: the observation
/// policy and the guard counters persist in the state directory, shared
/// with CLI calls of the same session. Without it the command line runs the
/// bare provider (a CLI process has no earlier reads); a server has them,
/// so it applies the policy, with the sessions (and the guard's counters)
/// held in its memory.
pub(crate) fn tools_for(common: &Common) -> Result<Tools, String> {
    let sessions = crate::cli::setup::session_store(common)?
        .unwrap_or_else(|| Arc::new(Sessions::in_memory()));
    let config = crate::cli::setup::load_config(common)?;
    crate::cli::setup::make_tools_with(common, config, Some(sessions))
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

/// The `id` and whether there is a `method` at the top of a line that did
/// not parse as a whole (nesting past serde_json's recursion limit, most
/// likely): the rest of the object is skipped without recursion, so a
/// request that nests too deep still gets its answer under its id.
pub(crate) fn envelope(line: &[u8]) -> Option<(Option<serde_json::Value>, bool)> {
    #[derive(serde::Deserialize)]
    struct Envelope {
        id: Option<serde_json::Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let e: Envelope = serde_json::from_slice(line).ok()?;
    let id = e.id.filter(|id| id.is_string() || id.is_number());
    Some((id, e.method.is_some()))
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
                closed: false,
            }),
            idle: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State<K>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Register a call: its token, or `None` when a call with the same key
    /// is still in flight. After [`InFlight::cancel_all`] the token comes
    /// back already cancelled.
    pub(crate) fn start(&self, key: K) -> Option<CancelToken> {
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
        Some(token)
    }

    /// The call `key` has its result: a cancellation can no longer reach
    /// it. Its answer is still to be written.
    pub(crate) fn settle(&self, key: &K) {
        self.lock().tokens.remove(key);
    }

    /// The call's answer is written (or dropped).
    pub(crate) fn finish(&self) {
        let mut st = self.lock();
        st.active = st.active.saturating_sub(1);
        if st.active == 0 {
            self.idle.notify_all();
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
                None => self.idle.wait(st).unwrap_or_else(|e| e.into_inner()),
                Some(d) => {
                    let left = d.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return false;
                    }
                    self.idle
                        .wait_timeout(st, left)
                        .unwrap_or_else(|e| e.into_inner())
                        .0
                }
            };
        }
        true
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

    use crate::cli::Common;

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

    use crate::cli::Common;

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
    use super::InFlight;
    use std::time::Duration;

    #[test]
    fn a_key_is_in_flight_once() {
        let f = InFlight::new();
        let t = f.start(1).unwrap();
        assert!(f.start(1).is_none());
        assert!(f.cancel(&1));
        assert!(t.is_cancelled());
        f.settle(&1);
        assert!(!f.cancel(&1));
        assert!(f.start(1).is_some(), "a settled key can be used again");
    }

    #[test]
    fn cancel_all_reaches_later_calls_and_wait_idle_counts_answers() {
        let f = InFlight::new();
        let a = f.start("a").unwrap();
        assert_eq!(f.cancel_all(), 1);
        assert!(a.is_cancelled());
        assert!(f.start("b").unwrap().is_cancelled());
        assert_eq!(f.active(), 2);
        assert!(!f.wait_idle(Some(Duration::from_millis(10))));
        f.settle(&"a");
        f.finish();
        f.settle(&"b");
        f.finish();
        assert!(f.wait_idle(Some(Duration::ZERO)));
    }
}
