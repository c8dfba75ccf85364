//! `dsh-search bench`: both backends side by side on the same tree.

use std::io::Write;
use std::path::PathBuf;
use std::process::Command;

use clap::Args;
use dsh_search::backend::rg::rg_from_env;

use crate::bench::{self, corpus::Tier, measure, report, Level};
use crate::setup::{fail, Common};

/// `dsh-search bench` options.
#[derive(Debug, Args)]
pub(crate) struct BenchArgs {
    /// A tree to benchmark as it is (repeatable), e.g. the Linux tree.
    #[arg(long = "tree", value_name = "DIR")]
    pub(crate) trees: Vec<PathBuf>,
    /// A generated tree: small (100 files), medium (10,000), large
    /// (100,000, about 1 GB). Repeatable. Default: medium, when no --tree.
    #[arg(long = "tier", value_name = "TIER")]
    pub(crate) tiers: Vec<String>,
    /// Where generated trees are cached.
    #[arg(long, value_name = "DIR")]
    pub(crate) corpus_dir: Option<PathBuf>,
    /// Timed runs per backend and workload (after one warm-up each).
    #[arg(long, default_value_t = 5)]
    pub(crate) iterations: usize,
    /// Only workloads whose label contains this text (repeatable: any of
    /// them).
    #[arg(long)]
    pub(crate) only: Vec<String>,
    /// tool, raw or both.
    #[arg(long, default_value = "both")]
    pub(crate) level: String,
    /// Also measure peak memory of each backend on the grep workloads.
    #[arg(long)]
    pub(crate) memory: bool,
    /// Also measure how fast a native grep inside one file of this many MB
    /// returns after its cancellation (e.g. 1024).
    #[arg(long, value_name = "MB")]
    pub(crate) cancel_file_mb: Option<u64>,
    /// The filesystem the native engine searches each tree through: disk,
    /// portable, mem (an in-memory copy) or overlay (an empty upper layer).
    /// Repeatable. Default: disk. rg always searches the disk.
    #[arg(long = "on", value_name = "WORKSPACE")]
    pub(crate) on: Vec<String>,
    /// Measure the servers instead: one grep on the 100-file workspace in
    /// process, through `dsh-search serve`, through `dsh-search mcp` and
    /// as a spawned `rg`, round-robin.
    #[arg(long)]
    pub(crate) transports: bool,
    /// Calls per side for --transports.
    #[arg(long, default_value_t = 300, value_name = "N")]
    pub(crate) transport_calls: usize,
    /// Measure the live index instead (docs/index.md): on each --tree (or
    /// the medium tier), its build time and memory, the index's workloads
    /// through the index, the scan and rg, and freshness. Writes index.md
    /// with --out.
    #[arg(long)]
    pub(crate) index: bool,
    /// With --index, also time ripgrepx (the `ripgrepx` package's `rgx`,
    /// at this path) on the same tree and greps: its daemon started with
    /// a state directory of its own, its index built before timing, each
    /// call `rgx -- PATTERN` round-robin with the other sides; its answer
    /// compared with rg's. Globs are n/a for it.
    #[arg(long, value_name = "RGX", requires = "index")]
    pub(crate) peer_rgx: Option<PathBuf>,
    /// Writes by another process for --index's freshness figure.
    #[arg(long, default_value_t = 100, value_name = "N")]
    pub(crate) index_writes: usize,
    /// Write bench.md and bench.svg into this directory.
    #[arg(long, value_name = "DIR")]
    pub(crate) out: Option<PathBuf>,
}

/// `dsh-search bench`.
pub(crate) fn run(common: &Common, args: &BenchArgs) -> u8 {
    let run = if args.transports {
        transports(common, args)
    } else if args.index {
        index(
            args,
            common.index_watch.map_or_else(Default::default, Into::into),
        )
    } else {
        run_inner(args)
    };
    match run {
        Ok(()) => 0,
        Err(e) => fail(e),
    }
}

fn run_inner(args: &BenchArgs) -> Result<(), String> {
    let mut tiers = Vec::new();
    for t in &args.tiers {
        tiers.push(
            Tier::parse(t)
                .ok_or_else(|| format!("unknown tier {t:?}: use small, medium or large"))?,
        );
    }
    if tiers.is_empty() && args.trees.is_empty() {
        tiers.push(Tier::Medium);
    }
    let levels = match args.level.as_str() {
        "tool" => vec![Level::Tool],
        "raw" => vec![Level::Raw],
        "both" => vec![Level::Tool, Level::Raw],
        other => return Err(format!("unknown level {other:?}: use tool, raw or both")),
    };
    let mut workspaces = Vec::new();
    for w in &args.on {
        workspaces.push(bench::Workspace::parse(w).ok_or_else(|| {
            format!("unknown workspace {w:?}: use disk, portable, mem or overlay")
        })?);
    }
    if workspaces.is_empty() {
        workspaces.push(bench::Workspace::Disk);
    }
    let corpus_dir = args.corpus_dir.clone().unwrap_or_else(default_corpus_dir);
    let opts = bench::Options {
        rg: rg_from_env(),
        trees: args.trees.clone(),
        tiers,
        corpus_dir: corpus_dir.clone(),
        iterations: args.iterations.max(1),
        only: args.only.clone(),
        levels,
        workspaces,
    };
    let mut md = String::new();
    md.push_str(&environment());
    let (rows, loads) =
        bench::run(&opts, &mut progress).map_err(|e| format!("benchmark failed: {e}"))?;
    eprintln!();
    md.push_str("\n## Time\n\n");
    md.push_str(&report::table(&rows));
    if !loads.is_empty() {
        md.push_str("\n## In-memory copies\n\n");
        for l in &loads {
            md.push_str(&format!("- {l}\n"));
        }
    }
    if args.memory {
        md.push_str("\n## Peak memory\n\n");
        md.push_str(&memory_table(&opts)?);
    }
    if let Some(mb) = args.cancel_file_mb {
        let lat = bench::cancel_latency(&corpus_dir.join("cancel"), mb << 20, 5)
            .map_err(|e| format!("cancel latency failed: {e}"))?;
        md.push_str(&format!(
            "\n## Cancellation\n\nnative grep inside one {mb} MB file, time from cancel to return: median {}, max {} ({} samples)\n",
            report::human(measure::median(&lat)),
            report::human(lat.iter().max().copied().unwrap_or_default()),
            lat.len()
        ));
    }
    print!("{md}");
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("bench.md"), &md).map_err(|e| e.to_string())?;
        let tool_rows: Vec<_> = rows
            .iter()
            .filter(|r| r.level == Level::Tool)
            .cloned()
            .collect();
        let chart = if tool_rows.is_empty() {
            &rows
        } else {
            &tool_rows
        };
        std::fs::write(
            dir.join("bench.svg"),
            report::svg(chart, "dsh-search: native / rg (tool level)"),
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `dsh-search bench --transports`.
fn transports(common: &Common, args: &BenchArgs) -> Result<(), String> {
    let corpus_dir = args.corpus_dir.clone().unwrap_or_else(default_corpus_dir);
    let tree = corpus_dir.join("small");
    bench::corpus::generate(&tree, bench::corpus::Tier::Small, 1).map_err(|e| e.to_string())?;
    let tools = crate::server::tools_for(common)?;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let rg = rg_from_env().unwrap_or_else(|| "rg".into());
    let pattern = bench::corpus::IDENTIFIER;
    eprintln!(
        "dsh-search bench: {} calls per side, grep {pattern} on {}",
        args.transport_calls,
        tree.display()
    );
    let sides = bench::transport::run(
        &tools,
        &exe,
        &rg,
        &tree,
        pattern,
        args.transport_calls.max(1),
    )
    .map_err(|e| format!("transport benchmark failed: {e}"))?;
    let mut md = environment();
    md.push_str(&format!(
        "
## Transports: grep {pattern} on the 100-file workspace

"
    ));
    md.push_str(&bench::transport::table(&sides));
    print!("{md}");
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("transports.md"), &md).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// `dsh-search bench --index`.
fn index(args: &BenchArgs, watch: dsh_search::IndexWatch) -> Result<(), String> {
    let mut trees = args.trees.clone();
    if trees.is_empty() {
        let corpus_dir = args.corpus_dir.clone().unwrap_or_else(default_corpus_dir);
        let dir = corpus_dir.join(Tier::Medium.name());
        bench::corpus::generate(&dir, Tier::Medium, 1).map_err(|e| e.to_string())?;
        trees.push(dir);
    }
    let rg = rg_from_env();
    let mut md = environment();
    for tree in &trees {
        md.push_str(
            &bench::index::run(
                tree,
                rg.as_deref(),
                args.peer_rgx.as_deref(),
                args.iterations.max(1),
                args.index_writes.max(1),
                watch,
            )
            .map_err(|e| format!("index benchmark failed: {e}"))?,
        );
    }
    print!("{md}");
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        std::fs::write(dir.join("index.md"), &md).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn default_corpus_dir() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("dsh-search").join("bench")
}

fn progress(name: &str, done: usize, total: usize) {
    let width = 30;
    let filled = done * width / total.max(1);
    let mut err = std::io::stderr().lock();
    let _ = write!(
        err,
        "\r\x1b[2K[{}{}] {done}/{total} {name}",
        "#".repeat(filled),
        " ".repeat(width - filled)
    );
    let _ = err.flush();
}

fn environment() -> String {
    let rg = Command::new(rg_from_env().unwrap_or_else(|| "rg".into()))
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.lines().next().map(str::to_owned))
        .unwrap_or_else(|| "rg not found".into());
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .map(|l| l.split(':').nth(1).unwrap_or("").trim().to_owned())
        })
        .unwrap_or_default();
    let cpus = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    format!(
        "# dsh-search bench\n\n- machine: {cpus} CPUs, {cpu}\n- {rg}\n- dsh-search {}\n",
        env!("CARGO_PKG_VERSION")
    )
}

fn memory_table(opts: &bench::Options) -> Result<String, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut out = String::from("| tree | workload | native peak RSS | rg backend: dsh-search + rg peak RSS |\n|---|---|---:|---:|\n");
    // Labelled as in the time table.
    let mut trees: Vec<(PathBuf, String, bool)> = opts
        .trees
        .iter()
        .map(|t| (t.clone(), bench::label_of(t), false))
        .collect();
    for t in &opts.tiers {
        trees.push((
            opts.corpus_dir.join(t.name()),
            format!("generated {}", t.name()),
            true,
        ));
    }
    let mut tiny_done = false;
    for (tree, label, generated) in trees {
        for w in bench::workload::standard(&tree, &opts.corpus_dir.join("small"), generated) {
            let bench::workload::Call::Grep {
                pattern, include, ..
            } = &w.call
            else {
                continue;
            };
            let label = if w.is_tiny() {
                if tiny_done {
                    continue;
                }
                tiny_done = true;
                "generated small".to_string()
            } else {
                label.clone()
            };
            let mb = |b: u64| format!("{:.1} MB", b as f64 / 1_048_576.0);
            let cmd = |backend: &str| {
                let mut c = Command::new(&exe);
                c.arg("grep")
                    .arg("--backend")
                    .arg(backend)
                    .arg("--cwd")
                    .arg(&w.tree);
                if let Some(i) = include {
                    c.arg("--include").arg(i);
                }
                c.arg("--").arg(pattern);
                c
            };
            let (n, _) = measure::peak_rss(&mut cmd("native")).map_err(|e| e.to_string())?;
            let (us, rg) = measure::peak_rss(&mut cmd("rg")).map_err(|e| e.to_string())?;
            out.push_str(&format!(
                "| {label} | {} | {} | {} + {} |\n",
                w.name,
                mb(n),
                mb(us),
                mb(rg)
            ));
        }
    }
    Ok(out)
}
