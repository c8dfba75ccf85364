//! The matcher and searcher of rg's grep invocation (`hiargs.rs:
//! matcher_rust`, `searcher`; rg-semantics.md §9.1, §10.3).

use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, MmapChoice, Searcher, SearcherBuilder};

use super::messages::regex_error;

/// Build the matcher for `pattern`. The error is the text rg prints.
pub(crate) fn build(pattern: &str) -> Result<RegexMatcher, String> {
    RegexMatcherBuilder::new()
        .multi_line(true)
        .unicode(true)
        .octal(false)
        .fixed_strings(false)
        .case_insensitive(false)
        .line_terminator(Some(b'\n'))
        .dot_matches_new_line(false)
        .ban_byte(Some(b'\0'))
        // `build_many` wraps the pattern as `(?:PAT)`, which shows in errors.
        .build_many(&[pattern])
        .map_err(|e| regex_error(&e.to_string()))
}

/// A pattern this short without a counted repetition (and nesting little,
/// [`INLINE_NESTING`]) compiles in well under a millisecond: it is built
/// on the calling thread.
const CHEAP_PATTERN: usize = 256;

/// How often a compile on its own thread looks at the cancellation flag.
const COMPILE_POLL: std::time::Duration = std::time::Duration::from_millis(2);

/// The `(` and `[` a pattern compiled on the calling thread may hold. The
/// parser's heap stack keeps nesting off the thread's stack, but the NFA
/// compiler recurses once per nested group or class (up to regex-syntax's
/// nest limit, 248 groups): 60 of them overflow a 256 KiB stack in a
/// debug build. A pattern that could nest deeper compiles on a thread of
/// its own, with [`COMPILE_STACK`].
const INLINE_NESTING: usize = 16;

/// The stack of a compile on its own thread: the nest limit's depth needs
/// under 2 MiB in a debug build.
const COMPILE_STACK: usize = 8 << 20;

/// [`build`], abandoned once `cancel` is set: `Err(None)`. Compiling is not
/// interruptible and can take seconds (`\w{3000}`: Unicode classes
/// repeated into a large NFA), which would ignore the tool's deadline
/// while the rg backend's timeout stops rg at once. So a pattern that may
/// be costly compiles on a thread of its own that the call stops waiting
/// for; the thread ends when its compile does and its result is dropped.
/// rg keeps no limit stricter than the regex crate's own size limits here
/// (an over-limit pattern errors with rg's text either way).
pub(crate) fn build_cancellable(
    pattern: &str,
    cancel: &crate::cancel::CancelToken,
) -> Result<RegexMatcher, Option<String>> {
    if cancel.is_cancelled() {
        return Err(None);
    }
    let nesting = pattern.bytes().filter(|&b| b == b'(' || b == b'[').count();
    if pattern.len() <= CHEAP_PATTERN && !pattern.contains('{') && nesting <= INLINE_NESTING {
        return build(pattern).map_err(Some);
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let owned = pattern.to_string();
    let spawned = std::thread::Builder::new()
        .name("dsh-search-regex".into())
        .stack_size(COMPILE_STACK)
        .spawn(move || {
            let _ = tx.send(build(&owned));
        });
    if spawned.is_err() {
        // No thread to be had: compile here, as a cheap pattern is.
        return build(pattern).map_err(Some);
    }
    loop {
        match rx.recv_timeout(COMPILE_POLL) {
            Ok(built) => return built.map_err(Some),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) if cancel.is_cancelled() => {
                return Err(None)
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(Some(regex_error("the regex compiler stopped")))
            }
        }
    }
}

/// Whether "no match anywhere in a file's bytes" implies "no match from the
/// searcher", so that a small clean file can be answered without running
/// the searcher over it (`worker::Worker::search`).
///
/// The searcher matches line by line or over 64 KiB buffers that start
/// and end at line boundaries (grep-searcher 0.1.17 `core.rs:
/// match_by_line_fast`, `match_by_line_slow`); the regex cannot match
/// the line terminator (`line_terminator` above). A match inside one such
/// haystack is a match in the whole file, with the same neighbours, except
/// for the assertions tied to the haystack's own edges, `\A` and `\z` (and
/// `^`/`$` under `(?-m)`): `\Afoo` matches every line that starts with
/// `foo` when the searcher restarts its search at that line, but only the
/// file's first line in one search over the whole file. Every other
/// assertion sees the same thing at a line boundary as at a haystack edge
/// (`^`/`$` in multi-line mode, word boundaries: a `\n` is not a word
/// character). So the shortcut is taken only for patterns without those
/// two; a pattern the parser refuses does not take it either.
pub(crate) fn whole_file_prefilter(pattern: &str) -> bool {
    use regex_syntax::hir::Look;
    parse(pattern).is_some_and(|hir| {
        let looks = hir.properties().look_set();
        !looks.contains(Look::Start) && !looks.contains(Look::End)
    })
}

/// `pattern` parsed as [`build`] has grep-regex parse it (multi-line,
/// Unicode, no octal; `rg-semantics.md` §10.3): the tree the matcher's
/// matches come from, for the decisions taken before a search; `None`
/// where the parser refuses it (the matcher's build then says why).
pub(crate) fn parse(pattern: &str) -> Option<regex_syntax::hir::Hir> {
    regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .unicode(true)
        .octal(false)
        .case_insensitive(false)
        .dot_matches_new_line(false)
        .build()
        .parse(pattern)
        .ok()
}

/// The searcher: line numbers on, encoding `Auto` (BOM sniffing), no mmap.
/// `explicit` selects `convert(NUL)` for a file named as the path and
/// `quit(NUL)` for a walked one (`hiargs.rs: BinaryDetection`).
pub(crate) fn searcher(explicit: bool) -> Searcher {
    let mut s = SearcherBuilder::new()
        .line_terminator(LineTerminator::byte(b'\n'))
        .line_number(true)
        .multi_line(false)
        .memory_map(MmapChoice::never())
        .build();
    s.set_binary_detection(binary(explicit));
    s
}

pub(crate) fn binary(explicit: bool) -> BinaryDetection {
    if explicit {
        BinaryDetection::convert(b'\0')
    } else {
        BinaryDetection::quit(b'\0')
    }
}

#[cfg(test)]
mod tests {
    use super::whole_file_prefilter;

    #[test]
    fn prefilter_refuses_haystack_edges() {
        let cases = [
            ("literal", "foo", true),
            ("multi-line start", "^foo", true),
            ("multi-line end", "foo$", true),
            ("word boundaries", r"\bfoo\b", true),
            ("classes", r"[A-Z]{3,}_[0-9]+\(", true),
            ("start of haystack", r"\Afoo", false),
            ("end of haystack", r"foo\z", false),
            ("single-line caret", "(?-m)^foo", false),
            ("single-line dollar", "(?-m)foo$", false),
            ("in an alternation", r"bar|\Afoo", false),
            ("unparsable", "[", false),
        ];
        for (name, pattern, want) in cases {
            assert_eq!(whole_file_prefilter(pattern), want, "{name}: {pattern}");
        }
    }
}
