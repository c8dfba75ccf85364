//! Small text rules the original tools inherit from JavaScript and Node:
//! `String.prototype.trim`, `path.relative` for display paths
//! (`seed-reference.md` §2.3), and the UTF-8-safe line preview (§3.3).

use std::path::Path;

/// The code points JavaScript's `String.prototype.trim` strips: WhiteSpace
/// (TAB, VT, FF, ZWNBSP U+FEFF and the Zs category) and LineTerminator (LF,
/// CR, U+2028, U+2029). Unlike `char::is_whitespace`, U+FEFF is in and
/// U+0085 is out (`seed-reference.md` §4.2).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\u{0009}'..='\u{000D}'
            | '\u{0020}'
            | '\u{00A0}'
            | '\u{1680}'
            | '\u{2000}'..='\u{200A}'
            | '\u{2028}'
            | '\u{2029}'
            | '\u{202F}'
            | '\u{205F}'
            | '\u{3000}'
            | '\u{FEFF}'
    )
}

/// `s.trim()` with JavaScript's whitespace set.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// Whether `s.trim().length === 0` in JavaScript.
pub fn is_blank(s: &str) -> bool {
    js_trim(s).is_empty()
}

/// The display form of a path rg printed (`seed-reference.md` §2.3,
/// `toWorkdirRelative`): a relative path is returned unchanged; an absolute
/// one is made relative to `workdir` the way Node's `path.relative` does
/// (both sides normalized lexically), unless it lies outside the workdir,
/// in which case the original is kept. The workdir itself displays as `.`.
pub fn display_path(path: &str, workdir: &Path) -> String {
    if !path.starts_with('/') {
        return path.to_string();
    }
    let workdir = std::path::absolute(workdir).unwrap_or_else(|_| workdir.to_path_buf());
    let base = workdir.to_string_lossy();
    let from = normalize(&base);
    let to = normalize(path);
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    let rel = parts.join("/");
    if rel.is_empty() {
        ".".to_string()
    } else if rel == ".." || rel.starts_with("../") {
        path.to_string()
    } else {
        rel
    }
}

/// The segments of an absolute path after lexical normalization: empty and
/// `.` segments dropped, `..` popping (never above the root).
fn normalize(path: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    out
}

/// The literal suffix of a cut line (`seed-reference.md` §3.3).
pub const LINE_TRUNCATED: &str = " (line truncated)";

/// `previewLine`: a line of at most `max_bytes` UTF-8 bytes unchanged;
/// otherwise its first `max_bytes` bytes, without a character cut in half,
/// and ` (line truncated)`.
pub fn preview_line(line: &str, max_bytes: usize) -> String {
    if line.len() <= max_bytes {
        return line.to_string();
    }
    // For valid UTF-8 the seed's step-back over continuation bytes lands on
    // the previous character boundary.
    let mut end = max_bytes;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{LINE_TRUNCATED}", &line[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_set() {
        assert_eq!(js_trim("\u{FEFF} a \u{3000}"), "a");
        assert_eq!(js_trim("\u{0085}a"), "\u{0085}a");
        assert!(is_blank(" \t\n\r\u{000B}\u{000C}\u{00A0}\u{1680}\u{2000}\u{200A}\u{2028}\u{2029}\u{202F}\u{205F}\u{3000}\u{FEFF}"));
        assert!(!is_blank("\u{0085}"));
        assert!(!is_blank("\u{180E}"));
        assert!(!is_blank("\u{200B}"));
        assert!(is_blank(""));
    }

    #[test]
    fn display_paths() {
        let w = Path::new("/w");
        assert_eq!(display_path("src/a.ts", w), "src/a.ts");
        assert_eq!(display_path("./src/a.ts", w), "./src/a.ts");
        assert_eq!(display_path("/w/src/a.ts", w), "src/a.ts");
        assert_eq!(display_path("/w", w), ".");
        assert_eq!(display_path("/w/", w), ".");
        assert_eq!(display_path("/w//src/./b/../a.ts", w), "src/a.ts");
        assert_eq!(display_path("/w/../up.ts", w), "/w/../up.ts");
        assert_eq!(display_path("/w-sibling/b.ts", w), "/w-sibling/b.ts");
        assert_eq!(display_path("/", w), "/");
        assert_eq!(display_path("/x", Path::new("/")), "x");
        assert_eq!(display_path("/w/a", Path::new("/w/sub/..")), "a");
        assert_eq!(display_path("/w/sub/../a", Path::new("/w/")), "a");
    }

    #[test]
    fn previews() {
        assert_eq!(preview_line("aéaéaéaé", 7), "aéaéa (line truncated)");
        assert_eq!(preview_line("éa", 1), " (line truncated)");
        assert_eq!(preview_line("abc", 3), "abc");
        assert_eq!(preview_line("abcd", 3), "abc (line truncated)");
        assert_eq!(preview_line("a😀", 4), "a (line truncated)");
    }
}
