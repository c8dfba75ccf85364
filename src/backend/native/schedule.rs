//! How a grep of a directory shares its files between threads.
//!
//! The calling thread walks ([`serial_walk`]: depth-first, each directory
//! listed once) and never waits for work; the pool's threads only search.
//! What the walk finds goes into batches of [`BATCH`] files, queued
//! ([`Batches`]): a batch, not a file, is what passes between threads, since
//! each hand-off costs a lock and maybe a wake-up, and a batch is small
//! enough that the end of a walk still spreads over every thread. Files
//! the walking thread gives back are the exception: one at a time, so
//! that every thread can take some.
//!
//! Who hands what to whom:
//!
//! - The walking thread hands each full batch to the queue. Once the call
//!   has run for the helper delay ([`Engine::helper_delay`]), queueing also
//!   starts helpers on the engine's pool (up to one less than its
//!   threads), which search batch after batch until the walk is over and
//!   the queue empty ([`Batches::serve`]); a call on a small tree ends before
//!   any starts.
//! - When more than [`MAX_QUEUED`] batches wait, the walking thread
//!   searches one itself rather than walk further ahead, and gives the rest
//!   of it back to the front of the queue as soon as a helper waits for
//!   work ([`GiveBack`]).
//! - A walked file holds its directory's handle (a descriptor on the local
//!   disk) until it is searched. When the walk holds too many directories,
//!   the walking thread searches queued files itself, or waits for the
//!   helpers searching theirs, before it opens another
//!   ([`serial_walk::Output::release_dirs`]).
//! - When the walk ends, the walking thread searches what is still queued,
//!   along with the helpers, giving back only between files.
//!
//! Cancellation and the raw budget: the walk looks at [`Budget::stopped`]
//! between entries and every searching thread before each file, so a
//! stopped call empties the queue without searching it. The helpers are
//! spawned in a scope of the call, which ends only when all have returned;
//! the walk's end is marked even when it unwinds ([`Batcher`]'s drop), so
//! no helper waits for a batch that cannot come.
//!
//! Order: the files end in whatever order the threads search them, as in
//! rg. Each file's lines form one block; a call that keeps its output sorts
//! the blocks by path at the end (D2), and a streaming call hands them on
//! in the order they end.

use crate::sync::RecoverPoison;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

use crate::event::Stats;
use crate::fs::FsHints;

use super::kept::{self, Keeper, Recorder};
use super::messages::Messages;
use super::rgignore::RgIgnore;
use super::serial_walk::{self, Below, Haystack};
use super::worker::{clean_miss, GrepCall, Origin, Worker};
#[cfg(doc)]
use super::{Budget, Engine};

/// The messages the walk's ignore decisions collected (ignore-file errors,
/// walk errors), into the call's stderr.
fn report_ignore_messages<F: FsHints>(ctx: &GrepCall<'_, F>, ignore_rules: &RgIgnore) {
    let mut shared = ctx.shared.lock().recover_poison();
    for (msg, errored) in ignore_rules.take_messages() {
        if errored {
            shared.msgs.error(&msg);
        } else {
            shared.msgs.print(&msg);
        }
    }
}

/// How many files one batch holds: small enough to balance the end of a
/// walk between threads, large enough that queueing costs nothing.
const BATCH: usize = 16;

/// How many batches the walk queues before the walking thread searches one.
const MAX_QUEUED: usize = 4;

/// Search the directory root of `ctx`: walk it on the calling thread
/// ([`serial_walk`]: the same decisions, errors and ignore-file lookups as
/// rg's walker) and search what it finds there and on the engine's pool,
/// as the module says. The walk never waits for work (rg's walker sleeps
/// 1 ms at a time when idle, ignore 0.4.29 `walk.rs: get_work`).
pub(super) fn search_pooled<F: FsHints, K: Keeper<F>>(
    ctx: &GrepCall<'_, F>,
    real_workdir: &Path,
    override_set: ignore::overrides::Override,
    globs: &[String],
    keeper: &K,
) {
    let queue = Batches::new(ctx.engine.threads() - 1, ctx.engine.helper_delay());
    let live = std::sync::Arc::new(AtomicUsize::new(0));
    ctx.engine.pool().in_place_scope(|s| {
        let mut batcher = Batcher {
            ctx,
            queue: &queue,
            scope: s,
            batch: Vec::with_capacity(BATCH),
            msgs: Messages::default(),
            searched: false,
            missed: Stats::default(),
        };
        let mut recorder = Recorder::new(&mut batcher, keeper, &ctx.root);
        // The walk below the root, kept (`kept.rs`): replayed when the
        // keeper has it for this call, else recorded.
        let mut to_keep = None;
        let ignore_rules = serial_walk::walk(
            ctx.fs,
            &ctx.root,
            real_workdir,
            override_set,
            ctx.engine.ignore_memo(),
            &live,
            &mut recorder,
            |rules, rec| {
                if !K::KEEPS {
                    return Below::Walk;
                }
                let key = rules.outside(globs);
                if let Some(walked) = keeper.find(&key) {
                    kept::replay(ctx.fs, keeper, &walked, &live, &mut *rec.out);
                    rules.add_messages(walked.ignore_messages());
                    return Below::Done;
                }
                to_keep = Some((key, rules.messages_len()));
                rec.start();
                Below::Walk
            },
        );
        if let (Some(walked), Some((key, from))) = (recorder.finish(), to_keep) {
            kept::keep(keeper, key, walked, ignore_rules.messages_from(from));
        }
        drop(batcher);
        report_ignore_messages(ctx, &ignore_rules);
        // Anything the helpers have not taken, with their help once the
        // call has run long enough.
        while let Some(batch) = queue.pop() {
            search_batch(ctx, batch, GiveBack::BetweenFiles(&queue));
            queue.start_helpers(ctx, s);
        }
    });
}

/// The walking thread's end of the walk: walk errors and haystacks, in
/// batches.
struct Batcher<'r, 's, F: FsHints> {
    ctx: &'s GrepCall<'s, F>,
    queue: &'s Batches<F>,
    scope: &'r rayon::Scope<'s>,
    batch: Vec<Haystack<F>>,
    msgs: Messages,
    searched: bool,
    /// The files the filesystem ruled out ([`Batcher::known_miss`]),
    /// counted as searched.
    missed: Stats,
}

impl<'r, 's: 'r, F: FsHints> Batcher<'r, 's, F> {
    /// The index's prefilter (`docs/index.md`), asked as the walk finds a
    /// file, before it is queued (the one place it is asked): in an indexed
    /// tree nearly every walked file ends here, counted as a text file
    /// read whole without a match ([`clean_miss`]) and never handed to
    /// another thread. A path too long for rg is left to the worker, which
    /// reports its error.
    fn known_miss(&mut self, file: &Haystack<F>) -> bool {
        if super::paths::too_long_for_rg(&file.rg_path) {
            return false;
        }
        let fs = self.ctx.fs;
        match fs.known_miss(file.dir.handle(), file.dir.path(), file.name(), file.at) {
            Some(len) => {
                self.missed.add(&clean_miss(len).stats);
                true
            }
            None => false,
        }
    }

    fn push(&mut self) {
        let batch = std::mem::replace(&mut self.batch, Vec::with_capacity(BATCH));
        self.queue.push(batch);
        self.queue.start_helpers(self.ctx, self.scope);
    }
}

impl<'r, 's: 'r, F: FsHints> serial_walk::Output<F> for Batcher<'r, 's, F> {
    fn file(&mut self, file: Haystack<F>) {
        self.searched = true;
        if self.known_miss(&file) {
            return;
        }
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
    fn ruled_out(&mut self, files: u64, missed: &Stats) {
        self.searched |= files > 0;
        self.missed.add(missed);
    }

    fn kept_errors(&mut self, msgs: &Messages) {
        self.msgs.extend(msgs.clone());
    }

    fn release_dirs(&mut self) -> bool {
        // Searched here whatever the helpers do: this frees descriptors.
        if self.search_queued(false) {
            return true;
        }
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            search_batch(self.ctx, batch, GiveBack::Nothing);
            return true;
        }
        if self.queue.busy.load(Ordering::Acquire) > 0 {
            std::thread::sleep(std::time::Duration::from_micros(20));
            return true;
        }
        false
    }
}

impl<F: FsHints> Batcher<'_, '_, F> {
    /// Search one queued batch on the walking thread, or with `pass`
    /// only until a helper waits for work ([`GiveBack::Anytime`]); false when
    /// none is queued.
    fn search_queued(&mut self, pass: bool) -> bool {
        match self.queue.pop() {
            Some(batch) => {
                let give_back = if pass {
                    GiveBack::Anytime(self.queue)
                } else {
                    GiveBack::Nothing
                };
                search_batch(self.ctx, batch, give_back);
                self.queue.start_helpers(self.ctx, self.scope);
                true
            }
            None => false,
        }
    }
}

impl<F: FsHints> Drop for Batcher<'_, '_, F> {
    fn drop(&mut self) {
        if !self.batch.is_empty() {
            let batch = std::mem::take(&mut self.batch);
            self.queue.push(batch);
        }
        // Also when the walk unwinds: the scope waits for the helpers.
        self.queue.walk_done();
        let mut shared = self.ctx.shared.lock().recover_poison();
        shared.msgs.extend(std::mem::take(&mut self.msgs));
        shared.searched |= self.searched;
        shared.stats.add(&self.missed);
    }
}

/// The batches of one call waiting for a thread.
struct Batches<F: FsHints> {
    state: Mutex<BatchesState<F>>,
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
    /// How long the call runs alone first ([`Engine::helper_delay`]).
    helpers_after: std::time::Duration,
}

struct BatchesState<F: FsHints> {
    batches: std::collections::VecDeque<Vec<Haystack<F>>>,
    /// Whether the walk may still queue batches.
    walking: bool,
}

impl<F: FsHints> Batches<F> {
    fn new(max_helpers: usize, helpers_after: std::time::Duration) -> Batches<F> {
        Batches {
            state: Mutex::new(BatchesState {
                batches: std::collections::VecDeque::new(),
                walking: true,
            }),
            ready: std::sync::Condvar::new(),
            helpers: AtomicUsize::new(0),
            busy: AtomicUsize::new(0),
            waiting: AtomicUsize::new(0),
            max_helpers,
            started: Instant::now(),
            helpers_after,
        }
    }

    /// Whether the call has run long enough alone (the helper delay) and
    /// may start a helper.
    fn wants_helper(&self) -> bool {
        self.helpers.load(Ordering::Acquire) < self.max_helpers
            && self.started.elapsed() >= self.helpers_after
    }

    /// Start the helpers the call may have, once it has run long enough
    /// alone. They serve until the walk ends ([`Batches::serve`]).
    fn start_helpers<'s>(&'s self, ctx: &'s GrepCall<'s, F>, scope: &rayon::Scope<'s>) {
        while self.wants_helper() {
            self.helpers.fetch_add(1, Ordering::AcqRel);
            scope.spawn(move |_| {
                self.serve(ctx);
                self.helpers.fetch_sub(1, Ordering::AcqRel);
            });
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BatchesState<F>> {
        self.state.lock().recover_poison()
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
                    state = self.ready.wait(state).recover_poison();
                    self.waiting.fetch_sub(1, Ordering::Relaxed);
                }
            };
            search_batch(ctx, batch, GiveBack::Nothing);
            self.busy.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// What the thread searching a batch gives back to the front of the queue
/// ([`search_batch`]) when a helper waits for work or may be started.
enum GiveBack<'q, F: FsHints> {
    /// Nothing: the batch is searched whole. A helper's batch, or one the
    /// walking thread searches to free directories' descriptors.
    Nothing,
    /// The rest of the batch, between files or in the middle of one
    /// (before its first match: the helper searches that file from its
    /// start). The walking thread during the walk, which has the walk to go
    /// back to: a large file searched whole there would keep a waiting
    /// helper idle until it ends.
    Anytime(&'q Batches<F>),
    /// The rest of the batch, between files, once its first file is
    /// searched. The walking thread once the walk is over, one searcher
    /// among the others, which would take back what it gives: keeping its
    /// first file makes every batch it takes move the call on. (Were it to
    /// give that file back too, a helper started for it could find the
    /// queue empty while this thread holds the file again, end, and let
    /// the next helper start, over and over until the deadline.)
    BetweenFiles(&'q Batches<F>),
}

/// Search a batch, giving the rest back as [`GiveBack`] says.
fn search_batch<F: FsHints>(
    ctx: &GrepCall<'_, F>,
    batch: Vec<Haystack<F>>,
    give_back: GiveBack<'_, F>,
) {
    if batch.is_empty() {
        return;
    }
    let mut worker = Worker::new(ctx);
    let wanted = |q: &Batches<F>| q.helper_idle() || q.wants_helper();
    let in_file = || matches!(give_back, GiveBack::Anytime(q) if wanted(q));
    // The files counted without the searcher are timed together, the
    // batch's time less the searcher's: a clock read per file is a cost
    // of its own next to the check of a small file (BENCHMARKS.md).
    let started = Instant::now();
    let queue = match give_back {
        GiveBack::Nothing => None,
        GiveBack::Anytime(q) | GiveBack::BetweenFiles(q) => Some(q),
    };
    let mut files = batch.into_iter().enumerate();
    while let Some((i, file)) = files.next() {
        if ctx.budget.stopped() {
            break;
        }
        let between = match give_back {
            GiveBack::Nothing => false,
            GiveBack::Anytime(q) => wanted(q),
            GiveBack::BetweenFiles(q) => i > 0 && wanted(q),
        };
        let passed = between
            || !worker.search_haystack(
                &file.rg_path,
                Origin::InDir(&file.dir, file.name()),
                &in_file,
            );
        if let (true, Some(queue)) = (passed, queue) {
            queue.push_front(std::iter::once(file).chain(files.map(|(_, f)| f)));
            break;
        }
    }
    worker.add_untimed(started);
}

#[cfg(test)]
mod tests {
    use super::super::overrides::overrides;
    use super::super::paths::Root;
    use super::super::worker::Collected;
    use super::super::{explicit, matcher, Budget};
    use super::*;
    use crate::cancel::CancelToken;
    use crate::fs::MemFs;

    /// A walk's haystacks, as the walk yields them.
    struct Collect<F: FsHints>(Vec<Haystack<F>>);

    impl<F: FsHints> serial_walk::Output<F> for Collect<F> {
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
        fn release_dirs(&mut self) -> bool {
            false
        }
        fn ruled_out(&mut self, _: u64, _: &Stats) {
            panic!("nothing is ruled out here");
        }
        fn kept_errors(&mut self, _: &Messages) {
            panic!("no walk is kept here");
        }
    }

    fn call<'a>(fs: &'a MemFs, workdir: &Path, pattern: &str) -> GrepCall<'a, MemFs> {
        let cancel = CancelToken::new();
        GrepCall {
            fs,
            engine: super::super::engine::process(),
            root: Root::new(workdir, None),
            matcher: matcher::build_cancellable(pattern, &cancel).expect("the pattern builds"),
            budget: Budget::new(None, cancel),
            explicit: None,
            explicit_len: 0,
            max_match_len: explicit::max_match_len(pattern),
            prefilter: matcher::whole_file_prefilter(pattern),
            shared: Mutex::new(Collected::default()),
            stream: None,
            tools: (0..super::super::engine::process().pool().current_num_threads() + 1)
                .map(|_| Mutex::new(None))
                .collect(),
        }
    }

    /// Once a call has run long enough for a helper and none runs, the
    /// walking thread gives work back, as [`GiveBack`] says: during the walk
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
                &Default::default(),
                &live,
                &mut out,
                |_, _| Below::Walk,
            );
            out.0.sort_by(|a, b| a.rg_path.cmp(&b.rg_path));
            assert_eq!(out.0.len(), 5);
            out.0
        };
        // (case, searched here, given back)
        type Make = for<'q> fn(&'q Batches<MemFs>) -> GiveBack<'q, MemFs>;
        let cases: [(&str, Make, usize, usize); 3] = [
            ("a helper's batch", |_| GiveBack::Nothing, 5, 0),
            ("during the walk", |q| GiveBack::Anytime(q), 0, 5),
            ("after the walk", |q| GiveBack::BetweenFiles(q), 1, 4),
        ];
        for (case, give_back, searched, back) in cases {
            let queue = Batches::new(1, std::time::Duration::ZERO);
            queue.walk_done();
            assert!(queue.wants_helper(), "{case}");
            ctx.shared.lock().unwrap().blocks.clear();
            search_batch(&ctx, haystacks(), give_back(&queue));
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
