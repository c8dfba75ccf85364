//! One grep call's state shared between its threads ([`GrepCall`]), and the
//! search of one file by one thread ([`Worker`]; `search.rs:
//! SearchWorker::search`). The call starts in [`grep`](super::grep); its
//! files reach workers through [`schedule`](super::schedule), or, for the
//! one explicit file, straight from the call.

use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;

use crate::event::Stats;
use crate::fs::{FileType, FsHints};
use crate::sync::RecoverPoison;

use super::explicit;
use super::matcher;
use super::messages::Messages;
use super::paths::{PathForm, Root};
use super::reader::{cancelled, is_clean_miss, preloadable, FileReader, Preload, PRELOAD_KEEP};
use super::serial_walk::Dir;
use super::sink::{FileBlock, JsonSink};
use super::{Budget, Engine};

/// Everything one call shares between its threads.
pub(super) struct GrepCall<'a, F: FsHints> {
    pub(super) fs: &'a F,
    /// The engine the call runs on: its pool, its spare buffers.
    pub(super) engine: &'a Engine,
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
        let i = self
            .engine
            .pool()
            .current_thread_index()
            .map_or(0, |i| i + 1);
        &self.tools[i.min(self.tools.len() - 1)]
    }

    fn take_tools(&self) -> SearchTools {
        let taken = self.tools_slot().lock().recover_poison().take();
        taken.unwrap_or_else(|| SearchTools {
            matcher: self.matcher.clone(),
            searcher: matcher::searcher(false),
            bufs: self.engine.spare_buffers().take(),
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

/// Buffers kept between calls, by each engine (`Engine`): enough for
/// every thread of a few concurrent calls, no more.
#[derive(Default)]
pub(crate) struct SpareBuffers(Mutex<Vec<Buffers>>);
const MAX_SPARE_BUFFERS: usize = 16;

impl SpareBuffers {
    fn take(&self) -> Buffers {
        let spare = self.0.lock().recover_poison().pop();
        spare.unwrap_or_else(|| Buffers {
            scratch: Vec::with_capacity(4096),
            readbuf: Vec::new(),
        })
    }

    fn give_back(&self, mut bufs: Buffers) {
        if bufs.readbuf.len() > PRELOAD_KEEP {
            bufs.readbuf = Vec::new();
        }
        let mut spare = self.0.lock().recover_poison();
        if spare.len() < MAX_SPARE_BUFFERS {
            spare.push(bufs);
        }
    }

    /// How many sets are kept.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.0.lock().recover_poison().len()
    }
}

impl<F: FsHints> Drop for GrepCall<'_, F> {
    fn drop(&mut self) {
        for slot in &self.tools {
            let tools = slot.lock().recover_poison().take();
            if let Some(tools) = tools {
                self.engine.spare_buffers().give_back(tools.bufs);
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
    pub(super) matched: bool,
    /// The statistics of the files without a match.
    pub(super) stats: Stats,
    pub(super) msgs: Messages,
    /// Whether a file was searched (or would have been).
    pub(super) searched: bool,
}

/// How a haystack is opened.
pub(super) enum Origin<'d, F: FsHints> {
    /// The one path given, not a directory (`Haystack::is_explicit`); the
    /// path given with it is the engine's absolute walk path.
    Explicit,
    /// A file found by the walk: its name in a listed directory (the path
    /// given with it is the one rg walks).
    InDir(&'d Dir<F>, &'d std::ffi::OsStr),
}

impl<F: FsHints> Clone for Origin<'_, F> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<F: FsHints> Copy for Origin<'_, F> {}

impl<F: FsHints> Origin<'_, F> {
    /// The form of the path given with the haystack: the one rg walks for
    /// a file found by the walk, the engine's absolute walk path otherwise.
    fn path_form(&self) -> PathForm {
        match self {
            Origin::InDir(..) => PathForm::Rg,
            Origin::Explicit => PathForm::Walked,
        }
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
        source: Origin<'_, F>,
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
    fn error(&mut self, path: &Path, source: Origin<'_, F>, err: &io::Error) {
        let printed = self.ctx.root.printed(path, source.path_form());
        let shown = String::from_utf8_lossy(&printed);
        self.msgs.io_error(err, || format!("{shown}: {err}"));
    }

    fn search(
        &mut self,
        path: &Path,
        source: Origin<'_, F>,
        pass: &dyn Fn() -> bool,
    ) -> io::Result<Option<FileBlock>> {
        let explicit = matches!(source, Origin::Explicit);
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
                Origin::InDir(dir, name) => fs.open_at(dir.handle(), dir.path(), name),
                Origin::Explicit => fs.open(path, &cancel),
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
