//! The one explicit regular file, searched as rg searches it, in bounded
//! memory.
//!
//! rg memory-maps an explicit regular file (`hiargs.rs: mmap_choice`: at
//! most 10 paths, all files) and searches the map as one slice
//! (grep-searcher `glue.rs: SliceByLine`). That differs from the reader
//! search of a walked file in ways the output shows:
//!
//! - binary data (NUL, `convert` mode for an explicit file) is looked for in
//!   the first `DEFAULT_BUFFER_CAPACITY` (64 KiB) bytes and in each matched
//!   line (`core.rs: sink_matched` → `detect_binary`), never elsewhere, and
//!   a NUL is not turned into a line terminator: lines, line numbers and
//!   offsets are those of the bytes as they are;
//! - `bytes_searched` is the offset of the binary data when there is some
//!   (`SliceByLine::byte_count`), else the file's length.
//!
//! The engine has no `unsafe` code to map with (and a map of a file that
//! shrinks under it kills the process with SIGBUS, which a long-running
//! server cannot afford), so it reads: a file up to [`WHOLE_MAX`] whole, as
//! one slice; a larger one in windows of about [`WINDOW`] bytes that end at
//! a line terminator, each searched as a slice with binary detection off,
//! while the sink ([`JsonSink::windowed`]) does the two binary checks
//! above, carries line numbers and offsets across windows and reports one
//! file. A match never spans a `\n` (the matcher cannot match one), so
//! every line is searched whole, with the same bytes around it for the
//! matcher's look-around: each window after the first starts with the `\n`
//! before it (a line the sink drops) and carries the byte after its end
//! (matches there are dropped too; the next window searches that line).
//!
//! One difference is left, for `\A` alone: rg's searcher restarts its
//! search after each matching line with the haystack starting there, so
//! `\Afoo` matches every line of an unbroken run of `foo` lines from the
//! top of the file; the windows' look-behind `\n` ends such a run at a
//! window edge (after 8 MiB of consecutive matching lines).
//!
//! A line longer than [`LINE_MAX`] is not held: when the pattern's matches
//! have a bounded length (`regex-syntax`'s `maximum_len`), the line is
//! checked in chunks that overlap by that length (and look-around bytes);
//! only a line that matches is then read whole, since it is printed whole.
//! With an unbounded pattern (`a.*b`), such a line is held whole as rg's
//! reader would hold it. A file starting with a byte-order mark is
//! transcoded by the searcher's reader, as `search_slice` does itself
//! (`slice_needs_transcoding`), so it is read as a stream.

use std::io::{self, Read};

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher};

use super::reader::{cancelled, read_whole};
use super::sink::JsonSink;
use crate::cancel::CancelToken;

/// A file up to this size is read whole and searched as one slice.
pub(crate) const WHOLE_MAX: u64 = 16 << 20;

/// The size a window is read to before it is cut after its last `\n`.
pub(crate) const WINDOW: usize = 8 << 20;

/// A line longer than this is checked in chunks instead of being held.
pub(crate) const LINE_MAX: usize = 16 << 20;

/// grep-searcher's `DEFAULT_BUFFER_CAPACITY`: how far a slice is looked at
/// for binary data before any match (`SliceByLine::run`).
const BINARY_PEEK: usize = 64 * 1024;

/// Bytes of look-around kept on each side of a chunk of a long line: one
/// UTF-8 character (Unicode `\b` looks at one) and the line terminator.
const LOOK: usize = 8;

/// Search the explicit regular file `file` of `len` bytes (as stat'ed) the
/// way rg searches its memory map. `max_len` bounds the length of any match
/// of the pattern, when it is known; `reopen` opens the file again (a long
/// matching line is read a second time).
#[allow(clippy::too_many_arguments)]
pub(crate) fn search<R: Read>(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    file: R,
    reopen: &mut dyn FnMut() -> io::Result<R>,
    len: u64,
    max_len: Option<usize>,
    sink: &mut JsonSink<'_>,
    cancel: &CancelToken,
) -> io::Result<()> {
    if len <= WHOLE_MAX {
        let data = read_whole(file, len, cancel)?;
        return searcher.search_slice(matcher, &data, sink);
    }
    let mut w = Windows {
        file,
        reopen,
        cancel,
        max_len,
        buf: Vec::with_capacity(WINDOW + 1),
        fake: 0,
        start: 0,
        lines: 0,
        eof: false,
    };
    w.fill(BINARY_PEEK)?;
    if has_bom(&w.buf) {
        // `search_slice` hands a slice with a BOM to its reader; the same
        // bytes from the file give the same events.
        let head = std::mem::take(&mut w.buf);
        return searcher.search_reader(matcher, io::Cursor::new(head).chain(w.file), sink);
    }
    let peek = &w.buf[..w.buf.len().min(BINARY_PEEK)];
    let binary = memchr::memchr(0, peek).map(|i| i as u64);
    let detection = searcher.binary_detection().clone();
    searcher.set_binary_detection(BinaryDetection::none());
    sink.windowed(binary);
    let out = w.run(searcher, matcher, sink);
    searcher.set_binary_detection(detection);
    out?;
    sink.finish_windowed(w.start);
    Ok(())
}

fn has_bom(data: &[u8]) -> bool {
    [&b"\xEF\xBB\xBF"[..], b"\xFF\xFE", b"\xFE\xFF"]
        .iter()
        .any(|b| data.starts_with(b))
}

/// Read from `file` until `buf` holds `want` bytes or the file ends.
fn fill(
    file: &mut impl Read,
    buf: &mut Vec<u8>,
    want: usize,
    eof: &mut bool,
    cancel: &CancelToken,
) -> io::Result<()> {
    while buf.len() < want && !*eof {
        if cancel.is_cancelled() {
            return Err(cancelled());
        }
        let have = buf.len();
        buf.resize(have + (want - have).min(WINDOW), 0);
        let got = file.read(&mut buf[have..]);
        buf.truncate(have + *got.as_ref().unwrap_or(&0));
        match got {
            Ok(0) => *eof = true,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The file being searched and the bytes not searched yet: `buf[fake..]`
/// starts at file offset `start`, a line start; `buf[0]` is the `\n` before
/// it when `fake` is 1.
struct Windows<'r, 'c, R> {
    file: R,
    reopen: &'r mut dyn FnMut() -> io::Result<R>,
    cancel: &'c CancelToken,
    max_len: Option<usize>,
    buf: Vec<u8>,
    fake: usize,
    start: u64,
    /// The `\n`s before `start`.
    lines: u64,
    eof: bool,
}

impl<R: Read> Windows<'_, '_, R> {
    fn fill(&mut self, want: usize) -> io::Result<()> {
        fill(
            &mut self.file,
            &mut self.buf,
            want,
            &mut self.eof,
            self.cancel,
        )
    }

    fn run(
        &mut self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut JsonSink<'_>,
    ) -> io::Result<()> {
        loop {
            self.fill(self.fake + WINDOW + 1)?;
            let body = &self.buf[self.fake..];
            if body.is_empty() {
                return Ok(());
            }
            if self.eof && body.len() <= WINDOW {
                let end = self.buf.len();
                self.search_window(searcher, matcher, sink, end)?;
                continue;
            }
            match memchr::memrchr(b'\n', &body[..WINDOW]) {
                Some(k) => {
                    let end = self.fake + k + 1;
                    self.search_window(searcher, matcher, sink, end)?;
                }
                // The line goes on past the window.
                None => self.long_line(searcher, matcher, sink)?,
            }
        }
    }

    /// Search `buf[..end]` (with the byte after it as look-ahead) as one
    /// window, then keep the `\n` at `end - 1` and what follows. `end` is a
    /// line end or the end of the file.
    fn search_window(
        &mut self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut JsonSink<'_>,
        end: usize,
    ) -> io::Result<()> {
        if self.cancel.is_cancelled() {
            return Err(cancelled());
        }
        let slice_end = (end + 1).min(self.buf.len());
        sink.window(self.lines, self.start, self.fake, end);
        searcher.search_slice(matcher, &self.buf[..slice_end], &mut *sink)?;
        if sink.stopped() {
            return Err(cancelled());
        }
        let searched = &self.buf[self.fake..end];
        self.lines += memchr::memchr_iter(b'\n', searched).count() as u64;
        self.start += searched.len() as u64;
        if self.buf[end - 1] == b'\n' {
            self.buf.drain(..end - 1);
            self.fake = 1;
        } else {
            // The end of the file, without a final line terminator.
            self.buf.clear();
            self.fake = 0;
        }
        Ok(())
    }

    /// The line at `buf[fake..]` is longer than a window: read on to its
    /// end and search it whole when it is at most [`LINE_MAX`] long or the
    /// pattern's matches are unbounded; else check it in chunks.
    fn long_line(
        &mut self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut JsonSink<'_>,
    ) -> io::Result<()> {
        self.whole_line(searcher, matcher, sink, Chunks::PastLineMax)
    }

    /// Read on until the line at `buf[fake..]` ends (or the file does) and
    /// search it as one window; with [`Chunks::PastLineMax`], a line that
    /// grows past [`LINE_MAX`] while the pattern's matches are bounded is
    /// checked in chunks instead.
    fn whole_line(
        &mut self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        sink: &mut JsonSink<'_>,
        chunks: Chunks,
    ) -> io::Result<()> {
        let mut scanned = self.fake;
        loop {
            if let Some(k) = memchr::memchr(b'\n', &self.buf[scanned..]) {
                return self.search_window(searcher, matcher, sink, scanned + k + 1);
            }
            if self.eof {
                let end = self.buf.len();
                return self.search_window(searcher, matcher, sink, end);
            }
            scanned = self.buf.len();
            if chunks == Chunks::PastLineMax && scanned - self.fake > LINE_MAX {
                if let Some(max_len) = self.max_len {
                    return self.check_in_chunks(searcher, matcher, max_len, sink);
                }
            }
            self.fill(scanned + WINDOW)?;
        }
    }

    /// The line at `buf[fake..]`, longer than [`LINE_MAX`], matches nowhere
    /// unless some chunk of it holds a match: look chunk by chunk, keeping
    /// `max_len` bytes and the look-around between chunks. A line without
    /// a match is passed over. A line with a match is printed whole: past
    /// the raw budget, that stops the search; otherwise the file is opened
    /// again and the line read whole.
    fn check_in_chunks(
        &mut self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        max_len: usize,
        sink: &mut JsonSink<'_>,
    ) -> io::Result<()> {
        let overlap = max_len.saturating_add(2 * LOOK);
        // `hay[..from]` is checked already (or look-behind); `hay[0]` is at
        // file offset `hay_start`.
        let mut hay = std::mem::take(&mut self.buf);
        hay.drain(..self.fake);
        let mut hay_start = self.start;
        let mut from = 0;
        loop {
            let nl = memchr::memchr(b'\n', &hay[from..]).map(|k| from + k);
            let (end, trusted) = match nl {
                Some(k) => (k + 1, k + 1),
                None if self.eof => (hay.len(), hay.len()),
                None => (hay.len(), hay.len().saturating_sub(overlap)),
            };
            if trusted > from {
                let found = matcher
                    .find_at(&hay[..end], from)
                    .map_err(|e| io::Error::other(e.to_string()))?;
                if found.is_some_and(|m| m.start() < trusted) {
                    let seen = hay_start + end as u64 - self.start;
                    return self.matched_long_line(searcher, matcher, seen, sink);
                }
            }
            if nl.is_some() || self.eof {
                // No match in the line: pass over it.
                let line_len = hay_start + end as u64 - self.start;
                self.lines += u64::from(nl.is_some());
                self.start += line_len;
                self.buf.clear();
                self.fake = usize::from(nl.is_some());
                if nl.is_some() {
                    self.buf.push(b'\n');
                }
                self.buf.extend_from_slice(&hay[end..]);
                return Ok(());
            }
            // Keep the overlap (and look-behind before it), read on.
            let checked = from.max(trusted);
            let keep_from = checked.saturating_sub(LOOK);
            hay.drain(..keep_from);
            // The line's start is let go: so is the memory that held it.
            hay.shrink_to(overlap + 2 * WINDOW);
            hay_start += keep_from as u64;
            from = checked - keep_from;
            let want = hay.len() + WINDOW;
            fill(&mut self.file, &mut hay, want, &mut self.eof, self.cancel)?;
        }
    }

    /// A line longer than [`LINE_MAX`] with a match, `seen` bytes of it
    /// read: it is printed whole, so it is read whole from a new handle
    /// (its start was let go), unless printing it crosses the raw budget.
    fn matched_long_line(
        &mut self,
        searcher: &mut Searcher,
        matcher: &RegexMatcher,
        seen: u64,
        sink: &mut JsonSink<'_>,
    ) -> io::Result<()> {
        // Its match event is longer than the line (`lines.text`): past the
        // budget already, the line is not read again. Otherwise it is
        // counted when it is printed, like any match.
        if !sink.afford(seen) {
            return Err(cancelled());
        }
        let mut again = (self.reopen)()?;
        let mut skip = self.start;
        let mut scratch = vec![0u8; WINDOW];
        while skip > 0 {
            if self.cancel.is_cancelled() {
                return Err(cancelled());
            }
            let n = scratch
                .len()
                .min(usize::try_from(skip).unwrap_or(usize::MAX));
            match again.read(&mut scratch[..n]) {
                Ok(0) => return Err(io::Error::from(io::ErrorKind::UnexpectedEof)),
                Ok(k) => skip -= k as u64,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        drop(scratch);
        self.file = again;
        self.eof = false;
        self.buf.clear();
        if self.fake == 1 {
            self.buf.push(b'\n');
        }
        // Known to match: searched whole, however long.
        self.whole_line(searcher, matcher, sink, Chunks::Never)
    }
}

/// Whether [`Windows::whole_line`] may check a line in chunks.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Chunks {
    /// When it is longer than [`LINE_MAX`] and matches are bounded.
    PastLineMax,
    /// Never: the line is known to match and is printed whole.
    Never,
}

/// The longest match `pattern` can have, in bytes, when it is bounded.
pub(crate) fn max_match_len(pattern: &str) -> Option<usize> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(pattern)
        .ok()?;
    hir.properties().maximum_len()
}
