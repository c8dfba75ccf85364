//! Running the real rg, the two backends and the CLI for one call, and
//! comparing their raw output at the level of `contract.md` §2.

use std::ffi::OsString;
use std::fs;
use std::io::Write as _;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use dsh_search::{GlobRequest, GrepRequest, SearchBackend, Status};

/// The reference version (`contract.md` §1).
pub const RG_VERSION: &str = "15.2.0";

/// rg's file name on `PATH` (README "Platforms").
const RG_EXE: &str = if cfg!(windows) { "rg.exe" } else { "rg" };

/// `p` as an absolute path of this platform. A path baked in at build
/// time (`CARGO_BIN_EXE_*`) or passed by a Unix script is `/…`; on
/// Windows that names the current drive's root (`\…`), which
/// `std::path::absolute` spells out (`Z:\…` under Wine, whose drive `Z:`
/// is the host's `/`), so a child started elsewhere finds it too.
pub fn host_path(p: impl AsRef<Path>) -> PathBuf {
    std::path::absolute(p.as_ref()).unwrap_or_else(|e| panic!("absolute {:?}: {e}", p.as_ref()))
}

/// The dsh-search binary of this build.
pub fn dsh_search_exe() -> PathBuf {
    host_path(env!("CARGO_BIN_EXE_dsh-search"))
}

/// The VCS excludes of the glob argv, in order (`contract.md` §2).
pub const VCS_EXCLUDES: [&str; 12] = [
    "--glob=!**/.git",
    "--glob=!**/.git/**",
    "--glob=!**/.svn",
    "--glob=!**/.svn/**",
    "--glob=!**/.hg",
    "--glob=!**/.hg/**",
    "--glob=!**/.bzr",
    "--glob=!**/.bzr/**",
    "--glob=!**/.jj",
    "--glob=!**/.jj/**",
    "--glob=!**/.sl",
    "--glob=!**/.sl/**",
];

/// The global excludes file every grep sees inside a repository (set up in
/// the controlled `$HOME/.gitconfig`).
pub const GLOBAL_EXCLUDES: &str = "*.globalignored\nglobal-dir/\n";

/// One call of the two fixed invocations.
#[derive(Clone, Debug)]
pub enum Call {
    /// `glob(pattern, path?)`.
    Glob {
        pattern: String,
        path: Option<String>,
    },
    /// `grep(pattern, path?, include?)`.
    Grep {
        pattern: String,
        path: Option<String>,
        include: Option<String>,
    },
}

impl Call {
    /// rg's argv after the program name (`contract.md` §2), one element each.
    pub fn rg_argv(&self) -> Vec<String> {
        let mut v = Vec::new();
        match self {
            Call::Glob { pattern, path } => {
                v.push("--no-config".into());
                v.push("--files".into());
                v.push(format!("--glob={pattern}"));
                v.push("--sort=modified".into());
                v.push("--no-ignore".into());
                v.push("--hidden".into());
                v.extend(VCS_EXCLUDES.iter().map(|s| s.to_string()));
                if let Some(p) = path {
                    v.push("--".into());
                    v.push(p.clone());
                }
            }
            Call::Grep {
                pattern,
                path,
                include,
            } => {
                v.push("--no-config".into());
                v.push("--json".into());
                v.push(format!("--regexp={pattern}"));
                if let Some(i) = include {
                    v.push(format!("--glob={i}"));
                }
                if let Some(p) = path {
                    v.push("--".into());
                    v.push(p.clone());
                }
            }
        }
        v
    }

    /// `dsh-search` CLI argv for `--format raw` with the given backend.
    pub fn cli_argv(&self, backend: &str, cwd: &Path) -> Vec<OsString> {
        let mut v: Vec<OsString> = Vec::new();
        let (cmd, pattern, path, include) = match self {
            Call::Glob { pattern, path } => ("glob", pattern, path, &None),
            Call::Grep {
                pattern,
                path,
                include,
            } => ("grep", pattern, path, include),
        };
        v.push(cmd.into());
        v.push("--format".into());
        v.push("raw".into());
        v.push("--backend".into());
        v.push(backend.into());
        v.push("--cwd".into());
        v.push(cwd.into());
        if let Some(i) = include {
            v.push("--include".into());
            v.push(i.into());
        }
        v.push("--".into());
        v.push(pattern.into());
        if let Some(p) = path {
            v.push(p.into());
        }
        v
    }

    /// Whether this is a grep call (its stdout needs normalising).
    pub fn is_grep(&self) -> bool {
        matches!(self, Call::Grep { .. })
    }
}

/// What one run printed: stdout bytes, stderr lines and how it ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Raw {
    pub stdout: Vec<u8>,
    pub stderr: Vec<String>,
    /// `exit N`, or the backend's non-exit status (`Cancelled`, …).
    pub status: String,
}

fn stderr_lines(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

fn status_text(status: &Status) -> String {
    match status {
        Status::Exited(c) => format!("exit {c}"),
        other => format!("{other:?}"),
    }
}

/// The test environment: the reference rg and a controlled home.
pub struct Env {
    /// The rg binary that was checked to be 15.2.0.
    pub rg: PathBuf,
    /// `rg --version`'s first line.
    pub version: String,
    /// A world-readable directory with `home/`, `bin/` (copies of rg and
    /// dsh-search runnable by uid 65534) and the global excludes file.
    pub ctl: PathBuf,
    /// The global excludes file (`ctl/global-excludes`, named by
    /// `home/.gitconfig`).
    pub excludes: PathBuf,
    /// `PATH` for the processes the cases start: rg's directory first.
    path: OsString,
}

impl Env {
    /// The controlled home, for the processes the cases start.
    pub fn home(&self) -> PathBuf {
        self.ctl.join("home")
    }

    /// Give `cmd` the cases' environment: the controlled home, through
    /// which rg (and the engine in the command line) finds the global
    /// excludes file, git's other configuration out of the way, and the
    /// reference rg first on `PATH` and in `DSH_SEARCH_RG`. The variables
    /// are the child's: this process's own environment is never changed,
    /// since other threads of the test binary read it meanwhile (a
    /// `setenv` beside a `getenv` is a data race).
    pub fn apply(&self, cmd: &mut Command) {
        let home = self.home();
        cmd.env("HOME", &home)
            // Windows: `home_dir` (the `ignore` crate's) reads USERPROFILE.
            .env("USERPROFILE", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env_remove("GIT_CONFIG_GLOBAL")
            .env("GIT_CONFIG_SYSTEM", self.ctl.join("no-system-gitconfig"))
            .env_remove("RIPGREP_CONFIG_PATH")
            .env("DSH_SEARCH_RG", &self.rg)
            .env("PATH", &self.path);
    }

    /// The local disk as the engine in this process sees the tree: with
    /// the global excludes file the cases' rg finds through the
    /// controlled home.
    pub fn local_fs(&self) -> dsh_search::LocalFs {
        dsh_search::LocalFs::new().git_excludes(&self.excludes)
    }

    /// The native engine on [`Env::local_fs`].
    pub fn native(&self) -> dsh_search::NativeBackend {
        dsh_search::NativeBackend::on(std::sync::Arc::new(self.local_fs()))
    }
}

fn locate_rg() -> Result<(PathBuf, String), String> {
    let candidate = match std::env::var_os("DSH_SEARCH_RG") {
        Some(p) if !p.is_empty() => host_path(p),
        _ => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path)
                .map(|d| d.join(RG_EXE))
                .find(|p| p.is_file())
                .ok_or("no rg on PATH and DSH_SEARCH_RG is not set")?
        }
    };
    let out = Command::new(&candidate)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {candidate:?}: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or("").to_string();
    if first != format!("ripgrep {RG_VERSION}") {
        return Err(format!(
            "{candidate:?} is {first:?}, not ripgrep {RG_VERSION}"
        ));
    }
    Ok((candidate, first))
}

fn loud(msg: &str) {
    // Straight to the process's stderr: libtest captures print macros only,
    // and this must be seen even when the tests pass.
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

fn init() -> Result<Env, String> {
    let (rg, version) = locate_rg()?;
    // The in-process engine's helpers join every grep at its first batch,
    // so that every case runs the hand-off between the walking thread and
    // the helpers (by default a call on a small tree ends before any
    // starts, and only a loaded machine ran it: a livelock there timed out
    // a case of random_trees). The processes the cases start keep the
    // default.
    dsh_search::set_helper_delay(std::time::Duration::ZERO);
    // The control dir lives as long as the test process (statics are never
    // dropped), so each run first removes those of test processes that have
    // ended.
    if let Ok(rd) = fs::read_dir(std::env::temp_dir()) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("dsh-conf-env-") {
                if ended(pid, &e.path()) {
                    let _ = fs::remove_dir_all(e.path());
                }
            }
        }
    }
    let ctl = std::env::temp_dir().join(format!("dsh-conf-env-{}", std::process::id()));
    let _ = fs::remove_dir_all(&ctl);
    let home = ctl.join("home");
    let bin = ctl.join("bin");
    fs::create_dir_all(home.join(".config/git")).map_err(|e| e.to_string())?;
    fs::create_dir_all(&bin).map_err(|e| e.to_string())?;
    hold_while_alive(&ctl)?;
    let excludes = ctl.join("global-excludes");
    fs::write(&excludes, GLOBAL_EXCLUDES).map_err(|e| e.to_string())?;
    fs::write(
        home.join(".gitconfig"),
        format!("[core]\n\texcludesFile = {}\n", excludes.display()),
    )
    .map_err(|e| e.to_string())?;
    // Copies uid 65534 can execute (the originals may live under a 0700 home).
    #[cfg(unix)]
    {
        fs::copy(&rg, bin.join("rg")).map_err(|e| e.to_string())?;
        fs::copy(dsh_search_exe(), bin.join("dsh-search")).map_err(|e| e.to_string())?;
        for d in [&ctl, &home, &bin] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o755)).map_err(|e| e.to_string())?;
        }
    }
    // The global excludes file is found through HOME, XDG_CONFIG_HOME,
    // GIT_CONFIG_GLOBAL and GIT_CONFIG_SYSTEM (`rg-semantics.md` W3): the
    // processes the cases start get them (`Env::apply`), and the engine in
    // this process the file itself (`Env::local_fs`), this process's own
    // environment left as it is.
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs = vec![rg.parent().unwrap().to_path_buf()];
    dirs.extend(std::env::split_paths(&path));
    let path = std::env::join_paths(dirs).unwrap();
    loud(&format!(
        "conformance: reference {version} at {}\n",
        rg.display()
    ));
    Ok(Env {
        rg,
        version,
        ctl,
        excludes,
        path,
    })
}

/// Whether the test process that made the control directory `dir`
/// (named for its process id `pid`) has ended. Unix: no `/proc/<pid>`.
/// Windows: its lock file ([`hold_while_alive`]) can be removed, which a
/// live holder prevents (Windows ids are reused too soon to go by).
fn ended(pid: &str, dir: &Path) -> bool {
    #[cfg(unix)]
    {
        let _ = dir;
        !Path::new("/proc").join(pid).exists()
    }
    #[cfg(windows)]
    {
        let _ = pid;
        let lock = dir.join("alive");
        !lock.exists() || fs::remove_file(&lock).is_ok()
    }
}

/// Windows: hold `ctl/alive` open without sharing as long as the process
/// lives (leaked), so [`ended`] in a later run tells it from a dead one.
fn hold_while_alive(ctl: &Path) -> Result<(), String> {
    #[cfg(windows)]
    {
        use std::os::windows::fs::OpenOptionsExt;
        let f = fs::File::options()
            .write(true)
            .create(true)
            .truncate(true)
            .share_mode(0)
            .open(ctl.join("alive"))
            .map_err(|e| e.to_string())?;
        std::mem::forget(f);
    }
    #[cfg(unix)]
    let _ = ctl;
    Ok(())
}

/// The rg backend spawning the reference rg by its path, with the cases'
/// home ([`Env::apply`]'s, given to rg alone: `RgBackend::env`). Panics as
/// [`env`] does without the reference.
pub fn reference_backend() -> dsh_search::RgBackend {
    let Some(env) = env() else {
        return dsh_search::RgBackend::default();
    };
    let home = env.home();
    dsh_search::RgBackend::with_path(&env.rg)
        .env("HOME", &home)
        .env("USERPROFILE", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("GIT_CONFIG_SYSTEM", env.ctl.join("no-system-gitconfig"))
}

/// The native engine on the local disk with the cases' global excludes
/// ([`Env::native`]); without the reference, the default engine.
pub fn native() -> dsh_search::NativeBackend {
    env().map_or_else(dsh_search::NativeBackend::new, Env::native)
}

/// The environment, or `None` when the suite was explicitly skipped with
/// `DSH_SEARCH_SKIP_CONFORMANCE=1`. A missing or wrong rg fails the test.
pub fn env() -> Option<&'static Env> {
    static ENV: OnceLock<Result<Env, String>> = OnceLock::new();
    if std::env::var_os("DSH_SEARCH_SKIP_CONFORMANCE").is_some_and(|v| v == "1") {
        static ONCE: OnceLock<()> = OnceLock::new();
        ONCE.get_or_init(|| {
            loud("\n*** CONFORMANCE TESTS SKIPPED (DSH_SEARCH_SKIP_CONFORMANCE=1): the engine was NOT checked against rg ***\n\n")
        });
        return None;
    }
    match ENV.get_or_init(init) {
        Ok(env) => Some(env),
        Err(e) => panic!(
            "the conformance suite needs ripgrep {RG_VERSION}: {e}.\n\
             Install it with `cargo install ripgrep --locked --version {RG_VERSION}` and put it on \
             PATH or in DSH_SEARCH_RG, or run scripts/test (which does this).\n\
             To skip these tests knowingly: DSH_SEARCH_SKIP_CONFORMANCE=1."
        ),
    }
}

/// How a process of a case is started.
#[derive(Clone, Copy)]
enum As {
    /// As the test's user.
    Me,
    /// As uid 65534, through setpriv.
    Nobody,
    /// With at most this many open descriptors, through prlimit.
    FewFds(u32),
}

/// Run `program args…` in `cwd` with stdin `/dev/null` and the cases'
/// environment ([`Env::apply`]), as `how` says.
fn run_process(env: &Env, program: &Path, args: &[OsString], cwd: &Path, how: As) -> Raw {
    run_process_env(env, program, args, cwd, how, None)
}

/// [`run_process`] with one more environment variable.
fn run_process_env(
    env: &Env,
    program: &Path,
    args: &[OsString],
    cwd: &Path,
    how: As,
    var: Option<(&str, &str)>,
) -> Raw {
    let mut cmd = if let As::FewFds(n) = how {
        let mut c = Command::new("prlimit");
        c.arg(format!("--nofile={n}:{n}")).arg("--").arg(program);
        c
    } else if matches!(how, As::Nobody) {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c.arg(program);
        c
    } else {
        Command::new(program)
    };
    env.apply(&mut cmd);
    if matches!(how, As::Nobody) {
        // The CLI's rg backend must find a copy uid 65534 can execute.
        if let Some(bin) = program.parent() {
            cmd.env("DSH_SEARCH_RG", bin.join("rg"));
        }
    }
    if let Some((k, v)) = var {
        cmd.env(k, v);
    }
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null());
    let mut attempt = 0;
    let out = loop {
        match cmd.output() {
            Err(e) if is_wine_spawn_flake(&e.to_string()) && attempt < WINE_RETRIES => {
                attempt += 1;
                loud(&format!("{WINE_FLAKE_NOTE}: spawn {program:?}: {e}\n"));
            }
            Ok(out)
                if is_wine_init_flake(out.status.code(), out.stderr.is_empty())
                    && out.stdout.is_empty()
                    && attempt < WINE_RETRIES =>
            {
                attempt += 1;
                loud(&format!("{WINE_INIT_NOTE}: {program:?}\n"));
            }
            other => break other.unwrap_or_else(|e| panic!("spawn {program:?}: {e}")),
        }
    };
    Raw::from_output(out)
}

impl Raw {
    /// What a finished process printed and how it ended.
    pub fn from_output(out: std::process::Output) -> Raw {
        Raw {
            stdout: out.stdout,
            stderr: stderr_lines(&out.stderr),
            status: match out.status.code() {
                Some(c) => format!("exit {c}"),
                None => format!("{:?}", out.status),
            },
        }
    }
}

/// The reference: the real rg with the exact argv, in `cwd`.
pub fn run_rg(env: &Env, call: &Call, cwd: &Path) -> Raw {
    let args: Vec<OsString> = call.rg_argv().into_iter().map(OsString::from).collect();
    run_process(env, &env.rg, &args, cwd, As::Me)
}

/// The real rg run as uid 65534 (permission cases).
pub fn run_rg_nobody(env: &Env, call: &Call, cwd: &Path) -> Raw {
    let args: Vec<OsString> = call.rg_argv().into_iter().map(OsString::from).collect();
    run_process(env, &env.ctl.join("bin/rg"), &args, cwd, As::Nobody)
}

/// `dsh-search <glob|grep> --format raw --backend <b>` run as uid 65534.
pub fn run_cli_nobody(env: &Env, backend: &str, call: &Call, cwd: &Path) -> Raw {
    let args = call.cli_argv(backend, cwd);
    run_process(env, &env.ctl.join("bin/dsh-search"), &args, cwd, As::Nobody)
}

/// `dsh-search --fs mem:<root> <glob|grep> --format raw` run as uid
/// 65534: the tree is loaded into memory by that user, so the entries it
/// cannot read carry the errors rg gets for them.
pub fn run_cli_nobody_in_memory(env: &Env, root: &Path, call: &Call, cwd: &Path) -> Raw {
    let mut fs = OsString::from("mem:");
    fs.push(root);
    let mut args = vec![OsString::from("--fs"), fs];
    args.extend(call.cli_argv("native", cwd));
    run_process(env, &env.ctl.join("bin/dsh-search"), &args, cwd, As::Nobody)
}

/// The real rg with at most `fds` open descriptors.
pub fn run_rg_few_fds(env: &Env, call: &Call, cwd: &Path, fds: u32) -> Raw {
    let args: Vec<OsString> = call.rg_argv().into_iter().map(OsString::from).collect();
    run_process(env, &env.rg, &args, cwd, As::FewFds(fds))
}

/// `dsh-search <glob|grep> --format raw --backend <b>` with at most `fds`
/// open descriptors, and `threads` search threads when given
/// (`DSH_SEARCH_THREADS`: as many as a large machine would use).
pub fn run_cli_few_fds(
    env: &Env,
    backend: &str,
    call: &Call,
    cwd: &Path,
    fds: u32,
    threads: Option<u32>,
) -> Raw {
    let args = call.cli_argv(backend, cwd);
    let threads = threads.map(|t| t.to_string());
    run_process_env(
        env,
        &env.ctl.join("bin/dsh-search"),
        &args,
        cwd,
        As::FewFds(fds),
        threads.as_deref().map(|t| ("DSH_SEARCH_THREADS", t)),
    )
}

/// How many times a process start that Wine failed is retried.
pub const WINE_RETRIES: usize = 2;

/// What the log says of a retried start.
pub const WINE_FLAKE_NOTE: &str =
    "Wine: CreateProcess failed with ERROR_INTERNAL_ERROR (1359), retried";

/// What the log says of a start the loader failed, retried.
pub const WINE_INIT_NOTE: &str = "Wine: a start ended with STATUS_DLL_INIT_FAILED, retried";

/// Whether `text` reports the error Wine 8's `CreateProcessW` returns now
/// and then for a start that succeeds when retried: ERROR_INTERNAL_ERROR
/// (1359, from `NtCreateUserProcess`'s STATUS_INTERNAL_ERROR). Seen as
/// often for rg.exe started alone as for the rg backend's starts (README
/// "Platforms"); never retried on Unix.
pub fn is_wine_spawn_flake(text: &str) -> bool {
    cfg!(windows) && text.contains("(os error 1359)")
}

/// STATUS_DLL_INIT_FAILED (0xC0000142) as an exit code.
pub const DLL_INIT_FAILED: i32 = 0xC000_0142_u32 as i32;

/// Whether a started process is Wine 8's other failed start: the loader
/// ended it with STATUS_DLL_INIT_FAILED before `main` ran, so it printed
/// nothing. Seen for rg.exe started by the rg backend (README
/// "Platforms"); rg itself only exits 0, 1 or 2. Never retried on Unix.
pub fn is_wine_init_flake(code: Option<i32>, stderr_empty: bool) -> bool {
    cfg!(windows) && code == Some(DLL_INIT_FAILED) && stderr_empty
}

/// A backend through the `SearchBackend` trait; a panic is reported as the
/// status so one unfinished backend does not hide every other case. A
/// start of rg that Wine failed ([`is_wine_spawn_flake`]) is retried.
pub fn run_backend(backend: &dyn SearchBackend, call: &Call, cwd: &Path) -> Raw {
    let mut attempt = 0;
    loop {
        let raw = run_backend_once(backend, call, cwd);
        let init_failed = raw.status == format!("exit {DLL_INIT_FAILED}")
            && is_wine_init_flake(Some(DLL_INIT_FAILED), raw.stderr.is_empty())
            && raw.stdout.is_empty();
        if !(is_wine_spawn_flake(&raw.status) || init_failed) || attempt == WINE_RETRIES {
            return raw;
        }
        attempt += 1;
        let note = if init_failed {
            WINE_INIT_NOTE
        } else {
            WINE_FLAKE_NOTE
        };
        loud(&format!("{note}: {}\n", raw.status));
    }
}

fn run_backend_once(backend: &dyn SearchBackend, call: &Call, cwd: &Path) -> Raw {
    let res = catch_unwind(AssertUnwindSafe(|| match call {
        Call::Glob { pattern, path } => {
            let mut req = GlobRequest::new(pattern.clone(), cwd);
            req.path = path.clone().map(Into::into);
            let o = backend.glob(&req);
            let mut stdout = Vec::new();
            o.results.write_raw(&mut stdout).unwrap();
            Raw {
                stdout,
                stderr: o.stderr,
                status: status_text(&o.status),
            }
        }
        Call::Grep {
            pattern,
            path,
            include,
        } => {
            let mut req = GrepRequest::new(pattern.clone(), cwd);
            req.path = path.clone().map(Into::into);
            req.include = include.clone();
            let o = backend.grep(&req);
            let mut stdout = Vec::new();
            o.results.write_raw(&mut stdout).unwrap();
            Raw {
                stdout,
                stderr: o.stderr,
                status: status_text(&o.status),
            }
        }
    }));
    match res {
        Ok(raw) => raw,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "?".into());
            Raw {
                stdout: Vec::new(),
                stderr: Vec::new(),
                status: format!("PANICKED: {msg}"),
            }
        }
    }
}

/// Replace each `"elapsed":{…}` / `"elapsed_total":{…}` object with a mask.
/// Inside JSON strings a quote is escaped, so the key pattern cannot occur
/// within a path or a line.
fn mask_elapsed(line: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let rest = &line[i..];
        let key = [&b"\"elapsed\":{"[..], &b"\"elapsed_total\":{"[..]]
            .into_iter()
            .find(|k| rest.starts_with(k));
        if let Some(k) = key {
            if let Some(close) = rest.iter().position(|&c| c == b'}') {
                out.extend_from_slice(&k[..k.len() - 1]);
                out.extend_from_slice(b"\"MASKED\"");
                i += close + 1;
                continue;
            }
        }
        out.push(line[i]);
        i += 1;
    }
    out
}

/// rg's `--json` stream in a canonical form (`contract.md` §2): elapsed
/// objects masked, `begin`…`end` blocks sorted by their begin line (the
/// path), anything else in place before them, the summary last.
pub fn normalize_grep(stdout: &[u8]) -> Vec<u8> {
    let mut stray: Vec<Vec<u8>> = Vec::new();
    let mut blocks: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut summary: Vec<Vec<u8>> = Vec::new();
    let mut open: Option<Vec<Vec<u8>>> = None;
    for line in stdout.split_inclusive(|&c| c == b'\n') {
        let line = mask_elapsed(line);
        if line.starts_with(b"{\"type\":\"begin\"") {
            if let Some(b) = open.take() {
                blocks.push(b);
            }
            open = Some(vec![line]);
        } else if line.starts_with(b"{\"type\":\"end\"") {
            match open.take() {
                Some(mut b) => {
                    b.push(line);
                    blocks.push(b);
                }
                None => stray.push(line),
            }
        } else if line.starts_with(b"{\"data\":{\"elapsed_total\"") {
            summary.push(line);
        } else if let Some(b) = open.as_mut() {
            b.push(line);
        } else {
            stray.push(line);
        }
    }
    if let Some(b) = open.take() {
        blocks.push(b);
    }
    blocks.sort_by(|a, b| a[0].cmp(&b[0]));
    let mut out = Vec::new();
    for l in stray
        .iter()
        .chain(blocks.iter().flatten())
        .chain(summary.iter())
    {
        out.extend_from_slice(l);
    }
    out
}

/// The comparable form of a run.
pub fn canonical(call: &Call, raw: &Raw) -> Raw {
    let mut stderr = raw.stderr.clone();
    stderr.sort();
    Raw {
        stdout: if call.is_grep() {
            normalize_grep(&raw.stdout)
        } else {
            raw.stdout.clone()
        },
        stderr,
        status: raw.status.clone(),
    }
}

fn show_lines(bytes: &[u8]) -> Vec<String> {
    bytes
        .split_inclusive(|&c| c == b'\n')
        .map(|l| format!("{:?}", String::from_utf8_lossy(l)))
        .collect()
}

/// A readable difference between the expected (rg) and actual run, or
/// `None` when they agree at the raw level.
pub fn diff(call: &Call, expected: &Raw, actual: &Raw) -> Option<String> {
    let e = canonical(call, expected);
    let a = canonical(call, actual);
    if e == a {
        return None;
    }
    let mut out = String::new();
    if e.status != a.status {
        out += &format!("  status: rg {} / got {}\n", e.status, a.status);
    }
    if e.stderr != a.stderr {
        out += &format!(
            "  stderr (sorted lines):\n    rg : {:?}\n    got: {:?}\n",
            e.stderr, a.stderr
        );
    }
    if e.stdout != a.stdout {
        let el = show_lines(&e.stdout);
        let al = show_lines(&a.stdout);
        let first = el
            .iter()
            .zip(al.iter())
            .position(|(x, y)| x != y)
            .unwrap_or(el.len().min(al.len()));
        out += &format!(
            "  stdout: {} vs {} lines, first difference at line {}\n",
            el.len(),
            al.len(),
            first + 1
        );
        let from = first.saturating_sub(2);
        for (i, l) in el.iter().enumerate().skip(from).take(8) {
            out += &format!("    rg  {:>4}: {}\n", i + 1, clip(l));
        }
        for (i, l) in al.iter().enumerate().skip(from).take(8) {
            out += &format!("    got {:>4}: {}\n", i + 1, clip(l));
        }
    }
    Some(out)
}

fn clip(s: &str) -> String {
    if s.len() <= 400 {
        s.to_string()
    } else {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &s[..end], s.len())
    }
}

/// A short description of a run, for labels.
pub fn describe(call: &Call, cwd_rel: &str) -> String {
    let argv = call.rg_argv();
    let shown: Vec<&String> = argv
        .iter()
        .filter(|a| !VCS_EXCLUDES.contains(&a.as_str()))
        .filter(|a| {
            ![
                "--no-config",
                "--files",
                "--sort=modified",
                "--no-ignore",
                "--hidden",
                "--json",
            ]
            .contains(&a.as_str())
        })
        .collect();
    let cwd = if cwd_rel.is_empty() { "." } else { cwd_rel };
    format!(
        "cwd={cwd} rg {}",
        shown
            .iter()
            .map(|s| format!("{s:?}"))
            .collect::<Vec<_>>()
            .join(" ")
    )
}
