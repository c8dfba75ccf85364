//! `dsh-search glob|grep|call|definitions` as a process: output formats,
//! exit statuses, `--config`, `--session` and the local spill store
//! (`contract.md` §8). Searches run on `--backend rg` (a real rg 15.2.0 via
//! `DSH_SEARCH_RG` or `PATH`).

use std::path::Path;
use std::process::Output;

use crate::util::ws::Ws;
use serde_json::Value;

/// The binary on `ws` with `args`.
fn dsh(ws: &Ws, args: &[&str]) -> Output {
    ws.cmd(args).output().unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// A session's spill directory, as `seed-reference.md` §3.6 lays it out:
/// `session-<first 12 hex of sha256(session id)>`.
fn session_dir(owner: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(owner.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("session-{}", &hex[..12])
}

#[test]
fn exit_statuses_follow_the_result() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let o = dsh(&t, &["--backend", "rg", "grep", "needle"]);
    assert_eq!(stdout(&o), "Found 1 match\n\na.txt\nLine 1: needle one\n");
    assert_eq!(o.status.code(), Some(0));
    let o = dsh(&t, &["--backend", "rg", "grep", "absent"]);
    assert_eq!(stdout(&o), "No matches found\n");
    assert_eq!(o.status.code(), Some(1));
    let o = dsh(&t, &["--backend", "rg", "glob", "*.zip"]);
    assert_eq!(stdout(&o), "No files found\n");
    assert_eq!(o.status.code(), Some(1));
    let o = dsh(&t, &["--backend", "rg", "grep", "("]);
    assert!(
        stdout(&o).starts_with("Error: grep pattern rejected by ripgrep: rg: regex parse error:")
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn dash_dash_takes_flag_shaped_patterns() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let o = dsh(&t, &["--backend", "rg", "grep", "--", "-flag", "a.txt"]);
    assert_eq!(stdout(&o), "Found 1 match\n\na.txt\nLine 2: -flag line\n");
    assert_eq!(o.status.code(), Some(0));
}

#[test]
fn json_format_prints_the_result_object() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let o = dsh(&t, &["--backend", "rg", "glob", "a.*", "--format", "json"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["content"], "a.txt");
    assert_eq!(v["isError"], false);
    assert_eq!(
        v["value"],
        serde_json::json!({"root": ".", "paths": ["a.txt"]})
    );
    assert_eq!(v["meta"]["shape"], "paths");
    let o = dsh(
        &t,
        &["call", "grep", "{\"pattern\":\"\"}", "--format", "json"],
    );
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        v,
        serde_json::json!({"content": "Error: pattern must be a non-empty string", "isError": true,
            "error": {"message": "pattern must be a non-empty string"}})
    );
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn call_validates_arguments() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let o = dsh(&t, &["call", "grep", "{}"]);
    assert_eq!(
        stdout(&o),
        "Error: invalid arguments: missing required property \"pattern\"\n"
    );
    assert_eq!(o.status.code(), Some(2));
    let o = dsh(&t, &["call", "grep", "not json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not valid JSON"));
    let o = dsh(
        &t,
        &[
            "--backend",
            "rg",
            "call",
            "grep",
            "{\"pattern\":\"one\",\"path\":\"a.txt\"}",
        ],
    );
    assert_eq!(stdout(&o), "Found 1 match\n\na.txt\nLine 1: needle one\n");
}

#[test]
fn config_errors_are_reported() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let cfg = t.path().join("c.json");
    std::fs::write(&cfg, r#"{"globMaxResults": 0}"#).unwrap();
    let o = dsh(&t, &["--config", cfg.to_str().unwrap(), "glob", "*"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&o.stderr),
        "dsh-search: tool-fs-search: globMaxResults must be a positive integer\n"
    );
    std::fs::write(&cfg, r#"{"bogus": 1}"#).unwrap();
    let o = dsh(&t, &["--config", cfg.to_str().unwrap(), "definitions"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("unknown configuration key \"bogus\""));
}

#[test]
fn definitions_follow_the_config() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let o = dsh(&t, &["definitions"]);
    assert_eq!(o.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 5);
    assert!(v[3]["description"]
        .as_str()
        .unwrap()
        .contains("returns the first 100 paths"));
    let cfg = t.path().join("c.json");
    std::fs::write(
        &cfg,
        r#"{"sampleOverCapGlobResults": true, "globMaxResults": 4}"#,
    )
    .unwrap();
    let o = dsh(&t, &["--config", cfg.to_str().unwrap(), "definitions"]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v[3]["description"]
        .as_str()
        .unwrap()
        .contains("instead returns 4 paths sampled across top-level entries"));
}

#[test]
fn session_spills_to_the_configured_root() {
    let t = Ws::new()
        .with("a.txt", "needle one\n-flag line\n")
        .with("b.txt", "nothing\n");
    let spill = tempfile::tempdir().unwrap();
    let cfg = t.path().join("c.json");
    let conf = serde_json::json!({"globMaxResults": 1, "spillRoot": spill.path()});
    std::fs::write(&cfg, conf.to_string()).unwrap();
    let c = cfg.to_str().unwrap();
    // Without a session there is no owner: the page and the unsaved footer.
    let o = dsh(&t, &["--backend", "rg", "--config", c, "glob", "*.txt"]);
    let text = stdout(&o);
    assert!(
        text.ends_with("\n\n(Showing 1 of 2 paths. The complete result could not be saved; narrow pattern or path to see more.)\n"),
        "{text}"
    );
    assert_eq!(o.status.code(), Some(0));
    let o = dsh(
        &t,
        &[
            "--backend",
            "rg",
            "--config",
            c,
            "--session",
            "s-1",
            "glob",
            "*.txt",
        ],
    );
    let text = stdout(&o);
    let footer = text.split_once("\n\n").unwrap().1;
    let locator = footer
        .strip_prefix("(Showing 1 of 2 paths. Full sorted result stored at: ")
        .and_then(|f| {
            f.strip_suffix(
                ". Use read with offset/limit, or grep this path to search within it.)\n",
            )
        })
        .unwrap_or_else(|| panic!("{text}"));
    let saved = std::fs::read_to_string(locator).unwrap();
    assert_eq!(saved.lines().count(), 2);
    assert!(Path::new(locator).starts_with(spill.path().join(session_dir("s-1"))));
}

#[test]
fn inline_cap_applies_to_cli_calls() {
    let t = Ws::new();
    let long = "x".repeat(400);
    std::fs::write(t.path().join("big.txt"), format!("{long}\n")).unwrap();
    let spill = tempfile::tempdir().unwrap();
    let cfg = t.path().join("c.json");
    let conf = serde_json::json!({"maxInlineBytes": 300, "spillRoot": spill.path()});
    std::fs::write(&cfg, conf.to_string()).unwrap();
    let c = cfg.to_str().unwrap();
    let o = dsh(
        &t,
        &[
            "--backend",
            "rg",
            "--config",
            c,
            "--session",
            "s",
            "grep",
            "x",
            "big.txt",
        ],
    );
    let text = stdout(&o);
    assert!(text.len() <= 301, "{text}");
    assert!(
        text.starts_with("Found 1 match\n\nbig.txt\nLine 1: xxx"),
        "{text}"
    );
    assert!(text.contains("\n\n(Omitted "), "{text}");
    assert!(
        text.ends_with(". Use read with offset/limit, or grep this path to search within it.)\n")
    );
}
