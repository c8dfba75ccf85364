//! `dsh-search serve`, the JSON-lines server (`contract.md` §12), driven as
//! a process by a client that writes request lines and reads answer lines:
//! concurrent calls, cancellation, malformed and hostile lines,
//! definitions, sessions, the tool timeout, EOF and signals.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::served::Served;
use crate::util::ws::{Ws, LARGE_FILES};

/// The server on `ws`, started in its workdir.
fn serve(ws: &Ws) -> Served {
    Served::spawn(ws.bin().arg("serve"))
}

/// A server whose glob/grep timeout is `ms`.
fn serve_with_timeout(ws: &Ws, ms: u64) -> Served {
    let config = ws.file("config.json", json!({ "timeoutMs": ms }).to_string());
    Served::spawn(
        ws.bin()
            .args(["--config", config.to_str().unwrap(), "serve"]),
    )
}

fn content(answer: &Value) -> &str {
    answer["result"]["content"]
        .as_str()
        .unwrap_or_else(|| panic!("no content: {answer}"))
}

fn code(answer: &Value) -> &str {
    answer["result"]["error"]["info"]["code"]
        .as_str()
        .unwrap_or("")
}

/// Whether `answer` is the aborted error: of the search (`SEARCH_ABORTED`),
/// or, when the cancellation came before its worker reached the dispatch,
/// of the call (`ABORTED_BEFORE_DISPATCH`).
fn aborted(answer: &Value) -> bool {
    matches!(code(answer), "SEARCH_ABORTED" | "ABORTED_BEFORE_DISPATCH")
}

/// The grep of the FIFO, which only a cancellation or the timeout ends.
fn blocked_grep(id: &str) -> Value {
    json!({"id": id, "tool": "grep", "arguments": {"pattern": "x", "path": "pipe"}})
}

#[test]
fn fifty_concurrent_mixed_calls_are_answered_once_each_with_their_ids() {
    let dir = Ws::needles(5).with_fifo("pipe");
    // The searches look in src/ only: a write in flight has a staging
    // entry in new/, which a concurrent walk of it could see vanish (and
    // report, as rg does, as an error).
    std::fs::create_dir(dir.path().join("src")).unwrap();
    for k in 0..5 {
        std::fs::rename(
            dir.path().join(format!("f{k}.txt")),
            dir.path().join(format!("src/f{k}.txt")),
        )
        .unwrap();
    }
    let mut s = serve(&dir);
    let mut expected: BTreeMap<String, String> = BTreeMap::new();
    for i in 0..50u32 {
        let k = i % 5;
        // Numbers and strings: the answer echoes the id as it came.
        let id = if i % 2 == 0 {
            json!(i)
        } else {
            json!(format!("call-{i}"))
        };
        let (tool, arguments, want) = match i % 4 {
            0 => (
                "grep",
                json!({"pattern": format!("needle{k}"), "path": "src"}),
                format!("Found 1 match\n\nsrc/f{k}.txt\nLine 1: needle{k}"),
            ),
            1 => (
                "glob",
                json!({"pattern": format!("f{k}.txt"), "path": "src"}),
                format!("src/f{k}.txt"),
            ),
            2 => (
                "read",
                json!({"file_path": format!("src/f{k}.txt")}),
                format!("1: needle{k}"),
            ),
            _ => (
                "write",
                json!({"file_path": format!("new/w{i}.txt"), "content": format!("w{i}\n")}),
                "Created file".to_string(),
            ),
        };
        s.send(&json!({"id": id, "tool": tool, "arguments": arguments}));
        expected.insert(id.to_string(), want);
    }
    let mut seen = BTreeMap::new();
    for _ in 0..50 {
        let answer = s.recv();
        let id = answer["id"].to_string();
        assert!(
            seen.insert(id.clone(), answer.clone()).is_none(),
            "answered twice: {id}"
        );
        let want = expected
            .get(&id)
            .unwrap_or_else(|| panic!("unknown id {id}: {answer}"));
        assert_eq!(answer["result"]["isError"], false, "{answer}");
        assert!(content(&answer).contains(want.as_str()), "{id}: {answer}");
    }
    assert_eq!(seen.len(), 50);
    for i in (3..50).step_by(4) {
        let written = std::fs::read_to_string(dir.path().join(format!("new/w{i}.txt"))).unwrap();
        assert_eq!(written, format!("w{i}\n"));
    }
    s.close();
    assert_eq!(
        s.quiet_for(Duration::from_millis(200)),
        None,
        "nothing after the answers"
    );
    assert!(s.wait().success());
}

#[test]
fn a_call_in_flight_does_not_hold_others_and_cancel_ends_it_with_the_aborted_error() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    s.send(&blocked_grep("slow"));
    s.send(&json!({"id": "fast", "tool": "grep", "arguments": {"pattern": "needle3"}}));
    let fast = s.recv();
    assert_eq!(
        fast["id"], "fast",
        "the blocked call answered first: {fast}"
    );
    assert_eq!(content(&fast), "Found 1 match\n\nf3.txt\nLine 1: needle3");
    s.send(&json!({"id": "slow", "cancel": true}));
    let slow = s.recv();
    assert_eq!(slow["id"], "slow");
    assert_eq!(code(&slow), "SEARCH_ABORTED", "{slow}");
    assert_eq!(
        content(&slow),
        "Error: grep was aborted before completion (tool timeout or caller cancellation)"
    );
    // A cancel of a call that already answered, or of an unknown id, is
    // ignored; it has no answer of its own.
    s.send(&json!({"id": "slow", "cancel": true}));
    s.send(&json!({"id": 99, "cancel": true}));
    s.send(&json!({"id": "after", "tool": "glob", "arguments": {"pattern": "f1.txt"}}));
    let after = s.recv();
    assert_eq!(
        (after["id"].as_str(), content(&after)),
        (Some("after"), "f1.txt")
    );
}

#[test]
fn malformed_lines_get_an_error_line_and_the_server_goes_on() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    let cases: &[(&str, Value, &str)] = &[
        ("not json", Value::Null, "the line is not JSON: expected ident at line 1 column 2"),
        ("[1,2]", Value::Null, "a request is a JSON object, not an array"),
        ("\"grep\"", Value::Null, "a request is a JSON object, not a string"),
        (r#"{"tool":"grep","arguments":{"pattern":"x"}}"#, Value::Null, "the request has no \"id\""),
        (r#"{"id":null,"tool":"grep"}"#, Value::Null, "\"id\" must be a string or a number, not null"),
        (r#"{"id":{"a":1},"tool":"grep"}"#, json!({"a":1}), "\"id\" must be a string or a number, not an object"),
        (r#"{"id":1}"#, json!(1), "the request has none of \"tool\" (a call), \"cancel\" or \"definitions\""),
        (r#"{"id":2,"tool":5}"#, json!(2), "\"tool\" must be a string, not a number"),
        (r#"{"id":3,"tool":"grep","argumets":{}}"#, json!(3), "unknown key \"argumets\" in a tool request; its keys are id, tool, arguments, cwd, session, value"),
        (r#"{"id":4,"tool":"grep","value":"no"}"#, json!(4), "\"value\" must be a boolean, not a string"),
        (r#"{"id":4,"tool":"grep","cwd":7}"#, json!(4), "\"cwd\" must be a string, not a number"),
        (r#"{"id":5,"tool":"grep","session":""}"#, json!(5), "\"session\" must not be empty"),
        (r#"{"id":6,"cancel":"yes"}"#, json!(6), "\"cancel\" must be true, not \"yes\""),
        (r#"{"id":7,"definitions":false}"#, json!(7), "\"definitions\" must be true, not false"),
        (r#"{"id":8,"tool":"grep","cancel":true}"#, json!(8), "the request has tool and cancel: a request is one call, one cancel or one definitions"),
        ("{\"id\":9,\"tool\":\"gr\u{fffd}\"\u{7f}", Value::Null, "the line is not JSON: expected `,` or `}` at line 1 column 23"),
    ];
    for (line, id, why) in cases {
        s.send_raw(line.as_bytes());
        let answer = s.recv();
        assert_eq!(answer, json!({"id": id, "error": why}), "line {line}");
    }
    // Well-formed requests whose call fails get the tool's error result.
    s.send(&json!({"id": 10, "tool": "nope"}));
    let unknown = s.recv();
    assert_eq!(
        content(&unknown),
        "Error: unknown tool \"nope\"; available tools: read, write, edit, glob, grep"
    );
    s.send(&json!({"id": 11, "tool": "grep", "arguments": {"pattern": 5, "path": []}}));
    let wrong = s.recv();
    assert_eq!(code(&wrong), "INVALID_ARGS", "{wrong}");
    assert!(
        content(&wrong).starts_with("Error: invalid arguments: "),
        "{wrong}"
    );
    s.send(&json!({"id": 12, "tool": "grep", "arguments": "pattern"}));
    assert_eq!(code(&s.recv()), "INVALID_ARGS");
    // Blank lines are skipped; the server still answers.
    s.send_raw(b"");
    s.send_raw(b"   \r");
    s.send(&json!({"id": 13, "tool": "grep", "arguments": {"pattern": "needle4"}}));
    let last = s.recv();
    assert_eq!(
        (last["id"].clone(), content(&last)),
        (json!(13), "Found 1 match\n\nf4.txt\nLine 1: needle4")
    );
}

/// `"value": false` leaves the canonical value out of a
/// call's answer, which is then its text, its meta and little else (glob
/// `*` on 20,001 files: 3 MB with the value); without the key, or with
/// `true`, the value is whole.
#[test]
fn a_call_may_leave_the_value_out() {
    let dir = Ws::large();
    let mut s = serve(&dir);
    let call = |id: &str, tool: &str, pattern: &str, value: Option<bool>| {
        let mut r = json!({"id": id, "tool": tool, "arguments": {"pattern": pattern}});
        if let Some(v) = value {
            r["value"] = json!(v);
        }
        r
    };
    let size = |v: &Value| serde_json::to_vec(v).unwrap().len();
    for (tool, pattern, total) in [
        ("glob", "*", LARGE_FILES + 1),
        ("grep", "needle", 3 * LARGE_FILES),
    ] {
        s.send(&call("lean", tool, pattern, Some(false)));
        let lean = s.recv();
        let result = &lean["result"];
        assert!(result.get("value").is_none(), "{tool}: a value");
        assert_eq!(result["meta"]["total"], total, "{tool}");
        // The bound of contract.md §12: the text, the meta's cap, 1 KiB.
        assert!(
            size(&lean) <= size(&result["content"]) + 65_536 + 1_024,
            "{tool}: an answer of {} bytes",
            size(&lean)
        );
        for value in [None, Some(true)] {
            s.send(&call("whole", tool, pattern, value));
            let whole = s.recv();
            let key = if tool == "glob" { "paths" } else { "matches" };
            let items = whole["result"]["value"][key].as_array().unwrap();
            assert_eq!(items.len(), total, "{tool} with value {value:?}");
            assert_eq!(whole["result"]["content"], result["content"]);
        }
    }
}

#[test]
fn an_id_in_flight_cannot_be_reused_until_it_answered() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    s.send(&blocked_grep("x"));
    s.send(&blocked_grep("x"));
    assert_eq!(
        s.recv(),
        json!({"id": "x", "error": "a call with id \"x\" is still in flight"})
    );
    s.send(&json!({"id": "x", "cancel": true}));
    let cancelled = s.recv();
    assert!(aborted(&cancelled), "{cancelled}");
    s.send(&json!({"id": "x", "tool": "glob", "arguments": {"pattern": "f0.txt"}}));
    assert_eq!(content(&s.recv()), "f0.txt");
}

/// Every answer echoes its request's id as the JSON text it was sent as,
/// byte for byte; ids that are not a string or a number are refused,
/// echoed too; a cancel names its call by the same text.
#[test]
fn ids_are_echoed_as_their_json_text() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    let called = [
        "12345678901234567890123",
        "-12345678901234567890123",
        "1e2",
        "1E+2",
        "-0",
        "-0.0",
        "0.10",
        "1.5e-300",
        r#""a\u0041\n\"b\\""#,
        r#""\ud83d\ude00 \/""#,
        r#""""#,
    ];
    for id in called {
        let line = format!(r#"{{"id": {id} ,"tool":"glob","arguments":{{"pattern":"f0.txt"}}}}"#);
        s.send_raw(line.as_bytes());
        let answer = s.recv_line();
        assert!(
            answer.starts_with(&format!(r#"{{"id":{id},"result":{{"content":"f0.txt","#)),
            "{id}: {answer}"
        );
    }
    let refused = [
        ("null", "null"),
        (r#"{"a": [1, 2]}"#, "an object"),
        ("[1]", "an array"),
        ("true", "a boolean"),
    ];
    for (id, kind) in refused {
        s.send_raw(format!(r#"{{"id":{id},"definitions":true}}"#).as_bytes());
        let answer: Value = serde_json::from_str(&s.recv_line()).unwrap();
        let sent: Value = serde_json::from_str(id).unwrap();
        assert_eq!(
            answer,
            json!({"id": sent, "error": format!("\"id\" must be a string or a number, not {kind}")})
        );
    }
    // `1e2` and `100` are two ids: the cancel of `1e2` reaches its call.
    s.send_raw(br#"{"id":1e2,"tool":"grep","arguments":{"pattern":"x","path":"pipe"}}"#);
    s.send_raw(br#"{"id":100,"tool":"glob","arguments":{"pattern":"f1.txt"}}"#);
    assert_eq!(
        s.recv_line(),
        r#"{"id":100,"result":{"content":"f1.txt","isError":false,"value":{"paths":["f1.txt"],"root":"."},"meta":{"paths":["f1.txt"],"shape":"paths","total":1,"truncated":false}}}"#
    );
    s.send_raw(br#"{"id":1e2,"cancel":true}"#);
    let cancelled = s.recv_line();
    assert!(
        cancelled.starts_with(r#"{"id":1e2,"result":"#),
        "{cancelled}"
    );
    assert!(
        aborted(&serde_json::from_str(&cancelled).unwrap()),
        "{cancelled}"
    );
}

#[test]
fn hostile_lines_get_clear_errors_and_no_crash() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    // Longer than the 64 MiB cap: skipped to its newline.
    let mut huge = br#"{"id":1,"tool":"write","arguments":{"file_path":"big","content":""#.to_vec();
    huge.resize(65 << 20, b'a');
    huge.extend_from_slice(br#""}}"#);
    s.send_raw(&huge);
    assert_eq!(
        s.recv(),
        json!({"id": null, "error": "the request line is longer than 67108864 bytes"})
    );
    assert!(!dir.path().join("big").exists());
    // Deeper than serde_json's recursion limit.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    s.send_raw(deep.as_bytes());
    let answer = s.recv();
    assert!(
        answer["error"]
            .as_str()
            .unwrap()
            .starts_with("the line is not JSON: recursion limit exceeded"),
        "{answer}"
    );
    let deep_args = format!(
        r#"{{"id":2,"tool":"grep","arguments":{}1{}}}"#,
        r#"{"a":"#.repeat(200),
        "}".repeat(200)
    );
    s.send_raw(deep_args.as_bytes());
    assert!(s.recv()["error"]
        .as_str()
        .unwrap()
        .contains("recursion limit exceeded"));
    // Bytes that are not UTF-8.
    s.send_raw(b"{\"id\":3,\"tool\":\"grep\",\"arguments\":{\"pattern\":\"\xff\"}}");
    assert!(s.recv()["error"]
        .as_str()
        .unwrap()
        .starts_with("the line is not JSON: invalid unicode"));
    // NUL inside strings: the tools' own clear errors.
    for (id, req) in [
        (
            4,
            json!({"id": 4, "tool": "grep", "arguments": {"pattern": "a\u{0}b"}}),
        ),
        (
            5,
            json!({"id": 5, "tool": "grep", "arguments": {"pattern": "a", "path": "f0\u{0}.txt"}}),
        ),
        (
            6,
            json!({"id": 6, "tool": "read", "arguments": {"file_path": "f0.txt\u{0}"}}),
        ),
        (
            7,
            json!({"id": 7, "tool": "glob", "cwd": "sub\u{0}dir", "arguments": {"pattern": "*"}}),
        ),
        (8, json!({"id": 8, "tool": "grep\u{0}", "arguments": {}})),
    ] {
        s.send(&req);
        let answer = s.recv();
        assert_eq!(answer["id"], id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(content(&answer).starts_with("Error: "), "{answer}");
    }
    s.send(&json!({"id": 9, "tool": "grep", "arguments": {"pattern": "needle0"}}));
    assert_eq!(
        content(&s.recv()),
        "Found 1 match\n\nf0.txt\nLine 1: needle0"
    );
    s.close();
    assert!(s.wait().success());
}

#[test]
fn definitions_are_the_cli_definitions_on_one_line() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let cli = std::process::Command::new(env!("CARGO_BIN_EXE_dsh-search"))
        .arg("definitions")
        .output()
        .unwrap();
    let cli = String::from_utf8(cli.stdout).unwrap();
    // The CLI prints one definition per line; strings escape their newlines,
    // so joining the lines gives the same JSON text.
    let joined = cli
        .trim_end()
        .replace("[\n", "[")
        .replace(",\n", ",")
        .replace("\n]", "]");
    let mut s = serve(&dir);
    s.send(&json!({"id": "d", "definitions": true}));
    assert_eq!(
        s.recv_line(),
        format!("{{\"id\":\"d\",\"definitions\":{joined}}}")
    );
}

#[test]
fn one_connection_is_one_session_and_requests_may_name_others() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    let edit = |id: &str, session: Option<&str>| {
        let mut req = json!({"id": id, "tool": "edit", "arguments": {
            "file_path": "f1.txt", "old_string": "needle1", "new_string": "pin1"}});
        if let Some(session) = session {
            req["session"] = json!(session);
        }
        req
    };
    s.send(&edit("e0", None));
    let unread = s.recv();
    assert_eq!(code(&unread), "FS_NOT_OBSERVED", "{unread}");
    s.send(&json!({"id": "r", "tool": "read", "arguments": {"file_path": "f1.txt"}}));
    assert!(content(&s.recv()).contains("1: needle1"));
    // Another session has not read it.
    s.send(&edit("e1", Some("other")));
    assert_eq!(code(&s.recv()), "FS_NOT_OBSERVED");
    // The connection's session has.
    s.send(&edit("e2", None));
    let done = s.recv();
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("f1.txt")).unwrap(),
        "pin1\n"
    );
    // A cwd relative to the server's workdir.
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/s.txt"), "needle9\n").unwrap();
    s.send(&json!({"id": "c", "tool": "grep", "cwd": "sub", "arguments": {"pattern": "needle9"}}));
    assert_eq!(
        content(&s.recv()),
        "Found 1 match\n\ns.txt\nLine 1: needle9"
    );
}

#[test]
fn the_guard_counts_per_session() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve(&dir);
    let grep = |id: u32, session: &str| json!({"id": id, "session": session, "tool": "grep", "arguments": {"pattern": "NoSuchThing"}});
    for id in 0..5 {
        s.send(&grep(id, "a"));
        assert_eq!(content(&s.recv()), "No matches found");
    }
    s.send(&grep(5, "a"));
    assert!(content(&s.recv()).contains("5 times in a row"));
    s.send(&grep(6, "b"));
    assert_eq!(content(&s.recv()), "No matches found");
}

#[test]
fn a_call_past_the_timeout_gets_the_timeout_error() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve_with_timeout(&dir, 300);
    s.send(&blocked_grep("t"));
    let answer = s.recv();
    assert_eq!(code(&answer), "TOOL_TIMEOUT", "{answer}");
    assert_eq!(content(&answer), "Error: tool call timed out after 300ms");
}

#[test]
fn eof_finishes_the_calls_in_flight_and_exits_0() {
    let dir = Ws::needles(5).with_fifo("pipe");
    let mut s = serve_with_timeout(&dir, 500);
    s.send(&blocked_grep("in-flight"));
    s.send(&json!({"id": "quick", "tool": "glob", "arguments": {"pattern": "f2.txt"}}));
    s.close();
    let mut answers: Vec<Value> = vec![s.recv(), s.recv()];
    answers.sort_by_key(|a| a["id"].to_string());
    assert_eq!(answers[0]["id"], "in-flight");
    assert_eq!(code(&answers[0]), "TOOL_TIMEOUT");
    assert_eq!(content(&answers[1]), "f2.txt");
    assert!(s.wait().success());
}

#[cfg(unix)]
#[test]
fn sigterm_and_sigint_cancel_the_calls_in_flight_and_exit_0() {
    use rustix::process::Signal;
    for signal in [Signal::TERM, Signal::INT] {
        let dir = Ws::needles(5).with_fifo("pipe");
        let mut s = serve(&dir);
        s.send(&blocked_grep("a"));
        s.send(&blocked_grep("b"));
        // Both calls are running once a later call has answered.
        s.send(&json!({"id": "c", "tool": "glob", "arguments": {"pattern": "f0.txt"}}));
        assert_eq!(s.recv()["id"], "c");
        s.signal(signal);
        for _ in 0..2 {
            let answer = s.recv();
            assert!(aborted(&answer), "{signal:?}: {answer}");
        }
        assert!(s.wait().success(), "{signal:?}");
        assert!(
            s.stderr().contains("cancelling 2 call(s) in flight"),
            "{}",
            s.stderr()
        );
    }
}

/// `serve --index` answers as `serve` does, call by call, while another
/// process changes the tree between calls (`docs/index.md`: the events
/// queued before a call are applied before it is answered); `serve` itself
/// is rg's, by the conformance suite.
#[test]
fn an_indexed_server_answers_as_the_scan_while_another_process_changes_the_tree() {
    answers_as_the_scan_under_changes(&["--index"]);
}

/// [`an_indexed_server_answers_as_the_scan_while_another_process_changes_the_tree`]
/// with the mirror validated at each call (`--index-watch none`; off Linux,
/// where there is no watcher, the first run is that too).
#[test]
fn an_indexed_server_validating_answers_as_the_scan_while_another_process_changes_the_tree() {
    answers_as_the_scan_under_changes(&["--index", "--index-watch", "none"]);
}

fn answers_as_the_scan_under_changes(index: &[&str]) {
    let ws = Ws::needles(4)
        .with("src/a.rs", "fn alpha() {}\n")
        .with(".gitignore", "ignored.txt\n");
    std::fs::create_dir(ws.path().join(".git")).unwrap();
    let mut scan = serve(&ws);
    let mut indexed = Served::spawn(ws.bin().args(index).arg("serve"));
    let root = ws.path().to_path_buf();
    type Change<'a> = Box<dyn Fn(usize) + 'a>;
    let changes: Vec<(&str, Change)> = vec![
        (
            "append",
            Box::new(|i| {
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(root.join("f1.txt"))
                    .unwrap();
                std::io::Write::write_all(&mut f, format!("token_{i}\n").as_bytes()).unwrap();
            }),
        ),
        (
            "create",
            Box::new(|i| {
                std::fs::write(
                    root.join(format!("src/new{i}.rs")),
                    format!("fn token_{i}() {{}}\n"),
                )
                .unwrap()
            }),
        ),
        (
            "rename",
            Box::new(|i| {
                std::fs::rename(
                    root.join(format!("src/new{i}.rs")),
                    root.join(format!("moved{i}.txt")),
                )
                .unwrap()
            }),
        ),
        (
            "ignored",
            Box::new(|i| std::fs::write(root.join("ignored.txt"), format!("token_{i}\n")).unwrap()),
        ),
        (
            "unignore",
            Box::new(|_| std::fs::write(root.join(".gitignore"), "nothing\n").unwrap()),
        ),
        (
            "delete",
            Box::new(|i| std::fs::remove_file(root.join(format!("moved{i}.txt"))).unwrap()),
        ),
    ];
    let mut found = 0;
    let mut said_mirror = false;
    for (round, (what, change)) in changes.iter().enumerate() {
        // The round's token is in the tree after the change (`rename` moves
        // the file `create` wrote in the round before).
        let i = match *what {
            "rename" => round - 1,
            // `moved1.txt` goes; the tokens left are searched for.
            "delete" => 1,
            _ => round,
        };
        change(i);
        for (n, args) in [
            ("grep", json!({"pattern": format!("token_{i}")})),
            ("grep", json!({"pattern": "token_\\d+"})),
            ("glob", json!({"pattern": "*"})),
            ("grep", json!({"pattern": "\\w{30}"})),
        ]
        .into_iter()
        .enumerate()
        .map(|(k, (tool, a))| {
            (
                k,
                json!({"id": format!("{round}.{k}"), "tool": tool, "arguments": a}),
            )
        }) {
            scan.send(&args);
            indexed.send(&args);
            let (a, mut b) = (scan.recv(), indexed.recv());
            // The indexed server's `result.meta.index` says which path
            // answered (`docs/index.md`, "What `meta` says"); the unindexed
            // server's has no such key, and the rest is the same.
            assert!(a["result"]["meta"].get("index").is_none(), "{a}");
            let said = b["result"]["meta"]
                .as_object_mut()
                .and_then(|m| m.remove("index"));
            let said = said.as_ref().and_then(Value::as_str).unwrap_or_default();
            // `\w{30}` (call 3) has no literal the prefilter can use.
            // The server answers while its index is built (no wait): the
            // scan then, and the mirror once it is ready.
            let expected: &[&str] = match n {
                3 => &["scan: the pattern has no required literal the prefilter can use"],
                _ => &["mirror", BUILDING],
            };
            assert!(
                expected.contains(&said),
                "{said:?}: {what}, call {n}: {args}"
            );
            said_mirror |= said == "mirror";
            assert_eq!(a, b, "{what}, call {n}: {args}");
            found += usize::from(content(&a).starts_with("Found"));
        }
    }
    // The calls found something: the comparison was not of empty answers.
    assert!(found >= 8, "{found}");
    // The index becomes ready and then answers (asked again until it has;
    // a build of this small tree that has not ended in 120 s is a hang,
    // not a slow machine, and fails the test instead of holding the suite).
    let hang = std::time::Instant::now() + Duration::from_secs(120);
    let mut k = 0;
    while !said_mirror {
        assert!(
            std::time::Instant::now() < hang,
            "serve --index never answered from its mirror"
        );
        std::thread::sleep(Duration::from_millis(10));
        k += 1;
        let args =
            json!({"id": format!("ready.{k}"), "tool": "glob", "arguments": {"pattern": "*"}});
        indexed.send(&args);
        let b = indexed.recv();
        let said = b["result"]["meta"]["index"].as_str().unwrap_or_default();
        assert!(["mirror", BUILDING].contains(&said), "{b}");
        said_mirror = said == "mirror";
    }
}

/// A directory that turns unreadable under a live index, or readable but
/// not searchable, and readable again (`docs/index.md`, "How it stays
/// current": the chmod's event walks it again, handing to the disk what
/// cannot be listed or stat'ed, where the scan's error is read: the index's
/// failure modes); then the root itself. Both servers run
/// as uid 65534 when the test runs as root, for whom no mode bit denies
/// anything; each call of `serve --index` is compared with `serve`'s, and
/// must have been answered by the mirror (the root's chmod excepted: the
/// scan answers until the index is rebuilt).
#[test]
fn an_indexed_server_follows_a_directory_that_turns_unreadable() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::CommandExt;
    const NOBODY: u32 = 65534;
    let ws = Ws::new()
        .with("open/a.txt", "token in open\n")
        .with("locked/b.txt", "token in locked\n")
        .with("locked/sub/c.txt", "token below locked\n");
    // The binary, copied where uid 65534 can run it whatever the checkout's
    // permissions; the servers' state and home in the same tree.
    let exe = ws.base.join("dsh-search");
    std::fs::copy(crate::util::rg::dsh_search_exe(), &exe).unwrap();
    let root_user = rustix::process::geteuid().is_root();
    let as_test_user = |c: &mut std::process::Command| {
        if root_user {
            c.uid(NOBODY).gid(NOBODY);
        }
    };
    if root_user {
        let mut chown = std::process::Command::new("chown");
        chown
            .args(["-R", &format!("{NOBODY}:{NOBODY}")])
            .arg(&ws.base);
        assert!(chown.status().unwrap().success());
    }
    let mut scan_cmd = ws.command(&exe);
    scan_cmd.arg("serve");
    as_test_user(&mut scan_cmd);
    let mut indexed_cmd = ws.command(&exe);
    indexed_cmd.args(["--index", "serve"]);
    as_test_user(&mut indexed_cmd);
    let mut scan = Served::spawn(&mut scan_cmd);
    let mut indexed = Served::spawn(&mut indexed_cmd);
    let mut k = 0;
    let mut ask = |tool: &str, args: Value, wait_for_mirror: bool| -> (Value, String) {
        // While the index builds, the scan answers: asked again until the
        // mirror does (a build of this tree not done in 120 s is a hang).
        let hang = std::time::Instant::now() + Duration::from_secs(120);
        loop {
            k += 1;
            let req = json!({"id": k, "tool": tool, "arguments": args});
            scan.send(&req);
            indexed.send(&req);
            let (a, mut b) = (scan.recv(), indexed.recv());
            let result = b["result"].as_object_mut().unwrap();
            let meta = result.get_mut("meta").and_then(Value::as_object_mut);
            let said = meta.and_then(|m| m.remove("index"));
            let said = said
                .as_ref()
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            // An error's `meta` is `{"index": …}` alone (`docs/index.md`).
            if result.get("meta") == Some(&json!({})) {
                result.remove("meta");
            }
            assert_eq!(
                a, b,
                "{tool} {args}: the indexed server differs from the scan"
            );
            if said == "mirror" || !wait_for_mirror || !cfg!(target_os = "linux") {
                return (a, said);
            }
            // Building, or about to: a chmod of the root is a rebuild,
            // and a root that could not be listed is built again at the
            // next call.
            let rebuilt = [
                BUILDING,
                "scan: the root's permissions or owner changed",
                "scan: the root cannot be listed",
            ];
            assert!(rebuilt.contains(&said.as_str()), "{said}: {b}");
            assert!(
                std::time::Instant::now() < hang,
                "the index was never ready"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let grep = json!({"pattern": "token"});
    let glob = json!({"pattern": "**/*.txt"});
    let (before, _) = ask("grep", grep.clone(), true);
    assert!(content(&before).contains("token in locked"), "{before}");
    let locked = ws.at("locked");
    // 644: its names can be listed, nothing below them stat'ed or opened.
    let modes = [
        (0o000, false),
        (0o755, true),
        (0o311, false),
        (0o755, true),
        (0o644, false),
        (0o755, true),
    ];
    for (mode, readable) in modes {
        std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(mode)).unwrap();
        for (tool, args) in [("grep", grep.clone()), ("glob", glob.clone())] {
            let (a, said) = ask(tool, args.clone(), false);
            if cfg!(target_os = "linux") {
                assert_eq!(said, "mirror", "mode {mode:o}, {tool}: {a}");
            }
            // The comparison is not of two empty answers, and the mode did
            // what it should: the locked files show when readable, and rg's
            // error for the directory when not.
            let text = content(&a);
            if readable {
                assert!(
                    text.contains("a.txt") && text.contains("b.txt"),
                    "{tool}: {a}"
                );
            } else if mode == 0o644 {
                assert!(
                    text.contains("./locked/") && text.contains("Permission denied (os error 13)"),
                    "mode {mode:o}, {tool}: {a}"
                );
            } else {
                assert!(
                    text.contains("./locked: Permission denied (os error 13)"),
                    "mode {mode:o}, {tool}: {a}"
                );
            }
        }
    }
    // The root: unreadable, readable but not searchable, then restored.
    // The mirror cannot answer for it until it is built again; once it
    // can be, it is, and answers again.
    for (mode, wait_for_mirror) in [(0o000, false), (0o644, false), (0o755, true)] {
        std::fs::set_permissions(&ws.root, std::fs::Permissions::from_mode(mode)).unwrap();
        for (tool, args) in [("grep", grep.clone()), ("glob", glob.clone())] {
            let (a, said) = ask(tool, args.clone(), wait_for_mirror);
            let text = content(&a);
            if mode == 0o755 {
                assert_eq!(said, "mirror", "root mode {mode:o}, {tool}: {a}");
                assert!(text.contains("b.txt"), "{tool}: {a}");
            } else {
                assert!(
                    text.contains("Permission denied (os error 13)"),
                    "root mode {mode:o}, {tool}: {a}"
                );
            }
        }
    }
}

/// `meta.index` of a call an index still being built leaves to the scan.
const BUILDING: &str = "scan: the index is being built";

/// The command line run with `args` and no input, which must refuse them
/// (exit 2): its stderr and stdout.
fn refused(ws: &Ws, args: &[&str]) -> (String, Vec<u8>) {
    let out = ws
        .bin()
        .args(args)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    (stderr, out.stdout)
}

#[test]
fn index_is_refused_where_it_cannot_run() {
    let ws = Ws::needles(1);
    // The configuration's `index` key turns it on as `--index` does.
    let config = ws.file("config.json", r#"{"index": true}"#);
    let config = config.to_str().unwrap();
    for args in [
        &["--index", "--backend", "rg", "serve"][..],
        &["--config", config, "--backend", "rg", "serve"][..],
    ] {
        let (stderr, _) = refused(&ws, args);
        assert!(
            stderr.contains(
                "the index (--index, or the configuration's index key) is not available with --backend rg: it answers through the native engine"
            ),
            "{args:?}: {stderr}"
        );
    }
}

/// An unknown `--index-watch`, or the configuration's `indexWatch`, is
/// refused before anything runs, the values it takes named (exit 2).
#[test]
fn an_unknown_index_watch_is_refused() {
    let ws = Ws::needles(1);
    let config = ws.file("config.json", r#"{"index": true, "indexWatch": "inotify"}"#);
    let config = config.to_str().unwrap();
    for (args, said) in [
        (
            &["--index", "--index-watch", "inotify", "serve"][..],
            "invalid value 'inotify' for '--index-watch <WATCH>'\n  [possible values: os, none]",
        ),
        (
            &["--index", "--index-watch", "", "serve"][..],
            "a value is required for '--index-watch <WATCH>'",
        ),
        (
            &["--config", config, "serve"][..],
            "config: indexWatch must be \"os\" or \"none\"",
        ),
    ] {
        let (stderr, stdout) = refused(&ws, args);
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "{args:?}");
    }
}

/// `serve --index` on the workspaces that are not the local disk (`--fs
/// mem`, `--overlay` over the disk and over memory): accepted, answered
/// from the mirror once it is built, and as the unindexed server answers,
/// a write through the tools included (`docs/index.md`).
#[cfg(target_os = "linux")]
#[test]
fn an_indexed_server_in_memory_or_through_an_overlay_answers_as_the_scan() {
    let ws = Ws::needles(4).with("src/a.rs", "fn alpha() {}\n");
    let scratch = tempfile::tempdir().unwrap();
    let overlay = |name: &str| scratch.path().join(name).display().to_string();
    let (ov1, ov2, ov3, ov4) = (overlay("a"), overlay("b"), overlay("c"), overlay("d"));
    for (what, plain, indexed) in [
        ("mem", vec!["--fs", "mem"], vec!["--fs", "mem"]),
        (
            "overlay",
            vec!["--overlay", &*ov1],
            vec!["--overlay", &*ov2],
        ),
        (
            "mem overlay",
            vec!["--fs", "mem", "--overlay", &*ov3],
            vec!["--fs", "mem", "--overlay", &*ov4],
        ),
    ] {
        let mut scan = Served::spawn(ws.bin().args(&plain).arg("serve"));
        let mut ix = Served::spawn(ws.bin().args(&indexed).args(["--index", "serve"]));
        let hang = std::time::Instant::now() + Duration::from_secs(120);
        let mut k = 0;
        let mut ask = |tool: &str, arguments: Value| {
            k += 1;
            let args = json!({"id": format!("{k}"), "tool": tool, "arguments": arguments});
            scan.send(&args);
            ix.send(&args);
            let (a, mut b) = (scan.recv(), ix.recv());
            let said = b
                .get_mut("result")
                .and_then(|r| r.get_mut("meta"))
                .and_then(Value::as_object_mut)
                .and_then(|m| m.remove("index"));
            assert_eq!(a, b, "{what}: {args}");
            said.and_then(|s| s.as_str().map(String::from))
                .unwrap_or_default()
        };
        // The index becomes ready and then answers (a build of this small
        // tree that has not ended in 120 s is a hang, not a slow machine).
        while ask("grep", json!({"pattern": "needle"})) != "mirror" {
            assert!(
                std::time::Instant::now() < hang,
                "{what}: never from the mirror"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let write = json!({"file_path": "src/new.rs", "content": "fn token_new() {}\n"});
        assert_eq!(
            ask("write", write),
            "",
            "{what}: a write says nothing of the index"
        );
        let r = ask("grep", json!({"pattern": "token_new"}));
        assert_eq!(r, "mirror", "{what}");
        assert_eq!(
            ask("glob", json!({"pattern": "**/*.rs"})),
            "mirror",
            "{what}"
        );
    }
}

/// `--index` saves the index in the state directory (`<state>/index`),
/// and a server started again starts from it; a saved index that cannot be
/// used is said on stderr and built from the tree; `--no-index-save`
/// neither reads nor writes one.
#[cfg(target_os = "linux")]
#[test]
fn an_indexed_server_saves_its_index_in_the_state_directory() {
    let ws = Ws::needles(5);
    let store = ws.state.join("index");
    // Until the mirror answers, then EOF: the server exits 0.
    let run = |args: &[&str]| -> String {
        let mut s = Served::spawn(ws.bin().args(args).arg("serve"));
        let hang = std::time::Instant::now() + Duration::from_secs(120);
        for k in 0.. {
            s.send(&json!({"id": k, "tool": "grep", "arguments": {"pattern": "needle3"}}));
            let a = s.recv();
            assert_eq!(
                content(&a),
                "Found 1 match\n\nf3.txt\nLine 1: needle3",
                "{a}"
            );
            if a["result"]["meta"]["index"] == "mirror" {
                break;
            }
            assert!(
                std::time::Instant::now() < hang,
                "the index was never ready"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        s.close();
        assert!(s.wait().success());
        s.stderr()
    };
    let err = run(&["--index", "--no-index-save"]);
    assert!(
        !store.exists(),
        "--no-index-save wrote {}: {err}",
        store.display()
    );
    run(&["--index"]);
    let saved = crate::util::saved_index(&store);
    let err = run(&["--index"]);
    assert!(!err.contains("saved index"), "{err}");
    std::fs::write(&saved, "not an index, a file of text\n").unwrap();
    let err = run(&["--index"]);
    assert!(
        err.contains("dsh-search index: the saved index was ignored (")
            && err.contains("not a saved index); built from the tree"),
        "{err}"
    );
}

/// A server stopped right after its index went live, at the end of its
/// input or by a signal, lets the save in flight end before it exits: the
/// next start finds the mirror whole, with no temporary file left beside
/// it (`docs/index.md`, "Restart without a rebuild"). The tree is large
/// enough that its save takes longer than the stop would.
#[cfg(target_os = "linux")]
#[test]
fn a_server_stopped_right_after_its_build_leaves_its_index_saved() {
    use rustix::process::Signal;
    let ws = Ws::large();
    let store = ws.state.join("index");
    let cases: &[(&str, Option<Signal>)] =
        &[("end of input", None), ("SIGTERM", Some(Signal::TERM))];
    for &(name, signal) in cases {
        let _ = std::fs::remove_dir_all(&store);
        let mut s = Served::spawn(ws.bin().args(["--index"]).arg("serve"));
        let hang = std::time::Instant::now() + Duration::from_secs(300);
        for k in 0.. {
            s.send(&json!({"id": k, "tool": "glob", "arguments": {"pattern": "wide.txt"}}));
            let a = s.recv();
            if a["result"]["meta"]["index"] == "mirror" {
                break;
            }
            assert!(std::time::Instant::now() < hang, "{name}: never ready");
            std::thread::sleep(Duration::from_millis(20));
        }
        match signal {
            None => s.close(),
            Some(signal) => s.signal(signal),
        }
        assert!(s.wait().success(), "{name}: {}", s.stderr());
        // Read once, right after the exit: nothing finishes it later.
        let names: Vec<String> = std::fs::read_dir(&store)
            .unwrap_or_else(|e| panic!("{name}: {}: {e}", store.display()))
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            names.len() == 1 && names[0].starts_with("index-"),
            "{name}: the store holds {names:?}; {}",
            s.stderr()
        );
    }
}

/// A save of the index that fails (here a store the server's user cannot
/// write: `EACCES`) is said once on stderr, naming the file and the
/// system's error; the index still answers from its mirror
/// (`docs/index.md`, "Restart without a rebuild").
#[cfg(target_os = "linux")]
#[test]
fn a_failed_save_of_the_index_is_said_once_on_stderr() {
    use std::os::unix::fs::chown;
    crate::util::require_root();
    let ws = Ws::needles(5);
    // uid 65534 reads the tree and owns the state directory, but its store
    // is read-only to it.
    ws.chmod(&ws.base, 0o755);
    let store = ws.state.join("index");
    std::fs::create_dir_all(&store).unwrap();
    for dir in [&ws.state, &store] {
        chown(dir, Some(65534), Some(65534)).unwrap();
    }
    ws.chmod(&ws.state, 0o700);
    ws.chmod(&store, 0o500);
    let mut s = Served::spawn(&mut crate::util::as_nobody(
        ws.bin().args(["--index", "serve"]),
    ));
    let said = format!(
        "dsh-search index: cannot save the index: {}/index-",
        store.display()
    );
    let err = s.wait_stderr(&said);
    assert!(
        err.contains(": Permission denied (os error 13); the next start builds it from the tree\n"),
        "{err}"
    );
    s.send(&json!({"id": 1, "tool": "grep", "arguments": {"pattern": "needle3"}}));
    let a = s.recv();
    assert_eq!(
        content(&a),
        "Found 1 match\n\nf3.txt\nLine 1: needle3",
        "{a}"
    );
    assert_eq!(a["result"]["meta"]["index"], "mirror", "{a}");
    s.close();
    assert!(s.wait().success());
    let err = s.stderr();
    assert_eq!(err.matches("cannot save the index").count(), 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// A long-running server whose temp directory is missing when a result
/// first spills says the result could not be saved, and the next call
/// tries again: once the directory exists the result spills there
/// (`docs/tools.md`, "Spill"); nothing is remembered of the failure.
#[test]
fn a_spill_that_failed_is_tried_again_at_the_next_call() {
    let ws = Ws::new();
    ws.file("big.txt", format!("{}\n", "x".repeat(400)));
    let config = ws.base.join("config.json");
    std::fs::write(&config, json!({ "maxInlineBytes": 300 }).to_string()).unwrap();
    let tmp = ws.base.join("tmp");
    let mut s = Served::spawn(ws.bin().env("TMPDIR", &tmp).args([
        "--config",
        config.to_str().unwrap(),
        "serve",
    ]));
    let grep = |id: u32| json!({"id": id, "tool": "grep", "arguments": {"pattern": "x"}});
    s.send(&grep(1));
    let first = s.recv();
    let text = content(&first);
    assert!(
        text.starts_with("Found 1 match\n\nbig.txt\nLine 1: xxx"),
        "{first}"
    );
    assert!(!text.contains("(Omitted "), "{first}");
    std::fs::create_dir(&tmp).unwrap();
    s.send(&grep(2));
    let second = s.recv();
    let text = content(&second);
    assert!(text.len() <= 300, "{second}");
    let at = format!(
        "Full formatted result stored at: {}/dsh-spill-",
        tmp.display()
    );
    assert!(
        text.contains("\n\n(Omitted ") && text.contains(&at),
        "{second}"
    );
    s.close();
    assert!(s.wait().success());
}
