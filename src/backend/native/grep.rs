//! `rg --json --regexp=<p> [--glob=<include>] [-- <path>]` (`main.rs: search`
//! and `search_parallel`, `search.rs: SearchWorker::search`): the call, its
//! state shared between threads, and the search of one file ([`Worker`]).
//! How a directory's files are shared out between threads is [`schedule`]'s.

use crate::sync::RecoverPoison;
use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use crate::event::{Event, Stats, Summary};
use crate::fs::{FileType, FsHints};
use crate::outcome::{d2_order, GrepResults, Outcome, Status};
use crate::request::GrepRequest;

use super::explicit;
use super::matcher;
use super::messages::{dir_error, Messages, NOTHING_SEARCHED};
use super::overrides::overrides;
use super::paths::{PathForm, Root};
use super::reader::{cancelled, is_clean_miss, preloadable, FileReader, Preload, PRELOAD_KEEP};
use super::schedule;
use super::serial_walk::Dir;
use super::sink::{FileBlock, JsonSink};
use super::{canonical_workdir, exit_code, nul_launch_failure, Budget};

/// Everything one call shares between its threads.
pub(super) struct GrepCall<'a, F: FsHints> {
    pub(super) fs: &'a F,
    pub(super) root: Root,
    pub(super) matcher: RegexMatcher,
    pub(super) budget: Budget,
    /// The kind of the one explicit path (after following links), when the
    /// root is not a directory. rg memory-maps it when it is a regular file
    /// (`hiargs.rs: mmap_choice`) and searches the slice; `explicit.rs` does
    /// the same in bounded memory.
    pub(super) explicit: Option<FileType>,
    /// Its size when stat'ed.
    pub(super) explicit_len: u64,
    /// The longest match of the pattern, when bounded: a line too long to
    /// hold is then checked in chunks (`explicit.rs`).
    pub(super) max_match_len: Option<usize>,
    /// Whether a walked file read whole without a match in its bytes can be
    /// counted without running the searcher ([`matcher::whole_file_prefilter`]).
    pub(super) prefilter: bool,
    pub(super) shared: Mutex<Collected>,
    /// Where each file's lines go as its search ends, when the caller takes
    /// rg's stdout as it comes ([`run_streaming`]) instead of in the
    /// outcome.
    pub(super) stream: Option<&'a Stream<'a>>,
    /// One [`SearchTools`] per thread that searches: slot 0 for a thread
    /// outside the pool (the caller), then one per pool thread. A matcher clone
    /// starts with an empty cache pool (regex-automata `meta::Regex::clone`)
    /// whose lazy DFA must be rebuilt: like rg, which clones once per
    /// thread, a thread keeps its clone (and its searcher's buffers) for the
    /// whole call.
    pub(super) tools: Vec<Mutex<Option<SearchTools>>>,
}

/// What one thread needs to search: a matcher, a searcher, buffers.
pub(super) struct SearchTools {
    matcher: RegexMatcher,
    searcher: Searcher,
    bufs: Buffers,
}

impl<F: FsHints> GrepCall<'_, F> {
    fn tools_slot(&self) -> &Mutex<Option<SearchTools>> {
        let i = super::pool().current_thread_index().map_or(0, |i| i + 1);
        &self.tools[i.min(self.tools.len() - 1)]
    }

    fn take_tools(&self) -> SearchTools {
        let taken = self.tools_slot().lock().recover_poison().take();
        taken.unwrap_or_else(|| SearchTools {
            matcher: self.matcher.clone(),
            searcher: matcher::searcher(false),
            bufs: Buffers::take(),
        })
    }

    fn return_tools(&self, tools: SearchTools) {
        *self.tools_slot().lock().recover_poison() = Some(tools);
    }
}

/// The buffers of [`SearchTools`], which can serve the next call. A call takes
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
        let spare = SPARE_BUFFERS.lock().recover_poison().pop();
        spare.unwrap_or_else(|| Buffers {
            scratch: Vec::with_capacity(4096),
            readbuf: Vec::new(),
        })
    }

    fn give_back(mut self) {
        if self.readbuf.len() > PRELOAD_KEEP {
            self.readbuf = Vec::new();
        }
        let mut spare = SPARE_BUFFERS.lock().recover_poison();
        if spare.len() < MAX_SPARE_BUFFERS {
            spare.push(self);
        }
    }
}

impl<F: FsHints> Drop for GrepCall<'_, F> {
    fn drop(&mut self) {
        for slot in &self.tools {
            let tools = slot.lock().recover_poison().take();
            if let Some(tools) = tools {
                tools.bufs.give_back();
            }
        }
    }
}

/// A receiver of rg's stdout bytes, called by one thread at a time.
pub(crate) type Stream<'a> = dyn Fn(&[u8]) + Sync + 'a;

/// What the threads of a call have found so far.
#[derive(Default)]
pub(super) struct Collected {
    pub(super) blocks: Vec<FileBlock>,
    /// Whether a file streamed already had a match ([`GrepCall::stream`]).
    matched: bool,
    /// The statistics of the files without a match.
    pub(super) stats: Stats,
    pub(super) msgs: Messages,
    /// Whether a file was searched (or would have been).
    pub(super) searched: bool,
}

/// One walk, whatever the root. rg's parallel walker stats each root
/// following links (`DirEntryRaw::from_path`) and reports an error there
/// with the path; a root that is not a directory means one thread
/// (`hiargs.rs: Paths::from_low_args`), whose sequential walker yields the
/// path itself (never filtered at depth 0, no ignore files read) or
/// walkdir's error for it; a directory, or a symlink to one, is walked.
pub(crate) fn run<F: FsHints>(fs: &F, req: &GrepRequest) -> Outcome<GrepResults> {
    run_with(fs, req, None)
}

/// [`run`], with rg's stdout handed to `out` as it is made, a file's lines
/// when its search ends (in the order the files end, as rg prints them)
/// and the summary last: memory holds the files being searched, not the
/// output. The outcome's results are empty.
pub(crate) fn run_streaming<F: FsHints>(
    fs: &F,
    req: &GrepRequest,
    out: &Stream<'_>,
) -> Outcome<GrepResults> {
    run_with(fs, req, Some(out))
}

fn run_with<F: FsHints>(
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
        tools: (0..super::pool().current_num_threads() + 1)
            .map(|_| Mutex::new(None))
            .collect(),
    };
    match meta {
        Err(e) => {
            // The sequential walker's error for its root (walkdir's wording).
            let mut shared = ctx.shared.lock().recover_poison();
            shared
                .msgs
                .io_error(&e, || dir_error(&ctx.root, ctx.root.walk_path(), &e));
        }
        Ok(m) if m.kind.is_dir() => schedule::search_pooled(&ctx, &real_workdir, override_set),
        Ok(_) => {
            let mut worker = Worker::new(&ctx);
            let path = ctx.root.walk_path().to_path_buf();
            worker.search_haystack(&path, Source::Explicit, &|| false);
        }
    }
    finish(ctx, started)
}

/// How a haystack is opened.
pub(super) enum Source<'d, F: FsHints> {
    /// The one path given, not a directory (`Haystack::is_explicit`); the
    /// path given with it is the engine's absolute walk path.
    Explicit,
    /// A file found by the walk: its name in a listed directory (the path
    /// given with it is the one rg walks).
    InDir(&'d Dir<F>, &'d std::ffi::OsStr),
}

impl<F: FsHints> Clone for Source<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: FsHints> Copy for Source<'_, F> {}

impl<F: FsHints> Source<'_, F> {
    /// The form of the path given with the haystack: the one rg walks for
    /// a file found by the walk, the engine's absolute walk path otherwise.
    fn path_form(&self) -> PathForm {
        match self {
            Source::InDir(..) => PathForm::Rg,
            Source::Explicit => PathForm::Walked,
        }
    }
}

fn finish<F: FsHints>(ctx: GrepCall<'_, F>, started: Instant) -> Outcome<GrepResults> {
    let Collected {
        mut blocks,
        matched: streamed_match,
        stats: unmatched,
        mut msgs,
        searched,
    } = std::mem::take(&mut *ctx.shared.lock().recover_poison());
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
pub(super) struct Worker<'a, F: FsHints> {
    ctx: &'a GrepCall<'a, F>,
    /// Taken from the thread's slot, given back on drop.
    tools: Option<SearchTools>,
    blocks: Vec<FileBlock>,
    /// The statistics of the files without a match.
    stats: Stats,
    msgs: Messages,
    searched: bool,
    /// The time of the files the searcher ran on (their sinks' clocks).
    timed: std::time::Duration,
}

impl<'a, F: FsHints> Worker<'a, F> {
    pub(super) fn new(ctx: &'a GrepCall<'a, F>) -> Worker<'a, F> {
        Worker {
            ctx,
            tools: Some(ctx.take_tools()),
            blocks: Vec::new(),
            stats: Stats::default(),
            msgs: Messages::default(),
            searched: false,
            timed: std::time::Duration::ZERO,
        }
    }

    /// Search one file; false when `pass` said to leave it to another
    /// thread ([`schedule`]) before it was searched.
    pub(super) fn search_haystack(
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

    /// Count the time since `started`, less the searcher's, as the time of
    /// the files counted without the searcher ([`clean_miss`]): they are
    /// timed together, not one by one.
    pub(super) fn add_untimed(&mut self, started: Instant) {
        self.stats.elapsed += started.elapsed().saturating_sub(self.timed);
    }

    /// Hand a file's lines to `out` at once (rg prints a file's lines when
    /// its search ends, `search.rs: SearchWorker::search`), whole: the
    /// call's lock keeps another thread's lines out of the middle.
    fn emit(&mut self, out: &Stream<'_>, block: FileBlock) {
        let mut lines = Vec::new();
        for e in &block.events {
            e.write_json(&mut lines);
        }
        let mut shared = self.ctx.shared.lock().recover_poison();
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
        let fs = self.ctx.fs;
        let Some(SearchTools {
            matcher,
            searcher,
            bufs: Buffers { scratch, readbuf },
        }) = self.tools.as_mut()
        else {
            unreachable!("a worker holds its tools until dropped")
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
/// is counted with its batch's ([`Worker::add_untimed`]). Also how a file
/// the index's prefilter rules out counts (`schedule.rs:
/// Batcher::known_miss`).
pub(super) fn clean_miss(len: u64) -> FileBlock {
    FileBlock {
        stats: Stats {
            searches: 1,
            bytes_searched: len,
            ..Stats::default()
        },
        ..FileBlock::default()
    }
}

impl<F: FsHints> Drop for Worker<'_, F> {
    fn drop(&mut self) {
        if let Some(tools) = self.tools.take() {
            self.ctx.return_tools(tools);
        }
        let mut shared = self.ctx.shared.lock().recover_poison();
        shared.blocks.append(&mut self.blocks);
        shared.stats.add(&self.stats);
        shared.msgs.extend(std::mem::take(&mut self.msgs));
        shared.searched |= self.searched;
    }
}
