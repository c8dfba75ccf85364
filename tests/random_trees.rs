//! Seeded random trees and patterns against the real rg, compared like the
//! conformance tables (`contract.md` §2). The seed is printed with every
//! failure; `DSH_SEARCH_SEED=<n>` replays a run, `DSH_SEARCH_TREES=<n>`
//! changes how many trees are built (default 100).
//!
//! File contents stay far below 64 KiB: rg reuses a thread's line buffer
//! between files, so a long line in one file changes where the first buffer
//! of the next ends, and with it rg's own binary-detection output (see
//! `conformance::encodings_and_binaries`). Small files keep rg deterministic
//! up to the file order the comparison already normalises.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::util::tree::{dir, file, mtime, Spec, Tree};
use crate::util::{glob, grep, rg, Case, Mode, Report};

use crate::util::rng::Rng;

const DIR_NAMES: &[&str] = &[
    "src",
    "lib",
    "docs",
    ".hidden",
    "build",
    "node_modules",
    "dir with space",
    "ünï",
    "a.b",
    "-dash",
    "deep",
    ".git",
    "sub",
];
const FILE_NAMES: &[&str] = &[
    "a.rs",
    "b.txt",
    "c.md",
    "main.rs",
    ".env",
    ".hidden.txt",
    "x y.txt",
    "ünï.rs",
    "a.b.c",
    "-f.txt",
    "#h.md",
    "[b].txt",
    "{c}.rs",
    "README",
    "keep.rs",
    "out.log",
    "top.txt",
];
const LINES: &[&str] = &[
    "needle",
    "foo bar",
    "fn main() {}",
    "ünï ö",
    "",
    "\t tabbed needle",
    "x needle y needle",
    "FOO",
    "a\"quote\\slash",
    "trailing space ",
    "123 456",
];
const IGNORE_LINES: &[&str] = &[
    "*.rs",
    "*.log",
    "build/",
    "!keep.rs",
    "/top.txt",
    "**/deep",
    "*.md",
    "sub/",
    "#comment",
    "!*.txt",
    "a.*",
    ".env",
    "ünï*",
    // Anchored, nested, negated directories, escapes, odd lines.
    "src/*.rs",
    "/sub/**",
    "deep/**/*.txt",
    "!build/",
    "!sub/",
    "!.hidden/",
    "\\#h.md",
    "\\!x",
    "x y.txt",
    "*.txt  ",
    "[ab].*",
    "**/src/**",
    "*/",
    "!*/",
    ".*",
    "!.env",
    "a{b",
    "",
    "docs/*",
    "/*",
    "!/src",
    "**",
];
const GLOB_ATOMS: &[&str] = &[
    "*",
    "**",
    "?",
    "[ab]*",
    "[!a]*",
    "{a,b}*",
    "*.rs",
    "*.txt",
    "*.{rs,md}",
    "src",
    "deep",
    "ünï*",
    ".*",
    "*needle*",
    "a*",
    "x y.txt",
    "sub",
    ".hidden",
];
const REGEXES: &[&str] = &[
    "needle", "^", "$", "", "foo|bar", "\\w+", "n.e", "ü", "^$", "[0-9]+", "(?i)foo", "needle$",
    "\\s", "\"", "\\\\", "e\\b", "x.*y",
];

fn random_glob(r: &mut Rng) -> String {
    let mut parts = Vec::new();
    for _ in 0..1 + r.below(3) {
        parts.push(r.pick(GLOB_ATOMS).to_string());
    }
    let mut g = parts.join("/");
    if r.chance(10) {
        g = format!("/{g}");
    }
    if r.chance(10) {
        g.push('/');
    }
    if r.chance(10) {
        g = format!("!{g}");
    }
    g
}

fn random_content(r: &mut Rng) -> Vec<u8> {
    let mut v = Vec::new();
    if r.chance(5) {
        v.extend_from_slice("\u{feff}".as_bytes());
    }
    let crlf = r.chance(15);
    // Now and then a file past the engine's 64 KiB first read (its whole-
    // file check, the replay to the searcher): filler lines with a few of
    // the usual ones, and the endings below (a late NUL among them).
    if r.chance(4) {
        for i in 0..1500 + r.below(3000) {
            if i % 500 == 499 {
                v.extend_from_slice(r.pick(LINES).as_bytes());
            } else {
                v.extend_from_slice(b"lorem ipsum dolor sit amet consectetur adipiscing");
            }
            v.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
        }
    }
    for _ in 0..r.below(8) {
        v.extend_from_slice(r.pick(LINES).as_bytes());
        v.extend_from_slice(if crlf { b"\r\n" } else { b"\n" });
    }
    if r.chance(15) {
        v.extend_from_slice(b"needle without newline");
    }
    if r.chance(5) {
        v.extend_from_slice(b"\0binary needle\n");
    }
    if r.chance(5) {
        v.extend_from_slice(b"latin \xe9 needle\n");
    }
    v
}

/// A random tree: its specs, its directories and its files (relative paths).
fn random_tree(r: &mut Rng) -> (Vec<Spec>, Vec<String>, Vec<String>) {
    let mut specs = Vec::new();
    let mut dirs = vec![String::new()];
    for _ in 0..r.below(12) {
        let parent = dirs[r.below(dirs.len())].clone();
        let name = r.pick(DIR_NAMES);
        let d = if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}/{name}")
        };
        if d.split('/').count() <= 6 && !dirs.contains(&d) {
            specs.push(dir(&d));
            dirs.push(d);
        }
    }
    let mut files = Vec::new();
    for _ in 0..3 + r.below(20) {
        let parent = &dirs[r.below(dirs.len())];
        let name = r.pick(FILE_NAMES);
        let f = if parent.is_empty() {
            name.to_string()
        } else {
            format!("{parent}/{name}")
        };
        if !files.contains(&f) && !dirs.contains(&f) {
            specs.push(file(&f, random_content(r)));
            // Mostly a few mtime buckets, so ties across directories are common.
            specs.push(mtime(&f, r.below(4) as u64));
            files.push(f);
        }
    }
    for name in [".gitignore", ".ignore", ".rgignore"] {
        for d in &dirs {
            if r.chance(15) {
                let mut text = String::new();
                if r.chance(10) {
                    text.push('\u{feff}');
                }
                let eol = if r.chance(15) { "\r\n" } else { "\n" };
                for _ in 0..1 + r.below(4) {
                    text.push_str(r.pick(IGNORE_LINES));
                    text.push_str(eol);
                }
                let p = if d.is_empty() {
                    name.to_string()
                } else {
                    format!("{d}/{name}")
                };
                if !files.contains(&p) {
                    specs.push(file(&p, text));
                }
            }
        }
    }
    if r.chance(50) && !dirs.contains(&".git".to_string()) && !files.contains(&".git".to_string()) {
        specs.push(file(".git/HEAD", "needle ref\n"));
        if r.chance(30) {
            let line = r.pick(IGNORE_LINES);
            specs.push(file(".git/info/exclude", format!("{line}\n")));
        }
        dirs.push(".git".into());
    }
    // A nested repository (cuts off the parent's .gitignore) or a `.jj` one.
    if r.chance(20) && dirs.len() > 2 {
        let d = dirs[1 + r.below(dirs.len() - 1)].clone();
        if !d.starts_with(".git") {
            let vcs = if r.chance(70) { ".git" } else { ".jj" };
            let p = format!("{d}/{vcs}/HEAD");
            if !files.iter().any(|f| f.starts_with(&format!("{d}/{vcs}"))) {
                specs.push(file(&p, "ref\n"));
            }
        }
    }
    (specs, dirs, files)
}

fn random_path(r: &mut Rng, dirs: &[String], files: &[String]) -> Option<String> {
    let dir = |r: &mut Rng| {
        dirs.get(r.below(dirs.len()))
            .filter(|d| !d.is_empty())
            .cloned()
    };
    match r.below(11) {
        6 => dir(r).map(|d| format!("./{d}/")),
        7 => dir(r).map(|d| format!("{d}//")),
        8 => dir(r).map(|d| format!("{d}/.")),
        9 => files.get(r.below(files.len().max(1))).cloned(),
        10 => dir(r).map(|d| format!("{d}/../{d}")),
        0 | 1 => None,
        2 => Some(".".into()),
        3 => dirs
            .get(r.below(dirs.len()))
            .filter(|d| !d.is_empty())
            .cloned(),
        4 => files
            .get(r.below(files.len().max(1)))
            .map(|f| format!("./{f}")),
        _ => dirs
            .get(r.below(dirs.len()))
            .filter(|d| !d.is_empty())
            .map(|d| format!("{d}/")),
    }
}

/// The path to use from `cwd`: the root's paths only make sense at the root;
/// from a subdirectory, none, `.` or a path through `..` (never above the
/// tree: `cwd` is at least one level deep).
fn in_cwd(r: &mut Rng, path: Option<String>, cwd: String) -> (Option<String>, String) {
    if cwd.is_empty() {
        return (path, cwd);
    }
    let p = match r.below(5) {
        0 | 1 => None,
        2 => Some(".".to_string()),
        3 => Some("..".to_string()),
        _ => Some(format!("../{}", cwd.rsplit('/').next().unwrap_or("."))),
    };
    (p, cwd)
}

#[test]
pub(crate) fn random_trees_match_rg() {
    let Some(env) = rg::env() else { return };
    let seed = match std::env::var("DSH_SEARCH_SEED") {
        Ok(s) => s.parse::<u64>().expect("DSH_SEARCH_SEED must be a u64"),
        Err(_) => SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64,
    };
    let trees: usize = std::env::var("DSH_SEARCH_TREES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100);
    let mut report = Report::new(&format!("random_trees DSH_SEARCH_SEED={seed}"));
    let mut rng = Rng(seed);
    for t in 0..trees {
        let (specs, dirs, files) = random_tree(&mut rng);
        let tree = Tree::build(&specs);
        let mut cases: Vec<Case> = Vec::new();
        for _ in 0..8 {
            let path = random_path(&mut rng, &dirs, &files);
            let g = random_glob(&mut rng);
            let cwd = if rng.chance(20) {
                dirs[rng.below(dirs.len())].clone()
            } else {
                String::new()
            };
            let (path, cwd) = in_cwd(&mut rng, path, cwd);
            cases.push(glob(&g, path.as_deref()).cwd(&cwd));
        }
        for _ in 0..8 {
            let path = random_path(&mut rng, &dirs, &files);
            let re = rng.pick(REGEXES).to_string();
            let include = if rng.chance(35) {
                Some(random_glob(&mut rng))
            } else {
                None
            };
            let cwd = if rng.chance(20) {
                dirs[rng.below(dirs.len())].clone()
            } else {
                String::new()
            };
            let (path, cwd) = in_cwd(&mut rng, path, cwd);
            cases.push(grep(&re, path.as_deref(), include.as_deref()).cwd(&cwd));
        }
        let before = report.failures();
        report.set_context(format!(" tree={t}"));
        report.run_all(env, &tree, &cases, Mode::InProcess);
        if report.failures() > before {
            let listing: Vec<String> = specs
                .iter()
                .map(|s| match s {
                    Spec::File(p, c) => format!(
                        "  file {:?} {:?}",
                        String::from_utf8_lossy(p),
                        String::from_utf8_lossy(c)
                    ),
                    other => format!("  {other:?}"),
                })
                .collect();
            report.fail(format!("tree={t} was:\n{}\n", listing.join("\n")));
        }
    }
    report.finish();
}
