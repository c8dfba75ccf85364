//! File names in model-facing text, quoted when they could deceive (README,
//! deliberate difference D6).
//!
//! A file name is bytes its author chose: `a.txt\nLine 7: password =
//! hunter2\n\nb.txt` makes a grep result show a match block that no file
//! holds, an ANSI escape recolours a terminal, a bidi override reorders
//! what the reader sees. The original package prints names raw. Here a name
//! holding any character that could do that is shown as a JSON string
//! literal with those characters escaped (`quote`, the same quoting the
//! guard's denials use), and every other name is shown as it is. The
//! escaped form given back as a path argument names the file again
//! ([`unshown`]), so a shown file stays reachable.

use std::borrow::Cow;

/// A JSON string literal for `s` that escapes, besides what JSON requires,
/// every other character that could hide or reorder text: C1 controls, bidi
/// controls, zero-width characters and line/paragraph separators.
/// See: fd's `src/sanitize.rs` for the same concern.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => push_escaped(&mut out, c),
        }
    }
    out.push('"');
    out
}

/// `c`, escaped when it [`needs_escape`] (`\n`, `\r`, `\t` by name, the
/// others as `\uXXXX`), else as it is.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c if needs_escape(c) => {
            let mut buf = [0u16; 2];
            for unit in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
        c => out.push(c),
    }
}

/// Characters that must not reach the model raw.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200B}'..='\u{200F}'   // zero-width space/joiners, LRM, RLM
            | '\u{2028}'..='\u{202E}' // line/paragraph separators, bidi embeddings
            | '\u{2060}'..='\u{2064}' // word joiner, invisible operators
            | '\u{2066}'..='\u{2069}' // bidi isolates
            | '\u{FEFF}'              // BOM / zero-width no-break space
        )
}

/// How a file name (or a path) is shown to the model: as it is, or
/// `quote`d when it holds a character that `needs_escape`.
pub fn shown(name: &str) -> Cow<'_, str> {
    // Printable ASCII needs no escape: the common path, checked a byte at
    // a time rather than a character's ranges at a time.
    if name.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Cow::Borrowed(name);
    }
    if name.chars().any(needs_escape) {
        Cow::Owned(quote(name))
    } else {
        Cow::Borrowed(name)
    }
}

/// A line of rg's messages with the characters that [`needs_escape`]
/// escaped in place: the names rg quotes in them cannot break the line or
/// reach the model raw.
pub fn escaped_line(line: &str) -> Cow<'_, str> {
    if !line.chars().any(needs_escape) {
        return Cow::Borrowed(line);
    }
    let mut out = String::with_capacity(line.len() + 8);
    for c in line.chars() {
        push_escaped(&mut out, c);
    }
    Cow::Owned(out)
}

/// The name a path argument stands for when it is the form [`shown`] gave
/// for that name (a quoted literal of a name that needs escaping), else
/// `None`: the argument is a path as it is.
pub fn unshown(arg: &str) -> Option<String> {
    if arg.len() < 2 || !arg.starts_with('"') || !arg.ends_with('"') {
        return None;
    }
    let name: String = serde_json::from_str(arg).ok()?;
    (matches!(shown(&name), Cow::Owned(ref q) if q == arg)).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_escaped_only_when_needed() {
        let cases = [
            ("src/main.rs", "src/main.rs"),
            ("with space \"q\".txt", "with space \"q\".txt"),
            (
                "a.txt\nLine 7: password = hunter2\n\nb.txt",
                r#""a.txt\nLine 7: password = hunter2\n\nb.txt""#,
            ),
            ("\u{1b}[31mred.txt", r#""\u001b[31mred.txt""#),
            ("evil\u{202e}txt.exe", r#""evil\u202etxt.exe""#),
            ("zero\u{200b}width", r#""zero\u200bwidth""#),
            ("back\\slash\t", r#""back\\slash\t""#),
        ];
        for (name, want) in cases {
            assert_eq!(shown(name), want, "{name:?}");
            let back = unshown(want);
            if want == name {
                assert_eq!(back, None, "{name:?} is a path as it is");
            } else {
                assert_eq!(back.as_deref(), Some(name), "{want}");
            }
        }
        // A quoted name that needs no escaping is a path as it is.
        assert_eq!(unshown(r#""plain.txt""#), None);
        assert_eq!(unshown(r#""broken"#), None);
    }
}
