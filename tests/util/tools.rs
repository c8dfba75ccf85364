//! The tool level of every conformance case (`contract.md` §3–§5): the same
//! glob or grep call through [`Tools::call`] on the native engine and on the
//! rg backend must give equal [`ToolResult`]s (content, error, value, meta),
//! for a direct call with a session and for a nested call, under the default
//! configuration and under small caps that run the over-cap paths (previews,
//! head and sampled glob pages, spill footers, the inline cap, the meta cap).
//! Then every path the call returned is opened with `read` in the same
//! context: every path a search returns is a path `read` can open in the
//! same context.

use std::collections::BTreeMap;
use std::collections::HashMap;
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::{Arc, Mutex};

use dsh_search::config::Config;
use dsh_search::tool::{CallContext, ToolResult, Tools};
use dsh_search::{GlobRequest, GrepRequest, SearchBackend};
use dsh_search::{GlobResults, GrepResults, Outcome, Status};
use dsh_search::{SpillRef, SpillSource, SpillStore};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::rg::{self, Call};
use super::workspaces;

/// A spill store whose locator is derived from what was saved (owner, tool,
/// name and a digest of the content), so two results that spilled compare
/// equal exactly when their spilled texts are equal, and the random names of
/// the local store do not get in the way.
pub struct DigestStore;

impl SpillStore for DigestStore {
    fn save_text(
        &self,
        owner: &str,
        source: &SpillSource,
        name: &str,
        content: &str,
    ) -> std::io::Result<SpillRef> {
        let digest = Sha256::digest(content.as_bytes());
        // 64 bits of the digest: short enough that the inline cap's notice
        // fits the small configuration's 150 bytes.
        let hex: String = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        Ok(SpillRef {
            locator: format!(
                "/spill/{owner}/{}/{}/{name}/{hex}",
                source.tool_name, source.label
            ),
            hint: "Hint.".to_string(),
        })
    }
}

/// The configurations every case runs under.
pub fn configs() -> Vec<(&'static str, Config)> {
    let mut plain = Config::default();
    plain.spill.max_inline_bytes = None;
    // Sampled glob pages, 10-byte previews, a tiny meta cap and the inline
    // byte cap of the spill policy.
    let mut sampled = Config::default();
    sampled.search.glob_max_results = 3;
    sampled.search.grep_max_matches = 4;
    sampled.search.grep_max_line_bytes = 10;
    sampled.search.search_meta_max_bytes = 200;
    sampled.search.sample_over_cap_glob_results = true;
    sampled.spill.max_inline_bytes = Some(150);
    // The shipped head mode (no sampling) over a small cap.
    let mut head = Config::default();
    head.search.glob_max_results = 2;
    head.search.grep_max_matches = 1;
    head.search.grep_max_line_bytes = 3;
    vec![
        ("default", plain),
        ("small sampled", sampled),
        ("small head", head),
    ]
}

/// A backend that runs each distinct request once per case and replays
/// its outcome: the configurations and the direct/nested variants differ
/// only after the backend has answered (rendering, caps, spill, meta), so
/// one real search per backend and case is enough, and keeps the suite's
/// runtime near the raw level's.
pub struct Memo {
    inner: Arc<dyn SearchBackend>,
    globs: Mutex<HashMap<String, Outcome<GlobResults>>>,
    greps: Mutex<HashMap<String, Outcome<GrepResults>>>,
    /// Whether a request with a budget may replay the same request's
    /// outcome without one ([`Memo::unbudgeted`]).
    share: bool,
    /// How many requests were answered that way.
    shared: std::sync::atomic::AtomicUsize,
}

impl Memo {
    fn new(inner: Arc<dyn SearchBackend>) -> Arc<Memo> {
        Arc::new(Memo {
            inner,
            globs: Mutex::default(),
            greps: Mutex::default(),
            share: false,
            shared: Default::default(),
        })
    }

    /// The rg backend of one case, for its raw level (no budget) and its
    /// tool level (the tools' budget): on Windows the tool level replays
    /// the raw level's run of the same request ([`Memo::unbudgeted`]), so
    /// rg.exe starts once per case for the rg backend instead of twice.
    /// Under Wine a start is the run's main cost (about 0.1 s of a loaded
    /// machine's time; README "Platforms"). On Unix each level starts its
    /// own rg, as before.
    pub fn rg_of_case() -> Arc<Memo> {
        Arc::new(Memo {
            inner: Arc::new(super::rg::reference_backend()),
            globs: Mutex::default(),
            greps: Mutex::default(),
            share: cfg!(windows),
            shared: Default::default(),
        })
    }

    /// [`Memo::rg_of_case`]'s sharing on any platform (its test).
    fn sharing(inner: Arc<dyn SearchBackend>) -> Memo {
        Memo {
            inner,
            globs: Mutex::default(),
            greps: Mutex::default(),
            share: true,
            shared: Default::default(),
        }
    }

    /// How many requests replayed a run without a budget.
    pub fn shared(&self) -> usize {
        self.shared.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The outcome of the same request run without a budget, when it can
    /// stand for a run with `budget`: the rg backend only looks at the
    /// budget once rg's stdout has grown past it (`backend/rg/process.rs`,
    /// `drain_stdout`), so a run whose output stays well inside it (half,
    /// as the raw form here is rewritten from the parsed results) reads
    /// the same bytes and ends the same way with or without it.
    fn unbudgeted<T: Clone>(
        &self,
        seen: &HashMap<String, Outcome<T>>,
        key: &str,
        budget: Option<u64>,
        raw_len: impl Fn(&T) -> usize,
    ) -> Option<Outcome<T>> {
        let budget = budget.filter(|_| self.share)?;
        let o = seen.get(key)?;
        if (raw_len(&o.results) as u64).saturating_mul(2) > budget {
            return None;
        }
        self.shared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(o.clone())
    }
}

fn raw_len_glob(r: &GlobResults) -> usize {
    let mut v = Vec::new();
    r.write_raw(&mut v).expect("writing to a Vec");
    v.len()
}

fn raw_len_grep(r: &GrepResults) -> usize {
    let mut v = Vec::new();
    r.write_raw(&mut v).expect("writing to a Vec");
    v.len()
}

impl SearchBackend for Memo {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn searches_local_disk(&self) -> bool {
        self.inner.searches_local_disk()
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        let key =
            |budget: Option<u64>| format!("{:?}", (&req.pattern, &req.path, &req.workdir, budget));
        // A panic of the search (reported by the raw level) leaves the
        // lock poisoned; the tool level then runs its own.
        let mut seen = self.globs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = seen.get(&key(req.raw_budget)) {
            return o.clone();
        }
        if let Some(o) = self.unbudgeted(&seen, &key(None), req.raw_budget, raw_len_glob) {
            seen.insert(key(req.raw_budget), o.clone());
            return o;
        }
        seen.entry(key(req.raw_budget))
            .or_insert_with(|| retried(|| self.inner.glob(req)))
            .clone()
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        let key = |budget: Option<u64>| {
            format!(
                "{:?}",
                (&req.pattern, &req.path, &req.include, &req.workdir, budget)
            )
        };
        // A panic of the search (reported by the raw level) leaves the
        // lock poisoned; the tool level then runs its own.
        let mut seen = self.greps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(o) = seen.get(&key(req.raw_budget)) {
            return o.clone();
        }
        if let Some(o) = self.unbudgeted(&seen, &key(None), req.raw_budget, raw_len_grep) {
            seen.insert(key(req.raw_budget), o.clone());
            return o;
        }
        seen.entry(key(req.raw_budget))
            .or_insert_with(|| retried(|| self.inner.grep(req)))
            .clone()
    }
}

/// `search()`, again when Wine failed to start rg
/// ([`rg::is_wine_spawn_flake`], [`rg::is_wine_init_flake`]).
pub fn retried<T>(search: impl Fn() -> Outcome<T>) -> Outcome<T> {
    let mut attempt = 0;
    loop {
        let outcome = search();
        let flake = match &outcome.status {
            Status::LaunchFailed(why) if rg::is_wine_spawn_flake(why) => {
                format!("{}: {why}\n", rg::WINE_FLAKE_NOTE)
            }
            Status::Exited(c) if rg::is_wine_init_flake(Some(*c), outcome.stderr.is_empty()) => {
                format!("{}\n", rg::WINE_INIT_NOTE)
            }
            _ => return outcome,
        };
        if attempt == rg::WINE_RETRIES {
            return outcome;
        }
        attempt += 1;
        super::loud(&flake);
    }
}

/// One configuration's tools on the rg backend and on the native engine
/// over each filesystem ([`workspaces::ways`]).
struct Pair {
    name: &'static str,
    natives: Vec<(&'static str, Tools)>,
    rg: Tools,
}

/// Fresh tools for one case (fresh memos; the rg backend's is `rg`).
/// The tools of an indexed way ask its index which path answered, so
/// they search through it, not through a memo: a call repeated over an
/// unchanged mirror is answered from its kept walks and costs little.
fn pairs(ways: Vec<workspaces::Way>, rg: Arc<Memo>) -> Vec<Pair> {
    let natives: Vec<_> = ways
        .into_iter()
        .map(|w| {
            let backend: Arc<dyn SearchBackend> = Memo::new(w.backend);
            (w.label, backend, w.index, w.fs)
        })
        .collect();
    let rg: Arc<dyn SearchBackend> = rg;
    configs()
        .into_iter()
        .map(|(name, config)| Pair {
            name,
            natives: natives
                .iter()
                .map(|(label, backend, index, fs)| {
                    let tools = match index {
                        Some(index) => Tools::indexed(config.clone(), index.backend()),
                        None => Tools::new(config.clone(), backend.clone()),
                    };
                    let tools = tools
                        .with_filesystem(fs.clone())
                        .with_spill_store(Arc::new(DigestStore));
                    (*label, tools)
                })
                .collect(),
            rg: Tools::new(config, rg.clone()).with_spill_store(Arc::new(DigestStore)),
        })
        .collect()
}

/// The tool name and JSON arguments of a raw call.
pub fn tool_args(call: &Call) -> (&'static str, Value) {
    match call {
        Call::Glob { pattern, path } => {
            let mut a = json!({ "pattern": pattern });
            if let Some(p) = path {
                a["path"] = json!(p);
            }
            ("glob", a)
        }
        Call::Grep {
            pattern,
            path,
            include,
        } => {
            let mut a = json!({ "pattern": pattern });
            if let Some(p) = path {
                a["path"] = json!(p);
            }
            if let Some(i) = include {
                a["include"] = json!(i);
            }
            ("grep", a)
        }
    }
}

/// The values `meta.index` of an indexed workspace's glob or grep may hold
/// (`docs/index.md`, "What `meta` says").
pub fn is_index_value(v: &str) -> bool {
    v == "mirror" || v == "none" || v.strip_prefix("scan: ").is_some_and(|why| !why.is_empty())
}

/// `r` without its `meta.index` key, checked: present with an allowed value
/// when `indexed`, absent otherwise. A `meta` that held only the key goes.
pub fn without_index_key(mut r: ToolResult, indexed: bool) -> Result<ToolResult, String> {
    let said = match &mut r.meta {
        Some(Value::Object(meta)) => meta.remove("index"),
        _ => None,
    };
    match (indexed, said) {
        (true, Some(Value::String(v))) if is_index_value(&v) => {}
        (false, None) => {}
        (_, said) => {
            return Err(format!(
                "meta.index {said:?} (indexed: {indexed}) in {}",
                show(&r)
            ))
        }
    }
    if matches!(&r.meta, Some(Value::Object(m)) if m.is_empty()) {
        r.meta = None;
    }
    Ok(r)
}

fn show(r: &ToolResult) -> String {
    serde_json::to_string(r).unwrap_or_else(|e| format!("<{e}>"))
}

/// Run `call` in `workdir` through the tools on both backends under every
/// configuration, direct and nested; then `read` every returned path.
/// Failures are pushed to `failures`; `tally` counts the calls compared
/// and the reads by what they had to answer. `rg` is the case's rg
/// backend ([`Memo::rg_of_case`]), which its raw level may have run.
pub fn check_case(
    call: &Call,
    root: &Path,
    workdir: &Path,
    label: &str,
    failures: &mut Vec<String>,
    tally: &mut BTreeMap<String, usize>,
    rg: Arc<Memo>,
) {
    check_case_on(
        call,
        root,
        workdir,
        label,
        failures,
        tally,
        workspaces::ways(root, workdir),
        rg,
    )
}

/// [`check_case`] with the native engine on the filesystems of `ways`.
#[allow(clippy::too_many_arguments)]
pub fn check_case_on(
    call: &Call,
    root: &Path,
    workdir: &Path,
    label: &str,
    failures: &mut Vec<String>,
    tally: &mut BTreeMap<String, usize>,
    ways: Vec<workspaces::Way>,
    rg: Arc<Memo>,
) {
    let (tool, args) = tool_args(call);
    let mut returned: Option<Value> = None;
    let shared_before = rg.shared();
    let pairs = pairs(ways, rg.clone());
    for pair in &pairs {
        for direct in [true, false] {
            let mut ctx = CallContext::new(workdir).session("parity");
            ctx.direct = direct;
            let b = pair.rg.call(tool, &args, &ctx);
            for (way, native) in &pair.natives {
                let a = native.call(tool, &args, &ctx);
                *tally.entry("tool calls compared".into()).or_default() += 1;
                // Which over-cap paths ran, so a run shows they were exercised.
                for (needle, what) in [
                    ("stored at: /spill/", "spilled"),
                    ("could not be saved", "not saved (nested)"),
                    (" (line truncated)", "line truncated"),
                    ("(Omitted ", "inline cap"),
                ] {
                    if a.content.contains(needle) {
                        *tally.entry(what.into()).or_default() += 1;
                    }
                }
                // An indexed workspace's results add `meta.index` (which
                // path answered, `docs/index.md`); the rest is the rg
                // backend's.
                let a = match without_index_key(a, native.index().is_some()) {
                    Ok(a) => a,
                    Err(why) => {
                        failures.push(format!("[tools {} {way}] {label}\n  {why}\n", pair.name));
                        continue;
                    }
                };
                if a != b {
                    failures.push(format!(
                        "[tools {} {} {way}] {label}\n  native: {}\n  rg:     {}\n",
                        pair.name,
                        if direct { "direct" } else { "nested" },
                        show(&a),
                        show(&b)
                    ));
                }
                if returned.is_none() {
                    returned = a.value.clone();
                }
            }
        }
    }
    let shared = rg.shared() - shared_before;
    if shared > 0 {
        // Shown in the tally, so a run says how many rg.exe starts the raw
        // level's run stood for (Windows only).
        *tally
            .entry("rg runs shared with the raw level".into())
            .or_default() += shared;
    }
    if let Some(value) = returned {
        for path in returned_paths(&value) {
            for (way, native) in &pairs[0].natives {
                match check_read(native, &path, root, workdir) {
                    Ok(kind) => *tally.entry(format!("read {}", kind.name())).or_default() += 1,
                    Err(f) => failures.push(format!("[read {way}] {label}\n  {path:?}: {f}\n")),
                }
            }
        }
    }
}

/// The file paths of a glob or grep value (display paths), each once.
fn returned_paths(value: &Value) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let paths = value["paths"].as_array().into_iter().flatten();
    let matched = value["matches"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| &m["path"]);
    for p in paths.chain(matched) {
        if let Some(s) = p.as_str() {
            if !out.iter().any(|o| o == s) {
                out.push(s.to_string());
            }
        }
    }
    out
}

/// What `read` must answer for a display path: derived from the file the
/// operating system finds under that name from the workdir (the file rg
/// opened, for every name rg printed in UTF-8).
#[derive(Debug, PartialEq)]
enum Expect {
    /// A regular text file: read succeeds and opens this file.
    Text(FileId),
    /// `FS_NOT_TEXT`: a NUL in the first 8,192 bytes or invalid UTF-8
    /// (`seed-reference.md` §6.1).
    NotText,
    /// `FS_NOT_REGULAR_FILE`: a FIFO, a socket, a directory.
    NotRegular,
    /// `FS_NOT_FOUND`, allowed only for a name decoded lossily (contract
    /// D1): the display name holds U+FFFD where the real name has bytes
    /// that are not UTF-8, so it names no file. The model sees the
    /// replacement character and cannot ask for the file by name; the
    /// contract's promise holds for every name that is UTF-8.
    LossyName,
    /// `FS_NOT_FOUND`, allowed only for a piece of a name holding `\n`:
    /// the seed splits rg's `--files` output on `\n` (`seed-reference.md`
    /// §2.2), so such a name comes back as two entries, neither of which
    /// names the file. Only glob does this; grep's paths come whole.
    SplitName,
}

impl Expect {
    fn name(&self) -> &'static str {
        match self {
            Expect::Text(..) => "text",
            Expect::NotText => "FS_NOT_TEXT",
            Expect::NotRegular => "FS_NOT_REGULAR_FILE",
            Expect::LossyName => "FS_NOT_FOUND (lossy name)",
            Expect::SplitName => "FS_NOT_FOUND (name split at \\n)",
        }
    }
}

/// Which file a path names: its device and inode on Unix; on Windows its
/// final path (`GetFinalPathNameByHandleW`, what `canonicalize` returns),
/// the fixture trees having no hard links.
#[derive(Debug, PartialEq)]
pub enum FileId {
    #[cfg(unix)]
    Inode(u64, u64),
    #[cfg(windows)]
    Final(std::path::PathBuf),
}

fn file_id(path: &Path, md: &std::fs::Metadata) -> FileId {
    #[cfg(unix)]
    {
        let _ = path;
        FileId::Inode(md.dev(), md.ino())
    }
    #[cfg(windows)]
    {
        let _ = md;
        FileId::Final(std::fs::canonicalize(path).unwrap_or_default())
    }
}

fn expect(path: &str, root: &Path, workdir: &Path) -> Result<Expect, String> {
    let full = from_workdir(workdir, Path::new(path));
    match std::fs::metadata(&full) {
        Ok(md) if md.is_file() => {
            let bytes = std::fs::read(&full).map_err(|e| format!("cannot read {full:?}: {e}"))?;
            let sniff = &bytes[..bytes.len().min(8192)];
            if sniff.contains(&0) || std::str::from_utf8(&bytes).is_err() {
                Ok(Expect::NotText)
            } else {
                Ok(Expect::Text(file_id(&full, &md)))
            }
        }
        Ok(_) => Ok(Expect::NotRegular),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && path.contains('\u{FFFD}') => {
            Ok(Expect::LossyName)
        }
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound && is_piece_of_split_name(path, root) =>
        {
            Ok(Expect::SplitName)
        }
        Err(e) => Err(format!(
            "the search returned a path the OS cannot find from the workdir: {e}"
        )),
    }
}

/// The file a process started in `workdir` opens for `path`. On Windows a
/// path on a drive without a root (`C:x`) is relative to that drive's
/// directory: the workdir on its own drive (this process's current
/// directory is elsewhere, so `Path::join` alone would not find it).
fn from_workdir(workdir: &Path, path: &Path) -> std::path::PathBuf {
    use std::path::{Component, Prefix};
    if cfg!(windows) && !path.has_root() {
        if let (Some(Component::Prefix(p)), Some(Component::Prefix(w))) =
            (path.components().next(), workdir.components().next())
        {
            if let (Prefix::Disk(a), Prefix::Disk(b)) = (p.kind(), w.kind()) {
                if a.eq_ignore_ascii_case(&b) {
                    return workdir.join(path.components().skip(1).collect::<std::path::PathBuf>());
                }
            }
        }
    }
    workdir.join(path)
}

/// `read {file_path}` in the same context: what it had to answer, or why
/// it did not.
fn check_read(tools: &Tools, path: &str, root: &Path, workdir: &Path) -> Result<Expect, String> {
    let want = expect(path, root, workdir)?;
    let ctx = CallContext::new(workdir).session("parity");
    let r = tools.call("read", &json!({ "file_path": path }), &ctx);
    let code = r.error.as_ref().and_then(|e| e.code()).map(str::to_string);
    let ok = match &want {
        Expect::Text(id) => {
            // read shows the lexical absolute path it opened: the same file.
            let shown = r.value.as_ref().and_then(|v| v["path"].as_str());
            shown
                .and_then(|s| {
                    std::fs::metadata(s)
                        .ok()
                        .map(|md| file_id(Path::new(s), &md))
                })
                .is_some_and(|got| got == *id)
        }
        Expect::NotText => code.as_deref() == Some("FS_NOT_TEXT"),
        Expect::NotRegular => code.as_deref() == Some("FS_NOT_REGULAR_FILE"),
        Expect::LossyName | Expect::SplitName => code.as_deref() == Some("FS_NOT_FOUND"),
    };
    if !ok {
        return Err(format!("expected {want:?}, read gave {}", show(&r)));
    }
    Ok(want)
}

/// Whether the tree under `root` has a name holding `\n` of which the last
/// segment of `path` is the first piece (`nl` of `nl\nname.txt`) or the
/// whole path is the last piece (`name.txt`).
fn is_piece_of_split_name(path: &str, root: &Path) -> bool {
    let last = path.rsplit('/').next().unwrap_or(path);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let pieces: Vec<&str> = name.split('\n').collect();
            if pieces.len() > 1
                && (pieces.first() == Some(&last) || path.ends_with(pieces[pieces.len() - 1]))
            {
                return true;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(e.path());
            }
        }
    }
    false
}

/// The rg backend's memo replays a run without a budget for a request with
/// one only while the output is far inside it: a budget the output passes
/// starts rg again, which stops at the budget.
#[test]
fn memo_replays_an_unbudgeted_run_only_within_the_budget() {
    let Some(_env) = rg::env() else { return };
    let tree = super::tree::Tree::build(&[
        super::tree::file("a.txt", "needle one\n"),
        super::tree::file("b.txt", "needle two\n"),
    ]);
    let memo = Memo::sharing(Arc::new(rg::reference_backend()));
    let mut req = GrepRequest::new("needle", tree.root());
    let free = memo.grep(&req);
    assert_eq!(free.status, Status::Exited(0), "{:?}", free.stderr);
    assert_eq!(memo.shared(), 0);
    // The tools' budget: replayed, the same outcome.
    req.raw_budget = Some(configs()[0].1.search.raw_output_max_bytes);
    assert_eq!(memo.grep(&req), free);
    assert_eq!(memo.shared(), 1);
    // A budget the output passes: rg runs again and is stopped there.
    req.raw_budget = Some(40);
    let cut = memo.grep(&req);
    assert_eq!(memo.shared(), 1);
    assert_eq!(cut.status, Status::OverBudget);
    assert_ne!(cut, free);
}
