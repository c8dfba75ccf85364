//! A live index of a tree for long-lived workspaces (`docs/index.md`): a
//! mirror of the tree's names, kinds and metadata, with each text file's
//! trigrams, kept current by the filesystem's feed of changes (a watcher
//! on the local disk, the filesystem's own journal in memory, both layers'
//! through an overlay) or, over SFTP, by listing the tree again, settled
//! before every call. glob walks the mirror instead of the filesystem;
//! grep opens only the files whose trigrams the pattern's required
//! literals admit. The engine is the same as the scan's, over a
//! [`FileSystem`](crate::fs::FileSystem) view of the mirror, so every
//! answer is the scan's, byte for byte.
//!
//! Opt-in: [`WorkspaceOptions::index`](crate::WorkspaceOptions::index).

mod grams;
mod mirror;
mod saved;
#[cfg(fuzzing)]
pub(crate) use saved::fuzz as fuzz_saved;
mod source;
mod validate;
mod view;
mod watch;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

use crate::backend::{Engine, NativeBackend, SearchBackend};
use crate::fs::LocalFs;
use crate::outcome::{GlobResults, GrepResults, Outcome};
use crate::request::{GlobRequest, GrepRequest};
use crate::sync::RecoverPoison;

use mirror::{DirNode, Lost, Poll, Scanner, WATCH_LIMIT};
use source::Feed;
pub(crate) use source::Source;

/// A live index of one directory of a workspace's filesystem. Cheap to
/// clone (a handle); the feed and the mirror live as long as some clone
/// does.
///
/// Built in the background from [`Index::start`] (the local disk) or a
/// workspace ([`WorkspaceOptions::index`](crate::WorkspaceOptions::index)):
/// until it is ready, and whenever it cannot vouch for its mirror (a
/// watcher overflow, the watch limit, the root replaced), calls are
/// answered by the scan.
#[derive(Clone)]
pub struct Index {
    inner: Arc<dyn Live>,
}

/// How an index learns of the changes to its tree (`docs/index.md`, "How
/// it stays current"): `--index-watch`, the configuration's `indexWatch`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IndexWatch {
    /// The filesystem's feed of changes: on the local disk, the operating
    /// system's watcher where there is one (inotify on Linux); where there
    /// is none (off Linux, past the watch limit, a network filesystem),
    /// validation as with [`IndexWatch::None`]. In memory and through an
    /// overlay, their journals; over SFTP, the tree listed again at each
    /// call. The default.
    #[default]
    Os,
    /// No watcher: at each call the mirror is checked against the tree by a
    /// parallel walk of its metadata, and only the files whose metadata
    /// changed are read again (`docs/index.md`, "Where there is no
    /// watcher"). On any filesystem but SFTP, which is always listed again.
    None,
}

impl IndexWatch {
    /// Its name on the command line and in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            IndexWatch::Os => "os",
            IndexWatch::None => "none",
        }
    }
}

impl std::str::FromStr for IndexWatch {
    type Err = String;

    /// `os` or `none`; anything else is refused, the values named.
    fn from_str(s: &str) -> Result<IndexWatch, String> {
        match s {
            "os" => Ok(IndexWatch::Os),
            "none" => Ok(IndexWatch::None),
            _ => Err(format!(
                "unknown index watch {s:?}: expected \"os\" (the system's watcher, where there is one) or \"none\" (validate the mirror at each call)"
            )),
        }
    }
}

impl fmt::Display for IndexWatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An index over one kind of filesystem, as [`Index`] uses it.
trait Live: Send + Sync {
    fn root(&self) -> &Path;
    fn rescan(&self);
    fn simulate_overflow(&self);
    fn wait_ready(&self, timeout: Duration) -> bool;
    fn wait_saved(&self, timeout: Duration) -> bool;
    fn finish_save(&self, timeout: Duration) -> bool;
    fn status(&self) -> IndexStatus;
    fn settle(&self) -> bool;
    fn glob(&self, req: &GlobRequest) -> (Outcome<GlobResults>, Answer);
    fn grep(&self, req: &GrepRequest) -> (Outcome<GrepResults>, Answer);
}

struct Inner<S: Source> {
    /// Itself, for the builds it starts.
    me: Weak<Inner<S>>,
    root: PathBuf,
    fs: Arc<S>,
    /// The scan: the engine on the filesystem itself.
    scan: NativeBackend<S>,
    watch_limit: Option<usize>,
    /// Whether to use the filesystem's feed of changes where it has one.
    watch: IndexWatch,
    /// Where the mirror is saved between processes (`saved.rs`), for a
    /// filesystem that can check it (`Source::SAVES`).
    store: Option<saved::Store>,
    state: Mutex<State<S>>,
    changed: Condvar,
    by_index: AtomicU64,
    by_scan: AtomicU64,
    builds: AtomicU64,
    /// Files grep's prefilter spared the engine.
    skipped: Arc<AtomicU64>,
    /// Directories listed from the mirror.
    listed: Arc<AtomicU64>,
    /// [`Index::simulate_overflow`] was called.
    overflow: AtomicBool,
    /// The prefilter's answers by directory for the last few queries
    /// (`view::Remembered`), the most recent first.
    remembered: Mutex<Vec<(grams::Query, Arc<view::Remembered>)>>,
    /// grep's walks kept while the mirror is unchanged (`view::KeptWalks`).
    walks: Arc<view::KeptWalks>,
    /// Files the validations read ([`IndexStatus::validation_reads`]).
    validation_reads: AtomicU64,
}

/// How many queries' answers are kept ([`Inner::remembered`]): each holds
/// up to one answer per mirrored entry (on the Linux tree, about 1.3 MB).
const QUERIES_REMEMBERED: usize = 8;

struct State<S: Source> {
    phase: Phase<S>,
    /// Bumped by each build started: a build that finishes after another
    /// started is dropped.
    generation: u64,
    /// What the last build made of the saved mirror ([`IndexStatus::saved`]).
    saved: String,
    /// Why the last save failed, if it did.
    save_error: Option<String>,
    /// The mirror of the last build is being saved.
    saving: bool,
    /// Regular files the last build read.
    build_reads: u64,
}

enum Phase<S: Source> {
    Building,
    Live {
        tree: Arc<DirNode>,
        feed: S::Feed,
        /// Polled filesystems: the newest mtime listed so far (`Poll`).
        newest: i64,
    },
    /// No feed: checked against the tree at each call (`validate.rs`), for
    /// the reason said ([`IndexStatus::validates`]).
    Validated {
        tree: Arc<DirNode>,
        why: String,
    },
    /// Cannot be kept current; the reason. The scan answers every call;
    /// with `retry`, each call starts a build again first ([`Lost::retry`]).
    Unavailable {
        why: String,
        retry: bool,
    },
}

/// What an index holds and has done ([`Index::status`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexStatus {
    /// `building`, `live`, or `unavailable: <why>`.
    pub state: String,
    /// Directories mirrored.
    pub dirs: usize,
    /// Entries mirrored.
    pub entries: usize,
    /// Text files whose trigrams are held, and their bytes.
    pub files: usize,
    /// The bytes of those files.
    pub file_bytes: u64,
    /// The bytes the trigram bitmaps take.
    pub gram_bytes: usize,
    /// Calls answered from the index, and by the scan.
    pub answered_by_index: u64,
    /// Calls answered by the scan.
    pub answered_by_scan: u64,
    /// Builds started (the first, and one per rebuild).
    pub builds: u64,
    /// Directories watched.
    pub watches: usize,
    /// Files grep's prefilter answered for without their being opened.
    pub files_skipped: u64,
    /// Directories the calls listed from the mirror, not the disk.
    pub dirs_listed: u64,
    /// Calls that walked nothing: a grep whose walk, or a glob whose
    /// answer, was kept from an earlier call over the same mirror
    /// (`docs/index.md`, "Kept walks").
    pub walks_reused: u64,
    /// What the last build made of the mirror saved by an earlier process
    /// (`docs/index.md`, "Restart without a rebuild"): `off` (not saved:
    /// no store, or a filesystem it cannot be checked against), `none`
    /// (nothing saved yet), `loaded` (checked against the tree; only the
    /// files whose metadata changed were read), `ignored: <why>`
    /// (truncated, corrupt, of another format or root, not a regular file
    /// of the user's: built from the tree), or `refused: <why>` (the store
    /// or the directory holding it is a link, another user's or writable
    /// by others: built from the tree, and not saved).
    pub saved: String,
    /// Why the last save of the mirror failed, if it did: `cannot save the
    /// index: <file>: <error>`.
    pub save_error: Option<String>,
    /// Regular files the last build read for their trigrams (the others
    /// were the saved mirror's).
    pub build_reads: u64,
    /// Why the mirror is validated at each call instead of kept current by
    /// a feed of changes (`docs/index.md`, "Where there is no watcher"):
    /// `asked for` ([`IndexWatch::None`]), `no watcher: <why>` (off Linux),
    /// `the watch limit was reached`, `a network filesystem (<kind>)`.
    /// `None` with a feed (or while nothing is live).
    pub validates: Option<String>,
    /// Regular files read again by the validations so far (the files
    /// whose metadata changed, and those changed too recently to be
    /// vouched for by it).
    pub validation_reads: u64,
}

impl Index {
    /// Start indexing the directory `root` of the local disk (made
    /// absolute and real) in the background. Never waits for the build:
    /// calls before it ends are answered by the scan.
    pub fn start(root: &Path) -> std::io::Result<Index> {
        Index::start_with(root, None)
    }

    /// [`Index::start`], with at most `watch_limit` directories watched:
    /// past it, the index gives up as at the system's watch limit (for
    /// tests of that path).
    pub fn start_with(root: &Path, watch_limit: Option<usize>) -> std::io::Result<Index> {
        let engine = Engine::process_default();
        Index::on(
            Arc::new(LocalFs::new()),
            root,
            watch_limit,
            None,
            engine,
            IndexWatch::Os,
        )
    }

    /// [`Index::start`], learning of changes as `watch` says.
    pub fn start_watching(root: &Path, watch: IndexWatch) -> std::io::Result<Index> {
        let engine = Engine::process_default();
        Index::on(Arc::new(LocalFs::new()), root, None, None, engine, watch)
    }

    /// [`Index::start`] on the local disk as `fs` sees it (a
    /// [`LocalFs::git_excludes`] of its own).
    pub fn start_on(fs: Arc<LocalFs>, root: &Path) -> std::io::Result<Index> {
        Index::on(
            fs,
            root,
            None,
            None,
            Engine::process_default(),
            IndexWatch::Os,
        )
    }

    /// Start indexing the directory `root` of `fs` in the background (a
    /// workspace's filesystem: `WorkspaceOptions::index`), saving the
    /// mirror in the directory `store` after each build and starting from
    /// what is saved there, when the filesystem allows (`saved.rs`). Its
    /// searches, the scan's and the mirror's, run on `engine`; changes are
    /// learnt of as `watch` says.
    pub(crate) fn on<S: Source>(
        fs: Arc<S>,
        root: &Path,
        watch_limit: Option<usize>,
        store: Option<&Path>,
        engine: Engine,
        watch: IndexWatch,
    ) -> std::io::Result<Index> {
        let root = fs.index_root(root)?;
        let store = store
            .filter(|_| S::SAVES)
            .map(|dir| saved::Store::new(dir, &root));
        let inner = Arc::new_cyclic(|me| Inner {
            me: me.clone(),
            root,
            scan: NativeBackend::on(fs.clone()).with_engine(engine),
            fs,
            watch_limit,
            watch,
            validation_reads: AtomicU64::new(0),
            state: Mutex::new(State {
                phase: Phase::Building,
                generation: 0,
                saved: if store.is_some() { "none" } else { "off" }.into(),
                save_error: None,
                saving: false,
                build_reads: 0,
            }),
            store,
            changed: Condvar::new(),
            by_index: AtomicU64::new(0),
            by_scan: AtomicU64::new(0),
            builds: AtomicU64::new(0),
            skipped: Arc::new(AtomicU64::new(0)),
            listed: Arc::new(AtomicU64::new(0)),
            overflow: AtomicBool::new(false),
            remembered: Mutex::new(Vec::new()),
            walks: Arc::default(),
        });
        inner.rescan();
        Ok(Index { inner })
    }

    /// The root it mirrors (real, absolute; over SFTP, as given).
    pub fn root(&self) -> &Path {
        self.inner.root()
    }

    /// Drop the mirror and build it again in the background, as after a
    /// watcher overflow: calls are answered by the scan meanwhile.
    pub fn rescan(&self) {
        self.inner.rescan();
    }

    /// Make the feed's next drain report that its queue overflowed, as
    /// the kernel does when events come faster than they are read: the
    /// call that drains it is answered by the scan and the mirror rebuilt.
    /// For tests of that path (the kernel's limit is system-wide).
    #[doc(hidden)]
    pub fn simulate_overflow(&self) {
        self.inner.simulate_overflow();
    }

    /// Wait until no build is running, at most `timeout`; whether the
    /// index is then live.
    pub fn wait_ready(&self, timeout: Duration) -> bool {
        self.inner.wait_ready(timeout)
    }

    /// Wait until no build is running and the mirror the last one made is
    /// saved, or its save has failed (`IndexStatus::save_error`), at most
    /// `timeout`; whether it ended in time without a failed save. Without
    /// a store there is nothing to wait for once the build is done.
    pub fn wait_saved(&self, timeout: Duration) -> bool {
        self.inner.wait_saved(timeout)
    }

    /// Wait for a save in flight to end, at most `timeout`, without
    /// waiting for a build; whether none is in flight then. For a process
    /// about to exit: a mirror made just before is then on disk for the
    /// next start, not lost half-written (`docs/index.md`, "Restart
    /// without a rebuild").
    pub fn finish_save(&self, timeout: Duration) -> bool {
        self.inner.finish_save(timeout)
    }

    /// What it holds and has done.
    pub fn status(&self) -> IndexStatus {
        self.inner.status()
    }

    /// Settle the mirror as a call does before it is answered (the feed's
    /// changes applied, or the tree validated), answering nothing; whether
    /// the mirror can then answer. For the benchmark of that step alone
    /// (`bench --index`: "validation alone").
    #[doc(hidden)]
    pub fn settle(&self) -> bool {
        self.inner.settle()
    }

    /// A search backend answering from the index where it can, by the
    /// scan of the filesystem otherwise.
    pub fn backend(&self) -> IndexedBackend {
        IndexedBackend {
            index: self.clone(),
        }
    }
}

impl fmt::Debug for Index {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Index").field("root", &self.root()).finish()
    }
}

impl<S: Source> Inner<S> {
    /// Start a build (the state's lock held): the scan answers until it
    /// ends.
    fn rebuild(&self, state: &mut State<S>) {
        state.generation += 1;
        state.phase = Phase::Building;
        self.builds.fetch_add(1, Ordering::Relaxed);
        let generation = state.generation;
        let Some(inner) = self.me.upgrade() else {
            return;
        };
        let spawned = std::thread::Builder::new()
            .name("dsh-search-index".into())
            .spawn(move || build(&inner, generation));
        if let Err(e) = spawned {
            state.phase = Phase::Unavailable {
                why: format!("no thread to build it: {e}"),
                retry: false,
            };
        }
    }

    /// Settle the mirror with every change reported before now (or, over a
    /// polled filesystem, with the tree listed again), and take a snapshot
    /// of it; or say why the scan must answer.
    fn snapshot(&self) -> Result<Arc<DirNode>, String> {
        let mut state = self.state.lock().recover_poison();
        let lost = match &mut state.phase {
            Phase::Building => return Err("the index is being built".into()),
            Phase::Unavailable { why, retry: false } => return Err(why.clone()),
            Phase::Unavailable { why, retry: true } => why.clone(),
            Phase::Validated { tree, .. } => {
                match validate::validate(&*self.fs, &self.root, Some(tree)) {
                    Ok((now, reads)) => {
                        self.validation_reads.fetch_add(reads, Ordering::Relaxed);
                        *tree = now;
                        return Ok(tree.clone());
                    }
                    Err(Lost(why)) => why.into(),
                }
            }
            Phase::Live { tree, feed, newest } => match feed.drain() {
                Err(e) => format!("the watcher failed: {e}"),
                Ok(_) if self.overflow.swap(false, Ordering::SeqCst) => {
                    "the watcher's queue overflowed".into()
                }
                Ok(changes) if changes.lost.is_some() => changes.lost.unwrap_or_default().into(),
                Ok(changes) if changes.is_empty() && !S::POLLS => return Ok(tree.clone()),
                Ok(changes) => {
                    let mut scanner = Scanner::new(&*self.fs, feed, &self.root);
                    if S::POLLS {
                        scanner.poll = Some(Poll::new(changes.names.clone(), *newest));
                    }
                    let applied = mirror::apply(tree, &mut scanner, &changes);
                    if let Some(poll) = scanner.poll {
                        *newest = poll.newest;
                    }
                    match applied {
                        Ok(()) => return Ok(tree.clone()),
                        Err(Lost(why)) => why.into(),
                    }
                }
            },
        };
        // The mirror cannot be vouched for: rebuilt in the background, and
        // this call answered by the scan.
        self.rebuild(&mut state);
        Err(lost)
    }

    /// The answers kept for `query`, moved to the front; a new query's
    /// pushes the oldest out.
    fn remembered(&self, query: &grams::Query) -> Arc<view::Remembered> {
        let mut kept = self.remembered.lock().recover_poison();
        let at = kept.iter().position(|(q, _)| q == query);
        let entry = match at {
            Some(i) => kept.remove(i),
            None => (query.clone(), Arc::default()),
        };
        let r = entry.1.clone();
        kept.insert(0, entry);
        kept.truncate(QUERIES_REMEMBERED);
        r
    }

    /// The view a call walks, or why the scan answers it.
    fn view(&self, query: Option<grams::Query>) -> Result<view::View<S>, String> {
        let tree = self.snapshot();
        let counter = match tree {
            Ok(_) => &self.by_index,
            Err(_) => &self.by_scan,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        let tree = tree?;
        let remembered = query.as_ref().map(|q| self.remembered(q));
        let walks = Some(self.walks.clone());
        Ok(view::View {
            disk: self.fs.clone(),
            root: self.root.clone(),
            tree,
            query: query.map(Arc::new),
            remembered,
            skipped: self.skipped.clone(),
            listed: self.listed.clone(),
            walks,
            log: Mutex::default(),
        })
    }
}

impl<S: Source> Live for Inner<S> {
    fn root(&self) -> &Path {
        &self.root
    }

    fn rescan(&self) {
        let mut state = self.state.lock().recover_poison();
        self.rebuild(&mut state);
    }

    fn simulate_overflow(&self) {
        self.overflow.store(true, Ordering::SeqCst);
    }

    fn wait_ready(&self, timeout: Duration) -> bool {
        let state = self.state.lock().recover_poison();
        let (state, _) = self
            .changed
            .wait_timeout_while(state, timeout, |s| matches!(s.phase, Phase::Building))
            .recover_poison();
        matches!(state.phase, Phase::Live { .. } | Phase::Validated { .. })
    }

    fn wait_saved(&self, timeout: Duration) -> bool {
        let state = self.state.lock().recover_poison();
        let (state, timed_out) = self
            .changed
            .wait_timeout_while(state, timeout, |s| {
                s.saving || matches!(s.phase, Phase::Building)
            })
            .recover_poison();
        !timed_out.timed_out() && state.save_error.is_none()
    }

    fn finish_save(&self, timeout: Duration) -> bool {
        let state = self.state.lock().recover_poison();
        let (state, timed_out) = self
            .changed
            .wait_timeout_while(state, timeout, |s| s.saving)
            .recover_poison();
        drop(state);
        !timed_out.timed_out()
    }

    fn status(&self) -> IndexStatus {
        let state = self.state.lock().recover_poison();
        let mut totals = mirror::Totals::default();
        let mut watches = 0;
        let mut validates = None;
        let state_text = match &state.phase {
            Phase::Building => "building".to_string(),
            Phase::Validated { tree, why } => {
                mirror::totals(tree, &mut totals);
                validates = Some(why.clone());
                "live".to_string()
            }
            Phase::Live { tree, feed, .. } => {
                mirror::totals(tree, &mut totals);
                watches = feed.len();
                "live".to_string()
            }
            Phase::Unavailable { why, .. } => format!("unavailable: {why}"),
        };
        IndexStatus {
            state: state_text,
            dirs: totals.dirs,
            entries: totals.entries,
            files: totals.files_read,
            file_bytes: totals.bytes_read,
            gram_bytes: totals.gram_bytes,
            answered_by_index: self.by_index.load(Ordering::Relaxed),
            answered_by_scan: self.by_scan.load(Ordering::Relaxed),
            builds: self.builds.load(Ordering::Relaxed),
            watches,
            files_skipped: self.skipped.load(Ordering::Relaxed),
            dirs_listed: self.listed.load(Ordering::Relaxed),
            walks_reused: self.walks.reused(),
            saved: state.saved.clone(),
            save_error: state.save_error.clone(),
            build_reads: state.build_reads,
            validates,
            validation_reads: self.validation_reads.load(Ordering::Relaxed),
        }
    }

    fn settle(&self) -> bool {
        self.snapshot().is_ok()
    }

    fn glob(&self, req: &GlobRequest) -> (Outcome<GlobResults>, Answer) {
        match self.view(None) {
            Ok(view) => {
                if let Some(kept) = view.kept_glob(req) {
                    return (kept, Answer::Index);
                }
                view.log_all();
                let view = Arc::new(view);
                let outcome = NativeBackend::on(view.clone())
                    .with_engine(self.scan.engine().clone())
                    .glob(req);
                view.keep_glob(req, &outcome);
                (outcome, Answer::Index)
            }
            Err(why) => (self.scan.glob(req), Answer::Scan(why)),
        }
    }

    fn grep(&self, req: &GrepRequest) -> (Outcome<GrepResults>, Answer) {
        let Some(query) = grams::plan(&req.pattern) else {
            self.by_scan.fetch_add(1, Ordering::Relaxed);
            return (self.scan.grep(req), Answer::Scan(UNNARROWED.into()));
        };
        match self.view(Some(query)) {
            Ok(view) => {
                let outcome = crate::backend::grep_kept(&view, self.scan.engine(), req, &view);
                (outcome, Answer::Index)
            }
            Err(why) => (self.scan.grep(req), Answer::Scan(why)),
        }
    }
}

/// The build of generation `generation`: a feed, one walk (over the saved
/// mirror, where there is one: only what changed is read), then the mirror
/// installed unless another build started meanwhile, and saved.
fn build<S: Source>(inner: &Inner<S>, generation: u64) {
    // The store is opened (and checked: `private.rs`) at each build; one
    // that cannot be trusted is neither read nor written.
    let (loaded, hint, store) = match &inner.store {
        None => ("off".to_string(), None, None),
        Some(store) => match store.open() {
            Err(e) => (format!("refused: {e}"), None, None),
            Ok(dir) => {
                let (loaded, hint) = match saved::load(&dir, store, &inner.root) {
                    Ok(tree) => ("loaded".to_string(), Some(Arc::new(tree))),
                    Err(saved::Refused::Missing) => ("none".to_string(), None),
                    Err(saved::Refused::Ignored(why)) => (format!("ignored: {why}"), None),
                };
                (loaded, hint, Some((dir, store)))
            }
        },
    };
    let mut reads = 0;
    // Where no feed reports the changes, the build is a validation with
    // nothing (or the saved mirror) to start from, and so is every call.
    let validated = |why: String, reads: &mut u64| match validate::validate(
        &*inner.fs,
        &inner.root,
        hint.as_ref(),
    ) {
        Ok((tree, n)) => {
            *reads = n;
            Phase::Validated { tree, why }
        }
        Err(lost) => Phase::Unavailable {
            why: lost.0.into(),
            retry: lost.retry(),
        },
    };
    let unwatched = match inner.watch {
        IndexWatch::None if !S::POLLS => Some("asked for".to_string()),
        _ => inner.fs.unwatchable(&inner.root),
    };
    let phase = match unwatched {
        Some(why) => validated(why, &mut reads),
        None => match inner.fs.feed(&inner.root, inner.watch_limit) {
            Err(e) if !S::POLLS => validated(format!("no watcher: {e}"), &mut reads),
            Err(e) => Phase::Unavailable {
                why: format!("no watcher: {e}"),
                retry: false,
            },
            Ok(mut feed) => {
                let mut scanner = Scanner::new(&*inner.fs, &mut feed, &inner.root);
                if S::POLLS {
                    scanner.poll = Some(Poll::new(Default::default(), i64::MIN));
                }
                scanner.reuse = hint.is_some();
                let scanned = scanner.scan_root(hint.as_ref());
                reads = scanner.reads;
                let newest = scanner.poll.map_or(i64::MIN, |p| p.newest);
                match scanned {
                    Ok(tree) => Phase::Live { tree, feed, newest },
                    // The system's limit: validated instead (the watches made
                    // so far dropped with the feed).
                    Err(Lost(WATCH_LIMIT)) => {
                        drop(feed);
                        validated(WATCH_LIMIT.to_string(), &mut reads)
                    }
                    Err(lost) => Phase::Unavailable {
                        why: lost.0.into(),
                        retry: lost.retry(),
                    },
                }
            }
        },
    };
    let to_save = match (store, &phase) {
        (Some(store), Phase::Live { tree, .. } | Phase::Validated { tree, .. }) => {
            Some((store, tree.clone()))
        }
        _ => None,
    };
    {
        let mut state = inner.state.lock().recover_poison();
        if state.generation != generation {
            return;
        }
        state.phase = phase;
        state.saved = loaded;
        state.build_reads = reads;
        state.saving = to_save.is_some();
        inner.changed.notify_all();
    }
    // After the mirror is live: calls need not wait for the write.
    if let Some(((dir, store), tree)) = to_save {
        let saved = saved::save(&dir, store, &inner.root, &tree);
        let mut state = inner.state.lock().recover_poison();
        state.save_error = saved.err().map(|e| format!("cannot save the index: {e}"));
        state.saving = false;
        inner.changed.notify_all();
    }
}

/// Why a grep whose pattern the prefilter cannot narrow is the scan's.
const UNNARROWED: &str = "the pattern has no required literal the prefilter can use";

/// Which path of a live index answered a call: a fact about the call, not
/// about its outcome (the outcome is the scan's, byte for byte, whichever
/// answered). [`IndexedBackend::glob_answered`] and
/// [`IndexedBackend::grep_answered`] report it, and the tools of an
/// indexed workspace, a layer above, put it in each glob and grep
/// result's `meta` (`docs/index.md`, "What `meta` says").
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The mirror (and for grep the prefilter).
    Index,
    /// The scan of the disk, and why: the index is building, or cannot
    /// vouch for its mirror.
    Scan(String),
}

impl Answer {
    /// The value of the `index` key of a glob or grep result's `meta`
    /// (`docs/index.md`, "What `meta` says"): `mirror`, or `scan: <why>`.
    pub fn meta_value(&self) -> String {
        match self {
            Answer::Index => "mirror".into(),
            Answer::Scan(why) => format!("scan: {why}"),
        }
    }
}

impl fmt::Display for Answer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Answer::Index => f.write_str("index"),
            Answer::Scan(why) => write!(f, "scan ({why})"),
        }
    }
}

/// The search backend of an indexed workspace ([`Index::backend`]). As a
/// [`SearchBackend`] it answers like any other; which path answered is
/// its own to say ([`IndexedBackend::glob_answered`]).
pub struct IndexedBackend {
    index: Index,
}

impl IndexedBackend {
    /// The index it answers from.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// [`SearchBackend::glob`], and which path answered it.
    pub fn glob_answered(&self, req: &GlobRequest) -> (Outcome<GlobResults>, Answer) {
        self.index.inner.glob(req)
    }

    /// [`SearchBackend::grep`], and which path answered it. A pattern the
    /// prefilter cannot narrow is answered by the scan: every file would
    /// be opened anyway, and the filesystem's own handles open them faster
    /// than paths through the mirror.
    pub fn grep_answered(&self, req: &GrepRequest) -> (Outcome<GrepResults>, Answer) {
        self.index.inner.grep(req)
    }
}

impl fmt::Debug for IndexedBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IndexedBackend")
            .field("index", &self.index)
            .finish()
    }
}

impl SearchBackend for IndexedBackend {
    fn name(&self) -> &'static str {
        "index"
    }

    fn searches_local_disk(&self) -> bool {
        false
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        self.glob_answered(req).0
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        self.grep_answered(req).0
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use crate::outcome::Status;

    #[test]
    fn grep_opens_only_the_candidates() {
        let td = tempfile::tempdir().unwrap();
        std::fs::create_dir(td.path().join("sub")).unwrap();
        std::fs::write(td.path().join("a.txt"), "hello\n").unwrap();
        std::fs::write(td.path().join("sub/b.txt"), "needle\n").unwrap();
        let index = Index::start(td.path()).unwrap();
        assert!(index.wait_ready(Duration::from_secs(60)));
        let b = index.backend();
        let (o, answer) = b.grep_answered(&GrepRequest::new("needle", td.path()));
        assert_eq!(answer, Answer::Index);
        assert_eq!(o.results.matches().count(), 1);
        let s = index.status();
        assert_eq!(s.files_skipped, 1, "{s:?}");
        assert_eq!(s.dirs_listed, 2, "{s:?}");
        assert_eq!(s.walks_reused, 0, "{s:?}");
        // The same walk again: kept, only the root listed (for its ignore
        // files' names); the candidate is searched, the other file ruled
        // out again.
        let (o, answer) = b.grep_answered(&GrepRequest::new("needle", td.path()));
        assert_eq!(answer, Answer::Index);
        assert_eq!(o.results.matches().count(), 1);
        let s = index.status();
        assert_eq!(
            (s.walks_reused, s.dirs_listed, s.files_skipped),
            (1, 3, 2),
            "{s:?}"
        );
    }

    /// glob's answer is kept whole while the mirror is unchanged, also in
    /// a repository (its `.git` is not mirrored, and glob does not walk
    /// it), and not used once anything changed.
    #[test]
    fn a_glob_is_answered_again_until_the_tree_changes() {
        let td = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(td.path().join(".git")).unwrap();
        std::fs::write(td.path().join(".git/HEAD"), "ref\n").unwrap();
        std::fs::create_dir(td.path().join("sub")).unwrap();
        std::fs::write(td.path().join("a.txt"), "hello\n").unwrap();
        std::fs::write(td.path().join("sub/b.txt"), "needle\n").unwrap();
        let index = Index::start(td.path()).unwrap();
        assert!(index.wait_ready(Duration::from_secs(60)));
        let b = index.backend();
        let req = GlobRequest::new("*", td.path());
        let files = |o: &Outcome<GlobResults>| {
            let mut f: Vec<String> = o
                .results
                .files
                .iter()
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            f.sort();
            f
        };
        let (first, answer) = b.glob_answered(&req);
        assert_eq!(answer, Answer::Index);
        assert_eq!(files(&first), ["a.txt", "sub/b.txt"]);
        assert_eq!(index.status().walks_reused, 0);
        let (again, _) = b.glob_answered(&req);
        assert_eq!(again, first);
        assert_eq!(index.status().walks_reused, 1);
        std::fs::write(td.path().join("sub/c.txt"), "new\n").unwrap();
        let (changed, _) = b.glob_answered(&req);
        assert_eq!(files(&changed), ["a.txt", "sub/b.txt", "sub/c.txt"]);
        assert_eq!(index.status().walks_reused, 1);
        // One stopped at its budget (the Linux tree at eight copies: glob
        // `*` is over the default budget) is kept too, under its budget.
        let mut small = req.clone();
        small.raw_budget = Some(8);
        let (cut, _) = b.glob_answered(&small);
        assert_eq!(cut.status, Status::OverBudget);
        assert_eq!(b.glob_answered(&small).0, cut);
        assert_eq!(index.status().walks_reused, 2);
        assert_eq!(b.glob_answered(&req).0, changed);
        assert_eq!(index.status().walks_reused, 3);
    }
}
