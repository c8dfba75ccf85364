//! A loop over one call, for profilers (`perf record`, `perf stat`,
//! callgrind): `dsh-search bench` measures, this only repeats.
//!
//! ```text
//! cargo bench --bench search -- <glob|grep|tool-glob|tool-grep|raw-glob|raw-grep> PATTERN DIR [N] [native|rg]
//! cargo bench --bench search -- corpus small DIR
//! ```
//!
//! `raw-glob` and `raw-grep` run rg's own argv through
//! [`Invocation`](dsh_search::Invocation) to rg's stdout bytes, the call
//! under the Node binding's `rg()`; `corpus small DIR` writes the 100-file
//! tier there (the Node benchmark's workspace).
//!
//! Prints the median wall time and what the last call found. With
//! `DSH_SEARCH_PAUSE_MS=<ms>` it pauses that long before each call, so the
//! engine's threads are asleep when it starts (what an agent's occasional
//! call meets) rather than still spinning from the previous call.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use dsh_search::backend::rg::rg_from_env;
use dsh_search::backend::{make_backend, BackendKind};
use dsh_search::config::Config;
use dsh_search::tool::{CallContext, Tools};
use dsh_search::{GlobRequest, GrepRequest, DEFAULT_RAW_OUTPUT_MAX_BYTES};

// The benchmark corpus is the binary's (`dsh-search bench` generates the
// same trees): included as a source file rather than made a library item,
// since generating fake source trees is no part of the search API.
#[path = "../cli/src/bench/corpus.rs"]
#[allow(dead_code, reason = "this bench uses part of the corpus module")]
mod corpus;

fn main() {
    // `cargo bench` passes `--bench`; skip flags.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if args.len() < 3 {
        eprintln!(
            "usage: search <glob|grep|tool-glob|tool-grep> PATTERN DIR [N] [native|rg] [INCLUDE]"
        );
        std::process::exit(2);
    }
    let (what, pattern, dir) = (&args[0], &args[1], PathBuf::from(&args[2]));
    // `DSH_SEARCH_THREADS`, read at this edge as the command line reads it.
    dsh_search::set_search_threads_from_env();
    if what == "corpus" {
        let tier = corpus::Tier::parse(pattern).expect("a tier: small, medium or large");
        corpus::generate(&dir, tier, 1).expect("write the corpus");
        return;
    }
    let n: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(10);
    let kind = match args.get(4).map(String::as_str) {
        Some("rg") => BackendKind::Rg,
        _ => BackendKind::Native,
    };
    let include = args.get(5).cloned();
    let rg = rg_from_env();
    let backend = make_backend(kind, rg.as_deref());
    let tools = Tools::new(Config::default(), make_backend(kind, rg.as_deref()));
    let mut times = Vec::new();
    let mut note = String::new();
    let pause = std::env::var("DSH_SEARCH_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis);
    for _ in 0..n {
        if let Some(p) = pause {
            std::thread::sleep(p);
        }
        let start = Instant::now();
        note = match what.as_str() {
            "glob" => {
                let mut r = GlobRequest::new(pattern.clone(), &dir);
                r.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
                let o = backend.glob(&r);
                format!("{} files, {:?}", o.results.files.len(), o.status)
            }
            "grep" => {
                let mut r = GrepRequest::new(pattern.clone(), &dir);
                r.raw_budget = Some(DEFAULT_RAW_OUTPUT_MAX_BYTES);
                r.include = include.clone();
                let o = backend.grep(&r);
                format!("{} matches, {:?}", o.results.matches().count(), o.status)
            }
            "raw-glob" | "raw-grep" => {
                let argv = if what == "raw-glob" {
                    dsh_search::backend::rg::glob_args(&GlobRequest::new(pattern.clone(), &dir))
                } else {
                    let mut r = GrepRequest::new(pattern.clone(), &dir);
                    r.include = include.clone();
                    dsh_search::backend::rg::grep_args(&r)
                };
                // No path here, so every argument is UTF-8.
                let argv: Vec<String> = argv.iter().map(|a| a.to_string_lossy().into()).collect();
                let run = dsh_search::Invocation::parse(&argv, &dir)
                    .expect("the backend's own argv")
                    .run(&*backend)
                    .into_output();
                format!("{} bytes of stdout, {:?}", run.stdout.len(), run.status)
            }
            "tool-glob" | "tool-grep" => {
                let mut a = serde_json::json!({ "pattern": pattern });
                if let Some(i) = &include {
                    a["include"] = i.clone().into();
                }
                let ctx = CallContext::new(&dir).nested();
                let r = tools.call(&what[5..], &a, &ctx);
                format!("{} bytes of text", r.content.len())
            }
            other => {
                eprintln!("unknown call {other}");
                std::process::exit(2);
            }
        };
        times.push(start.elapsed());
    }
    times.sort();
    let med = times
        .get(times.len() / 2)
        .copied()
        .unwrap_or(Duration::ZERO);
    println!("median {med:?} min {:?} over {n}: {note}", times[0]);
}
