//! `dsh-search bench --index`: the live index (docs/index.md) against the
//! scan and rg on the same tree, in this one long-lived process, warm.
//! The index's speed targets (`docs/index.md`) are reported with the
//! figures (met, or by how much not), never asserted: the machine is shared and times vary with its load.
//! With a peer (`--peer-rgx`), ripgrepx runs the same greps round-robin
//! with the other sides (`rgx.rs`).

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use std::sync::Arc;

use dsh_search::backend::{make_backend, BackendKind, SearchBackend};
use dsh_search::tool::{CallContext, Tools};
use dsh_search::{
    Config, GlobRequest, GrepRequest, Index, IndexWatch, LocalSpillStore,
    DEFAULT_RAW_OUTPUT_MAX_BYTES,
};

use super::report::human;
use super::rgx::Rgx;
use super::{corpus, file_bytes, measure, resident_bytes};

/// What a workload's indexed time is compared with, and the bound.
#[derive(Clone, Copy)]
enum Target {
    /// indexed / rg at most this.
    Rg(f64),
    /// indexed / scan at most this.
    Scan(f64),
}

/// One call of the index's workloads.
#[derive(Clone)]
enum Call {
    Glob(&'static str),
    Grep(&'static str),
}

/// The index's speed workloads, with their targets. On a tree other
/// than Linux the common-word patterns may match nothing; the rows are
/// still the same calls on every side.
fn workloads() -> Vec<(String, Call, Target)> {
    vec![
        (
            format!("grep rare literal, no match ({})", corpus::RARE_LITERAL),
            Call::Grep(corpus::RARE_LITERAL),
            Target::Rg(0.01),
        ),
        (
            "grep rare literal, a few matches (`sysctl_sched_latency`)".into(),
            Call::Grep("sysctl_sched_latency"),
            Target::Rg(0.015),
        ),
        (
            r"grep `EXPORT_SYMBOL_GPL\(\w+_init\)`".into(),
            Call::Grep(r"EXPORT_SYMBOL_GPL\(\w+_init\)"),
            Target::Rg(0.05),
        ),
        (
            format!("grep `(?i){}`", corpus::RARE_LITERAL),
            Call::Grep(concat!("(?i)", "zq_unique_sentinel_42")),
            Target::Rg(0.02),
        ),
        ("glob `*`".into(), Call::Glob("*"), Target::Rg(0.05)),
        (
            "glob `**/Makefile`".into(),
            Call::Glob("**/Makefile"),
            Target::Rg(0.02),
        ),
        (
            "grep `EXPORT_SYMBOL_GPL`".into(),
            Call::Grep("EXPORT_SYMBOL_GPL"),
            Target::Scan(0.8),
        ),
        (
            r"grep `\w{30}`".into(),
            Call::Grep(r"\w{30}"),
            Target::Scan(1.05),
        ),
    ]
}

/// The system's load average (1, 5, 15 minutes), as `/proc/loadavg` says.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// Build an index of `tree`, time the workloads through it, the scan, rg
/// and, when `peer_rgx` names an `rgx`, ripgrepx with its index warm, and
/// measure freshness over `writes` writes by another process; the section
/// as Markdown. The index learns of changes as `watch` says (validated at
/// each call with [`IndexWatch::None`]: then the validation's own cost and
/// what a bulk listing would save are rows of their own).
pub(crate) fn run(
    tree: &Path,
    rg: Option<&Path>,
    peer_rgx: Option<&Path>,
    iterations: usize,
    writes: usize,
    watch: IndexWatch,
) -> std::io::Result<String> {
    let rg_exe = rg.map_or_else(|| "rg".into(), Path::to_path_buf);
    let mut md = String::new();
    let load_before = load();
    let corpus_bytes = file_bytes(tree);

    // Build time and memory: the resident memory the index adds to this
    // process (the method of the former `footprint` measurement), and the
    // index's own accounting of its trigram bitmaps.
    eprintln!(
        "dsh-search bench --index: building the index of {}",
        tree.display()
    );
    // Warm, as every timed call is: a scan by another process (so that
    // this one's resident memory is not touched) reads every file the build
    // reads into the page cache, and the build's time is its own work, not
    // the disk's (a cold first read of the Linux tree takes longer than the
    // build itself).
    // No tool timeout: a cold tree of several copies takes longer than 30 s.
    let config =
        std::env::temp_dir().join(format!("dsh-search-bench-warm-{}.json", std::process::id()));
    std::fs::write(&config, r#"{"timeoutMs": 86400000}"#)?;
    let warmed = std::process::Command::new(std::env::current_exe()?)
        .arg("--config")
        .arg(&config)
        .arg("grep")
        .arg("dsh_search_bench_warm_up")
        .arg(tree)
        .stdout(std::process::Stdio::null())
        .status();
    let _ = std::fs::remove_file(&config);
    let warmed = warmed?;
    if !warmed.success() && warmed.code() != Some(1) {
        return Err(std::io::Error::other(format!(
            "warming the page cache with a scan of {} failed: {warmed}",
            tree.display()
        )));
    }
    let rss_before = resident_bytes();
    let started = Instant::now();
    let index = Index::start_watching(tree, watch)?;
    let ready = index.wait_ready(Duration::from_secs(3600));
    let built = started.elapsed();
    let status = index.status();
    if !ready {
        return Err(std::io::Error::other(format!(
            "the index did not become ready: {}",
            status.state
        )));
    }
    let rss_after = resident_bytes();
    let added = rss_after.saturating_sub(rss_before);

    let indexed = index.backend();
    let scan = make_backend(BackendKind::Native, None);
    let rg = make_backend(BackendKind::Rg, rg);
    // The tool level, as a harness calls it: a direct call of a session,
    // over-cap results written to a spill store (one per side), no guard.
    let spill = std::env::temp_dir().join(format!("dsh-search-bench-spill-{}", std::process::id()));
    let stored = |t: Tools| -> std::io::Result<Tools> {
        let store = LocalSpillStore::new(Some(spill.clone()))?;
        Ok(t.with_spill_store(Arc::new(store)))
    };
    let tool_sides = [
        stored(Tools::indexed(Config::default(), index.backend()))?,
        stored(Tools::new(Config::default(), scan.clone()))?,
        stored(Tools::new(Config::default(), rg.clone()))?,
    ];
    let ctx = CallContext::new(tree).session("bench");

    // ripgrepx's daemon, its index built before any call is timed (it
    // watches the tree: stopped before the freshness writes).
    let peer = match peer_rgx {
        Some(exe) => {
            eprintln!("dsh-search bench --index: ripgrepx's index of the tree");
            Some(Rgx::start(exe, tree, Duration::from_secs(3600))?)
        }
        None => None,
    };
    let mut rows = String::from(if peer.is_some() {
        "| workload | indexed (median) | scan (median) | rg (median) | rgx (median) | rgx alone (median) | indexed / scan | indexed / rg | indexed / rgx | indexed / rgx alone | target | met? | answered by, result | rgx's answer against rg's |\n\
         |---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|---|\n"
    } else {
        "| workload | indexed (median) | scan (median) | rg (median) | indexed / scan | indexed / rg | target | met? | answered by, result |\n\
         |---|---:|---:|---:|---:|---:|---|---|---|\n"
    });
    for (name, call, target) in workloads() {
        eprintln!("dsh-search bench --index: {name}");
        let glob = |p: &str| {
            let mut r = GlobRequest::new(p, tree);
            r.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
            r
        };
        let grep = |p: &str| {
            let mut r = GrepRequest::new(p, tree);
            r.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
            r
        };
        let (tool, args) = match &call {
            Call::Glob(p) => ("glob", serde_json::json!({ "pattern": p })),
            Call::Grep(p) => ("grep", serde_json::json!({ "pattern": p })),
        };
        let once = |t: &Tools| drop(std::hint::black_box(t.call(tool, &args, &ctx)));
        let (note, want) = match &call {
            Call::Glob(p) => {
                let (o, a) = indexed.glob_answered(&glob(p));
                let note = format!("{a}, {} files, {:?}", o.results.files.len(), o.status);
                (note, o.status)
            }
            Call::Grep(p) => {
                let (o, a) = indexed.grep_answered(&grep(p));
                let note = format!(
                    "{a}, {} matches, {:?}",
                    o.results.matches().count(),
                    o.status
                );
                (note, o.status)
            }
        };
        let sides: [&dyn SearchBackend; 3] = [&indexed, scan.as_ref(), rg.as_ref()];
        // The sides must end alike before they are timed: an rg that cannot
        // start (not installed, not where `--rg` says) fails in microseconds
        // and would pass for a fast one.
        let status = |b: &dyn SearchBackend| match &call {
            Call::Glob(p) => b.glob(&glob(p)).status,
            Call::Grep(p) => b.grep(&grep(p)).status,
        };
        for (side, b) in ["the scan", "rg"].into_iter().zip(&sides[1..]) {
            let got = status(*b);
            if got != want {
                return Err(std::io::Error::other(format!(
                    "{name}: {side} ended {got:?}, the index {want:?}; the sides must answer alike"
                )));
            }
        }
        let once = &once;
        let mut timed: Vec<Box<dyn Fn() + '_>> = Vec::new();
        for t in &tool_sides {
            timed.push(Box::new(move || once(t)));
        }
        // ripgrepx answers greps only: its `--find` matches a name or path
        // substring, a page at a time, which is not a glob.
        let peer_grep = match (&peer, &call) {
            (Some(p), Call::Grep(pattern)) => Some((p, *pattern)),
            _ => None,
        };
        if let Some((p, pattern)) = peer_grep {
            timed.push(Box::new(move || {
                drop(std::hint::black_box(p.grep_raw(pattern)));
            }));
        }
        let refs: Vec<&dyn Fn()> = timed.iter().map(|f| f.as_ref()).collect();
        let t = round_robin::<dyn Fn() + '_>(iterations, &refs, &|f| f());
        let (ti, ts, tr) = (t[0], t[1], t[2]);
        let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-9);
        let (vs_scan, vs_rg) = (ratio(ti, ts), ratio(ti, tr));
        let (label, got, bound) = match target {
            Target::Rg(b) => (format!("≤ {b}× rg"), vs_rg, b),
            Target::Scan(b) => (format!("≤ {b}× scan"), vs_scan, b),
        };
        let (peer_time, peer_ratio, peer_note) = match (&peer, peer_grep) {
            (None, _) => (String::new(), String::new(), String::new()),
            (Some(_), None) => (
                " n/a | n/a |".into(),
                " n/a | n/a |".into(),
                " n/a: rgx has no glob (`rgx --find` matches a name or path substring, a page at a time) |".into(),
            ),
            (Some(p), Some((_, pattern))) => {
                let alone = alone(p, pattern, iterations);
                let (time, vs) = match alone {
                    Some(a) => (human(a), format!("{:.3}", ratio(ti, a))),
                    None => ("did not settle".into(), "n/a".into()),
                };
                (
                    format!(" {} | {time} |", human(t[3])),
                    format!(" {:.3} | {vs} |", ratio(ti, t[3])),
                    format!(" {} |", against_rg(p, &rg_exe, tree, pattern)?),
                )
            }
        };
        let _ = writeln!(
            rows,
            "| {name} | {} | {} | {} |{peer_time} {vs_scan:.3} | {vs_rg:.3} |{peer_ratio} {label} | {} | {note} |{peer_note}",
            human(ti),
            human(ts),
            human(tr),
            verdict(got, bound),
        );
    }
    let peer_build = peer.as_ref().map(|p| (p.built, p.status.clone()));
    drop(peer);
    let validation = match watch {
        IndexWatch::None => Some(validation(tree, &index, rg.as_ref(), iterations)?),
        IndexWatch::Os => None,
    };

    eprintln!("dsh-search bench --index: freshness, {writes} writes");
    let fresh = freshness(tree, &indexed, writes)?;
    let load_after = load();

    let mb = |b: u64| format!("{:.1} MB", b as f64 / 1_048_576.0);
    let _ = writeln!(
        md,
        "\n## Live index: {}{}\n\n- load average (1, 5, 15 min): {load_before} before, {load_after} after\n- medians of {iterations} runs per side, round-robin (the order rotated each round), after one warm-up each; tool level (a direct call of a session: rendering, the value and the spill of an over-cap result included, no guard); one process, the index built once\n",
        tree.display(),
        match watch {
            IndexWatch::Os => "",
            IndexWatch::None => " (`--index-watch none`: validated at each call)",
        }
    );
    md.push_str(&rows);
    let _ = writeln!(md);
    let _ = writeln!(
        md,
        "| measure | value | target | met? |\n|---|---:|---|---|"
    );
    let _ = writeln!(
        md,
        "| index build ({} dirs, {} entries, {} text files) | {} | ≤ 10 s | {} |",
        status.dirs,
        status.entries,
        status.files,
        human(built),
        verdict(built.as_secs_f64(), 10.0)
    );
    let share = added as f64 / corpus_bytes.max(1) as f64;
    let _ = writeln!(
        md,
        "| resident memory the index added / corpus bytes ({} / {}) | {:.1}% | ≤ 20% | {} |",
        mb(added),
        mb(corpus_bytes),
        100.0 * share,
        verdict(share, 0.2)
    );
    let _ = writeln!(
        md,
        "| the process's resident memory with the index built / corpus bytes ({} / {}) | {:.1}% | | |",
        mb(rss_after),
        mb(corpus_bytes),
        100.0 * rss_after as f64 / corpus_bytes.max(1) as f64
    );
    let _ = writeln!(
        md,
        "| trigram bitmaps (the index's accounting) / text bytes ({} / {}) | {:.1}% | | |",
        mb(status.gram_bytes as u64),
        mb(status.file_bytes),
        100.0 * status.gram_bytes as f64 / status.file_bytes.max(1) as f64
    );
    let _ = writeln!(
        md,
        "| freshness: writes by another process seen by the next call | {}/{} | all | {} |",
        fresh.seen,
        fresh.samples.len(),
        if fresh.seen == fresh.samples.len() {
            "met"
        } else {
            "not met"
        }
    );
    let p99 = percentile(&fresh.samples, 0.99);
    let _ = writeln!(
        md,
        "| freshness: writer's exit to the next call's answer, p99 (median {}) | {} | ≤ 50 ms | {} |",
        human(measure::median(&fresh.samples)),
        human(p99),
        verdict(p99.as_secs_f64(), 0.05)
    );
    if let Some(v) = &validation {
        let _ = writeln!(
            md,
            "| validation alone: the unchanged tree's metadata walked and compared (`Index::settle`; rg's rare-literal grep {}) | {} ({:.3} of rg) | | |",
            human(v.rg),
            human(v.settle),
            v.settle.as_secs_f64() / v.rg.as_secs_f64().max(1e-9)
        );
        let _ = writeln!(
            md,
            "| one thread's walk: `find -printf ''` (listing only) / `find -printf '%s %T@ %C@ %i'` (a stat per entry) | {} / {} | | |",
            human(v.find_list),
            human(v.find_stat)
        );
        let share = 1.0 - v.find_list.as_secs_f64() / v.find_stat.as_secs_f64().max(1e-9);
        let _ = writeln!(
            md,
            "| what a bulk listing (Windows' directory listings, macOS `getattrlistbulk`) would save: the stats' share of the walk, and the validation without them (estimated) | {:.0}%, {} | | |",
            100.0 * share,
            human(v.settle.mul_f64(1.0 - share))
        );
    }
    drop(indexed);
    drop(tool_sides);
    drop(index);
    let _ = std::fs::remove_dir_all(&spill);
    eprintln!("dsh-search bench --index: restart from a saved index");
    let restart = restart(tree, watch)?;
    let _ = writeln!(
        md,
        "| restart from the saved index ({} files read again, saved file {}) | {} | ≤ 1 s | {} |",
        restart.reads,
        mb(restart.file_bytes),
        human(restart.ready),
        verdict(restart.ready.as_secs_f64(), 1.0)
    );
    if let Some((built, status)) = peer_build {
        let _ = writeln!(
            md,
            "| ripgrepx: `rgx --server start` to its status `ready` (its status: {status}) | {} | | |",
            human(built)
        );
    }
    Ok(md)
}

/// What a restart from a saved index took.
struct Restart {
    /// From opening the workspace to its index answering.
    ready: Duration,
    /// Files the restart read (none changed: 0).
    reads: u64,
    /// The saved file's size.
    file_bytes: u64,
}

/// Index `tree` saving into a store of its own, wait for the save, close
/// it; then open it again and time until the index is live.
fn restart(tree: &Path, watch: IndexWatch) -> std::io::Result<Restart> {
    let store = std::env::temp_dir().join(format!("dsh-search-bench-store-{}", std::process::id()));
    let open = || -> std::io::Result<(dsh_search::Workspace, Duration)> {
        let started = Instant::now();
        let ws = dsh_search::WorkspaceOptions::new(dsh_search::FsSpec::Local)
            .root(tree)
            .index(true)
            .index_watch(watch)
            .index_store(Some(store.clone()))
            .open()
            .map_err(std::io::Error::other)?;
        let index = ws.index().expect("asked for").clone();
        if !index.wait_ready(Duration::from_secs(3600)) {
            return Err(std::io::Error::other(index.status().state));
        }
        Ok((ws, started.elapsed()))
    };
    let result = (|| {
        let (first, _) = open()?;
        // The save follows the build: its file is complete once renamed.
        let file = loop {
            let found = std::fs::read_dir(&store).ok().and_then(|d| {
                d.flatten().map(|e| e.path()).find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("index-"))
                })
            });
            if let Some(f) = found {
                break f;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        drop(first);
        let (again, ready) = open()?;
        let status = again.index().expect("asked for").status();
        if status.saved != "loaded" {
            return Err(std::io::Error::other(format!(
                "not restarted: {}",
                status.saved
            )));
        }
        Ok(Restart {
            ready,
            reads: status.build_reads,
            file_bytes: std::fs::metadata(&file)?.len(),
        })
    })();
    let _ = std::fs::remove_dir_all(&store);
    result
}

/// ripgrepx's median over `iterations` calls of `pattern` back to back
/// (after one more), once its daemon is idle: what it takes when nothing
/// else reads the tree, which the round-robin does not give it (rg's and
/// the scan's reads of every file set it re-checking them). `None` when it
/// did not go idle within five minutes (after a row's round-robin on the Linux
/// tree it stayed busy for more than a minute).
fn alone(peer: &Rgx, pattern: &str, iterations: usize) -> Option<Duration> {
    if !peer.settle(Duration::from_secs(300)) {
        return None;
    }
    drop(peer.grep_raw(pattern));
    let samples: Vec<Duration> = (0..iterations)
        .map(|_| {
            let t = Instant::now();
            drop(std::hint::black_box(peer.grep_raw(pattern)));
            t.elapsed()
        })
        .collect();
    Some(measure::median(&samples))
}

/// ripgrepx's answer to a grep of `pattern` against rg's whole answer (the
/// tool's argv with `--count` for `--json`: no raw budget, so a row the
/// other sides stop at the budget is compared whole), by matching lines
/// and files.
fn against_rg(peer: &Rgx, rg: &Path, tree: &Path, pattern: &str) -> std::io::Result<String> {
    let got = peer.grep(pattern)?;
    let out = Command::new(rg)
        .current_dir(tree)
        .arg("--no-config")
        .arg("--count")
        .arg(format!("--regexp={pattern}"))
        .stdin(std::process::Stdio::null())
        .output()?;
    if out.status.code() == Some(2) || out.status.code().is_none() {
        return Err(std::io::Error::other(format!(
            "{} --count {pattern}: {}: {}",
            rg.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    // `path:count` per file with a match.
    let (mut lines, mut files) = (0, 0);
    for l in out.stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let n = l.rsplit(|&b| b == b':').next().unwrap_or_default();
        lines += std::str::from_utf8(n)
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0);
        files += 1;
    }
    let code = |c: Option<i32>| c.map_or_else(|| "a signal".into(), |c| format!("exit {c}"));
    Ok(
        if (got.lines, got.files, got.code) == (lines, files, out.status.code()) {
            format!("same as rg: {lines} lines in {files} files")
        } else {
            format!(
                "**differs**: rgx {} lines in {} files ({}), rg {lines} lines in {files} files ({})",
                got.lines,
                got.files,
                code(got.code),
                code(out.status.code())
            )
        },
    )
}

/// `met`, or how far from the bound (`got / bound`).
fn verdict(got: f64, bound: f64) -> String {
    if got <= bound {
        "met".into()
    } else {
        format!("not met ({:.1}× the target)", got / bound)
    }
}

/// The `q` quantile of `samples` (nearest rank).
fn percentile(samples: &[Duration], q: f64) -> Duration {
    let mut v = samples.to_vec();
    v.sort();
    if v.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len());
    v[rank - 1]
}

/// Run `once` on every side `iterations` times (after one warm-up each),
/// rotating which side goes first each round so that none always sees the
/// warmest caches; the medians, in the sides' order.
/// The validation's own cost on an unchanged tree, and the walks it is
/// measured against, each a median of `iterations` runs round-robin.
struct Validation {
    /// [`Index::settle`]: the tree validated, nothing answered.
    settle: Duration,
    /// rg's grep of the rare literal, in the same rounds.
    rg: Duration,
    /// `find TREE -printf ''`: one thread listing every directory.
    find_list: Duration,
    /// `find TREE -printf '%s %T@ %C@ %i\n'`: the same, and a stat of every
    /// entry (what Linux has instead of a bulk call).
    find_stat: Duration,
}

fn validation(
    tree: &Path,
    index: &Index,
    rg: &dyn SearchBackend,
    iterations: usize,
) -> std::io::Result<Validation> {
    eprintln!("dsh-search bench --index: validation alone, and find's walks");
    let find = |format: &str| {
        let out = Command::new("find")
            .arg(tree)
            .arg("-printf")
            .arg(format)
            .stdout(std::process::Stdio::null())
            .status();
        assert!(out.is_ok_and(|s| s.success()), "find failed");
    };
    let mut req = GrepRequest::new(corpus::RARE_LITERAL, tree);
    req.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
    let sides: [&dyn Fn(); 4] = [
        &|| assert!(index.settle(), "the index could not validate its mirror"),
        &|| drop(std::hint::black_box(rg.grep(&req))),
        &|| find(""),
        &|| find("%s %T@ %C@ %i\n"),
    ];
    let t = round_robin::<dyn Fn()>(iterations, &sides, &|f| f());
    Ok(Validation {
        settle: t[0],
        rg: t[1],
        find_list: t[2],
        find_stat: t[3],
    })
}

fn round_robin<T: ?Sized>(iterations: usize, sides: &[&T], once: &dyn Fn(&T)) -> Vec<Duration> {
    for s in sides {
        once(*s);
    }
    let mut samples = vec![Vec::new(); sides.len()];
    for round in 0..iterations {
        for k in 0..sides.len() {
            let i = (round + k) % sides.len();
            let t = Instant::now();
            once(sides[i]);
            samples[i].push(t.elapsed());
        }
    }
    samples.iter().map(|s| measure::median(s)).collect()
}

struct Fresh {
    /// Writes the very next call found.
    seen: usize,
    /// From the writer's exit to that call's answer.
    samples: Vec<Duration>,
}

/// `writes` times: another process (`sh`) writes a new token into a file of
/// a scratch directory inside the tree and exits; then one grep of that
/// token, scoped to the scratch directory, through the index. The call
/// drains the watcher's queue before answering (docs/index.md, "How it stays
/// current"), so its time is the freshness latency. The scratch directory is
/// removed at the end.
fn freshness(tree: &Path, indexed: &dyn SearchBackend, writes: usize) -> std::io::Result<Fresh> {
    let scratch = "zz-dsh-search-bench-freshness";
    let dir = tree.join(scratch);
    std::fs::create_dir_all(&dir)?;
    let mut fresh = Fresh {
        seen: 0,
        samples: Vec::new(),
    };
    let result = (|| {
        for i in 0..writes {
            let token = format!("zq_fresh_token_{i}_{}", std::process::id());
            let file = dir.join(format!("f{}.txt", i % 10));
            let status = Command::new("sh")
                .arg("-c")
                .arg("printf '%s\\n' \"$1\" > \"$2\"")
                .arg("sh")
                .arg(&token)
                .arg(&file)
                .status()?;
            let exited = Instant::now();
            if !status.success() {
                return Err(std::io::Error::other(format!("sh failed: {status}")));
            }
            let mut req = GrepRequest::new(token.as_str(), tree);
            req.path = Some(scratch.into());
            let o = indexed.grep(&req);
            fresh.samples.push(exited.elapsed());
            if o.results.matches().count() == 1 {
                fresh.seen += 1;
            }
        }
        Ok(())
    })();
    std::fs::remove_dir_all(&dir)?;
    result.map(|()| fresh)
}
