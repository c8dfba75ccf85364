//! The grep event stream: typed values whose serialization is rg's `--json`
//! output, byte for byte (`rg-semantics.md` §7).
//!
//! # Wire format
//!
//! One JSON object per line. `begin`, `match` and `end` come from
//! grep-printer's `jsont.rs` and keep its field order; `summary` is written by
//! rg's `main.rs: print_stats` through `serde_json::json!`, so its keys are
//! sorted at every level. Strings that may not be UTF-8 (paths, lines,
//! submatches) are `{"text":…}` when valid UTF-8, else `{"bytes":"<base64>"}`
//! (standard alphabet, padded). Escaping is serde_json's.

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;

/// A slice of a buffer shared by several values: the engine keeps the lines
/// (and submatches) of one file's matches in one buffer, so a match costs no
/// allocation of its own. Reads as the slice it stands for.
#[derive(Clone)]
pub struct Shared<T> {
    buf: Arc<[T]>,
    range: Range<usize>,
}

impl<T> Shared<T> {
    /// `buf[range]`. Panics if `range` is not within `buf`.
    pub fn new(buf: Arc<[T]>, range: Range<usize>) -> Shared<T> {
        assert!(range.start <= range.end && range.end <= buf.len());
        Shared { buf, range }
    }
}

impl<T> std::ops::Deref for Shared<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf[self.range.clone()]
    }
}

impl<T> From<Vec<T>> for Shared<T> {
    fn from(v: Vec<T>) -> Shared<T> {
        let range = 0..v.len();
        Shared {
            buf: v.into(),
            range,
        }
    }
}

impl<T: Clone> From<&[T]> for Shared<T> {
    fn from(v: &[T]) -> Shared<T> {
        Shared::from(v.to_vec())
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Shared<T>) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Shared<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

/// One message of rg's `--json` output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// A file with at least one match starts.
    Begin(Begin),
    /// One matching line.
    Match(Match),
    /// A file with at least one match ends.
    End(End),
    /// The last message: totals over every file searched.
    Summary(Summary),
}

/// `{"type":"begin","data":{"path":P}}`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Begin {
    /// The path as rg prints it (raw bytes).
    pub path: Vec<u8>,
}

/// `{"type":"match","data":{"path":P,"lines":D,"line_number":N,"absolute_offset":N,"submatches":[…]}}`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Match {
    /// The path as rg prints it (raw bytes), shared by a file's matches.
    pub path: Arc<[u8]>,
    /// The whole line, terminator (`\n` or `\r\n`) included when present.
    pub lines: Shared<u8>,
    /// 1-based line number.
    pub line_number: u64,
    /// Byte offset of the line start in the (transcoded) stream.
    pub absolute_offset: u64,
    /// Byte ranges of each match inside `lines`.
    pub submatches: Shared<SubMatch>,
}

/// One submatch: `{"match":D,"start":N,"end":N}`; the text is
/// `lines[start..end]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SubMatch {
    /// Start offset in `lines`.
    pub start: usize,
    /// End offset (exclusive) in `lines`.
    pub end: usize,
}

/// `{"type":"end","data":{"path":P,"binary_offset":N|null,"stats":{…}}}`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct End {
    /// The path as rg prints it (raw bytes).
    pub path: Vec<u8>,
    /// Where binary data was detected, if it was.
    pub binary_offset: Option<u64>,
    /// This file's statistics.
    pub stats: Stats,
}

/// `{"data":{"elapsed_total":…,"stats":…},"type":"summary"}` (sorted keys).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// Wall time of the whole search.
    pub elapsed_total: Duration,
    /// The sum of every searched file's statistics.
    pub stats: Stats,
}

/// grep-printer's `Stats`, field for field.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Stats {
    /// Time spent searching.
    pub elapsed: Duration,
    /// Files searched.
    pub searches: u64,
    /// Files searched that had at least one match.
    pub searches_with_match: u64,
    /// Bytes searched (transcoded bytes for UTF-16; a UTF-8 BOM excluded).
    pub bytes_searched: u64,
    /// Bytes of `begin` and `match` lines printed (the `end` line excluded).
    pub bytes_printed: u64,
    /// Matching lines.
    pub matched_lines: u64,
    /// Submatches reported.
    pub matches: u64,
}

impl Stats {
    /// Add `other` into `self`, as grep-printer's `Stats: AddAssign` does.
    pub(crate) fn add(&mut self, other: &Stats) {
        self.elapsed += other.elapsed;
        self.searches += other.searches;
        self.searches_with_match += other.searches_with_match;
        self.bytes_searched += other.bytes_searched;
        self.bytes_printed += other.bytes_printed;
        self.matched_lines += other.matched_lines;
        self.matches += other.matches;
    }
}

impl Event {
    /// Append this event's JSON line, `\n` included, to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Event::Begin(b) => {
                out.extend_from_slice(b"{\"type\":\"begin\",\"data\":{\"path\":");
                write_data(out, &b.path);
                out.extend_from_slice(b"}}\n");
            }
            Event::Match(m) => m.write_json(out),
            Event::End(e) => {
                out.extend_from_slice(b"{\"type\":\"end\",\"data\":{\"path\":");
                write_data(out, &e.path);
                out.extend_from_slice(b",\"binary_offset\":");
                match e.binary_offset {
                    Some(n) => write_u64(out, n),
                    None => out.extend_from_slice(b"null"),
                }
                out.extend_from_slice(b",\"stats\":");
                write_stats_printer_order(out, &e.stats);
                out.extend_from_slice(b"}}\n");
            }
            Event::Summary(s) => {
                out.extend_from_slice(b"{\"data\":{\"elapsed_total\":");
                write_duration_sorted(out, s.elapsed_total, format_secs_f64(s.elapsed_total));
                out.extend_from_slice(b",\"stats\":");
                write_stats_sorted(out, &s.stats);
                out.extend_from_slice(b"},\"type\":\"summary\"}\n");
            }
        }
    }

    /// The length of this event's JSON line, `\n` included.
    pub(crate) fn json_len(&self) -> usize {
        let mut buf = Vec::new();
        self.write_json(&mut buf);
        buf.len()
    }
}

impl Match {
    /// The length of [`Match::write_json`]'s line, counted without writing
    /// it: the engine counts every match line toward `bytes_printed` and
    /// the raw budget, and most of them are never printed.
    #[cfg(test)]
    pub(crate) fn json_len(&self) -> usize {
        match_json_len(
            data_len(&self.path),
            &self.lines,
            self.line_number,
            self.absolute_offset,
            &self.submatches,
        )
    }

    /// Append this match's JSON line, `\n` included, to `out`.
    pub fn write_json(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(b"{\"type\":\"match\",\"data\":{\"path\":");
        write_data(out, &self.path);
        out.extend_from_slice(b",\"lines\":");
        write_data(out, &self.lines);
        out.extend_from_slice(b",\"line_number\":");
        write_u64(out, self.line_number);
        out.extend_from_slice(b",\"absolute_offset\":");
        write_u64(out, self.absolute_offset);
        out.extend_from_slice(b",\"submatches\":[");
        for (i, sm) in self.submatches.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"match\":");
            write_data(out, &self.lines[sm.start..sm.end]);
            out.extend_from_slice(b",\"start\":");
            write_u64(out, sm.start as u64);
            out.extend_from_slice(b",\"end\":");
            write_u64(out, sm.end as u64);
            out.push(b'}');
        }
        out.extend_from_slice(b"]}}\n");
    }
}

/// `{"text":"…"}` for valid UTF-8, else `{"bytes":"<base64>"}`
/// (grep-printer `jsont.rs: Data::from_bytes`).
pub(crate) fn write_data(out: &mut Vec<u8>, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            out.extend_from_slice(b"{\"text\":");
            write_str(out, text);
            out.push(b'}');
        }
        Err(_) => {
            out.extend_from_slice(b"{\"bytes\":\"");
            out.extend_from_slice(
                base64::engine::general_purpose::STANDARD
                    .encode(bytes)
                    .as_bytes(),
            );
            out.extend_from_slice(b"\"}");
        }
    }
}

/// The length [`write_data`] writes for `bytes`.
/// [`Match::json_len`] from its parts, with the path's [`data_len`] worked
/// out once for all of a file's matches.
pub(crate) fn match_json_len(
    path_len: usize,
    lines: &[u8],
    line_number: u64,
    absolute_offset: u64,
    submatches: &[SubMatch],
) -> usize {
    const FIXED: usize = r#"{"type":"match","data":{"path":,"lines":,"line_number":,"absolute_offset":,"submatches":[]}}"#.len() + 1;
    const PER_SUB: usize = r#"{"match":,"start":,"end":}"#.len();
    let subs: usize = submatches
        .iter()
        .map(|sm| {
            PER_SUB
                + data_len(&lines[sm.start..sm.end])
                + digits(sm.start as u64)
                + digits(sm.end as u64)
        })
        .sum::<usize>()
        + submatches.len().saturating_sub(1);
    FIXED + path_len + data_len(lines) + digits(line_number) + digits(absolute_offset) + subs
}

pub(crate) fn data_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        // `{"text":"…"}`
        Ok(text) => 11 + escaped_len(text),
        // `{"bytes":"…"}` around padded base64.
        Err(_) => 12 + bytes.len().div_ceil(3) * 4,
    }
}

/// The length of `s` inside serde_json's quotes: `"` and `\` and the five
/// short control escapes take 2 bytes, other bytes below 0x20 `\u00XX`
/// (serde_json `ser.rs: ESCAPE`), every other byte itself.
fn escaped_len(s: &str) -> usize {
    s.len()
        + s.bytes()
            .map(|b| match b {
                b'"' | b'\\' | 0x08 | 0x09 | 0x0A | 0x0C | 0x0D => 1,
                0x00..=0x1F => 5,
                _ => 0,
            })
            .sum::<usize>()
}

/// The number of decimal digits of `n`.
fn digits(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// A JSON string with serde_json's escaping (it is serde_json that escapes).
fn write_str(out: &mut Vec<u8>, s: &str) {
    serde_json::to_writer(&mut *out, s).expect("writing to a Vec cannot fail");
}

fn write_u64(out: &mut Vec<u8>, n: u64) {
    use std::io::Write;
    write!(out, "{n}").expect("writing to a Vec cannot fail");
}

/// grep-printer's `NiceDuration` text: `{:0.6}s` of secs + nanos / 1e9.
fn format_nice(d: Duration) -> String {
    let fractional = (d.subsec_nanos() as f64) / 1_000_000_000.0;
    format!("{:0.6}s", d.as_secs() as f64 + fractional)
}

/// rg `print_stats`' `elapsed_total.human`: `{:0.6}s` of `as_secs_f64`.
fn format_secs_f64(d: Duration) -> String {
    format!("{:0.6}s", d.as_secs_f64())
}

/// `{"secs":N,"nanos":N,"human":"…"}` (grep-printer field order).
fn write_duration_printer_order(out: &mut Vec<u8>, d: Duration) {
    out.extend_from_slice(b"{\"secs\":");
    write_u64(out, d.as_secs());
    out.extend_from_slice(b",\"nanos\":");
    write_u64(out, u64::from(d.subsec_nanos()));
    out.extend_from_slice(b",\"human\":");
    write_str(out, &format_nice(d));
    out.push(b'}');
}

/// `{"human":"…","nanos":N,"secs":N}` (sorted keys).
fn write_duration_sorted(out: &mut Vec<u8>, d: Duration, human: String) {
    out.extend_from_slice(b"{\"human\":");
    write_str(out, &human);
    out.extend_from_slice(b",\"nanos\":");
    write_u64(out, u64::from(d.subsec_nanos()));
    out.extend_from_slice(b",\"secs\":");
    write_u64(out, d.as_secs());
    out.push(b'}');
}

fn write_stats_printer_order(out: &mut Vec<u8>, s: &Stats) {
    out.extend_from_slice(b"{\"elapsed\":");
    write_duration_printer_order(out, s.elapsed);
    for (key, n) in [
        ("searches", s.searches),
        ("searches_with_match", s.searches_with_match),
        ("bytes_searched", s.bytes_searched),
        ("bytes_printed", s.bytes_printed),
        ("matched_lines", s.matched_lines),
        ("matches", s.matches),
    ] {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        write_u64(out, n);
    }
    out.push(b'}');
}

/// The summary's stats went through `serde_json::Value`, so keys are sorted
/// and `elapsed` is grep-printer's `NiceDuration` with sorted keys.
fn write_stats_sorted(out: &mut Vec<u8>, s: &Stats) {
    out.extend_from_slice(b"{\"bytes_printed\":");
    write_u64(out, s.bytes_printed);
    out.extend_from_slice(b",\"bytes_searched\":");
    write_u64(out, s.bytes_searched);
    out.extend_from_slice(b",\"elapsed\":");
    write_duration_sorted(out, s.elapsed, format_nice(s.elapsed));
    for (key, n) in [
        ("matched_lines", s.matched_lines),
        ("matches", s.matches),
        ("searches", s.searches),
        ("searches_with_match", s.searches_with_match),
    ] {
        out.extend_from_slice(b",\"");
        out.extend_from_slice(key.as_bytes());
        out.extend_from_slice(b"\":");
        write_u64(out, n);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    // Expected lines below were written by hand from grep-printer 0.3.1's
    // jsont.rs field order and rg 15.2.0's print_stats (sorted keys).
    #[test]
    fn begin_text_and_bytes() {
        let mut out = Vec::new();
        Event::Begin(Begin {
            path: b"a\"b".to_vec(),
        })
        .write_json(&mut out);
        Event::Begin(Begin {
            path: b"\xff".to_vec(),
        })
        .write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"begin\",\"data\":{\"path\":{\"text\":\"a\\\"b\"}}}\n\
             {\"type\":\"begin\",\"data\":{\"path\":{\"bytes\":\"/w==\"}}}\n"
        );
    }

    #[test]
    fn shared_slices_read_as_their_range() {
        let buf: Arc<[u8]> = Arc::from(&b"one\ntwo\n"[..]);
        let a = Shared::new(buf.clone(), 0..4);
        let b = Shared::new(buf, 4..8);
        assert_eq!(&*a, b"one\n");
        assert_eq!(&*b, b"two\n");
        assert_eq!(b, Shared::from(b"two\n".to_vec()));
        assert_ne!(a, b);
        assert_eq!(format!("{a:?}"), format!("{:?}", b"one\n"));
        let empty: Shared<SubMatch> = Vec::new().into();
        assert!(empty.is_empty());
    }

    #[test]
    #[should_panic]
    fn shared_range_must_fit() {
        let _ = Shared::new(Arc::from(&b"ab"[..]), 1..3);
    }

    #[test]
    fn match_with_submatches_and_control_escape() {
        let m = Match {
            path: b"f".to_vec().into(),
            lines: b"a\x01b\tc\n".to_vec().into(),
            line_number: 3,
            absolute_offset: 10,
            submatches: vec![SubMatch { start: 0, end: 2 }].into(),
        };
        let mut out = Vec::new();
        m.write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"match\",\"data\":{\"path\":{\"text\":\"f\"},\"lines\":{\"text\":\"a\\u0001b\\tc\\n\"},\
             \"line_number\":3,\"absolute_offset\":10,\"submatches\":[{\"match\":{\"text\":\"a\\u0001\"},\"start\":0,\"end\":2}]}}\n"
        );
    }

    /// `json_len` against the written line, on inputs where escaping,
    /// base64 and digit counts change the length.
    #[test]
    fn match_json_len_is_the_written_length() {
        let mut lines: Vec<Vec<u8>> = vec![
            b"plain line\n".to_vec(),
            b"q\"uo\\te\x01\x1f\x08\x0c\r\t\x7f\n".to_vec(),
            "caf\u{e9} \u{1F600}\n".as_bytes().to_vec(),
            b"\xff\xfe bytes\n".to_vec(),
            b"".to_vec(),
            b"ab".to_vec(),
        ];
        lines.push((0u8..=255).collect());
        let paths: [&[u8]; 3] = [b"f", b"dir/\"odd\\name\t.c", b"\xff.txt"];
        for path in paths {
            for l in &lines {
                let n = l.len();
                let subs_sets = [
                    vec![],
                    vec![SubMatch {
                        start: 0,
                        end: n.min(2),
                    }],
                    vec![
                        SubMatch { start: 0, end: 0 },
                        SubMatch {
                            start: n / 2,
                            end: n,
                        },
                        SubMatch { start: n, end: n },
                    ],
                ];
                for subs in subs_sets {
                    for (ln, off) in [(0, 0), (9, 10), (1234567, u64::MAX)] {
                        let m = Match {
                            path: path.into(),
                            lines: l.clone().into(),
                            line_number: ln,
                            absolute_offset: off,
                            submatches: subs.clone().into(),
                        };
                        let mut out = Vec::new();
                        m.write_json(&mut out);
                        assert_eq!(m.json_len(), out.len(), "{}", String::from_utf8_lossy(&out));
                    }
                }
            }
        }
    }

    #[test]
    fn end_and_summary_key_orders() {
        let stats = Stats {
            elapsed: Duration::new(1, 500),
            searches: 1,
            searches_with_match: 1,
            bytes_searched: 7,
            bytes_printed: 99,
            matched_lines: 2,
            matches: 3,
        };
        let mut out = Vec::new();
        Event::End(End {
            path: b"f".to_vec(),
            binary_offset: None,
            stats,
        })
        .write_json(&mut out);
        Event::Summary(Summary {
            elapsed_total: Duration::new(0, 340_000),
            stats,
        })
        .write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"type\":\"end\",\"data\":{\"path\":{\"text\":\"f\"},\"binary_offset\":null,\"stats\":{\"elapsed\":{\"secs\":1,\"nanos\":500,\"human\":\"1.000001s\"},\
             \"searches\":1,\"searches_with_match\":1,\"bytes_searched\":7,\"bytes_printed\":99,\"matched_lines\":2,\"matches\":3}}}\n\
             {\"data\":{\"elapsed_total\":{\"human\":\"0.000340s\",\"nanos\":340000,\"secs\":0},\"stats\":{\"bytes_printed\":99,\"bytes_searched\":7,\
             \"elapsed\":{\"human\":\"1.000001s\",\"nanos\":500,\"secs\":1},\"matched_lines\":2,\"matches\":3,\"searches\":1,\"searches_with_match\":1}},\"type\":\"summary\"}\n"
        );
    }
}
