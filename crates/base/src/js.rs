//! JavaScript's string rules that the original tools' argument checks
//! inherit (`String.prototype.trim`, `seed-reference.md` §4.2). They sit
//! at the bottom of the workspace: the tools' checks and the filesystem
//! seam's path resolution both ask them.

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
}
