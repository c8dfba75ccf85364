//! `rg --json --regexp=<p> [--glob=<include>] [-- <path>]` (`main.rs: search`
//! and `search_parallel`): the call, one walk whatever the root, and its
//! outcome. The call's state shared between threads and the search of one
//! file are [`worker`](super::worker)'s; how a directory's files are shared
//! out between threads is [`schedule`]'s.

use std::sync::Mutex;
use std::time::Instant;

use crate::event::{Event, Summary};
use crate::fs::FsHints;
use crate::outcome::{by_path_then_line, GrepResults, Outcome, Status};
use crate::request::GrepRequest;
use crate::sync::RecoverPoison;

use super::explicit;
use super::kept::{Keeper, NeverKept};
use super::matcher;
use super::messages::{dir_error, Messages, NOTHING_SEARCHED};
use super::overrides::overrides;
use super::paths::Root;
use super::schedule;
use super::worker::{Collected, GrepCall, Origin, Stream, Worker};
use super::{canonical_workdir, exit_code, nul_launch_failure, Budget, Engine};

/// One walk, whatever the root. rg's parallel walker stats each root
/// following links (`DirEntryRaw::from_path`) and reports an error there
/// with the path; a root that is not a directory means one thread
/// (`hiargs.rs: Paths::from_low_args`), whose sequential walker yields the
/// path itself (never filtered at depth 0, no ignore files read) or
/// walkdir's error for it; a directory, or a symlink to one, is walked.
pub(crate) fn run<F: FsHints>(fs: &F, engine: &Engine, req: &GrepRequest) -> Outcome<GrepResults> {
    run_with(fs, engine, req, None, &NeverKept)
}

/// [`run`] over a filesystem that keeps walks between calls (`kept.rs`).
pub(crate) fn run_kept<F: FsHints, K: Keeper<F>>(
    fs: &F,
    engine: &Engine,
    req: &GrepRequest,
    keeper: &K,
) -> Outcome<GrepResults> {
    run_with(fs, engine, req, None, keeper)
}

/// [`run`], with rg's stdout handed to `out` as it is made, a file's lines
/// when its search ends (in the order the files end, as rg prints them)
/// and the summary last: memory holds the files being searched, not the
/// output. The outcome's results are empty.
pub(crate) fn run_streaming<F: FsHints>(
    fs: &F,
    engine: &Engine,
    req: &GrepRequest,
    out: &Stream<'_>,
) -> Outcome<GrepResults> {
    run_with(fs, engine, req, Some(out), &NeverKept)
}

fn run_with<F: FsHints, K: Keeper<F>>(
    fs: &F,
    engine: &Engine,
    req: &GrepRequest,
    stream: Option<&Stream<'_>>,
    keeper: &K,
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
        engine,
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
        tools: (0..engine.pool().current_num_threads() + 1)
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
        Ok(m) if m.kind.is_dir() => schedule::search_pooled(
            &ctx,
            &real_workdir,
            override_set,
            req.include.as_slice(),
            keeper,
        ),
        Ok(_) => {
            let mut worker = Worker::new(&ctx);
            let path = ctx.root.walk_path().to_path_buf();
            worker.search_haystack(&path, Origin::Explicit, &|| false);
        }
    }
    finish(ctx, started)
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
    blocks.sort_by(|a, b| by_path_then_line((&a.path, 0), (&b.path, 0)));
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
