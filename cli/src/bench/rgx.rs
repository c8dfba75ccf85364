//! ripgrepx (the `ripgrepx` Python package, command `rgx`) as a peer side of
//! `bench --index`: another trigram index in front of ripgrep's matcher,
//! kept by a daemon of its own. Each call is what a user of it runs: the
//! `rgx` command, which asks its warm daemon, its output read whole (as the
//! rg side reads rg's). Its answer is compared with rg's by matching lines
//! and files, and reported, never hidden: it has its own ignore rules.
//!
//! Its state (index, snapshot, socket) goes into a directory of its own
//! under the temp directory (`RGX_CACHE_DIR`), with no configuration file
//! (`RGX_CONFIG` names one that does not exist), and is removed, the daemon
//! stopped, when the peer is dropped.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A running rgx daemon with its index of one tree built.
pub(crate) struct Rgx {
    exe: PathBuf,
    tree: PathBuf,
    cache: PathBuf,
    /// From `--server start` to the status saying `ready`.
    pub(crate) built: Duration,
    /// The status's `files` and `index` lines, as it prints them.
    pub(crate) status: String,
}

/// What one rgx call printed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Answer {
    /// Its exit code (`None`: killed by a signal).
    pub(crate) code: Option<i32>,
    /// Lines printed (`path:line:text`, one per matching line).
    pub(crate) lines: usize,
    /// Distinct paths among them.
    pub(crate) files: usize,
}

impl Rgx {
    /// Start rgx's daemon on `tree` and wait until its index is built (at
    /// most `limit`).
    pub(crate) fn start(exe: &Path, tree: &Path, limit: Duration) -> std::io::Result<Rgx> {
        let cache =
            std::env::temp_dir().join(format!("dsh-search-bench-rgx-{}", std::process::id()));
        std::fs::create_dir_all(&cache)?;
        let mut rgx = Rgx {
            exe: exe.to_path_buf(),
            tree: tree.to_path_buf(),
            cache,
            built: Duration::ZERO,
            status: String::new(),
        };
        let started = Instant::now();
        let out = rgx.command().args(["--server", "start"]).output()?;
        if !out.status.success() {
            return Err(failed("--server start", &out));
        }
        loop {
            let out = rgx.command().args(["--server", "status"]).output()?;
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if field(&text, "state").is_some_and(|s| s == "ready") {
                rgx.built = started.elapsed();
                rgx.status = ["files", "index"]
                    .iter()
                    .filter_map(|k| field(&text, k).map(|v| format!("{k} {v}")))
                    .collect::<Vec<_>>()
                    .join(", ");
                return Ok(rgx);
            }
            if started.elapsed() > limit {
                return Err(std::io::Error::other(format!(
                    "rgx's index of {} was not ready after {limit:?}: {text}",
                    tree.display()
                )));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `rgx` in the tree, with this peer's state directory.
    fn command(&self) -> Command {
        let mut c = Command::new(&self.exe);
        c.current_dir(&self.tree)
            .env("RGX_CACHE_DIR", &self.cache)
            .env("RGX_CONFIG", self.cache.join("no-config.toml"))
            .stdin(Stdio::null());
        c
    }

    /// One search, as a user runs it: `rgx -- PATTERN` in the tree, its
    /// output read whole; what it printed, not parsed (the timed call).
    pub(crate) fn grep_raw(&self, pattern: &str) -> std::io::Result<Output> {
        self.command().arg("--").arg(pattern).output()
    }

    /// Wait until the daemon has used no CPU for a second (at most
    /// `limit`): a read of the tree by another process (rg, the scan) sets
    /// it re-checking what was opened for tens of seconds (it watches
    /// `IN_OPEN`), and its calls meanwhile take 0.1-1.5 s on the Linux
    /// tree. Whether it settled.
    pub(crate) fn settle(&self, limit: Duration) -> bool {
        let Some(pid) = self.daemon() else {
            return false;
        };
        let started = Instant::now();
        let mut last = cpu_ticks(pid);
        let mut still = 0;
        while started.elapsed() < limit {
            std::thread::sleep(Duration::from_millis(250));
            let now = cpu_ticks(pid);
            still = if now == last { still + 1 } else { 0 };
            last = now;
            if still >= 4 {
                return true;
            }
        }
        false
    }

    /// The daemon's pid: the `rgx --server` process with this peer's state
    /// directory in its environment.
    fn daemon(&self) -> Option<u32> {
        let mut want = b"RGX_CACHE_DIR=".to_vec();
        want.extend_from_slice(self.cache.as_os_str().as_encoded_bytes());
        std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
            let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
            if args.get(1) != Some(&&b"--server"[..]) || args.len() > 3 {
                return None;
            }
            let environ = std::fs::read(e.path().join("environ")).ok()?;
            environ
                .split(|&b| b == 0)
                .any(|v| v == want.as_slice())
                .then_some(pid)
        })
    }

    /// One search, its output counted.
    pub(crate) fn grep(&self, pattern: &str) -> std::io::Result<Answer> {
        let out = self.grep_raw(pattern)?;
        if out.status.code() == Some(2) || out.status.code().is_none() {
            return Err(failed(pattern, &out));
        }
        let (lines, files) = count(&out.stdout);
        Ok(Answer {
            code: out.status.code(),
            lines,
            files,
        })
    }
}

impl Drop for Rgx {
    fn drop(&mut self) {
        let _ = self
            .command()
            .args(["--server", "stop"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(&self.cache);
    }
}

/// utime + stime of `pid`, in clock ticks (0 when unreadable).
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let at = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // utime and stime are fields 14 and 15 of stat(5); 12 and 13 here.
    at(11) + at(12)
}

fn failed(what: &str, out: &Output) -> std::io::Error {
    std::io::Error::other(format!(
        "rgx {what}: {}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr).trim()
    ))
}

/// The value of `key` in `rgx --server status`'s `  key   value` lines.
fn field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status.lines().find_map(|l| {
        let mut words = l.trim_start().splitn(2, char::is_whitespace);
        (words.next() == Some(key)).then(|| words.next().unwrap_or("").trim())
    })
}

/// Matching lines and distinct files in rg's `path:line:text` output: the
/// path ends at the first `:` followed by digits and a `:`.
fn count(stdout: &[u8]) -> (usize, usize) {
    let mut files = BTreeSet::new();
    let mut lines = 0;
    for line in stdout.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        lines += 1;
        let end = (0..line.len())
            .find(|&i| {
                line[i] == b':' && {
                    let digits = line[i + 1..]
                        .iter()
                        .take_while(|b| b.is_ascii_digit())
                        .count();
                    digits > 0 && line.get(i + 1 + digits) == Some(&b':')
                }
            })
            .unwrap_or(line.len());
        files.insert(&line[..end]);
    }
    (lines, files.len())
}

#[cfg(test)]
mod tests {
    use super::{count, field};

    #[test]
    fn counts_lines_and_files() {
        let out = b"a/b.c:3:x = 1:2:\na/b.c:9:y\nc:d.h:10:z\n";
        assert_eq!(count(out), (3, 2));
        assert_eq!(count(b""), (0, 0));
    }

    #[test]
    fn reads_status_fields() {
        let s = "rgx index status\n\n  root      /t\n  state     ready\n  files     78.3k\n  index     165.2 MB\n";
        assert_eq!(field(s, "state"), Some("ready"));
        assert_eq!(field(s, "index"), Some("165.2 MB"));
        assert_eq!(field(s, "daemon"), None);
    }
}
