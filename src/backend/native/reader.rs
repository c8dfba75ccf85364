//! Reading a haystack: whole (the one explicit file), or through a reader
//! that the searcher pulls from, which can first read the file ahead and
//! let a file without a match skip the searcher (`FileReader::preload_miss`,
//! `is_clean_miss`). Every read stops once the call is cancelled.

use std::io::{self, Read};

use grep_regex::RegexMatcher;

/// How much of a file is read between two looks at the cancellation flag
/// when a whole file is loaded for a slice search.
const LOAD_STEP: u64 = 1 << 20;

pub(crate) use crate::cancel::cancelled_error as cancelled;

/// Read a whole file in chunks, checking the cancellation flag between them.
/// `len` is the size the file had when stat'ed (a hint).
pub(crate) fn read_whole(
    mut file: impl Read,
    len: u64,
    cancel: &crate::cancel::CancelToken,
) -> io::Result<Vec<u8>> {
    let mut data = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    loop {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let n = (&mut file).take(LOAD_STEP).read_to_end(&mut data)?;
        if n == 0 {
            return Ok(data);
        }
    }
}

/// The byte-order marks the searcher sniffs (`encoding_rs_io`): a file
/// starting with one is transcoded or stripped, never checked whole.
const BOMS: [&[u8]; 3] = [b"\xEF\xBB\xBF", b"\xFF\xFE", b"\xFE\xFF"];

/// Whether the bytes of a whole file (no BOM, no NUL), or of a piece of it
/// that starts at a line's start ([`FileReader::preload_miss`]), can be counted as searched without a match and
/// without running the searcher: the pattern matches nowhere in them.
///
/// Asked the way the searcher asks of each buffer (grep-searcher
/// `core.rs: find_by_line_fast`): `find_candidate_line`, which looks for
/// the pattern's required inner literals when it has some (grep-regex
/// `matcher.rs`) and otherwise for the shortest match. No candidate
/// in the whole file means none in any of the searcher's buffers.
pub(crate) fn is_clean_miss(matcher: &RegexMatcher, data: &[u8]) -> bool {
    use grep_matcher::Matcher;
    matches!(matcher.find_candidate_line(data), Ok(None))
}

/// How much of a walked file [`FileReader::preload_miss`] reads at first: the
/// searcher's own buffer size (grep-searcher `DEFAULT_BUFFER_CAPACITY`),
/// which holds most source files whole.
const PRELOAD: usize = 64 * 1024;

/// How much [`FileReader::preload_miss`] reads at a time past the first
/// `PRELOAD` bytes: a few times the searcher's buffer, and, with the
/// unchecked end of a line carried over, well within the processor's
/// second-level cache.
const PRELOAD_STEP: usize = 256 * 1024;

/// The longest line [`FileReader::preload_miss`] holds to check it; a
/// longer one is left to the searcher. (Files over 64 KiB hold much of a
/// source tree's bytes; checked as they are read, they are copied once and
/// never line-counted.)
const PRELOAD_MAX: usize = 8 << 20;

/// Whether a file the filesystem holds in memory is checked whole, in
/// place, for a clean miss: smaller than `PRELOAD_MAX`, no byte-order
/// mark, no NUL (known already when `nul_free`).
pub(crate) fn preloadable(data: &[u8], nul_free: bool) -> bool {
    data.len() < PRELOAD_MAX
        && !BOMS.iter().any(|b| data.starts_with(b))
        && (nul_free || memchr::memchr(0, data).is_none())
}

/// A preload buffer larger than this is not kept for the next call: it is
/// freed, and the allocator hands the memory out again (a buffer shrunk in
/// place would have every call fault its pages in anew).
pub(crate) const PRELOAD_KEEP: usize = 1 << 20;

/// What [`FileReader::preload_miss`] found.
pub(crate) enum Preload {
    /// No candidate line in the file, which was this long.
    Miss(u64),
    /// The searcher must run; the reader serves the file from its start.
    Search,
    /// The searcher must run on the file opened again: the reader no
    /// longer holds its start.
    Reopen,
    /// The caller asked to stop before the file ended: another thread is
    /// to search it, from its start.
    Passed,
}

/// What [`FileReader::preload_miss`] answers when the searcher must run,
/// `gone` bytes of the file's start no longer being held.
fn not_missed(gone: u64) -> Preload {
    if gone == 0 {
        Preload::Search
    } else {
        Preload::Reopen
    }
}

/// A file reader that fails once the call is cancelled (the searcher reads
/// in 64 KiB buffers, so a large file stops promptly) and that can read the
/// start of the file before the searcher runs ([`FileReader::preload_miss`]).
/// Preloaded bytes are served first, so the searcher's 3-byte BOM peek
/// (`encoding_rs_io: BomPeeker::peek_bom`) costs no `read(2)` of its own.
///
/// Every `read` returns as many bytes as asked for unless the file ends,
/// which is what `read(2)` of a regular file does; so the searcher sees the
/// same sequence of lengths, and splits lines and detects binary data at the
/// same places, as when reading the file directly.
pub(crate) struct FileReader<'b, R> {
    file: R,
    cancel: crate::cancel::CancelToken,
    /// The preload buffer, at least `PRELOAD` bytes long (its length is its
    /// size, not how much it holds), reused across files.
    ahead: &'b mut Vec<u8>,
    /// `ahead[pos..len]` is not consumed yet.
    pos: usize,
    len: usize,
    eof: bool,
}

impl<'b, R: Read> FileReader<'b, R> {
    pub(crate) fn new(
        file: R,
        cancel: crate::cancel::CancelToken,
        ahead: &'b mut Vec<u8>,
    ) -> FileReader<'b, R> {
        if ahead.len() < PRELOAD {
            ahead.resize(PRELOAD, 0);
        }
        FileReader {
            file,
            cancel,
            ahead,
            pos: 0,
            len: 0,
            eof: false,
        }
    }

    /// Read the file before anything is consumed and look for the pattern
    /// in it as it comes, to count a file without a candidate line
    /// ([`is_clean_miss`]) as searched without running the searcher.
    ///
    /// The first `PRELOAD` bytes (most source files whole) are kept: when
    /// they hold a byte-order mark, a NUL or a candidate, the searcher is
    /// served them first ([`Preload::Search`]). Past them the file is read
    /// `PRELOAD_STEP` bytes at a time into the same place, each step checked
    /// right after `read(2)` copied it, while it is in the processor's cache
    /// (read whole and then checked, a large file went to memory and back,
    /// and `read(2)` wrote to a different part of an 8 MiB buffer for each
    /// step); so those bytes are not kept, and a NUL or a candidate found
    /// there means the file is searched again from its start
    /// ([`Preload::Reopen`]).
    ///
    /// Each piece is checked up to its last line terminator, the rest with
    /// the next one: the matcher never matches a line terminator
    /// (grep-regex `RegexMatcherBuilder::line_terminator`), so every match
    /// lies inside one line, and every line is checked whole, from its
    /// start, in one piece. A piece can only show more candidates than the
    /// whole file (`$` or `\b` at its end), never fewer, so a clean miss is
    /// one of the whole file; the patterns for which the start or end of the
    /// haystack differs from a line's (`\A`, `\z`, `(?-m)^`) are never
    /// preloaded (`GrepCall::prefilter`). A line longer than `PRELOAD_MAX`
    /// is left to the searcher.
    ///
    /// `pass` is asked after each read that did not reach the end: when it
    /// says so, the file is left as it is ([`Preload::Passed`]).
    pub(crate) fn preload_miss(
        &mut self,
        matcher: &RegexMatcher,
        pass: &dyn Fn() -> bool,
    ) -> io::Result<Preload> {
        // `ahead[..n]` was read; the file's bytes before `ahead[0]` (`gone`
        // of them) and `ahead[..checked]` have no candidate, and `checked`
        // is at a line's start.
        let mut n = 0;
        let mut checked = 0;
        let mut gone: u64 = 0;
        loop {
            if self.cancel.is_cancelled() {
                return Err(cancelled());
            }
            // Past the first read, `ahead` holds bytes or its start is gone.
            let first = gone == 0 && n == 0;
            let end = if first { PRELOAD } else { n + PRELOAD_STEP };
            if self.ahead.len() < end {
                self.ahead.resize(end, 0);
            }
            let mut ahead = std::mem::take(self.ahead);
            let got = self.fill(&mut ahead[n..end]);
            *self.ahead = ahead;
            let k = got?;
            let fresh = &self.ahead[n..n + k];
            let refused = (first && BOMS.iter().any(|b| fresh.starts_with(b)))
                || memchr::memchr(0, fresh).is_some();
            n += k;
            if gone == 0 {
                self.len = n;
            }
            if refused {
                return Ok(not_missed(gone));
            }
            let upto = if self.eof {
                n
            } else {
                memchr::memrchr(b'\n', &self.ahead[checked..n]).map_or(checked, |i| checked + i + 1)
            };
            // An empty file is asked about too, as a whole-file check would.
            if upto > checked || (first && n == 0) {
                if !is_clean_miss(matcher, &self.ahead[checked..upto]) {
                    return Ok(not_missed(gone));
                }
                checked = upto;
            }
            if self.eof {
                return Ok(Preload::Miss(gone + n as u64));
            }
            if n - checked >= PRELOAD_MAX {
                return Ok(not_missed(gone));
            }
            if pass() {
                return Ok(Preload::Passed);
            }
            // Keep only the unchecked end of the last line; the reader
            // then serves nothing ahead of the file.
            if checked > 0 {
                self.ahead.copy_within(checked..n, 0);
                gone += checked as u64;
                n -= checked;
                checked = 0;
                self.pos = 0;
                self.len = 0;
            }
        }
    }

    /// `read(2)` until `buf` is full or the file ends.
    fn fill(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        while n < buf.len() && !self.eof {
            match self.file.read(&mut buf[n..]) {
                Ok(0) => self.eof = true,
                Ok(k) => n += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(n)
    }
}

impl<R: Read> Read for FileReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let mut n = 0;
        if self.pos < self.len {
            n = buf.len().min(self.len - self.pos);
            buf[..n].copy_from_slice(&self.ahead[self.pos..self.pos + n]);
            self.pos += n;
        }
        let rest = self.fill(&mut buf[n..])?;
        Ok(n + rest)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// `pass` is asked only between reads of a file that has not ended,
    /// and leaves the file as it is the first time it says so.
    #[test]
    fn preload_passes_only_a_file_that_has_not_ended() {
        let matcher = super::super::matcher::build("zzz_absent").unwrap();
        let small = b"hello\n".repeat(100);
        // Past the first read and three more pieces.
        let large = b"hello world\n".repeat((PRELOAD + 3 * PRELOAD_STEP) / 12 + 1);
        let cases: [(&str, &[u8], usize, Option<u64>); 5] = [
            ("small, pass at once", &small, 0, Some(small.len() as u64)),
            (
                "large, never passed",
                &large,
                usize::MAX,
                Some(large.len() as u64),
            ),
            ("large, pass at once", &large, 0, None),
            ("large, pass after two pieces", &large, 2, None),
            (
                "large, pass after the last piece",
                &large,
                4,
                Some(large.len() as u64),
            ),
        ];
        for (name, data, after, want) in cases {
            let asked = Cell::new(0);
            let pass = || {
                asked.set(asked.get() + 1);
                asked.get() > after
            };
            let mut buf = Vec::new();
            let mut reader = FileReader::new(data, crate::cancel::CancelToken::new(), &mut buf);
            let got = match reader.preload_miss(&matcher, &pass).unwrap() {
                Preload::Miss(len) => Some(len),
                Preload::Passed => None,
                Preload::Search | Preload::Reopen => panic!("{name}: no candidate to search"),
            };
            assert_eq!(got, want, "{name}");
            if want.is_none() {
                assert_eq!(asked.get(), after + 1, "{name}: passed when first told to");
            }
        }
    }
}
