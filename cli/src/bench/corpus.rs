//! Deterministic source-like trees for benchmarks.
//!
//! The same tier and seed always give the same names, bytes and mtimes, so
//! two runs (or two machines) measure the same work. The text looks like code
//! (identifiers, keywords, braces, comments), the layout like a project (nested
//! directories, `.gitignore` files, a hidden directory), and mtimes fall into
//! few buckets so glob's order is decided by many ties.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// Size tiers of the generated tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Tier {
    /// 100 files, a small workspace.
    Small,
    /// 10,000 files.
    Medium,
    /// 100,000 files, about 1 GB.
    Large,
}

impl Tier {
    /// Parse `small`, `medium` or `large`.
    pub(crate) fn parse(s: &str) -> Option<Tier> {
        match s {
            "small" => Some(Tier::Small),
            "medium" => Some(Tier::Medium),
            "large" => Some(Tier::Large),
            _ => None,
        }
    }

    /// The tier's name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Tier::Small => "small",
            Tier::Medium => "medium",
            Tier::Large => "large",
        }
    }

    /// (number of files, mean file size in bytes).
    fn shape(self) -> (usize, usize) {
        match self {
            Tier::Small => (100, 4_000),
            Tier::Medium => (10_000, 6_000),
            Tier::Large => (100_000, 10_000),
        }
    }
}

/// splitmix64: tiny, fast, and good enough to shape a corpus.
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

const WORDS: &[&str] = &[
    "buffer", "count", "device", "driver", "error", "flags", "handle", "index", "init", "length",
    "list", "lock", "map", "node", "offset", "page", "queue", "read", "request", "result", "size",
    "state", "status", "table", "value", "write", "config", "entry", "event", "field",
];
const KEYWORDS: &[&str] = &[
    "static", "int", "return", "if", "for", "while", "struct", "const",
];
const DIRS: &[&str] = &[
    "src", "lib", "drivers", "net", "fs", "core", "util", "include", "arch", "tests", "tools",
    "docs", "mm", "kernel", "crypto", "sound",
];
const EXTS: &[&str] = &["c", "c", "c", "h", "h", "rs", "py", "md", "txt", "S"];

/// The word that appears once in the whole tree (the "rare literal").
pub(crate) const RARE_LITERAL: &str = "zq_unique_sentinel_42";
/// The tiny workspace's query: an identifier with a handful of matches (17
/// lines in 15 of the small tier's files), what an agent greps for when it
/// looks for the uses of one name.
pub(crate) const IDENTIFIER: &str = "device_state";

/// Write the tier's tree under `root` (created if missing) and return the
/// number of bytes written. An existing complete tree (marked by a stamp file
/// outside it) is reused.
pub(crate) fn generate(root: &Path, tier: Tier, seed: u64) -> io::Result<u64> {
    let stamp = stamp_path(root);
    if let Ok(s) = fs::read_to_string(&stamp) {
        if let Ok(n) = s.trim().parse() {
            return Ok(n);
        }
    }
    if root.exists() {
        fs::remove_dir_all(root)?;
    }
    fs::create_dir_all(root)?;
    let (nfiles, mean) = tier.shape();
    let mut rng = Rng::new(seed);
    let mut total = 0u64;
    let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    let rare_at = nfiles / 2;
    let mut dirs: Vec<PathBuf> = vec![PathBuf::new()];
    // A .gitignore at the top (the tree is made a repository below) and a
    // hidden directory, so grep's default filters have work to do.
    fs::create_dir_all(root.join(".git"))?;
    fs::write(root.join(".gitignore"), "*.o\n/build/\n")?;
    fs::create_dir_all(root.join(".cache"))?;
    fs::write(root.join(".cache/state.txt"), "return cached state\n")?;
    let mut text = Vec::with_capacity(mean * 3);
    for i in 0..nfiles {
        // Grow the directory tree as files are added: ~20 files a directory.
        if i % 20 == 0 && i > 0 {
            let parent = dirs[rng.below(dirs.len())].clone();
            if parent.components().count() < 6 {
                let d = parent.join(format!("{}{}", DIRS[rng.below(DIRS.len())], dirs.len()));
                fs::create_dir_all(root.join(&d))?;
                dirs.push(d);
            }
        }
        let dir = &dirs[rng.below(dirs.len())];
        let ext = EXTS[rng.below(EXTS.len())];
        let name = format!(
            "{}_{}{}.{}",
            WORDS[rng.below(WORDS.len())],
            WORDS[rng.below(WORDS.len())],
            i,
            ext
        );
        let size = mean / 2 + rng.below(mean);
        text.clear();
        fill_source(&mut rng, &mut text, size, i == rare_at);
        let path = root.join(dir).join(name);
        let mut f = fs::File::create(&path)?;
        f.write_all(&text)?;
        // Few mtime buckets: glob's order is mostly decided by ties.
        let bucket = rng.below(8) as u64;
        f.set_modified(base + Duration::from_secs(bucket * 3600))?;
        total += text.len() as u64;
    }
    fs::write(&stamp, total.to_string())?;
    Ok(total)
}

fn stamp_path(root: &Path) -> PathBuf {
    let mut s = root.as_os_str().to_owned();
    s.push(".complete");
    PathBuf::from(s)
}

fn fill_source(rng: &mut Rng, out: &mut Vec<u8>, size: usize, rare: bool) {
    let mut line_no = 0usize;
    while out.len() < size {
        line_no += 1;
        let indent = rng.below(3) * 4;
        out.extend(std::iter::repeat_n(b' ', indent));
        match rng.below(10) {
            0 => {
                out.extend_from_slice(b"/* ");
                push_words(rng, out, 6);
                out.extend_from_slice(b" */");
            }
            1 | 2 => {
                out.extend_from_slice(b"return ");
                push_ident(rng, out);
                out.push(b';');
            }
            3 => {
                out.extend_from_slice(KEYWORDS[rng.below(KEYWORDS.len())].as_bytes());
                out.extend_from_slice(b" (");
                push_ident(rng, out);
                out.extend_from_slice(b" < 0x");
                out.extend_from_slice(format!("{:x}", rng.next() & 0xffff).as_bytes());
                out.extend_from_slice(b") {");
            }
            4 => out.push(b'}'),
            _ => {
                push_ident(rng, out);
                out.extend_from_slice(b" = ");
                push_ident(rng, out);
                out.extend_from_slice(b"(");
                push_ident(rng, out);
                out.extend_from_slice(b", ");
                out.extend_from_slice(rng.below(4096).to_string().as_bytes());
                out.extend_from_slice(b");");
            }
        }
        if rare && line_no == 7 {
            out.extend_from_slice(b" // ");
            out.extend_from_slice(RARE_LITERAL.as_bytes());
        }
        out.push(b'\n');
    }
}

fn push_ident(rng: &mut Rng, out: &mut Vec<u8>) {
    out.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
    out.push(b'_');
    out.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
}

fn push_words(rng: &mut Rng, out: &mut Vec<u8>, n: usize) {
    for i in 0..n {
        if i > 0 {
            out.push(b' ');
        }
        out.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
    }
}
