//! The native engine called from many threads at once (`contract.md` §2:
//! "safe to call from many threads at once"): every call must give the
//! answer rg gives for it alone, whatever the other threads are doing with
//! the engine's shared thread pool; and a call made from a worker of another
//! rayon pool must neither deadlock nor differ.

use std::sync::Arc;

use dsh_search::NativeBackend;

use crate::util::rg::{self, Call, Raw};
use crate::util::tree::{file, mtime, Spec, Tree};

/// A tree of `seed`'s own shape: enough files per directory that a grep
/// fills several batches, names and contents that differ from tree to tree.
fn tree_specs(seed: usize) -> Vec<Spec> {
    let mut specs = Vec::new();
    for d in 0..(3 + seed % 4) {
        for f in 0..(20 + seed * 3) {
            let p = format!("d{d}/s{seed}/f{f}.txt");
            let body = match (f + d + seed) % 4 {
                0 => format!("needle {seed} {d} {f}\nhay\n"),
                1 => format!("hay {f}\nneedle{seed}x\nneedle again\n"),
                2 => "hay only\n".to_string(),
                _ => format!("{}\n", "n".repeat(f + seed)),
            };
            specs.push(file(&p, body));
            specs.push(mtime(&p, ((f * 7 + d) % 3) as u64));
        }
    }
    specs.push(file(".gitignore", "*.log\n"));
    specs.push(file("top.log", "needle in an ignored file\n"));
    specs.push(file(format!("only{seed}.rs"), "fn needle() {}\n"));
    specs
}

fn calls(seed: usize) -> Vec<Call> {
    let grep = |pattern: &str, path: Option<&str>, include: Option<&str>| Call::Grep {
        pattern: pattern.into(),
        path: path.map(Into::into),
        include: include.map(Into::into),
    };
    let glob = |pattern: &str, path: Option<&str>| Call::Glob {
        pattern: pattern.into(),
        path: path.map(Into::into),
    };
    vec![
        grep("needle", None, None),
        grep(&format!("needle{seed}"), Some("."), None),
        grep("n+$", Some("d1"), Some("*.txt")),
        grep("needle", None, Some("*.none")),
        glob("*", None),
        glob("*.txt", Some("d0")),
    ]
}

fn run(call: &Call, root: &std::path::Path) -> Raw {
    rg::canonical(call, &rg::run_backend(&rg::native(), call, root))
}

/// A tree with its calls and rg's answer to each (run alone).
type Expected = (Tree, Vec<(Call, Raw)>);

/// Trees, their calls and rg's answers (each call run alone).
fn expected(n: usize) -> Option<Vec<Expected>> {
    let env = rg::env()?;
    let mut all = Vec::new();
    for seed in 0..n {
        let tree = Tree::build(&tree_specs(seed));
        let mut cases = Vec::new();
        for call in calls(seed) {
            let want = rg::canonical(&call, &rg::run_rg(env, &call, tree.root()));
            // The engine alone first: a difference here is not a
            // concurrency bug and is reported as such.
            if let Some(d) = rg::diff(&call, &want, &run(&call, tree.root())) {
                panic!("seed {seed}: the native engine alone differs from rg:\n{d}");
            }
            cases.push((call, want));
        }
        all.push((tree, cases));
    }
    Some(all)
}

/// 8 threads × 50 calls over 8 different trees, interleaved so that calls on
/// different workdirs, with different patterns, share the pool at the same
/// time.
#[test]
fn many_threads_many_workdirs() {
    let Some(all) = expected(8) else { return };
    let all = Arc::new(all);
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let all = Arc::clone(&all);
            std::thread::spawn(move || {
                let mut failures = Vec::new();
                for i in 0..50 {
                    let (tree, cases) = &all[(t + i) % all.len()];
                    let (call, want) = &cases[(t * 7 + i) % cases.len()];
                    let got = run(call, tree.root());
                    if let Some(d) = rg::diff(call, want, &got) {
                        failures.push(format!("thread {t} call {i}:\n{d}"));
                    }
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = threads
        .into_iter()
        .flat_map(|h| h.join().expect("no call panics"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Calls made from the workers of another rayon pool (an embedding program's
/// `par_iter`), nested inside each other: no deadlock, same answers.
#[test]
fn calls_from_other_rayon_pools() {
    use rayon::prelude::*;
    let Some(all) = expected(3) else { return };
    for threads in [1, 3] {
        let outer = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let failures: Vec<String> = outer.install(|| {
            all.par_iter()
                .flat_map(|(tree, cases)| {
                    cases.par_iter().filter_map(move |(call, want)| {
                        // A call inside a call's worker: the inner one runs
                        // while the outer one is in progress on this thread.
                        let inner = rayon::join(
                            || run(call, tree.root()),
                            || run(&cases[0].0, tree.root()),
                        );
                        let mut d = rg::diff(call, want, &inner.0);
                        if let Some(d0) = rg::diff(&cases[0].0, &cases[0].1, &inner.1) {
                            d = Some(format!("{}{d0}", d.unwrap_or_default()));
                        }
                        d
                    })
                })
                .collect()
        });
        assert!(
            failures.is_empty(),
            "{threads} threads: {}",
            failures.join("\n")
        );
    }
}

/// The raw budget (`contract.md` §3: "the size of the stdout rg would
/// print") crossed in the middle of a parallel walk, on many threads at
/// once: the native engine says `OverBudget` exactly when the rg backend
/// does; a call cancelled before it starts says `Cancelled`.
#[test]
fn budget_and_cancel_on_many_threads() {
    use dsh_search::{GlobRequest, GrepRequest, RgBackend, SearchBackend, Status};
    let Some(env) = rg::env() else { return };
    let trees: Arc<Vec<Tree>> = Arc::new((0..4).map(|s| Tree::build(&tree_specs(s))).collect());
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let trees = Arc::clone(&trees);
            let rg_path = env.rg.clone();
            std::thread::spawn(move || {
                let rgb = RgBackend::with_path(rg_path);
                let native = NativeBackend::new();
                let root = trees[t % trees.len()].root();
                let mut failures = Vec::new();
                let glob_len = rgb.glob(&GlobRequest::new("*", root)).results.raw_len();
                let mut grep_raw = Vec::new();
                rgb.grep(&GrepRequest::new("needle", root))
                    .results
                    .write_raw(&mut grep_raw)
                    .unwrap();
                let grep_len = grep_raw.len() as u64;
                for budget in [
                    0,
                    1,
                    glob_len / 2,
                    glob_len.saturating_sub(1),
                    glob_len,
                    glob_len + 1,
                ] {
                    let mut req = GlobRequest::new("*", root);
                    req.raw_budget = Some(budget);
                    let (n, r) = (native.glob(&req).status, rgb.glob(&req).status);
                    if n != r {
                        failures.push(format!("glob budget {budget}/{glob_len}: {n:?} / rg {r:?}"));
                    }
                }
                // rg's summary line varies by a few bytes (elapsed): stay
                // clear of the total.
                for budget in [
                    0,
                    100,
                    grep_len / 2,
                    grep_len.saturating_sub(300),
                    grep_len + 300,
                ] {
                    let mut req = GrepRequest::new("needle", root);
                    req.raw_budget = Some(budget);
                    let (n, r) = (native.grep(&req).status, rgb.grep(&req).status);
                    if n != r {
                        failures.push(format!("grep budget {budget}/{grep_len}: {n:?} / rg {r:?}"));
                    }
                }
                let req = GlobRequest::new("*", root);
                req.cancel.cancel();
                let o = native.glob(&req);
                if o.status != Status::Cancelled {
                    failures.push(format!("cancelled glob: {:?}", o.status));
                }
                let req = GrepRequest::new("needle", root);
                req.cancel.cancel();
                let o = native.grep(&req);
                if o.status != Status::Cancelled {
                    failures.push(format!("cancelled grep: {:?}", o.status));
                }
                failures
            })
        })
        .collect();
    let failures: Vec<String> = threads
        .into_iter()
        .flat_map(|h| h.join().expect("no call panics"))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
