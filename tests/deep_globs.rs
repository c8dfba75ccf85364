//! Globs nested deeper than any stack: `{a,` × N, `b`, `}` × N as glob's
//! pattern, grep's include and a line of an ignore file, against the real
//! rg 15.2.0 where rg can be given them, and through the servers and the
//! library on a small stack where it cannot crash them.

use std::path::Path;
use std::process::{Command, Stdio};

use dsh_search::config::Config;
use dsh_search::tool::{CallContext, Tools};
use dsh_search::{NativeBackend, SearchBackend};
use serde_json::json;

use crate::util;
use crate::util::rg::{Call, Raw};
use crate::util::served::Served;
use crate::util::ws::Ws;

/// `{a,` × `n`, `b`, `}` × `n`, with `tail` after.
fn nested(n: usize, tail: &str) -> String {
    format!("{}b{}{tail}", "{a,".repeat(n), "}".repeat(n))
}

/// `call` through the CLI's `--format raw` on `backend`.
fn raw_cli(backend: &str, call: &Call, cwd: &Path) -> Raw {
    let o = Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .args(call.cli_argv(backend, cwd))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("run dsh-search");
    Raw {
        stdout: o.stdout,
        stderr: String::from_utf8_lossy(&o.stderr)
            .lines()
            .map(str::to_string)
            .collect(),
        status: match o.status.code() {
            Some(c) => format!("exit {c}"),
            None => format!("{:?}", o.status),
        },
    }
}

/// The depths around rg's threshold (124 levels compile, 125 exceed the
/// regex nest limit) and far past it, as glob's pattern, grep's include,
/// and with a required extension (compiled alone, its regex named in the
/// error): each against the real rg, on both backends, byte for byte.
#[test]
fn nested_alternates_answer_as_rg() {
    let env = util::rg::env().expect("the reference rg 15.2.0 (scripts/test installs it)");
    let dir = Ws::new().with("a.txt", "hi\n");
    let cwd = dir.path().canonicalize().unwrap();
    let mut calls: Vec<(String, Call)> = Vec::new();
    for n in [1, 124, 125, 300, 20_000] {
        calls.push((
            format!("glob pattern, {n} levels"),
            Call::Glob {
                pattern: nested(n, ""),
                path: None,
            },
        ));
        calls.push((
            format!("grep include, {n} levels"),
            Call::Grep {
                pattern: "hi".into(),
                path: None,
                include: Some(nested(n, "")),
            },
        ));
    }
    for n in [124, 125, 20_000] {
        calls.push((
            format!("glob pattern with a required extension, {n} levels"),
            Call::Glob {
                pattern: nested(n, ".txt"),
                path: None,
            },
        ));
    }
    let mut failures = Vec::new();
    for (name, call) in &calls {
        let want = util::rg::run_rg(env, call, &cwd);
        assert!(
            want.status == "exit 0" || want.status == "exit 1" || want.status == "exit 2",
            "{name}: rg itself {}",
            want.status
        );
        for backend in ["native", "rg"] {
            let got = raw_cli(backend, call, &cwd);
            if let Some(d) = util::rg::diff(call, &want, &got) {
                failures.push(format!("{name} [{backend}]:\n{d}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// An ignore file's line 200 levels deep fails the file's glob set as rg
/// says (`error parsing pattern 0`, the search goes on); 20,000 levels
/// overflow rg's own walker thread, and the native engine answers as at
/// 200 levels instead of crashing.
#[test]
fn nested_alternates_in_an_ignore_file() {
    let env = util::rg::env().expect("the reference rg 15.2.0 (scripts/test installs it)");
    let call = Call::Grep {
        pattern: "hi".into(),
        path: None,
        include: None,
    };
    let shallow = Ws::new().with("a.txt", "hi\n");
    let cwd = shallow.path().canonicalize().unwrap();
    std::fs::write(cwd.join(".ignore"), nested(200, "\n")).unwrap();
    let want = util::rg::run_rg(env, &call, &cwd);
    assert_eq!(want.stderr, ["rg: error parsing pattern 0"]);
    let got = raw_cli("native", &call, &cwd);
    assert_eq!(util::rg::diff(&call, &want, &got), None);

    let deep = Ws::new().with("a.txt", "hi\n");
    let cwd = deep.path().canonicalize().unwrap();
    std::fs::write(cwd.join(".ignore"), nested(20_000, "\n")).unwrap();
    let got = raw_cli("native", &call, &cwd);
    // The same answer as at 200 levels, the root's name aside.
    let root = |r: &Raw| String::from_utf8_lossy(&r.stdout).contains("\"a.txt\"");
    assert!(root(&got), "{:?}", String::from_utf8_lossy(&got.stdout));
    assert_eq!(got.stderr, want.stderr);
    assert_eq!(got.status, want.status);
}

/// The reproduction: a 20,000-level pattern to a running `serve` and `mcp`,
/// as glob's pattern and grep's include; each answers rg's error, and the
/// server answers the next call.
#[test]
fn servers_survive_a_20000_level_glob() {
    let dir = Ws::new().with("a.txt", "hi\n");
    let cwd = dir.path().canonicalize().unwrap();
    let cwd_s = cwd.to_str().unwrap();
    let deep = nested(20_000, "");
    let calls = [
        ("glob", json!({"pattern": deep})),
        ("grep", json!({"pattern": "hi", "include": deep})),
    ];
    for backend in ["native", "rg"] {
        let mut serve = Served::start(&cwd, &["--backend", backend, "--cwd", cwd_s, "serve"]);
        for (i, (tool, args)) in calls.iter().enumerate() {
            serve.send(&json!({"id": i, "tool": tool, "arguments": args}));
            let answer = serve.recv();
            assert_eq!(
                answer["result"]["error"]["message"],
                format!("{tool} search failed (exit 2): rg: error parsing pattern 0"),
                "serve [{backend}] {tool}: {answer}"
            );
        }
        serve.send(&json!({"id": 9, "tool": "glob", "arguments": {"pattern": "*.txt"}}));
        assert_eq!(serve.recv()["result"]["content"], "a.txt", "[{backend}]");
        serve.close();
        assert!(
            serve.wait().success(),
            "serve [{backend}]: {}",
            serve.stderr()
        );

        let mut mcp = Served::start(&cwd, &["--backend", backend, "--cwd", cwd_s, "mcp"]);
        mcp.send(
            &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "1"}}}),
        );
        assert_eq!(mcp.recv()["id"], "init");
        mcp.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        for (i, (tool, args)) in calls.iter().enumerate() {
            mcp.send(&json!({"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": tool, "arguments": args}}));
            let answer = mcp.recv();
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("Error: {tool} search failed (exit 2): rg: error parsing pattern 0"),
                "mcp [{backend}] {tool}: {answer}"
            );
        }
        mcp.close();
        assert!(mcp.wait().success(), "mcp [{backend}]: {}", mcp.stderr());
    }
}

/// The library on a 256 KiB thread (smaller than any host's): glob and
/// grep with a 20,000-level glob answer rg's error; and a glob deeper than
/// any rg can be given (70,000 levels, 280 KB) is refused uncompiled.
#[test]
fn tools_on_a_small_stack() {
    let dir = Ws::new().with("a.txt", "hi\n");
    let cwd = dir.path().canonicalize().unwrap();
    let ctx = CallContext::new(cwd.clone()).session("s1");
    let tools = Tools::new(
        Config::default(),
        std::sync::Arc::new(NativeBackend::new()) as std::sync::Arc<dyn SearchBackend>,
    );
    let deep = nested(20_000, "");
    let deeper = nested(70_000, "");
    let answers = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            [
                tools.call("glob", &json!({"pattern": deep}), &ctx),
                tools.call("grep", &json!({"pattern": "hi", "include": deep}), &ctx),
                tools.call("glob", &json!({"pattern": deeper}), &ctx),
            ]
        })
        .unwrap()
        .join()
        .expect("no overflow");
    let msg = |i: usize| answers[i].error.as_ref().map(|e| e.message.clone());
    assert_eq!(
        msg(0).as_deref(),
        Some("glob search failed (exit 2): rg: error parsing pattern 0")
    );
    assert_eq!(
        msg(1).as_deref(),
        Some("grep search failed (exit 2): rg: error parsing pattern 0")
    );
    // The glob is quoted whole, so the seam keeps only the message's tail
    // (it is `SEARCH_FAILED`, as any over-long stderr); no crash, no walk.
    let refused = &answers[2].error.as_ref().expect("an error").message;
    let reason = "': alternate groups nested more than 65536 levels deep \
                  (more than rg can be given in one argument) [stderr truncated]";
    assert!(
        refused.ends_with(reason),
        "{}",
        &refused[refused.len().saturating_sub(300)..]
    );
}

/// Regexes of nested groups through the library on a 256 KiB thread: 127
/// levels (256 bytes, which compiled on the calling thread: 60 levels
/// overflowed 256 KiB in a debug build), 248 (the deepest rg accepts) and
/// 249 (past regex-syntax's nest limit): the answers rg 15.2.0 gives
/// (checked by hand, and the rg backend shows the same text: a match, a
/// match, `regex parse error`, exit 2).
#[test]
fn deep_regex_on_a_small_stack() {
    let dir = Ws::new().with("a.txt", "hi\n");
    let cwd = dir.path().canonicalize().unwrap();
    let ctx = CallContext::new(cwd.clone()).session("s1");
    let tools = Tools::new(
        Config::default(),
        std::sync::Arc::new(NativeBackend::new()) as std::sync::Arc<dyn SearchBackend>,
    );
    let nested = |n: usize| format!("{}hi{}", "(".repeat(n), ")".repeat(n));
    let answers = std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(move || {
            [127, 248, 249].map(|n| tools.call("grep", &json!({ "pattern": nested(n) }), &ctx))
        })
        .unwrap()
        .join()
        .expect("no overflow");
    for found in &answers[..2] {
        assert_eq!(found.content, "Found 1 match\n\na.txt\nLine 1: hi");
    }
    let refused = answers[2].error.as_ref().expect("an error");
    assert_eq!(
        refused.code(),
        Some("SEARCH_INVALID_PATTERN"),
        "{refused:?}"
    );
    assert!(refused.message.contains("regex parse error"), "{refused:?}");
}
