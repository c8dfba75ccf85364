//! `rg --json --regexp=<p> [--glob=<include>] [-- <path>]` (`main.rs: search`
//! and `search_parallel`, `search.rs: SearchWorker::search`).

use std::fs::File;
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use crate::event::{Event, Stats, Summary};
use crate::outcome::{GrepResults, Outcome, Status};
use crate::request::GrepRequest;

use super::dirwalk::{self, Haystack};
use crate::fs::local::FifoReader;
use super::matcher;
use super::messages::{walk_error, Messages, NOTHING_SEARCHED};
use super::paths::Root;
use super::reader::{cancelled, is_clean_miss, read_whole, FileReader, PRELOAD_KEEP};
use super::rgignore::RgIgnore;
use super::sink::{FileBlock, JsonSink};
use super::walk::{grep_walker, grep_walker_rg, is_haystack, overrides};
use super::{canonical_workdir, check_arg, exit_code, Budget};

/// Everything one call shares between its threads.
struct Ctx<'a> {
    root: Root,
    matcher: RegexMatcher,
    budget: Budget,
    /// rg memory-maps the one explicit path when it is a regular file
    /// (`hiargs.rs` L235); we read it whole and search the slice instead.
    slice: bool,
    /// Whether a walked file read whole without a match in its bytes can be
    /// counted without running the searcher ([`matcher::whole_file_prefilter`]).
    prefilter: bool,
    shared: Mutex<Shared>,
    /// One [`Kit`] per thread that searches: slot 0 for a thread outside
    /// the pool (the caller), then one per pool thread. A matcher clone
    /// starts with an empty cache pool (regex-automata `meta::Regex::clone`)
    /// whose lazy DFA must be rebuilt: like rg, which clones once per
    /// thread, a thread keeps its clone (and its searcher's buffers) for the
    /// whole call.
    kits: Vec<Mutex<Option<Kit>>>,
    _p: std::marker::PhantomData<&'a ()>,
}

/// What one thread needs to search: a matcher, a searcher, buffers.
struct Kit {
    matcher: RegexMatcher,
    searcher: Searcher,
    bufs: Buffers,
}

impl Ctx<'_> {
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

impl Drop for Ctx<'_> {
    fn drop(&mut self) {
        for slot in &self.kits {
            let kit = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(kit) = kit {
                kit.bufs.give_back();
            }
        }
    }
}

#[derive(Default)]
struct Shared {
    blocks: Vec<FileBlock>,
    /// The statistics of the files without a match.
    stats: Stats,
    msgs: Messages,
    searched: bool,
}

pub(crate) fn run(req: &GrepRequest) -> Outcome<GrepResults> {
    let started = Instant::now();
    let fail = |why: String| Outcome {
        status: Status::LaunchFailed(why),
        stderr: Vec::new(),
        results: GrepResults::default(),
    };
    if let Err(why) = check_arg("pattern", Some(&req.pattern))
        .and(check_arg("path", req.path.as_deref()))
        .and(check_arg("include", req.include.as_deref()))
    {
        return fail(why);
    }
    let wc = match canonical_workdir(&req.workdir) {
        Ok(wc) => wc,
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
    let ov = match overrides(&wc, &globs) {
        Ok(ov) => ov,
        Err(e) => return arg_error(e),
    };
    let matcher = match matcher::build(&req.pattern) {
        Ok(m) => m,
        Err(e) => return arg_error(e),
    };
    let root = Root::new(&wc, req.path.as_deref());
    // One look at the path, a second only through a symlink.
    let lmeta = std::fs::symlink_metadata(root.walk_path());
    let real_dir = lmeta.as_ref().is_ok_and(|m| m.is_dir());
    let meta = match &lmeta {
        Ok(m) if m.file_type().is_symlink() => std::fs::metadata(root.walk_path()),
        _ => lmeta,
    };
    // `hiargs.rs: Paths::from_low_args` L1094: one path that is not a
    // directory (a missing one included) means one thread.
    let one_file = !meta.as_ref().is_ok_and(|m| m.is_dir());
    let ctx = Ctx {
        slice: one_file && meta.as_ref().is_ok_and(|m| m.is_file()),
        prefilter: matcher::whole_file_prefilter(&req.pattern),
        root,
        matcher,
        budget: Budget::new(req.raw_budget, req.cancel.clone()),
        shared: Mutex::new(Shared::default()),
        kits: (0..super::pool().current_num_threads() + 1)
            .map(|_| Mutex::new(None))
            .collect(),
        _p: std::marker::PhantomData,
    };
    if one_file {
        search_sequential(&ctx, &wc, ov);
    } else if real_dir {
        search_pooled(&ctx, &wc, ov);
    } else {
        let threads = super::threads();
        let mut builder = VisitorBuilder { ctx: &ctx };
        let rgi = std::sync::Arc::new(RgIgnore::new(&ctx.root, &wc, ov));
        grep_walker_rg(ctx.root.walk_path(), &wc, rgi.clone(), threads)
            .build_parallel()
            .visit(&mut builder);
        report_ignore_messages(&ctx, &rgi);
    }
    finish(ctx, started)
}

/// The messages the walk's ignore decisions collected (ignore-file errors,
/// walk errors), into the call's stderr.
fn report_ignore_messages(ctx: &Ctx<'_>, rgi: &RgIgnore) {
    let mut shared = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
    for (msg, errored) in rgi.take_messages() {
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
/// helpers on the engine's pool search them while the walk goes on, and
/// the walking thread searches whatever is left once it ends. The walk
/// never waits for work (rg's walker sleeps 1 ms at a time when idle,
/// ignore 0.4.29 `walk.rs: get_work` L1917), and the searching threads are
/// the pool's, started once per process. The order of files does not
/// matter: blocks are sorted by path at the end (D2).
fn search_pooled(ctx: &Ctx<'_>, wc: &Path, ov: ignore::overrides::Override) {
    let queue = Queue::new();
    let live = std::sync::Arc::new(AtomicUsize::new(0));
    super::pool().in_place_scope(|s| {
        let mut batcher = Batcher {
            ctx,
            queue: &queue,
            scope: s,
            max_helpers: super::threads() - 1,
            batch: Vec::with_capacity(BATCH),
            msgs: Messages::default(),
            searched: false,
        };
        let rgi = dirwalk::walk(&ctx.root, wc, ov, &live, &mut batcher);
        drop(batcher);
        report_ignore_messages(ctx, &rgi);
        // Anything the helpers have not taken.
        queue.drain(ctx);
    });
}

/// The walking thread's end of the walk: walk errors and haystacks, in
/// batches.
struct Batcher<'r, 's> {
    ctx: &'s Ctx<'s>,
    queue: &'s Queue,
    scope: &'r rayon::Scope<'s>,
    max_helpers: usize,
    batch: Vec<Haystack>,
    msgs: Messages,
    searched: bool,
}

impl<'r, 's: 'r> Batcher<'r, 's> {
    fn push(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        let queue = self.queue;
        let ctx = self.ctx;
        queue.push(batch);
        // Helpers start with the first batches and serve until the walk
        // ends ([`Queue::serve`]).
        if queue.helpers.load(Ordering::Acquire) < self.max_helpers {
            queue.helpers.fetch_add(1, Ordering::AcqRel);
            self.scope.spawn(move |_| {
                queue.serve(ctx);
                queue.helpers.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }
}

impl<'r, 's: 'r> dirwalk::Output for Batcher<'r, 's> {
    fn file(&mut self, file: Haystack) {
        self.searched = true;
        self.batch.push(file);
        if self.batch.len() == BATCH {
            self.push();
            // Searching beats walking further ahead once enough is queued.
            if self.queue.len() > MAX_QUEUED {
                self.search_queued();
            }
        }
    }

    fn error(&mut self, err: ignore::Error) {
        self.msgs.error(&walk_error(&err, &self.ctx.root));
    }

    fn stopped(&self) -> bool {
        self.ctx.budget.stopped()
    }

    /// Directory descriptors are short: search what holds them. A queued
    /// batch first, then the batch being filled; when neither is left and
    /// helpers are searching theirs, wait a moment for them to finish.
    /// Only the walk's own stack of parents is left when this says no.
    fn relieve(&mut self) -> bool {
        if self.search_queued() {
            return true;
        }
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            search_batch(self.ctx, batch);
            return true;
        }
        if self.queue.busy.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_micros(20));
            return true;
        }
        false
    }
}

impl Batcher<'_, '_> {
    /// Search one queued batch on the walking thread; false when none is
    /// queued.
    fn search_queued(&mut self) -> bool {
        match self.queue.pop() {
            Some(batch) => {
                search_batch(self.ctx, batch);
                true
            }
            None => false,
        }
    }
}

impl Drop for Batcher<'_, '_> {
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
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when a batch is queued for a waiting helper, and when the
    /// walk ends.
    ready: std::sync::Condvar,
    /// Helpers spawned and not yet finished.
    helpers: AtomicUsize,
    /// Helpers searching a batch now (holding its directories).
    busy: AtomicUsize,
}

#[derive(Default)]
struct QueueState {
    batches: std::collections::VecDeque<Vec<Haystack>>,
    /// Whether the walk may still queue batches.
    walking: bool,
    /// Helpers waiting for a batch.
    waiting: usize,
}

impl Queue {
    fn new() -> Queue {
        Queue {
            state: Mutex::new(QueueState {
                walking: true,
                ..QueueState::default()
            }),
            ready: std::sync::Condvar::new(),
            helpers: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, QueueState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn push(&self, batch: Vec<Haystack>) {
        let mut state = self.lock();
        state.batches.push_back(batch);
        if state.waiting > 0 {
            self.ready.notify_one();
        }
    }

    fn len(&self) -> usize {
        self.lock().batches.len()
    }

    fn pop(&self) -> Option<Vec<Haystack>> {
        self.lock().batches.pop_front()
    }

    /// The walk is over: waiting helpers search what is left, then return.
    fn walk_done(&self) {
        self.lock().walking = false;
        self.ready.notify_all();
    }

    /// Search queued batches until none is left (the walking thread).
    fn drain(&self, ctx: &Ctx<'_>) {
        while let Some(batch) = self.pop() {
            search_batch(ctx, batch);
        }
    }

    /// A helper: search batches as they come until the walk is over and
    /// none is left. Waiting for the next batch (rather than returning
    /// when the queue is momentarily empty, to be started again by the next
    /// one) keeps a helper from being put to sleep and woken up once per
    /// batch when the walk and the searches run at about the same pace.
    fn serve(&self, ctx: &Ctx<'_>) {
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
                    state.waiting += 1;
                    state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
                    state.waiting -= 1;
                }
            };
            search_batch(ctx, batch);
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

fn search_batch(ctx: &Ctx<'_>, batch: Vec<Haystack>) {
    if batch.is_empty() {
        return;
    }
    let mut worker = Worker::new(ctx);
    for file in batch {
        if ctx.budget.stopped() {
            return;
        }
        worker.search_haystack(&file.rg_path, Source::InDir(file.dir.fd(), file.name()));
    }
}

/// How a haystack is opened.
#[derive(Clone, Copy)]
enum Source<'d> {
    /// The one path given, not a directory (`Haystack::is_explicit`).
    Explicit,
    /// A file found by the crate's walker (below a symlinked root).
    Walked,
    /// A file found by the engine's walk: its name in a listed directory
    /// (the path given with it is the one rg walks).
    InDir(&'d rustix::fd::OwnedFd, &'d std::ffi::OsStr),
}

impl Source<'_> {
    /// Whether the path given with the haystack is the one rg walks rather
    /// than the engine's absolute walk path.
    fn is_rg_path(&self) -> bool {
        matches!(self, Source::InDir(..))
    }
}

fn finish(ctx: Ctx<'_>, started: Instant) -> Outcome<GrepResults> {
    let Shared {
        mut blocks,
        stats: unmatched,
        mut msgs,
        searched,
    } = std::mem::take(&mut *ctx.shared.lock().unwrap_or_else(|e| e.into_inner()));
    if ctx.root.is_implicit() && !searched {
        msgs.error(NOTHING_SEARCHED);
    }
    // rg's file order is nondeterministic; path order makes ours stable.
    blocks.sort_by(|a, b| a.path.cmp(&b.path));
    let mut stats = unmatched;
    let mut matched = false;
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
    events.push(summary);
    Outcome {
        status: ctx.budget.status(exit_code(matched, msgs.errored)),
        stderr: msgs.lines,
        results: GrepResults { events },
    }
}

/// The single non-directory path: `ignore::Walk`, the sequential walker,
/// whose errors keep walkdir's wording.
fn search_sequential(ctx: &Ctx<'_>, wc: &Path, ov: ignore::overrides::Override) {
    let mut worker = Worker::new(ctx);
    for result in grep_walker(ctx.root.walk_path(), wc, ov, 1).build() {
        if ctx.budget.stopped() {
            break;
        }
        worker.visit_result(result);
    }
}

/// Per-thread state: a searcher, a matcher clone, buffers and the results
/// of the files this thread searched, merged into the call's state on drop.
struct Worker<'a> {
    ctx: &'a Ctx<'a>,
    /// Taken from the thread's slot, given back on drop.
    kit: Option<Kit>,
    /// The directory of the last file opened, for [`open_in_dir`].
    dir: Option<(std::path::PathBuf, rustix::fd::OwnedFd)>,
    blocks: Vec<FileBlock>,
    /// The statistics of the files without a match.
    stats: Stats,
    msgs: Messages,
    searched: bool,
}

impl<'a> Worker<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Worker<'a> {
        Worker {
            ctx,
            kit: Some(ctx.take_kit()),
            dir: None,
            blocks: Vec::new(),
            stats: Stats::default(),
            msgs: Messages::default(),
            searched: false,
        }
    }

    fn visit_result(&mut self, result: Result<DirEntry, ignore::Error>) {
        let dent = match result {
            Ok(dent) => dent,
            Err(err) => {
                self.msgs.error(&walk_error(&err, &self.ctx.root));
                return;
            }
        };
        // Ignore-file parse errors: `ignore_message!`, exit code unchanged.
        if let Some(err) = dent.error() {
            self.msgs.print(&walk_error(err, &self.ctx.root));
        }
        let Some(explicit) = is_haystack(&dent) else {
            return;
        };
        let source = if explicit {
            Source::Explicit
        } else {
            Source::Walked
        };
        self.search_haystack(dent.path(), source);
    }

    fn search_haystack(&mut self, path: &Path, source: Source<'_>) {
        self.searched = true;
        match self.search(path, source) {
            // A file without a match only counts in the summary.
            Ok(block) if block.events.is_empty() => self.stats.add(&block.stats),
            Ok(block) => self.blocks.push(block),
            Err(err) => {
                if self.ctx.budget.stopped() {
                    return;
                }
                // `main.rs: search`: `err_message!("{}: {}", path, err)`.
                let printed = self.ctx.root.printed(path, source.is_rg_path());
                let shown = String::from_utf8_lossy(&printed);
                self.msgs.error(&format!("{shown}: {err}"));
            }
        }
    }

    fn search(&mut self, path: &Path, source: Source<'_>) -> io::Result<FileBlock> {
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
        let mut sink = JsonSink::new(
            matcher,
            &self.ctx.budget,
            scratch,
            &self.ctx.root,
            path,
            source.is_rg_path(),
        );
        let cancel = self.ctx.budget.cancel().clone();
        if explicit && self.ctx.slice {
            let data = read_whole(path, &cancel)?;
            searcher.search_slice(&*matcher, &data, &mut sink)?;
        } else if explicit && is_fifo(path) {
            let reader = FifoReader::open(path, cancel)?;
            searcher.search_reader(&*matcher, reader, &mut sink)?;
        } else {
            let file = match source {
                Source::InDir(dir, name) => {
                    use rustix::fs::{Mode, OFlags};
                    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
                    File::from(rustix::fs::openat(dir, name, flags, Mode::empty())?)
                }
                Source::Walked => open_in_dir(&mut self.dir, path)?,
                Source::Explicit => File::open(path)?,
            };
            let mut reader = FileReader::new(file, cancel, readbuf);
            if !explicit && self.ctx.prefilter {
                let started = Instant::now();
                if let Some(data) = reader.preload()? {
                    if is_clean_miss(matcher, data) {
                        // What the searcher reports for it: one search over
                        // every byte, nothing printed (`JsonSink::finish`).
                        let stats = Stats {
                            elapsed: started.elapsed(),
                            searches: 1,
                            bytes_searched: data.len() as u64,
                            ..Stats::default()
                        };
                        return Ok(FileBlock {
                            stats,
                            ..FileBlock::default()
                        });
                    }
                }
            }
            searcher.search_reader(&*matcher, reader, &mut sink)?;
        }
        if self.ctx.budget.stopped() {
            return Err(cancelled());
        }
        Ok(sink.into_block())
    }
}

/// Open a walked file relative to its directory, whose descriptor is
/// kept while the following files are in the same directory: the kernel
/// then resolves one name instead of the whole absolute path. The errors
/// are the same `open(2)` errors (`io::Error` from the errno).
fn open_in_dir(
    cache: &mut Option<(std::path::PathBuf, rustix::fd::OwnedFd)>,
    path: &Path,
) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return File::open(path);
    };
    if cache.as_ref().is_none_or(|(p, _)| p != parent) {
        *cache = None;
        let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match rustix::fs::open(parent, flags, Mode::empty()) {
            Ok(fd) => *cache = Some((parent.to_path_buf(), fd)),
            Err(_) => return File::open(path),
        }
    }
    let Some((_, fd)) = cache.as_ref() else {
        return File::open(path);
    };
    let fd = rustix::fs::openat(fd, name, OFlags::RDONLY | OFlags::CLOEXEC, Mode::empty())?;
    Ok(File::from(fd))
}

impl Drop for Worker<'_> {
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

struct VisitorBuilder<'a> {
    ctx: &'a Ctx<'a>,
}

impl<'s> ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ParallelVisitor + 's> {
        Box::new(Worker::new(self.ctx))
    }
}

impl ParallelVisitor for Worker<'_> {
    fn visit(&mut self, result: Result<DirEntry, ignore::Error>) -> WalkState {
        if self.ctx.budget.stopped() {
            return WalkState::Quit;
        }
        self.visit_result(result);
        if self.ctx.budget.stopped() {
            WalkState::Quit
        } else {
            WalkState::Continue
        }
    }
}

fn is_fifo(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    path.metadata().is_ok_and(|m| m.file_type().is_fifo())
}
