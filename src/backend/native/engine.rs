//! The engine's settings and what it keeps between calls: [`Engine`].
//!
//! A search needs threads, and is faster for what earlier searches left:
//! the compiled ignore files (a long-lived workspace reads the same few
//! hundred at every call) and the buffers its threads read into. These
//! belong to an engine value, not to the process, so that a library user
//! can give one backend its own worker count or helper delay without
//! changing another's. Every backend shares one engine unless it is given
//! another ([`Engine::process_default`]): a process that never builds one
//! has one pool, one memo and one set of spare buffers, as a command-line
//! `rg` would have.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use super::rgignore::IgnoreMemo;
use super::worker::SpareBuffers;

/// The native engine's settings and the state it keeps between calls: its
/// worker threads, how soon they join a grep, the compiled ignore files and
/// the search buffers. Cheap to clone: clones share all of it.
///
/// A [`NativeBackend`](super::NativeBackend) searches with the process
/// default ([`Engine::process_default`]) unless it is given another
/// ([`NativeBackend::with_engine`](super::NativeBackend::with_engine)).
/// An engine built with [`EngineBuilder`] has its own pool, started at its
/// first search and stopped when the last backend holding it is dropped,
/// and its own memo and buffers: what one engine's searches leave never
/// serves another's. No setting changes what a search returns.
///
/// ```
/// use std::time::Duration;
/// use dsh_search::{Engine, GrepRequest, NativeBackend, SearchBackend};
///
/// let engine = Engine::builder().threads(1).helper_delay(Duration::ZERO).build();
/// let backend = NativeBackend::new().with_engine(engine);
/// let outcome = backend.grep(&GrepRequest::new("fn main", env!("CARGO_MANIFEST_DIR")).path("src"));
/// assert!(outcome.status.exit_code().is_some());
/// assert_eq!(backend.engine().threads(), 1);
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    /// The worker count; `None` for the process default, whose count is
    /// [`set_search_threads`]'s, fixed at the first look.
    threads: Option<usize>,
    /// How long a grep runs alone first, in microseconds: changed only for
    /// the process default ([`set_helper_delay`]).
    helper_delay_us: AtomicU64,
    pool: OnceLock<rayon::ThreadPool>,
    ignore_memo: IgnoreMemo,
    spare_buffers: SpareBuffers,
}

/// The helper delay unless set: see [`EngineBuilder::helper_delay`].
const DEFAULT_HELPER_DELAY: Duration = Duration::from_micros(500);

/// The largest worker count: more threads than this only wait on each
/// other's locks.
const MAX_THREADS: usize = 64;

impl Engine {
    /// A builder for an engine of its own.
    pub fn builder() -> EngineBuilder {
        EngineBuilder::new()
    }

    /// The engine every backend shares unless given another: its worker
    /// count is the one [`set_search_threads`] gave the process (else rg's),
    /// its helper delay the one [`set_helper_delay`] last set.
    pub fn process_default() -> Engine {
        process().clone()
    }

    /// The worker count. For the process default, asking fixes it, as its
    /// first search does ([`set_search_threads`] then changes nothing).
    pub fn threads(&self) -> usize {
        self.inner.threads.unwrap_or_else(process_threads)
    }

    /// How long a grep of a directory runs on the calling thread alone
    /// before the engine's other threads join it.
    pub fn helper_delay(&self) -> Duration {
        Duration::from_micros(self.inner.helper_delay_us.load(Ordering::Relaxed))
    }

    /// The engine's worker threads: started at its first search and shared
    /// by every call, so a call on a small tree starts no thread of its
    /// own. The pool is the engine's own (not rayon's global one, which the
    /// embedding program may size or use), and its threads are named so
    /// that they are not taken for threads a call left behind.
    pub(super) fn pool(&self) -> &rayon::ThreadPool {
        self.inner.pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads())
                .thread_name(|i| format!("dsh-search-{i}"))
                .build()
                // Like `std::thread::spawn` (and so the walker): no thread,
                // no search.
                .expect("the search threads start")
        })
    }

    /// The ignore files compiled by this engine's searches (`rgignore`).
    pub(super) fn ignore_memo(&self) -> &IgnoreMemo {
        &self.inner.ignore_memo
    }

    /// The search buffers this engine's calls gave back (`worker`).
    pub(super) fn spare_buffers(&self) -> &SpareBuffers {
        &self.inner.spare_buffers
    }

    fn with(threads: Option<usize>, helper_delay: Duration) -> Engine {
        Engine {
            inner: Arc::new(Inner {
                threads,
                helper_delay_us: AtomicU64::new(micros(helper_delay)),
                pool: OnceLock::new(),
                ignore_memo: IgnoreMemo::default(),
                spare_buffers: SpareBuffers::default(),
            }),
        }
    }
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The process default's count only once fixed: a look here must
        // not fix it.
        let threads = self.inner.threads.or_else(|| THREADS.get().copied());
        f.debug_struct("Engine")
            .field("threads", &threads)
            .field("helper_delay", &self.helper_delay())
            .field("started", &self.inner.pool.get().is_some())
            .finish()
    }
}

/// The process default ([`Engine::process_default`]).
pub(super) fn process() -> &'static Engine {
    static PROCESS: OnceLock<Engine> = OnceLock::new();
    PROCESS.get_or_init(|| Engine::with(None, DEFAULT_HELPER_DELAY))
}

/// Builds an [`Engine`] with settings of its own.
#[derive(Clone, Debug)]
pub struct EngineBuilder {
    config: Config,
}

#[derive(Clone, Debug)]
struct Config {
    threads: Option<usize>,
    helper_delay: Duration,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            threads: None,
            helper_delay: DEFAULT_HELPER_DELAY,
        }
    }
}

impl Default for EngineBuilder {
    fn default() -> EngineBuilder {
        EngineBuilder::new()
    }
}

impl EngineBuilder {
    /// A builder with the default settings.
    pub fn new() -> EngineBuilder {
        EngineBuilder {
            config: Config::default(),
        }
    }

    /// A new engine with these settings; its threads start at its first
    /// search.
    pub fn build(&self) -> Engine {
        let threads = self.config.threads.unwrap_or_else(rg_threads);
        Engine::with(Some(threads), self.config.helper_delay)
    }

    /// The number of worker threads; a count above 64 is taken as 64.
    ///
    /// By default (or given zero, as for `ignore::WalkBuilder::threads`),
    /// rg's: the available parallelism, at most 12, whatever
    /// [`set_search_threads`] gave the process default.
    pub fn threads(&mut self, n: usize) -> &mut EngineBuilder {
        self.config.threads = (n > 0).then_some(n.min(MAX_THREADS));
        self
    }

    /// How long a grep of a directory runs on the calling thread alone
    /// before the engine's other threads join it; zero lets them join at
    /// the first batch.
    ///
    /// A thread asleep in the pool can take hundreds of microseconds to
    /// start on a virtual machine, and a call waits for every thread it
    /// started, even one that arrives when all is done: a small workspace
    /// is searched sooner alone, while a large tree loses little by
    /// starting alone (BENCHMARKS.md, "Tiny workspace"). The results never
    /// depend on it.
    ///
    /// By default, 500 µs.
    pub fn helper_delay(&mut self, delay: Duration) -> &mut EngineBuilder {
        self.config.helper_delay = delay;
        self
    }
}

/// The worker count [`set_search_threads`] chose, if it was called.
static THREADS: OnceLock<usize> = OnceLock::new();

/// Set the process default engine's worker count (1 to 64), instead of
/// rg's (`hiargs.rs: threads`: the available parallelism, at most 12).
/// Its workers start at its first search: call this before it. The command
/// line and the Node binding pass `DSH_SEARCH_THREADS` through
/// [`set_search_threads_from_env`]; no search reads the variable. An engine
/// of its own takes its count from [`EngineBuilder::threads`] instead.
///
/// Returns `false`, changing nothing, for a count out of range or once the
/// count is fixed (by an earlier call or by the first search).
pub fn set_search_threads(n: usize) -> bool {
    (1..=MAX_THREADS).contains(&n) && THREADS.set(n).is_ok()
}

/// [`set_search_threads`] from `DSH_SEARCH_THREADS=<n>`, for the
/// programs built on the library (the command line and its benches, the
/// Node binding) to read the variable one way; the library's own searches
/// never read it. A value that is not a count from 1 to 64 is ignored, as
/// is a call once the count is fixed. Returns whether it set the count.
pub fn set_search_threads_from_env() -> bool {
    std::env::var("DSH_SEARCH_THREADS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .is_some_and(set_search_threads)
}

/// The process default's worker count: the one [`set_search_threads`]
/// set, else rg's, fixed at the first look.
fn process_threads() -> usize {
    *THREADS.get_or_init(rg_threads)
}

/// rg's worker count (`hiargs.rs: threads`): the available parallelism, at
/// most 12. The lookup reads cgroup files each time.
fn rg_threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(12)
}

/// Set how long a grep of a directory run with the process default engine
/// runs on the calling thread alone before its other threads join it
/// (500 µs unless set; zero lets them join at the first batch), for the
/// calls that start after this. [`EngineBuilder::helper_delay`] says why;
/// an engine of its own takes its delay from there, and this changes
/// nothing for it.
pub fn set_helper_delay(delay: Duration) {
    process()
        .inner
        .helper_delay_us
        .store(micros(delay), Ordering::Relaxed);
}

fn micros(delay: Duration) -> u64 {
    u64::try_from(delay.as_micros()).unwrap_or(u64::MAX)
}
