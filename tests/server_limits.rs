//! What a client may cost either server (`contract.md` §12, "Limits"):
//! a client that writes and never reads, a request line of millions of
//! values, the arguments' open root object, and a soak of 20,000 mixed
//! calls. Each case runs on both servers, as real processes measured
//! through `/proc`.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::served::Served;
use crate::util::ws::Ws;

/// A memory bound no server state of this size comes near (the servers
/// run at 10–60 MB), and far below what an unbounded server reaches on the
/// same input (0.3–0.8 GB measured).
const MAX_HWM_KIB: u64 = 200 << 10;

/// More threads than a bounded server has (64 workers and a few of its
/// own), far fewer than Tokio's blocking pool would grow to (512).
const MAX_THREADS: u64 = 100;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Server {
    Serve,
    Mcp,
}

fn start(server: Server, ws: &Ws) -> Served {
    match server {
        Server::Serve => Served::spawn(&mut ws.cmd(&["serve"])),
        Server::Mcp => {
            let mut s = Served::spawn(&mut ws.cmd(&["mcp"]));
            s.send(
                &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "limits-test", "version": "1"}}}),
            );
            assert_eq!(s.recv()["id"], "init");
            s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            s
        }
    }
}

/// A call of `tool` as `server`'s request line.
fn call(server: Server, id: u64, tool: &str, arguments: Value) -> Value {
    match server {
        Server::Serve => json!({"id": id, "tool": tool, "arguments": arguments}),
        Server::Mcp => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                              "params": {"name": tool, "arguments": arguments}}),
    }
}

/// A call's text result and whether it is an error.
fn outcome(server: Server, answer: &Value) -> (String, bool) {
    let (text, is_error) = match server {
        Server::Serve => (&answer["result"]["content"], &answer["result"]["isError"]),
        Server::Mcp => (
            &answer["result"]["content"][0]["text"],
            &answer["result"]["isError"],
        ),
    };
    let text = text
        .as_str()
        .unwrap_or_else(|| panic!("no result: {answer}"));
    (text.to_string(), is_error.as_bool().unwrap())
}

/// What a flooding client writes.
#[derive(Clone, Copy, Debug)]
enum Flood {
    /// `definitions` (serve) or `tools/list` (mcp): large answers.
    Listing,
    /// Lines that are not JSON: small error answers.
    Malformed,
    /// Tool calls (a glob): answers after work on a worker thread.
    Calls,
}

impl Flood {
    /// Enough lines that answers kept in memory would pass
    /// [`MAX_HWM_KIB`], or calls run at once would pass [`MAX_THREADS`].
    fn lines(self) -> usize {
        match self {
            Flood::Listing => 30_000,
            Flood::Malformed => 200_000,
            Flood::Calls => 5_000,
        }
    }

    fn line(self, server: Server, i: usize) -> String {
        match (self, server) {
            (Flood::Listing, Server::Serve) => json!({"id": i, "definitions": true}).to_string(),
            (Flood::Listing, Server::Mcp) => {
                json!({"jsonrpc": "2.0", "id": i, "method": "tools/list"}).to_string()
            }
            (Flood::Malformed, _) => "x".to_string(),
            (Flood::Calls, _) => {
                call(server, i as u64, "glob", json!({"pattern": "f1.txt"})).to_string()
            }
        }
    }

    /// Check one answer; its id (`None` for a malformed line's).
    fn check(self, server: Server, answer: &Value) -> Option<u64> {
        match self {
            Flood::Listing => {
                let listed = match server {
                    Server::Serve => &answer["definitions"],
                    Server::Mcp => &answer["result"]["tools"],
                };
                assert_eq!(listed.as_array().map(Vec::len), Some(5), "{answer}");
            }
            Flood::Malformed => {
                assert_eq!(answer["id"], Value::Null, "{answer}");
                let why = match server {
                    Server::Serve => &answer["error"],
                    Server::Mcp => &answer["error"]["message"],
                };
                assert_eq!(
                    why,
                    "the line is not JSON: expected value at line 1 column 1"
                );
                return None;
            }
            Flood::Calls => {
                assert_eq!(outcome(server, answer), ("f1.txt".to_string(), false));
            }
        }
        Some(answer["id"].as_u64().unwrap())
    }
}

/// A client writes `flood.lines()` lines and reads nothing until the
/// server stops reading (the writer stalls) or takes them all; then it
/// reads every answer. The server's peak memory and threads stay bounded,
/// and every request is answered once, correctly.
fn flood(server: Server, flood: Flood) {
    let dir = Ws::needles(3);
    let mut s = start(server, &dir);
    s.pause_reading();
    let n = flood.lines();
    let written = Arc::new(AtomicUsize::new(0));
    let mut stdin = s.take_stdin();
    let count = Arc::clone(&written);
    let writer = std::thread::spawn(move || {
        for i in 0..n {
            let mut line = flood.line(server, i);
            line.push('\n');
            stdin.write_all(line.as_bytes()).unwrap();
            count.store(i + 1, Ordering::Relaxed);
        }
        stdin.flush().unwrap();
        // Kept open: EOF would end MCP calls in flight.
        stdin
    });
    // Until the writer is done, or has not moved for 2 s: the server then
    // reads nothing more while its answers are unread.
    let (mut last, mut still) = (usize::MAX, 0);
    let mut threads = 0;
    for _ in 0..600 {
        std::thread::sleep(Duration::from_millis(100));
        threads = threads.max(s.usage().threads);
        let now = written.load(Ordering::Relaxed);
        if now == n {
            break;
        }
        still = if now == last { still + 1 } else { 0 };
        last = now;
        if still >= 20 {
            break;
        }
    }
    s.resume_reading();
    let mut seen = vec![false; n];
    for _ in 0..n {
        if let Some(id) = flood.check(server, &s.recv()) {
            assert!(
                !std::mem::replace(&mut seen[id as usize], true),
                "{id} twice"
            );
        }
    }
    let stdin = writer.join().unwrap();
    let usage = s.usage();
    drop(stdin);
    assert!(s.wait().success());
    assert!(
        usage.hwm_kib < MAX_HWM_KIB,
        "{server:?} {flood:?}: peak memory {} KiB (written before the reads: {last})",
        usage.hwm_kib
    );
    assert!(
        threads < MAX_THREADS,
        "{server:?} {flood:?}: {threads} threads"
    );
}

macro_rules! flood_test {
    ($name:ident, $server:expr, $flood:expr) => {
        #[test]
        fn $name() {
            flood($server, $flood);
        }
    };
}

flood_test!(serve_unread_listings, Server::Serve, Flood::Listing);
flood_test!(serve_unread_malformed, Server::Serve, Flood::Malformed);
flood_test!(serve_unread_calls, Server::Serve, Flood::Calls);
flood_test!(mcp_unread_listings, Server::Mcp, Flood::Listing);
flood_test!(mcp_unread_malformed, Server::Mcp, Flood::Malformed);
flood_test!(mcp_unread_calls, Server::Mcp, Flood::Calls);

/// A 62 MB line (under the 64 MiB line cap) that is an array of 31
/// million numbers inside `arguments` is refused before it is parsed, with
/// a clear error under its id; the server's peak memory stays near the
/// line's own bytes, and it goes on.
fn huge_arguments(server: Server) {
    let dir = Ws::needles(3);
    let mut s = start(server, &dir);
    let head = call(
        server,
        7,
        "write",
        json!({"file_path": "x", "content": "y", "n": "@"}),
    );
    let head = head.to_string();
    let (before, after) = head.split_once(r#""@""#).unwrap();
    let mut line = Vec::with_capacity(62_000_100);
    line.extend_from_slice(before.as_bytes());
    line.push(b'[');
    for _ in 0..31_000_000 - 1 {
        line.extend_from_slice(b"0,");
    }
    line.extend_from_slice(b"0]");
    line.extend_from_slice(after.as_bytes());
    s.send_raw(&line);
    drop(line);
    let answer = s.recv();
    let why = "the request holds more than 10000 JSON values (array items and object members); \
               no request needs that many: send the tool's arguments alone";
    match server {
        Server::Serve => assert_eq!(answer, json!({"id": 7, "error": why})),
        Server::Mcp => assert_eq!(
            answer,
            json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32600, "message": why}})
        ),
    }
    assert!(!dir.path().join("x").exists());
    s.send(&call(server, 8, "grep", json!({"pattern": "needle2"})));
    let answer = s.recv();
    assert_eq!(answer["id"], 8);
    assert_eq!(
        outcome(server, &answer).0,
        "Found 1 match\n\nf2.txt\nLine 1: needle2"
    );
    let usage = s.usage();
    assert!(
        usage.hwm_kib < MAX_HWM_KIB,
        "{server:?}: peak memory {} KiB",
        usage.hwm_kib
    );
}

#[test]
fn serve_refuses_a_line_of_millions_of_values_in_bounded_memory() {
    huge_arguments(Server::Serve);
}

#[test]
fn mcp_refuses_a_line_of_millions_of_values_in_bounded_memory() {
    huge_arguments(Server::Mcp);
}

/// The arguments' root object is open, as the seed's schema validation
/// has it (`seed-reference.md` §4.3): an unknown key passes, on both
/// servers, while a known key of the wrong type is `INVALID_ARGS`.
#[test]
fn unknown_argument_keys_pass_as_the_seed_schema_validation_has_it() {
    for server in [Server::Serve, Server::Mcp] {
        let dir = Ws::needles(3);
        let mut s = start(server, &dir);
        let extra = json!({"pattern": "f1.txt", "bogus": {"nested": [1, null]}, "path2": 5});
        s.send(&call(server, 1, "glob", extra));
        assert_eq!(
            outcome(server, &s.recv()),
            ("f1.txt".to_string(), false),
            "{server:?}"
        );
        s.send(&call(server, 2, "glob", json!({"pattern": 5, "bogus": 1})));
        assert_eq!(
            outcome(server, &s.recv()),
            (
                "Error: invalid arguments: \"pattern\" must be a string".to_string(),
                true
            ),
            "{server:?}"
        );
    }
}

/// One call of the soak's mix: the request line and the check of its
/// answer (which returns the answer's id, `None` for a malformed line's).
fn soak_line(server: Server, i: usize) -> String {
    let id = i as u64;
    match i % 10 {
        0 => call(server, id, "glob", json!({"pattern": "f1.txt"})),
        1 => call(server, id, "grep", json!({"pattern": "needle2"})),
        2 => call(server, id, "read", json!({"file_path": "f0.txt"})),
        3 => call(
            server,
            id,
            "write",
            json!({"file_path": format!("out/{i}.txt"), "content": format!("w{i}\n")}),
        ),
        4 => return "x".to_string(),
        5 => match server {
            Server::Serve => json!({"id": id, "definitions": true}),
            Server::Mcp => json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
        },
        6 => call(server, id, "glob", json!({"pattern": "{a"})),
        7 => call(server, id, "read", json!({"file_path": "missing.txt"})),
        8 => call(
            server,
            id,
            "grep",
            json!({"pattern": "needle", "include": "*.txt"}),
        ),
        _ => call(server, id, "frobnicate", json!({})),
    }
    .to_string()
}

/// Checks one answer of [`soak_line`]'s mix; its id.
fn soak_check(server: Server, answer: &Value) -> Option<u64> {
    let Some(id) = answer["id"].as_u64() else {
        Flood::Malformed.check(server, answer);
        return None;
    };
    match id % 10 {
        0 => assert_eq!(outcome(server, answer), ("f1.txt".to_string(), false)),
        1 => assert_eq!(
            outcome(server, answer),
            (
                "Found 1 match\n\nf2.txt\nLine 1: needle2".to_string(),
                false
            )
        ),
        2 => {
            let (text, is_error) = outcome(server, answer);
            assert!(!is_error && text.contains("needle0"), "{answer}");
        }
        3 => assert!(!outcome(server, answer).1, "{answer}"),
        5 => {
            Flood::Listing.check(server, answer);
        }
        6 | 7 => assert!(outcome(server, answer).1, "{answer}"),
        8 => {
            let (text, is_error) = outcome(server, answer);
            assert!(!is_error && text.starts_with("Found 3 matches"), "{answer}");
        }
        9 => assert!(
            answer.get("error").is_some() || outcome(server, answer).1,
            "{answer}"
        ),
        _ => unreachable!("{answer}"),
    }
    Some(id)
}

/// Runs `calls` of the mix, from id `first`, written by a thread of their
/// own while the answers are read; every call is answered once.
fn soak_run(server: Server, s: &mut Served, first: usize, calls: usize) {
    let mut stdin = s.take_stdin();
    let writer = std::thread::spawn(move || {
        for i in first..first + calls {
            let mut line = soak_line(server, i);
            line.push('\n');
            stdin.write_all(line.as_bytes()).unwrap();
        }
        stdin.flush().unwrap();
        stdin
    });
    let mut seen = vec![false; calls];
    let mut malformed = 0;
    for _ in 0..calls {
        match soak_check(server, &s.recv()) {
            Some(id) => {
                let k = id as usize - first;
                assert!(!std::mem::replace(&mut seen[k], true), "{id} twice");
            }
            None => malformed += 1,
        }
    }
    assert_eq!(malformed, calls / 10);
    assert_eq!(seen.iter().filter(|&&b| !b).count(), calls / 10);
    s.give_stdin(writer.join().unwrap());
}

/// The soak (each server answers 20,000 mixed calls with memory and file
/// descriptors back to their baseline): after a warm-up that
/// starts every pool the mix uses, 20,000 calls of ten kinds (searches,
/// reads, writes of new files, listings, malformed lines, errors of each
/// layer) leave the server with the descriptors it had (exactly: a leaked
/// descriptor per call would show as thousands) and its resident memory
/// within 16 MiB of the baseline (a leak of even 1 KiB per call would be
/// 20 MB; the allowance covers allocator arenas that keep freed pages).
fn soak(server: Server) {
    let dir = Ws::needles(3);
    // The written files stay out of the searches (`.ignore`), so every
    // search's answer stays the same however many writes came before.
    std::fs::write(dir.path().join(".ignore"), "out/\n").unwrap();
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let mut s = start(server, &dir);
    soak_run(server, &mut s, 0, 2_000);
    let baseline = s.usage();
    soak_run(server, &mut s, 2_000, 20_000);
    let after = s.usage();
    assert_eq!(
        after.fds, baseline.fds,
        "{server:?}: descriptors {baseline:?} -> {after:?}"
    );
    assert!(
        after.rss_kib <= baseline.rss_kib + (16 << 10),
        "{server:?}: resident memory {baseline:?} -> {after:?}"
    );
    eprintln!("soak {server:?}: {baseline:?} -> {after:?}");
    s.close();
    assert!(s.wait().success());
}

#[test]
fn serve_soak_of_20000_mixed_calls_returns_to_its_baseline() {
    soak(Server::Serve);
}

#[test]
fn mcp_soak_of_20000_mixed_calls_returns_to_its_baseline() {
    soak(Server::Mcp);
}
