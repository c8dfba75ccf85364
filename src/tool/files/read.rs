//! `read` (`seed-reference.md` §6.1): one stat, the whole file or a stream,
//! the line window, the footer and the envelope.

use serde_json::{json, Value};

use super::{envelope, file_path_arg, fs_error, FilesConfig, ObservationPolicy};
use crate::fs::{FileKind, FsError, FsErrorCode, TextFs, Verb};
use crate::tool::{CallContext, ToolError};

/// Run `read`.
pub(crate) fn read(
    cfg: &FilesConfig,
    fs: &TextFs,
    policy: Option<&ObservationPolicy>,
    args: &Value,
    ctx: &CallContext,
) -> Result<(String, Value), ToolError> {
    let file_path = file_path_arg(args)?;
    let offset = positive_int(args, "offset")?.unwrap_or(1);
    let limit = positive_int(args, "limit")?.unwrap_or(cfg.read_limit);
    if limit > cfg.read_limit {
        return Err(ToolError::plain(format!(
            "limit must be less than or equal to {}",
            cfg.read_limit
        )));
    }
    let owner = ctx.session_id.as_deref();
    let target = fs
        .resolve_for(Verb::Read, file_path, &ctx.workdir)
        .map_err(fs_error)?;
    let p = target.display_str();
    // The one stat: existence, type, size routing and the version recorded
    // on success, taken before the content is read.
    let Some(stat) = fs.stat(&target).map_err(fs_error)? else {
        if let Some(policy) = policy {
            policy.observe(owner, &target, None).map_err(fs_error)?;
        }
        return Err(fs_error(FsError::cannot(
            FsErrorCode::NotFound,
            Verb::Read,
            &p,
            "not found",
        )));
    };
    if stat.kind != FileKind::File {
        return Err(fs_error(FsError::cannot(
            FsErrorCode::NotRegularFile,
            Verb::Read,
            &p,
            "not a regular file",
        )));
    }
    let mut window = ReadWindow::new(cfg, offset, limit);
    if stat.size.is_none_or(|s| s >= cfg.read_stream_min_size) {
        let mut aborted = false;
        fs.stream_text(&target, &ctx.cancel, &mut |chunk| {
            if ctx.cancel.is_cancelled() {
                aborted = true;
                return false;
            }
            window.push(chunk);
            true
        })
        .map_err(fs_error)?;
        if aborted {
            return Err(fs_error(FsError::new(FsErrorCode::Aborted, "read aborted")));
        }
    } else {
        window.push(&fs.read_text(&target).map_err(fs_error)?);
    }
    window.finish();
    let total = window.total_lines;
    if !window.capped && offset > total && !(total == 0 && offset == 1) {
        return Err(fs_error(FsError {
            code: FsErrorCode::NotFound,
            message: format!(
                "offset {} is out of range for \"{p}\" ({total} lines)",
                js_number(args.get("offset").and_then(Value::as_f64).unwrap_or(1.0))
            ),
            path: Some(p),
        }));
    }
    if let Some(policy) = policy {
        policy
            .observe(owner, &target, Some(&stat.version))
            .map_err(fs_error)?;
    }
    let content = render(&p, offset, limit, &window.lines, total);
    let lines: Vec<Value> = window
        .lines
        .iter()
        .map(|(n, t)| json!({ "number": n, "text": t }))
        .collect();
    let value = json!({ "path": p, "offset": offset, "lines": lines, "totalLines": total });
    Ok((content, value))
}

/// `offset` or `limit`: absent, or an integer of at least 1.
fn positive_int(args: &Value, name: &str) -> Result<Option<u64>, ToolError> {
    let Some(v) = args.get(name) else {
        return Ok(None);
    };
    let n = v.as_f64().unwrap_or(f64::NAN);
    if !n.is_finite() || n.fract() != 0.0 || n < 1.0 {
        return Err(ToolError::plain(format!(
            "{name} must be a positive integer"
        )));
    }
    Ok(Some(if n >= u64::MAX as f64 {
        u64::MAX
    } else {
        n as u64
    }))
}

/// `n` as JavaScript's `String(n)` writes it (ECMA-262 `Number::toString`),
/// as the original's template literal shows the offset given: the shortest
/// digits that round-trip, padded with zeros below 1e21 (`1e20` is
/// `100000000000000000000`, 2^64 is `18446744073709552000`), exponent form
/// from there on (`1e308` is `1e+308`). The offset is held as a saturated
/// `u64`, which must not leak into the text (`18446744073709551615`).
fn js_number(n: f64) -> String {
    // Rust's `{:e}` gives the same shortest round-trip digits: `d[.ddd]eX`.
    let sci = format!("{n:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => ("-", m),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (0..21).contains(&exp) {
        let int_len = exp as usize + 1;
        if digits.len() <= int_len {
            return format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()));
        }
        return format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..]);
    }
    if exp >= 21 {
        let rest = &digits[1..];
        let dot = if rest.is_empty() { "" } else { "." };
        return format!("{sign}{}{dot}{rest}e+{exp}", &digits[..1]);
    }
    // Below 1 (not reachable for an offset of at least 1).
    format!("{n}")
}

/// The rendered envelope (`seed-reference.md` §6.1 "Rendering").
fn render(p: &str, offset: u64, limit: u64, lines: &[(u64, String)], total: u64) -> String {
    let end = lines.last().map_or(offset.saturating_sub(1), |(n, _)| *n);
    // Re-derived, not the scan's flag (`seed-reference.md` §10 item 15).
    let capped = (lines.len() as u64) < limit && end < total;
    let footer = if capped {
        format!(
            "(Output capped. Showing lines {offset}-{end}. Use offset={} to continue.)",
            end + 1
        )
    } else if end < total {
        format!(
            "(Showing lines {offset}-{end} of {total}. Use offset={} to continue.)",
            end + 1
        )
    } else {
        format!("(End of file - total {total} lines)")
    };
    let body = if lines.is_empty() {
        footer
    } else {
        let mut body = String::new();
        for (i, (n, t)) in lines.iter().enumerate() {
            if i > 0 {
                body.push('\n');
            }
            body.push_str(&n.to_string());
            body.push_str(": ");
            body.push_str(t);
        }
        body.push_str("\n\n");
        body.push_str(&footer);
        body
    };
    envelope(p, &body)
}

/// The window algorithm of `seed-reference.md` §6.1, fed text in chunks
/// whose boundaries carry no meaning.
#[derive(Debug)]
pub(crate) struct ReadWindow {
    offset: u64,
    limit: u64,
    max_len: usize,
    max_bytes: usize,
    /// The 1-based number of the line being scanned.
    line_no: u64,
    /// The current raw line has at least one character.
    raw_nonempty: bool,
    /// The current line, buffered up to `max_len + 1` UTF-16 units.
    buf: String,
    units: usize,
    bytes: usize,
    /// The selected lines: number and (possibly truncated) text.
    pub(crate) lines: Vec<(u64, String)>,
    /// The byte cap stopped the selection.
    pub(crate) capped: bool,
    /// Every line of the file.
    pub(crate) total_lines: u64,
}

impl ReadWindow {
    /// A window of `limit` lines from line `offset`, with `cfg`'s caps.
    pub(crate) fn new(cfg: &FilesConfig, offset: u64, limit: u64) -> ReadWindow {
        ReadWindow {
            offset,
            limit,
            max_len: usize::try_from(cfg.read_max_line_length).unwrap_or(usize::MAX),
            max_bytes: usize::try_from(cfg.read_max_bytes).unwrap_or(usize::MAX),
            line_no: 1,
            raw_nonempty: false,
            buf: String::new(),
            units: 0,
            bytes: 0,
            lines: Vec::new(),
            capped: false,
            total_lines: 0,
        }
    }

    fn selectable(&self) -> bool {
        self.line_no >= self.offset && (self.lines.len() as u64) < self.limit && !self.capped
    }

    /// Scan the next chunk.
    pub(crate) fn push(&mut self, chunk: &str) {
        let mut rest = chunk;
        while let Some(i) = memchr::memchr(b'\n', rest.as_bytes()) {
            self.feed(&rest[..i]);
            self.end_line();
            rest = &rest[i + 1..];
        }
        self.feed(rest);
    }

    /// End of text: a non-empty tail after the last `\n` is a line.
    pub(crate) fn finish(&mut self) {
        if self.raw_nonempty {
            self.end_line();
        }
    }

    fn feed(&mut self, seg: &str) {
        if seg.is_empty() {
            return;
        }
        self.raw_nonempty = true;
        if !self.selectable() {
            return;
        }
        // Keep up to max_len + 1 units; the rest is dropped. A surrogate
        // pair that starts inside the budget is kept whole.
        for c in seg.chars() {
            if self.units > self.max_len {
                break;
            }
            self.buf.push(c);
            self.units += c.len_utf16();
        }
    }

    fn end_line(&mut self) {
        self.total_lines += 1;
        if self.selectable() {
            let mut text = std::mem::take(&mut self.buf);
            let mut units = self.units;
            if text.ends_with('\r') {
                text.pop();
                units -= 1;
            }
            if units > self.max_len {
                text = truncate_utf16(&text, self.max_len);
                text.push_str(&format!("... (line truncated to {} chars)", self.max_len));
            }
            let cost = text.len() + usize::from(!self.lines.is_empty());
            if self.bytes + cost > self.max_bytes {
                self.capped = true;
            } else {
                self.bytes += cost;
                self.lines.push((self.line_no, text));
            }
        }
        self.buf.clear();
        self.units = 0;
        self.raw_nonempty = false;
        self.line_no += 1;
    }
}

/// The longest prefix of `s` of at most `max` UTF-16 units that does not
/// split a surrogate pair (the seed would; `contract.md` §6 says never).
fn truncate_utf16(s: &str, max: usize) -> String {
    let mut units = 0;
    for (i, c) in s.char_indices() {
        if units + c.len_utf16() > max {
            return s[..i].to_string();
        }
        units += c.len_utf16();
    }
    s.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_shown_as_javascript_writes_them() {
        let cases = [
            (1.0, "1"),
            (12345.0, "12345"),
            (1e20, "100000000000000000000"),
            (18446744073709551615.0, "18446744073709552000"),
            (1e21, "1e+21"),
            (1.5e300, "1.5e+300"),
            (1e308, "1e+308"),
        ];
        for (n, want) in cases {
            assert_eq!(super::js_number(n), want, "{n}");
        }
    }

    fn window(cfg: &FilesConfig, chunks: &[&str], offset: u64, limit: u64) -> ReadWindow {
        let mut w = ReadWindow::new(cfg, offset, limit);
        for c in chunks {
            w.push(c);
        }
        w.finish();
        w
    }

    fn texts(w: &ReadWindow) -> Vec<&str> {
        w.lines.iter().map(|(_, t)| t.as_str()).collect()
    }

    #[test]
    fn line_counting() {
        let c = FilesConfig::default();
        assert_eq!(window(&c, &["a\nb\n"], 1, 10).total_lines, 2);
        assert_eq!(texts(&window(&c, &["a\n\n"], 1, 10)), ["a", ""]);
        assert_eq!(window(&c, &[""], 1, 10).total_lines, 0);
        assert_eq!(texts(&window(&c, &["\r"], 1, 10)), [""]);
        assert_eq!(texts(&window(&c, &["a\r\nb"], 1, 10)), ["a", "b"]);
    }

    #[test]
    fn giant_line_split_across_chunks() {
        let c = FilesConfig {
            read_max_line_length: 4,
            ..FilesConfig::default()
        };
        let w = window(&c, &["ab", "cdef", "gh\nxy"], 1, 10);
        assert_eq!(texts(&w), ["abcd... (line truncated to 4 chars)", "xy"]);
    }

    #[test]
    fn interior_cr_at_cap_plus_one_is_untruncated() {
        // seed-reference.md §10 item 14.
        let c = FilesConfig {
            read_max_line_length: 4,
            ..FilesConfig::default()
        };
        assert_eq!(texts(&window(&c, &["abcd\rzz\n"], 1, 10)), ["abcd"]);
    }

    #[test]
    fn surrogate_pair_never_split() {
        let c = FilesConfig {
            read_max_line_length: 4,
            ..FilesConfig::default()
        };
        let w = window(&c, &["abc\u{1F600}x\n"], 1, 10);
        assert_eq!(texts(&w), ["abc... (line truncated to 4 chars)"]);
        // Exactly 4 units: not truncated.
        let w = window(&c, &["ab\u{1F600}\n"], 1, 10);
        assert_eq!(texts(&w), ["ab\u{1F600}"]);
    }

    #[test]
    fn byte_cap_allows_equality() {
        let c = FilesConfig {
            read_max_bytes: 9,
            ..FilesConfig::default()
        };
        let w = window(&c, &["aaaa\nbbbb\ncccc\n"], 1, 10);
        assert_eq!(texts(&w), ["aaaa", "bbbb"]);
        assert!(w.capped);
        assert_eq!(w.total_lines, 3);
    }

    #[test]
    fn footers() {
        assert_eq!(
            render("/a", 1, 2000, &[(1, "x".into())], 1),
            "<path>/a</path>\n<type>file</type>\n<content>\n1: x\n\n(End of file - total 1 lines)\n</content>"
        );
        assert_eq!(
            render("/a", 1, 2000, &[], 0),
            "<path>/a</path>\n<type>file</type>\n<content>\n(End of file - total 0 lines)\n</content>"
        );
        assert!(render("/a", 2, 2, &[(2, "b".into()), (3, "c".into())], 4)
            .contains("3: c\n\n(Showing lines 2-3 of 4. Use offset=4 to continue.)"));
        assert!(render("/a", 1, 10, &[(1, "a".into())], 4)
            .contains("(Output capped. Showing lines 1-1. Use offset=2 to continue.)"));
        assert!(render("/a", 5, 10, &[], 9).contains(
            "<content>\n(Output capped. Showing lines 5-4. Use offset=5 to continue.)\n"
        ));
    }
}
