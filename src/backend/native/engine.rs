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
/// first search and stopped when its last clone (a backend holds one) is
/// dropped, and its own memo and buffers: what one engine's searches leave never
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

/// The largest worker count: the bound [`set_search_threads`] has always
/// kept to (and `DSH_SEARCH_THREADS` with it).
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

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::*;
    use crate::backend::{NativeBackend, SearchBackend};
    use crate::event::Event;
    use crate::outcome::{GlobResults, GrepResults, Outcome, Status};
    use crate::request::{GlobRequest, GrepRequest};

    /// A tree with ignore files, a hidden file, an ignore file with an
    /// error and more files than one batch (`schedule::BATCH`), so that
    /// helpers with no delay join the walk.
    fn tree() -> tempfile::TempDir {
        let td = tempfile::tempdir().unwrap();
        let p = td.path();
        for dir in [".git", "src/deep", "docs", "target", "sub"] {
            fs::create_dir_all(p.join(dir)).unwrap();
        }
        fs::write(p.join(".gitignore"), "target/\n*.log\n").unwrap();
        fs::write(p.join("sub/.ignore"), "{a\n").unwrap();
        fs::write(p.join(".hidden"), "needle\n").unwrap();
        fs::write(p.join("a.log"), "needle\n").unwrap();
        fs::write(p.join("target/out.rs"), "needle\n").unwrap();
        for i in 0..24 {
            let body = format!("line {i}\nneedle {i}\nneedles and needle\n");
            fs::write(p.join(format!("src/f{i:02}.rs")), &body).unwrap();
            fs::write(p.join(format!("src/deep/g{i:02}.txt")), "no match\n").unwrap();
            fs::write(p.join(format!("docs/d{i:02}.md")), &body).unwrap();
        }
        fs::write(p.join("sub/s.rs"), "needle\n").unwrap();
        td
    }

    /// What a grep answered, its times zeroed: what two runs agree on.
    fn untimed(o: Outcome<GrepResults>) -> (Status, Vec<String>, Vec<Event>) {
        let events = o.results.events.into_iter().map(|mut e| {
            match &mut e {
                Event::End(end) => end.stats.elapsed = Duration::ZERO,
                Event::Summary(s) => {
                    s.elapsed_total = Duration::ZERO;
                    s.stats.elapsed = Duration::ZERO;
                }
                Event::Begin(_) | Event::Match(_) => {}
            }
            e
        });
        (o.status, o.stderr, events.collect())
    }

    fn glob(o: Outcome<GlobResults>) -> (Status, Vec<String>, Vec<Vec<u8>>) {
        (o.status, o.stderr, o.results.files)
    }

    fn own(threads: usize) -> Engine {
        Engine::builder()
            .threads(threads)
            .helper_delay(Duration::ZERO)
            .build()
    }

    #[test]
    fn engines_of_one_and_two_threads_answer_as_the_process_default() {
        let td = tree();
        let dir = td.path();
        let default = NativeBackend::new();
        for engine in [own(1), own(2)] {
            let backend = NativeBackend::new().with_engine(engine.clone());
            for (pattern, path) in [
                ("needle", None),
                ("needle$", Some("src")),
                ("needle", Some("docs/d03.md")),
                ("nothing", None),
                ("(", None),
            ] {
                let mut r = GrepRequest::new(pattern, dir);
                r.path = path.map(Into::into);
                let want = untimed(default.grep(&r));
                assert!(!want.2.is_empty() || want.0 != Status::Exited(0));
                let label = format!("{engine:?} {pattern:?} {path:?}");
                assert_eq!(untimed(backend.grep(&r)), want, "{label}");
            }
            for pattern in ["*.rs", "**/d0*", "*"] {
                let r = GlobRequest::new(pattern, dir);
                let label = format!("{engine:?} {pattern:?}");
                assert_eq!(glob(backend.glob(&r)), glob(default.glob(&r)), "{label}");
            }
        }
        // A new engine compiles the tree's ignore files again, and reports
        // their errors as the default does from its memo.
        let o = NativeBackend::new()
            .with_engine(own(1))
            .grep(&GrepRequest::new("needle", dir));
        let error = "./sub/.ignore: line 1: error parsing glob '{a'";
        assert!(o.stderr.iter().any(|l| l.contains(error)), "{:?}", o.stderr);
        assert!(!o.results.matches().any(|m| m.path.ends_with(b".log")));
    }

    #[test]
    fn an_engine_keeps_its_own_settings_and_state() {
        let td = tree();
        let one = Engine::builder()
            .threads(1)
            .helper_delay(Duration::from_millis(3))
            .build();
        let two = own(2);
        let memo_len = |e: &Engine| e.ignore_memo().lock().unwrap().len();
        assert_eq!((memo_len(&one), memo_len(&two)), (0, 0));
        assert_eq!(
            (one.spare_buffers().len(), two.spare_buffers().len()),
            (0, 0)
        );

        let r = GrepRequest::new("needle", td.path());
        let o = NativeBackend::new().with_engine(one.clone()).grep(&r);
        assert_eq!(o.status, Status::Exited(0), "{:?}", o.stderr);
        // What the search left is the engine's: its ignore files compiled,
        // its buffers given back; the other engine holds none of it.
        // `.gitignore` and `sub/.ignore` (and any of the parents').
        assert!(memo_len(&one) >= 2, "{}", memo_len(&one));
        assert!(one.spare_buffers().len() >= 1);
        assert_eq!((memo_len(&two), two.spare_buffers().len()), (0, 0));

        NativeBackend::new().with_engine(two.clone()).grep(&r);
        assert_eq!(memo_len(&two), memo_len(&one));
        assert_eq!(one.pool().current_num_threads(), 1);
        assert_eq!(two.pool().current_num_threads(), 2);
        assert!(!std::ptr::eq(one.pool(), two.pool()));
        assert!(!std::ptr::eq(one.pool(), process().pool()));

        // The process default's delay is set apart from the others'.
        let before = process().helper_delay();
        set_helper_delay(Duration::from_millis(7));
        let (one_delay, two_delay) = (one.helper_delay(), two.helper_delay());
        let set = Engine::process_default().helper_delay();
        set_helper_delay(before);
        assert_eq!(set, Duration::from_millis(7));
        assert_eq!(one_delay, Duration::from_millis(3));
        assert_eq!(two_delay, Duration::ZERO);
        assert_eq!(one.threads(), 1);
        assert_eq!(two.threads(), 2);
    }

    #[test]
    fn backends_share_the_process_default_unless_given_another() {
        let same = |a: &Engine, b: &Engine| Arc::ptr_eq(&a.inner, &b.inner);
        let default = Engine::process_default();
        assert!(same(NativeBackend::new().engine(), &default));
        let backend = NativeBackend::new().with_engine(own(1));
        assert!(!same(backend.engine(), &default));
        assert!(same(backend.clone().engine(), backend.engine()));
        assert!(!same(&own(1), &own(1)));
    }

    #[test]
    fn builder_counts() {
        let rg = rg_threads();
        assert_eq!(Engine::builder().build().threads(), rg);
        assert_eq!(Engine::builder().threads(0).build().threads(), rg);
        assert_eq!(Engine::builder().threads(1000).build().threads(), 64);
        assert_eq!(
            Engine::builder().build().helper_delay(),
            DEFAULT_HELPER_DELAY
        );
        // A builder's engine does not fix the process default's count.
        assert!(!set_search_threads(0));
        assert!(!set_search_threads(65));
    }

    /// A workspace's backend searches with the engine its options name.
    #[test]
    fn a_workspace_searches_with_its_engine() {
        let td = tree();
        let engine = own(1);
        let ws = crate::WorkspaceOptions::new(crate::FsSpec::Local)
            .engine(engine.clone())
            .open()
            .unwrap();
        let backend = ws.backend(&crate::Config::default());
        let o = backend.grep(&GrepRequest::new("needle", td.path()));
        assert!(o.results.matches().next().is_some(), "{:?}", o.stderr);
        assert!(engine.ignore_memo().lock().unwrap().len() >= 2);
        assert!(Path::new(td.path()).exists());
    }
}
