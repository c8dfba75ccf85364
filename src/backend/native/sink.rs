//! A `grep_searcher::Sink` that produces the typed events grep-printer 0.3.1's
//! `JSONSink` would print (`json.rs` L719), with the same per-file `Stats`.

use std::io;
use std::path::Path;
use std::time::Instant;

use grep_matcher::Matcher;
use grep_regex::RegexMatcher;
use grep_searcher::{Searcher, Sink, SinkFinish, SinkMatch};

use crate::event::{Begin, End, Event, Match, Stats, SubMatch};

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
    submatches: Vec<SubMatch>,
    /// The printed path once more, shared by the file's match events.
    shared_path: std::sync::Arc<[u8]>,
}

impl<'a> JsonSink<'a> {
    pub(crate) fn new(
        matcher: &'a RegexMatcher,
        budget: &'a Budget,
        scratch: &'a mut Vec<u8>,
        root: &'a Root,
        walked: &'a Path,
    ) -> JsonSink<'a> {
        JsonSink {
            matcher,
            budget,
            scratch,
            root,
            walked,
            walked_is_rg: false,
            block: FileBlock::default(),
            match_count: 0,
            start: Instant::now(),
            submatches: Vec::new(),
            shared_path: std::sync::Arc::from(&[][..]),
        }
    }

    /// The path given to [`JsonSink::new`] is the one rg walks, not the
    /// engine's absolute walk path.
    pub(crate) fn with_rg_path(mut self) -> JsonSink<'a> {
        self.walked_is_rg = true;
        self
    }

    pub(crate) fn into_block(self) -> FileBlock {
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
        self.submatches.clear();
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
        if let Some(last) = subs.last() {
            if last.start == last.end && last.start >= buf.len() {
                subs.pop();
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
            self.block.path = if self.walked_is_rg {
                self.root.display_rg(self.walked)
            } else {
                self.root.display(self.walked)
            };
            self.shared_path = self.block.path.as_slice().into();
            let begin = Event::Begin(Begin {
                path: self.block.path.clone(),
            });
            let ok = self.printed(&begin);
            self.block.events.push(begin);
            if !ok {
                return Ok(false);
            }
        }
        self.record_matches(searcher, mat.buffer(), mat.bytes_range_in_buffer());
        self.block.stats.matches += self.submatches.len() as u64;
        self.block.stats.matched_lines += mat.lines().count() as u64;
        let m = Match {
            path: self.shared_path.clone(),
            lines: mat.bytes().to_vec(),
            line_number: mat.line_number().unwrap_or(0),
            absolute_offset: mat.absolute_byte_offset(),
            submatches: self.submatches.clone(),
        };
        // Counted, not written: the length is all `bytes_printed` needs.
        let n = m.json_len() as u64;
        self.block.stats.bytes_printed += n;
        let ok = self.budget.spend(n);
        self.block.events.push(Event::Match(m));
        Ok(ok)
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
