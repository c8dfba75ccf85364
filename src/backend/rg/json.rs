//! Parsing rg's `--files` and `--json` stdout into typed results.
//!
//! `--json` messages are adjacently tagged (`{"type":…,"data":…}`; the
//! summary puts `data` first, which serde accepts too), one struct per
//! message, as grep-printer 0.3.1's `jsont.rs` and rg 15.2.0's
//! `main.rs: print_stats` write them. Every value that [`crate::event`]
//! serializes is kept exactly (durations as secs + nanos), so writing the
//! parsed events back gives rg's bytes. `context` and message types this
//! version does not know are skipped: rg documents that the set "may expand
//! over time" (grep-printer `json.rs`, "Format").

use std::time::Duration;

use base64::Engine as _;
use serde::Deserialize;

use crate::event::{self, Event, SubMatch};

/// `--files` stdout → one entry per `\n`-terminated name, raw bytes. Empty
/// segments are skipped, nothing is trimmed (`seed-reference.md` §2.2); a
/// name holding `\n` splits in two, exactly as rg prints it.
pub(crate) fn parse_files(stdout: &[u8]) -> Vec<Vec<u8>> {
    stdout
        .split(|&b| b == b'\n')
        .filter(|s| !s.is_empty())
        .map(<[u8]>::to_vec)
        .collect()
}

/// `--json` stdout → events, in output order. Stops at the first line that
/// is not one of rg's messages and returns the events before it with the
/// reason, worded like the seed's details (`seed-reference.md` §2.1).
pub(crate) fn parse_json(stdout: &[u8]) -> (Vec<Event>, Option<String>) {
    let mut events = Vec::new();
    for line in stdout.split(|&b| b == b'\n').filter(|s| !s.is_empty()) {
        match parse_line(line) {
            Ok(Some(event)) => events.push(event),
            Ok(None) => {}
            Err(detail) => return (events, Some(detail)),
        }
    }
    (events, None)
}

/// One line → `Some(event)`, `None` for a skipped message, or the reason the
/// line is not a valid message.
fn parse_line(line: &[u8]) -> Result<Option<Event>, String> {
    let message: Message = match serde_json::from_slice(line) {
        Ok(m) => m,
        Err(err) => return fallback(line, &err),
    };
    Ok(match message {
        Message::Begin(b) => Some(Event::Begin(event::Begin {
            path: b.path.into_bytes("begin", "path")?,
        })),
        Message::Match(m) => Some(Event::Match(m.into_event()?)),
        Message::End(e) => Some(Event::End(event::End {
            path: e.path.into_bytes("end", "path")?,
            binary_offset: e.binary_offset,
            stats: e.stats.into_stats(),
        })),
        Message::Summary(s) => Some(Event::Summary(event::Summary {
            elapsed_total: s.elapsed_total.into_duration(),
            stats: s.stats.into_stats(),
        })),
        Message::Context(_) => None,
    })
}

/// A line that failed typed parsing: a message type this version does not
/// know is skipped (serde's `other` cannot carry data in an adjacently
/// tagged enum, hence this second look); anything else is an error, worded
/// like the seed's details where it has them (`seed-reference.md` §2.1).
/// This only runs on the error path.
fn fallback(line: &[u8], err: &serde_json::Error) -> Result<Option<Event>, String> {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) else {
        return Err("a line is not JSON".to_string());
    };
    let Some(record) = value.as_object() else {
        return Err("a record is not an object".to_string());
    };
    match record.get("type").and_then(|t| t.as_str()) {
        Some("begin" | "end" | "summary" | "context") => {}
        Some("match") => return Err(classify_match(record, err)),
        Some(_) => return Ok(None),
        None => {}
    }
    Err(format!("a record does not have rg's shape: {err}"))
}

fn classify_match(
    record: &serde_json::Map<String, serde_json::Value>,
    err: &serde_json::Error,
) -> String {
    let Some(data) = record.get("data").and_then(|d| d.as_object()) else {
        return "a match record has no data".to_string();
    };
    let is_data = |v: Option<&serde_json::Value>| {
        v.and_then(|v| v.as_object()).is_some_and(|o| {
            o.get("text").is_some_and(|t| t.is_string())
                || o.get("bytes").is_some_and(|t| t.is_string())
        })
    };
    if !is_data(data.get("path")) {
        return "a match record has no path text".to_string();
    }
    if !data.get("line_number").is_some_and(|n| n.is_number()) {
        return "a match record has no line number".to_string();
    }
    if !data.get("lines").is_some_and(|l| l.is_object()) {
        return "a match record has no line content".to_string();
    }
    if !is_data(data.get("lines")) {
        return "a match record has neither line text nor bytes".to_string();
    }
    format!("a match record does not have rg's shape: {err}")
}

/// One `--json` message.
#[derive(Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "lowercase")]
enum Message {
    Begin(BeginData),
    Match(MatchData),
    End(EndData),
    Summary(SummaryData),
    /// Never produced by the two invocations (no context flags are passed).
    Context(serde::de::IgnoredAny),
}

#[derive(Deserialize)]
struct BeginData {
    path: Data,
}

#[derive(Deserialize)]
struct MatchData {
    path: Data,
    lines: Data,
    line_number: u64,
    absolute_offset: u64,
    submatches: Vec<SubMatchData>,
}

/// `replacement` (only with `--replace`, never passed) is ignored; the text
/// of `match` is `lines[start..end]` by construction, so only the offsets
/// are kept and checked.
#[derive(Deserialize)]
struct SubMatchData {
    start: usize,
    end: usize,
}

#[derive(Deserialize)]
struct EndData {
    path: Data,
    binary_offset: Option<u64>,
    stats: StatsData,
}

#[derive(Deserialize)]
struct SummaryData {
    elapsed_total: DurationData,
    stats: StatsData,
}

#[derive(Deserialize)]
struct StatsData {
    elapsed: DurationData,
    searches: u64,
    searches_with_match: u64,
    bytes_searched: u64,
    bytes_printed: u64,
    matched_lines: u64,
    matches: u64,
}

/// `{"secs":…,"nanos":…,"human":…}`; `human` is derived from the other two
/// when writing, so it is not kept.
#[derive(Deserialize)]
struct DurationData {
    secs: u64,
    nanos: u32,
}

/// `{"text":"…"}` or `{"bytes":"<base64>"}` (grep-printer `jsont.rs: Data`).
#[derive(Deserialize)]
struct Data {
    text: Option<String>,
    bytes: Option<String>,
}

impl Data {
    fn into_bytes(self, message: &str, field: &str) -> Result<Vec<u8>, String> {
        match (self.text, self.bytes) {
            (Some(text), None) => Ok(text.into_bytes()),
            (None, Some(b64)) => base64::engine::general_purpose::STANDARD
                .decode(b64.as_bytes())
                .map_err(|e| format!("a {message} record has invalid base64 in {field}: {e}")),
            _ => Err(format!(
                "a {message} record's {field} has neither text nor bytes"
            )),
        }
    }
}

impl MatchData {
    fn into_event(self) -> Result<event::Match, String> {
        let path = self.path.into_bytes("match", "path")?;
        let lines = self.lines.into_bytes("match", "lines")?;
        let mut submatches = Vec::with_capacity(self.submatches.len());
        for sm in self.submatches {
            // Writing an event slices `lines[start..end]`; out-of-range
            // offsets would panic there, so they are rejected here.
            if sm.start > sm.end || sm.end > lines.len() {
                return Err(format!(
                    "a match record has a submatch {}..{} outside its {}-byte line",
                    sm.start,
                    sm.end,
                    lines.len()
                ));
            }
            submatches.push(SubMatch {
                start: sm.start,
                end: sm.end,
            });
        }
        Ok(event::Match {
            path: path.into(),
            lines: lines.into(),
            line_number: self.line_number,
            absolute_offset: self.absolute_offset,
            submatches: submatches.into(),
        })
    }
}

impl StatsData {
    fn into_stats(self) -> event::Stats {
        event::Stats {
            elapsed: self.elapsed.into_duration(),
            searches: self.searches,
            searches_with_match: self.searches_with_match,
            bytes_searched: self.bytes_searched,
            bytes_printed: self.bytes_printed,
            matched_lines: self.matched_lines,
            matches: self.matches,
        }
    }
}

impl DurationData {
    fn into_duration(self) -> Duration {
        Duration::new(self.secs, self.nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_split_on_newline_skipping_empty() {
        assert_eq!(
            parse_files(b"a\n\nb c\r\n\xff\n"),
            vec![b"a".to_vec(), b"b c\r".to_vec(), b"\xff".to_vec()]
        );
        assert!(parse_files(b"").is_empty());
    }

    #[test]
    fn context_and_unknown_types_are_skipped() {
        let (events, err) = parse_json(
            b"{\"type\":\"context\",\"data\":{\"x\":1}}\n{\"type\":\"later\",\"data\":{}}\n",
        );
        assert!(events.is_empty());
        assert_eq!(err, None);
    }

    #[test]
    fn malformed_lines_use_the_seed_details() {
        let detail = |s: &[u8]| parse_json(s).1.unwrap();
        assert_eq!(detail(b"nope\n"), "a line is not JSON");
        assert_eq!(detail(b"[1]\n"), "a record is not an object");
        assert_eq!(
            detail(b"{\"type\":\"match\"}\n"),
            "a match record has no data"
        );
        assert_eq!(
            detail(b"{\"type\":\"match\",\"data\":{\"path\":{}}}\n"),
            "a match record has no path text"
        );
        assert_eq!(
            detail(b"{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"f\"}}}\n"),
            "a match record has no line number"
        );
        assert_eq!(
            detail(
                b"{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"f\"},\"line_number\":1}}\n"
            ),
            "a match record has no line content"
        );
        assert_eq!(
            detail(b"{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"f\"},\"line_number\":1,\"lines\":{}}}\n"),
            "a match record has neither line text nor bytes"
        );
    }

    #[test]
    fn submatch_outside_line_is_rejected_not_panicking() {
        let line = b"{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"f\"},\"lines\":{\"text\":\"ab\\n\"},\
\"line_number\":1,\"absolute_offset\":0,\"submatches\":[{\"match\":{\"text\":\"x\"},\"start\":2,\"end\":9}]}}\n";
        let (events, err) = parse_json(line);
        assert!(events.is_empty());
        assert!(err.unwrap().contains("outside its 3-byte line"));
    }
}
