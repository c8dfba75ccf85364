//! `dsh-search bench`: the same calls through both backends on the same tree,
//! in the same run, alternating, reported as medians and native/rg ratios
//! (BENCHMARKS.md). Speed targets live here, never in tests.

pub(crate) mod corpus;
pub(crate) mod index;
pub(crate) mod measure;
pub(crate) mod report;
pub(crate) mod rgx;
pub(crate) mod transport;
pub(crate) mod workload;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use std::sync::Arc;

use dsh_search::backend::{make_backend, BackendKind, SearchBackend};
use dsh_search::config::Config;
use dsh_search::fs::{FileSystem, FsHints, FsWrite, LocalFs, MemFs, OverlayFs};
use dsh_search::tool::{CallContext, Tools};
use dsh_search::{GlobRequest, GrepRequest, DEFAULT_RAW_OUTPUT_MAX_BYTES};
use workload::{Call, Workload};

/// At which level a workload is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// What a harness pays: the tool call, rendering included.
    Tool,
    /// The backend's outcome (for rg: spawn, read, parse).
    Raw,
}

impl Level {
    /// `tool` or `raw`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Level::Tool => "tool",
            Level::Raw => "raw",
        }
    }
}

/// The filesystem the native engine searches a tree through; rg always
/// searches the tree on the disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Workspace {
    /// The local disk's fast path.
    Disk,
    /// The local disk through the portable `std::fs` path.
    Portable,
    /// A copy of the tree in memory, loaded once before timing.
    Memory,
    /// The tree through an overlay whose upper layer (in memory) is empty.
    Overlay,
}

impl Workspace {
    /// `disk`, `portable`, `mem` or `overlay`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Workspace::Disk => "disk",
            Workspace::Portable => "portable",
            Workspace::Memory => "mem",
            Workspace::Overlay => "overlay",
        }
    }

    /// The workspace named `s`.
    pub(crate) fn parse(s: &str) -> Option<Workspace> {
        [
            Workspace::Disk,
            Workspace::Portable,
            Workspace::Memory,
            Workspace::Overlay,
        ]
        .into_iter()
        .find(|w| w.name() == s)
    }

    /// The native tools over `tree` in this workspace, and what loading it
    /// cost (the in-memory copy: time, and the growth of the process's
    /// resident memory against the bytes of the tree's files).
    pub(crate) fn tools(self, tree: &Path) -> std::io::Result<(Tools, Option<String>)> {
        fn on<F: FsHints + FsWrite>(fs: Arc<F>) -> Tools {
            Tools::on_workspace(Config::default(), fs)
        }
        let disk = Arc::new(LocalFs::new());
        Ok(match self {
            Workspace::Disk => (on(disk), None),
            Workspace::Portable => (on(Arc::new(LocalFs::new().portable())), None),
            Workspace::Memory => {
                let before = resident_bytes();
                let started = Instant::now();
                let mut mem = MemFs::load(tree)?;
                let took = started.elapsed();
                if let Some((path, bytes)) = disk.git_global_excludes(tree) {
                    mem = mem.with_git_global_excludes(path, bytes);
                }
                let grown = resident_bytes().saturating_sub(before);
                let files = file_bytes(tree);
                let note = format!(
                    "loaded in {}; resident memory grew by {:.1} MB for {:.1} MB of files ({:.3}x)",
                    report::human(took),
                    grown as f64 / 1_048_576.0,
                    files as f64 / 1_048_576.0,
                    grown as f64 / files.max(1) as f64
                );
                (on(Arc::new(mem)), Some(note))
            }
            Workspace::Overlay => {
                let fs = OverlayFs::new(disk, tree, Arc::new(MemFs::new()), tree)?;
                (on(Arc::new(fs)), None)
            }
        })
    }
}

/// The process's resident memory (Linux `VmRSS`; 0 elsewhere).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The bytes of the regular files below `tree`.
fn file_bytes(tree: &Path) -> u64 {
    let mut total = 0;
    let mut stack = vec![tree.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(t) if t.is_file() => total += e.metadata().map_or(0, |m| m.len()),
                _ => {}
            }
        }
    }
    total
}

/// One measured row.
#[derive(Clone, Debug)]
pub(crate) struct Row {
    /// The workload's label.
    pub(crate) workload: String,
    /// The tree's label.
    pub(crate) tree: String,
    /// Tool or raw level.
    pub(crate) level: Level,
    /// Median wall time of the native backend.
    pub(crate) native: Duration,
    /// Median wall time of the rg backend.
    pub(crate) rg: Duration,
    /// What the call found (for the reader to sanity-check the work).
    pub(crate) note: String,
}

impl Row {
    /// native / rg.
    pub(crate) fn ratio(&self) -> f64 {
        self.native.as_secs_f64() / self.rg.as_secs_f64().max(1e-9)
    }
}

/// Where a benchmark gets its trees and how long it runs.
#[derive(Clone, Debug)]
pub(crate) struct Options {
    /// The rg binary of the rg side (`None`: the first on `PATH`).
    pub(crate) rg: Option<PathBuf>,
    /// Trees given by path (e.g. the Linux tree), used as they are.
    pub(crate) trees: Vec<PathBuf>,
    /// Generated tiers to include.
    pub(crate) tiers: Vec<corpus::Tier>,
    /// Where generated trees are cached.
    pub(crate) corpus_dir: PathBuf,
    /// Timed iterations per backend and workload.
    pub(crate) iterations: usize,
    /// Only workloads whose label contains one of these (all when empty).
    pub(crate) only: Vec<String>,
    /// Levels to measure.
    pub(crate) levels: Vec<Level>,
    /// The workspaces the native engine searches each tree through.
    pub(crate) workspaces: Vec<Workspace>,
}

/// Run every workload on every tree; rows in order.
pub(crate) fn run(
    opts: &Options,
    progress: &mut dyn FnMut(&str, usize, usize),
) -> std::io::Result<(Vec<Row>, Vec<String>)> {
    let rg = Tools::new(
        Config::default(),
        make_backend(BackendKind::Rg, opts.rg.as_deref()),
    );
    let mut loads = Vec::new();
    let tiny = opts.corpus_dir.join("small");
    corpus::generate(&tiny, corpus::Tier::Small, 1)?;
    let mut trees: Vec<(PathBuf, String, bool)> = opts
        .trees
        .iter()
        .map(|t| (t.clone(), label_of(t), false))
        .collect();
    for tier in &opts.tiers {
        let dir = opts.corpus_dir.join(tier.name());
        corpus::generate(&dir, *tier, 1)?;
        trees.push((dir, format!("generated {}", tier.name()), true));
    }
    let mut jobs = Vec::new();
    let mut tiny_done = false;
    for (tree, label, generated) in &trees {
        for w in workload::standard(tree, &tiny, *generated) {
            // The tiny workspace is the same call whatever the tree: once.
            if w.is_tiny() {
                if tiny_done {
                    continue;
                }
                tiny_done = true;
            }
            if !opts.only.is_empty() && !opts.only.iter().any(|o| w.name.contains(o.as_str())) {
                continue;
            }
            let label = if w.is_tiny() {
                "generated small".to_string()
            } else {
                label.clone()
            };
            for ws in &opts.workspaces {
                for level in &opts.levels {
                    jobs.push((w.clone(), label.clone(), *ws, *level));
                }
            }
        }
    }
    // Grouped by tree and workspace (stable: workloads keep their order),
    // so that each in-memory copy is loaded once.
    jobs.sort_by_key(|(w, _, ws, _)| (w.tree.clone(), *ws));
    let total = jobs.len() * opts.iterations;
    let mut done = 0;
    let mut rows = Vec::new();
    // One workspace at a time: an in-memory copy is loaded once per tree.
    let mut current: Option<(PathBuf, Workspace, Tools)> = None;
    for (w, label, ws, level) in jobs {
        if current
            .as_ref()
            .is_none_or(|(t, cws, _)| t != &w.tree || *cws != ws)
        {
            // The previous copy goes before the next one is loaded.
            drop(current.take());
            let (tools, load) = ws.tools(&w.tree)?;
            if let Some(load) = load {
                loads.push(format!("{label} ({}): {load}", ws.name()));
            }
            current = Some((w.tree.clone(), ws, tools));
        }
        let native = &current.as_ref().expect("the workspace was just built").2;
        let label = if ws == Workspace::Disk {
            label
        } else {
            format!("{label} ({})", ws.name())
        };
        let name = format!("{} / {} / {}", label, w.name, level.name());
        let note = describe(native.backend(), &w);
        let (tn, tr) = measure::alternate(
            opts.iterations,
            || run_once(native, &w, level),
            || run_once(&rg, &w, level),
            || {
                done += 1;
                progress(&name, done, total);
            },
        );
        rows.push(Row {
            workload: w.name.clone(),
            tree: label,
            level,
            native: measure::median(&tn),
            rg: measure::median(&tr),
            note,
        });
    }
    Ok((rows, loads))
}

/// A tree's label in the tables: its directory name.
pub(crate) fn label_of(tree: &Path) -> String {
    tree.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| tree.display().to_string())
}

/// One call at one level; the result is dropped (its cost included).
fn run_once(tools: &Tools, w: &Workload, level: Level) {
    let backend = tools.backend();
    match level {
        Level::Raw => match &w.call {
            Call::Glob { .. } => drop(backend.glob(&glob_request(w))),
            Call::Grep { .. } => drop(backend.grep(&grep_request(w))),
        },
        Level::Tool => {
            std::hint::black_box(tool_call(tools, w));
        }
    }
}

fn glob_request(w: &Workload) -> GlobRequest {
    let Call::Glob { pattern, path } = &w.call else {
        unreachable!("a glob workload")
    };
    let mut r = GlobRequest::new(pattern.clone(), &w.tree);
    r.path = path.clone().map(Into::into);
    r.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
    r
}

fn grep_request(w: &Workload) -> GrepRequest {
    let Call::Grep {
        pattern,
        path,
        include,
    } = &w.call
    else {
        unreachable!("a grep workload")
    };
    let mut r = GrepRequest::new(pattern.clone(), &w.tree);
    r.path = path.clone().map(Into::into);
    r.include = include.clone();
    r.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
    r
}

/// The tool-level call: the dispatch a harness uses (argument checks,
/// failure ladder, rendering), as a nested call so that no spill file is written
/// per iteration.
fn tool_call(tools: &Tools, w: &Workload) -> String {
    let ctx = CallContext::new(&w.tree).nested();
    tools.call(w.call.tool(), &w.call.args(), &ctx).content
}

/// What the call finds, for the table's note column.
fn describe(backend: &dyn SearchBackend, w: &Workload) -> String {
    match &w.call {
        Call::Glob { .. } => {
            let o = backend.glob(&glob_request(w));
            format!("{} files, {:?}", o.results.files.len(), o.status)
        }
        Call::Grep { .. } => {
            let o = backend.grep(&grep_request(w));
            format!("{} matches, {:?}", o.results.matches().count(), o.status)
        }
    }
}

/// How long a native grep inside one large file takes to return after its
/// cancellation, for `samples` cancellations at different points.
/// Samples where the search had already finished before the cancellation
/// are left out (their status is not `Cancelled`).
pub(crate) fn cancel_latency(
    file_dir: &Path,
    size: u64,
    samples: usize,
) -> std::io::Result<Vec<Duration>> {
    let path = file_dir.join("big.txt");
    if std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) != size {
        std::fs::create_dir_all(file_dir)?;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&path)?);
        let line = b"the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n";
        let mut written = 0;
        while written < size {
            let n = line.len().min((size - written) as usize);
            f.write_all(&line[..n])?;
            written += n as u64;
        }
        f.flush()?;
    }
    let native = make_backend(BackendKind::Native, None);
    let mut out = Vec::new();
    for i in 0..samples {
        let mut req = GrepRequest::new("zq_never_matches", file_dir);
        req.path = Some("big.txt".into());
        let cancel = req.cancel.clone();
        let after = Duration::from_millis(100 + 75 * i as u64);
        let (tx, rx) = std::sync::mpsc::channel();
        let b = native.clone();
        let h = std::thread::spawn(move || {
            let o = b.grep(&req);
            tx.send(Instant::now()).ok();
            o.status
        });
        std::thread::sleep(after);
        let cancelled_at = Instant::now();
        cancel.cancel();
        let returned_at = rx.recv().expect("the search thread reports");
        let status = h.join().expect("the search thread ends");
        if status == dsh_search::Status::Cancelled {
            out.push(returned_at.saturating_duration_since(cancelled_at));
        }
    }
    Ok(out)
}

// The corpus's own test lives here, not in `corpus.rs`: the benches
// include that file, and a harness-less bench build drops `#[test]`s.
#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::corpus::{generate, Tier};

    #[test]
    fn small_tier_is_deterministic() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let na = generate(&a.path().join("t"), Tier::Small, 7).unwrap();
        let nb = generate(&b.path().join("t"), Tier::Small, 7).unwrap();
        assert_eq!(na, nb);
        let list = |root: &Path| {
            let mut v: Vec<_> = walkdir::WalkDir::new(root)
                .into_iter()
                .map(|e| e.unwrap().path().strip_prefix(root).unwrap().to_path_buf())
                .collect();
            v.sort();
            v
        };
        assert_eq!(list(&a.path().join("t")), list(&b.path().join("t")));
        // 100 files, plus the .gitignore and the hidden file.
        let files = list(&a.path().join("t"))
            .into_iter()
            .filter(|p| a.path().join("t").join(p).is_file())
            .count();
        assert_eq!(files, 102);
    }
}
