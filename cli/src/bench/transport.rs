//! `dsh-search bench --transports`: what a call costs through each server
//! against the same call in process and against spawning `rg` for the same
//! search (BENCHMARKS.md, "Transports").
//!
//! One grep on the 100-file workspace (the tiny workload), called the same
//! number of times on each side, round-robin in one run (each round starts
//! with the next side), one call at a time:
//!
//! - in process: [`Tools::call`] with the servers' tools;
//! - JSON lines: a `dsh-search serve` child, one request line out, one
//!   answer line back, over pipes;
//! - MCP: a `dsh-search mcp` child after the initialize handshake, one
//!   `tools/call` out, its response back, over pipes (the client is this
//!   process: a minimal JSON-RPC client, so the figure is the server's and
//!   the pipe's, not an SDK's);
//! - rg: `rg --no-config --json --regexp=<pattern>` spawned in the tree
//!   and read to its end, which is what a harness pays for one search today.

use std::io::{self, BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use dsh_search::tool::{CallContext, Tools};
use serde_json::{json, Value};

use super::measure::median;
use super::report::human;

/// The measured sides, in table order.
const SIDES: [&str; 4] = ["in process", "JSON lines", "MCP stdio", "rg spawn"];

/// The samples of one side.
#[derive(Clone, Debug)]
pub(crate) struct Side {
    /// One of "in process", "JSON lines", "MCP stdio", "rg spawn".
    pub(crate) name: &'static str,
    /// One wall time per call.
    pub(crate) samples: Vec<Duration>,
}

/// Measure `calls` greps of `pattern` in `tree` on every side. `exe` is the
/// `dsh-search` binary that serves (the running one), `rg` the binary to
/// spawn.
pub(crate) fn run(
    tools: &Tools,
    exe: &Path,
    rg: &Path,
    tree: &Path,
    pattern: &str,
    calls: usize,
) -> io::Result<Vec<Side>> {
    let args = json!({ "pattern": pattern });
    let ctx = CallContext::new(tree).session("bench");
    let expected = tools.call("grep", &args, &ctx).content;
    let mut jsonl = Server::start(exe, tree, "serve")?;
    let mut mcp = Server::start(exe, tree, "mcp")?;
    mcp.handshake()?;
    // Every side answers the same before anything is timed.
    check("JSON lines", &jsonl.jsonl_grep(&args)?, &expected)?;
    check("MCP stdio", &mcp.mcp_grep(&args)?, &expected)?;
    spawn_rg(rg, tree, pattern)?;
    let mut samples: Vec<Vec<Duration>> = vec![Vec::with_capacity(calls); SIDES.len()];
    for round in 0..calls {
        for k in 0..SIDES.len() {
            let side = (round + k) % SIDES.len();
            let start = Instant::now();
            match side {
                0 => {
                    tools.call("grep", &args, &ctx);
                }
                1 => {
                    jsonl.jsonl_grep(&args)?;
                }
                2 => {
                    mcp.mcp_grep(&args)?;
                }
                _ => spawn_rg(rg, tree, pattern)?,
            }
            samples[side].push(start.elapsed());
        }
    }
    jsonl.stop();
    mcp.stop();
    Ok(SIDES
        .iter()
        .zip(samples)
        .map(|(&name, samples)| Side { name, samples })
        .collect())
}

fn check(side: &str, got: &str, expected: &str) -> io::Result<()> {
    if got == expected {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "{side} answered {got:?}, the in-process call {expected:?}"
    )))
}

fn spawn_rg(rg: &Path, tree: &Path, pattern: &str) -> io::Result<()> {
    let out = Command::new(rg)
        .args(["--no-config", "--json"])
        .arg(format!("--regexp={pattern}"))
        .current_dir(tree)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()?;
    match out.status.code() {
        Some(0 | 1) => Ok(()),
        _ => Err(io::Error::other(format!(
            "{} failed: {}",
            rg.display(),
            out.status
        ))),
    }
}

/// A server child and its pipes.
struct Server {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    line: String,
    next_id: u64,
}

impl Server {
    fn start(exe: &Path, tree: &Path, subcommand: &str) -> io::Result<Server> {
        let mut child = Command::new(exe)
            .arg("--cwd")
            .arg(tree)
            .arg(subcommand)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        Ok(Server {
            child,
            stdin,
            stdout,
            line: String::new(),
            next_id: 0,
        })
    }

    fn send(&mut self, message: &Value) -> io::Result<()> {
        let stdin = self.stdin.as_mut().expect("open until stop");
        let mut bytes = message.to_string().into_bytes();
        bytes.push(b'\n');
        stdin.write_all(&bytes)?;
        stdin.flush()
    }

    fn recv(&mut self) -> io::Result<Value> {
        self.line.clear();
        if self.stdout.read_line(&mut self.line)? == 0 {
            return Err(io::Error::other("the server closed its stdout"));
        }
        serde_json::from_str(&self.line).map_err(io::Error::other)
    }

    /// Read until the response to `id` (skipping notifications).
    fn recv_id(&mut self, id: u64) -> io::Result<Value> {
        loop {
            let message = self.recv()?;
            if message["id"] == id {
                return Ok(message);
            }
        }
    }

    fn next_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn handshake(&mut self) -> io::Result<()> {
        let id = self.next_id();
        self.send(
            &json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "dsh-search bench", "version": env!("CARGO_PKG_VERSION")}}}),
        )?;
        self.recv_id(id)?;
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    }

    fn jsonl_grep(&mut self, args: &Value) -> io::Result<String> {
        let id = self.next_id();
        self.send(&json!({"id": id, "tool": "grep", "arguments": args}))?;
        let answer = self.recv_id(id)?;
        text(&answer["result"]["content"])
    }

    fn mcp_grep(&mut self, args: &Value) -> io::Result<String> {
        let id = self.next_id();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                          "params": {"name": "grep", "arguments": args}}))?;
        let answer = self.recv_id(id)?;
        text(&answer["result"]["content"][0]["text"])
    }

    fn stop(&mut self) {
        self.stdin.take();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn text(v: &Value) -> io::Result<String> {
    v.as_str()
        .map(str::to_owned)
        .ok_or_else(|| io::Error::other(format!("no text in the answer: {v}")))
}

/// The `p`-th percentile (0..=100) of `samples`, nearest rank.
fn percentile(samples: &[Duration], p: usize) -> Duration {
    let mut v = samples.to_vec();
    v.sort();
    let rank = (p * v.len()).div_ceil(100).clamp(1, v.len().max(1));
    v.get(rank - 1).copied().unwrap_or_default()
}

/// The report: per side its median and p90, its overhead over the
/// in-process call (difference of the medians) and its ratio to the rg
/// spawn; then the targets.
pub(crate) fn table(sides: &[Side]) -> String {
    let med = |name: &str| {
        sides
            .iter()
            .find(|s| s.name == name)
            .map(|s| median(&s.samples))
            .unwrap_or_default()
    };
    let (inproc, rg) = (med("in process"), med("rg spawn"));
    let mut out = String::from(
        "| side | calls | median | p90 | over in-process | / rg spawn |\n|---|---:|---:|---:|---:|---:|\n",
    );
    for s in sides {
        let m = median(&s.samples);
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {:.3} |\n",
            s.name,
            s.samples.len(),
            human(m),
            human(percentile(&s.samples, 90)),
            human(m.saturating_sub(inproc)),
            m.as_secs_f64() / rg.as_secs_f64().max(1e-9),
        ));
    }
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let over = |name| ms(med(name).saturating_sub(inproc));
    let mcp_ratio = med("MCP stdio").as_secs_f64() / rg.as_secs_f64().max(1e-9);
    let verdict = |ok: bool| if ok { "met" } else { "NOT met" };
    out.push_str(&format!(
        "\nTargets: JSON lines overhead {:.3} ms ≤ 1 ms: {}; MCP overhead {:.3} ms ≤ 2 ms: {}; MCP call / rg spawn {mcp_ratio:.3} ≤ 0.3: {}.\n",
        over("JSON lines"),
        verdict(over("JSON lines") <= 1.0),
        over("MCP stdio"),
        verdict(over("MCP stdio") <= 2.0),
        verdict(mcp_ratio <= 0.3),
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::percentile;
    use std::time::Duration;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<Duration> = (1..=10).map(Duration::from_millis).collect();
        assert_eq!(percentile(&v, 90), Duration::from_millis(9));
        assert_eq!(percentile(&v, 50), Duration::from_millis(5));
        assert_eq!(percentile(&v, 100), Duration::from_millis(10));
        assert_eq!(percentile(&[], 90), Duration::ZERO);
    }
}
