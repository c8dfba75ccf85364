//! `rg --json --regexp=<p> [--glob=<include>] [-- <path>]` (`main.rs: search`
//! and `search_parallel`, `search.rs: SearchWorker::search`).

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use grep_regex::RegexMatcher;
use grep_searcher::Searcher;
use ignore::{DirEntry, ParallelVisitor, ParallelVisitorBuilder, WalkState};

use crate::event::{Event, Stats, Summary};
use crate::outcome::{GrepResults, Outcome, Status};
use crate::request::GrepRequest;

use super::fifo::FifoReader;
use super::matcher;
use super::messages::{walk_error, Messages, NOTHING_SEARCHED};
use super::paths::Root;
use super::rgignore::RgIgnore;
use super::sink::{FileBlock, JsonSink};
use super::walk::{grep_walker, grep_walker_rg, is_haystack, overrides};
use super::{canonical_workdir, check_arg, exit_code, Budget};

/// How much of a file is read between two looks at the cancellation flag
/// when a whole file is loaded for a slice search.
const CHUNK: u64 = 1 << 20;

/// The marker error of a read stopped by cancellation.
#[derive(Debug)]
struct Cancelled;

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("search cancelled")
    }
}

impl std::error::Error for Cancelled {}

/// The error a reader returns once the call is cancelled.
pub(crate) fn cancelled() -> io::Error {
    io::Error::other(Cancelled)
}

/// Everything one call shares between its threads.
struct Ctx<'a> {
    root: Root,
    matcher: RegexMatcher,
    budget: Budget,
    /// rg memory-maps the one explicit path when it is a regular file
    /// (`hiargs.rs` L235); we read it whole and search the slice instead.
    slice: bool,
    shared: Mutex<Shared>,
    _p: std::marker::PhantomData<&'a ()>,
}

#[derive(Default)]
struct Shared {
    blocks: Vec<FileBlock>,
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
    // `hiargs.rs: Paths::from_low_args` L1094: one path that is not a
    // directory (a missing one included) means one thread.
    let one_file = !root.walk_path().is_dir();
    let ctx = Ctx {
        slice: one_file && root.walk_path().is_file(),
        root,
        matcher,
        budget: Budget::new(req.raw_budget, req.cancel.clone()),
        shared: Mutex::new(Shared::default()),
        _p: std::marker::PhantomData,
    };
    if one_file {
        search_sequential(&ctx, &wc, ov);
    } else {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(12);
        let mut builder = VisitorBuilder { ctx: &ctx };
        let rgi = std::sync::Arc::new(RgIgnore::new(&ctx.root, &wc, ov));
        grep_walker_rg(ctx.root.walk_path(), &wc, rgi.clone(), threads)
            .build_parallel()
            .visit(&mut builder);
        let mut shared = ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
        for (msg, errored) in rgi.take_messages() {
            if errored {
                shared.msgs.error(&msg);
            } else {
                shared.msgs.print(&msg);
            }
        }
    }
    finish(ctx, started)
}

fn finish(ctx: Ctx<'_>, started: Instant) -> Outcome<GrepResults> {
    let Shared {
        mut blocks,
        mut msgs,
        searched,
    } = ctx.shared.into_inner().unwrap_or_else(|e| e.into_inner());
    if ctx.root.is_implicit() && !searched {
        msgs.error(NOTHING_SEARCHED);
    }
    // rg's file order is nondeterministic; path order makes ours stable.
    blocks.sort_by(|a, b| a.path.cmp(&b.path));
    let mut stats = Stats::default();
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
    matcher: RegexMatcher,
    searcher: Searcher,
    scratch: Vec<u8>,
    blocks: Vec<FileBlock>,
    msgs: Messages,
    searched: bool,
}

impl<'a> Worker<'a> {
    fn new(ctx: &'a Ctx<'a>) -> Worker<'a> {
        Worker {
            ctx,
            matcher: ctx.matcher.clone(),
            searcher: matcher::searcher(false),
            scratch: Vec::with_capacity(4096),
            blocks: Vec::new(),
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
        self.searched = true;
        let printed = self.ctx.root.display(dent.path());
        match self.search(&dent, explicit, printed.clone()) {
            Ok(block) => self.blocks.push(block),
            Err(err) => {
                if self.ctx.budget.stopped() {
                    return;
                }
                // `main.rs: search`: `err_message!("{}: {}", path, err)`.
                let shown = String::from_utf8_lossy(&printed);
                self.msgs.error(&format!("{shown}: {err}"));
            }
        }
    }

    fn search(
        &mut self,
        dent: &DirEntry,
        explicit: bool,
        printed: Vec<u8>,
    ) -> io::Result<FileBlock> {
        let path = dent.path();
        self.searcher
            .set_binary_detection(matcher::binary(explicit));
        let mut sink = JsonSink::new(&self.matcher, &self.ctx.budget, &mut self.scratch, printed);
        let cancel = self.ctx.budget.cancel().clone();
        if explicit && self.ctx.slice {
            let data = read_whole(path, &cancel)?;
            self.searcher
                .search_slice(&self.matcher, &data, &mut sink)?;
        } else if explicit && is_fifo(path) {
            let reader = FifoReader::open(path, cancel)?;
            self.searcher
                .search_reader(&self.matcher, reader, &mut sink)?;
        } else {
            let file = File::open(path)?;
            let reader = CancelReader {
                inner: file,
                cancel,
            };
            self.searcher
                .search_reader(&self.matcher, reader, &mut sink)?;
        }
        if self.ctx.budget.stopped() {
            return Err(cancelled());
        }
        Ok(sink.into_block())
    }
}

impl Drop for Worker<'_> {
    fn drop(&mut self) {
        let mut shared = self.ctx.shared.lock().unwrap_or_else(|e| e.into_inner());
        shared.blocks.append(&mut self.blocks);
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

/// Read a whole file in chunks, checking the cancellation flag between them.
fn read_whole(path: &Path, cancel: &crate::cancel::CancelToken) -> io::Result<Vec<u8>> {
    let mut file = File::open(path)?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut data = Vec::with_capacity(len as usize);
    loop {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let n = (&mut file).take(CHUNK).read_to_end(&mut data)?;
        if n == 0 {
            return Ok(data);
        }
    }
}

/// A reader that fails once the call is cancelled: the searcher reads in
/// 64 KiB buffers, so a large file stops promptly.
struct CancelReader<R> {
    inner: R,
    cancel: crate::cancel::CancelToken,
}

impl<R: Read> Read for CancelReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        self.inner.read(buf)
    }
}
