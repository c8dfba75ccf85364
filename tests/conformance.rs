//! The native engine and the rg backend against the real rg 15.2.0 at the raw
//! level of `contract.md` §2: glob stdout byte for byte, grep stdout after
//! masking `elapsed` and sorting per-file blocks, stderr as sorted lines, exit
//! code. Each test builds one fixture tree and runs a table of cases on it;
//! the row ids in comments are those of `rg-semantics.md` §2.
//!
//! Rerun one case: `DSH_SEARCH_CASE='<substring of the label>' cargo test --test tests conformance::<test>`
//! (a test whose cases the filter all leaves out fails: `Report::finish`).
//!
//! Every test here is listed in [`OVER_SFTP`] or [`LOCAL_ONLY`]
//! (`sftp::sftp_runs_every_conformance_table` checks it against the test
//! binary's own list), so a new table runs over SFTP too unless a reason
//! says why not.

#[cfg(unix)]
use std::sync::mpsc;
#[cfg(unix)]
use std::thread;
#[cfg(unix)]
use std::time::Duration;

#[cfg(unix)]
use dsh_search::{CancelToken, GrepRequest, NativeBackend, SearchBackend, Status};

use crate::util::tree::{dir, file, fixture, mtime, symlink, Spec, Tree};
#[cfg(unix)]
use crate::util::tree::{fifo, mode, socket};
use crate::util::{glob, grep, rg, Case, Mode, Report};

/// The tables the SFTP suite runs again over SFTP
/// (`sftp::sftp_conformance_tables`, through `util::sftp_share`).
#[cfg(all(unix, feature = "sftp"))]
pub(crate) const OVER_SFTP: &[(&str, fn())] = &[
    ("basic_glob", basic_glob),
    ("basic_grep", basic_grep),
    ("ignore_files_outside_a_repo", ignore_files_outside_a_repo),
    ("repositories", repositories),
    ("vcs_dirs", vcs_dirs),
    ("encodings_and_binaries", encodings_and_binaries),
    ("nul_after_the_bom_peek", nul_after_the_bom_peek),
    ("haystack_edges", haystack_edges),
    ("odd_names", odd_names),
    ("special_files", special_files),
    ("mtime_ties", mtime_ties),
    ("mtime_ties_many_dirs", mtime_ties_many_dirs),
    ("nothing_searched", nothing_searched),
    ("permissions", permissions),
    ("double_dot_slash_paths", double_dot_slash_paths),
    ("relative_gitdir_worktree", relative_gitdir_worktree),
    ("ignore_file_errors", ignore_file_errors),
];

/// The tests of this module that do not run over SFTP, and why.
#[cfg(all(unix, feature = "sftp"))]
pub(crate) const LOCAL_ONLY: &[(&str, &str)] = &[
    (
        "no_state_between_calls",
        "the engine's buffers from one call to the next, whatever the filesystem",
    ),
    (
        "many_dirs_few_descriptors",
        "the local disk's descriptors under a limit; SFTP handles hold none",
    ),
    (
        "tool_caps",
        "the tools' caps; every table over SFTP checks its cases at the tool level too",
    ),
    (
        "explicit_fifo_grep_is_cancelled",
        "a FIFO on the local disk; SFTP reads no FIFO",
    ),
    ("harness_normalizes_grep_output", "the harness itself"),
    (
        "nul_after_the_bom_peek_literal",
        "one answer written out; its files are in the table `nul_after_the_bom_peek`, which runs over SFTP",
    ),
    (
        "relative_excludes_file",
        "the global excludes found through the local HOME, by the command line",
    ),
];

fn check(name: &str, specs: &[Spec], cases: &[Case], mode: Mode) {
    let Some(env) = rg::env() else { return };
    let tree = Tree::build(specs);
    let mut report = Report::new(name);
    report.run_all(env, &tree, cases, mode);
    report.finish();
}

/// A tree with one of everything the default filters care about, inside a
/// repository (`.git/HEAD`) so `.gitignore`, info/exclude and the global
/// excludes apply (W3).
fn basic_tree() -> Vec<Spec> {
    vec![
        file("src/a.rs", "fn main() { needle(); }\n"),
        file(
            "src/b.txt",
            "needle in b\nno match here\nneedle again needle\n",
        ),
        file("src/deep/c.rs", "// needle deep\n"),
        file("src/.hidden.rs", "needle hidden rs\n"),
        file("docs/readme.md", "# needle docs\n"),
        file("notes.md", "notes needle\n"),
        file("top.txt", "top needle\nalpha\n"),
        file("alpha.txt", "alpha\n"),
        file("bravo.rs", "bravo needle\n"),
        file(".hidden.txt", "hidden needle\n"),
        file(".hdir/inner.txt", "needle inner hidden dir\n"),
        file("space name.txt", "needle with space\n"),
        file("ünï.txt", "needle ünï ö\n"),
        file("dots.in.name.txt", "needle dots\n"),
        file("#hash.md", "needle hash\n"),
        file("[x].txt", "needle bracket\n"),
        file("-dash.txt", "-foo needle\n"),
        file(".git/HEAD", "ref: refs/heads/main needle\n"),
        file(".git/info/exclude", "excluded.txt\n"),
        file(".gitignore", "ignored.txt\nbuild/\n"),
        file("ignored.txt", "needle ignored\n"),
        file("build/out.txt", "needle build\n"),
        file(".ignore", "dotignored.txt\nreinc.txt\n"),
        file("dotignored.txt", "needle dotignored\n"),
        file(".rgignore", "rgignored.txt\n!reinc.txt\n"),
        file("rgignored.txt", "needle rgignored\n"),
        file("reinc.txt", "needle re-included by .rgignore\n"),
        file("excluded.txt", "needle excluded\n"),
        file("x.globalignored", "needle global\n"),
        file("global-dir/g.txt", "needle global dir\n"),
        dir("emptydir"),
        // S3: deliberate ties across directories.
        mtime("top.txt", 100),
        mtime("alpha.txt", 100),
        mtime("src/a.rs", 100),
        mtime("src/deep/c.rs", 100),
        mtime("bravo.rs", 50),
    ]
}

const GLOB_PATTERNS: &[&str] = &[
    "*",
    "**",
    "*.txt",
    "*.rs",
    "**/*.rs",
    "src/*.rs",  // G1/G3 anchored at the cwd
    "/src/*.rs", // G3 leading slash
    "src/**",    // G4
    "**/deep/*.rs",
    "*.{rs,txt}",      // G5
    "*.{rs,{md,txt}}", // G5 nested
    "[ab]*",           // G6
    "[!a]*",
    "[^a]*",
    "\\[*",
    "#*.md",   // G8 comment
    "\\#*",    // G8 escaped #
    "*.md  ",  // G8 trailing spaces
    "*.md\\ ", // G8 escaped trailing space
    "",        // G8 empty
    "!",       // excludes everything
    "!*.txt",  // G9 only a negation: no whitelist
    "src",     // whitelisted dir, files match nothing
    "src/",
    ".hdir",
    ".*",
    "a{,b}*",
    "**a*",
    "[abc", // glob errors (R5)
    "a{b",
    "a\\",
];

const PATHS: &[Option<&str>] = &[
    None,
    Some("."),
    Some("./"),
    Some("src"),
    Some("src/"),
    Some("src//"),
    Some(".//src"),
    Some("./src/"),
    Some("{root}"),
    Some("{root}/src"),
    Some("{root}/./src"),
    Some("src/a.rs"),
    Some("./src/a.rs"),
    Some("missing"),
    Some("src/a.rs/"),
    Some(".git"),
    Some(".hdir"),
    Some("ignored.txt"),
    Some("build"),
    Some("emptydir"),
];

#[test]
fn basic_glob() {
    let mut cases = Vec::new();
    for p in GLOB_PATTERNS {
        for path in PATHS {
            cases.push(glob(p, *path));
        }
    }
    // P2: `..` from a subdirectory used as the workdir; G1 anchoring there.
    for p in ["*", "src/*.rs", "*.rs"] {
        cases.push(glob(p, Some("..")).cwd("src"));
        cases.push(glob(p, None).cwd("src"));
        cases.push(glob(p, Some("../src")).cwd("src"));
    }
    check("basic_glob", &basic_tree(), &cases, Mode::InProcess);
}

#[test]
fn basic_grep() {
    let mut cases = Vec::new();
    // R1/R2/R4/B3/J7: regex semantics and errors, no path.
    for p in [
        "needle",
        "",
        "$",
        "^",
        "ne+dle",
        "\\w+",
        "(",
        "a\nb",
        "\\x00",
        "\\x00+",
        "[",
        "\\bneedle\\b",
        "(?i)NEEDLE",
        "ö",
        "\\s",
        "needle|alpha",
        "-foo",
        "x{99999999}",
        "\\p{Greek}",
        "(a)\\1",
    ] {
        cases.push(grep(p, None, None));
        cases.push(grep(p, Some("."), None));
    }
    // G11/G12: include whitelisting past ignore rules and the hidden test.
    for inc in [
        "*.txt",
        "*",
        "!*.txt",
        ".*",
        "*.rs",
        "src/**",
        "**",
        "ignored.txt",
        "build/**",
        "*.globalignored",
        "HEAD",
        ".g*",
        "#x",
        "",
        "*.none",
        "[abc",
        "a{b",
        "a\\",
    ] {
        for path in [None, Some("."), Some("src")] {
            cases.push(grep("needle", path, Some(inc)));
        }
    }
    // R5: a glob error wins over a regex error.
    cases.push(grep("(", None, Some("[abc")));
    cases.push(grep("a\nb", Some("."), Some("a{b")));
    // P1/P2/W10/W11: path forms; explicit paths are never filtered.
    for path in PATHS.iter().flatten() {
        cases.push(grep("needle", Some(path), None));
        cases.push(grep("needle", Some(path), Some("*.md")));
    }
    for path in ["..", "../src", "."] {
        cases.push(grep("needle", Some(path), None).cwd("src"));
    }
    cases.push(grep("needle", None, None).cwd("src"));
    cases.push(grep("needle", None, Some("src/*.rs")).cwd("src"));
    check("basic_grep", &basic_tree(), &cases, Mode::InProcess);
}

/// W3: a `.gitignore` outside any repository is not read; `.ignore` is, also
/// from parent directories of the workdir.
#[test]
fn ignore_files_outside_a_repo() {
    let specs = vec![
        file(".gitignore", "gi.txt\n"),
        file(".ignore", "ig.txt\n"),
        file("gi.txt", "needle gi\n"),
        file("ig.txt", "needle ig\n"),
        file("x.globalignored", "needle global outside repo\n"),
        file("sub/gi.txt", "needle sub gi\n"),
        file("sub/ig.txt", "needle sub ig\n"),
        file("sub/keep.txt", "needle keep\n"),
        file("sub/.rgignore", "keep.txt\n"),
        file("sub/deeper/ig.txt", "needle deeper\n"),
    ];
    let mut cases = Vec::new();
    for cwd in ["", "sub", "sub/deeper"] {
        for path in [None, Some("."), Some("ig.txt")] {
            cases.push(grep("needle", path, None).cwd(cwd));
        }
        if !cwd.is_empty() {
            // Never `..` from the root: that would walk all of /tmp.
            cases.push(grep("needle", Some(".."), None).cwd(cwd));
        }
        cases.push(grep("needle", None, Some("*.txt")).cwd(cwd));
        cases.push(glob("*", None).cwd(cwd));
    }
    check("ignore_outside_repo", &specs, &cases, Mode::InProcess);
}

/// W3: repositories: nested repos cut off the parent `.gitignore`,
/// info/exclude, the global excludes file (set in the controlled
/// `$HOME/.gitconfig`), `.jj` repos, `.git` files, running from inside an
/// ignored directory.
#[test]
fn repositories() {
    let specs = vec![
        file("repo/.git/HEAD", "ref: x\n"),
        file("repo/.git/info/exclude", "excluded.txt\n"),
        file("repo/.gitignore", "*.log\n/build/\n!keep.log\n"),
        file("repo/a.log", "needle log\n"),
        file("repo/keep.log", "needle keep log\n"),
        file("repo/keep.txt", "needle keep\n"),
        file("repo/excluded.txt", "needle excluded\n"),
        file("repo/x.globalignored", "needle global\n"),
        file("repo/global-dir/f.txt", "needle global dir\n"),
        file("repo/build/out.txt", "needle build\n"),
        file("repo/sub/c.log", "needle sub log\n"),
        file(
            "repo/sub/build/kept.txt",
            "needle sub build (anchored rule)\n",
        ),
        file("repo/nested/.git/HEAD", "ref: y\n"),
        file("repo/nested/b.log", "needle nested log\n"),
        file("repo/nested/.gitignore", "nested-only.txt\n"),
        file("repo/nested/nested-only.txt", "needle nested only\n"),
        file("jj/.jj/repo", "x\n"),
        file("jj/.gitignore", "*.tmp\n"),
        file("jj/a.tmp", "needle jj tmp\n"),
        // Below a `.jj` repo: its `.gitignore` applies as a parent's.
        file("jj/sub/s.tmp", "needle jj sub tmp\n"),
        file("jj/sub/s.txt", "needle jj sub txt\n"),
        file("wt/.git", "gitdir: /nonexistent/worktree\n"),
        file("wt/.gitignore", "*.log\n"),
        file("wt/w.log", "needle worktree log\n"),
        file("outside/.gitignore", "*.log\n"),
        file("outside/o.log", "needle outside log\n"),
        file("outside/x.globalignored", "needle outside global\n"),
    ];
    let mut cases = Vec::new();
    for cwd in [
        "",
        "repo",
        "repo/sub",
        "repo/build",
        "repo/nested",
        "jj",
        "jj/sub",
        "wt",
        "outside",
    ] {
        cases.push(grep("needle", None, None).cwd(cwd));
        cases.push(grep("needle", Some("."), None).cwd(cwd));
        if !cwd.is_empty() {
            // Never `..` from the root: that would walk all of /tmp.
            cases.push(grep("needle", Some(".."), None).cwd(cwd));
        }
        cases.push(grep("needle", None, Some("*.log")).cwd(cwd));
        cases.push(glob("*", None).cwd(cwd));
    }
    for path in [
        "repo",
        "repo/build",
        "repo/a.log",
        "{root}/repo",
        "repo/nested",
        "wt/w.log",
    ] {
        cases.push(grep("needle", Some(path), None));
    }
    check("repositories", &specs, &cases, Mode::InProcess);
}

/// W12–W14 and G12: VCS directories for glob (`.git` dir, `.git` file, root
/// inside `.git`) and for grep (hidden, re-included by `*`).
#[test]
fn vcs_dirs() {
    let specs = vec![
        file(".git/HEAD", "needle head\n"),
        file(".git/objects/ab/cdef", "needle object\n"),
        file(".svn/entries", "needle svn\n"),
        file(".hg/store", "needle hg\n"),
        file(".bzr/x", "needle bzr\n"),
        file(".jj/repo", "needle jj\n"),
        file(".sl/y", "needle sl\n"),
        file("sub/.git", "gitdir: ../.git\n"),
        file("sub/file.txt", "needle sub\n"),
        file("sub/.gitx", "needle not vcs\n"),
        file("a.txt", "needle a\n"),
        // A workdir whose path is a byte prefix of a sibling with a VCS
        // name's suffix: rg's matcher strips the workdir byte-wise.
        file("w/in.txt", "needle w\n"),
        file("w.git/out.txt", "needle w.git\n"),
        file("w.git/.git/HEAD", "needle w.git head\n"),
    ];
    let mut cases = Vec::new();
    for p in [
        "*", "**", "**/*", ".git/**", "*HEAD*", ".git", ".*", "*.txt",
    ] {
        // From inside `.git` (the workdir itself has a VCS segment) and
        // from `w`, next to `w.git`.
        for path in [None, Some("."), Some("objects"), Some("../sub")] {
            cases.push(glob(p, path).cwd(".git"));
        }
        for path in [
            None,
            Some("{root}/w.git"),
            Some("../w.git"),
            Some("{root}/w"),
            Some("{root}/w.git/.git"),
        ] {
            cases.push(glob(p, path).cwd("w"));
        }
        for path in [
            None,
            Some(".git"),
            Some("./.git"),
            Some(".git/objects"),
            Some("{root}/.git"),
            Some("sub"),
            Some("sub/.git"),
            Some(".svn"),
        ] {
            cases.push(glob(p, path));
        }
    }
    for inc in [
        None,
        Some("*"),
        Some(".*"),
        Some("**"),
        Some(".g*"),
        Some("HEAD"),
    ] {
        for path in [None, Some("."), Some(".git"), Some("sub")] {
            cases.push(grep("needle", path, inc));
        }
    }
    check("vcs_dirs", &specs, &cases, Mode::InProcess);
}

fn nul_late() -> Vec<u8> {
    // B1: more than 64 KiB of text before the NUL, so the walked search
    // reports the matches of the first buffer and sets binary_offset.
    let mut v = Vec::new();
    let mut i = 0;
    while v.len() < 100 * 1024 {
        v.extend_from_slice(format!("line {i} needle\n").as_bytes());
        i += 1;
    }
    v.extend_from_slice(b"\0 needle after nul\n");
    v.extend_from_slice(b"needle tail\n");
    v
}

/// B1/B2/C1/C2/J5–J7: binaries, encodings, line terminators, escaping.
///
/// The 200 KB line lives in its own tree: rg reuses a thread's line buffer
/// from file to file, and a buffer grown by a long line makes the first
/// read of a later file larger, so whether `nul_late.bin`'s NUL falls in its
/// first buffer (nothing reported) or a later one (64 KiB of matches) would
/// depend on which thread searched what before (seen with rg 15.2.0: 3 runs
/// of 12 differ).
#[test]
fn encodings_and_binaries() {
    let specs = vec![
        fixture("utf16le_bom.txt", "utf16le_bom.txt"),
        fixture("utf16be_bom.txt", "utf16be_bom.txt"),
        fixture("utf16le_nobom.txt", "utf16le_nobom.txt"),
        fixture("utf8_bom.txt", "utf8_bom.txt"),
        fixture("latin1.txt", "latin1.txt"),
        fixture("crlf.txt", "crlf.txt"),
        fixture("no_final_newline.txt", "no_final_newline.txt"),
        fixture("nul_early.bin", "nul_early.bin"),
        fixture("controls.txt", "controls.txt"),
        file("nul_late.bin", nul_late()),
        file("empty.txt", ""),
        file("only_nul.bin", "\0\0"),
        file("abc.txt", "abc"),
    ];
    let names = [
        "utf16le_bom.txt",
        "utf16be_bom.txt",
        "utf16le_nobom.txt",
        "utf8_bom.txt",
        "latin1.txt",
        "crlf.txt",
        "no_final_newline.txt",
        "nul_early.bin",
        "controls.txt",
        "nul_late.bin",
        "empty.txt",
        "only_nul.bin",
        "abc.txt",
    ];
    let mut cases = Vec::new();
    for p in [
        "needle",
        "$",
        "",
        "^",
        "ü",
        "(?-u:\\xff)",
        "e$",
        "\\r",
        "needle.*",
        "\\x01",
        "\u{2028}",
    ] {
        cases.push(grep(p, None, None));
        for n in names {
            cases.push(grep(p, Some(n), None));
        }
    }
    cases.push(glob("*", None));
    check("encodings", &specs, &cases, Mode::InProcess);

    // C2: a 200 KB line is reported whole, walked and explicit.
    let mut big = vec![b'a'; 200_000];
    big.extend_from_slice(b"needle\n");
    let specs = vec![file("big_line.txt", big), file("small.txt", "needle\n")];
    let mut cases = Vec::new();
    for p in ["needle", "^a", "$"] {
        for path in [None, Some("."), Some("big_line.txt")] {
            cases.push(grep(p, path, None));
        }
    }
    check("big_line", &specs, &cases, Mode::InProcess);
}

/// Walked files whose NUL comes after a line that ends within their first
/// three bytes (`rg-semantics.md` §9.3). The searcher's
/// BOM peek (`encoding_rs_io: BomPeeker::peek_bom`) reads the first three
/// bytes on their own, and grep-searcher 0.1.17's `LineBuffer::fill` hands
/// the searcher what one read gave once it holds a line end: the lines in
/// those three bytes are searched before the NUL is seen. rg 15.2.0 so
/// reports `fn\n\0` as a match; 15.0.0 (grep-searcher 0.1.15, which read
/// until its buffer was full) found the NUL in the same fill and searched
/// nothing. Around it: no line end in the three bytes, a line end in them
/// and the match after it, a UTF-8 BOM (the peek is the BOM), the NUL
/// after text on the second line, a 20-byte file of a random tree's kind.
#[test]
fn nul_after_the_bom_peek() {
    let specs = vec![
        file("fn_nl_nul.rs", "fn\n\0"),
        file("two_lines.rs", "fn\nfn\n\0"),
        file("no_line_end.rs", "fn\0"),
        file("match_after.rs", "a\nfn\n\0"),
        file("short_line.rs", "f\nfn\0"),
        file("bom.rs", "\u{feff}fn\n\0"),
        file("text_then_nul.rs", "fn\nx\0"),
        file("random_ish.rs", "fn\nmod m;\0fn x() {}\n"),
    ];
    let names = [
        "fn_nl_nul.rs",
        "two_lines.rs",
        "no_line_end.rs",
        "match_after.rs",
        "short_line.rs",
        "bom.rs",
        "text_then_nul.rs",
        "random_ish.rs",
    ];
    let mut cases = Vec::new();
    for p in ["^fn", "fn", "^", "$", "a", "x", "mod"] {
        cases.push(grep(p, None, None));
        cases.push(grep(p, Some("."), Some("*.rs")));
        for n in names {
            cases.push(grep(p, Some(n), None));
        }
    }
    check("nul_after_the_bom_peek", &specs, &cases, Mode::InProcess);
}

/// The issue's file, `fn\n\0`, found by a recursive grep for `^fn`: one
/// match event for its first line, `binary_offset` 3 and 3 bytes searched,
/// as rg 15.2.0 prints it (written out by hand from its output; 15.0.0
/// printed the summary alone, with no match and exit 1). The native engine,
/// the rg backend and the reference rg all print exactly this.
#[test]
fn nul_after_the_bom_peek_literal() {
    let Some(env) = rg::env() else { return };
    let tree = Tree::build(&[file("a.rs", "fn\n\0")]);
    let want = concat!(
        r#"{"type":"begin","data":{"path":{"text":"a.rs"}}}"#,
        "\n",
        r#"{"type":"match","data":{"path":{"text":"a.rs"},"lines":{"text":"fn\n"},"line_number":1,"absolute_offset":0,"submatches":[{"match":{"text":"fn"},"start":0,"end":2}]}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"text":"a.rs"},"binary_offset":3,"stats":{"elapsed":"MASKED","searches":1,"searches_with_match":1,"bytes_searched":3,"bytes_printed":215,"matched_lines":1,"matches":1}}}"#,
        "\n",
        r#"{"data":{"elapsed_total":"MASKED","stats":{"bytes_printed":215,"bytes_searched":3,"elapsed":"MASKED","matched_lines":1,"matches":1,"searches":1,"searches_with_match":1}},"type":"summary"}"#,
        "\n",
    );
    let call = grep("^fn", None, None).call;
    let runs = [
        ("native", rg::run_backend(&env.native(), &call, tree.root())),
        (
            "rg backend",
            rg::run_backend(&rg::reference_backend(), &call, tree.root()),
        ),
        ("rg", rg::run_rg(env, &call, tree.root())),
    ];
    for (name, raw) in runs {
        let got = String::from_utf8_lossy(&rg::normalize_grep(&raw.stdout)).into_owned();
        assert_eq!(
            (got.as_str(), raw.stderr.as_slice(), raw.status.as_str()),
            (want, &[][..], "exit 0"),
            "{name}"
        );
    }
}

/// Patterns tied to the haystack's edges against files of every size
/// around the searcher's 64 KiB buffer. rg searches line by line or buffer
/// by buffer, so `\Afoo` matches every line that starts with `foo` after a
/// match restarts the search there, and `foo\z` the end of any buffer; the
/// engine answers a small file without a match in its bytes without running
/// the searcher (`matcher::whole_file_prefilter`), which must never take
/// those patterns, nor files with a byte-order mark or a NUL.
#[test]
fn haystack_edges() {
    let mut over = format!("{}\n", "x".repeat(99)).repeat(700);
    over.push_str("foo at 80k\nfoo\n");
    let mut exact = "y".repeat(65_536 - 11);
    exact.push_str("\nfoo bar\n"); // 65,536 bytes
    let specs = vec![
        file("lines.txt", "bar\nfoo one\nbaz\nfoo two\nfoo"),
        file("first.txt", "foo first\nbar\n"),
        file("over64k.txt", over),
        file("exact64k.txt", exact),
        file("empty.txt", ""),
        file("bom8.txt", "\u{feff}foo bom\n"),
        file("with_nul.txt", "foo\n\0\nfoo\n"),
        fixture("utf16le_bom.txt", "utf16le_bom.txt"),
        file("d/nested.txt", "zzz\nfoo nested\n"),
    ];
    let mut cases = Vec::new();
    for p in [
        "foo",
        "\\Afoo",
        "(?-m)^foo",
        "\\Abar",
        "foo\\z",
        "(?-m)foo$",
        "bar\\z",
        "(?-m)^",
        "\\z",
        "^foo",
        "foo$",
        "\\bbar\\b",
        "x*",
        "needle|\\Afoo",
        "\\A",
    ] {
        cases.push(grep(p, None, None));
        cases.push(grep(p, Some("d"), None));
        cases.push(grep(p, None, Some("*.txt")));
    }
    check("haystack_edges", &specs, &cases, Mode::InProcess);

    // Around the 8 MiB a file is read whole up to (`PRELOAD_MAX`): a match
    // past it, none in a file under it, a NUL in the middle of one.
    let line = format!("{}\n", "z".repeat(99));
    let mut past = line.repeat(85_000); // 8.5 MB
    past.push_str("foo past 8 MiB\n");
    let under = line.repeat(30_000); // 3 MB
    let mut nul = line.repeat(20_000);
    nul.push_str("foo before\n\0\nfoo after\n");
    nul.push_str(&line.repeat(5_000));
    let specs = vec![
        file("past.txt", past),
        file("under.txt", under),
        file("with_nul.txt", nul),
    ];
    let cases = [
        grep("foo", None, None),
        grep("foo", None, Some("under*")),
        grep(r"\Afoo|foo$", None, None),
    ];
    check("haystack_edges_large", &specs, &cases, Mode::InProcess);

    // A walked file is checked piece by piece as it is read (64 KiB, then
    // 256 KiB at a time, each up to its last line end, only the first
    // piece kept for the searcher): a match across
    // the place where a read stops, a line longer than a piece, patterns
    // that see a piece's end (`$`, `\b`) and ones that only match a line
    // whole, in files that end with and without a line terminator.
    let filler = |n: usize| format!("{}\n", "w".repeat(n - 1));
    let across = |at: usize, needle: &str| {
        let mut s = filler(at - 3);
        s.push_str("xy ");
        s.push_str(needle);
        s.push_str(" tail\n");
        s.push_str(&filler(100_000));
        s
    };
    let mut long_line = "v".repeat(400_000);
    long_line.push_str(" foo inside a long line ");
    long_line.push_str(&"v".repeat(300_000));
    long_line.push('\n');
    let mut no_end = filler(65_536 + 262_144);
    no_end.push_str("last foo");
    let mut word_at_end = filler(65_536 - 4);
    word_at_end.push_str("foo");
    word_at_end.push_str(&"q".repeat(10));
    word_at_end.push('\n');
    let specs = vec![
        file("at64k.txt", across(65_536, "foo")),
        file("at320k.txt", across(65_536 + 262_144, "foo")),
        file("long_line.txt", long_line),
        file("no_end.txt", no_end),
        file("word_at_end.txt", word_at_end),
        file("clean.txt", filler(100).repeat(5_000)),
        // Longer than the 8 MiB a line is held for: checked all the way
        // as it is read, and a line past that left to the searcher.
        file("big_clean.txt", filler(100).repeat(90_000)),
        file("huge_line.txt", format!("{} foo\n", "u".repeat(8_500_000))),
    ];
    let cases = [
        grep("foo", None, None),
        grep("xy foo tail", None, None),
        grep(r"\bfoo\b", None, None),
        grep("foo$", None, None),
        grep(r"^last", None, None),
        grep("w$", None, Some("clean.txt")),
        grep(r"\bfoo", None, Some("word_at_end.txt")),
        grep("^$", None, None),
        grep("v foo", None, None),
        grep("u foo|early|late", None, None),
        grep("zzz_not_anywhere", None, None),
    ];
    check("preload_pieces", &specs, &cases, Mode::InProcess);

    // Past the first read, a candidate or a NUL means the file is searched
    // again from its start. In a tree of its own: a searcher's line buffer
    // grown by a long line in an earlier file makes it read more at once and
    // meet the NUL sooner, in rg as here, so which thread searched what
    // would decide the output.
    let specs = vec![
        file("late_nul.txt", {
            let mut s = filler(100).repeat(700);
            s.push_str("foo early\n");
            s.push_str(&filler(100).repeat(3_000));
            s.push_str("\0foo late\n");
            s
        }),
        file("late_match.txt", {
            let mut s = filler(100).repeat(4_000);
            s.push_str("foo late\n");
            s
        }),
    ];
    let cases = [
        grep("foo", None, None),
        grep("late", None, None),
        grep("zzz_not_anywhere", None, None),
    ];
    check("preload_pieces_reopened", &specs, &cases, Mode::InProcess);

    // The walking thread searches queued files when the walk is ahead, and
    // gives what is left back (between files, or in the middle of a large
    // one) once a helper waits for work: many small files with large ones
    // among them, matches early and late in both kinds.
    let mut specs = Vec::new();
    for d in 0..24 {
        for f in 0..30 {
            let mut s = filler(60).repeat(20 + f);
            if (d + f) % 37 == 0 {
                s.push_str("foo small\n");
            }
            specs.push(file(format!("d{d:02}/f{f:02}.txt"), s));
        }
        if d % 4 == 1 {
            let mut s = filler(100).repeat(8_000 + d * 500);
            if d % 8 == 1 {
                s.push_str("foo at the end of a large file\n");
            }
            specs.push(file(format!("d{d:02}/large.txt"), s));
        }
    }
    let cases = [
        grep("foo", None, None),
        grep("zzz_not_anywhere", None, None),
        grep("foo", Some("d01"), None),
    ];
    check("walker_passes", &specs, &cases, Mode::InProcess);
}

/// Nothing a call leaves behind changes the next one. A searcher's line
/// buffer grows to hold a 200 KB line and never shrinks; a searcher kept
/// for a later call would read 256 KiB at once where rg (a fresh process)
/// reads 64 KiB, and so meet `nul_late.bin`'s NUL in its first buffer
/// (nothing reported) instead of its second (64 KiB of matches).
#[test]
fn no_state_between_calls() {
    let mut big = vec![b'a'; 200_000];
    big.extend_from_slice(b"needle\n");
    let grow: Vec<Spec> = (0..8).map(|i| file(format!("big{i}.txt"), &big)).collect();
    let late = vec![file("nul_late.bin", nul_late())];
    for round in 0..3 {
        check(
            &format!("grow_buffers round {round}"),
            &grow,
            &[grep("needle", None, None)],
            Mode::InProcess,
        );
        check(
            &format!("after_grown_buffers round {round}"),
            &late,
            &[grep("needle", None, None), grep("needle", Some("."), None)],
            Mode::InProcess,
        );
    }
}

/// P3/J5: non-UTF-8 and odd file names, non-UTF-8 lines.
// Unix: names that are not UTF-8 or hold `\n`, `\\`, `"`; symlinks, FIFOs and
// sockets; modes and uid 65534; prlimit. Windows names: `windows.rs`.
#[cfg(unix)]
#[test]
fn odd_names() {
    let specs = vec![
        file(b"bad\xffname.txt", "needle nonutf8 name\n"),
        file(b"nl\nname.txt", "needle newline name\n"),
        file("tab\tname.txt", "needle tab name\n"),
        file("q\"uote.txt", "needle quote name\n"),
        file("back\\slash.txt", "needle backslash name\n"),
        file("ctl\x01name.txt", "needle control name\n"),
        file("sp ace/ünï cödé.txt", "needle unicode dir\n"),
        file(b"dir\xfe/inner.txt", "needle in non-utf8 dir\n"),
        file("lat.txt", b"needle \xe9t\xe9\n"),
        file("mixed.txt", b"needle ok\n\xff needle bad\n"),
    ];
    let mut cases = Vec::new();
    for p in ["*", "*.txt", "*name*", "**/inner.txt"] {
        cases.push(glob(p, None));
        cases.push(glob(p, Some(".")));
    }
    for p in ["needle", "(?-u:\\xff)", "é", "name"] {
        cases.push(grep(p, None, None));
        cases.push(grep(p, Some("."), None));
    }
    cases.push(grep("needle", None, Some("*name*")));
    check("odd_names", &specs, &cases, Mode::InProcess);
}

/// W4–W7: symlinks, loops, broken links, FIFOs and sockets, walked and
/// explicit; missing paths and a file path with a trailing slash.
// Unix: names that are not UTF-8 or hold `\n`, `\\`, `"`; symlinks, FIFOs and
// sockets; modes and uid 65534; prlimit. Windows names: `windows.rs`.
#[cfg(unix)]
#[test]
fn special_files() {
    let specs = vec![
        file("real/f.txt", "needle real\n"),
        file("file.txt", "needle file\n"),
        symlink("linkdir", "real"),
        symlink("linkfile", "file.txt"),
        symlink("broken", "nowhere"),
        symlink("loop1", "loop2"),
        symlink("loop2", "loop1"),
        symlink("self", "self"),
        symlink("real/up", ".."),
        fifo("pipe"),
        socket("sock"),
    ];
    let mut cases = Vec::new();
    let paths = [
        None,
        Some("."),
        Some("linkdir"),
        Some("linkdir/"),
        Some("linkfile"),
        Some("broken"),
        Some("loop1"),
        Some("self"),
        Some("sock"),
        Some("missing"),
        Some("missing/deeper"),
        Some("file.txt/"),
        Some("real/up"),
        Some("{root}/linkdir"),
    ];
    for path in paths.iter().chain([Some("pipe")].iter()) {
        cases.push(glob("*", *path));
    }
    for path in paths {
        cases.push(grep("needle", path, None));
    }
    check("special_files", &specs, &cases, Mode::InProcess);
}

/// S2/S3: the global stable mtime sort; ties over many directories keep the
/// sequential walk (readdir) order.
#[test]
fn mtime_ties() {
    let mut specs = Vec::new();
    for d in 0..12 {
        for f in 0..6 {
            let p = format!("d{d}/f{f}.txt");
            specs.push(file(&p, format!("needle {d} {f}\n")));
            specs.push(mtime(&p, ((d * 7 + f * 3) % 4) as u64));
        }
        specs.push(file(format!("top{d}.txt"), "top\n"));
        specs.push(mtime(format!("top{d}.txt"), (d % 3) as u64));
    }
    let mut cases = Vec::new();
    for path in [None, Some("."), Some("{root}"), Some("d3")] {
        cases.push(glob("*", path));
        cases.push(glob("**/f1.txt", path));
    }
    check("mtime_ties", &specs, &cases, Mode::InProcess);
    // Every file in one tick.
    let mut tied: Vec<Spec> = (0..40)
        .map(|i| file(format!("t{}/n{i}.txt", i % 5), "x\n"))
        .collect();
    tied.push(Spec::TieAll(7));
    check(
        "mtime_all_tied",
        &tied,
        &[glob("*", None), glob("*", Some("."))],
        Mode::InProcess,
    );
}

/// S2/S3 at scale, for the parallel glob walk: a few hundred directories
/// nested four deep, files interleaved with subdirectories in every listing,
/// three mtime buckets (and then all in one tick), symlinks and VCS dirs that
/// are not descended. Any slip in the (mtime, position path) order between
/// threads shows as a different byte order of rg's stdout.
#[test]
fn mtime_ties_many_dirs() {
    let mut specs = Vec::new();
    let mut n = 0u64;
    for a in 0..6 {
        for b in 0..5 {
            for c in 0..4 {
                for f in 0..3 {
                    // Names that sort differently from their creation
                    // order, so hash order, creation order and byte order
                    // all disagree.
                    let p = format!("a{a}/{}b{b}/c{c}x/f{}_{f}.rs", 9 - b, (n * 7) % 11);
                    specs.push(file(&p, "x\n"));
                    specs.push(mtime(&p, n % 3));
                    n += 1;
                }
                let p = format!("a{a}/{}b{b}/m{c}.txt", 9 - b);
                specs.push(file(&p, "m\n"));
                specs.push(mtime(&p, (n + 1) % 3));
                n += 1;
            }
            // (Windows: the tree without its symlinks, which only Unix builds.)
            if cfg!(unix) {
                specs.push(symlink(format!("a{a}/l{b}"), format!("{}b{b}", 9 - b)));
            }
            specs.push(file(format!("a{a}/.git/x{b}"), "v\n"));
        }
        specs.push(file(format!("top{a}.c"), "t\n"));
        specs.push(mtime(format!("top{a}.c"), a % 3));
    }
    let mut cases = Vec::new();
    for path in [None, Some("."), Some("./"), Some("{root}"), Some("a2")] {
        cases.push(glob("*", path));
        cases.push(glob("*.rs", path));
        cases.push(glob("**/c1x/**", path));
    }
    check("mtime_ties_many_dirs", &specs, &cases, Mode::InProcess);
    specs.retain(|s| !matches!(s, Spec::Mtime(..)));
    specs.push(Spec::TieAll(3));
    check(
        "mtime_ties_many_dirs_all_tied",
        &specs,
        &[glob("*", None), glob("*", Some("a1/")), glob("*.txt", None)],
        Mode::InProcess,
    );
}

/// Many directories of one file each, searched with few descriptors: rg
/// keeps a handful open; the engine's walk holds a directory's descriptor
/// until its files are searched, so it must bound how many it keeps when
/// the walk runs ahead of the searching threads (`native/serial_walk.rs:
/// MAX_LIVE_DIRS`). Without that bound this group fails with "Too many open
/// files".
// Unix: names that are not UTF-8 or hold `\n`, `\\`, `"`; symlinks, FIFOs and
// sockets; modes and uid 65534; prlimit. Windows names: `windows.rs`.
#[cfg(unix)]
#[test]
fn many_dirs_few_descriptors() {
    // Enough text per file that searching it with a regex takes longer
    // than listing a directory: the walk gets far ahead.
    let filler = "lorem ipsum dolor sit amet, consectetur adipiscing 12345\n".repeat(150);
    let mut specs = vec![
        file(".git/HEAD", "ref: main\n"),
        file(".gitignore", "skip*/\n"),
    ];
    for i in 0..40 {
        for j in 0..40 {
            specs.push(file(
                format!("d{i}/e{j}/f.txt"),
                format!("{filler}needle {i} {j}\n"),
            ));
        }
        specs.push(file(format!("skip{i}/f.txt"), "needle\n"));
        specs.push(file(format!("d{i}/.ignore"), "e3*\n"));
    }
    let cases = [
        grep("needle", None, None),
        grep("needle", Some("d7"), None),
        grep("needle 1", None, Some("d1*/**")),
        grep(r"\w+e\s+\d+\s+\d+$", None, None),
        glob("*", None),
    ];
    check(
        "many_dirs_few_descriptors",
        &specs,
        &cases,
        Mode::FewFds(128),
    );
}

/// X2: "No files were searched" (no path) vs exit 1 (explicit `.`).
#[test]
fn nothing_searched() {
    let cases = |extra: &[Case]| {
        let mut v = vec![
            grep("needle", None, None),
            grep("needle", Some("."), None),
            grep("needle", None, Some("*.none")),
            grep("needle", Some("."), Some("*.none")),
            grep("needle", None, Some("*")),
            grep("needle", None, Some("*.txt")),
            glob("*", None),
            glob("*", Some(".")),
            glob("*.none", None),
        ];
        v.extend_from_slice(extra);
        v
    };
    check("empty_dir", &[], &cases(&[]), Mode::InProcess);
    check(
        "all_ignored",
        &[
            file(".ignore", "*\n"),
            file("a.txt", "needle\n"),
            file("d/b.txt", "needle\n"),
        ],
        &cases(&[
            grep("needle", Some("a.txt"), None),
            grep("needle", Some("d"), None),
        ]),
        Mode::InProcess,
    );
    check(
        "hidden_only",
        &[file(".a.txt", "needle\n"), file(".d/b.txt", "needle\n")],
        &cases(&[grep("needle", Some(".d"), None)]),
        Mode::InProcess,
    );
}

/// W8/W9/W12/S4: permission cases, run as uid 65534 (root reads everything).
// Unix: names that are not UTF-8 or hold `\n`, `\\`, `"`; symlinks, FIFOs and
// sockets; modes and uid 65534; prlimit. Windows names: `windows.rs`.
#[cfg(unix)]
#[test]
fn permissions() {
    let specs = vec![
        file("ok.txt", "needle ok\n"),
        file("noread.txt", "needle secret\n"),
        mode("noread.txt", 0o000),
        file("nodir/inner.txt", "needle inner\n"),
        mode("nodir", 0o000),
        file(".git/HEAD", "needle head\n"),
        mode(".git", 0o000),
        // Readable but not searchable: names are listed, metadata (and so the
        // mtime) cannot be read: S4 sorts these last.
        file("rdonly/a.txt", "needle a\n"),
        file("rdonly/b.txt", "needle b\n"),
        file("rdonly/sub/c.txt", "needle c\n"),
        mode("rdonly", 0o444),
        file("z.txt", "needle z\n"),
    ];
    let mut cases = Vec::new();
    for path in [
        None,
        Some("."),
        Some("noread.txt"),
        Some("nodir"),
        Some("rdonly"),
        Some(".git"),
    ] {
        cases.push(glob("*", path));
        cases.push(grep("needle", path, None));
    }
    cases.push(grep("needle", None, Some("*")));
    cases.push(grep("needle", Some("."), Some("*")));
    check("permissions", &specs, &cases, Mode::Nobody);
}

/// A tree shaped for the tool level (`tools::configs`' small caps): top-level
/// groups of different sizes for the sampled glob page, lines longer than
/// the small preview cap, multi-byte characters at the cut, a flag-shaped
/// name, absolute and `..` paths, and a blank pattern (refused by the tool's
/// own check on both backends, searched for a space by rg).
#[test]
fn tool_caps() {
    let specs = vec![
        file("src/a.rs", "fn main() { needle(); }\n"),
        file(
            "src/b.txt",
            "needle in b\nno match here\nneedle again needle\n",
        ),
        file("src/deep/c.rs", "// needle deep\n"),
        file("src/.hidden.rs", "needle hidden rs\n"),
        file(
            "docs/readme.md",
            "# needle docs with a line longer than ten bytes\n",
        ),
        file("notes.md", "notes needle\n"),
        file("top.txt", "top needle\nalpha\n"),
        file("-dash.txt", "-foo needle\n"),
        file("space name.txt", "needle with space\n"),
        file("ünï.txt", "needle ünï ö ünï ö ünï ö\n"),
        file(".git/HEAD", "ref: refs/heads/main needle\n"),
        file(".gitignore", "ignored.txt\nbuild/\n"),
        file("ignored.txt", "needle ignored\n"),
        file("build/out.txt", "needle build\n"),
        file("vendor/x/1.rs", "needle v1\n"),
        file("vendor/x/2.rs", "needle v2\n"),
        file("vendor/y/3.rs", "needle v3\n"),
        dir("emptydir"),
        mtime("top.txt", 100),
        mtime("src/a.rs", 100),
        mtime("vendor/x/1.rs", 50),
    ];
    let mut cases = Vec::new();
    for path in [
        None,
        Some("."),
        Some("vendor"),
        Some("./vendor/"),
        Some("{root}"),
        Some("{root}/src/../vendor"),
        Some(".git"),
        Some("missing"),
        Some("-dash.txt"),
    ] {
        for p in ["*", "**/*.rs", "*.rs", "[", "*.none"] {
            cases.push(glob(p, path));
        }
        for p in [
            "needle",
            "-foo",
            "ö",
            "(unclosed",
            "nothing matches this",
            " ",
        ] {
            cases.push(grep(p, path, None));
        }
        for inc in ["*.txt", "ignored.txt", "{a"] {
            cases.push(grep("needle", path, Some(inc)));
        }
    }
    cases.push(grep("needle", Some(".."), None).cwd("vendor"));
    cases.push(glob("*", Some("../src")).cwd("vendor"));
    check("tool_caps", &specs, &cases, Mode::InProcess);
}

/// W7: grep on an explicit FIFO blocks in rg (it waits for a writer), so rg is
/// not run; both backends must return `Cancelled` once the token is set.
// Unix: names that are not UTF-8 or hold `\n`, `\\`, `"`; symlinks, FIFOs and
// sockets; modes and uid 65534; prlimit. Windows names: `windows.rs`.
#[cfg(unix)]
#[test]
fn explicit_fifo_grep_is_cancelled() {
    let Some(_env) = rg::env() else { return };
    let tree = Tree::build(&[fifo("pipe"), file("a.txt", "needle\n")]);
    let mut report = Report::new("explicit_fifo");
    let backends: Vec<Box<dyn SearchBackend>> = vec![
        Box::new(rg::reference_backend()),
        Box::new(NativeBackend::new()),
    ];
    for backend in backends {
        let label = format!("explicit_fifo: [{}] grep needle -- pipe", backend.name());
        if !crate::util::selected(&label) {
            continue;
        }
        report.count();
        let cancel = CancelToken::new();
        let mut req = GrepRequest::new("needle", tree.root()).path("pipe");
        req.cancel = cancel.clone();
        let (tx, rx) = mpsc::channel();
        let backend: std::sync::Arc<dyn SearchBackend> = backend.into();
        let b2 = backend.clone();
        thread::spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b2.grep(&req)));
            let _ = tx.send(r.map(|o| o.status).map_err(|_| ()));
        });
        thread::sleep(Duration::from_secs(1));
        cancel.cancel();
        // Not a timing assertion: a hang detector with a generous margin.
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(Ok(Status::Cancelled)) => {}
            Ok(Ok(other)) => {
                report.fail(format!("{label}\n  status {other:?}, expected Cancelled\n"))
            }
            Ok(Err(())) => report.fail(format!("{label}\n  panicked\n")),
            Err(_) => {
                // Unblock the reader so the thread can end, then fail.
                let _ = std::fs::OpenOptions::new()
                    .write(true)
                    .open(tree.root().join("pipe"));
                report.fail(format!(
                    "{label}\n  did not return within 60 s of cancellation\n"
                ));
            }
        }
    }
    report.finish();
}

/// The normaliser itself, on a hand-written stream: blocks sorted by path,
/// the three elapsed objects masked, the summary kept last, escaping kept.
#[test]
fn harness_normalizes_grep_output() {
    let stream = concat!(
        r#"{"type":"begin","data":{"path":{"text":"b"}}}"#,
        "\n",
        r#"{"type":"match","data":{"path":{"text":"b"},"lines":{"text":"x \"elapsed\":{1}\n"},"line_number":1,"absolute_offset":0,"submatches":[]}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"text":"b"},"binary_offset":null,"stats":{"elapsed":{"secs":0,"nanos":5,"human":"0.000000s"},"searches":1}}}"#,
        "\n",
        r#"{"type":"begin","data":{"path":{"text":"a"}}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"text":"a"},"binary_offset":null,"stats":{"elapsed":{"secs":0,"nanos":7,"human":"0.000000s"},"searches":1}}}"#,
        "\n",
        r#"{"data":{"elapsed_total":{"human":"0.1s","nanos":1,"secs":0},"stats":{"bytes_printed":1,"elapsed":{"human":"0.1s","nanos":1,"secs":0},"matches":0}},"type":"summary"}"#,
        "\n",
    );
    let want = concat!(
        r#"{"type":"begin","data":{"path":{"text":"a"}}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"text":"a"},"binary_offset":null,"stats":{"elapsed":"MASKED","searches":1}}}"#,
        "\n",
        r#"{"type":"begin","data":{"path":{"text":"b"}}}"#,
        "\n",
        r#"{"type":"match","data":{"path":{"text":"b"},"lines":{"text":"x \"elapsed\":{1}\n"},"line_number":1,"absolute_offset":0,"submatches":[]}}"#,
        "\n",
        r#"{"type":"end","data":{"path":{"text":"b"},"binary_offset":null,"stats":{"elapsed":"MASKED","searches":1}}}"#,
        "\n",
        r#"{"data":{"elapsed_total":"MASKED","stats":{"bytes_printed":1,"elapsed":"MASKED","matches":0}},"type":"summary"}"#,
        "\n",
    );
    let got = rg::normalize_grep(stream.as_bytes());
    assert_eq!(String::from_utf8_lossy(&got), want);
}

/// A typed path that starts with two `./` (`./.`, `././`, `././sub`). rg
/// walks it as typed, and ignore 0.4.29 strips `./` once from a directory's
/// ignore-file root (`GitignoreBuilder::new`) but twice from the candidate
/// (`Ignore::matched`, then `Gitignore::strip`), so the two no longer line
/// up: every ignore file at or below the root is matched against the path
/// relative to the CWD, and `/ig.txt` in `sub/.gitignore` stops matching
/// `sub/ig.txt`. The engine walks absolute paths, where the crate's roots
/// always line up, so it decides entries on rg's strings itself
/// (`native/rgignore.rs`).
#[test]
fn double_dot_slash_paths() {
    let specs = vec![
        file(".git/HEAD", "x\n"),
        file("sub/.gitignore", "/ig.txt\nsub/sub.txt\n"),
        file("sub/ig.txt", "needle\n"),
        file("sub/sub.txt", "needle\n"),
        file("sub/keep.txt", "needle\n"),
        file("sub/deep/.ignore", "/d.txt\n"),
        file("sub/deep/d.txt", "needle\n"),
    ];
    let mut cases = Vec::new();
    for path in [
        "./.",
        "././",
        "././sub",
        "./././sub",
        "././/sub",
        "./sub",
        ".",
    ] {
        cases.push(grep("needle", Some(path), None));
        cases.push(grep("needle", Some(path), Some("*.txt")));
    }
    cases.push(grep("needle", Some("./."), None).cwd("sub"));
    cases.push(grep("needle", Some("././deep"), None).cwd("sub"));
    check("double_dot_slash", &specs, &cases, Mode::InProcess);
}

/// A `.git` file whose `gitdir:` is relative (`git worktree add` with
/// `worktree.useRelativePaths`). ignore 0.4.29 (`dir.rs:
/// resolve_git_commondir`) opens `<gitdir>/commondir` relative to the
/// process's current directory, which for rg is the workdir: run from the
/// worktree's root, rg reads the main repository's `info/exclude`; from
/// elsewhere it does not.
#[test]
fn relative_gitdir_worktree() {
    let specs = vec![
        file("main/.git/HEAD", "x\n"),
        file("main/.git/info/exclude", "exc.txt\n"),
        file("main/.git/worktrees/dsh-rel-wt/commondir", "../..\n"),
        file("main/.git/worktrees/dsh-rel-wt/HEAD", "x\n"),
        file("wt/.git", "gitdir: ../main/.git/worktrees/dsh-rel-wt\n"),
        file("wt/exc.txt", "needle\n"),
        file("wt/a.txt", "needle\n"),
        file("wt2/.git", "gitdir: ../main/.git/worktrees/dsh-rel-wt\n"),
        file("wt2/exc.txt", "needle\n"),
        // An info/exclude that fails to parse, reached through a relative
        // gitdir: rg names it by the relative path it built.
        file("bad/.git/HEAD", "x\n"),
        file("bad/.git/info/exclude", "a{b\nexc.txt\n"),
        file("bad/.git/worktrees/dsh-rel-bad/commondir", "../..\n"),
        file("wt3/.git", "gitdir: ../bad/.git/worktrees/dsh-rel-bad\n"),
        file("wt3/exc.txt", "needle\n"),
        file("wt3/sub/x.txt", "needle\n"),
    ];
    let cases = vec![
        grep("needle", None, None).cwd("wt"),
        grep("needle", Some("."), None).cwd("wt"),
        grep("needle", Some(".."), None).cwd("wt"),
        grep("needle", None, None).cwd("wt2"),
        grep("needle", Some("wt"), None),
        grep("needle", None, None).cwd("wt3"),
        grep("needle", Some("sub"), None).cwd("wt3"),
    ];
    check("relative_gitdir", &specs, &cases, Mode::InProcess);
}

/// Ignore files that fail to parse, in the walked directories (reported
/// without changing the exit code, also when an include glob excludes the
/// ignore file itself) and in parents of the root (an error: exit 2), where
/// rg names the file by its absolute path even below the workdir (`.git/`).
#[test]
fn ignore_file_errors() {
    let specs = vec![
        file(".git/HEAD", "x\n"),
        file(".git/info/exclude", "a{b\nexc.txt\n"),
        file(".gitignore", "a{b\nok1.txt\na\\\n"),
        file(".ignore", b"lat\xe9.txt\nok2.txt\n"),
        file(".rgignore", "x{\n"),
        file("sub/.gitignore", "{z\nok3.txt\n"),
        file("sub/ok3.txt", "needle\n"),
        file("sub/s.txt", "needle\n"),
        file("ok1.txt", "needle\n"),
        file("ok2.txt", "needle\n"),
        file("exc.txt", "needle\n"),
        file("a.txt", "needle\n"),
        file("sub/deeper/.ignore", b"\xef\xbb\xbfok4.txt\r\n\\\r\n"),
        file("sub/deeper/ok4.txt", "needle\n"),
        file("sub/deeper/b.txt", "needle\n"),
    ];
    let mut cases = Vec::new();
    for path in [
        None,
        Some("."),
        Some("sub"),
        Some("sub/deeper"),
        Some(".git/"),
    ] {
        for inc in [None, Some("*.txt")] {
            cases.push(grep("needle", path, inc));
        }
    }
    for cwd in ["sub", "sub/deeper"] {
        cases.push(grep("needle", None, None).cwd(cwd));
        cases.push(grep("needle", Some(".."), Some("*.txt")).cwd(cwd));
    }
    check("ignore_file_errors", &specs, &cases, Mode::InProcess);
}

/// A relative `core.excludesFile`: ignore 0.4.29 opens it relative to the
/// process's current directory (`gitignore.rs: build_global`), which for rg
/// is the workdir. `HOME` is process-wide, so rg and the CLI run as separate
/// processes with their own `$HOME/.gitconfig`, the CLI from `/`.
#[test]
fn relative_excludes_file() {
    let Some(env) = rg::env() else { return };
    let tree = Tree::build(&[
        file("repo/.git/HEAD", "x\n"),
        file("repo/myexcl", "*.ex\n"),
        file("repo/a.ex", "needle\n"),
        file("repo/b.txt", "needle\n"),
        file("repo/sub/c.ex", "needle\n"),
        file("home/.gitconfig", "[core]\n\texcludesFile = myexcl\n"),
    ]);
    let home = tree.root().join("home");
    let mut report = Report::new("relative_excludes_file");
    let cases = [
        grep("needle", None, None).cwd("repo"),
        grep("needle", Some("."), None).cwd("repo"),
        grep("needle", Some("sub"), None).cwd("repo"),
        grep("needle", None, None).cwd("repo/sub"),
        grep("needle", Some("repo"), None),
    ];
    for case in cases {
        let label = format!("relative_excludes_file: {}", case.label());
        if !crate::util::selected(&label) {
            continue;
        }
        report.count();
        let cwd = tree.root().join(&case.cwd);
        let run =
            |program: &std::path::Path, args: Vec<std::ffi::OsString>, dir: &std::path::Path| {
                let mut cmd = std::process::Command::new(program);
                env.apply(&mut cmd);
                let out = cmd
                    .args(args)
                    .current_dir(dir)
                    .env("HOME", &home)
                    // Windows: `home_dir` reads USERPROFILE (rg::init).
                    .env("USERPROFILE", &home)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .expect("spawn");
                let text = String::from_utf8_lossy(&out.stderr).into_owned();
                rg::Raw {
                    stdout: out.stdout,
                    stderr: text.lines().map(str::to_string).collect(),
                    status: format!("exit {}", out.status.code().unwrap_or(-1)),
                }
            };
        let want = run(
            &env.rg,
            case.call.rg_argv().into_iter().map(Into::into).collect(),
            &cwd,
        );
        let got = run(
            &rg::dsh_search_exe(),
            case.call.cli_argv("native", &cwd),
            // The workdir comes from `--cwd`; the process's own current
            // directory must not matter.
            std::path::Path::new("/"),
        );
        if let Some(d) = rg::diff(&case.call, &want, &got) {
            report.fail(format!("[cli native] {label}\n{d}"));
        }
    }
    report.finish();
}
