//! Shared test helpers: fixture trees ([`tree`]), running rg and the
//! backends and comparing them ([`rg`]), the case runner ([`Report`]), and a
//! filesystem that is not the local disk as the tools see it ([`fs`]).

#![allow(dead_code)]

pub mod fs;
pub mod rg;
pub mod rng;
pub mod served;
#[cfg(all(unix, feature = "sftp"))]
pub mod sshd;
pub mod tools;
pub mod tree;
pub mod workspaces;
pub mod ws;

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;

use dsh_search::SearchBackend;

use self::rg::{Call, Env, Raw};
use self::tree::Tree;

/// One labelled call: run in `cwd` (relative to the tree root, `""` for the
/// root). `{root}` in the path is replaced by the tree's absolute root.
#[derive(Clone, Debug)]
pub struct Case {
    pub call: Call,
    pub cwd: String,
}

/// `glob(pattern, path?)` run at the root.
pub fn glob(pattern: &str, path: Option<&str>) -> Case {
    Case {
        call: Call::Glob {
            pattern: pattern.into(),
            path: path.map(Into::into),
        },
        cwd: String::new(),
    }
}

/// `grep(pattern, path?, include?)` run at the root.
pub fn grep(pattern: &str, path: Option<&str>, include: Option<&str>) -> Case {
    Case {
        call: Call::Grep {
            pattern: pattern.into(),
            path: path.map(Into::into),
            include: include.map(Into::into),
        },
        cwd: String::new(),
    }
}

impl Case {
    /// Run in a subdirectory of the root instead.
    pub fn cwd(mut self, rel: &str) -> Case {
        self.cwd = rel.into();
        self
    }

    fn resolved(&self, root: &Path) -> Call {
        let root = root.to_str().expect("temp roots are UTF-8");
        // `{drive}` is the root's drive (`C:`; empty on Unix) and `{rootdir}`
        // the root without it (`\Users\x\dsh-conf-…`), for paths
        // anchored to one but not the other on Windows.
        let drive = match Path::new(root).components().next() {
            Some(std::path::Component::Prefix(p)) => p.as_os_str().to_str().unwrap_or(""),
            _ => "",
        };
        let rootdir = &root[drive.len()..];
        // `{root/}`: the root written with `/` (`C:/Users/x/dsh-conf-…`).
        let slashed = root.replace('\\', "/");
        let fix = |p: &Option<String>| {
            p.as_ref().map(|p| {
                p.replace("{root/}", &slashed)
                    .replace("{root}", root)
                    .replace("{drive}", drive)
                    .replace("{rootdir}", rootdir)
            })
        };
        match &self.call {
            Call::Glob { pattern, path } => Call::Glob {
                pattern: pattern.clone(),
                path: fix(path),
            },
            Call::Grep {
                pattern,
                path,
                include,
            } => Call::Grep {
                pattern: pattern.clone(),
                path: fix(path),
                include: include.clone(),
            },
        }
    }

    /// The label (stable across runs: `{root}` stays symbolic).
    pub fn label(&self) -> String {
        rg::describe(&self.call, &self.cwd)
    }
}

/// Whether `label` passes the `DSH_SEARCH_CASE` filter (a substring).
pub fn selected(label: &str) -> bool {
    match std::env::var("DSH_SEARCH_CASE") {
        Ok(f) if !f.is_empty() => label.contains(&f),
        _ => true,
    }
}

/// Print straight to the process's stderr (not captured by libtest).
pub fn loud(msg: &str) {
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

/// Collects the failures of one test, so every case runs before it panics.
pub struct Report {
    name: String,
    context: String,
    cases: usize,
    /// The cases of the tables run, before [`shard`] took this process's
    /// share (and before the `DSH_SEARCH_CASE` filter).
    table_cases: usize,
    /// The cases of the tables run that the `DSH_SEARCH_CASE` filter
    /// selects, in every process's share: when none is, [`Report::finish`]
    /// fails (a typo in the filter), while a share left empty by [`shard`]
    /// passes (the other processes run the table's cases).
    table_selected: usize,
    /// Tool-level calls compared and paths read, by kind (`tools::check_case`).
    tool_checks: BTreeMap<String, usize>,
    failures: Vec<String>,
}

/// One case's failures and tool-level tally, or `None` when the
/// `DSH_SEARCH_CASE` filter left it out.
type CaseOutcome = Option<(Vec<String>, BTreeMap<String, usize>)>;

/// How many cases of a table run at once: `DSH_SEARCH_CASE_THREADS`, by
/// default 1 (in order) on Unix, and 4 on Windows, where a case spends
/// most of its time on Wine starting rg.exe and the rest in this process:
/// cases at once overlap the two (`conformance::basic_grep` under Wine on
/// 2 busy cores: 74 s one case at a time, 36 s with 4, 37 s with 8;
/// README "Platforms").
pub fn case_threads() -> usize {
    std::env::var("DSH_SEARCH_CASE_THREADS")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&n: &usize| n >= 1)
        .unwrap_or(if cfg!(windows) { 4 } else { 1 })
}

/// This process's share of every table: `DSH_SEARCH_SHARD=k/n` runs only
/// the cases whose position in their table is `k` modulo `n`, so `n`
/// processes given `0/n` … `n-1/n` run each case of a table exactly once
/// between them (README "Testing"). `scripts/test-windows` runs its long
/// tables that way: under Wine one process starts others at about ten a
/// second whatever its threads do, and several processes start theirs side
/// by side (README "Platforms"). Unset: every case. Malformed: the test
/// fails (a typo must not drop cases).
pub fn shard() -> Option<(usize, usize)> {
    let v = std::env::var("DSH_SEARCH_SHARD").ok()?;
    Some(
        parse_shard(&v)
            .unwrap_or_else(|| panic!("DSH_SEARCH_SHARD={v:?}: expected k/n with k < n")),
    )
}

/// `k/n` with `k < n`.
fn parse_shard(v: &str) -> Option<(usize, usize)> {
    let (k, n) = v.split_once('/')?;
    let (k, n) = (k.parse::<usize>().ok()?, n.parse::<usize>().ok()?);
    (k < n).then_some((k, n))
}

/// How the actual side of a case is produced.
pub enum Mode {
    /// In process, through the `SearchBackend` trait, as the test's user.
    InProcess,
    /// Through `dsh-search --format raw` as uid 65534 (rg too).
    Nobody,
    /// Through `dsh-search --format raw` with at most this many open
    /// descriptors (rg too).
    FewFds(u32),
    /// In process, the native engine over SFTP to the test's `sshd`
    /// ([`sftp_share`]).
    #[cfg(all(unix, feature = "sftp"))]
    Sftp,
}

#[cfg(all(unix, feature = "sftp"))]
thread_local! {
    /// Set by [`sftp_share`]: (run every how many cases, every how many
    /// trees, cases seen, trees seen).
    static SFTP_SHARE: std::cell::Cell<Option<(usize, usize, usize, usize)>> =
        const { std::cell::Cell::new(None) };
}

/// Run `tables` (conformance or random-tree tests, on this thread) over
/// SFTP instead of their own modes (`docs/contract.md` §11): every
/// `every`th case, on every `every_tree`th tree, the native
/// engine over the shared `sshd` against rg on the same tree on disk, at
/// level 1 and at the tool level, with the tree's mtimes cut to whole
/// seconds (SFTP v3's resolution).
#[cfg(all(unix, feature = "sftp"))]
pub fn sftp_share(every: usize, every_tree: usize, tables: impl FnOnce()) {
    SFTP_SHARE.with(|s| s.set(Some((every.max(1), every_tree.max(1), 0, 0))));
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SFTP_SHARE.with(|s| s.set(None));
        }
    }
    let _reset = Reset;
    tables();
}

/// Cut every regular file's and directory's mtime under `root` to whole
/// seconds (symlinks are left alone: setting a time follows them).
#[cfg(all(unix, feature = "sftp"))]
pub fn whole_seconds(root: &Path) {
    use std::time::{Duration, UNIX_EPOCH};
    let mut stack = vec![root.to_path_buf()];
    let mut dirs = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                cut(&e.path());
            }
        }
        dirs.push(d);
    }
    // Directories last, deepest first: setting a file's time leaves its
    // directory's alone, but be safe.
    for d in dirs.iter().rev() {
        cut(d);
    }
    fn cut(p: &Path) {
        let Ok(m) = std::fs::metadata(p) else { return };
        let Ok(t) = m.modified() else { return };
        let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let whole = UNIX_EPOCH + Duration::from_secs(secs);
        let f = if m.is_dir() {
            std::fs::File::open(p)
        } else {
            std::fs::File::options()
                .write(true)
                .open(p)
                .or_else(|_| std::fs::File::open(p))
        };
        if let Ok(f) = f {
            let _ = f.set_modified(whole);
        }
    }
}

impl Report {
    pub fn new(name: &str) -> Report {
        Report {
            name: name.into(),
            context: String::new(),
            cases: 0,
            table_cases: 0,
            table_selected: 0,
            tool_checks: BTreeMap::new(),
            failures: Vec::new(),
        }
    }

    /// Run every selected case on `tree` against rg: this process's share
    /// of them ([`shard`]).
    pub fn run_all(&mut self, env: &Env, tree: &Tree, cases: &[Case], mode: Mode) {
        let shard = shard();
        let mine = |i: usize| shard.is_none_or(|(k, n)| i % n == k);
        self.table_cases += cases.len();
        self.table_selected += cases.iter().filter(|c| selected(&self.label(c))).count();
        #[cfg(all(unix, feature = "sftp"))]
        if let Some((every, every_tree, seen, trees)) = SFTP_SHARE.with(|s| s.get()) {
            SFTP_SHARE.with(|s| s.set(Some((every, every_tree, seen + cases.len(), trees + 1))));
            if trees % every_tree != 0 {
                return;
            }
            whole_seconds(tree.root());
            // Every `every`th case counted across the tables; a table too
            // short to hold one runs its first, so that no table passes
            // over SFTP having checked nothing.
            let mut picked: Vec<usize> = (0..cases.len())
                .filter(|&i| (seen + i) % every == 0)
                .collect();
            if picked.is_empty() && !cases.is_empty() {
                picked.push(0);
            }
            for i in picked.into_iter().filter(|&i| mine(i)) {
                self.run(env, tree, &cases[i], &Mode::Sftp);
            }
            return;
        }
        let cases: Vec<&Case> = (0..cases.len())
            .filter(|&i| mine(i))
            .map(|i| &cases[i])
            .collect();
        let threads = case_threads().min(cases.len());
        if threads <= 1 {
            for case in cases {
                self.run(env, tree, case, &mode);
            }
            return;
        }
        // Each case is independent (its own processes, its own tools and
        // memos), so `threads` workers take them in turn; the outcomes are
        // merged in the table's order, so the report reads as a serial run's.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let outcomes: Vec<std::sync::Mutex<Option<CaseOutcome>>> =
            cases.iter().map(|_| std::sync::Mutex::new(None)).collect();
        let this = &*self;
        std::thread::scope(|s| {
            for _ in 0..threads {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(&case) = cases.get(i) else { break };
                    let outcome = this.run_case(env, tree, case, &mode);
                    *outcomes[i].lock().unwrap() = Some(outcome);
                });
            }
        });
        for outcome in outcomes {
            let outcome = outcome.into_inner().unwrap().expect("every case ran");
            self.merge(outcome);
        }
    }

    fn run(&mut self, env: &Env, tree: &Tree, case: &Case, mode: &Mode) {
        let outcome = self.run_case(env, tree, case, mode);
        self.merge(outcome);
    }

    /// Add one case's outcome to the tally.
    fn merge(&mut self, outcome: CaseOutcome) {
        let Some((failures, tool_checks)) = outcome else {
            return;
        };
        self.cases += 1;
        self.failures.extend(failures);
        for (k, n) in tool_checks {
            *self.tool_checks.entry(k).or_default() += n;
        }
    }

    /// Run one case: `None` when the `DSH_SEARCH_CASE` filter leaves it
    /// out, else its failures and tool-level tally.
    fn run_case(&self, env: &Env, tree: &Tree, case: &Case, mode: &Mode) -> CaseOutcome {
        let label = self.label(case);
        if !selected(&label) {
            return None;
        }
        let mut failures = Vec::new();
        let mut tool_checks = BTreeMap::new();
        let call = case.resolved(tree.root());
        let cwd = tree.root().join(&case.cwd);
        let selfcheck = std::env::var_os("DSH_SEARCH_SELFCHECK").is_some_and(|v| v == "1");
        // The case's rg backend, for its raw level and its tool level.
        let rg_of_case = tools::Memo::rg_of_case();
        let (expected, actuals): (Raw, Vec<(&str, Raw)>) = match mode {
            // Harness check: rg against a second run of itself must always
            // agree, whatever the engine's state.
            Mode::InProcess if selfcheck => (
                rg::run_rg(env, &call, &cwd),
                vec![("rg again", rg::run_rg(env, &call, &cwd))],
            ),
            Mode::Nobody if selfcheck => (
                rg::run_rg_nobody(env, &call, &cwd),
                vec![("rg again (uid 65534)", rg::run_rg_nobody(env, &call, &cwd))],
            ),
            Mode::FewFds(n) if selfcheck => (
                rg::run_rg_few_fds(env, &call, &cwd, *n),
                vec![(
                    "rg again (few fds)",
                    rg::run_rg_few_fds(env, &call, &cwd, *n),
                )],
            ),
            Mode::InProcess => {
                let mut actuals = vec![(
                    "rg backend",
                    rg::run_backend(&*rg_of_case as &dyn SearchBackend, &call, &cwd),
                )];
                for way in workspaces::ways(tree.root(), &cwd) {
                    actuals.push((way.label, rg::run_backend(&*way.backend, &call, &cwd)));
                }
                (rg::run_rg(env, &call, &cwd), actuals)
            }
            Mode::Nobody => (
                rg::run_rg_nobody(env, &call, &cwd),
                vec![
                    (
                        "cli rg (uid 65534)",
                        rg::run_cli_nobody(env, "rg", &call, &cwd),
                    ),
                    (
                        "cli native (uid 65534)",
                        rg::run_cli_nobody(env, "native", &call, &cwd),
                    ),
                    (
                        "cli native --fs mem (loaded as uid 65534)",
                        rg::run_cli_nobody_in_memory(env, tree.root(), &call, &cwd),
                    ),
                ],
            ),
            #[cfg(all(unix, feature = "sftp"))]
            Mode::Sftp => (
                rg::run_rg(env, &call, &cwd),
                workspaces::over_sftp()
                    .into_iter()
                    .map(|w| (w.label, rg::run_backend(&*w.backend, &call, &cwd)))
                    .collect(),
            ),
            Mode::FewFds(n) => (
                rg::run_rg_few_fds(env, &call, &cwd, *n),
                vec![
                    (
                        "cli rg (few fds)",
                        rg::run_cli_few_fds(env, "rg", &call, &cwd, *n, None),
                    ),
                    (
                        "cli native (few fds)",
                        rg::run_cli_few_fds(env, "native", &call, &cwd, *n, None),
                    ),
                    (
                        "cli native, 12 threads (few fds)",
                        rg::run_cli_few_fds(env, "native", &call, &cwd, *n, Some(12)),
                    ),
                ],
            ),
        };
        if std::env::var_os("DSH_SEARCH_SHOW").is_some_and(|v| v == "1") {
            let c = rg::canonical(&call, &expected);
            loud(&format!(
                "--- {label}\n{}\nstderr: {:?}\n{}\n",
                String::from_utf8_lossy(&c.stdout),
                c.stderr,
                c.status
            ));
        }
        for (who, actual) in actuals {
            if let Some(d) = rg::diff(&call, &expected, &actual) {
                failures.push(format!("[{who}] {label}\n{d}"));
            }
        }
        // The same call at the tool level, both backends, and `read` of
        // every path it returned. In process as the test's user, also for
        // the cases whose raw side ran as uid 65534.
        #[cfg(all(unix, feature = "sftp"))]
        if matches!(mode, Mode::Sftp) {
            tools::check_case_on(
                &call,
                tree.root(),
                &cwd,
                &label,
                &mut failures,
                &mut tool_checks,
                workspaces::over_sftp(),
                rg_of_case,
            );
            return Some((failures, tool_checks));
        }
        if !selfcheck {
            tools::check_case(
                &call,
                tree.root(),
                &cwd,
                &label,
                &mut failures,
                &mut tool_checks,
                rg_of_case,
            );
        }
        Some((failures, tool_checks))
    }

    /// A case's label, which the `DSH_SEARCH_CASE` filter is matched
    /// against.
    fn label(&self, case: &Case) -> String {
        format!("{}{}: {}", self.name, self.context, case.label())
    }

    /// A suffix for the labels of the next cases (e.g. ` tree=3`).
    pub fn set_context(&mut self, context: String) {
        self.context = context;
    }

    /// How many failures were recorded so far.
    pub fn failures(&self) -> usize {
        self.failures.len()
    }

    /// Record a failure found outside the case table.
    pub fn fail(&mut self, msg: String) {
        self.failures.push(msg);
    }

    /// Count one extra check.
    pub fn count(&mut self) {
        self.cases += 1;
    }

    /// Print the tally; panic with every failure if there was one, and when
    /// no case ran: a filter that selects none of the test's cases, or a
    /// table left empty, checked nothing. The one deliberate exception is a
    /// share of [`shard`] that holds none of the selected cases of the
    /// tables: the other shares run them (`scripts/test-windows` adds the
    /// shares' counts up and checks that they make each table whole).
    pub fn finish(self) {
        // Sharded, the line says of how many: scripts/test-windows adds up
        // the shards' cases of each table and checks they make the whole.
        let share = match shard() {
            Some((k, n)) => format!(" (shard {k}/{n} of {})", self.table_cases),
            None => String::new(),
        };
        loud(&format!(
            "conformance {}: {} cases{share}, {} failures; tool level: {:?}\n",
            self.name,
            self.cases,
            self.failures.len(),
            self.tool_checks
        ));
        if self.cases == 0 {
            let sharded_away = shard().is_some() && self.table_selected > 0;
            if !sharded_away {
                panic!("{}", self.nothing_ran());
            }
        }
        if self.failures.is_empty() {
            return;
        }
        const SHOWN: usize = 40;
        let mut msg = format!(
            "{}: {} failures in {} cases (rerun one with DSH_SEARCH_CASE=<substring of its label>)\n\n",
            self.name,
            self.failures.len(),
            self.cases
        );
        for f in self.failures.iter().take(SHOWN) {
            msg += f;
            msg += "\n";
        }
        if self.failures.len() > SHOWN {
            msg += &format!("… and {} more:\n", self.failures.len() - SHOWN);
            for f in &self.failures[SHOWN..] {
                msg += "  ";
                msg += f.lines().next().unwrap_or("");
                msg += "\n";
            }
        }
        panic!("{msg}");
    }
}

impl Report {
    /// Why a report with no case run fails, and how to run one.
    fn nothing_ran(&self) -> String {
        // libtest names a test's thread after the test.
        let test = std::thread::current()
            .name()
            .unwrap_or("<module::test>")
            .to_owned();
        match std::env::var("DSH_SEARCH_CASE") {
            Ok(f) if !f.is_empty() => format!(
                "{}: DSH_SEARCH_CASE={f:?} selects none of this test's cases \
                 (of {} in its tables): no case ran. Name the test that holds \
                 the case too: cargo test --test tests {test}",
                self.name, self.table_cases
            ),
            _ => format!(
                "{}: no case ran ({} in its tables): a test that checks \
                 nothing must not pass",
                self.name, self.table_cases
            ),
        }
    }
}

/// `DSH_SEARCH_SHARD`: this test binary run three times on a real table
/// (`conformance::double_dot_slash_paths`), once per share, runs each of its
/// cases exactly once between the three, each saying of how many; a share
/// that names no process (`3/3`) fails the test instead of dropping cases;
/// a share that holds none of the table's cases (`16/17` of 16) passes,
/// saying so, while a `DSH_SEARCH_CASE` that selects none fails, sharded
/// or not.
#[test]
fn shards_run_each_case_of_a_table_once() {
    let Some(_env) = rg::env() else { return };
    let exe = std::env::current_exe().expect("the test binary");
    let run_with = |shard: Option<&str>, case: Option<&str>| -> std::process::Output {
        let mut cmd = std::process::Command::new(&exe);
        cmd.args(["--exact", "conformance::double_dot_slash_paths"])
            .env("DSH_SEARCH_SHOW", "1")
            .env_remove("DSH_SEARCH_CASE")
            .env_remove("DSH_SEARCH_SHARD");
        if let Some(s) = shard {
            cmd.env("DSH_SEARCH_SHARD", s);
        }
        if let Some(c) = case {
            cmd.env("DSH_SEARCH_CASE", c);
        }
        cmd.output().expect("the test binary runs")
    };
    let run = |shard: Option<&str>| run_with(shard, None);
    // The labels of the cases run, from DSH_SEARCH_SHOW's `--- <label>`
    // lines, and the tally line.
    let read = |out: &std::process::Output| -> (Vec<String>, String) {
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let labels = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("--- "))
            .map(str::to_owned)
            .collect();
        let tally = stderr
            .lines()
            .find(|l| l.starts_with("conformance double_dot_slash: "))
            .unwrap_or_else(|| panic!("no tally:\n{stderr}"))
            .to_owned();
        (labels, tally)
    };
    let (mut all, tally) = read(&run(None));
    assert_eq!(all.len(), 16, "{all:?}");
    assert!(
        tally.starts_with("conformance double_dot_slash: 16 cases, 0 failures"),
        "{tally}"
    );
    let mut union = Vec::new();
    for (k, count) in [(0, 6), (1, 5), (2, 5)] {
        let (labels, tally) = read(&run(Some(&format!("{k}/3"))));
        assert_eq!(labels.len(), count, "shard {k}/3: {labels:?}");
        let said =
            format!("conformance double_dot_slash: {count} cases (shard {k}/3 of 16), 0 failures");
        assert!(tally.starts_with(&said), "{tally}");
        union.extend(labels);
    }
    all.sort();
    union.sort();
    assert_eq!(
        union, all,
        "the three shards together are the table, each case once"
    );
    let (labels, tally) = read(&run(Some("16/17")));
    assert_eq!(labels, Vec::<String>::new());
    assert!(
        tally.starts_with("conformance double_dot_slash: 0 cases (shard 16/17 of 16), 0 failures"),
        "{tally}"
    );
    // The panic's message: libtest prints a failed test's captured output,
    // and its panic, on stdout.
    let failed = |out: std::process::Output| -> String {
        assert!(!out.status.success());
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    };
    let said = failed(run(Some("3/3")));
    assert!(
        said.contains("DSH_SEARCH_SHARD=\"3/3\": expected k/n with k < n"),
        "{said}"
    );
    for shard in [None, Some("0/3"), Some("16/17")] {
        let said = failed(run_with(shard, Some("no such case")));
        assert!(
            said.contains(
                "double_dot_slash: DSH_SEARCH_CASE=\"no such case\" selects none of this \
                 test's cases (of 16 in its tables): no case ran. Name the test that holds \
                 the case too: cargo test --test tests conformance::double_dot_slash_paths"
            ),
            "{shard:?}: {said}"
        );
    }
}

/// The one index saved in the directory `store` (`docs/index.md`,
/// "Restart without a rebuild"), once its write is done (it follows the
/// build); a panic when there is none after 30 s, or more than one.
#[cfg(target_os = "linux")]
pub fn saved_index(store: &std::path::Path) -> std::path::PathBuf {
    for _ in 0..600 {
        let files: Vec<std::path::PathBuf> = std::fs::read_dir(store)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("index-"))
            })
            .collect();
        match &files[..] {
            [one] => return one.clone(),
            [] => std::thread::sleep(std::time::Duration::from_millis(50)),
            more => panic!("more than one saved index: {more:?}"),
        }
    }
    panic!("no saved index in {}", store.display());
}

/// `cmd` as uid/gid 65534 with no supplementary groups (`setpriv`, from
/// util-linux): its program, arguments, environment and directory.
#[cfg(unix)]
pub fn as_nobody(cmd: &std::process::Command) -> std::process::Command {
    use std::process::Stdio;
    let mut c = std::process::Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(cmd.get_program())
        .args(cmd.get_args());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        c.current_dir(dir);
    }
    c.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Cases that check ownership as root (another user's files are made with
/// `chown`, and run as uid 65534): the suite runs as root in CI.
#[cfg(unix)]
pub fn require_root() {
    assert!(
        rustix::process::geteuid().is_root(),
        "these cases check ownership as root (files of uid 65534 are made with chown); run the \
         suite as root (scripts/test does in CI)"
    );
}
