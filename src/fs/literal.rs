//! Literal edits as `edit` does them (`seed-reference.md` §6.3): the CRLF
//! rules, non-overlapping occurrences, the replacement. The counting is
//! shared with the guard so that both count occurrences exactly alike.

use std::borrow::Cow;

use super::{FsError, FsErrorCode};

/// A literal replacement (`seed-reference.md` §6.3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiteralEdit {
    /// The text to find, literally.
    pub old_string: String,
    /// Its replacement.
    pub new_string: String,
    /// Replace every occurrence; otherwise exactly one must exist.
    pub replace_all: bool,
}

/// A literal edit applied to a file's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Applied {
    /// The text before, LF-normalized.
    pub(crate) before: String,
    /// The text after, LF-normalized.
    pub(crate) after: String,
    /// The file is CRLF: it is written back with `\r\n` line endings.
    pub(crate) crlf: bool,
}

impl Applied {
    /// The new content as it is written: every `\n` a `\r\n` in a CRLF
    /// file (a mixed-ending file becomes uniform CRLF).
    pub(crate) fn encoded(&self) -> Cow<'_, str> {
        if self.crlf {
            Cow::Owned(self.after.replace('\n', "\r\n"))
        } else {
            Cow::Borrowed(&self.after)
        }
    }
}

/// Apply `edit` to the decoded `text` of the file shown as `display`:
/// `\r\n` normalized to `\n` in the text, `old_string` and `new_string`,
/// then every occurrence replaced, or the seed's error when there is none
/// or, without `replace_all`, more than one.
pub(crate) fn apply(text: &str, edit: &LiteralEdit, display: &str) -> Result<Applied, FsError> {
    let crlf = is_crlf(text);
    let content = normalize_crlf(text);
    let old = normalize_crlf(&edit.old_string);
    let new = normalize_crlf(&edit.new_string);
    if old.is_empty() {
        return Err(FsError::new(
            FsErrorCode::EditNotFound,
            "old_string must be a non-empty string",
        ));
    }
    let n = count_occurrences(&content, &old);
    if n > 0 && (n == 1 || edit.replace_all) {
        let len = result_len(&content, &old, &new, n, crlf);
        if len > EDIT_MAX_BYTES {
            return Err(too_large(display, len));
        }
    }
    match n {
        0 => Err(FsError {
            code: FsErrorCode::EditNotFound,
            message: format!("old_string was not found in \"{display}\""),
            path: Some(display.to_string()),
        }),
        n if n > 1 && !edit.replace_all => Err(FsError {
            code: FsErrorCode::AmbiguousEdit,
            message: format!(
                "old_string matched {n} times in \"{display}\"; provide a more specific old_string or set replace_all to true"
            ),
            path: Some(display.to_string()),
        }),
        _ => Ok(Applied {
            after: content.replace(&*old, &new),
            before: content.into_owned(),
            crlf,
        }),
    }
}

/// The largest file an edit reads, and the largest result it writes:
/// 256 MiB. An edit holds the old and the new text in memory at once (and
/// the tools return both), so a result of gigabytes (`replace_all` of one
/// byte by 100 KB in a 100 KB file is 10 GB) would exhaust the memory
/// before it could be written; `write` streams content of any size.
pub(crate) const EDIT_MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The size in bytes of the file an edit writes, computed before it is
/// built: `n` occurrences of `old` in `content` (LF-normalized) replaced by
/// `new`, every `\n` then written `\r\n` in a CRLF file.
fn result_len(content: &str, old: &str, new: &str, n: usize, crlf: bool) -> u64 {
    let n = n as u64;
    let lf = |s: &str| memchr::memchr_iter(b'\n', s.as_bytes()).count() as u64;
    let len = content.len() as u64 - n * old.len() as u64 + n.saturating_mul(new.len() as u64);
    if crlf {
        let lines = lf(content) - n * lf(old) + n.saturating_mul(lf(new));
        len.saturating_add(lines)
    } else {
        len
    }
}

/// The error of an edit of a file of `len` bytes, over [`EDIT_MAX_BYTES`]:
/// refused before it is read.
pub(crate) fn file_too_large(display: &str, len: u64) -> FsError {
    FsError::cannot(
        FsErrorCode::TooLarge,
        "edit",
        display,
        &format!(
            "the file is {len} bytes, over the {EDIT_MAX_BYTES}-byte limit of an edit; write the new content with write instead"
        ),
    )
}

/// The error of an edit whose result of `len` bytes would be over
/// [`EDIT_MAX_BYTES`]: refused before the result is built.
pub(crate) fn too_large(display: &str, len: u64) -> FsError {
    FsError::cannot(
        FsErrorCode::TooLarge,
        "edit",
        display,
        &format!(
            "the result would be {len} bytes, over the {EDIT_MAX_BYTES}-byte limit of an edit; write the new content with write instead"
        ),
    )
}

/// CRLF when, in the first 4096 UTF-16 units, `\r\n` outnumbers the other
/// `\n` (`seed-reference.md` §6.3; the unit count is the seed's).
pub(crate) fn is_crlf(text: &str) -> bool {
    let mut units = 0usize;
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if units >= 4096 {
            end = i;
            break;
        }
        units += c.len_utf16();
    }
    let sample = &text[..end];
    let crlf = sample.matches("\r\n").count();
    let lf = sample.matches('\n').count() - crlf;
    crlf > lf
}

/// Turn every `\r\n` into `\n`; a lone `\r` is kept.
pub(crate) fn normalize_crlf(s: &str) -> Cow<'_, str> {
    if s.contains("\r\n") {
        Cow::Owned(s.replace("\r\n", "\n"))
    } else {
        Cow::Borrowed(s)
    }
}

/// Non-overlapping occurrences of `needle` in `haystack`, left to right.
/// An empty needle counts 0.
pub(crate) fn count_occurrences(haystack: &str, needle: &str) -> usize {
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

    #[test]
    fn crlf_majority() {
        assert!(is_crlf("a\r\nb\r\nc\n"));
        assert!(!is_crlf("a\r\nb\n"));
        assert!(!is_crlf("no newline"));
    }

    #[test]
    fn crlf_sample_is_4096_utf16_units() {
        // 4095 units, then `\r\n`: the `\n` is unit 4097, outside the sample.
        let mut text = "x".repeat(4095);
        text.push_str("\r\n");
        assert!(!is_crlf(&text));
        let mut text = "x".repeat(4094);
        text.push_str("\r\n");
        assert!(is_crlf(&text));
    }

    fn edit(old: &str, new: &str, replace_all: bool) -> LiteralEdit {
        LiteralEdit {
            old_string: old.into(),
            new_string: new.into(),
            replace_all,
        }
    }

    #[test]
    fn crlf_file_is_written_back_crlf() {
        let a = apply("a\r\nb\r\n", &edit("a\r\nb", "c\nd", false), "/f").unwrap();
        assert_eq!((a.before.as_str(), a.after.as_str()), ("a\nb\n", "c\nd\n"));
        assert_eq!(a.encoded(), "c\r\nd\r\n");
        let a = apply("a\nb\n", &edit("a", "x\r\ny", false), "/f").unwrap();
        assert_eq!(a.encoded(), "x\ny\nb\n");
    }

    #[test]
    fn result_len_is_the_encoded_length() {
        for (text, old, new, all) in [
            ("a\r\nb\r\nc\n", "b", "x\ny\n", false),
            ("aaa", "a", "bb", true),
            ("x\ny\n", "y", "", false),
        ] {
            let a = apply(text, &edit(old, new, all), "/f").unwrap();
            let content = normalize_crlf(text);
            let n = count_occurrences(&content, &normalize_crlf(old));
            let len = result_len(&content, &normalize_crlf(old), new, n, a.crlf);
            assert_eq!(len, a.encoded().len() as u64, "{text:?}");
        }
    }

    #[test]
    fn a_gigabyte_result_is_refused_before_it_is_built() {
        let text = "a".repeat(100_000);
        let e = apply(&text, &edit("a", &"b".repeat(100_000), true), "/f").unwrap_err();
        assert_eq!(e.code, FsErrorCode::TooLarge);
        assert!(e.message.contains("10000000000 bytes"), "{}", e.message);
    }

    #[test]
    fn absent_and_ambiguous() {
        let e = apply("aa", &edit("b", "c", false), "/f").unwrap_err();
        assert_eq!(e.message, "old_string was not found in \"/f\"");
        let e = apply("aa", &edit("a", "c", false), "/f").unwrap_err();
        assert_eq!(e.code, FsErrorCode::AmbiguousEdit);
        assert_eq!(
            apply("aa", &edit("a", "c", true), "/f").unwrap().after,
            "cc"
        );
    }
}
