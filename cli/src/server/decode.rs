//! Decoding one request line of either server: the bounds every line
//! meets first ([`MAX_LINE_BYTES`], [`MAX_VALUES`]), the envelope read of a
//! line that does not parse, and the JSON-lines request
//! ([`jsonl_request`]); the MCP line is `mcp_decode`'s.
//!
//! Pure functions of the bytes: no I/O, no state, nothing of the crate
//! (only serde, serde_json and, in `mcp_decode`, rmcp). The fuzz targets
//! (`fuzz/`) compile this file and `mcp_decode.rs` by `#[path]`, so they
//! exercise exactly the code the servers run while the decoders stay
//! private to the binary: moving them into the library would make them
//! public API (and put rmcp's types in it) for the fuzzers' sake alone.

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The longest request line read; a longer one is skipped with an error
/// answer. Large enough for a `write` of a 10 MiB file with every byte
/// escaped twice over, small enough that a runaway client cannot exhaust
/// memory.
pub(crate) const MAX_LINE_BYTES: usize = 64 << 20;

/// The most JSON values a request line may hold, counted by the `,` and
/// `:` outside strings (so an array of `n` items counts `n - 1`, an object
/// of `n` members `2n - 1`). A parsed value costs tens of bytes whatever
/// its text, so a line of 31 million numbers would take gigabytes as a
/// `serde_json::Value`; no request of either protocol needs more than a
/// few dozen. Nesting without members is bounded by serde_json's recursion
/// limit (128 levels) instead.
pub(crate) const MAX_VALUES: usize = 10_000;

/// Why a line over [`MAX_VALUES`] is refused.
pub(crate) fn too_many_values_message() -> String {
    format!(
        "the request holds more than {MAX_VALUES} JSON values (array items and object members); \
         no request needs that many: send the tool's arguments alone"
    )
}

/// Whether `line` holds more than [`MAX_VALUES`] values. A scan of the
/// bytes that allocates nothing, stopping at the first value over; it runs
/// before any parse, on any bytes (JSON or not).
pub(crate) fn too_many_values(line: &[u8]) -> bool {
    let mut count = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in line {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b':' => {
                count += 1;
                if count > MAX_VALUES {
                    return true;
                }
            }
            _ => {}
        }
    }
    false
}

/// The `id` (its JSON text, when it is a string or a number) and whether
/// there is a `method` at the top of a line that did not parse as a whole
/// (nesting past serde_json's recursion limit, most likely, or too many
/// values): the rest of the object is skipped without recursion or
/// allocation, so such a request still gets its answer under its id.
pub(crate) fn envelope(line: &[u8]) -> Option<(Option<String>, bool)> {
    #[derive(serde::Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        id: Option<&'a RawValue>,
        method: Option<IgnoredAny>,
    }
    let e: Envelope<'_> = serde_json::from_slice(line).ok()?;
    let id = e.id.map(RawValue::get).filter(|id| is_id(id));
    Some((id.map(str::to_string), e.method.is_some()))
}

/// Whether a value's JSON text is a string or a number: the ids both
/// protocols accept.
fn is_id(raw: &str) -> bool {
    matches!(raw.as_bytes().first(), Some(b'"' | b'-' | b'0'..=b'9'))
}

/// The JSON text of the top-level `id` of a line that parsed as an object,
/// exactly as sent (`12345678901234567890123`, `1e2` and `"\u0041"` stay
/// as they are: a parse into a number or a string would not).
pub(crate) fn raw_id(line: &[u8]) -> Option<String> {
    // After a parse of the whole line as a `Value`, this parse of the same
    // bytes cannot fail; its map keeps the last of duplicate keys, as the
    // `Value`'s does.
    let members: BTreeMap<String, &RawValue> = serde_json::from_slice(line).ok()?;
    members.get("id").map(|id| id.get().to_string())
}

/// A JSON-lines request (`serve`), decoded; ids are their JSON text.
#[derive(Debug)]
pub(crate) enum Request {
    /// `{"id", "tool", "arguments"?, "cwd"?, "session"?, "value"?}`.
    Call {
        id: String,
        tool: String,
        arguments: Value,
        cwd: Option<String>,
        session: Option<String>,
        /// Whether the answer carries the canonical value (`"value"`,
        /// default true).
        value: bool,
    },
    /// `{"id", "cancel": true}`.
    Cancel { id: String },
    /// `{"id", "definitions": true}`.
    Definitions { id: String },
}

/// A JSON-lines line that is not a valid request: the answer's id (JSON
/// text, `null` when there is none) and why.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Rejection {
    pub(crate) id: String,
    pub(crate) why: String,
}

impl Rejection {
    fn new(id: &str, why: impl Into<String>) -> Rejection {
        Rejection {
            id: id.to_string(),
            why: why.into(),
        }
    }
}

/// Decode one JSON-lines line (`jsonl.rs`'s wire format); `None` for a
/// blank line. The line may end in `\n` or `\r\n`.
pub(crate) fn jsonl_request(line: &[u8]) -> Result<Option<Request>, Rejection> {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let envelope_id = || {
        envelope(line)
            .and_then(|(id, _)| id)
            .unwrap_or_else(|| "null".to_string())
    };
    if too_many_values(line) {
        return Err(Rejection::new(&envelope_id(), too_many_values_message()));
    }
    let request = match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(map)) => map,
        Ok(other) => {
            return Err(Rejection::new(
                "null",
                format!("a request is a JSON object, not {}", kind(&other)),
            ))
        }
        Err(e) => {
            return Err(Rejection::new(
                &envelope_id(),
                format!("the line is not JSON: {e}"),
            ))
        }
    };
    let id = match request.get("id") {
        Some(id @ (Value::String(_) | Value::Number(_))) => raw_id(line)
            .filter(|raw| is_id(raw))
            .unwrap_or_else(|| id.to_string()),
        Some(other) => {
            return Err(Rejection::new(
                &other.to_string(),
                format!("\"id\" must be a string or a number, not {}", kind(other)),
            ));
        }
        None => return Err(Rejection::new("null", "the request has no \"id\"")),
    };
    match route(&id, request) {
        Ok(request) => Ok(Some(request)),
        Err(why) => Err(Rejection::new(&id, why)),
    }
}

/// Route one request with a valid id; `Err` is why it is not valid.
fn route(id: &str, mut request: Map<String, Value>) -> Result<Request, String> {
    let kinds: Vec<&str> = ["tool", "cancel", "definitions"]
        .into_iter()
        .filter(|k| request.contains_key(*k))
        .collect();
    let allowed: &[&str] = match kinds.as_slice() {
        ["tool"] => &["id", "tool", "arguments", "cwd", "session", "value"],
        ["cancel"] | ["definitions"] => &["id", kinds[0]],
        [] => {
            return Err(
                "the request has none of \"tool\" (a call), \"cancel\" or \"definitions\"".into(),
            )
        }
        _ => {
            return Err(format!(
                "the request has {}: a request is one call, one cancel or one definitions",
                kinds.join(" and ")
            ))
        }
    };
    if let Some(key) = request.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(format!(
            "unknown key {} in a {} request; its keys are {}",
            quote(key),
            kinds[0],
            allowed.join(", ")
        ));
    }
    let id = id.to_string();
    match kinds[0] {
        "cancel" => {
            expect_true(&request, "cancel")?;
            Ok(Request::Cancel { id })
        }
        "definitions" => {
            expect_true(&request, "definitions")?;
            Ok(Request::Definitions { id })
        }
        _ => {
            let tool = match request.remove("tool") {
                Some(Value::String(t)) => t,
                Some(other) => {
                    return Err(format!("\"tool\" must be a string, not {}", kind(&other)))
                }
                None => unreachable!("the kind is tool"),
            };
            let arguments = request
                .remove("arguments")
                .unwrap_or_else(|| Value::Object(Map::new()));
            let cwd = optional_string(&request, "cwd")?;
            let session = optional_string(&request, "session")?;
            if session.as_deref() == Some("") {
                return Err("\"session\" must not be empty".into());
            }
            let value = match request.get("value") {
                None => true,
                Some(Value::Bool(b)) => *b,
                Some(other) => {
                    return Err(format!("\"value\" must be a boolean, not {}", kind(other)))
                }
            };
            Ok(Request::Call {
                id,
                tool,
                arguments,
                cwd,
                session,
                value,
            })
        }
    }
}

fn expect_true(request: &Map<String, Value>, key: &str) -> Result<(), String> {
    match request.get(key) {
        Some(Value::Bool(true)) => Ok(()),
        Some(other) => Err(format!("\"{key}\" must be true, not {}", short(other))),
        None => unreachable!("the kind was found by its key"),
    }
}

fn optional_string(request: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match request.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("\"{key}\" must be a string, not {}", kind(other))),
    }
}

/// What a JSON value is, for an error message.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value in an error message: scalars as JSON, containers by kind.
fn short(v: &Value) -> String {
    match v {
        Value::Array(_) | Value::Object(_) => kind(v).to_string(),
        scalar => clip(&scalar.to_string()),
    }
}

fn quote(s: &str) -> String {
    clip(&Value::from(s).to_string())
}

/// At most 100 bytes of `s` (on a character boundary), so that a hostile
/// key or value cannot make an error line huge.
fn clip(s: &str) -> String {
    const MAX: usize = 100;
    if s.len() <= MAX {
        return s.to_string();
    }
    let end = (0..=MAX)
        .rev()
        .find(|&i| s.is_char_boundary(i))
        .unwrap_or(0);
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::{jsonl_request, too_many_values, Request, MAX_VALUES};

    fn id_of(line: &str) -> String {
        match jsonl_request(line.as_bytes()) {
            Ok(Some(Request::Definitions { id })) => id,
            other => panic!("{line}: {other:?}"),
        }
    }

    /// An id too large for an `f64` (found by the fuzz target): JSON text
    /// that serde_json's `Value` refuses, echoed as sent all the same, and
    /// itself JSON (`IgnoredAny` reads its syntax, as `RawValue` does).
    #[test]
    fn an_id_past_f64_is_json_text_echoed_as_sent() {
        let line = br#"{"id":12348734879125608e79123456789091256087912345678901237890,"def1ni(ions":true}"#;
        let id = super::raw_id(line).expect("the envelope reads the id");
        assert_eq!(
            id,
            "12348734879125608e79123456789091256087912345678901237890"
        );
        assert!(serde_json::from_str::<serde_json::Value>(&id).is_err());
        assert!(serde_json::from_str::<serde::de::IgnoredAny>(&id).is_ok());
        assert!(jsonl_request(line).is_err(), "not a request");
    }

    #[test]
    fn ids_are_their_json_text_as_sent() {
        for id in [
            "12345678901234567890123",
            "1e2",
            "-0",
            "-0.0",
            "1E-400",
            "0.10",
            r#""a\u0041\n\"b""#,
            r#""""#,
            r#""\ud83d\ude00""#,
        ] {
            assert_eq!(id_of(&format!(r#"{{"id":{id},"definitions":true}}"#)), id);
            assert_eq!(
                id_of(&format!("{{ \"id\" :\t{id} , \"definitions\":true}}\r\n")),
                id,
                "whitespace around the id is not part of it"
            );
        }
        // Duplicate keys: the last one counts, for the id as for the rest.
        assert_eq!(id_of(r#"{"id":1,"id":2.50,"definitions":true}"#), "2.50");
        // A number serde_json cannot hold: the line is refused, under the
        // id as sent.
        let refused = jsonl_request(br#"{"id":1E+400,"definitions":true}"#).unwrap_err();
        assert_eq!(refused.id, "1E+400");
        assert!(refused
            .why
            .starts_with("the line is not JSON: number out of range"));
    }

    #[test]
    fn values_are_counted_outside_strings() {
        let many = format!("[{}0]", "0,".repeat(MAX_VALUES + 1));
        assert!(too_many_values(many.as_bytes()));
        let fewer = format!("[{}0]", "0,".repeat(MAX_VALUES));
        assert!(!too_many_values(fewer.as_bytes()));
        let in_string = format!(r#"["{}\"{}"]"#, ",".repeat(MAX_VALUES), ":".repeat(9));
        assert!(!too_many_values(in_string.as_bytes()));
        let after_escape = format!(r#"["\\",{}0]"#, "0,".repeat(MAX_VALUES));
        assert!(
            too_many_values(after_escape.as_bytes()),
            "the string ends after \\\\"
        );
    }
}
