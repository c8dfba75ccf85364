//! The remote workspace against `rg` on the remote host
//! (`docs/contract.md` §11, BENCHMARKS.md "Remote workspaces over SFTP"):
//! an OpenSSH `sshd` of its own on 127.0.0.1 with generated keys, the
//! medium generated tree (10,000 files), and for glob `*` and a
//! rare-literal grep: the native engine over SFTP (one connection, already
//! open) against `rg` run on the host through an already-open SSH
//! connection (`ssh -o ControlPath=…`), alternating, with the requests,
//! round trips and bytes the SFTP side cost, and the CPU time each side
//! took (the SFTP side: this process and the `sshd` serving it; rg's: the
//! `sshd` session, its shell and rg, and the local `ssh` client and master),
//! which the load of other work on the machine moves less than the times.
//!
//! ```text
//! cargo bench --bench sftp -- [ITERATIONS] [SESSIONS...]
//! ```
//!
//! With session counts (`SftpBuilder::sessions`), one workspace of each,
//! each connected once, all measured in every iteration, and a row each;
//! without, one of the default.
//!
//! Needs `/usr/sbin/sshd`, `ssh`, `ssh-keygen` and `setpriv` (scripts/test
//! installs them), and rg 15.2.0 in `DSH_SEARCH_RG` or on PATH.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dsh_search::backend::rg::{glob_args, grep_args};
use dsh_search::fs::{SftpFs, SftpStats};
use dsh_search::{
    Config, FsSpec, GlobRequest, GrepRequest, NativeBackend, SearchBackend, SftpAddress,
    WorkspaceOptions,
};

// The benchmark corpus is the binary's (`dsh-search bench` generates the
// same trees): included as a source file rather than made a library item,
// since generating fake source trees is no part of the search API.
#[path = "../cli/src/bench/corpus.rs"]
#[allow(dead_code, reason = "this bench uses part of the corpus module")]
mod corpus;
use corpus::Tier;

fn sh(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// CPU time (user and system) of the process `pid` and its descendants
/// alive now, from `/proc`: what the server side of a search costs, the
/// wall time aside (the 2 cores are shared with other work).
fn tree_cpu(pid: u32) -> Duration {
    let mut parent = std::collections::HashMap::<u32, Vec<u32>>::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        if let Some(pp) = stat_fields(p).and_then(|f| f.get(1).and_then(|x| x.parse().ok())) {
            parent.entry(pp).or_default().push(p);
        }
    }
    let mut total = Duration::ZERO;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        // Its own threads, and its children that ended and were waited
        // for (`cutime`, `cstime`: clock ticks of 10 ms).
        let waited: u64 = stat_fields(p)
            .unwrap_or_default()
            .iter()
            .skip(13)
            .take(2)
            .filter_map(|t| t.parse::<u64>().ok())
            .sum();
        total += proc_cpu(p) + Duration::from_millis(waited * 10);
        stack.extend(parent.get(&p).into_iter().flatten());
    }
    total
}

/// The fields of `/proc/PID/stat` after the command name (state first).
fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    Some(rest.split(' ').map(str::to_string).collect())
}

/// The run time of every thread of `pid` (`schedstat`, nanoseconds).
fn proc_cpu(pid: u32) -> Duration {
    let mut ns = 0u64;
    for t in std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten()
        .flatten()
    {
        if let Ok(s) = std::fs::read_to_string(t.path().join("schedstat")) {
            ns += s
                .split(' ')
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
    }
    Duration::from_nanos(ns)
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let numbers: Vec<usize> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(|n| n.parse().expect("ITERATIONS and SESSIONS are numbers"))
        .collect();
    let iterations = numbers.first().copied().unwrap_or(5);
    let session_counts: Vec<Option<usize>> = match &numbers[numbers.len().min(1)..] {
        [] => vec![None],
        counts => counts.iter().copied().map(Some).collect(),
    };
    let rg = std::env::var("DSH_SEARCH_RG").unwrap_or_else(|_| "rg".into());
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .expect("HOME")
        .join("dsh-search/bench-sftp");
    let tree = cache.join("medium");
    if !tree.join(".complete").exists() {
        let _ = std::fs::remove_dir_all(&tree);
        std::fs::create_dir_all(&tree).unwrap();
        corpus::generate(&tree, Tier::Medium, 1).unwrap();
        std::fs::write(tree.join(".complete"), "").unwrap();
    }
    let (dirs, files) = count(&tree);

    let td = tempfile::tempdir().unwrap();
    let dir = td.path();
    for k in ["host_key", "user_key"] {
        sh(Command::new("ssh-keygen")
            .args(["-q", "-t", "ed25519", "-N", "", "-f"])
            .arg(dir.join(k)));
    }
    std::fs::copy(dir.join("user_key.pub"), dir.join("authorized_keys")).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(
        dir.join("sshd_config"),
        format!(
            "Port {port}\nListenAddress 127.0.0.1\nHostKey {d}/host_key\nPidFile none\n\
             AuthorizedKeysFile {d}/authorized_keys\nPasswordAuthentication no\n\
             KbdInteractiveAuthentication no\nUsePAM no\nPermitRootLogin yes\nStrictModes no\n\
             Subsystem sftp internal-sftp\nLogLevel ERROR\n",
            d = dir.display()
        ),
    )
    .unwrap();
    let host_pub = std::fs::read_to_string(dir.join("host_key.pub")).unwrap();
    let known_hosts = dir.join("known_hosts");
    std::fs::write(&known_hosts, format!("[127.0.0.1]:{port} {host_pub}")).unwrap();
    std::fs::create_dir_all("/run/sshd").unwrap();
    let mut sshd = Command::new("setpriv")
        .args(["--pdeathsig", "KILL", "/usr/sbin/sshd", "-D", "-e", "-f"])
        .arg(dir.join("sshd_config"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("sshd starts");
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        std::thread::sleep(Duration::from_millis(20));
    }

    // The open SSH connection rg runs through.
    let control = dir.join("cm");
    let ssh = |extra: &[&str]| {
        let mut c = Command::new("ssh");
        c.arg("-i")
            .arg(dir.join("user_key"))
            .arg("-o")
            .arg(format!("UserKnownHostsFile={}", known_hosts.display()))
            .args([
                "-o",
                "BatchMode=yes",
                "-o",
                "StrictHostKeyChecking=yes",
                "-p",
                &port.to_string(),
            ])
            .arg("-o")
            .arg(format!("ControlPath={}", control.display()))
            .args(extra)
            .arg("root@127.0.0.1");
        c
    };
    let mut master = ssh(&["-o", "ControlMaster=yes", "-N"])
        .stdin(Stdio::null())
        .spawn()
        .unwrap();
    while !control.exists() {
        std::thread::sleep(Duration::from_millis(20));
    }

    let workspaces: Vec<(String, Arc<SftpFs>, NativeBackend<SftpFs>)> = session_counts
        .iter()
        .map(|&n| {
            let mut b = SftpFs::builder("127.0.0.1")
                .port(port)
                .user("root")
                .identity(dir.join("user_key"))
                .known_hosts(&known_hosts);
            if let Some(n) = n {
                b = b.sessions(n);
            }
            let fs = Arc::new(b.build().unwrap());
            fs.connect().unwrap();
            let label = n.map_or("default".to_string(), |n| n.to_string());
            (label, fs.clone(), NativeBackend::on(fs))
        })
        .collect();
    // The live index over SFTP (docs/index.md: the tree listed again and
    // compared before every call, only changed files read), a workspace of
    // its own with the default sessions, built before the first call.
    let indexed_ws = WorkspaceOptions::new(FsSpec::Sftp(SftpAddress {
        user: Some("root".into()),
        host: "127.0.0.1".into(),
        port,
    }))
    .root(&tree)
    .identity(dir.join("user_key"))
    .known_hosts(&known_hosts)
    .index(true)
    .open()
    .expect("the indexed SFTP workspace opens");
    indexed_ws
        .connect()
        .expect("the indexed SFTP workspace connects");
    let index = indexed_ws.index().expect("an index").clone();
    assert!(
        index.wait_ready(Duration::from_secs(600)),
        "the index over SFTP was not built: {}",
        index.status().state
    );
    let indexed = indexed_ws.backend(&Config::default());
    let quote = |a: &str| format!("'{}'", a.replace('\'', "'\\''"));

    println!(
        "| workload | sessions | files | dirs | files read | requests | round trips | (dirs + files read) / 16 | bytes read | sftp | rg over ssh | ratio | sftp CPU | rg CPU | CPU ratio |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    let me = std::process::id();
    for (label, is_glob) in [("glob *", true), ("grep rare literal", false)] {
        let glob = GlobRequest::new("*", &tree);
        let grep = GrepRequest::new(corpus::RARE_LITERAL, &tree);
        let args = if is_glob {
            glob_args(&glob)
        } else {
            grep_args(&grep)
        };
        let remote = format!(
            "cd {} && {} {}",
            quote(&tree.display().to_string()),
            quote(&rg),
            args.iter()
                .map(|a| quote(&a.to_string_lossy()))
                .collect::<Vec<_>>()
                .join(" ")
        );
        // Per workspace: times, CPU times, the last call's traffic.
        let mut ours: Vec<(Vec<Duration>, Vec<Duration>, SftpStats)> = workspaces
            .iter()
            .map(|_| (Vec::new(), Vec::new(), SftpStats::default()))
            .collect();
        let (mut theirs, mut theirs_cpu) = (Vec::new(), Vec::new());
        let (mut by_index, mut by_index_cpu) = (Vec::new(), Vec::new());
        let mut index_cost = SftpStats::default();
        for i in 0..=iterations {
            // Each measured call starts on a quiet machine: an ssh session
            // that ran rg goes on ending (its processes exiting) after the
            // client returns, and whatever ran just after it was 20% slower.
            // The workspaces take turns at going first.
            let settle = || std::thread::sleep(Duration::from_millis(100));
            let n = workspaces.len();
            for k in (0..n).map(|k| (k + i) % n) {
                let (_, fs, native) = &workspaces[k];
                let (took_all, cpu_all, cost) = &mut ours[k];
                settle();
                let before = fs.stats();
                let cpu = (proc_cpu(me), tree_cpu(sshd.id()));
                let t = Instant::now();
                if is_glob {
                    assert!(native.glob(&glob).results.files.len() >= files as usize / 2);
                } else {
                    native.grep(&grep);
                }
                let took = t.elapsed();
                let after = fs.stats();
                let our_cpu = proc_cpu(me) - cpu.0 + tree_cpu(sshd.id()) - cpu.1;
                if i > 0 {
                    took_all.push(took);
                    cpu_all.push(our_cpu);
                }
                *cost = SftpStats {
                    requests: after.requests - before.requests,
                    round_trips: after.round_trips - before.round_trips,
                    bytes_read: after.bytes_read - before.bytes_read,
                    connects: after.connects - before.connects,
                };
            }
            // The indexed workspace, every call answered from its mirror.
            settle();
            let answered = index.status().answered_by_index;
            let traffic = indexed_ws.sftp_stats().expect("an SFTP workspace");
            let cpu = (proc_cpu(me), tree_cpu(sshd.id()));
            let t = Instant::now();
            if is_glob {
                assert!(indexed.glob(&glob).results.files.len() >= files as usize / 2);
            } else {
                indexed.grep(&grep);
            }
            let took = t.elapsed();
            let cpu = proc_cpu(me) - cpu.0 + tree_cpu(sshd.id()) - cpu.1;
            let after = indexed_ws.sftp_stats().expect("an SFTP workspace");
            index_cost = SftpStats {
                requests: after.requests - traffic.requests,
                round_trips: after.round_trips - traffic.round_trips,
                bytes_read: after.bytes_read - traffic.bytes_read,
                connects: after.connects - traffic.connects,
            };
            assert_eq!(
                index.status().answered_by_index,
                answered + 1,
                "the index did not answer: {}",
                index.status().state
            );
            if i > 0 {
                by_index.push(took);
                by_index_cpu.push(cpu);
            }
            settle();
            let cpu = (tree_cpu(sshd.id()), proc_cpu(master.id()), children_cpu());
            let t = Instant::now();
            let out = ssh(&[]).arg(&remote).stdin(Stdio::null()).output().unwrap();
            let rg_took = t.elapsed();
            let rg_cpu = tree_cpu(sshd.id()) - cpu.0 + proc_cpu(master.id()) - cpu.1
                + children_cpu()
                - cpu.2;
            assert!(
                out.status.code().is_some_and(|c| c <= 1),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            if i > 0 {
                theirs.push(rg_took);
                theirs_cpu.push(rg_cpu);
            }
        }
        let files_read = if is_glob { 0 } else { files };
        let (b, cb) = (median(theirs), median(theirs_cpu));
        for ((sessions, ..), (took, cpu, cost)) in workspaces.iter().zip(ours) {
            let (a, ca) = (median(took), median(cpu));
            println!(
                "| {label} | {sessions} | {files} | {dirs} | {files_read} | {} | {} | {} | {} | {:.1} ms | {:.1} ms | {:.2} | {:.1} ms | {:.1} ms | {:.2} |",
                cost.requests,
                cost.round_trips,
                (dirs + files_read) / 16,
                cost.bytes_read,
                a.as_secs_f64() * 1e3,
                b.as_secs_f64() * 1e3,
                a.as_secs_f64() / b.as_secs_f64(),
                ca.as_secs_f64() * 1e3,
                cb.as_secs_f64() * 1e3,
                ca.as_secs_f64() / cb.as_secs_f64()
            );
        }
        // The index's row: the last call's traffic, the listing of the
        // tree that finds what changed and the reads of the candidates.
        let (a, ca) = (median(by_index), median(by_index_cpu));
        println!(
            "| {label} | default, indexed | {files} | {dirs} | changed files and candidates | {} | {} | | {} | {:.1} ms | {:.1} ms | {:.2} | {:.1} ms | {:.1} ms | {:.2} |",
            index_cost.requests,
            index_cost.round_trips,
            index_cost.bytes_read,
            a.as_secs_f64() * 1e3,
            b.as_secs_f64() * 1e3,
            a.as_secs_f64() / b.as_secs_f64(),
            ca.as_secs_f64() * 1e3,
            cb.as_secs_f64() * 1e3,
            ca.as_secs_f64() / cb.as_secs_f64()
        );
    }
    let _ = master.kill();
    drop(indexed);
    drop(indexed_ws);
    let _ = master.wait();
    let _ = sshd.kill();
    let _ = sshd.wait();
}

/// CPU time of this process's children that have been waited for (the
/// `ssh` client of each rg run): `cutime` and `cstime`, in clock ticks of
/// 10 ms.
fn children_cpu() -> Duration {
    let f = stat_fields(std::process::id()).unwrap_or_default();
    let ticks: u64 = f
        .iter()
        .skip(13)
        .take(2)
        .filter_map(|t| t.parse::<u64>().ok())
        .sum();
    Duration::from_millis(ticks * 10)
}

/// Directories and regular files under `root` (the marker file excluded).
fn count(root: &Path) -> (u64, u64) {
    let (mut dirs, mut files) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        dirs += 1;
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                stack.push(e.path());
            } else if t.is_file() && e.file_name() != ".complete" {
                files += 1;
            }
        }
    }
    (dirs, files)
}
