//! The search path's hostile cases: each is a reproduction that failed
//! before its fix, run as the user ran it (a real `dsh-search` process, a
//! real rg 15.2.0, real files in a temporary directory) on both backends
//! where the behaviour has one.

use crate::util;

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::util::rg::{Call, Raw};

use serde_json::json;

/// The two backends every search case runs on.
const BACKENDS: [&str; 2] = ["native", "rg"];

/// One named reproduction, run once per backend it applies to.
struct Case {
    name: &'static str,
    backends: &'static [&'static str],
    run: fn(backend: &str),
}

/// Run every case on its backends, each on a thread of its own (most of
/// the time is spent waiting for processes); a failure names the case and
/// the backend, and the others still run.
fn run_table(cases: &[Case]) {
    // The reference rg: missing or wrong, the test fails here.
    util::rg::env().expect("the reference rg 15.2.0 (scripts/test installs it)");
    let failed: Vec<String> = std::thread::scope(|scope| {
        let mut running = Vec::new();
        for case in cases {
            for backend in case.backends {
                let label = format!("{} [{backend}]", case.name);
                if !util::selected(&label) {
                    continue;
                }
                let run = case.run;
                running.push((label, scope.spawn(move || run(backend))));
            }
        }
        running
            .into_iter()
            .filter_map(|(label, t)| {
                let e = t.join().err()?;
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                Some(format!("{label}: {msg}"))
            })
            .collect()
    });
    assert!(
        failed.is_empty(),
        "{} failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// `dsh-search --backend <b> --cwd <cwd> <args…>`, stdin `/dev/null`.
fn dsh<S: AsRef<OsStr>>(backend: &str, cwd: &Path, args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .arg("--backend")
        .arg(backend)
        .arg("--cwd")
        .arg(cwd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run dsh-search")
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

// ------------------------------------------------------------ staging

/// The local disk's atomic write stages into a `.dsh-search-staging.*`
/// directory beside its target (`contract.md` §10); one in flight, or a
/// killed writer's left behind, is never listed, searched or reported by
/// the native engine: the same searches with and without it print the
/// same bytes. (The rg backend runs rg as it is, which sees it.)
fn own_staging_never_listed(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("d/a.txt"), "hello\n").unwrap();
    let searches: [&[&str]; 4] = [
        &["glob", "--format", "raw", "*"],
        &["grep", "--format", "raw", "hello"],
        &["glob", "*"],
        &["grep", "hello", "d"],
    ];
    let before: Vec<Output> = searches
        .iter()
        .map(|a| dsh(backend, dir.path(), a))
        .collect();
    let staging = dir.path().join("d/.dsh-search-staging.4242.0123456789ab");
    std::fs::create_dir(&staging).unwrap();
    std::fs::write(staging.join("dsh-search-staging"), "marker\n").unwrap();
    std::fs::write(staging.join("content"), "hello\n").unwrap();
    for (args, before) in searches.iter().zip(&before) {
        let after = dsh(backend, dir.path(), args);
        assert_eq!(
            after.status.code(),
            before.status.code(),
            "{args:?}: {after:?}"
        );
        assert_eq!(timeless(&text(&after)), timeless(&text(before)), "{args:?}");
        assert!(
            !text(&after).contains("staging"),
            "{args:?}: {}",
            text(&after)
        );
    }
    assert_eq!(text(&before[2]), "d/a.txt\n");
}

/// `text` with the values of rg's `elapsed` and `elapsed_total` objects
/// (which differ from run to run) removed.
fn timeless(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"elapsed") {
        let open = at + rest[at..].find('{').unwrap();
        let close = open + rest[open..].find('}').unwrap();
        out.push_str(&rest[..open]);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    out
}

// ------------------------------------------------------------ item 9

/// A glob whose one result is a file named `No files found` is a result
/// (exit 0), not an empty search (exit 1): emptiness is the result's typed
/// field, not its text.
fn file_named_like_the_empty_text(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("No files found"), "No matches found\n").unwrap();
    let o = dsh(backend, dir.path(), &["glob", "No*"]);
    assert_eq!(text(&o), "No files found\n");
    assert_eq!(o.status.code(), Some(0), "glob: {o:?}");
    let o = dsh(backend, dir.path(), &["glob", "*.absent"]);
    assert_eq!(
        (text(&o).as_str(), o.status.code()),
        ("No files found\n", Some(1))
    );
    let o = dsh(backend, dir.path(), &["grep", "nowhere"]);
    assert_eq!(
        (text(&o).as_str(), o.status.code()),
        ("No matches found\n", Some(1))
    );
}

// ------------------------------------------------------------ item 11

/// A `maxInlineBytes` smaller than the spill notice: the result stays
/// whole (the replacement would exceed the cap, `seed-reference.md` §3.9)
/// and no spill file is left behind that nothing points to.
fn inline_cap_smaller_than_the_notice(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ws = dir.path().join("ws");
    let spill = dir.path().join("spill");
    std::fs::create_dir(&ws).unwrap();
    let lines: String = (0..8).map(|i| format!("needle line {i}\n")).collect();
    std::fs::write(ws.join("a.txt"), lines).unwrap();
    let config = dir.path().join("config.json");
    let cfg = json!({"maxInlineBytes": 100, "spillRoot": spill});
    std::fs::write(&config, cfg.to_string()).unwrap();
    let o = dsh(
        backend,
        &ws,
        &[
            OsStr::new("--config"),
            config.as_os_str(),
            OsStr::new("--session"),
            OsStr::new("s1"),
            OsStr::new("grep"),
            OsStr::new("needle"),
        ],
    );
    let out = text(&o);
    assert!(out.len() > 100, "the text is over the cap: {out:?}");
    assert!(out.starts_with("Found 8 matches\n\na.txt\nLine 1: needle line 0\n"));
    assert!(!out.contains("Omitted"), "{out}");
    let left: Vec<_> = walkdir::WalkDir::new(&spill)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().to_path_buf())
        .collect();
    assert!(left.is_empty(), "orphan spill files: {left:?}");
}

/// `offset 1e308` is reported as given, the way the original writes a
/// number, not as the saturated `u64`.
fn offset_reported_as_given(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").unwrap();
    let cases = [
        ("1e308", "offset 1e+308 is out of range"),
        (
            "18446744073709551616",
            "offset 18446744073709552000 is out of range",
        ),
        ("40", "offset 40 is out of range"),
    ];
    for (offset, want) in cases {
        let args = format!(r#"{{"file_path":"a.txt","offset":{offset}}}"#);
        let o = dsh(backend, dir.path(), &["call", "read", &args]);
        assert!(text(&o).contains(want), "{offset}: {}", text(&o));
        assert_eq!(o.status.code(), Some(2));
    }
}

// ------------------------------------------------------------ item 8

/// `grep search failed` quotes rg's messages in byte order on both
/// backends (D5), whatever order rg's threads met them in: twelve
/// unreadable directories, searched as uid 65534 (root reads everything).
fn search_failed_messages_in_byte_order(backend: &str) {
    use std::os::unix::fs::PermissionsExt;
    let env = util::rg::env().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("a.txt"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    for i in 1..=12 {
        let d = dir.path().join(format!("d{i}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o000)).unwrap();
    }
    let bin = env.ctl.join("bin");
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(bin.join("dsh-search"))
        .args(["--backend", backend, "--cwd"])
        .arg(dir.path())
        .args(["grep", "x"])
        .env("DSH_SEARCH_RG", bin.join("rg"))
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .expect("setpriv (util-linux)");
    let mut want: Vec<String> = (1..=12)
        .map(|i| format!("rg: ./d{i}: Permission denied (os error 13)"))
        .collect();
    want.sort();
    assert_eq!(
        text(&o),
        format!("Error: grep search failed (exit 2): {}\n", want.join("\n"))
    );
}

/// 2,500 nested directories with a match at the bottom: rg lists and opens
/// by path, so it fails with `File name too long (os error 36)` at the
/// first directory whose path reaches `PATH_MAX`; the native engine's
/// descriptor-relative walk found the match. Both must print what rg
/// prints, and the tool text must be the same on both backends.
fn paths_past_path_max_as_rg(backend: &str) {
    let env = util::rg::env().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("top.txt"), "x\n").unwrap();
    // Built relative to each new directory's descriptor: the whole path is
    // too long for any one call that takes a path.
    {
        use rustix::fs::{mkdirat, openat, Mode, OFlags};
        let mut fd = openat(
            rustix::fs::CWD,
            dir.path(),
            OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        for _ in 0..2500 {
            mkdirat(&fd, "d", Mode::from_raw_mode(0o755)).unwrap();
            fd = openat(&fd, "d", OFlags::DIRECTORY, Mode::empty()).unwrap();
        }
        let f = openat(
            &fd,
            "f.txt",
            OFlags::CREATE | OFlags::WRONLY,
            Mode::from_raw_mode(0o644),
        )
        .unwrap();
        rustix::io::write(&f, b"x\n").unwrap();
    }
    let call = Call::Grep {
        pattern: "x".into(),
        path: None,
        include: None,
    };
    let want = util::rg::run_rg(env, &call, dir.path());
    assert_eq!(want.status, "exit 2");
    let got = raw_cli(backend, &call, dir.path());
    if let Some(d) = util::rg::diff(&call, &want, &got) {
        panic!("{d}");
    }
    // glob lists by path too (walkdir), and must not fail earlier for
    // the engine's longer absolute paths.
    let glob = Call::Glob {
        pattern: "*.txt".into(),
        path: None,
    };
    let want = util::rg::run_rg(env, &glob, dir.path());
    let got = raw_cli(backend, &glob, dir.path());
    if let Some(d) = util::rg::diff(&glob, &want, &got) {
        panic!("glob: {d}");
    }
    // A copy in memory (`--fs mem`) holds the whole tree, and fails where
    // rg fails, not where the copy's absolute paths reach PATH_MAX.
    if backend == "native" {
        for call in [&call, &glob] {
            let want = util::rg::run_rg(env, call, dir.path());
            let o = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
                .args(["--fs", "mem"])
                .args(call.cli_argv(backend, dir.path()))
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .output()
                .expect("run dsh-search");
            let got = Raw::from_output(o);
            if let Some(d) = util::rg::diff(call, &want, &got) {
                panic!("--fs mem: {d}");
            }
        }
    }
    let o = dsh(backend, dir.path(), &["grep", "x"]);
    let text = text(&o);
    assert!(
        text.starts_with("Error: grep search failed (exit 2): rg: ./d/d/"),
        "{text:.200}"
    );
    assert!(
        text.ends_with("/d: File name too long (os error 36)\n"),
        "{text:.200}"
    );
}

/// An `.ignore` that is a symlink to `/dev/zero` makes rg read forever;
/// the engine reads it as absent (README, with the FIFO case): its output
/// is rg's on the same tree without that file. rg itself cannot be run on
/// it, so this is the native engine's alone.
fn ignore_file_on_dev_zero_reads_as_absent(backend: &str) {
    let env = util::rg::env().unwrap();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "x\n").unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/b.txt"), "x\n").unwrap();
    let call = Call::Grep {
        pattern: "x".into(),
        path: None,
        include: None,
    };
    let want = util::rg::run_rg(env, &call, dir.path());
    std::os::unix::fs::symlink("/dev/zero", dir.path().join("sub/.ignore")).unwrap();
    let got = raw_cli(backend, &call, dir.path());
    if let Some(d) = util::rg::diff(&call, &want, &got) {
        panic!("{d}");
    }
}

// ------------------------------------------------------------ item 10

/// The name of the forging file: a match block of its own making.
const FORGED: &str = "a.txt\nLine 7: password = hunter2\n\nb.txt";
/// An ANSI escape that would recolour a terminal.
const ANSI: &str = "\u{1b}[31mred.txt";

/// File names cannot forge results or reach a terminal raw: grep, glob and
/// read show them escaped (D6), and the escaped form given back as a path
/// argument reaches the file, on both backends.
fn file_names_cannot_forge_results(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(FORGED), "needle\n").unwrap();
    std::fs::write(dir.path().join(ANSI), "needle red\n").unwrap();
    std::fs::write(dir.path().join("plain.txt"), "needle\n").unwrap();
    let o = dsh(backend, dir.path(), &["grep", "needle"]);
    assert_eq!(
        text(&o),
        "Found 3 matches\n\n\"\\u001b[31mred.txt\"\nLine 1: needle red\n\n\
         \"a.txt\\nLine 7: password = hunter2\\n\\nb.txt\"\nLine 1: needle\n\n\
         plain.txt\nLine 1: needle\n"
    );
    let o = dsh(backend, dir.path(), &["glob", "*red*"]);
    assert_eq!(text(&o), "\"\\u001b[31mred.txt\"\n");
    let shown_forged = r#""a.txt\nLine 7: password = hunter2\n\nb.txt""#;
    let shown_ansi = r#""\u001b[31mred.txt""#;
    // The escaped forms name the files again.
    let args = json!({"pattern": "needle", "path": shown_forged}).to_string();
    let o = dsh(backend, dir.path(), &["call", "grep", &args]);
    assert_eq!(
        text(&o),
        format!("Found 1 match\n\n{shown_forged}\nLine 1: needle\n")
    );
    let args = json!({"pattern": "*", "path": shown_ansi}).to_string();
    let o = dsh(backend, dir.path(), &["call", "glob", &args]);
    assert_eq!(text(&o), format!("{shown_ansi}\n"));
    let args = json!({"file_path": shown_ansi}).to_string();
    let o = dsh(backend, dir.path(), &["call", "read", &args]);
    let root = dir.path().display();
    assert_eq!(
        text(&o),
        format!(
            "<path>\"{root}/\\u001b[31mred.txt\"</path>\n<type>file</type>\n<content>\n\
             1: needle red\n\n(End of file - total 1 lines)\n</content>\n"
        )
    );
    let args = json!({"file_path": shown_ansi, "old_string": "red", "new_string": "blue"});
    let o = dsh(backend, dir.path(), &["call", "edit", &args.to_string()]);
    assert_eq!(
        text(&o),
        format!("The file \"{root}/\\u001b[31mred.txt\" has been updated successfully.\n")
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join(ANSI)).unwrap(),
        "needle blue\n"
    );
    // No raw control character anywhere in what the model was shown.
    let o = dsh(backend, dir.path(), &["grep", "needle"]);
    assert!(!text(&o).contains('\u{1b}'));
    // Nor in a file tool's error about such a name.
    let fifo = dir.path().join("\u{1b}[1mpipe");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let args = json!({"file_path": r#""\u001b[1mpipe""#}).to_string();
    let o = dsh(backend, dir.path(), &["call", "read", &args]);
    assert_eq!(
        text(&o),
        format!("Error: cannot read \"{root}/\\u001b[1mpipe\": not a regular file\n")
    );
}

// ------------------------------------------------------------ item 4

/// Run `call` through the CLI's `--format raw` on `backend`.
fn raw_cli(backend: &str, call: &Call, cwd: &Path) -> Raw {
    let o = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .args(call.cli_argv(backend, cwd))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run dsh-search");
    let text = String::from_utf8_lossy(&o.stderr);
    Raw {
        stdout: o.stdout,
        stderr: text.lines().map(str::to_string).collect(),
        status: match o.status.code() {
            Some(c) => format!("exit {c}"),
            None => format!("{:?}", o.status),
        },
    }
}

/// `elapsed` objects masked: the one thing rg's output for one file may
/// differ in from run to run.
fn mask_elapsed(out: &[u8]) -> Vec<u8> {
    // `"elapsed":{` and `"elapsed_total":{`.
    let key = b"\"elapsed";
    let mut masked = Vec::with_capacity(out.len());
    let mut rest = out;
    while let Some(i) = rest.windows(key.len()).position(|w| w == key) {
        let Some(open) = rest[i..].iter().position(|&b| b == b'{') else {
            break;
        };
        let key = &rest[i..i + open + 1];
        masked.extend_from_slice(&rest[..i + key.len()]);
        rest = &rest[i + key.len()..];
        let close = rest.iter().position(|&b| b == b'}').unwrap_or(rest.len());
        masked.extend_from_slice(b"MASKED");
        rest = &rest[close..];
    }
    masked.extend_from_slice(rest);
    masked
}

/// [`util::rg::diff`] for one explicit file, whose events have one order:
/// the elapsed times masked, the rest compared as bytes (its JSON
/// normalisation takes seconds on the 17 MiB lines here).
fn single_file_diff(call: &Call, want: &Raw, got: &Raw) -> Option<String> {
    let (w, g) = (mask_elapsed(&want.stdout), mask_elapsed(&got.stdout));
    if w == g && want.stderr == got.stderr && want.status == got.status {
        return None;
    }
    let small = |r: &Raw, out: Vec<u8>| Raw {
        stdout: if out.len() > 1 << 20 {
            out[..1 << 20].to_vec()
        } else {
            out
        },
        ..r.clone()
    };
    util::rg::diff(call, &small(want, w), &small(got, g))
        .or_else(|| Some("the outputs differ past their first MiB".to_string()))
}

/// Large explicit files, built once: everything the windowed search of an
/// explicit file must get right, in files past the whole-file limit.
fn big_tree() -> &'static Path {
    static TREE: OnceLock<tempfile::TempDir> = OnceLock::new();
    TREE.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let mib = 1 << 20;
        // All NUL, one line of 80 MiB (`truncate -s`: no disk used).
        let sparse = std::fs::File::create(dir.path().join("sparse.bin")).unwrap();
        sparse.set_len(80 * mib).unwrap();
        // 17 MiB of lines: matches around the 8 MiB window edge, a matched
        // line with a NUL past the first 64 KiB, a last line without a
        // terminator. (A long line without a match: sparse.bin.)
        let mut t = Vec::with_capacity(48 * mib as usize);
        let mut i = 0;
        while t.len() < 8 * mib as usize + 4096 {
            let near = (8 * mib as usize).abs_diff(t.len()) < 2048;
            if near || i % 40_000 == 0 {
                t.extend_from_slice(format!("needle {i} here\n").as_bytes());
            } else {
                t.extend_from_slice(format!("line {i} with some words\n").as_bytes());
            }
            i += 1;
        }
        t.extend_from_slice(b"a needle\0with a NUL\n");
        t.extend_from_slice(b"after the NUL, needle\n");
        while t.len() < 17 * mib as usize {
            t.extend_from_slice(format!("line {i} with some words\n").as_bytes());
            i += 1;
        }
        for j in 0..1000 {
            t.extend_from_slice(format!("tail {j} needle\n").as_bytes());
        }
        t.extend_from_slice(b"last needle, no terminator");
        std::fs::write(dir.path().join("lines.txt"), &t).unwrap();
        // A matching line past the held-line limit, between short ones.
        let mut l = b"one needle\n".repeat(1000);
        l.extend(std::iter::repeat_n(b'b', 17 * mib as usize));
        l.extend_from_slice(b" needle\n");
        l.extend_from_slice(&b"two needle\n".repeat(1000));
        std::fs::write(dir.path().join("longmatch.txt"), &l).unwrap();
        // Binary data in the first 64 KiB: bytes_searched stops there.
        let mut h = b"head\0er\n".to_vec();
        h.extend_from_slice(&t);
        std::fs::write(dir.path().join("binhead.bin"), &h).unwrap();
        // A byte-order mark: the searcher transcodes it as a stream.
        let mut b = b"\xEF\xBB\xBF".to_vec();
        b.extend_from_slice(&t);
        std::fs::write(dir.path().join("bom.txt"), &b).unwrap();
        dir
    })
    .path()
}

/// `grep <pattern> <explicit file>` for files over the whole-file limit
/// (16 MiB), the windows (8 MiB) and the held-line limit (16 MiB), sparse
/// and not: the CLI's raw output is rg's, byte for byte.
fn big_explicit_files_as_rg(backend: &str) {
    let env = util::rg::env().unwrap();
    let root = big_tree();
    let cases = [
        ("x", "sparse.bin"),
        ("a.*b", "sparse.bin"),
        ("needle", "lines.txt"),
        ("^needle", "lines.txt"),
        ("needle$", "lines.txt"),
        (r"\bneedle\b", "lines.txt"),
        ("absent", "lines.txt"),
        ("b needle", "longmatch.txt"),
        ("needle.*", "longmatch.txt"),
        ("needle", "binhead.bin"),
        ("needle", "bom.txt"),
    ];
    // The rg backend passes rg's output through: two cases show it.
    let mut failed = Vec::new();
    for (i, &(pattern, path)) in cases.iter().enumerate() {
        if backend == "rg" && ![0, 7].contains(&i) {
            continue;
        }
        let call = Call::Grep {
            pattern: pattern.into(),
            path: Some(path.into()),
            include: None,
        };
        let want = util::rg::run_rg(env, &call, root);
        let got = raw_cli(backend, &call, root);
        if let Some(d) = single_file_diff(&call, &want, &got) {
            failed.push(format!("grep {pattern:?} {path}:\n{d}"));
        }
    }
    // The tool's text under the raw budget (20,000,000 bytes): the 17 MiB
    // matching line fits, on both backends alike.
    if backend == "native" {
        for pattern in ["b needle", "needle.*"] {
            let native = dsh("native", root, &["grep", pattern, "longmatch.txt"]);
            let rg = dsh("rg", root, &["grep", pattern, "longmatch.txt"]);
            if native.stdout != rg.stdout {
                failed.push(format!(
                    "tool grep {pattern:?}: native {:.300} / rg {:.300}",
                    text(&native),
                    text(&rg)
                ));
            }
        }
    }
    assert!(failed.is_empty(), "{}", failed.join("\n"));
}

/// `truncate -s 1T huge.bin; dsh-search grep x huge.bin` aborted reading
/// the file whole. Under an address-space limit far below the file, the
/// search of a 2 GiB sparse file (its first 64 MiB are enough to show the
/// memory stays bounded) must run in bounded memory.
fn huge_sparse_file_in_bounded_memory(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(dir.path().join("huge.bin")).unwrap();
    f.set_len(1 << 40).unwrap();
    let mut cli = Command::new("prlimit")
        .arg("--as=1073741824")
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_dsh-search"))
        .args([
            "grep",
            "--format",
            "raw",
            "--backend",
            backend,
            "x",
            "huge.bin",
        ])
        .current_dir(dir.path())
        .env("DSH_SEARCH_THREADS", "2")
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("prlimit (util-linux)");
    // Past the first windows (a 1 TiB file takes minutes to read): still
    // searching, not aborted. Then stop it.
    let start = Instant::now();
    let mut read = 0;
    while start.elapsed() < Duration::from_secs(60) && read < 200 << 20 {
        if let Some(st) = cli.try_wait().unwrap() {
            panic!("ended early: {st:?}");
        }
        read = std::fs::read_to_string(format!("/proc/{}/io", cli.id()))
            .ok()
            .and_then(|io| {
                io.lines().find_map(|l| {
                    l.strip_prefix("rchar: ")
                        .map(|n| n.trim().parse().unwrap_or(0))
                })
            })
            .unwrap_or(0);
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive = cli.try_wait().unwrap().is_none();
    let _ = cli.kill();
    let out = cli.wait_with_output().unwrap();
    assert!(alive, "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(read >= 200 << 20, "read only {read} bytes in a minute");
}

// ------------------------------------------------------------ item 5

/// The names of `pid`'s threads (`/proc/<pid>/task/*/comm`).
fn thread_names(pid: u32) -> Vec<String> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("comm")).ok())
        .map(|c| c.trim().to_string())
        .collect()
}

/// Compiling `\w{3000}` takes seconds (and then fails with rg's size-limit
/// text); under `timeoutMs` 100 the call ends with the timeout while the
/// compile still runs. Shown without a clock: when the server answers, the
/// native engine's compile thread is still alive, so the answer did not
/// wait for it. The rg backend stops rg the same way.
fn regex_compile_honours_the_deadline(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.txt"), "word\n").unwrap();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"timeoutMs": 100}"#).unwrap();
    let cfg = config.to_str().unwrap();
    let cwd = dir.path().to_str().unwrap();
    let mut server = util::served::Served::start(
        dir.path(),
        &["--backend", backend, "--config", cfg, "--cwd", cwd, "serve"],
    );
    server.send(&json!({"id": 1, "tool": "grep", "arguments": {"pattern": "\\w{3000}"}}));
    let answer = server.recv();
    let threads = thread_names(server.pid());
    assert_eq!(
        answer["result"]["content"], "Error: tool call timed out after 100ms",
        "{answer}"
    );
    if backend == "native" {
        assert!(
            threads.iter().any(|t| t.starts_with("dsh-search-rege")),
            "the answer waited for the compile: threads {threads:?}"
        );
    }
    // With a deadline far off (the compile takes seconds, more on a busy
    // machine), the compile's own error is rg's, on both.
    server.close();
    let _ = server.wait();
    std::fs::write(&config, r#"{"timeoutMs": 600000}"#).unwrap();
    let o = dsh(
        backend,
        dir.path(),
        &["--config", cfg, "grep", "\\w{3000}", "a.txt"],
    );
    assert_eq!(
        text(&o),
        "Error: grep search failed (exit 2): rg: compiled regex exceeds size limit of 104857600\n"
    );
}

// ------------------------------------------------------------ item 6

/// The pids of `parent`'s children, from /proc.
fn children(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`; comm may hold spaces and parentheses.
        let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
        let ppid = after.split_whitespace().nth(1).and_then(|p| p.parse().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

/// Whether `pid` still runs (a zombie has ended; only its entry is left).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let after = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
            !matches!(after.split_whitespace().next(), Some("Z" | "X"))
        }
        Err(_) => false,
    }
}

/// Wait for `done` with a generous bound (a liveness check, not a timing
/// assertion: the machine may be slow, it must not be forever).
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(30), "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `mkfifo p; dsh-search --backend rg grep x p`, then `kill -9` of the
/// CLI: rg, blocked on the FIFO in a process group of its own, must die
/// with it instead of running on forever.
fn rg_dies_with_a_killed_cli(backend: &str) {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("p");
    let st = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(st.success());
    let mut cli = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .args(["--backend", backend, "--cwd"])
        .arg(dir.path())
        .args(["grep", "x", "p"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut rg = Vec::new();
    eventually("rg started", || {
        rg = children(cli.id())
            .into_iter()
            .filter(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "rg")
            })
            .collect();
        !rg.is_empty()
    });
    let _ = cli.kill(); // SIGKILL: no handler runs
    let _ = cli.wait();
    let leftover = rg.clone();
    let start = Instant::now();
    while rg.iter().any(|&p| alive(p)) && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let orphans: Vec<u32> = leftover.into_iter().filter(|&p| alive(p)).collect();
    for &p in &orphans {
        // Clean up what this test started before failing.
        let _ = Command::new("kill").arg("-9").arg(p.to_string()).status();
    }
    assert!(
        orphans.is_empty(),
        "rg outlived its killed parent: {orphans:?}"
    );
}

#[test]
fn harden_search() {
    let both: &'static [&'static str] = &BACKENDS;
    run_table(&[
        Case {
            name: "our own staging directories are never listed nor searched",
            backends: &["native"],
            run: own_staging_never_listed,
        },
        Case {
            name: "a file named `No files found` is a result (exit 0)",
            backends: both,
            run: file_named_like_the_empty_text,
        },
        Case {
            name: "maxInlineBytes under the notice: text kept whole, no orphan spill",
            backends: both,
            run: inline_cap_smaller_than_the_notice,
        },
        Case {
            name: "offset 1e308 is reported as given",
            backends: &["native"],
            run: offset_reported_as_given,
        },
        Case {
            name: "search failed lists rg's messages in byte order (D5)",
            backends: both,
            run: search_failed_messages_in_byte_order,
        },
        Case {
            name: "paths past PATH_MAX fail as rg fails",
            backends: both,
            run: paths_past_path_max_as_rg,
        },
        Case {
            name: "an .ignore symlinked to /dev/zero reads as absent",
            backends: &["native"],
            run: ignore_file_on_dev_zero_reads_as_absent,
        },
        Case {
            name: "file names cannot forge results (shown escaped, reachable escaped)",
            backends: both,
            run: file_names_cannot_forge_results,
        },
        Case {
            name: "explicit files past 16 MiB: rg's output, in windows",
            backends: both,
            run: big_explicit_files_as_rg,
        },
        Case {
            name: "a 1 TiB sparse explicit file is searched in bounded memory",
            backends: &["native"],
            run: huge_sparse_file_in_bounded_memory,
        },
        Case {
            name: "compiling \\w{3000} stops at timeoutMs 100",
            backends: both,
            run: regex_compile_honours_the_deadline,
        },
        Case {
            name: "rg dies with a CLI killed by SIGKILL",
            backends: &["rg"],
            run: rg_dies_with_a_killed_cli,
        },
    ]);
}
