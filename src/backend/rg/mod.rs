//! The backend that spawns a real `rg`.
//!
//! Each call runs `rg` with the argv of `contract.md` §2 (`command.rs`),
//! drains and stops it (`process.rs`) and parses its stdout into the same
//! typed results the native engine produces (`json.rs`).
//!
//! # Malformed `--json` output
//!
//! A `--json` line that is not one of rg's messages turns a run that exited
//! 0 into [`Status::Malformed`] with the reason (worded like the seed's
//! details, `seed-reference.md` §2.1), and the events before that line. Runs
//! that exited 1 or 2 keep their exit status: the failure ladder never reads
//! stdout for them (§2.4 steps 7 and 9).
//!
//! # Platform behavior
//!
//! On Unix, a stopped rg (cancellation, timeout, raw budget) gets SIGTERM
//! in its own process group and SIGKILL after [`RgConfig::grace`]. On
//! Windows it is killed at once, alone: there is no process group to
//! signal, so the grace period is not used, and a process rg started would
//! outlive it (rg starts none for these invocations). The binary on `PATH`
//! is `rg` on Unix (with an execute bit) and `rg.exe` on Windows.

mod command;
mod json;
pub mod orphan;
mod process;

use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use crate::backend::SearchBackend;
use crate::outcome::{GlobResults, GrepResults, Outcome, Status};
use crate::request::{GlobRequest, GrepRequest};

pub use command::{glob_args, grep_args, RgCommand};

/// The environment variable naming the rg binary, read when no path is
/// configured.
pub const RG_ENV: &str = "DSH_SEARCH_RG";

/// The rg binary [`RG_ENV`] names in this process's environment, when it
/// is set and not empty. The library never reads it itself: the command
/// line, the Node binding, the benchmarks and the tests (the edges) pass
/// it on as [`RgConfig::path`].
pub fn rg_from_env() -> Option<PathBuf> {
    std::env::var_os(RG_ENV)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// The default wait between SIGTERM and SIGKILL (`graceMs`,
/// `seed-reference.md` §9.1). Unix only: Windows kills at once.
pub const DEFAULT_GRACE: Duration = Duration::from_millis(3000);

/// How an [`RgBackend`] finds and stops rg.
#[derive(Clone, Debug)]
pub struct RgConfig {
    /// The rg binary. By default, `None`: the first `rg` on `PATH`.
    pub path: Option<PathBuf>,
    /// Wait between SIGTERM and SIGKILL when a call is stopped (Unix; on
    /// Windows rg is killed at once). By default, [`DEFAULT_GRACE`].
    pub grace: Duration,
}

impl Default for RgConfig {
    fn default() -> RgConfig {
        RgConfig {
            path: None,
            grace: DEFAULT_GRACE,
        }
    }
}

/// Spawns a real `rg` with the argv of `contract.md` §2.
#[derive(Clone, Debug, Default)]
pub struct RgBackend {
    config: RgConfig,
    /// Variables set for rg on top of this process's ([`RgBackend::env`]).
    env: Vec<(OsString, OsString)>,
}

impl RgBackend {
    /// A backend that finds rg on `PATH`, at each call.
    pub fn new() -> RgBackend {
        RgBackend::default()
    }

    /// A backend that runs the rg binary at `path`.
    pub fn with_path(path: impl Into<PathBuf>) -> RgBackend {
        RgBackend::with_config(RgConfig {
            path: Some(path.into()),
            ..RgConfig::default()
        })
    }

    /// A backend with the given configuration.
    pub fn with_config(config: RgConfig) -> RgBackend {
        RgBackend {
            config,
            env: Vec::new(),
        }
    }

    /// Run rg with the variable `key` set to `value`, on top of this
    /// process's environment as rg gets it (the secrets scrubbed,
    /// `process.rs`): for a program that runs rg for another user's home
    /// (`HOME`, `XDG_CONFIG_HOME`: where rg finds git's global excludes),
    /// or tests that give rg a home without changing their own
    /// environment. By default, none.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> RgBackend {
        self.env.push((key.into(), value.into()));
        self
    }

    /// The rg binary a call would run: the configured path, else the first
    /// executable `rg` (`rg.exe` on Windows) on `PATH`. A relative path is made absolute
    /// against the process's current directory, since rg itself runs in the
    /// request's workdir.
    pub fn locate(&self) -> Result<PathBuf, RgError> {
        let found = match &self.config.path {
            Some(path) => path.clone(),
            None => find_on_path().ok_or(RgError::NotFound)?,
        };
        std::path::absolute(&found).map_err(|source| RgError::Unusable {
            path: found,
            source,
        })
    }

    /// The command a glob request runs, or why it cannot run.
    pub fn glob_command(&self, req: &GlobRequest) -> Result<RgCommand, RgError> {
        Ok(RgCommand::new(
            &self.locate()?,
            glob_args(req),
            &req.workdir,
        ))
    }

    /// The command a grep request runs, or why it cannot run.
    pub fn grep_command(&self, req: &GrepRequest) -> Result<RgCommand, RgError> {
        Ok(RgCommand::new(
            &self.locate()?,
            grep_args(req),
            &req.workdir,
        ))
    }
}

impl RgBackend {
    /// Run `cmd` with this backend's variables and grace period.
    fn run(
        &self,
        cmd: &RgCommand,
        cancel: &crate::CancelToken,
        budget: Option<u64>,
    ) -> process::Run {
        process::run(cmd, &self.env, cancel, budget, self.config.grace)
    }
}

/// Why the rg binary cannot be run. Its text is the call's launch failure
/// ([`Status::LaunchFailed`]), which the tools report as the seed does.
#[derive(Debug)]
#[non_exhaustive]
pub enum RgError {
    /// No path was configured and no `rg` is on `PATH`.
    NotFound,
    /// The configured path cannot be made absolute.
    Unusable {
        /// The path as configured.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

impl std::fmt::Display for RgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RgError::NotFound => write!(
                f,
                "rg was not found: set {RG_ENV} or put rg on PATH \
                 (cargo install ripgrep --locked --version 15.2.0)"
            ),
            RgError::Unusable { path, source } => {
                write!(f, "rg path {} is unusable: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for RgError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RgError::NotFound => None,
            RgError::Unusable { source, .. } => Some(source),
        }
    }
}

fn find_on_path() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    let name = format!("rg{}", std::env::consts::EXE_SUFFIX);
    std::env::split_paths(&path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(&name))
        .find(|candidate| std::fs::metadata(candidate).is_ok_and(|m| is_executable(&m)))
}

/// Whether a `PATH` entry can be run.
///
/// # Platform behavior
///
/// On Unix, a regular file with an execute bit. Elsewhere, any regular
/// file: Windows decides by the name's extension, which the caller chose.
fn is_executable(meta: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

fn launch_failed<T: Default>(reason: String) -> Outcome<T> {
    Outcome {
        status: Status::LaunchFailed(reason),
        stderr: Vec::new(),
        results: T::default(),
    }
}

impl SearchBackend for RgBackend {
    fn name(&self) -> &'static str {
        "rg"
    }

    fn glob(&self, req: &GlobRequest) -> Outcome<GlobResults> {
        let run = match self.glob_command(req) {
            Ok(cmd) => self.run(&cmd, &req.cancel, req.raw_budget),
            Err(reason) => return launch_failed(reason.to_string()),
        };
        Outcome {
            status: run.status,
            stderr: run.stderr,
            results: GlobResults {
                files: json::parse_files(&run.stdout),
            },
        }
    }

    fn grep(&self, req: &GrepRequest) -> Outcome<GrepResults> {
        let run = match self.grep_command(req) {
            Ok(cmd) => self.run(&cmd, &req.cancel, req.raw_budget),
            Err(reason) => return launch_failed(reason.to_string()),
        };
        let (events, malformed) = json::parse_json(&run.stdout);
        let status = match (run.status, malformed) {
            (Status::Exited(0), Some(detail)) => Status::Malformed(detail),
            (status, _) => status,
        };
        Outcome {
            status,
            stderr: run.stderr,
            results: GrepResults { events },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configured path that cannot be made absolute: the error holds it,
    /// and the call fails to launch with the same words.
    #[test]
    fn an_unusable_path_is_held_by_the_error() {
        let backend = RgBackend::with_path("");
        let e = backend.locate().unwrap_err();
        assert!(
            matches!(&e, RgError::Unusable { path, .. } if path.as_os_str().is_empty()),
            "{e:?}"
        );
        assert!(e.to_string().starts_with("rg path  is unusable: "), "{e}");
        let outcome = backend.glob(&GlobRequest::new("*", "/"));
        assert_eq!(outcome.status, Status::LaunchFailed(e.to_string()));
    }
}
