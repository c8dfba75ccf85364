//! The matcher and searcher of rg's grep invocation (`hiargs.rs:
//! matcher_rust` L461, `searcher` L711; rg-semantics.md §9.1, §10.3).

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

/// The searcher: line numbers on, encoding `Auto` (BOM sniffing), no mmap.
/// `explicit` selects `convert(NUL)` for a file named as the path and
/// `quit(NUL)` for a walked one (`hiargs.rs: BinaryDetection` L1159).
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
