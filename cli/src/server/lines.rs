//! Request lines with a cap on their length, read the same way by both
//! servers (`serve` from a blocking reader, `mcp` from an async one).
//!
//! The decision is made here, on whatever the reader's buffer holds; the
//! servers only fill the buffer and consume what [`CappedLine::feed`] took.
//! The state (the line so far, whether the rest of a long line is being
//! skipped) lives in the [`CappedLine`], not in the reading loop, so an
//! async read that is dropped half way (rmcp polls `receive` in a
//! `select!`) resumes where it stopped.

/// What [`CappedLine::feed`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// A whole line is in [`CappedLine::line`], its `\n` included (none at
    /// the end of the input).
    Line,
    /// The line passed the cap: what was kept of it is dropped, and the
    /// rest of it, up to its `\n`, is skipped by the next feeds.
    TooLong,
    /// The input ended with no line begun.
    Eof,
    /// Nothing yet: fill the buffer again.
    More,
}

/// One line being read, at most `max` bytes of it kept.
pub(crate) struct CappedLine {
    /// The line so far; take it after [`Step::Line`].
    pub(crate) line: Vec<u8>,
    skipping: bool,
    max: usize,
}

impl CappedLine {
    /// A reader of lines of at most `max` bytes.
    pub(crate) fn new(max: usize) -> CappedLine {
        CappedLine {
            line: Vec::new(),
            skipping: false,
            max,
        }
    }

    /// Look at `available`, a buffered reader's filled buffer (empty at the
    /// end of the input): how many of its bytes to consume, and what they
    /// completed.
    pub(crate) fn feed(&mut self, available: &[u8]) -> (usize, Step) {
        if available.is_empty() {
            self.skipping = false;
            let step = if self.line.is_empty() {
                Step::Eof
            } else {
                Step::Line
            };
            return (0, step);
        }
        let newline = memchr::memchr(b'\n', available);
        let take = newline.map_or(available.len(), |i| i + 1);
        if self.skipping {
            self.skipping = newline.is_none();
            return (take, Step::More);
        }
        if self.line.len() + take > self.max {
            // Its memory goes back now, not at the next line's end.
            self.line = Vec::new();
            self.skipping = newline.is_none();
            return (take, Step::TooLong);
        }
        self.line.extend_from_slice(&available[..take]);
        let step = if newline.is_some() {
            Step::Line
        } else {
            Step::More
        };
        (take, step)
    }
}

#[cfg(test)]
mod tests {
    use super::{CappedLine, Step};
    use std::io::BufRead;

    /// The lines of `input` read through a 4-byte buffer, capped at `max`.
    fn lines(input: &[u8], max: usize) -> Vec<String> {
        let mut r = std::io::BufReader::with_capacity(4, input);
        let mut capped = CappedLine::new(max);
        let mut out = Vec::new();
        loop {
            let (take, step) = capped.feed(r.fill_buf().unwrap());
            r.consume(take);
            match step {
                Step::Line => {
                    out.push(String::from_utf8(std::mem::take(&mut capped.line)).unwrap())
                }
                Step::TooLong => out.push("<too long>".into()),
                Step::Eof => return out,
                Step::More => {}
            }
        }
    }

    #[test]
    fn lines_are_split_capped_and_skipped_to_their_end() {
        assert_eq!(lines(b"ab\ncdefghij\nk", 5), ["ab\n", "<too long>", "k"]);
        assert_eq!(lines(b"abcdefgh", 5), ["<too long>"]);
        assert_eq!(lines(b"abcd\n", 5), ["abcd\n"]);
        assert_eq!(lines(b"abcdefgh\nxy\n", 5), ["<too long>", "xy\n"]);
        assert!(lines(b"", 5).is_empty());
    }
}
