//! `rg --json --regexp=<p> [--glob=<include>] [-- <path>]` (`main.rs: search`
//! and `search_parallel`, `search.rs: SearchWorker::search`).

use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use crate::event::{Event, Stats, Summary};
use crate::fs::{FileSystem, FileType};
use crate::outcome::{d2_order, GrepResults, Outcome, Status};
use crate::request::GrepRequest;

use super::explicit;
use super::matcher;
use super::messages::{dir_error, Messages, NOTHING_SEARCHED};
use super::overrides::overrides;
use super::paths::{PathForm, Root};
use super::reader::{cancelled, is_clean_miss, preloadable, FileReader, Preload, PRELOAD_KEEP};
use super::rgignore::RgIgnore;
use super::serial_walk::{self, Dir, Haystack};
#[cfg(doc)]
use super::set_helper_delay;
use super::sink::{FileBlock, JsonSink};
use super::{canonical_workdir, exit_code, nul_launch_failure, Budget};

/// Everything one call shares between its threads.
struct GrepCall<'a, F: FileSystem> {
    fs: &'a F,
    root: Root,
    matcher: RegexMatcher,
    budget: Budget,
    /// The kind of the one explicit path (after following links), when the
    /// root is not a directory. rg memory-maps it when it is a regular file
    /// (`hiargs.rs: mmap_choice`) and searches the slice; `explicit.rs` does
    /// the same in bounded memory.
    explicit: Option<FileType>,
    /// Its size when stat'ed.
    explicit_len: u64,
    /// The longest match of the pattern, when bounded: a line too long to
    /// hold is then checked in chunks (`explicit.rs`).
    max_match_len: Option<usize>,
    /// Whether a walked file read whole without a match in its bytes can be
    /// counted without running the searcher ([`matcher::whole_file_prefilter`]).
    prefilter: bool,
    shared: Mutex<Collected>,
    /// Where each file's lines go as its search ends, when the caller takes
    /// rg's stdout as it comes ([`run_streaming`]) instead of in the
    /// outcome.
    stream: Option<&'a Stream<'a>>,
    /// One [`Kit`] per thread that searches: slot 0 for a thread outside
    /// the pool (the caller), then one per pool thread. A matcher clone
    /// starts with an empty cache pool (regex-automata `meta::Regex::clone`)
    /// whose lazy DFA must be rebuilt: like rg, which clones once per
    /// thread, a thread keeps its clone (and its searcher's buffers) for the
    /// whole call.
    kits: Vec<Mutex<Option<Kit>>>,
}

/// What one thread needs to search: a matcher, a searcher, buffers.
struct Kit {
    matcher: RegexMatcher,
    searcher: Searcher,
    bufs: Buffers,
}

impl<F: FileSystem> GrepCall<'_, F> {
    fn kit_slot(&self) -> &Mutex<Option<Kit>> {
        let i = super::pool().current_thread_index().map_or(0, |i| i + 1);
        &self.kits[i.min(self.kits.len() - 1)]
    }

    fn take_kit(&self) -> Kit {
        let taken = self
            .kit_slot()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        taken.unwrap_or_else(|| Kit {
            matcher: self.matcher.clone(),
            searcher: matcher::searcher(false),
            bufs: Buffers::take(),
        })
    }

    fn return_kit(&self, kit: Kit) {
        *self.kit_slot().lock().unwrap_or_else(|e| e.into_inner()) = Some(kit);
    }
}

/// The buffers of a [`Kit`], which can serve the next call. A call takes
/// one set per searching thread and gives them back when it ends, so a
/// call on a small tree allocates (and zeroes) no 64 KiB preload buffer.
///
/// The searcher is not kept: its line buffer grows to hold a long line and
/// never shrinks, and a grown buffer makes the first read of every later
/// file larger, which moves where a walked file's binary data is noticed
/// (`binary_offset`, `bytes_searched`). rg starts each run with fresh
/// buffers; a call does too.
struct Buffers {
    /// For sizing JSON lines ([`JsonSink`]).
    scratch: Vec<u8>,
    /// The read-ahead of [`FileReader`].
    readbuf: Vec<u8>,
}

/// Buffers kept between calls: enough for every thread of a few
/// concurrent calls, no more.
static SPARE_BUFFERS: Mutex<Vec<Buffers>> = Mutex::new(Vec::new());
const MAX_SPARE_BUFFERS: usize = 16;

impl Buffers {
    fn take() -> Buffers {
        let spare = SPARE_BUFFERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        spare.unwrap_or_else(|| Buffers {
            scratch: Vec::with_capacity(4096),
            readbuf: Vec::new(),
        })
    }

    fn give_back(mut self) {
        if self.readbuf.len() > PRELOAD_KEEP {
            self.readbuf = Vec::new();
        }
        let mut spare = SPARE_BUFFERS.lock().unwrap_or_else(|e| e.into_inner());
        if spare.len() < MAX_SPARE_BUFFERS {
            spare.push(self);
        }
    }
}

impl<F: FileSystem> Drop for GrepCall<'_, F> {
    fn drop(&mut self) {
        for slot in &self.kits {
            let kit = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(kit) = kit {
                kit.bufs.give_back();
            }
        }
    }
}

/// A receiver of rg's stdout bytes, called by one thread at a time.
pub(crate) type Stream<'a> = dyn Fn(&[u8]) + Sync + 'a;

#[derive(Default)]
struct Collected {
    blocks: Vec<FileBlock>,
    /// Whether a file streamed already had a match ([`GrepCall::stream`]).
    matched: bool,
    /// The statistics of the files without a match.
    stats: Stats,
    msgs: Messages,
    searched: bool,
}

/// One walk, whatever the root. rg's parallel walker stats each root
/// following links (`DirEntryRaw::from_path`) and reports an error there
/// with the path; a root that is not a directory means one thread
/// (`hiargs.rs: Paths::from_low_args`), whose sequential walker yields the
/// path itself (never filtered at depth 0, no ignore files read) or
/// walkdir's error for it; a directory, or a symlink to one, is walked.
pub(crate) fn run<F: FileSystem>(fs: &F, req: &GrepRequest) -> Outcome<GrepResults> {
    run_with(fs, req, None)
}

/// [`run`], with rg's stdout handed to `out` as it is made, a file's lines
/// when its search ends (in the order the files end, as rg prints them)
/// and the summary last: memory holds the files being searched, not the
/// output. The outcome's results are empty.
pub(crate) fn run_streaming<F: FileSystem>(
    fs: &F,
    req: &GrepRequest,
    out: &Stream<'_>,
) -> Outcome<GrepResults> {
    run_with(fs, req, Some(out))
}

fn run_with<F: FileSystem>(
    fs: &F,
    req: &GrepRequest,
    stream: Option<&Stream<'_>>,
) -> Outcome<GrepResults> {
    let started = Instant::now();
    let fail = |why: String| Outcome {
        status: Status::LaunchFailed(why),
        stderr: Vec::new(),
        results: GrepResults::default(),
    };
    if let Some(name) = req.nul_argument() {
        return fail(nul_launch_failure(name));
    }
    let real_workdir = match canonical_workdir(fs, &req.workdir) {
        Ok(real_workdir) => real_workdir,
        Err(why) => return fail(why),
    };
    let arg_error = |msg: String| {
        let mut msgs = Messages::default();
        msgs.error(&msg);
        Outcome {
            status: Status::Exited(2),
            stderr: msgs.lines,
            results: GrepResults::default(),
        }
    };
    // Globs are built in `from_low_args`, before the matcher: their errors
    // win (rg-semantics §9.1, E21).
    let globs: Vec<&str> = req.include.iter().map(String::as_str).collect();
    let override_set = match overrides(&real_workdir, &globs) {
        Ok(override_set) => override_set,
        Err(e) => return arg_error(e),
    };
    let matcher = match matcher::build_cancellable(&req.pattern, &req.cancel) {
        Ok(m) => m,
        Err(Some(e)) => return arg_error(e),
        Err(None) => {
            return Outcome {
                status: Status::Cancelled,
                stderr: Vec::new(),
                results: GrepResults::default(),
            }
        }
    };
    let root = Root::new(&real_workdir, req.path.as_deref());
    let meta = super::stat_root(fs, &root);
    let ctx = GrepCall {
        fs,
        explicit: match &meta {
            Ok(m) if m.kind.is_dir() => None,
            Ok(m) => Some(m.kind),
            Err(_) => None,
        },
        explicit_len: meta.as_ref().map_or(0, |m| m.len),
        max_match_len: explicit::max_match_len(&req.pattern),
        prefilter: matcher::whole_file_prefilter(&req.pattern),
        root,
        matcher,
        budget: Budget::new(req.raw_budget, req.cancel.clone()),
        shared: Mutex::new(Collected::default()),
        stream,
        kits: (0..super::pool().current_num_threads() + 1)
            .map(|_| Mutex::new(None))
            .collect(),
    };
    match meta {
        Err(e) => {
            // The sequential walker's error for its root (walkdir's wording).
            let mut shared = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
            shared
                .msgs
                .io_error(&e, || dir_error(&ctx.root, ctx.root.walk_path(), &e));
        }
        Ok(m) if m.kind.is_dir() => search_pooled(&ctx, &real_workdir, override_set),
        Ok(_) => {
            let mut worker = Worker::new(&ctx);
            let path = ctx.root.walk_path().to_path_buf();
            worker.search_haystack(&path, Source::Explicit, &|| false);
        }
    }
    finish(ctx, started)
}

/// The messages the walk's ignore decisions collected (ignore-file errors,
/// walk errors), into the call's stderr.
fn report_ignore_messages<F: FileSystem>(ctx: &GrepCall<'_, F>, ignore_rules: &RgIgnore) {
    let mut shared = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
    for (msg, errored) in ignore_rules.take_messages() {
        if errored {
            shared.msgs.error(&msg);
        } else {
            shared.msgs.print(&msg);
        }
    }
}

/// How many files one pool job searches: small enough to balance the end of
/// a walk between threads, large enough that queueing costs nothing.
const BATCH: usize = 16;

/// How many batches the walk queues before the walking thread searches one.
const MAX_QUEUED: usize = 4;

/// A directory root: the engine's walk ([`dirwalk`], the same decisions,
/// errors and ignore-file lookups as rg's walker, each directory listed
/// once) runs on the calling thread and queues the haystacks in batches;
/// once the call has run for the helper delay ([`set_helper_delay`]),
/// helpers on the engine's pool search them while the walk goes on, and
/// the walking thread searches whatever is left once it ends (a call on a
/// small tree ends before any helper starts). The walk never waits for
/// work (rg's walker sleeps 1 ms at a time when idle, ignore 0.4.29
/// `walk.rs: get_work`), and the searching threads are the pool's, started
/// once per process. The order of files does not
/// matter: blocks are sorted by path at the end (D2).
fn search_pooled<F: FileSystem>(
    ctx: &GrepCall<'_, F>,
    real_workdir: &Path,
    override_set: ignore::overrides::Override,
) {
    let queue = Queue::new(super::threads() - 1);
    let live = std::sync::Arc::new(AtomicUsize::new(0));
    super::pool().in_place_scope(|s| {
        let mut batcher = Batcher {
            ctx,
            queue: &queue,
            scope: s,
            batch: Vec::with_capacity(BATCH),
            msgs: Messages::default(),
            searched: false,
        };
        let ignore_rules = serial_walk::walk(
            ctx.fs,
            &ctx.root,
            real_workdir,
            override_set,
            &live,
            &mut batcher,
        );
        drop(batcher);
        report_ignore_messages(ctx, &ignore_rules);
        // Anything the helpers have not taken, with their help once the
        // call has run long enough.
        while let Some(batch) = queue.pop() {
            search_batch(ctx, batch, Hand::Draining(&queue));
            queue.start_helpers(ctx, s);
        }
    });
}

/// The walking thread's end of the walk: walk errors and haystacks, in
/// batches.
struct Batcher<'r, 's, F: FileSystem> {
    ctx: &'s GrepCall<'s, F>,
    queue: &'s Queue<F>,
    scope: &'r rayon::Scope<'s>,
    batch: Vec<Haystack<F>>,
    msgs: Messages,
    searched: bool,
}

impl<'r, 's: 'r, F: FileSystem> Batcher<'r, 's, F> {
    fn push(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.queue.push(batch);
        self.queue.start_helpers(self.ctx, self.scope);
    }
}

impl<'r, 's: 'r, F: FileSystem> serial_walk::Output<F> for Batcher<'r, 's, F> {
    fn file(&mut self, file: Haystack<F>) {
        self.searched = true;
        self.batch.push(file);
        if self.batch.len() == BATCH {
            self.push();
            // Searching beats walking further ahead once enough is queued.
            if self.queue.len() > MAX_QUEUED {
                self.search_queued(true);
            }
        }
    }

    fn error(&mut self, err: ignore::Error) {
        self.msgs.walk_error(&err, &self.ctx.root);
    }

    fn stopped(&self) -> bool {
        self.ctx.budget.stopped()
    }

    fn stopped_at(&self, i: usize) -> bool {
        self.ctx.budget.stopped_at(i)
    }

    /// Directory descriptors are short: search what holds them. A queued
    /// batch first, then the batch being filled; when neither is left and
    /// helpers are searching theirs, wait a moment for them to finish.
    /// Only the walk's own stack of parents is left when this says no.
    fn relieve(&mut self) -> bool {
        // Searched here whatever the helpers do: this frees descriptors.
        if self.search_queued(false) {
            return true;
        }
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            search_batch(self.ctx, batch, Hand::Keep);
            return true;
        }
        if self.queue.busy.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_micros(20));
            return true;
        }
        false
    }
}

impl<F: FileSystem> Batcher<'_, '_, F> {
    /// Search one queued batch on the walking thread, or with `pass`
    /// only until a helper waits for work ([`Hand::Walking`]); false when
    /// none is queued.
    fn search_queued(&mut self, pass: bool) -> bool {
        match self.queue.pop() {
            Some(batch) => {
                let hand = if pass {
                    Hand::Walking(self.queue)
                } else {
                    Hand::Keep
                };
                search_batch(self.ctx, batch, hand);
                self.queue.start_helpers(self.ctx, self.scope);
                true
            }
            None => false,
        }
    }
}

impl<F: FileSystem> Drop for Batcher<'_, '_, F> {
    fn drop(&mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.queue.push(batch);
        }
        // Also when the walk unwinds: the scope waits for the helpers.
        self.queue.walk_done();
        let mut shared = self.ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.msgs.extend(std::mem::take(&mut self.msgs));
        shared.searched |= self.searched;
    }
}

/// The batches of one call waiting for a thread.
struct Queue<F: FileSystem> {
    state: Mutex<QueueState<F>>,
    /// Signalled when a batch is queued for a waiting helper, and when the
    /// walk ends.
    ready: std::sync::Condvar,
    /// Helpers spawned and not yet finished.
    helpers: AtomicUsize,
    /// Helpers searching a batch now (holding its directories).
    busy: AtomicUsize,
    /// Helpers waiting for a batch: changed under the lock, read without
    /// it by the walking thread between files.
    waiting: AtomicUsize,
    /// How many helpers the call may start, and when it started.
    max_helpers: usize,
    started: Instant,
    /// How long the call runs alone first ([`set_helper_delay`]).
    helpers_after: std::time::Duration,
}

struct QueueState<F: FileSystem> {
    batches: std::collections::VecDeque<Vec<Haystack<F>>>,
    /// Whether the walk may still queue batches.
    walking: bool,
}

impl<F: FileSystem> Queue<F> {
    fn new(max_helpers: usize) -> Queue<F> {
        Queue {
            state: Mutex::new(QueueState {
                batches: std::collections::VecDeque::new(),
                walking: true,
            }),
            ready: std::sync::Condvar::new(),
            helpers: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            max_helpers,
            started: Instant::now(),
            helpers_after: super::helper_delay(),
        }
    }

    /// Whether the call has run long enough alone (the helper delay) and
    /// may start a helper.
    fn wants_helper(&self) -> bool {
        self.helpers.load(Ordering::Acquire) < self.max_helpers
            && self.started.elapsed() >= self.helpers_after
    }

    /// Start the helpers the call may have, once it has run long enough
    /// alone. They serve until the walk ends ([`Queue::serve`]).
    fn start_helpers<'s>(&'s self, ctx: &'s GrepCall<'s, F>, scope: &rayon::Scope<'s>) {
        while self.wants_helper() {
            self.helpers.fetch_add(1, Ordering::AcqRel);
            scope.spawn(move |_| {
                self.serve(ctx);
                self.helpers.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState<F>> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, batch: Vec<Haystack<F>>) {
        let mut state = self.lock();
        state.batches.push_back(batch);
        if self.waiting.load(Ordering::Relaxed) > 0 {
            self.ready.notify_one();
        }
    }

    /// Give back the files the walking thread will not search: first in
    /// line, one by one, so that the helpers and the walking thread share
    /// them.
    fn push_front(&self, files: impl DoubleEndedIterator<Item = Haystack<F>>) {
        let mut state = self.lock();
        for file in files.rev() {
            state.batches.push_front(vec![file]);
        }
        if self.waiting.load(Ordering::Relaxed) > 0 {
            self.ready.notify_all();
        }
    }

    /// Whether a helper waits for a batch.
    fn helper_idle(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0
    }

    fn len(&self) -> usize {
        self.lock().batches.len()
    }

    fn pop(&self) -> Option<Vec<Haystack<F>>> {
        self.lock().batches.pop_front()
    }

    /// The walk is over: waiting helpers search what is left, then return.
    fn walk_done(&self) {
        self.lock().walking = false;
        self.ready.notify_all();
    }

    /// A helper: search batches as they come until the walk is over and
    /// none is left. Waiting for the next batch (rather than returning
    /// when the queue is momentarily empty, to be started again by the next
    /// one) keeps a helper from being put to sleep and woken up once per
    /// batch when the walk and the searches run at about the same pace.
    fn serve(&self, ctx: &GrepCall<'_, F>) {
        loop {
            let batch = {
                let mut state = self.lock();
                loop {
                    if let Some(b) = state.batches.pop_front() {
                        self.busy.fetch_add(1, Ordering::AcqRel);
                        break b;
                    }
                    if !state.walking {
                        return;
                    }
                    self.waiting.fetch_add(1, Ordering::Relaxed);
                    state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
                    self.waiting.fetch_sub(1, Ordering::Relaxed);
                }
            };
            search_batch(ctx, batch, Hand::Keep);
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// Whether the thread searching a batch gives the rest of it back to the
/// queue ([`search_batch`]) for a helper that waits for work or may be
/// started.
enum Hand<'q, F: FileSystem> {
    /// A helper's batch, or one the walk must search to free descriptors:
    /// searched whole.
    Keep,
    /// The walking thread during the walk: the rest goes back between files
    /// or in the middle of one (before its match), since the walk is there to
    /// go back to. (A file of tens of megabytes searched by the walking
    /// thread left the helper idle for 10 ms of a 260 ms search of the Linux
    /// tree.)
    Walking(&'q Queue<F>),
    /// The walking thread once the walk is over: one searcher among the
    /// others, that would take back what it gives. The rest goes back only
    /// between files, once one of the batch is searched, so that every
    /// batch it takes moves the call on. (Giving back its first file, or a
    /// file half read, whenever a helper could be started livelocked: a
    /// helper started, found the queue empty while the walking thread held
    /// the file, and ended, which let the next helper start, until the
    /// deadline.)
    Draining(&'q Queue<F>),
}

/// Search a batch, giving the rest back as [`Hand`] says.
fn search_batch<F: FileSystem>(ctx: &GrepCall<'_, F>, batch: Vec<Haystack<F>>, hand: Hand<'_, F>) {
    if batch.is_empty() {
        return;
    }
    let mut worker = Worker::new(ctx);
    let wanted = |q: &Queue<F>| q.helper_idle() || q.wants_helper();
    let in_file = || matches!(hand, Hand::Walking(q) if wanted(q));
    // The files counted without the searcher are timed together: the
    // batch's time less the searcher's (two clock reads per file were a
    // percent of a search of the Linux tree).
    let started = Instant::now();
    let queue = match hand {
        Hand::Keep => None,
        Hand::Walking(q) | Hand::Draining(q) => Some(q),
    };
    let mut files = batch.into_iter().enumerate();
    while let Some((i, file)) = files.next() {
        if ctx.budget.stopped() {
            break;
        }
        let between = match hand {
            Hand::Keep => false,
            Hand::Walking(q) => wanted(q),
            Hand::Draining(q) => i > 0 && wanted(q),
        };
        let passed = between
            || !worker.search_haystack(
                &file.rg_path,
                Source::InDir(&file.dir, file.name()),
                &in_file,
            );
        if let (true, Some(queue)) = (passed, queue) {
            queue.push_front(std::iter::once(file).chain(files.map(|(_, f)| f)));
            break;
        }
    }
    worker.stats.elapsed += started.elapsed().saturating_sub(worker.timed);
}

/// How a haystack is opened.
enum Source<'d, F: FileSystem> {
    /// The one path given, not a directory (`Haystack::is_explicit`); the
    /// path given with it is the engine's absolute walk path.
    Explicit,
    /// A file found by the walk: its name in a listed directory (the path
    /// given with it is the one rg walks).
    InDir(&'d Dir<F>, &'d std::ffi::OsStr),
}

impl<F: FileSystem> Clone for Source<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: FileSystem> Copy for Source<'_, F> {}

impl<F: FileSystem> Source<'_, F> {
    /// The form of the path given with the haystack: the one rg walks for
    /// a file found by the walk, the engine's absolute walk path otherwise.
    fn path_form(&self) -> PathForm {
        match self {
            Source::InDir(..) => PathForm::Rg,
            Source::Explicit => PathForm::Walked,
        }
    }
}

fn finish<F: FileSystem>(ctx: GrepCall<'_, F>, started: Instant) -> Outcome<GrepResults> {
    let Collected {
        mut blocks,
        matched: streamed_match,
        stats: unmatched,
        mut msgs,
        searched,
    } = std::mem::take(&mut *ctx.shared.lock().unwrap_or_else(|e| e.into_inner()));
    if ctx.root.is_implicit() && !searched {
        msgs.error(NOTHING_SEARCHED);
    }
    // rg's file order is nondeterministic; D2's path order makes ours
    // stable. A block holds one file's lines, in ascending order already.
    blocks.sort_by(|a, b| d2_order((&a.path, 0), (&b.path, 0)));
    let mut stats = unmatched;
    let mut matched = streamed_match;
    let mut events = Vec::with_capacity(blocks.iter().map(|b| b.events.len()).sum::<usize>() + 1);
    for b in blocks {
        stats.add(&b.stats);
        matched |= b.stats.searches_with_match > 0;
        events.extend(b.events);
    }
    let summary = Event::Summary(Summary {
        elapsed_total: started.elapsed(),
        stats,
    });
    if !ctx.budget.stopped() {
        ctx.budget.spend(summary.json_len() as u64);
    }
    let status = ctx.budget.status(exit_code(matched, msgs.errored));
    match ctx.stream {
        Some(out) => {
            if status.exit_code().is_some() {
                let mut line = Vec::new();
                summary.write_json(&mut line);
                out(&line);
            }
            events.clear();
        }
        None => events.push(summary),
    }
    Outcome {
        status,
        stderr: msgs.into_lines(),
        results: GrepResults { events },
    }
}

/// Per-thread state: a searcher, a matcher clone, buffers and the results
/// of the files this thread searched, merged into the call's state on drop.
struct Worker<'a, F: FileSystem> {
    ctx: &'a GrepCall<'a, F>,
    /// Taken from the thread's slot, given back on drop.
    kit: Option<Kit>,
    blocks: Vec<FileBlock>,
    /// The statistics of the files without a match.
    stats: Stats,
    msgs: Messages,
    searched: bool,
    /// The time of the files the searcher ran on (their sinks' clocks).
    timed: std::time::Duration,
}

impl<'a, F: FileSystem> Worker<'a, F> {
    fn new(ctx: &'a GrepCall<'a, F>) -> Worker<'a, F> {
        Worker {
            ctx,
            kit: Some(ctx.take_kit()),
            blocks: Vec::new(),
            stats: Stats::default(),
            msgs: Messages::default(),
            searched: false,
            timed: std::time::Duration::ZERO,
        }
    }

    /// Search one file; false when `pass` said to leave it to another
    /// thread ([`search_batch`]) before it was searched.
    fn search_haystack(
        &mut self,
        path: &Path,
        source: Source<'_, F>,
        pass: &dyn Fn() -> bool,
    ) -> bool {
        match self.search(path, source, pass) {
            Ok(None) => return false,
            // A file without a match only counts in the summary.
            Ok(Some(block)) if block.events.is_empty() => self.stats.add(&block.stats),
            Ok(Some(block)) => match self.ctx.stream {
                Some(out) => self.emit(out, block),
                None => self.blocks.push(block),
            },
            Err(err) => {
                if !self.ctx.budget.stopped() {
                    self.error(path, source, &err);
                }
            }
        }
        self.searched = true;
        true
    }

    /// Hand a file's lines to `out` at once (rg prints a file's lines when
    /// its search ends, `search.rs: SearchWorker::search`), whole: the
    /// call's lock keeps another thread's lines out of the middle.
    fn emit(&mut self, out: &Stream<'_>, block: FileBlock) {
        let mut lines = Vec::new();
        for e in &block.events {
            e.write_json(&mut lines);
        }
        let mut shared = self.ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
        out(&lines);
        shared.stats.add(&block.stats);
        shared.matched |= block.stats.searches_with_match > 0;
    }

    /// `main.rs: search`: `err_message!("{}: {}", path, err)`.
    fn error(&mut self, path: &Path, source: Source<'_, F>, err: &io::Error) {
        let printed = self.ctx.root.printed(path, source.path_form());
        let shown = String::from_utf8_lossy(&printed);
        self.msgs.io_error(err, || format!("{shown}: {err}"));
    }

    fn search(
        &mut self,
        path: &Path,
        source: Source<'_, F>,
        pass: &dyn Fn() -> bool,
    ) -> io::Result<Option<FileBlock>> {
        let explicit = matches!(source, Source::Explicit);
        let Some(Kit {
            matcher,
            searcher,
            bufs: Buffers { scratch, readbuf },
        }) = self.kit.as_mut()
        else {
            unreachable!("a worker holds its kit until dropped")
        };
        searcher.set_binary_detection(matcher::binary(explicit));
        // Made only when the searcher runs: most walked files are counted
        // without it, and a sink reads the clock.
        let budget = &self.ctx.budget;
        let root = &self.ctx.root;
        let sink = |matcher, scratch| {
            JsonSink::new(matcher, budget, scratch, root, path, source.path_form())
        };
        let cancel = self.ctx.budget.cancel().clone();
        let fs = self.ctx.fs;
        let kind = self.ctx.explicit.filter(|_| explicit);
        let sink = if kind == Some(FileType::File) {
            // As rg searches its memory map, in bounded memory (`explicit.rs`).
            let file = fs.open(path, &cancel)?;
            let mut sink = sink(matcher, scratch);
            if let Some(data) = fs.contents(&file) {
                searcher.search_slice(&*matcher, data, &mut sink)?;
            } else {
                let mut reopen = || fs.open(path, &cancel);
                explicit::search(
                    searcher,
                    matcher,
                    file,
                    &mut reopen,
                    self.ctx.explicit_len,
                    self.ctx.max_match_len,
                    &mut sink,
                    &cancel,
                )?;
            }
            sink
        } else if kind == Some(FileType::Fifo) {
            // Read as it comes, as rg reads it.
            let file = fs.open(path, &cancel)?;
            let mut sink = sink(matcher, scratch);
            searcher.search_reader(&*matcher, file, &mut sink)?;
            sink
        } else {
            if source.path_form() == PathForm::Rg && super::paths::too_long_for_rg(path) {
                return Err(super::paths::name_too_long());
            }
            let open = || match source {
                Source::InDir(dir, name) => fs.open_at(dir.handle(), dir.path(), name),
                Source::Explicit => fs.open(path, &cancel),
            };
            let file = open()?;
            if !explicit && self.ctx.prefilter {
                // A file the filesystem holds in memory is checked in place.
                let nul_free = fs.known_nul_free(&file);
                if let Some(data) = fs.contents(&file).filter(|d| preloadable(d, nul_free)) {
                    if is_clean_miss(matcher, data) {
                        return Ok(Some(clean_miss(data.len() as u64)));
                    }
                }
            }
            let mut reader = FileReader::new(file, cancel.clone(), readbuf);
            if !explicit && self.ctx.prefilter {
                match reader.preload_miss(matcher, pass)? {
                    Preload::Miss(len) => return Ok(Some(clean_miss(len))),
                    Preload::Passed => return Ok(None),
                    Preload::Search => {}
                    Preload::Reopen => {
                        drop(reader);
                        reader = FileReader::new(open()?, cancel.clone(), readbuf);
                    }
                }
            }
            let mut sink = sink(matcher, scratch);
            searcher.search_reader(&*matcher, reader, &mut sink)?;
            sink
        };
        if self.ctx.budget.stopped() {
            return Err(cancelled());
        }
        let block = sink.into_block();
        self.timed += block.stats.elapsed;
        Ok(Some(block))
    }
}

/// What the searcher reports for a file without a match checked whole: one
/// search over every byte, nothing printed (`JsonSink::finish`). Its time
/// is counted with its batch's ([`search_batch`]).
fn clean_miss(len: u64) -> FileBlock {
    FileBlock {
        stats: Stats {
            searches: 1,
            bytes_searched: len,
            ..Stats::default()
        },
        ..FileBlock::default()
    }
}

impl<F: FileSystem> Drop for Worker<'_, F> {
    fn drop(&mut self) {
        if let Some(kit) = self.kit.take() {
            self.ctx.return_kit(kit);
        }
        let mut shared = self.ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.blocks.append(&mut self.blocks);
        shared.stats.add(&self.stats);
        shared.msgs.extend(std::mem::take(&mut self.msgs));
        shared.searched |= self.searched;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cancel::CancelToken;
    use crate::fs::MemFs;

    /// A walk's haystacks, as the walk yields them.
    struct Collect<F: FileSystem>(Vec<Haystack<F>>);

    impl<F: FileSystem> serial_walk::Output<F> for Collect<F> {
        fn file(&mut self, file: Haystack<F>) {
            self.0.push(file);
        }
        fn error(&mut self, err: ignore::Error) {
            panic!("walk error: {err}");
        }
        fn stopped(&self) -> bool {
            false
        }
        fn stopped_at(&self, _: usize) -> bool {
            false
        }
        fn relieve(&mut self) -> bool {
            false
        }
    }

    fn call<'a>(fs: &'a MemFs, workdir: &Path, pattern: &str) -> GrepCall<'a, MemFs> {
        let cancel = CancelToken::new();
        GrepCall {
            fs,
            root: Root::new(workdir, None),
            matcher: matcher::build_cancellable(pattern, &cancel).expect("the pattern builds"),
            budget: Budget::new(None, cancel),
            explicit: None,
            explicit_len: 0,
            max_match_len: explicit::max_match_len(pattern),
            prefilter: matcher::whole_file_prefilter(pattern),
            shared: Mutex::new(Collected::default()),
            stream: None,
            kits: (0..super::super::pool().current_num_threads() + 1)
                .map(|_| Mutex::new(None))
                .collect(),
        }
    }

    /// Once a call has run long enough for a helper and none runs, the
    /// walking thread gives work back, as [`Hand`] says: during the walk
    /// all of it (the walk goes on), after the walk only what follows the
    /// first file, searched whole even past its first read (a file larger
    /// than the preload, its match at the end), so that draining the queue
    /// always moves on.
    #[test]
    fn the_walking_thread_gives_back_only_what_it_will_not_take_back() {
        let workdir = Path::new("/w");
        let fs = MemFs::new();
        fs.create_dir_all(workdir).unwrap();
        let mut big = "x\n".repeat(200 * 1024);
        big.push_str("needle\n");
        fs.write_file(workdir.join("a-big.txt"), &big).unwrap();
        for name in ["b.txt", "c.txt", "d.txt", "e.txt"] {
            fs.write_file(workdir.join(name), "needle\n").unwrap();
        }
        let ctx = call(&fs, workdir, "needle");
        let haystacks = || {
            let mut out = Collect(Vec::new());
            let live = std::sync::Arc::new(AtomicUsize::new(0));
            serial_walk::walk(
                &fs,
                &ctx.root,
                workdir,
                overrides(workdir, &[]).unwrap(),
                &live,
                &mut out,
            );
            out.0.sort_by(|a, b| a.rg_path.cmp(&b.rg_path));
            assert_eq!(out.0.len(), 5);
            out.0
        };
        // (case, searched here, given back)
        type Make = for<'q> fn(&'q Queue<MemFs>) -> Hand<'q, MemFs>;
        let cases: [(&str, Make, usize, usize); 3] = [
            ("a helper's batch", |_| Hand::Keep, 5, 0),
            ("during the walk", |q| Hand::Walking(q), 0, 5),
            ("after the walk", |q| Hand::Draining(q), 1, 4),
        ];
        for (case, hand, searched, back) in cases {
            let mut queue = Queue::new(1);
            queue.helpers_after = std::time::Duration::ZERO;
            queue.walk_done();
            assert!(queue.wants_helper(), "{case}");
            ctx.shared.lock().unwrap().blocks.clear();
            search_batch(&ctx, haystacks(), hand(&queue));
            let blocks = std::mem::take(&mut ctx.shared.lock().unwrap().blocks);
            let mut given = Vec::new();
            while let Some(batch) = queue.pop() {
                given.extend(batch.into_iter().map(|h| h.rg_path));
            }
            assert_eq!(
                (blocks.len(), given.len()),
                (searched, back),
                "{case}: {given:?}"
            );
            if searched == 1 {
                assert_eq!(blocks[0].events.len(), 3, "{case}: begin, match, end");
            }
        }
    }
}
