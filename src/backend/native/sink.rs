//! A `grep_searcher::Sink` that produces the typed events grep-printer 0.3.1's
//! `JSONSink` would print (`json.rs`), with the same per-file `Stats`.

use std::io;
use std::path::Path;
use std::time::Instant;

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkFinish, SinkMatch};

use crate::event::{data_len, match_json_len, Begin, End, Event, Match, Shared, Stats, SubMatch};

use super::paths::{PathForm, Root};
use super::Budget;

/// The events and statistics of one searched file.
#[derive(Debug, Default)]
pub(crate) struct FileBlock {
    /// The printed path (empty when the file had no match).
    pub(crate) path: Vec<u8>,
    /// `begin`, `match`…, `end`; empty when the file had no match.
    pub(crate) events: Vec<Event>,
    /// This file's statistics (counted in the summary even without a match).
    pub(crate) stats: Stats,
}

/// Per-thread state reused across files.
pub(crate) struct JsonSink<'a> {
    matcher: &'a RegexMatcher,
    budget: &'a Budget,
    /// Scratch buffer for measuring JSON lines (`bytes_printed`).
    scratch: &'a mut Vec<u8>,
    /// Where the printed path comes from, computed at the first match:
    /// most files searched have none and never need it.
    root: &'a Root,
    walked: &'a Path,
    /// Whether `walked` is the engine's walk path or already rg's.
    walked_form: PathForm,
    block: FileBlock,
    match_count: u64,
    start: Instant,
    /// The lines and submatches of this file's matches, one after another:
    /// they become one shared buffer each when the file ends, so a match
    /// costs no allocation of its own ([`Shared`]).
    lines: Vec<u8>,
    submatches: Vec<SubMatch>,
    /// The matches not yet turned into events.
    pending: Vec<PendingMatch>,
    /// The printed path once more, shared by the file's match events, and
    /// the length of its JSON form.
    shared_path: std::sync::Arc<[u8]>,
    path_len: usize,
    /// Set while a large explicit file is searched window by window
    /// (`explicit.rs`).
    windowed: Option<Windowed>,
}

/// Where the current window lies in the file, and the binary offset found
/// so far (the searcher's own detection is off in windowed mode).
#[derive(Clone, Copy, Debug, Default)]
struct Windowed {
    binary: Option<u64>,
    /// The `\n`s before the window's first real line.
    lines: u64,
    /// The file offset of the window's byte 0.
    base: u64,
    /// Bytes of the window before its first real line (the `\n` kept as
    /// look-behind), and where its real lines end (look-ahead follows).
    fake: usize,
    end: usize,
    began: bool,
}

/// A match whose line and submatches are in the sink's buffers.
struct PendingMatch {
    lines: std::ops::Range<usize>,
    submatches: std::ops::Range<usize>,
    line_number: u64,
    absolute_offset: u64,
}

impl<'a> JsonSink<'a> {
    pub(crate) fn new(
        matcher: &'a RegexMatcher,
        budget: &'a Budget,
        scratch: &'a mut Vec<u8>,
        root: &'a Root,
        walked: &'a Path,
        walked_form: PathForm,
    ) -> JsonSink<'a> {
        JsonSink {
            matcher,
            budget,
            scratch,
            root,
            walked,
            walked_form,
            block: FileBlock::default(),
            match_count: 0,
            start: Instant::now(),
            lines: Vec::new(),
            submatches: Vec::new(),
            pending: Vec::new(),
            shared_path: std::sync::Arc::from(&[][..]),
            path_len: 0,
            windowed: None,
        }
    }

    /// Search the file window by window from now on (`explicit.rs`): the
    /// searcher's begin and finish of each window are one file's, and
    /// `binary` is the binary offset found in the file's first 64 KiB.
    pub(crate) fn windowed(&mut self, binary: Option<u64>) {
        self.windowed = Some(Windowed {
            binary,
            ..Windowed::default()
        });
    }

    /// The next window: its real lines are `buf[fake..end]`, starting at
    /// file offset `start` after `lines` line terminators.
    pub(crate) fn window(&mut self, lines: u64, start: u64, fake: usize, end: usize) {
        if let Some(w) = &mut self.windowed {
            w.lines = lines;
            w.base = start - fake as u64;
            w.fake = fake;
            w.end = end;
        }
    }

    /// The end of a windowed file of `total` bytes: `SliceByLine::run`'s
    /// `finish` with `byte_count` cut at the binary offset.
    pub(crate) fn finish_windowed(&mut self, total: u64) {
        let binary = self.windowed.take().and_then(|w| w.binary);
        let byte_count = match binary {
            Some(offset) if offset < total => offset,
            _ => total,
        };
        self.finish_file(byte_count, binary);
    }

    /// Whether printing `n` more bytes stays within the raw budget; when it
    /// would not, they are counted, which crosses it.
    pub(crate) fn afford(&self, n: u64) -> bool {
        self.budget.fits(n) || self.budget.spend(n)
    }

    /// Whether the search must stop (budget crossed or call cancelled).
    pub(crate) fn stopped(&self) -> bool {
        self.budget.stopped()
    }

    /// The pending matches as events, sharing two buffers.
    fn flush_matches(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        let lines: std::sync::Arc<[u8]> = std::mem::take(&mut self.lines).into();
        let subs: std::sync::Arc<[SubMatch]> = std::mem::take(&mut self.submatches).into();
        for p in self.pending.drain(..) {
            self.block.events.push(Event::Match(Match {
                path: self.shared_path.clone(),
                lines: Shared::new(lines.clone(), p.lines),
                line_number: p.line_number,
                absolute_offset: p.absolute_offset,
                submatches: Shared::new(subs.clone(), p.submatches),
            }));
        }
    }

    pub(crate) fn into_block(mut self) -> FileBlock {
        self.flush_matches();
        self.block
    }

    /// Count a printed line toward `bytes_printed` and the raw budget.
    /// Returns false once the budget is crossed.
    fn printed(&mut self, event: &Event) -> bool {
        self.scratch.clear();
        event.write_json(self.scratch);
        let n = self.scratch.len() as u64;
        self.block.stats.bytes_printed += n;
        self.budget.spend(n)
    }

    /// grep-printer `json.rs: record_matches` over
    /// `util.rs: find_iter_at_in_context`, single-line mode.
    fn record_matches(&mut self, searcher: &Searcher, buf: &[u8], range: std::ops::Range<usize>) {
        let first = self.submatches.len();
        // Trim the line terminator (`util.rs: trim_line_terminator`).
        let mut end = range.end;
        let lt = searcher.line_terminator();
        if end > range.start && lt.is_suffix(&buf[range.clone()]) {
            end -= 1;
            if lt.is_crlf() && end > 0 && buf.get(end - 1) == Some(&b'\r') {
                end -= 1;
            }
        }
        let hay = &buf[..end];
        let subs = &mut self.submatches;
        let _ = self.matcher.find_iter_at(hay, range.start, |m| {
            if m.start() >= range.end {
                return false;
            }
            subs.push(SubMatch {
                start: m.start() - range.start,
                end: m.end() - range.start,
            });
            true
        });
        // "Don't report empty matches appearing at the end of the bytes."
        // `bytes` there is the whole buffer, not the line.
        if subs.len() > first {
            if let Some(last) = subs.last() {
                if last.start == last.end && last.start >= buf.len() {
                    subs.pop();
                }
            }
        }
    }
}

impl Sink for JsonSink<'_> {
    type Error = io::Error;

    fn matched(&mut self, searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        if self.budget.stopped_at(self.match_count as usize) {
            return Ok(false);
        }
        let mut line_number = mat.line_number().unwrap_or(0);
        let mut absolute_offset = mat.absolute_byte_offset();
        if let Some(w) = &mut self.windowed {
            let local = absolute_offset as usize;
            if local < w.fake || local >= w.end {
                // The look-behind line or the look-ahead: another window's.
                return Ok(true);
            }
            line_number = line_number + w.lines - w.fake as u64;
            absolute_offset += w.base;
            // `core.rs: sink_matched` looks for binary data in every
            // matched line of a slice.
            if w.binary.is_none() {
                w.binary = memchr::memchr(0, mat.bytes()).map(|i| absolute_offset + i as u64);
            }
        }
        self.match_count += 1;
        if self.block.events.is_empty() {
            self.block.path = self.root.printed(self.walked, self.walked_form);
            self.shared_path = self.block.path.as_slice().into();
            self.path_len = data_len(&self.block.path);
            let begin = Event::Begin(Begin {
                path: self.block.path.clone(),
            });
            let ok = self.printed(&begin);
            self.block.events.push(begin);
            if !ok {
                return Ok(false);
            }
        }
        let first = self.submatches.len();
        self.record_matches(searcher, mat.buffer(), mat.bytes_range_in_buffer());
        let subs = &self.submatches[first..];
        self.block.stats.matches += subs.len() as u64;
        self.block.stats.matched_lines += mat.lines().count() as u64;
        let line = mat.bytes();
        // Counted, not written: the length is all `bytes_printed` needs.
        let n = match_json_len(self.path_len, line, line_number, absolute_offset, subs) as u64;
        let start = self.lines.len();
        self.lines.extend_from_slice(line);
        self.pending.push(PendingMatch {
            lines: start..self.lines.len(),
            submatches: first..self.submatches.len(),
            line_number,
            absolute_offset,
        });
        self.block.stats.bytes_printed += n;
        Ok(self.budget.spend(n))
    }

    fn begin(&mut self, _searcher: &Searcher) -> Result<bool, io::Error> {
        if let Some(w) = &mut self.windowed {
            if std::mem::replace(&mut w.began, true) {
                return Ok(true);
            }
        }
        self.start = Instant::now();
        self.match_count = 0;
        Ok(true)
    }

    fn finish(&mut self, _searcher: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        if self.windowed.is_none() {
            self.finish_file(finish.byte_count(), finish.binary_byte_offset());
        }
        Ok(())
    }
}

impl JsonSink<'_> {
    /// The file's statistics and its `end` event.
    fn finish_file(&mut self, byte_count: u64, binary_offset: Option<u64>) {
        let stats = &mut self.block.stats;
        stats.elapsed += self.start.elapsed();
        stats.searches += 1;
        if self.match_count > 0 {
            stats.searches_with_match += 1;
        }
        stats.bytes_searched += byte_count;
        self.flush_matches();
        let stats = &mut self.block.stats;
        if !self.block.events.is_empty() {
            let end = Event::End(End {
                path: self.block.path.clone(),
                binary_offset,
                stats: *stats,
            });
            self.scratch.clear();
            end.write_json(self.scratch);
            self.budget.spend(self.scratch.len() as u64);
            self.block.events.push(end);
        }
    }
}
