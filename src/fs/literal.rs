//! Literal matching as `edit` does it (`seed-reference.md` §6.3), shared with
//! the guard so that both count occurrences exactly alike.

use std::borrow::Cow;

/// Turn every `\r\n` into `\n`; a lone `\r` is kept.
pub fn normalize_crlf(s: &str) -> Cow<'_, str> {
    if s.contains("\r\n") {
        Cow::Owned(s.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(s)
    }
}

/// Non-overlapping occurrences of `needle` in `haystack`, left to right.
/// An empty needle counts 0.
pub fn count_occurrences(haystack: &str, needle: &str) -> usize {
    if needle.is_empty() {
        return 0;
    }
    haystack.matches(needle).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_to_lf_keeps_lone_cr() {
        assert_eq!(normalize_crlf("a\r\nb\rc\n"), "a\nb\rc\n");
    }

    #[test]
    fn non_overlapping_counts() {
        assert_eq!(count_occurrences("aaaa", "aa"), 2);
        assert_eq!(count_occurrences("abcabc", "bc"), 2);
        assert_eq!(count_occurrences("abc", ""), 0);
    }
}
