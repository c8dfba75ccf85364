//! What a backend returns for a request: an [`Outcome`] with how the search
//! ended ([`Status`], rg's exit code or why it stopped) and its results
//! ([`GlobResults`], [`GrepResults`]), and the one order of grep results
//! (D2, by path then line).

use std::cmp::Ordering;
use std::io::{self, Write};

use crate::event::Event;

/// Contract D2, the one order of grep results: by path (byte order), then
/// line number. rg's file order changes from run to run; the native engine
/// sorts its file blocks with it (each block's lines already ascend) and
/// the grep tool sorts the matches of either backend with it.
pub(crate) fn by_path_then_line(a: (&[u8], u64), b: (&[u8], u64)) -> Ordering {
    a.0.cmp(b.0).then(a.1.cmp(&b.1))
}

/// How a search ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Status {
    /// rg's exit code: 0 (something found, no error), 1 (nothing found, no
    /// error) or 2 (an error, results may be partial).
    Exited(i32),
    /// The call's [`CancelToken`](crate::CancelToken) was set before the
    /// search finished; the results are partial.
    Cancelled,
    /// stdout crossed the request's raw-output budget; the work was stopped
    /// and the results are partial.
    OverBudget,
    /// rg was killed by a signal it did not get from us (rg backend only).
    /// The signal's name (`SIGKILL`), when known.
    Signaled(Option<String>),
    /// The search could not start: rg missing, an unusable workdir, a NUL in
    /// an argument. The text says why, for logs; the tools show their own.
    LaunchFailed(String),
    /// rg exited 0 but a `--json` line was not one of its messages (rg
    /// backend only). The text is the reason, for the grep tool's
    /// `grep received malformed ripgrep --json output (<reason>)`
    /// (`seed-reference.md` §2.1); the results hold the events before it.
    Malformed(String),
}

impl Status {
    /// The exit code, when the search ran to completion.
    pub fn exit_code(&self) -> Option<i32> {
        match *self {
            Status::Exited(code) => Some(code),
            _ => None,
        }
    }
}

/// The outcome of one request on one backend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome<T> {
    /// How the search ended.
    pub status: Status,
    /// rg's stderr, one entry per line, without the line terminator.
    pub stderr: Vec<String>,
    /// What rg printed on stdout, as typed values.
    pub results: T,
}

/// The files a glob listed, in rg's order, as raw path bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GlobResults {
    /// One entry per listed file, exactly as rg prints it (without `\n`).
    pub files: Vec<Vec<u8>>,
}

impl GlobResults {
    /// Write what `rg --files` prints: each path's bytes and `\n`.
    pub fn write_raw<W: Write>(&self, mut w: W) -> io::Result<()> {
        for f in &self.files {
            w.write_all(f)?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// The number of bytes [`GlobResults::write_raw`] writes.
    pub fn raw_len(&self) -> u64 {
        self.files.iter().map(|f| f.len() as u64 + 1).sum()
    }
}

/// The events a grep printed, in output order, summary last.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GrepResults {
    /// `begin`, `match`, `end` per file with a match, then `summary`.
    pub events: Vec<Event>,
}

impl GrepResults {
    /// Write what `rg --json` prints: one JSON line per event.
    pub fn write_raw<W: Write>(&self, mut w: W) -> io::Result<()> {
        let mut buf = Vec::with_capacity(4096);
        for e in &self.events {
            buf.clear();
            e.write_json(&mut buf);
            w.write_all(&buf)?;
        }
        Ok(())
    }

    /// The matches, in output order.
    pub fn matches(&self) -> impl Iterator<Item = &crate::event::Match> {
        self.events.iter().filter_map(|e| match e {
            Event::Match(m) => Some(m),
            _ => None,
        })
    }
}
