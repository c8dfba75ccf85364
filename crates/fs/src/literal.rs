//! Literal edits as `edit` does them (`seed-reference.md` §6.3): the CRLF
//! rules, non-overlapping occurrences, the replacement.
//!
//! Counting and replacing a file of hundreds of MiB is seconds of CPU, so
//! every scan looks at the call's cancellation as the search engine does:
//! every [`SCAN_WINDOW`] bytes scanned and every [`CANCEL_EVERY`]
//! occurrences (`backend::native`'s `CANCEL_EVERY`), and a cancelled edit
//! ends with `edit aborted` before anything is built or written.

use std::borrow::Cow;

use dsh_search_base::cancel::CancelToken;
use memchr::memmem;

use super::error::aborted;
use super::{FsError, FsErrorCode, Verb};

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
    /// file (a mixed-ending file becomes uniform CRLF); `edit aborted` once
    /// `cancel` is set.
    pub(crate) fn encoded(&self, cancel: &CancelToken) -> Result<Cow<'_, str>, FsError> {
        if self.crlf {
            replace_all(&self.after, "\n", "\r\n", cancel)
        } else {
            Ok(Cow::Borrowed(&self.after))
        }
    }
}

/// Apply `edit` to the decoded `text` of the file shown as `display`:
/// `\r\n` normalized to `\n` in the text, `old_string` and `new_string`,
/// then every occurrence replaced, or the seed's error when there is none
/// or, without `replace_all`, more than one; `edit aborted` once `cancel`
/// is set.
pub(crate) fn apply(
    text: &str,
    edit: &LiteralEdit,
    display: &str,
    cancel: &CancelToken,
) -> Result<Applied, FsError> {
    let crlf = is_crlf(text);
    let content = replace_all(text, "\r\n", "\n", cancel)?;
    let old = replace_all(&edit.old_string, "\r\n", "\n", cancel)?;
    let new = replace_all(&edit.new_string, "\r\n", "\n", cancel)?;
    if old.is_empty() {
        return Err(FsError::new(
            FsErrorCode::EditNotFound,
            "old_string must be a non-empty string",
        ));
    }
    let n = count(&content, &old, cancel)?;
    if n > 0 && (n == 1 || edit.replace_all) {
        let len = result_len(&content, &old, &new, n, crlf, cancel)?;
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
            after: replace_all(&content, &old, &new, cancel)?.into_owned(),
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
fn result_len(
    content: &str,
    old: &str,
    new: &str,
    n: usize,
    crlf: bool,
    cancel: &CancelToken,
) -> Result<u64, FsError> {
    let n = n as u64;
    let lf = |s: &str| count(s, "\n", cancel).map(|c| c as u64);
    let len = content.len() as u64 - n * old.len() as u64 + n.saturating_mul(new.len() as u64);
    Ok(if crlf {
        let lines = lf(content)? - n * lf(old)? + n.saturating_mul(lf(new)?);
        len.saturating_add(lines)
    } else {
        len
    })
}

/// The error of an edit of a file of `len` bytes, over [`EDIT_MAX_BYTES`]:
/// refused before it is read.
pub(crate) fn file_too_large(display: &str, len: u64) -> FsError {
    FsError::cannot(
        FsErrorCode::TooLarge,
        Verb::Edit,
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
        Verb::Edit,
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

/// How many bytes a scan covers between two looks at the cancellation: a
/// millisecond or so of `memmem`.
const SCAN_WINDOW: usize = 1 << 20;

/// How many occurrences a scan passes between two looks at the
/// cancellation (a look reads the clock when the call has a deadline).
const CANCEL_EVERY: usize = 64;

/// Calls `found` with the start of every non-overlapping occurrence of
/// `needle` (not empty) in `haystack`, left to right, as `str::matches`
/// finds them (an occurrence of UTF-8 in UTF-8 starts and ends on character
/// boundaries, so bytes give the same answer); `edit aborted` once `cancel`
/// is set. The haystack is scanned a window at a time: the occurrences
/// starting in `[pos, pos + SCAN_WINDOW)` all end inside the window
/// extended by `needle.len() - 1`.
fn each_occurrence(
    haystack: &str,
    needle: &str,
    cancel: &CancelToken,
    mut found: impl FnMut(usize),
) -> Result<(), FsError> {
    let (hay, finder) = (haystack.as_bytes(), memmem::Finder::new(needle.as_bytes()));
    let mut pos = 0;
    let mut seen = 0usize;
    while pos + needle.len() <= hay.len() {
        if cancel.is_cancelled() {
            return Err(aborted(Verb::Edit));
        }
        let end = (pos + SCAN_WINDOW + needle.len() - 1).min(hay.len());
        let mut at = pos;
        while let Some(i) = finder.find(&hay[at..end]) {
            found(at + i);
            at += i + needle.len();
            seen += 1;
            if seen.is_multiple_of(CANCEL_EVERY) && cancel.is_cancelled() {
                return Err(aborted(Verb::Edit));
            }
        }
        pos = at.max(pos + SCAN_WINDOW);
    }
    Ok(())
}

/// The occurrences of `old` in a file's `text` as an edit counts them
/// ([`TextFs::edit_text`](crate::TextFs::edit_text): both CRLF-normalized, not
/// overlapping), shared with the guard so that both count alike; `None`
/// once `cancel` is set.
pub fn count_occurrences(text: &str, old: &str, cancel: &CancelToken) -> Option<usize> {
    let content = replace_all(text, "\r\n", "\n", cancel).ok()?;
    let old = replace_all(old, "\r\n", "\n", cancel).ok()?;
    count(&content, &old, cancel).ok()
}

/// Non-overlapping occurrences of `needle` in `haystack`, left to right.
/// An empty needle counts 0.
fn count(haystack: &str, needle: &str, cancel: &CancelToken) -> Result<usize, FsError> {
    let mut n = 0;
    if !needle.is_empty() {
        each_occurrence(haystack, needle, cancel, |_| n += 1)?;
    }
    Ok(n)
}

/// `s.replace(from, to)` (`from` not empty), borrowed when `from` does not
/// occur.
fn replace_all<'a>(
    s: &'a str,
    from: &str,
    to: &str,
    cancel: &CancelToken,
) -> Result<Cow<'a, str>, FsError> {
    let mut out: Option<String> = None;
    let mut last = 0;
    each_occurrence(s, from, cancel, |i| {
        let out = out.get_or_insert_with(|| String::with_capacity(s.len()));
        out.push_str(&s[last..i]);
        out.push_str(to);
        last = i + from.len();
    })?;
    Ok(match out {
        None => Cow::Borrowed(s),
        Some(mut out) => {
            out.push_str(&s[last..]);
            Cow::Owned(out)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_to_lf_keeps_lone_cr() {
        assert_eq!(normalize_crlf("a\r\nb\rc\n"), "a\nb\rc\n");
    }

    fn live() -> CancelToken {
        CancelToken::new()
    }

    #[test]
    fn non_overlapping_counts() {
        let count = |h: &str, n: &str| count(h, n, &live()).unwrap();
        assert_eq!(count("aaaa", "aa"), 2);
        assert_eq!(count("abcabc", "bc"), 2);
        assert_eq!(count("abc", ""), 0);
    }

    /// Occurrences across the scan's windows: each found once, none
    /// overlapping, as `str::matches` and `str::replace` find them.
    #[test]
    fn scans_across_windows_as_std_does() {
        let w = SCAN_WINDOW;
        let mut cases = vec![
            ("a".repeat(w + 3), "aa".to_string()),
            (
                format!("{}xyz{}", "-".repeat(w - 1), "-".repeat(10)),
                "xyz".to_string(),
            ),
            (
                format!("{}xyz{}", "-".repeat(w - 2), "-".repeat(10)),
                "xyz".to_string(),
            ),
            (
                format!("{}é€{}", "é".repeat(w / 2), "x".repeat(5)),
                "€".to_string(),
            ),
        ];
        cases.push(("ab".repeat(w), "ba".to_string()));
        for (hay, needle) in &cases {
            assert_eq!(
                count(hay, needle, &live()).unwrap(),
                hay.matches(needle.as_str()).count(),
                "{needle}"
            );
            assert_eq!(
                replace_all(hay, needle, "<>", &live()).unwrap(),
                hay.replace(needle.as_str(), "<>"),
                "{needle}"
            );
        }
    }

    /// A cancelled token ends an edit before any result is built.
    #[test]
    fn a_cancelled_edit_is_aborted() {
        let cancel = CancelToken::new();
        cancel.cancel();
        let text = "w ".repeat(1 << 20);
        let e = apply(&text, &edit("w", "X", true), "/f", &cancel).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (FsErrorCode::Aborted, "edit aborted")
        );
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
        let a = apply("a\r\nb\r\n", &edit("a\r\nb", "c\nd", false), "/f", &live()).unwrap();
        assert_eq!((a.before.as_str(), a.after.as_str()), ("a\nb\n", "c\nd\n"));
        assert_eq!(a.encoded(&live()).unwrap(), "c\r\nd\r\n");
        let a = apply("a\nb\n", &edit("a", "x\r\ny", false), "/f", &live()).unwrap();
        assert_eq!(a.encoded(&live()).unwrap(), "x\ny\nb\n");
    }

    #[test]
    fn result_len_is_the_encoded_length() {
        for (text, old, new, all) in [
            ("a\r\nb\r\nc\n", "b", "x\ny\n", false),
            ("aaa", "a", "bb", true),
            ("x\ny\n", "y", "", false),
        ] {
            let a = apply(text, &edit(old, new, all), "/f", &live()).unwrap();
            let content = normalize_crlf(text);
            let old = normalize_crlf(old);
            let n = count(&content, &old, &live()).unwrap();
            let len = result_len(&content, &old, new, n, a.crlf, &live()).unwrap();
            assert_eq!(len, a.encoded(&live()).unwrap().len() as u64, "{text:?}");
        }
    }

    #[test]
    fn a_gigabyte_result_is_refused_before_it_is_built() {
        let text = "a".repeat(100_000);
        let e = apply(&text, &edit("a", &"b".repeat(100_000), true), "/f", &live()).unwrap_err();
        assert_eq!(e.code, FsErrorCode::TooLarge);
        assert!(e.message.contains("10000000000 bytes"), "{}", e.message);
    }

    #[test]
    fn absent_and_ambiguous() {
        let e = apply("aa", &edit("b", "c", false), "/f", &live()).unwrap_err();
        assert_eq!(e.message, "old_string was not found in \"/f\"");
        let e = apply("aa", &edit("a", "c", false), "/f", &live()).unwrap_err();
        assert_eq!(e.code, FsErrorCode::AmbiguousEdit);
        assert_eq!(
            apply("aa", &edit("a", "c", true), "/f", &live())
                .unwrap()
                .after,
            "cc"
        );
    }
}
