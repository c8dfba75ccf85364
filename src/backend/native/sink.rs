//! A `grep_searcher::Sink` that produces the typed events grep-printer 0.3.1's
//! `JSONSink` would print (`json.rs` L719), with the same per-file `Stats`.

use std::io;
use std::path::Path;
use std::time::Instant;

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkFinish, SinkMatch};

use crate::event::{data_len, match_json_len, Begin, End, Event, Match, Shared, Stats, SubMatch};

use super::paths::Root;
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
    /// Whether `walked` is already the path rg walks (`Root::unwalk`'s).
    walked_is_rg: bool,
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
        walked_is_rg: bool,
    ) -> JsonSink<'a> {
        JsonSink {
            matcher,
            budget,
            scratch,
            root,
            walked,
            walked_is_rg,
            block: FileBlock::default(),
            match_count: 0,
            start: Instant::now(),
            lines: Vec::new(),
            submatches: Vec::new(),
            pending: Vec::new(),
            shared_path: std::sync::Arc::from(&[][..]),
            path_len: 0,
        }
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

    /// grep-printer `json.rs: record_matches` (L647) over
    /// `util.rs: find_iter_at_in_context` (L473), single-line mode.
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
        if self.budget.stopped() {
            return Ok(false);
        }
        self.match_count += 1;
        if self.block.events.is_empty() {
            self.block.path = self.root.printed(self.walked, self.walked_is_rg);
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
        let line_number = mat.line_number().unwrap_or(0);
        let absolute_offset = mat.absolute_byte_offset();
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
        self.start = Instant::now();
        self.match_count = 0;
        Ok(true)
    }

    fn finish(&mut self, _searcher: &Searcher, finish: &SinkFinish) -> Result<(), io::Error> {
        let stats = &mut self.block.stats;
        stats.elapsed += self.start.elapsed();
        stats.searches += 1;
        if self.match_count > 0 {
            stats.searches_with_match += 1;
        }
        stats.bytes_searched += finish.byte_count();
        self.flush_matches();
        let stats = &mut self.block.stats;
        if !self.block.events.is_empty() {
            let end = Event::End(End {
                path: self.block.path.clone(),
                binary_offset: finish.binary_byte_offset(),
                stats: *stats,
            });
            self.scratch.clear();
            end.write_json(self.scratch);
            self.budget.spend(self.scratch.len() as u64);
            self.block.events.push(end);
        }
        Ok(())
    }
}
