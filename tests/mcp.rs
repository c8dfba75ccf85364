//! `dsh-search mcp` driven by raw JSON-RPC lines (`contract.md` §12): the
//! messages a real SDK never sends (malformed, hostile, out of order), the
//! roots handshake step by step, cancellation, the timeout, EOF and
//! signals. The Python and TypeScript SDK clients (tests/clients/, run by
//! scripts/test) cover the ordinary use.

use std::time::Duration;

use serde_json::{json, Value};

use crate::util::served::Served;
use crate::util::ws::{Ws, LARGE_FILES, WIDE_LINES};

/// The server on `ws`: `--cwd <workdir> <extra…> mcp`, or `--cwd
/// <workdir> <extra…>` when `extra` names `mcp` itself (followed by its
/// own options).
fn mcp(ws: &Ws, extra: &[&str]) -> Served {
    let mut cmd = ws.cmd(extra);
    if !extra.contains(&"mcp") {
        cmd.arg("mcp");
    }
    Served::spawn(&mut cmd)
}

/// The legacy handshake, with `capabilities`.
fn initialize(s: &mut Served, capabilities: Value) -> Value {
    s.send(
        &json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": capabilities,
        "clientInfo": {"name": "raw-test", "version": "1"}}}),
    );
    let answer = s.recv();
    assert_eq!(answer["id"], "init", "{answer}");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    answer
}

fn call(id: u64, tool: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": tool, "arguments": arguments}})
}

fn text(answer: &Value) -> &str {
    answer["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text: {answer}"))
}

fn blocked_grep(id: u64) -> Value {
    call(id, "grep", json!({"pattern": "x", "path": "pipe"}))
}

#[test]
fn initialize_lists_the_server_and_the_system_prompt() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = mcp(&dir, &[]);
    let init = initialize(&mut s, json!({}));
    assert_eq!(init["result"]["serverInfo"]["name"], "dsh-search");
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    let prompt = init["result"]["instructions"].as_str().unwrap();
    assert!(prompt.starts_with("Use the read tool"), "{prompt}");
    assert!(prompt.contains("Use the grep tool"), "{prompt}");
}

#[test]
fn malformed_and_hostile_messages_get_json_rpc_errors_and_the_server_goes_on() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = mcp(&dir, &[]);
    // Before the handshake too.
    s.send_raw(b"not json");
    assert_eq!(
        s.recv(),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700,
               "message": "the line is not JSON: expected ident at line 1 column 2"}})
    );
    initialize(&mut s, json!({}));
    let checks: Vec<(Vec<u8>, i64, Value)> = vec![
        (b"\xff\xfe".to_vec(), -32700, Value::Null),
        ("[".repeat(100_000).into_bytes(), -32700, Value::Null),
        (br#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":5}"#.to_vec(), -32600, json!(7)),
        (br#"{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"grep","arguments":[1]}}"#.to_vec(), -32602, json!("s")),
        (br#"{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"arguments":{}}}"#.to_vec(), -32602, json!("n")),
        (br#"{"jsonrpc":"2.0","id":8,"method":"no/such/method"}"#.to_vec(), -32601, json!(8)),
        (br#"[{"jsonrpc":"2.0","id":9,"method":"tools/list"}]"#.to_vec(), -32600, Value::Null),
        (br#"{"id":10}"#.to_vec(), -32600, json!(10)),
        (
            format!(r#"{{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{{"name":"grep","arguments":{{"pattern":{}1{}}}}}}}"#, "[".repeat(500), "]".repeat(500)).into_bytes(),
            -32700,
            json!("deep"),
        ),
    ];
    for (line, code, id) in checks {
        s.send_raw(&line);
        let answer = s.recv();
        assert_eq!(
            answer["error"]["code"],
            code,
            "{}: {answer}",
            String::from_utf8_lossy(&line[..line.len().min(80)])
        );
        assert_eq!(answer["id"], id, "{answer}");
    }
    // An invalid notification gets no answer (JSON-RPC never answers one).
    s.send_raw(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":7}"#);
    // Longer than the 64 MiB cap.
    let mut huge = br#"{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"name":"write","arguments":{"file_path":"big","content":""#.to_vec();
    huge.resize(65 << 20, b'a');
    huge.extend_from_slice(br#""}}}"#);
    s.send_raw(&huge);
    let answer = s.recv();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(
        answer["error"]["message"],
        "the message is longer than 67108864 bytes"
    );
    assert!(!dir.path().join("big").exists());
    // An unknown tool is a protocol error, NUL in arguments a tool error.
    s.send(&call(12, "nope", json!({})));
    assert_eq!(
        s.recv()["error"],
        json!({"code": -32602, "message": "unknown tool \"nope\"; available tools: read, write, edit, glob, grep"})
    );
    for (id, tool, args) in [
        (13, "grep", json!({"pattern": "a\u{0}b"})),
        (14, "read", json!({"file_path": "f0\u{0}.txt"})),
        (15, "grep", json!({"pattern": 5})),
    ] {
        s.send(&call(id, tool, args));
        let answer = s.recv();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(text(&answer).starts_with("Error: "), "{answer}");
    }
    s.send(&call(16, "grep", json!({"pattern": "needle1"})));
    let answer = s.recv();
    assert_eq!(
        (answer["id"].clone(), text(&answer)),
        (json!(16), "Found 1 match\n\nf1.txt\nLine 1: needle1")
    );
    assert_eq!(
        s.quiet_for(Duration::from_millis(200)),
        None,
        "one answer per request"
    );
    s.close();
    assert!(s.wait().success());
}

/// The service loop drops a pending read whenever a response is ready
/// first: a message arriving in pieces around a response must still be read
/// whole. (Seen with the TypeScript SDK: a 2 KB request written while an
/// earlier answer went out lost its head and was never answered.)
#[test]
fn a_message_split_around_a_response_is_read_whole() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = mcp(&dir, &[]);
    initialize(&mut s, json!({}));
    for round in 0..3u64 {
        let line = call(
            100 + round,
            "grep",
            json!({"pattern": format!("needle2|{}", "z".repeat(2000))}),
        )
        .to_string();
        let (head, tail) = line.as_bytes().split_at(line.len() / 2);
        s.send(&call(round, "glob", json!({"pattern": "f0.txt"})));
        s.send_part(head);
        assert_eq!(
            s.recv()["id"],
            round,
            "the first answer goes out while the second message is half read"
        );
        s.send_part(tail);
        s.send_part(b"\n");
        let answer = s.recv();
        assert_eq!(answer["id"], 100 + round, "{answer}");
        assert_eq!(text(&answer), "Found 1 match\n\nf2.txt\nLine 1: needle2");
    }
}

#[test]
fn results_carry_the_text_the_error_code_and_the_meta() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = mcp(&dir, &[]);
    initialize(&mut s, json!({}));
    s.send(&call(1, "glob", json!({"pattern": "f1.txt"})));
    let ok = s.recv()["result"].clone();
    assert_eq!(ok["isError"], false);
    assert_eq!(ok["content"], json!([{"type": "text", "text": "f1.txt"}]));
    assert!(ok.get("structuredContent").is_none(), "{ok}");
    // The presentation meta's counts; its page with --meta-page.
    assert_eq!(
        ok["_meta"]["dsh-search/meta"],
        json!({"shape": "paths", "truncated": false, "total": 1})
    );
    s.send(&call(2, "read", json!({"file_path": "missing.txt"})));
    let err = s.recv()["result"].clone();
    assert_eq!(err["isError"], true);
    assert!(err.get("structuredContent").is_none(), "{err}");
    s.send(&call(3, "grep", json!({"pattern": "("})));
    let err = s.recv()["result"].clone();
    // Name and code only: the message is the text's.
    assert_eq!(
        err["_meta"]["dsh-search/error"],
        json!({"info": {"name": "SearchError", "code": "SEARCH_INVALID_PATTERN"}}),
        "{err}"
    );
}

/// The presentation meta's cap (`searchMetaMaxBytes`, default 65,536).
const META_CAP: usize = 65_536;

/// The text cap (`maxInlineBytes`, default 50,000).
const TEXT_CAP: usize = 50_000;

/// read's text: `readMaxBytes` (51,200) of lines, their numbers and the
/// frame around them.
const READ_CAP: usize = 51_200 + 2_048;

/// The bound `contract.md` §12 states: a `tools/call`
/// result's JSON, every field serialized, is at most its text's JSON plus
/// 1,024 bytes, plus `page` (`searchMetaMaxBytes` with `--meta-page`);
/// the text is within its tool's caps (a search's at most
/// `maxInlineBytes`, the spill's).
fn assert_bounded(what: &str, result: &Value, page: usize) {
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{what}: no text"));
    let cap = if what.starts_with("read") {
        READ_CAP
    } else {
        TEXT_CAP
    };
    assert!(text.len() <= cap, "{what}: a text of {} bytes", text.len());
    let size = |v: &Value| serde_json::to_vec(v).unwrap().len();
    let text_json = size(&json!(text));
    let whole = size(result);
    let fields: Vec<String> = result
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| format!("{k}: {} bytes", size(v)))
        .collect();
    assert!(
        whole <= text_json + page + 1_024,
        "{what}: a result of {whole} bytes for a text of {text_json}; {}",
        fields.join(", ")
    );
}

/// Calls whose canonical values are megabytes (20,001 paths; 60,000
/// matches; one file's 250 lines of 1,000 bytes), with the counts of their
/// presentation meta (read has none).
fn large_calls() -> Vec<(&'static str, Value, Value)> {
    vec![
        (
            "glob *",
            call(1, "glob", json!({"pattern": "*"})),
            json!({"shape": "paths", "total": LARGE_FILES + 1, "truncated": true}),
        ),
        (
            "grep needle",
            call(2, "grep", json!({"pattern": "needle"})),
            json!({"shape": "matches", "total": 3 * LARGE_FILES, "truncated": true}),
        ),
        (
            // The page holds all 250, but not within the meta's cap.
            "grep wide",
            call(3, "grep", json!({"pattern": "wide"})),
            json!({"shape": "matches", "total": WIDE_LINES, "truncated": true}),
        ),
        (
            "read wide.txt",
            call(4, "read", json!({"file_path": "wide.txt"})),
            Value::Null,
        ),
    ]
}

/// By default a result is its text, `isError` and the counts in `_meta`;
/// `--structured-content meta` adds the counts as `structuredContent`,
/// `--meta-page` the bounded page to `_meta`, `--structured-content full`
/// the whole value.
#[test]
fn a_result_carries_its_text_and_little_else_whatever_the_tree() {
    let dir = Ws::large();
    let mut s = mcp(&dir, &[]);
    initialize(&mut s, json!({}));
    for (what, request, counts) in large_calls() {
        s.send(&request);
        let result = s.recv()["result"].clone();
        assert_eq!(result["isError"], false, "{what}: {result}");
        assert_bounded(what, &result, 0);
        assert!(
            result.get("structuredContent").is_none(),
            "{what}: structuredContent by default"
        );
        assert_eq!(result["_meta"]["dsh-search/meta"], counts, "{what}");
    }
    s.close();
    assert!(s.wait().success());
    // Made once for all: 20,000 files take seconds.
    structured_content_meta_is_the_counts(&dir);
    meta_page_is_the_page_within_its_cap(&dir);
    structured_content_full_is_the_whole_value(&dir);
}

fn structured_content_meta_is_the_counts(dir: &Ws) {
    let mut s = mcp(dir, &["mcp", "--structured-content", "meta"]);
    initialize(&mut s, json!({}));
    for (what, request, counts) in large_calls() {
        s.send(&request);
        let result = s.recv()["result"].clone();
        assert_bounded(what, &result, 0);
        assert_eq!(result["structuredContent"], counts, "{what}");
    }
    s.close();
    assert!(s.wait().success());
}

fn meta_page_is_the_page_within_its_cap(dir: &Ws) {
    let mut s = mcp(dir, &["mcp", "--meta-page"]);
    initialize(&mut s, json!({}));
    for (what, request, _) in large_calls() {
        s.send(&request);
        assert_bounded(what, &s.recv()["result"], META_CAP);
    }
    s.send(&call(5, "glob", json!({"pattern": "*"})));
    let meta = s.recv()["result"]["_meta"]["dsh-search/meta"].clone();
    assert_eq!(
        (&meta["total"], &meta["truncated"]),
        (&json!(LARGE_FILES + 1), &json!(true))
    );
    assert_eq!(
        meta["paths"].as_array().unwrap().len(),
        100,
        "the text's page"
    );
    // wide.txt's group alone is over the meta's cap, which drops whole
    // groups only (never the last one): its trailing matches go instead.
    s.send(&call(6, "grep", json!({"pattern": "wide"})));
    let meta = s.recv()["result"]["_meta"]["dsh-search/meta"].clone();
    assert_eq!(
        (&meta["total"], &meta["truncated"]),
        (&json!(WIDE_LINES), &json!(true))
    );
    let files = meta["files"].as_array().unwrap();
    assert_eq!(files.len(), 1, "{meta}");
    assert_eq!(files[0]["path"], "wide.txt");
    let kept = files[0]["matches"].as_array().unwrap().len();
    assert!((1..WIDE_LINES).contains(&kept), "{kept} matches kept");
    assert!(serde_json::to_vec(&meta).unwrap().len() <= META_CAP);
    s.close();
    assert!(s.wait().success());
}

fn structured_content_full_is_the_whole_value(dir: &Ws) {
    let mut s = mcp(dir, &["mcp", "--structured-content", "full"]);
    initialize(&mut s, json!({}));
    s.send(&call(1, "glob", json!({"pattern": "*"})));
    let result = s.recv()["result"].clone();
    let paths = result["structuredContent"]["paths"].as_array().unwrap();
    assert_eq!(paths.len(), LARGE_FILES + 1, "the whole value, on request");
    s.send(&call(2, "grep", json!({"pattern": "("})));
    let err = s.recv()["result"].clone();
    assert!(err.get("structuredContent").is_none(), "{err}");
}

#[test]
fn an_unknown_structured_content_mode_is_refused() {
    let dir = Ws::needles(1);
    let out = dir
        .cmd(&["mcp", "--structured-content", "all"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("invalid value 'all' for '--structured-content <MODE>'")
            && stderr.contains("[possible values: none, meta, full]"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn notifications_cancelled_stops_the_call_and_others_go_on() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = mcp(&dir, &[]);
    initialize(&mut s, json!({}));
    s.send(&blocked_grep(5));
    s.send(&call(6, "grep", json!({"pattern": "needle2"})));
    let other = s.recv();
    assert_eq!(other["id"], 6, "the blocked call answered first: {other}");
    s.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                   "params": {"requestId": 5, "reason": "test"}}),
    );
    let log = s.wait_stderr("request 5 (grep) cancelled by the client");
    assert!(log.contains("ended with SEARCH_ABORTED"), "{log}");
    // The cancelled request gets no response; the connection goes on.
    s.send(&call(7, "glob", json!({"pattern": "f0.txt"})));
    let next = s.recv();
    assert_eq!((next["id"].clone(), text(&next)), (json!(7), "f0.txt"));
}

#[test]
fn a_call_past_the_timeout_gets_the_timeout_error() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"timeoutMs": 300}"#).unwrap();
    let mut s = mcp(&dir, &["--config", config.to_str().unwrap()]);
    initialize(&mut s, json!({}));
    s.send(&blocked_grep(1));
    let r = s.recv()["result"].clone();
    assert_eq!(r["isError"], true);
    assert_eq!(
        r["content"][0]["text"],
        "Error: tool call timed out after 300ms"
    );
    assert_eq!(
        r["_meta"]["dsh-search/error"]["info"]["code"],
        "TOOL_TIMEOUT"
    );
}

#[test]
fn eof_with_a_call_in_flight_cancels_it_and_exits_0() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = mcp(&dir, &[]);
    initialize(&mut s, json!({}));
    s.send(&blocked_grep(1));
    s.send(&call(2, "glob", json!({"pattern": "f0.txt"})));
    assert_eq!(s.recv()["id"], 2);
    s.close();
    assert!(s.wait().success(), "{}", s.stderr());
}

#[cfg(unix)]
#[test]
fn sigterm_and_sigint_cancel_the_calls_in_flight_and_exit_0() {
    use rustix::process::Signal;
    for signal in [Signal::TERM, Signal::INT] {
        let dir = Ws::needles(3)
            .with("sub/s.txt", "needle9\n")
            .with_fifo("pipe");
        let mut s = mcp(&dir, &[]);
        initialize(&mut s, json!({}));
        s.send(&blocked_grep(1));
        s.send(&call(2, "glob", json!({"pattern": "f0.txt"})));
        assert_eq!(s.recv()["id"], 2);
        s.signal(signal);
        assert!(s.wait().success(), "{signal:?}");
        assert!(
            s.stderr().contains("cancelling 1 call(s) in flight"),
            "{}",
            s.stderr()
        );
    }
}

#[test]
fn the_workdir_is_the_first_file_root_until_the_roots_change() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let other = tempfile::tempdir().unwrap();
    // No --cwd: the process's current directory is only the fallback.
    let mut s = Served::spawn(dir.bin().current_dir(other.path()).arg("mcp"));
    initialize(&mut s, json!({"roots": {"listChanged": true}}));
    let roots = |s: &mut Served, uris: &[String]| {
        let ask = s.recv();
        assert_eq!(ask["method"], "roots/list", "{ask}");
        let list: Vec<Value> = uris.iter().map(|u| json!({"uri": u})).collect();
        s.send(&json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"roots": list}}));
    };
    let root = format!("file://{}", dir.path().display()).replace(' ', "%20");
    s.send(&call(1, "grep", json!({"pattern": "needle"})));
    roots(
        &mut s,
        &["https://example.com/not-a-file".into(), root.clone()],
    );
    let found = s.recv();
    assert_eq!(found["id"], 1);
    assert!(
        text(&found).starts_with("Found 4 matches\n\nf0.txt\n"),
        "{found}"
    );
    // Asked once: the next call uses the same root.
    s.send(&call(2, "glob", json!({"pattern": "s.txt"})));
    assert_eq!(text(&s.recv()), "sub/s.txt");
    s.send(&json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    s.send(&call(3, "glob", json!({"pattern": "s.txt"})));
    roots(&mut s, &[format!("{root}/sub")]);
    assert_eq!(text(&s.recv()), "s.txt");
}

#[test]
fn without_roots_or_cwd_the_workdir_is_the_current_directory() {
    let dir = Ws::needles(3)
        .with("sub/s.txt", "needle9\n")
        .with_fifo("pipe");
    let mut s = Served::spawn(dir.bin().current_dir(dir.at("sub")).arg("mcp"));
    initialize(&mut s, json!({}));
    s.send(&call(1, "grep", json!({"pattern": "needle"})));
    assert_eq!(text(&s.recv()), "Found 1 match\n\ns.txt\nLine 1: needle9");
}
